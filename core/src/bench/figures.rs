//! What the generator measured of one level (from the load engine's summary): the figures the
//! objectives are checked against, and the report's levels table shows.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::plateau::PlateauFigures;

/// p50 / p95 / p99 of one latency, ms.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Pcts {
    pub p50: f64,
    pub p95: f64,
    pub p99: f64,
}

impl Pcts {
    pub fn new(p50: f64, p95: f64, p99: f64) -> Pcts {
        Pcts { p50, p95, p99 }
    }
}

/// What the generator measured of one level (from the load engine's summary).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct LevelFigures {
    pub users: u64,
    /// Users served: those that met the scenario's criterion (for idle, held the whole hold).
    pub held: u64,
    /// Sockets the app refused (4001, 4003).
    pub refused: u64,
    pub stalled: u64,
    /// Failure kind → users (login_401, closed_4003, connect_timeout, …).
    pub failures: BTreeMap<String, u64>,
    /// None when the level made no login (minted tokens) or none succeeded.
    pub login_ms: Option<Pcts>,
    pub connect_ms: Option<Pcts>,
    /// collab/editing only.
    pub delivery_ms: Option<Pcts>,
    /// collab only: lost + duplicated + echoed + cross-room frames…
    pub frame_errors: Option<u64>,
    /// …by kind ("lost", "duplicated", "echoed", "cross-room"), those above zero.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub frame_error_kinds: BTreeMap<String, u64>,
    /// The scenario: what a served user did (held a socket, logged in) is said in its words.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub scenario: String,
    /// login-burst only: the latency of a `/healthcheck` probe sent every 200 ms during the burst — does
    /// the server still answer others while it checks passwords?
    #[serde(default)]
    pub health_ms: Option<Pcts>,
    pub generator_cpu_s: f64,
    pub generator_peak_rss_bytes: u64,
    /// The common hold (socket scenarios): users open at once, for how long, and the ramp that got there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plateau: Option<PlateauFigures>,
    /// The app instances' own counts of connections, summed (`timeline::AtOnce`): the most during the
    /// level, and the fewest during its common hold.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instances_peak: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instances_min_in_hold: Option<u64>,
    /// `--browser-probe`: one real browser's login → project open → first sync during the plateau.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub browser: Option<super::browser::BrowserProbe>,
    /// The generator's liveness pings (socket scenarios): a load of their own on the SUT, so said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pings: Option<crate::load::liveness::Pings>,
    /// collab/editing: frames that reached a room-mate, a second of the common hold (of the whole level
    /// without one): what the instances relayed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub relayed_per_s: Option<f64>,
    /// The open model (`--arrival-rate`), said: its rate, that latencies count from each scheduled
    /// start, and the starts the in-flight cap delayed. None: the closed model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arrivals: Option<String>,
    /// `--fault`: what the planned fault became, and the users' drops and returns (those back and
    /// held to the end count among `held`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fault: Option<super::fault::FaultFigures>,
    /// `--churn`: the leaves and returns, and each instance's trends over the hold.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub growth: Option<super::growth::Growth>,
}

/// What a served user of `scenario` did: "logged in" for login-burst (no socket), else "held".
pub fn served_word(scenario: &str) -> &'static str {
    if scenario == "login-burst" {
        "logged in"
    } else {
        "held"
    }
}

impl LevelFigures {
    pub fn served_word(&self) -> &'static str {
        served_word(&self.scenario)
    }
}
