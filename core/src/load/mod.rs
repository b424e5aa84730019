//! The load generator's pure rules: when a held socket's silent server counts as stalled (`liveness`),
//! how what arrives is sorted and counted (`delivery`), and which local address each user dials from
//! (`sources`), how a run is split over generator processes (`slices`), and how a dropped user dials
//! again and what its return is counted as (`recovery`), and the rules across a load's settings
//! (`rules`). The shell's `load` runs the sockets, reads the clock and calls these.

/// Most `--arrival-rate`: a million sessions a second is far past what one generator starts.
pub const MAX_ARRIVAL_RATE: f64 = 1_000_000.0;
/// Least `--arrival-rate`: one session every 100 s.
pub const MIN_ARRIVAL_RATE: f64 = 0.01;

pub mod delivery;
pub mod liveness;
pub mod recovery;
pub mod rules;
pub mod scenario;
pub mod slices;
pub mod sources;

pub use scenario::Scenario;
