//! The run's verdict: per-user outcomes folded into counts, close codes by kind, latency percentiles and
//! the client's own usage, made in one place (`Summary::of_tally`) for a run and for merged slices; as
//! JSON tagged with the run id, and for people (`summary_text`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::metrics::{Hist, Percentiles};
use super::session::{Ctx, Ended, UserOutcome};
use super::{LoadOptions, Scenario};
use exectl_core::load::delivery::{self, Deliveries, Member};
use exectl_core::load::liveness::Pings;
use exectl_core::load::recovery::{Recovery, Relogins};
use exectl_core::plateau::PlateauFigures;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Settings {
    pub url: String,
    /// The Host header sent (a Host-routed front door), when it is not the URL's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host_header: Option<String>,
    pub ramp_s: f64,
    pub hold_s: f64,
    pub dial_concurrency: usize,
    pub interval_s: f64,
    pub tokens: bool,
    /// The client pings after this much server silence…
    pub ping_after_s: f64,
    /// …and a socket whose server stays silent past this is stalled…
    pub stall_after_s: f64,
    /// …both longer once the server is seen to ping, past its own cadence (false: `--ping-after`).
    #[serde(default = "yes")]
    pub follow_server_pings: bool,
}

/// A serde default of true (`follow_server_pings` here and in a slice's spec).
pub(super) fn yes() -> bool {
    true
}

impl Settings {
    pub fn of(opts: &super::LoadOptions) -> Settings {
        Settings {
            url: opts.endpoint.base.to_string(),
            host_header: opts.endpoint.host_header.clone(),
            ramp_s: opts.ramp.as_secs_f64(),
            hold_s: opts.hold.as_secs_f64(),
            dial_concurrency: opts.dial_concurrency,
            interval_s: opts.interval.as_secs_f64(),
            tokens: opts.tokens,
            ping_after_s: opts.liveness.ping_after_ms as f64 / 1000.0,
            stall_after_s: opts.liveness.stall_after_ms() as f64 / 1000.0,
            follow_server_pings: opts.liveness.follow_server,
        }
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct LoginBurst {
    pub logins_ok: u64,
    pub logins_failed: u64,
    /// HTTP status (or "timeout"/"error") → count.
    pub login_status: BTreeMap<String, u64>,
    pub probe_samples: u64,
    pub probe_errors: u64,
    pub probe_ms: Percentiles,
}

/// The open model's schedule (`--arrival-rate`): its rate, its in-flight cap, and the sessions that
/// found the cap full and began late (their latencies still count from their scheduled start).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Arrivals {
    pub rate_per_s: f64,
    pub in_flight_cap: usize,
    pub waited_for_cap: u64,
    /// The longest of those waits.
    pub longest_wait_ms: f64,
}

impl Arrivals {
    /// The schedule of `opts` (None: the closed model) and its waits, from each user's (µs).
    pub fn of(
        opts: &super::LoadOptions,
        waits_us: impl Iterator<Item = Option<u64>>,
    ) -> Option<Arrivals> {
        let rate = opts.arrival_rate?;
        let mut a = Arrivals {
            rate_per_s: rate,
            in_flight_cap: opts.dial_concurrency,
            ..Arrivals::default()
        };
        for w in waits_us.flatten() {
            a.waited_for_cap += 1;
            a.longest_wait_ms = a.longest_wait_ms.max(w as f64 / 1000.0);
        }
        Some(a)
    }

    /// A slice's waits added to the run's.
    pub fn add(&mut self, o: &Arrivals) {
        self.waited_for_cap += o.waited_for_cap;
        self.longest_wait_ms = self.longest_wait_ms.max(o.longest_wait_ms);
    }

