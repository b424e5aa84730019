//! The summary table: one line per level of each row's benches, in the seed study's columns —
//! scenario, users, instances, duration, WebSocket success, HTTP errors, the SUT's CPU, Redis's CPU,
//! result — each figure read from the bench's results.json and timeline, never typed in.

use serde::{Deserialize, Serialize};

use crate::bench::results::Results;
use crate::bench::timeline::Sample;
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

/// The mean CPU share over the samples of `[from, to]` of the busiest container whose service
/// `pick` accepts, percent.
fn mean_cpu(
    r: &Results,
    samples: &[Sample],
    from: u64,
    to: u64,
    pick: fn(&str) -> bool,
) -> Option<f64> {
    let mut per: std::collections::BTreeMap<&str, (f64, u32)> = Default::default();
    for s in samples.iter().filter(|s| s.t_ms >= from && s.t_ms <= to) {
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
            // The common hold when there was one, else the level's load.
            let (from, to) = match (l.span.hold_ms, l.span.hold_end_ms) {
                (a, b) if b > a => (a, b),
                _ => (l.span.start_ms, l.span.end_ms),
            };
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
                sut_cpu_pct: mean_cpu(r, samples, from, to, is_app),
                redis_cpu_pct: mean_cpu(r, samples, from, to, |s| s == "redis"),
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
