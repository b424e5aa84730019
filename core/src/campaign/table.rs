//! The summary table: one line per level of each row's benches, in the seed study's columns —
//! scenario, users, instances, duration, WebSocket success, HTTP errors, the SUT's CPU, Redis's CPU,
//! result — each figure read from the bench's results.json and timeline, never typed in.

use serde::{Deserialize, Serialize};

use crate::bench::results::Results;
use crate::bench::timeline::{LevelSpan, Sample};
use crate::status::is_app;

/// One line of the summary table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Line {
    /// The campaign row's name.
    pub row: String,
    /// The sweep point it came from, when the row varies something ("instances=2 · run 1").
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub point: String,
    pub scenario: String,
    pub users: u64,
    /// App instances (the record's knob).
    pub instances: u32,
    /// From the level's first dial to the end of its leak check, seconds.
    pub duration_s: f64,
    /// Users served (held the hold, or logged in for login-burst), percent of the level's users.
    pub success_pct: f64,
    /// Users that failed at an HTTP step (login, the upgrade's handshake), percent of its users.
    pub http_errors_pct: f64,
    /// The busiest app instance's CPU over the common hold (mean, share of what it can use), and
    /// Redis's (ha); None when not sampled.
    pub sut_cpu_pct: Option<f64>,
    pub redis_cpu_pct: Option<f64>,
    /// "pass", "fail", "held; leaked", …
    pub result: String,
    /// Why it did not pass.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reasons: Vec<String>,
    /// The bench's folder, relative to the campaign's (its report.html, results.json, timeline.jsonl).
    pub bench: String,
}

/// A failure kind met at an HTTP step (the login, the upgrade's handshake): the study's "HTTP errors".
pub fn http_failure(kind: &str) -> bool {
    kind.starts_with("login_") || kind.starts_with("handshake_")
}

/// The mean CPU share over the level's full hold (its load when it had none) of the busiest container
/// whose service `pick` accepts, percent: only the samples whose figure covers the hold alone
/// (`LevelSpan::cpu_holding`), not the ramp's last second.
fn mean_cpu(
    r: &Results,
    samples: &[Sample],
    span: &LevelSpan,
    pick: fn(&str) -> bool,
) -> Option<f64> {
    let mut per: std::collections::BTreeMap<&str, (f64, u32)> = Default::default();
    for s in span.cpu_holding(samples) {
        for c in s.containers.iter().filter(|c| pick(&c.service)) {
            if let Some(share) = r.cpu_scale.share(c) {
                let e = per.entry(c.service.as_str()).or_default();
                e.0 += share;
                e.1 += 1;
            }
        }
    }
    per.values()
        .map(|(sum, n)| sum / f64::from(*n) * 100.0)
        .fold(None, |m: Option<f64>, x| Some(m.map_or(x, |m| m.max(x))))
}

/// The lines of one bench (`bench`: its folder relative to the campaign's).
pub fn lines(row: &str, point: &str, bench: &str, r: &Results, samples: &[Sample]) -> Vec<Line> {
    let instances = r
        .knobs
        .get("instances")
        .and_then(|n| n.parse().ok())
        .unwrap_or(1);
    r.levels
        .iter()
        .map(|l| {
            let f = &l.figures;
            let users = f.users.max(1) as f64;
            let http: u64 = f
                .failures
                .iter()
                .filter(|(k, _)| http_failure(k))
                .map(|(_, n)| n)
                .sum();
            Line {
                row: row.to_string(),
                point: point.to_string(),
                scenario: r.scenario.clone(),
                users: l.users,
                instances,
                duration_s: l
                    .span
                    .settled_ms
                    .max(l.span.end_ms)
                    .saturating_sub(l.span.start_ms) as f64
                    / 1000.0,
                success_pct: f.held as f64 / users * 100.0,
                http_errors_pct: http as f64 / users * 100.0,
                sut_cpu_pct: mean_cpu(r, samples, &l.span, is_app),
                redis_cpu_pct: mean_cpu(r, samples, &l.span, |s| s == "redis"),
                result: l.outcome().word().to_string(),
                reasons: if l.passed { vec![] } else { l.reasons.clone() },
                bench: bench.to_string(),
            }
        })
        .collect()
}

