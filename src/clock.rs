//! The wall clock, read in one place: seconds and milliseconds since the Unix epoch, for run ids,
//! records and the timestamps two processes (or hosts) compare. A clock set before 1970 reads 0, never
//! a panic. Intervals are `Instant`s, not these.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

fn since_epoch() -> Duration {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
}

/// Whole seconds since the epoch.
pub fn unix_s() -> u64 {
    since_epoch().as_secs()
}

/// Whole milliseconds since the epoch.
pub fn unix_ms() -> u64 {
    since_epoch().as_millis() as u64
}

/// Milliseconds since the epoch, to the microsecond.
pub fn unix_ms_f64() -> f64 {
    since_epoch().as_secs_f64() * 1000.0
}

/// Whole microseconds since the epoch.
pub fn unix_us() -> u64 {
    since_epoch().as_micros() as u64
}
