//! `exectl doctor`: what would distort a benchmark on the target. `facts` is what was observed (gathered
//! by `commands::doctor`), `assess` turns facts into pass/warn/fail checks with their fix, `report` prints
//! them. Everything here is pure.

pub mod assess;
mod check;
mod engine_checks;
pub mod facts;
mod host_checks;
pub mod options;
pub mod report;
pub mod swarm;

pub use assess::{assess, Limits, Options};
pub use check::{Check, Level};
pub use engine_checks::{proxy_capacity, PROXY_FILES_PER_CONNECTION, PROXY_FIX};
pub use facts::{EngineConfig, Facts, Host, Link, Stage};
pub use report::Report;