    /// "50/s on schedule (latencies from each session's scheduled start); 36 waited for the in-flight cap
    /// of 64, up to 2,912 ms late".
    pub fn describe(&self) -> String {
        let late = match self.waited_for_cap {
            0 => format!(
                "none waited for the in-flight cap of {}",
                self.in_flight_cap
            ),
            n => format!(
                "{n} waited for the in-flight cap of {} (--dial-concurrency), up to {:.0} ms late",
                self.in_flight_cap, self.longest_wait_ms
            ),
        };
        format!(
            "{}/s on schedule (latencies from each session's scheduled start); {late}",
            exectl_core::bench::decimal::show(self.rate_per_s)
        )
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Fanout {
    pub frames_sent: u64,
    pub bytes_sent: u64,
    /// Every one of this run's frames that arrived anywhere, whatever its kind (see `deliveries`).
    pub fanout_messages: u64,
    pub fanout_bytes: u64,
    /// What arrived, by kind: delivered, lost, duplicated, echoed to the sender, cross-room.
    pub deliveries: Deliveries,
    /// Of frames delivered (first arrivals of a room-mate's frame).
    pub delivery_ms: Percentiles,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Editing {
    /// "metadata 200", "autosave 200", "metadata 403", … → count.
    pub actions: BTreeMap<String, u64>,
    pub metadata_ms: Percentiles,
    pub autosave_ms: Percentiles,
    pub users_with_http_failures: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Summary {
    pub run_id: String,
    pub scenario: String,
    pub users: usize,
    pub started_unix_s: u64,
    /// From the first dial (a run over processes: the common start) to the run's end.
    pub duration_s: f64,
    /// Users whose WebSocket upgrade succeeded (101), whatever happened next.
    pub connected: u64,
    /// Users whose socket stayed open and alive through the whole common hold (and answered a last ping
    /// at its end): the success that counts.
    pub held_full_duration: u64,
    /// The level's common hold: how many were open at once, for how long, and the ramp that got there
    /// (socket scenarios).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plateau: Option<PlateauFigures>,
    /// The run was stopped (SIGINT/SIGTERM, a lost SUT link) before its end: its figures are partial.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub interrupted: bool,
    /// Sockets left open by a server that went silent past the liveness bound (a frozen instance).
    pub stalled: u64,
    /// Users that met the scenario's success criterion.
    pub succeeded: u64,
    pub failed: u64,
    /// Close code the server sent before the hold was over → count.
    pub close_codes: BTreeMap<String, u64>,
    /// Failure kind (login_401, connect_timeout, closed_4003, eof_without_close, …) → count.
    pub failures: BTreeMap<String, u64>,
    /// Successful logins (a failed one is a failure of its kind, never a latency).
    pub login_ms: Percentiles,
    /// Successful connects: TCP and the upgrade to its 101.
    pub connect_ms: Percentiles,
    /// For sockets that ended early: how long after the upgrade (ACCESS_DENIED shows as ~0).
    pub early_end_ms: Percentiles,
    /// Per connected socket, the longest time its server sent nothing (the evidence behind `stalled`).
    pub server_silence_ms: Percentiles,
    /// Successful connections per second, from the first dial to the last connect.
    pub connect_rate_per_s: f64,
    pub client_peak_rss_bytes: u64,
    pub client_cpu_seconds: f64,
    /// The generator's liveness pings (socket scenarios): sent, a second during the hold, and the
    /// server's own cadence it followed — what the measurement itself asked of the server.
    #[serde(default)]
    pub pings: Pings,
    pub settings: Settings,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub login_burst: Option<LoginBurst>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fanout: Option<Fanout>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub editing: Option<Editing>,
    /// The open model (`--arrival-rate`); None: the closed model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arrivals: Option<Arrivals>,
    /// `--reconnect`: the sockets that dropped, and how their users came back (None: no reconnect).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recovery: Option<Recovery>,
    /// The generator itself: each process (slice) that ran users, its CPU and memory, and whether one
    /// was busy enough to have measured itself rather than the server.
    #[serde(default)]
    pub generator: Generator,
    /// What a parent merges slices from: the histograms behind the percentiles, the connect span.
    #[serde(skip)]
    pub parts: Parts,
}

/// The generator's processes, and the one that was bound by its own CPU, if any.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Generator {
    pub slices: Vec<SliceUse>,
    /// "slice 2 (pid 4242 on gen-1) used 97 % of its 0.20 CPU during the hold": the latencies and
    /// failures include the generator's own queueing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bound: Option<String>,
}

impl Generator {
    /// The slices, with the first bound one named.
    pub fn of(slices: Vec<SliceUse>) -> Generator {
        let bound = slices
            .iter()
            .find(|u| exectl_core::load::slices::bound(u.hold_cpu_share, u.hold_throttled))
            .map(|u| {
                let throttled = u.hold_throttled.map_or(String::new(), |t| {
                    format!(", throttled in {:.0} % of its periods", t * 100.0)
                });
                format!(
                    "slice {} (pid {} on {}) used {:.0} % of its {:.2} CPU during the hold{throttled}: \
                     the figures include the generator's own queueing; add --processes or generator hosts",
                    u.slice,
                    u.pid,
                    u.host,
                    u.hold_cpu_share.unwrap_or(0.0) * 100.0,
                    u.cpu_capacity,
                )
            });
        Generator { slices, bound }
    }
}

/// One generator process's share of a run.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct SliceUse {
    pub slice: usize,
    pub host: String,
    pub pid: u32,
    pub users: usize,
    pub held: u64,
    pub failed: u64,
    pub cpu_s: f64,
    /// The CPUs it may use (affinity, capped by its cgroup's quota).
    pub cpu_capacity: f64,
    /// The share of those it used during the common hold (the whole run without one).
    pub hold_cpu_share: Option<f64>,
    /// Under a cgroup quota: the share of its periods in which it was throttled during the hold.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hold_throttled: Option<f64>,
    pub peak_rss_bytes: u64,
    /// How long after the agreed start instant it began (slices of a run over several processes).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start_skew_ms: Option<f64>,
    /// The generator host it ran on (`--generators`), when not this one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generator: Option<String>,
    /// That host's clock minus this one's, in ms (the common start was set on its own clock).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock_offset_ms: Option<f64>,
    /// Why the slice gave no report (its process died, its host went away): its users failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// A slice that gave no report: what its last counters said, and when it was last heard from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_seen: Option<LastSeen>,
}

/// What a slice that gave no report had done when it was last heard from (its last counters).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct LastSeen {
    /// Seconds from the common start (the first dial).
    pub at_s: f64,
    /// Its users whose upgrade had succeeded, and of those still open then.
    pub connected: u64,
    pub open: u64,
}

/// The histograms behind a summary's percentiles, and the seconds from the first dial to the last
/// connect: what merging slices needs besides their counts.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Parts {
    pub login: Hist,
    pub connect: Hist,
    pub early_end: Hist,
    pub silence: Hist,
    pub delivery: Hist,
    pub metadata: Hist,
    pub autosave: Hist,
    pub probe: Hist,
    /// `--reconnect`: from each drop to its return.
    #[serde(default)]
    pub back: Hist,
    /// `--relogin`: each successful login on the way back.
    #[serde(default)]
    pub relogin: Hist,
    pub connect_span_s: f64,
    #[serde(default)]
    pub spans: Spans,
}

/// When a run's successful connects and logins happened, in seconds from its start: what its ramp and
/// its login rate are read from. Slices share the common start, so a parent merges their spans.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Spans {
    /// The first and the last successful connect.
    pub connects: Option<(f64, f64)>,
    /// The first successful login's start and the last one's answer.
    pub logins: Option<(f64, f64)>,
    pub logins_ok: u64,
}

