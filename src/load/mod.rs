//! `exectl load`: a native load generator for the app's login API and Yjs WebSocket relay.
//!
//! One task per user, spawned on the ramp's schedule with at most `--dial-concurrency` dials in flight;
//! each user makes one attempt by default (a failed user is not retried, so there is no retry storm;
//! with `--reconnect` or `--churn` a dropped or leaving user dials again with the real client's backoff)
//! and every wait is bounded by a timeout. A socket counts as held only if it stayed open and alive for the
//! whole hold: the app always answers 101 and rejects with a close code right after (contract §2), and a
//! frozen server keeps its sockets open without a word (`exectl_core::load::liveness`).

pub mod endpoint;
pub mod front_door;
pub mod manifest;
pub mod metrics;
pub mod plateau;
pub mod preflight;
pub mod runner;
pub mod session;
pub mod settings;
pub mod slice;
pub mod summary;
pub mod summary_text;

use std::time::Duration;

pub use endpoint::{AllowList, Endpoint};
pub use exectl_core::load::Scenario;
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
    /// The action interval D: each wait is uniform in [D/2, 2·D] (mean 1.25·D).
    pub interval: Duration,
    pub tokens: bool,
    /// When a held socket's silent server counts as stalled.
    pub liveness: exectl_core::load::liveness::Bounds,
    pub run_id: String,
    /// Print the per-second progress line on stderr.
    pub progress: bool,
    /// Counters to update instead of the run's own, for a caller that watches them (bench's sampler).
    pub live: Option<std::sync::Arc<metrics::Live>>,
    /// `--source-addrs`: user i dials from address i mod n (empty: the kernel chooses).
    pub sources: Vec<std::net::IpAddr>,
    /// `--processes`: generator processes to split the users over (None: as many as the open-file
    /// hard limit requires, `preflight::processes`).
    pub processes: Option<usize>,
    /// login-burst's /healthcheck probe runs here (only one slice of a run over processes probes).
    pub probe: bool,
    /// `--generators`: other hosts that run slices of the run, and whether this one does too.
    pub generators: Generators,
    /// A slice's users' places in the whole run's ramp (None: users 0..users are the whole run).
    pub ramp_slots: Option<RampSlots>,
    /// The recorded stacks whose front door the load goes to: `exectl load` holds each as a reader
    /// while it runs (`ops::load`), so that no deploy, prepare, reset or teardown changes it meanwhile.
    /// Empty: a `--url` that no stack recorded on this target publishes.
    pub stacks: Vec<StackRef>,
    /// The open model (`--arrival-rate`, sessions a second): users start on schedule (`ramp` is
    /// users / rate) whatever the server does, `dial_concurrency` caps those in flight (a session that
    /// finds the cap full waits, and says so), and the first step's latency counts from the scheduled
    /// start. None: the closed model, where a start waits for a free dial.
    pub arrival_rate: Option<f64>,
    /// `--reconnect`: a user whose socket drops before the hold ends dials again as the real client
    /// does (`exectl_core::load::recovery`: 100 ms doubling to 2.5 s between tries, the same token),
    /// until it is open again or the hold ends; the summary's `recovery` counts the drops and returns.
    /// false: one attempt, a dropped socket is a failed user.
    pub reconnect: bool,
    /// `--relogin` (with `reconnect`): a user whose socket dropped logs in again before each way back,
    /// as one who reloads the page; `recovery.relogins` counts those logins and their latency. false:
    /// it dials again with its token, as y-websocket does.
    pub relogin: bool,
    /// `--churn`: during the common hold each user leaves (a normal close) after a time drawn from an
    /// exponential of this mean, and comes back at once with a new socket (`reconnect` on: a failed
    /// dial is retried as a dropped user's). None: users stay.
    pub churn: Option<Duration>,
}

/// A recorded stack: its name and its state folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StackRef {
    pub name: String,
    pub dir: std::path::PathBuf,
}

/// Where a slice's users start in the whole run's ramp: user i of the slice is user `slot[i]` of `of`,
/// so that a run over processes starts its users as evenly as one process would.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RampSlots {
    pub slot: Vec<u32>,
    pub of: usize,
}

/// The generator hosts of a run (`--generators local,ssh://USER@HOST[:PORT],…`).
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Generators {
    /// This host runs slices too (its `--processes` of them): `local` listed, or no list at all.
    pub local: bool,
    /// One slice on each, reached as every SSH target is.
    pub hosts: Vec<crate::sut::ssh::ConnectOptions>,
}

impl Default for Generators {
    fn default() -> Generators {
        Generators {
            local: true,
            hosts: Vec::new(),
        }
    }
}

impl Generators {
    /// A run's generator hosts as given (`--generators`, a bench's `generators`), else this host's own
    /// slices only.
    pub fn given(
        value: Option<&str>,
        target: &crate::sut::target_flags::TargetFlags,
    ) -> Result<Generators, exectl_core::error::UsageError> {
        match value {
            Some(v) => Generators::parse(target, v),
            None => Ok(Generators::default()),
        }
    }

