//! `exectl load`: a native load generator for the app's login API and Yjs WebSocket relay.
//!
//! One task per user, spawned on the ramp's schedule with at most `--dial-concurrency` dials in flight;
//! each user makes exactly one attempt (a failed user is not retried, so there is no retry storm) and
//! every wait is bounded by a timeout. A socket counts as held only if it stayed open and alive for the
//! whole hold: the app always answers 101 and rejects with a close code right after (contract §2), and a
//! frozen server keeps its sockets open without a word (`liveness`).

pub mod endpoint;
pub mod frame;
pub mod liveness;
pub mod manifest;
pub mod metrics;
pub mod preflight;
pub mod runner;
pub mod session;
pub mod summary;

use std::fmt;
use std::time::Duration;

pub use endpoint::{AllowList, Endpoint};
pub use manifest::Manifest;
pub use summary::Summary;

/// Login request timeout (the seed saw 13 s medians under a burst and 138 s stalls).
pub const LOGIN_TIMEOUT: Duration = Duration::from_secs(60);
/// TCP connect plus WebSocket handshake.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);
/// Close handshake at the end of a hold.
pub const CLOSE_GRACE: Duration = Duration::from_secs(3);
/// One HTTP action of the editing scenario.
pub const HTTP_TIMEOUT: Duration = Duration::from_secs(30);
/// login-burst's probe period and its per-request bound.
pub const PROBE_EVERY: Duration = Duration::from_millis(200);
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(60);
/// Load's timeout policy for the app client.
pub const TIMEOUTS: crate::app::Timeouts = crate::app::Timeouts {
    connect: CONNECT_TIMEOUT,
    login: LOGIN_TIMEOUT,
    request: HTTP_TIMEOUT,
};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scenario {
    Idle,
    LoginBurst,
    Collab,
    Editing,
}

impl Scenario {
    pub const ALL: [Scenario; 4] = [
        Scenario::Idle,
        Scenario::LoginBurst,
        Scenario::Collab,
        Scenario::Editing,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Scenario::Idle => "idle",
            Scenario::LoginBurst => "login-burst",
            Scenario::Collab => "collab",
            Scenario::Editing => "editing",
        }
    }

    pub fn parse(s: &str) -> Option<Scenario> {
        Scenario::ALL.into_iter().find(|x| x.name() == s)
    }

    /// Whether users open a WebSocket (all but login-burst).
    pub fn uses_socket(self) -> bool {
        self != Scenario::LoginBurst
    }

    /// Mean time between a user's actions: collab sends often, editing at the seed's 5–20 s.
    pub fn default_interval(self) -> Duration {
        match self {
            Scenario::Editing => Duration::from_secs(10),
            _ => Duration::from_secs(1),
        }
    }
}

impl fmt::Display for Scenario {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A validated run.
#[derive(Debug, Clone)]
pub struct LoadOptions {
    pub scenario: Scenario,
    pub endpoint: Endpoint,
    pub manifest: Manifest,
    /// Users 0..users take accounts 0..users of the manifest.
    pub users: usize,
    pub ramp: Duration,
    pub dial_concurrency: usize,
    pub hold: Duration,
    /// Mean action interval; each wait is uniform in [interval/2, 2·interval].
    pub interval: Duration,
    pub tokens: bool,
    /// When a held socket's silent server counts as stalled.
    pub liveness: liveness::Bounds,
    pub run_id: String,
    /// Print the per-second progress line on stderr.
    pub progress: bool,
}

/// "30s", "500ms", "2m", "1h", "1m30s", or bare seconds ("45", "0.5").
pub fn parse_duration(s: &str) -> Option<Duration> {
    let s = s.trim();
    if s.is_empty() {
        return None;
    }
    if let Ok(secs) = s.parse::<f64>() {
        return (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs));
    }
    let mut total = Duration::ZERO;
    let mut rest = s;
    while !rest.is_empty() {
        let num_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let value: f64 = rest[..num_end].parse().ok()?;
        rest = &rest[num_end..];
        let unit_end = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let scale = match &rest[..unit_end] {
            "ms" => 0.001,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            _ => return None,
        };
        rest = &rest[unit_end..];
        total += Duration::from_secs_f64(value * scale);
    }
    Some(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        let d = |s| parse_duration(s);
        assert_eq!(d("30s"), Some(Duration::from_secs(30)));
        assert_eq!(d("500ms"), Some(Duration::from_millis(500)));
        assert_eq!(d("2m"), Some(Duration::from_secs(120)));
        assert_eq!(d("1m30s"), Some(Duration::from_secs(90)));
        assert_eq!(d("1h"), Some(Duration::from_secs(3600)));
        assert_eq!(d("45"), Some(Duration::from_secs(45)));
        assert_eq!(d("0.5"), Some(Duration::from_millis(500)));
        assert_eq!(d("0"), Some(Duration::ZERO));
        for bad in ["", "-1", "5x", "s", "1.2.3s", "ms5"] {
            assert_eq!(d(bad), None, "{bad}");
        }
    }

    #[test]
    fn scenario_names() {
        for s in Scenario::ALL {
            assert_eq!(Scenario::parse(s.name()), Some(s));
        }
        assert_eq!(Scenario::parse("burst"), None);
    }
}