impl Spans {
    pub fn of(outcomes: &[UserOutcome]) -> Spans {
        let s = |us: u64| us as f64 / 1e6;
        let mut out = Spans::default();
        let widen = |span: &mut Option<(f64, f64)>, a: f64, b: f64| {
            *span = Some(span.map_or((a, b), |(x, y)| (x.min(a), y.max(b))));
        };
        for o in outcomes {
            if let Some(at) = o.connected_at_us {
                widen(&mut out.connects, s(at), s(at));
            }
            if o.login_status.as_deref() == Some("200") {
                out.logins_ok += 1;
                if let (Some(done), Some(took)) = (o.login_done_us, o.login_us) {
                    widen(&mut out.logins, s(done.saturating_sub(took)), s(done));
                }
            }
        }
        out
    }

    pub fn add(&mut self, o: &Spans) {
        let merge = |a: Option<(f64, f64)>, b: Option<(f64, f64)>| match (a, b) {
            (Some((a0, a1)), Some((b0, b1))) => Some((a0.min(b0), a1.max(b1))),
            (a, b) => a.or(b),
        };
        self.connects = merge(self.connects, o.connects);
        self.logins = merge(self.logins, o.logins);
        self.logins_ok += o.logins_ok;
    }

    /// First to last successful connect (None when no socket connected).
    pub fn ramp_s(&self) -> Option<f64> {
        self.connects.map(|(a, b)| b - a)
    }

