//! exectl: reproducible C10k benchmark stacks for eXeLearning. The flow is spec → render → plan → apply;
//! `spec`, `render`, `compose` and `traefik` are pure, `validate` and `commands` are the shell around them.

pub mod cli;
pub mod commands;
pub mod compose;
pub mod core;
pub mod doctor;
pub mod engine;
pub mod error;
pub mod host;
pub mod load;
pub mod naming;
pub mod pipeline;
pub mod plan;
pub mod prepare;
pub mod render;
pub mod runs;
pub mod secrets;
pub mod shell;
pub mod spec;
pub mod status;
pub mod target;
pub mod traefik;
pub mod validate;
