//! exectl: reproducible C10k benchmark stacks for eXeLearning. The flow is spec → render → plan → apply;
//! `spec`, `render`, `compose` and `traefik` are pure, `validate` and `commands` are the shell around them.

pub mod app;
pub mod bench;
pub mod cli;
pub mod commands;
pub mod core;
pub mod engine;
pub mod error;
pub mod host;
pub mod interrupt;
pub mod load;
pub mod prepare;
pub mod render;
pub mod runs;
pub mod secrets;
pub mod shell;
pub mod status;
pub mod sut;
pub mod validate;

// The pure core's modules, also at their old paths while the rest of the crate moves over.
pub use crate::core::{compose, doctor, naming, pipeline, plan, spec, traefik};
