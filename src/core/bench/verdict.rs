//! Each level's result (its objectives, its leak check) and the bench's verdict: the capacity, the knee
//! and what gave out first.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::limiting::Limiting;
use super::slo::SloCheck;
use super::timeline::{InstanceSample, LevelSpan, Sample};

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
    /// collab only: lost + duplicated + echoed + cross-room frames.
    pub frame_errors: Option<u64>,
    /// login-burst only: the latency of a `/healthcheck` probe sent every 200 ms during the burst — does
    /// the server still answer others while it checks passwords?
    #[serde(default)]
    pub health_ms: Option<Pcts>,
    pub generator_cpu_s: f64,
    pub generator_peak_rss_bytes: u64,
}

/// After the level: did every instance go back to 0 connections and 0 rooms within the settle time?
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct LeakCheck {
    /// None: it could not be checked (an instance did not answer), with why in `detail`.
    pub ok: Option<bool>,
    /// How long the instances took to reach zero, or how long was waited.
    pub waited_ms: u64,
    /// Each instance's last counts.
    pub instances: Vec<InstanceSample>,
    pub detail: String,
}

impl LeakCheck {
    /// Judge the last counts read after waiting `waited_ms`.
    pub fn judge(instances: Vec<InstanceSample>, waited_ms: u64) -> LeakCheck {
        let unanswered: Vec<&str> = instances
            .iter()
            .filter(|i| i.connections.is_none() || i.rooms.is_none())
            .map(|i| i.service.as_str())
            .collect();
        let left: Vec<String> = instances
            .iter()
            .filter(|i| i.connections.unwrap_or(0) > 0 || i.rooms.unwrap_or(0) > 0)
            .map(|i| {
                format!(
                    "{} {} connections / {} rooms",
                    i.service,
                    i.connections.unwrap_or(0),
                    i.rooms.unwrap_or(0)
                )
            })
            .collect();
        let (ok, detail) = if !left.is_empty() {
            (
                Some(false),
                format!(
                    "still open after {:.0} s: {}",
                    waited_ms as f64 / 1000.0,
                    left.join(", ")
                ),
            )
        } else if instances.is_empty() {
            (None, "no app instance to ask".to_string())
        } else if !unanswered.is_empty() {
            (
                None,
                format!(
                    "{} did not answer /api/websocket/info",
                    unanswered.join(", ")
                ),
            )
        } else {
            (
                Some(true),
                format!(
                    "every instance at 0 connections and 0 rooms after {:.1} s",
                    waited_ms as f64 / 1000.0
                ),
            )
        };
        LeakCheck {
            ok,
            waited_ms,
            instances,
            detail,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LevelResult {
    pub users: u64,
    pub span: LevelSpan,
    pub figures: LevelFigures,
    pub slos: Vec<SloCheck>,
    pub leak: LeakCheck,
    pub passed: bool,
    /// Why it failed (each failed objective, the leak check), empty when it passed.
    pub reasons: Vec<String>,
    /// For a failed level: the resource nearest its limit during it.
    pub limiting: Option<Limiting>,
    /// The bench was stopped (SIGINT/SIGTERM) while this level ran: its figures are partial, it did not pass.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub interrupted: bool,
}

impl LevelResult {
    /// A level passes when every measured objective holds and its leak check passed (a leak check that
    /// could not run is no pass).
    pub fn judge(
        span: LevelSpan,
        figures: LevelFigures,
        slos: Vec<SloCheck>,
        leak: LeakCheck,
        samples: &[Sample],
        limiting: impl FnOnce() -> Limiting,
    ) -> LevelResult {
        let mut reasons: Vec<String> = slos
            .iter()
            .filter(|c| c.failed())
            .map(SloCheck::describe)
            .collect();
        reasons.extend(super::incidents::reasons(&span, samples));
        match leak.ok {
            Some(true) => {}
            Some(false) => reasons.push(format!("leak check failed: {}", leak.detail)),
            None => reasons.push(format!("leak check could not run: {}", leak.detail)),
        }
        let passed = reasons.is_empty();
        LevelResult {
            users: span.users,
            span,
            figures,
            slos,
            leak,
            passed,
            reasons,
            limiting: (!passed).then(limiting),
            interrupted: false,
        }
    }
}

/// The bench's answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    /// The highest level such that it and every level below it passed (None: the first level failed).
    pub capacity: Option<u64>,
    /// The first level that failed, with its reasons and limiting component.
    pub knee: Option<u64>,
    pub reasons: Vec<String>,
    pub limiting: Option<Limiting>,
    /// One line for the top of the report and the terminal.
    pub headline: String,
}

impl Verdict {
    pub fn of(levels: &[LevelResult], asked: &[u64]) -> Verdict {
        let first_fail = levels.iter().position(|l| !l.passed);
        let passed_before = &levels[..first_fail.unwrap_or(levels.len())];
        let capacity = passed_before.last().map(|l| l.users);
        let knee = first_fail.map(|i| &levels[i]);
        let not_run: Vec<String> = asked
            .iter()
            .filter(|u| !levels.iter().any(|l| l.users == **u))
            .map(u64::to_string)
            .collect();
        let headline = match (capacity, knee) {
            (_, Some(k)) => {
                let held = match capacity {
                    Some(c) => format!("capacity {c} users"),
                    None => "no level passed".to_string(),
                };
                let by = match &k.limiting {
                    Some(l) if l.generator_bound => format!("; generator-bound: {}", l.detail),
                    Some(l) => format!("; limiting component: {}", l.component),
                    None => String::new(),
                };
                format!(
                    "{held}; {} users failed ({}){by}",
                    k.users,
                    k.reasons.join("; ")
                )
            }
            (Some(c), None) if not_run.is_empty() => {
                format!("capacity at least {c} users: every level passed (the knee lies beyond)")
            }
            (c, None) => format!(
                "capacity {} users so far; levels not run: {}",
                c.map_or("unknown".into(), |c| c.to_string()),
                not_run.join(", ")
            ),
        };
        Verdict {
            capacity,
            knee: knee.map(|k| k.users),
            reasons: knee.map(|k| k.reasons.clone()).unwrap_or_default(),
            limiting: knee.and_then(|k| k.limiting.clone()),
            headline,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::slo::Slos;
    use super::*;

    fn inst(service: &str, connections: Option<u64>, rooms: Option<u64>) -> InstanceSample {
        InstanceSample {
            service: service.into(),
            connections,
            rooms,
        }
    }

    fn level(users: u64, held: u64, leaked: u64) -> LevelResult {
        let figures = LevelFigures {
            users,
            held,
            ..LevelFigures::default()
        };
        let slos = Slos::default().check(&figures);
        let leak = LeakCheck::judge(
            vec![inst("app-1", Some(leaked), Some(leaked.min(1)))],
            2_000,
        );
        let span = LevelSpan {
            users,
            ..LevelSpan::default()
        };
        LevelResult::judge(span, figures, slos, leak, &[], Limiting::unknown)
    }

    #[test]
    fn the_leak_check_needs_every_instance_at_zero_and_an_answer_from_each() {
        let ok = LeakCheck::judge(
            vec![
                inst("app-1", Some(0), Some(0)),
                inst("app-2", Some(0), Some(0)),
            ],
            1_500,
        );
        assert_eq!(ok.ok, Some(true), "{}", ok.detail);
        let leak = LeakCheck::judge(
            vec![
                inst("app-1", Some(0), Some(0)),
                inst("app-2", Some(7), Some(2)),
            ],
            45_000,
        );
        assert_eq!(leak.ok, Some(false));
        assert_eq!(
            leak.detail,
            "still open after 45 s: app-2 7 connections / 2 rooms"
        );
        let silent = LeakCheck::judge(
            vec![inst("app-1", Some(0), Some(0)), inst("app-2", None, None)],
            45_000,
        );
        assert_eq!(
            silent.ok, None,
            "an instance that did not answer is not at zero"
        );
        assert!(LeakCheck::judge(vec![], 0).ok.is_none());
    }

    #[test]
    fn a_level_fails_on_an_objective_or_its_leak_check_alone() {
        assert!(level(100, 100, 0).passed);
        let leaky = level(100, 100, 3);
        assert!(!leaky.passed && leaky.limiting.is_some());
        assert_eq!(leaky.reasons.len(), 1);
        assert!(
            leaky.reasons[0].starts_with("leak check failed"),
            "{:?}",
            leaky.reasons
        );
        assert!(!level(100, 90, 0).passed);
    }

    #[test]
    fn capacity_is_the_last_level_before_the_first_failure() {
        let all = [level(200, 200, 0), level(500, 500, 0), level(1000, 1000, 0)];
        let v = Verdict::of(&all, &[200, 500, 1000]);
        assert_eq!((v.capacity, v.knee), (Some(1000), None));
        assert!(v.headline.contains("every level passed"), "{}", v.headline);

        let knee = [level(200, 200, 0), level(500, 400, 0)];
        let v = Verdict::of(&knee, &[200, 500, 1000]);
        assert_eq!((v.capacity, v.knee), (Some(200), Some(500)));
        assert!(
            v.headline
                .starts_with("capacity 200 users; 500 users failed (held 80 %"),
            "{}",
            v.headline
        );

        // --continue-after-fail: a later pass does not raise the capacity past a failed level.
        let bumpy = [level(200, 100, 0), level(500, 500, 0)];
        let v = Verdict::of(&bumpy, &[200, 500]);
        assert_eq!((v.capacity, v.knee), (None, Some(200)));
        assert!(v.headline.starts_with("no level passed"), "{}", v.headline);

        let short = [level(200, 200, 0)];
        let v = Verdict::of(&short, &[200, 500]);
        assert!(v.headline.contains("levels not run: 500"), "{}", v.headline);
    }
}
