//! `exectl campaign` as data: the campaign file (`file`), the summary table built from each row's
//! benches (`table`), the findings and what was not measured (`findings`), the estimate `--plan`
//! gives (`estimate`), the campaign's results.json (`results`) and its reports (`report`), the file's schema
//! (`schema`) and its key-by-key reference (`reference`); a row read back and the campaign's files
//! made (`row`).
//! Pure: the operation (`ops::campaign`) runs each row as a sweep; this decides and formats.

pub mod estimate;
pub mod file;
pub mod findings;
pub mod reference;
pub mod report;
pub mod results;
pub mod row;
pub mod schema;
pub mod table;
