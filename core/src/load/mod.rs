//! The load generator's pure rules: when a held socket's silent server counts as stalled (`liveness`),
//! how what arrives is sorted and counted (`delivery`), and which local address each user dials from
//! (`sources`), how a run is split over generator processes (`slices`), and how a dropped user dials
//! again and what its return is counted as (`recovery`). The shell's `load` runs the sockets, reads the clock and calls these.

/// The load's scenarios, as `exectl load` names them (the shell's `load::Scenario`, one each).
pub const SCENARIOS: [&str; 4] = ["idle", "login-burst", "collab", "editing"];

pub mod delivery;
pub mod liveness;
pub mod recovery;
pub mod slices;
pub mod sources;
