//! A level's figures from the load engine's summary: what the objectives are checked against.

use crate::load::metrics::Percentiles;
use crate::load::Summary;
use exectl_core::bench::{LevelFigures, Pcts};

fn pcts(p: &Percentiles) -> Option<Pcts> {
    (p.count > 0).then(|| Pcts::new(p.p50, p.p95, p.p99))
}

pub fn of(s: &Summary) -> LevelFigures {
    let code = |c: &str| s.close_codes.get(c).copied().unwrap_or(0);
    let sockets = crate::load::Scenario::parse(&s.scenario).is_some_and(|x| x.uses_socket());
    LevelFigures {
        users: s.users as u64,
        // login-burst holds no socket: a served user is a successful login.
        held: if sockets {
            s.held_full_duration
        } else {
            s.succeeded
        },
        refused: code("4001") + code("4003"),
        stalled: s.stalled,
        failures: s.failures.clone(),
        login_ms: pcts(&s.login_ms),
        connect_ms: if sockets { pcts(&s.connect_ms) } else { None },
        delivery_ms: s.fanout.as_ref().and_then(|f| pcts(&f.delivery_ms)),
        frame_errors: s.fanout.as_ref().map(|f| {
            let d = &f.deliveries;
            d.lost.unwrap_or(0) + d.duplicated + d.echoed + d.cross_room
        }),
        frame_error_kinds: s
            .fanout
            .as_ref()
            .map(|f| {
                let d = &f.deliveries;
                [
                    ("lost", d.lost.unwrap_or(0)),
                    ("duplicated", d.duplicated),
                    ("echoed", d.echoed),
                    ("cross-room", d.cross_room),
                ]
                .into_iter()
                .filter(|(_, n)| *n > 0)
                .map(|(k, n)| (k.to_string(), n))
                .collect()
            })
            .unwrap_or_default(),
        scenario: s.scenario.clone(),
        health_ms: s.login_burst.as_ref().and_then(|b| pcts(&b.probe_ms)),
        generator_cpu_s: s.client_cpu_seconds,
        generator_peak_rss_bytes: s.client_peak_rss_bytes,
        plateau: s.plateau.clone(),
        // From the SUT's samples (`timeline::at_once`), filled in by the bench.
        instances_peak: None,
        instances_min_in_hold: None,
        // The browser's session (`--browser-probe`) and the planned fault (`--fault`), filled in by the
        // bench.
        browser: None,
        fault: None,
        growth: None,
        pings: sockets.then_some(s.pings),
        arrivals: s.arrivals.as_ref().map(|a| a.describe()),
        relayed_per_s: s.fanout.as_ref().map(|f| {
            let over = s
                .plateau
                .as_ref()
                .map(|p| p.length_s())
                .filter(|l| *l > 0.0)
                .unwrap_or(s.duration_s);
            f.deliveries.delivered as f64 / over.max(1e-3)
        }),
    }
}