    /// Successful logins per second, from the first one's start to the last one's answer (None with
    /// minted tokens or when none succeeded).
    pub fn logins_per_s(&self) -> Option<f64> {
        let (a, b) = self.logins?;
        Some(self.logins_ok as f64 / (b - a).max(1e-3))
    }
}

/// The users' drops and returns, counted (`--reconnect`), with their logins on the way back when
/// `relogin` (`--relogin`); the returns' times are the histograms' (`Summary::of_tally`).
fn recovery(outcomes: &[UserOutcome], relogin: bool) -> Recovery {
    let mut r = Recovery::default();
    let s = |us: u64| us as f64 / 1e6;
    for (o, u) in outcomes
        .iter()
        .filter_map(|o| Some((o, o.recovery.as_deref()?)))
    {
        r.add(&Recovery {
            drops: u.dropped_by.len() as u64,
            leaves: u.leaves as u64,
            users_dropped: !u.dropped_by.is_empty() as u64,
            users_back: o.held as u64,
            not_back: u.not_back as u64,
            failed_dials: count(&u.failed_dials),
            dropped_by: count(&u.dropped_by),
            first_drop_s: u.first_drop_us.map(s),
            last_back_s: u.last_back_us.map(s),
            relogins: relogin.then(|| Relogins {
                ok: u.logins_us.len() as u64,
                failed: count(&u.failed_logins),
                ..Relogins::default()
            }),
            ..Recovery::default()
        });
    }
    if relogin {
        r.relogins.get_or_insert_with(Relogins::default);
    }
    r
}

/// Each kind's count.
fn count(kinds: &[String]) -> BTreeMap<String, u64> {
    kinds.iter().fold(BTreeMap::new(), |mut m, k| {
        *m.entry(k.clone()).or_default() += 1;
        m
    })
}

/// The returns' p50, p95 and longest, from their histogram (a run's, or its slices' merged), and
/// the logins' on the way back (`--relogin`).
fn returns(r: &mut Recovery, back: &Hist, relogin: Option<&Hist>) {
    let p = back.percentiles();
    if p.count > 0 {
        (r.back_p50_ms, r.back_p95_ms, r.back_max_ms) = (Some(p.p50), Some(p.p95), Some(p.max));
    }
    if let (Some(l), Some(h)) = (r.relogins.as_mut(), relogin) {
        let p = h.percentiles();
        if p.count > 0 {
            (l.p50_ms, l.p95_ms, l.max_ms) = (Some(p.p50), Some(p.p95), Some(p.max));
        }
    }
}

/// What the runner measured besides the users' outcomes.
pub struct RunFacts {
    pub duration_s: f64,
    /// Seconds from the first dial to the last successful connect.
    pub connect_span_s: f64,
    pub peak_rss: u64,
    pub cpu_s: f64,
    pub cpu_capacity: f64,
    /// The shares of `cpu_capacity` used and of cgroup periods throttled, during the common hold (the
    /// whole run without one).
    pub hold_cpu: (Option<f64>, Option<f64>),
    /// login-burst's probe: samples, errors, latencies.
    pub probe: Option<(u64, u64, Hist)>,
    /// The liveness pings it sent, and the server's own it followed.
    pub pings: Pings,
}

