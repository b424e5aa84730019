//! `exectl doctor`: what would distort a benchmark on the target. `facts` is what was observed (gathered
//! by `commands::doctor`), `assess` turns facts into pass/warn/fail checks with their fix, `report` prints
//! them. Everything here is pure.

pub mod assess;
pub mod facts;
mod host_checks;
pub mod options;
pub mod report;

pub use assess::{assess, Check, Level, Limits, Options};
pub use facts::{Facts, Host, Link, Stage};
pub use report::Report;
