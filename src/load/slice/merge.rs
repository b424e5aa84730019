//! The slices' reports as one run's summary, with exactly a single run's fields: counts summed into a
//! `Tally` that `Summary::of_tally` makes a summary of, as a single run's (every percentile read off the
//! merged histograms, never an average of percentiles), the common hold's figures from the slices' own
//! exact counts, and a row per slice. A slice without a report counts all
//! its users as failed ("slice_failed"), held by none.

use std::collections::BTreeMap;

use exectl_core::load::liveness::Pings;
use exectl_core::load::recovery::Recovery;
use exectl_core::plateau::PlateauFigures;

use super::SliceReport;
use crate::load::summary::{
    Arrivals, Editing, Fanout, LastSeen, LoginBurst, Parts, SliceUse, Summary, Tally,
};
use crate::load::{LoadOptions, Scenario};

/// How a slice ended.
#[derive(Debug)]
pub enum Outcome {
    Report(Box<SliceReport>),
    Failed(String),
}

#[derive(Debug)]
pub struct SliceResult {
    pub slice: usize,
    pub users: usize,
    pub pid: u32,
    pub skew_ms: Option<f64>,
    /// "local", or the generator host's URL.
    pub generator: String,
    pub clock_offset_ms: Option<f64>,
    pub outcome: Outcome,
    /// Its last counters, and when it was last heard from (seconds from the common start): what a
    /// slice without a report is known to have done.
    pub last: super::Counters,
    pub last_heard_s: f64,
}

impl SliceResult {
    /// Its generator host, when not this one.
    fn remote(&self) -> Option<String> {
        (self.generator != "local").then(|| self.generator.clone())
    }
}

/// What the parent measured itself.
pub struct Parent {
    pub duration_s: f64,
    /// Its plateau's figures: when the common hold began and ended (it sent "hold"), its sampled peak.
    pub window: PlateauFigures,
    pub stopped: bool,
    pub peak_rss: u64,
    pub cpu_s: f64,
}

fn add_map(into: &mut BTreeMap<String, u64>, from: &BTreeMap<String, u64>) {
    for (k, v) in from {
        *into.entry(k.clone()).or_default() += v;
    }
}

fn add_parts(into: &mut Parts, p: &Parts) {
    into.login.add(&p.login);
    into.connect.add(&p.connect);
    into.early_end.add(&p.early_end);
    into.silence.add(&p.silence);
    into.delivery.add(&p.delivery);
    into.metadata.add(&p.metadata);
    into.autosave.add(&p.autosave);
    into.probe.add(&p.probe);
    into.back.add(&p.back);
    into.relogin.add(&p.relogin);
    into.connect_span_s = into.connect_span_s.max(p.connect_span_s);
    into.spans.add(&p.spans);
}