/// A run's counts and histograms: gathered from its users (`Summary::build`) or summed over its
/// slices (`slice::merge`), then made a `Summary` in one place (`Summary::of_tally`).
#[derive(Debug, Default)]
pub struct Tally {
    pub users: usize,
    pub started_unix_s: u64,
    pub duration_s: f64,
    pub connected: u64,
    pub held: u64,
    pub stalled: u64,
    pub succeeded: u64,
    pub interrupted: bool,
    pub plateau: Option<PlateauFigures>,
    pub close_codes: BTreeMap<String, u64>,
    pub failures: BTreeMap<String, u64>,
    pub peak_rss: u64,
    pub cpu_s: f64,
    pub pings: Pings,
    /// Counts; their percentiles are read off `parts`.
    pub login_burst: Option<LoginBurst>,
    pub fanout: Option<Fanout>,
    pub editing: Option<Editing>,
    pub arrivals: Option<Arrivals>,
    /// Counts; the returns' times are read off `parts`.
    pub recovery: Option<Recovery>,
    pub slices: Vec<SliceUse>,
    pub parts: Parts,
}

impl Summary {
    pub fn build(ctx: &Ctx, outcomes: &[UserOutcome], facts: RunFacts) -> Summary {
        let opts = &ctx.opts;
        let scenario = opts.scenario;
        let accounts = &opts.manifest.accounts;

        // collab: every frame is owed to each other member of its room that was connected for the
        // whole send window. A held socket was: the window is inside the common hold (`Ctx::send_window`),
        // and a held socket was open through all of it. Users that failed were not.
        let collab = scenario == Scenario::Collab;
        let members: Vec<Member> = outcomes
            .iter()
            .enumerate()
            .map(|(i, o)| Member {
                room: exectl_core::frame::room_id(&accounts[i].project_uuid),
                sent: o.frames_sent,
                // A user that dropped and came back (`--reconnect`) was not there all along.
                whole_window: collab && o.held && o.recovery.is_none(),
                received: &o.received,
            })
            .collect();
        let (deliveries, lost_per) = delivery::count(&members, collab);

        let (mut login, mut connect, mut early, mut silence) = (
            Hist::default(),
            Hist::default(),
            Hist::default(),
            Hist::default(),
        );
        let mut close_codes = BTreeMap::new();
        let mut failures: BTreeMap<String, u64> = BTreeMap::new();
        let mut login_status = BTreeMap::new();
        let (mut connected, mut held, mut succeeded, mut stalled) = (0u64, 0u64, 0u64, 0u64);
        let mut http_failed = 0u64;
        for (i, o) in outcomes.iter().enumerate() {
            if let Some(v) = o.login_us {
                login.record_us(v);
            }
            if let Some(s) = &o.login_status {
                *login_status.entry(s.clone()).or_insert(0u64) += 1;
            }
            if let Some(v) = o.connect_us {
                connect.record_us(v);
            }
            if let Some(v) = o.early_end_us {
                early.record_us(v);
            }
            if let Some(v) = o.longest_silence_ms {
                silence.record_us(v as u64 * 1000);
            }
            if let Some(Ended::Closed(code)) = o.ended {
                *close_codes.entry(code.to_string()).or_insert(0u64) += 1;
            }
            connected += o.connected as u64;
            held += (o.held && o.recovery.is_none()) as u64;
            stalled += (o.ended == Some(Ended::Stalled)) as u64;
            let mut failure = o.failure.clone();
            if failure.is_none() && o.http_failures > 0 {
                http_failed += 1;
                failure = Some("http_action_failed".into());
            }
            if collab && o.held && failure.is_none() && !o.send_window_open {
                failure = Some("no_send_window".into());
            }
            // A receiver that got a wrong frame fails (the worst kind named), whatever the scenario.
            let rx = &o.received;
            if failure.is_none() {
                failure = [
                    (rx.cross_room, "cross_room_frames"),
                    (rx.echoed, "echoed_frames"),
                    (rx.duplicated, "duplicated_frames"),
                    (lost_per[i], "missing_frames"),
                ]
                .into_iter()
                .find(|(n, _)| *n > 0)
                .map(|(_, kind)| kind.to_string());
            }
            match failure {
                Some(f) => *failures.entry(f).or_default() += 1,
                None => succeeded += 1,
            }
        }

        let sum = |f: fn(&UserOutcome) -> u64| outcomes.iter().map(f).sum::<u64>();
        let fanout = matches!(scenario, Scenario::Collab | Scenario::Editing).then(|| Fanout {
            frames_sent: sum(|o| o.frames_sent),
            bytes_sent: sum(|o| o.bytes_sent),
            fanout_messages: sum(|o| o.frames_received),
            fanout_bytes: sum(|o| o.bytes_received),
            deliveries,
            ..Fanout::default()
        });
        let (login_burst, probe_hist) = match facts.probe {
            Some((samples, errors, probe)) => {
                let ok = login_status.get("200").copied().unwrap_or(0);
                let burst = LoginBurst {
                    logins_ok: ok,
                    logins_failed: outcomes.len() as u64 - ok,
                    login_status: login_status.clone(),
                    probe_samples: samples,
                    probe_errors: errors,
                    ..LoginBurst::default()
                };
                (Some(burst), probe)
            }
            None => (None, Hist::default()),
        };
        let editing = (scenario == Scenario::Editing).then(|| Editing {
            actions: ctx.actions.snapshot(),
            users_with_http_failures: http_failed,
            ..Editing::default()
        });
        let (mut back, mut relogin) = (Hist::default(), Hist::default());
        for r in outcomes.iter().filter_map(|o| o.recovery.as_deref()) {
            for us in &r.back_us {
                back.record_us(*us);
            }
            for us in &r.logins_us {
                relogin.record_us(*us);
            }
        }
        let spans = Spans::of(outcomes);
        let plateau = scenario.uses_socket().then(|| {
            ctx.live
                .plateau
                .figures(spans.ramp_s(), spans.logins_per_s())
        });
        Summary::of_tally(
            opts,
            Tally {
                users: outcomes.len(),
                started_unix_s: ctx.started_unix_s(),
                duration_s: facts.duration_s,
                connected,
                held,
                stalled,
                succeeded,
                interrupted: ctx.live.plateau.stopped(),
                plateau,
                close_codes,
                failures,
                peak_rss: facts.peak_rss,
                cpu_s: facts.cpu_s,
                pings: facts.pings,
                login_burst,
                fanout,
                editing,
                arrivals: Arrivals::of(opts, outcomes.iter().map(|o| o.cap_wait_us)),
                recovery: opts.reconnect.then(|| recovery(outcomes, opts.relogin)),
                slices: vec![SliceUse {
                    slice: 0,
                    host: super::metrics::host_name(),
                    pid: std::process::id(),
                    users: outcomes.len(),
                    held,
                    failed: outcomes.len() as u64 - succeeded,
                    cpu_s: facts.cpu_s,
                    cpu_capacity: facts.cpu_capacity,
                    hold_cpu_share: facts.hold_cpu.0,
                    hold_throttled: facts.hold_cpu.1,
                    peak_rss_bytes: facts.peak_rss,
                    start_skew_ms: None,
                    generator: None,
                    clock_offset_ms: None,
                    error: None,
                    last_seen: None,
                }],
                parts: Parts {
                    login,
                    connect,
                    early_end: early,
                    silence,
                    delivery: ctx.delivery.snapshot(),
                    metadata: ctx.metadata_ms.snapshot(),
                    autosave: ctx.autosave_ms.snapshot(),
                    probe: probe_hist,
                    back,
                    relogin,
                    connect_span_s: facts.connect_span_s,
                    spans,
                },
            },
        )
    }

