//! Seeding, pure: the plan of accounts and projects (`plan`) and the SQL that writes and checks them
//! for each database dialect (`sql`). `prepare` runs it.

pub mod plan;
pub mod sql;