/// A percent for the table: "100 %", "99.92 %", "0.078 %" (as many digits as it takes to not round a
/// failure away), "—" when not measured.
pub fn pct(p: Option<f64>) -> String {
    match p {
        None => "—".into(),
        Some(x) if x == 0.0 || x == 100.0 => format!("{x:.0} %"),
        Some(x) if x >= 99.0 => format!("{:.2} %", (x * 100.0).floor() / 100.0),
        Some(x) if x < 1.0 => format!("{x:.2} %"),
        Some(x) => format!("{x:.1} %"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::report::tests::example;

    #[test]
    fn a_bench_gives_a_line_per_level_from_its_own_figures() {
        let (r, samples) = example();
        let lines = lines("idle", "", "rows/1/points/b1", &r, &samples);
        assert_eq!(lines.len(), r.levels.len());
        for (line, l) in lines.iter().zip(&r.levels) {
            assert_eq!(line.users, l.users);
            assert_eq!(line.result, l.outcome().word());
            let held = l.figures.held as f64 / l.figures.users as f64 * 100.0;
            assert!((line.success_pct - held).abs() < 1e-9);
            assert_eq!(line.bench, "rows/1/points/b1");
        }
        assert!(lines.iter().any(|l| l.sut_cpu_pct.is_some()), "{lines:?}");
    }

    /// Each sample's CPU is what was used since the one before: the first sample of the hold covers
    /// the ramp's last second (logins at the instance's quota), and is not the hold's.
    #[test]
    fn the_sut_cpu_is_the_holds_own_not_the_ramps_last_second() {
        let (r, mut samples) = example();
        let span = r.levels[0].span;
        assert_eq!((span.hold_ms, span.hold_end_ms), (4_000, 9_000));
        for s in samples.iter_mut().filter(|s| s.t_ms <= span.hold_ms) {
            for c in s.containers.iter_mut().filter(|c| is_app(&c.service)) {
                // 0.5 CPU of a 0.5-CPU quota: all it can use.
                c.cpu_pct = Some(50.0);
            }
        }
        let first = lines("idle", "", "b", &r, &samples);
        // 5000..9000 ms each cover a second of the hold at 10 % of one CPU: 20 % of the quota. The
        // sample stamped at 4000 (the ramp's last second, at 100 %) made it 33 %.
        let cpu = first[0].sut_cpu_pct.unwrap();
        assert!((cpu - 20.0).abs() < 1e-9, "{cpu}");
        // A sample whose reads ended past the hold's end covers the users leaving: not the hold's.
        let last = samples.iter_mut().find(|s| s.t_ms == 9_000).unwrap();
        last.sample_ms = Some(40.0);
        for c in last.containers.iter_mut() {
            c.cpu_pct = Some(50.0);
        }
        let cpu = lines("idle", "", "b", &r, &samples)[0].sut_cpu_pct.unwrap();
        assert!((cpu - 20.0).abs() < 1e-9, "{cpu}");
    }

    #[test]
    fn a_percent_keeps_a_failure_visible() {
        assert_eq!(pct(Some(100.0)), "100 %");
        assert_eq!(pct(Some(99.9234)), "99.92 %");
        assert_eq!(pct(Some(99.999)), "99.99 %", "never rounded up to 100");
        assert_eq!(pct(Some(0.078)), "0.08 %");
        assert_eq!(pct(Some(41.6)), "41.6 %");
        assert_eq!(pct(None), "—");
        assert!(http_failure("login_timeout") && http_failure("handshake_502"));
        assert!(!http_failure("closed_4003"));
    }
}
