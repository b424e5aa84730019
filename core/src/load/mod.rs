//! The load generator's pure rules: when a held socket's silent server counts as stalled (`liveness`),
//! and how what arrives is sorted and counted (`delivery`). The shell's `load` runs the sockets, reads
//! the clock and calls these.

pub mod delivery;
pub mod liveness;
