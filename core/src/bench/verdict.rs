//! Each level's result (its objectives, its leak check) and the bench's verdict: the capacity, the knee
//! and what gave out first.

use serde::{Deserialize, Serialize};

use super::figures::LevelFigures;
use super::limiting::Limiting;
use super::slo::SloCheck;
use super::timeline::{InstanceSample, LevelSpan};

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
    /// Not checked, and why (the bench was stopped).
    pub fn not_run(why: &str) -> LeakCheck {
        LeakCheck {
            ok: None,
            waited_ms: 0,
            instances: vec![],
            detail: format!("not run: {why}"),
        }
    }

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

/// What else than the objectives and the leak check decides a level.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Besides {
    /// An instance that exited, restarted or was paused during the level (`incidents::reasons`).
    pub incidents: Vec<String>,
    /// Reasons the level cannot count, whatever its figures: another client's connections.
    pub invalid: Vec<String>,
    /// The bench was stopped while the level ran (SIGINT/SIGTERM, a lost SUT link): why.
    pub interrupted: Option<String>,
}

impl LevelResult {
    /// A level passes when every measured objective holds, its leak check passed (a leak check that
    /// could not run is no pass), nothing made it invalid and it ran to its end. The limiting component
    /// is looked for only when the level failed on capacity (an objective: held, refused, latencies,
    /// the plateau); a level that failed only its leak check names the leak.
    pub fn judge(
        span: LevelSpan,
        figures: LevelFigures,
        slos: Vec<SloCheck>,
        leak: LeakCheck,
        besides: Besides,
        limiting: impl FnOnce() -> Limiting,
    ) -> LevelResult {
        let plateau = figures.plateau.as_ref();
        let mut reasons: Vec<String> = slos
            .iter()
            .filter(|c| c.failed())
            .map(|c| {
                let said = match c.key.as_str() {
                    "held" => c.describe().replacen("held", figures.served_word(), 1),
                    _ => c.describe(),
                };
                match plateau {
                    // "held 17.2 % (≥ 99.9 %): peak 1,722 of 10,000 at once; the ramp took 6 min …"
                    Some(p) if c.key == "held" || c.key == "plateau" => {
                        format!("{said}: {}", p.describe())
                    }
                    _ if c.key == "frame_errors" && !figures.frame_error_kinds.is_empty() => {
                        let kinds: Vec<String> = figures
                            .frame_error_kinds
                            .iter()
                            .map(|(k, n)| format!("{k} {n}"))
                            .collect();
                        format!("{said}: {}", kinds.join(", "))
                    }
                    _ if c.key == "browser" => {
                        match figures.browser.as_ref().and_then(|b| b.failed.as_ref()) {
                            Some(why) => format!("{said}: {why}"),
                            None => said,
                        }
                    }
                    _ => said,
                }
            })
            .collect();
        // An instance that exited, restarted or was paused failed the level like an objective: the
        // limiting component is looked for (and names it).
        reasons.extend(besides.incidents.iter().cloned());
        let capacity = !reasons.is_empty();
        reasons.extend(besides.invalid.iter().cloned());
        if let Some(why) = &besides.interrupted {
            reasons.push(format!("interrupted: {why}"));
        }
        match leak.ok {
            Some(true) => {}
            Some(false) => reasons.push(format!("leak check failed: {}", leak.detail)),
            None => reasons.push(format!("leak check could not run: {}", leak.detail)),
        }
        let passed = reasons.is_empty();
        let limiting = if passed || besides.interrupted.is_some() {
            None
        } else if capacity {
            Some(limiting())
        } else if leak.ok == Some(false) && besides.invalid.is_empty() {
            Some(Limiting::leak(&leak.detail))
        } else {
            None
        };
        LevelResult {
            users: span.users,
            span,
            figures,
            slos,
            leak,
            passed,
            reasons,
            limiting,
            interrupted: besides.interrupted.is_some(),
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
    /// The level the bench was stopped in (SIGINT/SIGTERM, a lost SUT link): neither a pass nor a knee.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interrupted: Option<u64>,
    pub reasons: Vec<String>,
    pub limiting: Option<Limiting>,
    /// One line for the top of the report and the terminal.
    pub headline: String,
}

impl Verdict {
    pub fn of(levels: &[LevelResult], asked: &[u64]) -> Verdict {
        // A level cut short by a stop says nothing of the SUT: the verdict is of the levels before it.
        let interrupted = levels.last().filter(|l| l.interrupted);
        let judged = &levels[..levels.len() - interrupted.is_some() as usize];
        let first_fail = judged.iter().position(|l| !l.passed);
        let passed_before = &judged[..first_fail.unwrap_or(judged.len())];
        let capacity = passed_before.last().map(|l| l.users);
        let knee = first_fail.map(|i| &judged[i]);
        let not_run: Vec<String> = asked
            .iter()
            .filter(|u| !levels.iter().any(|l| l.users == **u))
            .map(u64::to_string)
            .collect();
        let not_run_text = || match not_run.is_empty() {
            true => String::new(),
            false => format!("; levels not run: {}", not_run.join(", ")),
        };
        let held = || match capacity {
            Some(c) => format!("capacity {c} users"),
            None => "no level passed".to_string(),
        };
        let headline = match (capacity, knee, interrupted) {
            (_, Some(k), _) => {
                let by = match &k.limiting {
                    Some(l) if l.generator_bound => format!("; generator-bound: {}", l.detail),
                    Some(l) => format!("; limiting component: {}", l.component),
                    None => String::new(),
                };
                format!(
                    "{}; {} users failed ({}){by}{}",
                    held(),
                    k.users,
                    k.reasons.join("; "),
                    not_run_text()
                )
            }
            (c, None, Some(i)) => format!(
                "interrupted during the {} users level ({}); capacity {} so far{}",
                i.users,
                i.reasons
                    .iter()
                    .find_map(|r| r.strip_prefix("interrupted: "))
                    .unwrap_or("stopped"),
                c.map_or("unknown".into(), |c| format!("at least {c} users")),
                not_run_text()
            ),
            (Some(c), None, None) if not_run.is_empty() => {
                format!("capacity at least {c} users: every level passed (the knee lies beyond)")
            }
            (c, None, None) => format!(
                "capacity {} users so far{}",
                c.map_or("unknown".into(), |c| c.to_string()),
                not_run_text()
            ),
        };
        Verdict {
            capacity,
            knee: knee.map(|k| k.users),
            interrupted: interrupted.map(|l| l.users),
            reasons: knee.map(|k| k.reasons.clone()).unwrap_or_default(),
            limiting: knee.and_then(|k| k.limiting.clone()),
            headline,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::limiting::Resource;
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
        LevelResult::judge(
            span,
            figures,
            slos,
            leak,
            Besides::default(),
            Limiting::unknown,
        )
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
        // A knee says which levels it skipped too.
        let v = Verdict::of(&knee, &[200, 500, 1000]);
        assert!(
            v.headline.ends_with("levels not run: 1000"),
            "{}",
            v.headline
        );
    }

    fn judged(figures: LevelFigures, leaked: u64, besides: Besides) -> LevelResult {
        let slos = Slos::default().check(&figures);
        let leak = LeakCheck::judge(
            vec![inst("app-1", Some(leaked), Some(leaked.min(1)))],
            2_000,
        );
        let span = LevelSpan {
            users: figures.users,
            ..LevelSpan::default()
        };
        LevelResult::judge(span, figures, slos, leak, besides, Limiting::unknown)
    }

    #[test]
    fn only_a_capacity_failure_looks_for_a_limiting_resource() {
        let ok = LevelFigures {
            users: 100,
            held: 100,
            ..LevelFigures::default()
        };
        let leaky = judged(ok.clone(), 3, Besides::default());
        let l = leaky.limiting.expect("a leak is named");
        assert_eq!((l.resource, l.component.as_str()), (Resource::Leak, "leak"));
        let short = judged(
            LevelFigures {
                held: 80,
                ..ok.clone()
            },
            0,
            Besides::default(),
        );
        assert_eq!(
            short.limiting.map(|l| l.resource),
            Some(Resource::Unknown),
            "a capacity failure looks (here nothing was sampled)"
        );
        let invalid = judged(
            ok.clone(),
            0,
            Besides {
                invalid: vec!["invalid: another client".into()],
                ..Besides::default()
            },
        );
        assert!(!invalid.passed && invalid.limiting.is_none(), "{invalid:?}");
        let stopped = judged(
            ok,
            0,
            Besides {
                interrupted: Some("SIGINT received".into()),
                ..Besides::default()
            },
        );
        assert!(stopped.interrupted && !stopped.passed && stopped.limiting.is_none());
    }

    #[test]
    fn an_interrupted_level_is_no_knee_and_the_verdict_says_so() {
        let ok = level(200, 200, 0);
        let mut cut = level(500, 120, 0);
        cut.interrupted = true;
        cut.reasons.push("interrupted: SIGINT received".into());
        let v = Verdict::of(&[ok, cut], &[200, 500, 1000]);
        assert_eq!(
            (v.capacity, v.knee, v.interrupted),
            (Some(200), None, Some(500))
        );
        assert_eq!(
            v.headline,
            "interrupted during the 500 users level (SIGINT received); capacity at least 200 users so far; levels not run: 1000"
        );
    }

    #[test]
    fn frame_errors_are_named_by_kind_and_login_burst_logs_in() {
        let collab = LevelFigures {
            users: 12,
            held: 12,
            frame_errors: Some(14),
            frame_error_kinds: [("echoed".to_string(), 12), ("lost".to_string(), 2)].into(),
            ..LevelFigures::default()
        };
        let r = judged(collab, 0, Besides::default());
        assert_eq!(r.reasons, ["frame_errors 14 (≤ 0): echoed 12, lost 2"]);
        let burst = LevelFigures {
            users: 40,
            held: 30,
            scenario: "login-burst".into(),
            ..LevelFigures::default()
        };
        let r = judged(burst, 0, Besides::default());
        assert_eq!(r.reasons, ["logged in 75 % (≥ 99.9%)"]);
    }
}