    /// A run's summary from its tally, for a run's users (`build`) and for slices merged
    /// (`slice::merge`) alike: every percentile read off the tally's histograms (never an average of
    /// percentiles), the connect rate from its connect span, the returns from its histograms.
    pub fn of_tally(opts: &LoadOptions, t: Tally) -> Summary {
        let Tally {
            mut login_burst,
            mut fanout,
            mut editing,
            parts,
            ..
        } = t;
        if let Some(b) = &mut login_burst {
            b.probe_ms = parts.probe.percentiles();
        }
        if let Some(f) = &mut fanout {
            f.delivery_ms = parts.delivery.percentiles();
        }
        if let Some(e) = &mut editing {
            e.metadata_ms = parts.metadata.percentiles();
            e.autosave_ms = parts.autosave.percentiles();
        }
        let rate = if parts.connect_span_s > 0.0 {
            (t.connected as f64 / parts.connect_span_s * 10.0).round() / 10.0
        } else {
            0.0
        };
        Summary {
            run_id: opts.run_id.clone(),
            scenario: opts.scenario.name().to_string(),
            users: t.users,
            started_unix_s: t.started_unix_s,
            duration_s: (t.duration_s * 1000.0).round() / 1000.0,
            connected: t.connected,
            held_full_duration: t.held,
            plateau: t.plateau,
            interrupted: t.interrupted,
            stalled: t.stalled,
            succeeded: t.succeeded,
            failed: t.users as u64 - t.succeeded,
            close_codes: t.close_codes,
            failures: t.failures,
            login_ms: parts.login.percentiles(),
            connect_ms: parts.connect.percentiles(),
            early_end_ms: parts.early_end.percentiles(),
            server_silence_ms: parts.silence.percentiles(),
            connect_rate_per_s: rate,
            client_peak_rss_bytes: t.peak_rss,
            client_cpu_seconds: t.cpu_s,
            pings: t.pings,
            settings: Settings::of(opts),
            login_burst,
            fanout,
            editing,
            arrivals: t.arrivals,
            recovery: t.recovery.map(|mut r| {
                returns(&mut r, &parts.back, opts.relogin.then_some(&parts.relogin));
                r
            }),
            generator: Generator::of(t.slices),
            parts,
        }
    }

