//! The load generator's pure rules: when a held socket's silent server counts as stalled (`liveness`),
//! how what arrives is sorted and counted (`delivery`), and which local address each user dials from
//! (`sources`). The shell's `load` runs the sockets, reads the clock and calls these.

pub mod delivery;
pub mod liveness;
pub mod sources;