    /// `--generators local,ssh://USER@HOST[:PORT],…`: the generator hosts, reached with the target flags'
    /// key and known_hosts, and whether this host runs slices too (`local` listed).
    pub fn parse(
        args: &crate::sut::target_flags::TargetFlags,
        value: &str,
    ) -> Result<Generators, exectl_core::error::UsageError> {
        let timeout = crate::sut::target_flags::connect_timeout(args)?;
        let mut g = Generators {
            local: false,
            hosts: Vec::new(),
        };
        for item in value.split(',').map(str::trim) {
            match crate::sut::ssh::url::parse("--generators", item)? {
                None if item == "local" => g.local = true,
                None => {
                    return Err(exectl_core::error::UsageError::new(
                        "--generators",
                        value,
                        "an empty entry",
                        "list local and ssh://USER@HOST[:PORT] entries separated by commas",
                    ))
                }
                Some(url) => {
                    if g.hosts.iter().any(|h| h.url == url) {
                        return Err(exectl_core::error::UsageError::new(
                            "--generators",
                            value,
                            format!("{url} is listed twice"),
                            "list each generator host once (--processes sets this host's slices)",
                        ));
                    }
                    g.hosts.push(crate::sut::target_flags::connect_options(
                        args, url, timeout,
                    ));
                }
            }
        }
        Ok(g)
    }
}

impl LoadOptions {
    /// `users` of the scenario against `endpoint` with the accounts of `manifest`, with `exectl load`'s
    /// defaults (ramp 10 s, or none for a login burst; hold 30 s; 64 dials in flight; the scenario's
    /// interval), quiet. Set the fields to change them.
    pub fn new(
        scenario: Scenario,
        endpoint: Endpoint,
        manifest: Manifest,
        users: usize,
    ) -> LoadOptions {
        let burst = scenario == Scenario::LoginBurst;
        LoadOptions {
            scenario,
            endpoint,
            manifest,
            users,
            ramp: if burst { Duration::ZERO } else { DEFAULT_RAMP },
            dial_concurrency: if burst {
                users
            } else {
                DEFAULT_DIAL_CONCURRENCY.min(users)
            },
            hold: DEFAULT_HOLD,
            interval: scenario.default_interval(),
            tokens: false,
            liveness: exectl_core::load::liveness::Bounds::for_users(users),
            run_id: format!("{}-{users}", scenario.name()),
            progress: false,
            live: None,
            sources: Vec::new(),
            processes: None,
            probe: true,
            generators: Generators::default(),
            ramp_slots: None,
            stacks: Vec::new(),
            arrival_rate: None,
            reconnect: false,
            relogin: false,
            churn: None,
        }
    }

    /// When user `i` starts, after the run's start: evenly over `--ramp`, by its place among all the
    /// run's users (a slice's users keep theirs).
    pub fn start_after(&self, i: usize) -> Duration {
        let (k, n) = match &self.ramp_slots {
            Some(s) => (s.slot.get(i).map_or(i, |&k| k as usize), s.of),
            None => (i, self.users),
        };
        self.ramp.mul_f64(k as f64 / n.max(1) as f64)
    }

    /// The users of each slice of a run over `processes` slices here and one per generator host
    /// (this host's first), rooms kept whole; a slice left without a room does not run.
    pub fn dealt(&self, processes: usize) -> Vec<Vec<usize>> {
        let rooms: Vec<u64> = self.manifest.accounts[..self.users]
            .iter()
            .map(|a| exectl_core::frame::room_id(&a.project_uuid))
            .collect();
        exectl_core::load::slices::assign(&rooms, processes + self.generators.hosts.len())
    }

    /// The users this host dials itself: all of them, or with generator hosts its slices' share (the
    /// users are dealt out by room over every slice, so this is within a room of exact).
    pub fn users_here(&self) -> usize {
        let g = &self.generators;
        match (g.hosts.len(), g.local) {
            (0, _) => self.users,
            (_, false) => 0,
            (hosts, true) => {
                let here = self.processes.unwrap_or(1);
                (self.users * here).div_ceil(here + hosts)
            }
        }
    }
}

/// Run `opts` to its summary: in this process, or split over `--processes` slices and the generator
/// hosts' (`slice::fan`).
/// Its lines (each second's with `progress`, warnings) go to `progress`.
pub fn run(opts: LoadOptions, progress: &dyn crate::progress::Progress) -> anyhow::Result<Summary> {
    match (
        preflight::processes(&opts),
        opts.generators.hosts.is_empty(),
    ) {
        (0 | 1, true) => runner::run(opts, progress),
        (here, _) => slice::fan::run(opts, here, progress),
    }
}

/// Dials in flight by default: enough for a fast ramp, far below an accept queue (the MQTT seed's
/// simultaneous dials overflowed it).
pub const DEFAULT_DIAL_CONCURRENCY: usize = 64;
pub const DEFAULT_RAMP: Duration = Duration::from_secs(10);
pub const DEFAULT_HOLD: Duration = Duration::from_secs(30);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scenario_names() {
        for s in Scenario::ALL {
            assert_eq!(Scenario::parse(s.name()), Some(s));
        }
        assert_eq!(Scenario::parse("burst"), None);
    }
}
