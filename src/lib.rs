//! exectl: reproducible C10k benchmark stacks for eXeLearning, as a library with a thin CLI. The pure
//! core (spec → render → desired state → plan; bench's verdicts and report) is the `exectl-core` crate;
//! this crate is the shell around it: `ops` are the operations a program calls (deploy, plan, teardown,
//! prepare, load, bench, status), over the target (`sut`, `engine`, `shell`), the app (`app`), the load
//! generator (`load`), the seeder (`prepare`), the sampler (`bench`) and the state folder (`state`);
//! `cli` turns flags into options and `commands` print what an operation returned. ARCHITECTURE.md maps it.

pub mod app;
pub mod bench;
pub mod browser;
pub mod cli;
pub mod commands;
pub mod engine;
pub mod error;
pub mod host;
pub mod interrupt;
pub mod load;
pub mod ops;
pub mod prepare;
pub mod progress;
pub mod shell;
pub mod state;
pub mod status;
pub mod sut;
pub mod validate;
