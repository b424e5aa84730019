//! Every shell script exectl runs on a target's host, as a builder (a `Script`: body and arguments)
//! with the parser of its output beside it. Pure: tests check the exact scripts and read recorded
//! outputs; running them is `HostShell`'s job.

pub mod dockerd;
pub mod facts;
pub mod files;
pub mod limits;
pub mod lock;
pub mod ports;
pub mod sample;
pub mod tune;
