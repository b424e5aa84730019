//! `exectl sweep` as data: the variable and its values (`vary`), the capacity search (`search`), the
//! points' results (`results`), their comparison over repeats (`stats`, `summary`), the scaling law
//! over instances (`usl`, `scaling`) and the report.
//! Pure: the operation (`ops::sweep`) deploys, prepares and benches each point; this decides and formats.

pub mod file;
pub mod report;
pub mod results;
pub mod scaling;
pub mod search;
pub mod stats;
pub mod summary;
pub mod usl;
pub mod vary;