    /// Whether every user met the scenario's criterion and no frame was lost, duplicated, echoed to
    /// its sender or delivered into another room.
    pub fn passed(&self) -> bool {
        self.failed == 0
            && !self.interrupted
            // Sockets that dropped and came back (`--reconnect`, all of them, or `failed` counts
            // them) did not hold the plateau whole: their return is the measure.
            && (self.recovery.as_ref().is_some_and(|r| r.drops + r.leaves > 0)
                || self.plateau.as_ref().is_none_or(PlateauFigures::full))
            && !self.fanout.as_ref().is_some_and(|f| f.deliveries.faulty())
    }

    /// 0 when the run passed, 1 otherwise.
    pub fn exit_code(&self) -> i32 {
        if self.passed() {
            0
        } else {
            1
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::summary_text::render_deliveries;

    #[test]
    fn deliveries_line() {
        let d = Deliveries {
            expected: Some(90),
            delivered: 100,
            delivered_to_partial_members: 10,
            lost: Some(0),
            duplicated: 1,
            echoed: 2,
            cross_room: 3,
        };
        assert_eq!(
            render_deliveries(&d),
            "delivered 90 of 90 expected (+10 to members not there for the whole window)  lost 0  \
             duplicated 1  echoed 2  cross-room 3"
        );
        // editing owes nothing: no expected, no lost, no partial members.
        let e = Deliveries {
            expected: None,
            lost: None,
            delivered_to_partial_members: 100,
            ..d
        };
        assert_eq!(
            render_deliveries(&e),
            "delivered 100  duplicated 1  echoed 2  cross-room 3"
        );
    }
}
