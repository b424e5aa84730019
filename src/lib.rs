//! exectl: reproducible C10k benchmark stacks for eXeLearning, as a library with a thin CLI. The pure
//! core (spec → render → desired state → plan; bench's verdicts and report) is the `exectl-core` crate;
//! this crate is the shell around it: `ops` are the operations a program calls (deploy, plan, teardown,
//! prepare, load, bench, status, sweep, campaign, doctor, host), over the target (`sut`, `engine`, `shell`), the app (`app`), the load
//! generator (`load`), the seeder (`prepare`), the sampler (`bench`) and the state folder (`state`);
//! `cli` turns flags into options and `commands` print what an operation returned: both the binary's,
//! behind the `cli` feature (on by default), so that the library builds without clap. ARCHITECTURE.md
//! maps it.

pub mod app;
pub mod bench;
pub mod browser;
#[cfg(feature = "cli")]
pub mod cli;
pub mod clock;
#[cfg(feature = "cli")]
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