pub fn merge(opts: &LoadOptions, results: Vec<SliceResult>, parent: Parent) -> Summary {
    let scenario = opts.scenario;
    let mut parts = Parts::default();
    let (mut connected, mut held, mut stalled, mut succeeded) = (0u64, 0u64, 0u64, 0u64);
    let (mut close_codes, mut failures) = (BTreeMap::new(), BTreeMap::new());
    let (mut rss, mut cpu) = (parent.peak_rss, parent.cpu_s);
    let mut interrupted = parent.stopped;
    let mut login_burst: Option<LoginBurst> = None;
    let mut fanout: Option<Fanout> = None;
    let mut editing: Option<Editing> = None;
    // The whole run's schedule and cap; each slice's waits added.
    let mut arrivals = Arrivals::of(opts, std::iter::empty());
    // Each slice's drops and returns added; the returns' percentiles from the merged histogram.
    let mut recovery = opts.reconnect.then(Recovery::default);
    let mut uses = Vec::new();
    // The hold's figures: each slice's count is exact for its sockets, so the sums are a floor.
    let (mut open_at_start, mut min_open, mut hold_len) = (0u64, 0u64, f64::INFINITY);
    let mut started_unix_s = u64::MAX;
    let mut pings = Pings::default();
    for r in &results {
        let rep = match &r.outcome {
            Outcome::Report(rep) => rep,
            Outcome::Failed(why) => {
                *failures.entry("slice_failed".to_string()).or_default() += r.users as u64;
                // Its sockets that upgraded did connect (its ticks said so), and the common hold of
                // every user lasted until it was last heard from.
                connected += r.last.connected;
                pings.sent += r.last.pings_sent;
                hold_len = match parent.window.start_s {
                    Some(start) => hold_len.min((r.last_heard_s - start).max(0.0)),
                    None => 0.0,
                };
                uses.push(SliceUse {
                    slice: r.slice,
                    host: match r.remote() {
                        Some(url) => url,
                        None => crate::load::metrics::host_name(),
                    },
                    pid: r.pid,
                    users: r.users,
                    failed: r.users as u64,
                    start_skew_ms: r.skew_ms,
                    generator: r.remote(),
                    clock_offset_ms: r.clock_offset_ms,
                    error: Some(why.clone()),
                    last_seen: Some(LastSeen {
                        at_s: (r.last_heard_s * 10.0).round() / 10.0,
                        connected: r.last.connected,
                        open: r.last.open,
                    }),
                    ..SliceUse::default()
                });
                continue;
            }
        };
        let s = &rep.summary;
        add_parts(&mut parts, &rep.parts);
        connected += s.connected;
        held += s.held_full_duration;
        stalled += s.stalled;
        succeeded += s.succeeded;
        add_map(&mut close_codes, &s.close_codes);
        add_map(&mut failures, &s.failures);
        rss += s.client_peak_rss_bytes;
        cpu += s.client_cpu_seconds;
        interrupted |= s.interrupted;
        started_unix_s = started_unix_s.min(s.started_unix_s);
        // Counts and rates add up (the slices hold at once); the server's cadence is the shortest any
        // slice saw, and the silence before a ping the longest any used.
        let p = &s.pings;
        pings.sent += p.sent;
        pings.per_s_in_hold = match (pings.per_s_in_hold, p.per_s_in_hold) {
            (Some(a), Some(b)) => Some(((a + b) * 10.0).round() / 10.0),
            (a, b) => a.or(b),
        };
        pings.server_every_s = match (pings.server_every_s, p.server_every_s) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        pings.ping_after_s = pings.ping_after_s.max(p.ping_after_s);
        if let Some(p) = &s.plateau {
            open_at_start += p.open_at_start;
            min_open += p.min_open;
            hold_len = hold_len.min(p.length_s());
        }
        if let Some(b) = &s.login_burst {
            let m = login_burst.get_or_insert_with(LoginBurst::default);
            m.logins_ok += b.logins_ok;
            m.logins_failed += b.logins_failed;
            add_map(&mut m.login_status, &b.login_status);
            m.probe_samples += b.probe_samples;
            m.probe_errors += b.probe_errors;
        }
        if let Some(f) = &s.fanout {
            let m = fanout.get_or_insert_with(Fanout::default);
            m.frames_sent += f.frames_sent;
            m.bytes_sent += f.bytes_sent;
            m.fanout_messages += f.fanout_messages;
            m.fanout_bytes += f.fanout_bytes;
            m.deliveries.add(&f.deliveries);
        }
        if let (Some(m), Some(a)) = (&mut arrivals, &s.arrivals) {
            m.add(a);
        }
        if let (Some(m), Some(r)) = (&mut recovery, &s.recovery) {
            m.add(r);
        }
        if let Some(e) = &s.editing {
            let m = editing.get_or_insert_with(Editing::default);
            add_map(&mut m.actions, &e.actions);
            m.users_with_http_failures += e.users_with_http_failures;
        }
        for u in &s.generator.slices {
            uses.push(SliceUse {
                slice: r.slice,
                start_skew_ms: r.skew_ms.or(u.start_skew_ms),
                generator: r.remote(),
                clock_offset_ms: r.clock_offset_ms,
                ..u.clone()
            });
        }
    }
    // A login burst whose probing slice failed still says how its logins went.
    if scenario == Scenario::LoginBurst && login_burst.is_none() {
        login_burst = Some(LoginBurst::default());
    }
    if let Some(b) = &mut login_burst {
        let lost: u64 = results
            .iter()
            .filter(|r| matches!(r.outcome, Outcome::Failed(_)))
            .map(|r| r.users as u64)
            .sum();
        b.logins_failed += lost;
    }
    let users = opts.users;
    let plateau = scenario.uses_socket().then(|| {
        let w = &parent.window;
        let length = if hold_len.is_finite() { hold_len } else { 0.0 };
        PlateauFigures {
            target: users as u64,
            hold_s: opts.hold.as_secs_f64(),
            start_s: w.start_s,
            end_s: w.start_s.map(|s| s + length),
            open_at_start,
            min_open,
            // Sampled four times a second over the slices: never below what was open throughout.
            peak_open: w.peak_open.max(min_open),
            peak_at_s: w.peak_at_s,
            // From the slices' spans together: they share the common start.
            ramp_s: parts.spans.ramp_s(),
            ramp_asked_s: opts.ramp.as_secs_f64(),
            logins_per_s: parts.spans.logins_per_s(),
        }
    });
    Summary::of_tally(
        opts,
        Tally {
            users,
            started_unix_s: if started_unix_s == u64::MAX {
                0
            } else {
                started_unix_s
            },
            duration_s: parent.duration_s,
            connected,
            held,
            stalled,
            succeeded,
            interrupted,
            plateau,
            close_codes,
            failures,
            peak_rss: rss,
            cpu_s: (cpu * 1000.0).round() / 1000.0,
            pings,
            login_burst,
            fanout,
            editing,
            arrivals,
            recovery,
            slices: uses,
            parts,
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::metrics::Hist;
    use crate::load::{Endpoint, Manifest};
    use std::time::Duration;

    fn opts(users: usize) -> LoadOptions {
        let manifest = Manifest {
            dir: "m".into(),
            accounts: Vec::new(),
            projects: Vec::new(),
            tokens: None,
            tokens_expire: None,
        };
        let endpoint = Endpoint::at("127.0.0.1:9".parse().unwrap(), None);
        LoadOptions::new(Scenario::Idle, endpoint, manifest, users)
    }

    /// A slice's report: `users` held, connect latencies `connect_ms`, its hold's counts.
    fn report(users: u64, connect_ms: &[u64], min_open: u64) -> Box<SliceReport> {
        let p = serde_json::json!({"count": 0, "p50": 0.0, "p95": 0.0, "p99": 0.0, "max": 0.0});
        let summary = serde_json::json!({
            "run_id": "r-s0", "scenario": "idle", "users": users, "started_unix_s": 100,
            "duration_s": 9.0, "connected": users, "held_full_duration": min_open,
            "plateau": {"target": users, "hold_s": 5.0, "start_s": 2.0, "end_s": 7.0,
                        "open_at_start": users, "min_open": min_open, "peak_open": users,
                        "peak_at_s": 2.0, "ramp_s": 1.5, "ramp_asked_s": 2.0, "logins_per_s": 10.0},
            "stalled": 0, "succeeded": min_open, "failed": users - min_open,
            "close_codes": {"4003": users - min_open}, "failures": {},
            "login_ms": p, "connect_ms": p, "early_end_ms": p, "server_silence_ms": p,
            "connect_rate_per_s": 1.0, "client_peak_rss_bytes": 1000, "client_cpu_seconds": 0.5,
            "settings": {"url": "http://127.0.0.1:9/", "ramp_s": 2.0, "hold_s": 5.0,
                         "dial_concurrency": 8, "interval_s": 1.0, "tokens": false,
                         "ping_after_s": 5.0, "stall_after_s": 15.0},
            "generator": {"slices": [{"slice": 0, "host": "h", "pid": 7, "users": users,
                          "held": min_open, "failed": 0, "cpu_s": 0.5, "cpu_capacity": 1.0,
                          "hold_cpu_share": 0.1, "peak_rss_bytes": 1000}]}
        });
        let mut parts = Parts::default();
        for ms in connect_ms {
            parts.connect.record(Duration::from_millis(*ms));
        }
        parts.connect_span_s = 2.0;
        Box::new(SliceReport {
            summary: serde_json::from_value(summary).unwrap(),
            parts,
        })
    }

    fn slice(k: usize, users: usize, outcome: Outcome) -> SliceResult {
        SliceResult {
            slice: k,
            users,
            pid: 100 + k as u32,
            skew_ms: Some(k as f64),
            generator: "local".into(),
            clock_offset_ms: None,
            outcome,
            last: super::super::Counters {
                connected: users as u64,
                open: users as u64,
                ..Default::default()
            },
            last_heard_s: 5.1,
        }
    }

    fn parent() -> Parent {
        Parent {
            duration_s: 9.5,
            window: PlateauFigures {
                start_s: Some(2.1),
                peak_open: 0,
                ..Default::default()
            },
            stopped: false,
            peak_rss: 500,
            cpu_s: 0.1,
        }
    }

    #[test]
    fn counts_sum_and_percentiles_are_those_of_the_union_of_the_samples() {
        // Known latencies: 1..=100 ms, 101..=200 ms and 900..=999 ms; p99 of their union is not the mean
        // of the slices' p99s.
        let a: Vec<u64> = (1..=100).collect();
        let b: Vec<u64> = (101..=200).collect();
        let c: Vec<u64> = (900..=999).collect();
        // Each slice's connects and logins, in seconds from the common start.
        let spanned = |mut r: Box<SliceReport>, connects, logins| {
            r.parts.spans = crate::load::summary::Spans {
                connects: Some(connects),
                logins: Some(logins),
                logins_ok: 100,
            };
            r
        };
        let results = vec![
            slice(
                0,
                100,
                Outcome::Report(spanned(report(100, &a, 100), (0.5, 1.0), (0.0, 1.0))),
            ),
            slice(
                1,
                100,
                Outcome::Report(spanned(report(100, &b, 100), (0.8, 1.5), (0.5, 2.0))),
            ),
            slice(
                2,
                100,
                Outcome::Report(spanned(report(100, &c, 98), (1.0, 2.5), (1.0, 2.0))),
            ),
        ];
        let s = merge(&opts(300), results, parent());
        let mut union = Hist::default();
        for ms in a.iter().chain(&b).chain(&c) {
            union.record(Duration::from_millis(*ms));
        }
        assert_eq!(s.connect_ms, union.percentiles());
        assert_eq!(s.connect_ms.count, 300);
        let mean_of_p99s = (99.0 + 199.0 + 998.0) / 3.0;
        assert!(
            (s.connect_ms.p99 - mean_of_p99s).abs() > 100.0,
            "{:?}",
            s.connect_ms
        );
        assert_eq!(s.held_full_duration, 298);
        assert_eq!((s.succeeded, s.failed), (298, 2));
        assert_eq!(s.close_codes["4003"], 2);
        let p = s.plateau.unwrap();
        assert_eq!((p.open_at_start, p.min_open, p.peak_open), (300, 298, 298));
        assert_eq!(p.start_s, Some(2.1));
        assert!((p.length_s() - 5.0).abs() < 1e-9);
        // The run's ramp and login rate over all its slices: first to last of any, not the longest
        // slice's nor a sum of rates.
        assert_eq!(p.ramp_s, Some(2.0));
        assert_eq!(p.logins_per_s, Some(150.0));
        assert_eq!(s.client_peak_rss_bytes, 3500);
        assert_eq!(s.connect_rate_per_s, 150.0);
        let held: u64 = s.generator.slices.iter().map(|u| u.held).sum();
        assert_eq!(
            held, s.held_full_duration,
            "the merged held count is the slices' sum"
        );
        assert_eq!(
            s.generator
                .slices
                .iter()
                .map(|u| u.slice)
                .collect::<Vec<_>>(),
            vec![0, 1, 2]
        );
        assert_eq!(s.generator.slices[2].start_skew_ms, Some(2.0));
        assert!(s.generator.bound.is_none());
    }

    #[test]
    fn a_failed_slice_fails_its_users_and_the_hold() {
        let a: Vec<u64> = (1..=50).collect();
        let results = vec![
            slice(0, 50, Outcome::Report(report(50, &a, 50))),
            slice(
                1,
                50,
                Outcome::Failed("its process ended (signal: 9)".into()),
            ),
        ];
        let s = merge(&opts(100), results, parent());
        assert_eq!(s.failures["slice_failed"], 50);
        assert_eq!((s.held_full_duration, s.failed), (50, 50));
        let p = s.plateau.clone().unwrap();
        assert_eq!(p.min_open, 50);
        assert!(!p.full());
        assert!(!s.passed());
        let dead = &s.generator.slices[1];
        assert_eq!((dead.pid, dead.users, dead.failed), (101, 50, 50));
        assert!(dead.error.as_deref().unwrap().contains("signal"));
        // One account of what it did: its 50 connected (its last counters, 5.1 s in), so the run's 100;
        // the common hold of all 100 lasted until then (2.1 s to 5.1 s), not its full 5 s nor none.
        assert_eq!(s.connected, 100);
        assert_eq!(
            dead.last_seen,
            Some(LastSeen {
                at_s: 5.1,
                connected: 50,
                open: 50
            })
        );
        assert!((p.length_s() - 3.0).abs() < 1e-9, "{p:?}");
        assert!(
            p.describe()
                .contains("the common hold lasted 3.0 s of 30 s"),
            "{}",
            p.describe()
        );
        let text = s.render();
        assert!(
            text.contains("FAILED 5.1 s after the first dial (last heard: 50 connected, 50 open): its process ended (signal: 9)"),
            "{text}"
        );
        // Every slice dead: the sockets their ticks saw are not "no socket connected".
        let all_dead = merge(
            &opts(50),
            vec![slice(0, 50, Outcome::Failed("its channel ended".into()))],
            Parent {
                window: PlateauFigures {
                    start_s: Some(2.1),
                    peak_open: 50,
                    ..Default::default()
                },
                ..parent()
            },
        );
        let p = all_dead.plateau.unwrap();
        assert_eq!(all_dead.connected, 50);
        assert!(
            p.describe().contains("the ramp's span unknown") && !p.describe().contains("no socket"),
            "{}",
            p.describe()
        );
    }
}
