//! A sweep's results.json: what was varied, every point as it ran (its deploy, what the deploy
//! recreated, its benches, each level's figures side by side), and why it stopped early if it did.
//! Written once point 1 is deployed, after every point and at the end, so an interrupted sweep keeps
//! what ran and `--resume` knows where to go on. Each write seals the file (`fingerprints`): a resume
//! refuses one changed since, naming what changed (`crate::seal`).

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::search::{self, Bounds, Probe};
use crate::bench::browser::BrowserProbe;
use crate::bench::compare::Capacity;
use crate::bench::cpu::CpuScale;
use crate::bench::results::RunState;
use crate::bench::verdict::Outcome;
use crate::bench::{LevelResult, Limiting, Results, Sample};
use crate::seal::Sealed;

/// results.json's layout version: a reader refuses a file it does not know. 2: the command line's
/// secrets redacted, the starting folder, the fingerprints. 3: the sweep's typed plan instead of its
/// command line.
pub const SCHEMA: u32 = 3;
pub const RESULTS: &str = "results.json";
pub const REPORT: &str = "report.html";
/// The points' benches live in `points/<bench run id>/`.
pub const POINTS: &str = "points";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepResults {
    pub schema: u32,
    pub run_id: String,
    pub state: RunState,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    /// When `pid` began running the sweep (a resume's own start, later than `started_unix_s`): a
    /// process under that pid that started after it is another one (the pid reused).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid_since_unix_s: Option<u64>,
    pub exectl_version: String,
    pub stack: String,
    pub target: String,
    /// The variables, as named (`nginx`, `image.app`): one, or two with `--matrix`.
    pub variables: Vec<String>,
    /// Each variable's values, in order.
    pub values: Vec<Vec<String>>,
    pub repeat: u32,
    pub scenario: String,
    /// Fixed levels of every point's bench (empty with `--find-capacity`).
    pub levels: Vec<u64>,
    /// `--find-capacity`'s bounds (users at once), or `--find-room`'s (users per project).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub search: Option<Bounds>,
    /// `--find-room`: the users at once of every probe; the search (`search`) is then over the room
    /// size, and a point's capacity (and each probe's `users`) is users per project.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub room_users: Option<u64>,
    pub browser_probe: bool,
    pub started_unix_s: u64,
    pub duration_s: f64,
    pub points: Vec<PointResult>,
    /// Why the sweep ended before its last point (another variable moved, a failure, a signal).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<String>,
    /// What the sweep runs besides its variables, values, repeats and levels (above): its target, its
    /// spec's source and settings, its seeding and its bench's settings, typed by the shell
    /// (`ops::sweep_plan::SweepPlan`), every secret as its fingerprint (`<secret sha256:…>`).
    /// `--resume` runs the sweep again from here.
    pub plan: serde_json::Value,
    /// The folder the sweep was started in (absolute): `--resume` reads exectl.yaml and the relative
    /// paths of `plan` from there.
    pub started_in: PathBuf,
    /// Each other field's fingerprint, and each point's (`points.N`), as last written (`crate::seal`).
    #[serde(default)]
    pub fingerprints: BTreeMap<String, String>,
}

/// One point: one value of each variable, one of its `--repeat` runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PointResult {
    /// 1-based, in the sweep's order.
    pub index: usize,
    /// One per variable.
    pub values: Vec<String>,
    /// 1..=repeat.
    pub run: u32,
    /// The run record of its deploy.
    pub deploy_run_id: String,
    /// The services its deploy created or recreated (empty: it changed nothing).
    pub recreated: Vec<String>,
    /// Service → container id once deployed: a service whose id did not change was not recreated.
    pub containers: BTreeMap<String, String>,
    /// Service → image digest (or id) of what ran, from the deploy's record.
    pub images: BTreeMap<String, String>,
    /// Its benches' run ids (folders under `points/`): one, or one per probe of the search.
    pub benches: Vec<String>,
    /// The highest level that held its users with every level below it (None: the first failed, or
    /// `unknown` says why there is none).
    pub capacity: Option<u64>,
    /// No level failed: the capacity is at least the top level (or --to).
    pub at_least: bool,
    /// No capacity, and not because the first level failed: `unknown` (its levels, or probes, could
    /// not count: another client, the client's browser) or `not established` (a level below one that
    /// held its users failed). Such a point is left out of its value's capacity and the differences.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unknown: Option<String>,
    /// The levels (or probes) that held their users and leaked: the app's defect, said beside the
    /// capacity, which they count for.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub leaks: Vec<Leak>,
    /// `--find-capacity`'s probes, in the order run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub probes: Vec<Probe>,
    pub levels: Vec<LevelSummary>,
    /// The limiting component of its first failed level.
    pub limiting: Option<Limiting>,
}

/// A level that held its users and failed its leak check: what the app still counted above the level's
/// baseline when the check ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Leak {
    pub users: u64,
    pub connections: u64,
    pub rooms: u64,
}

impl Leak {
    /// Each level of `levels` that held its users and leaked.
    pub fn of(levels: &[LevelResult]) -> Vec<Leak> {
        levels
            .iter()
            .filter(|l| l.outcome() == Outcome::Leaked)
            .map(|l| {
                let (connections, rooms) = l.leak.left(&l.ghosts);
                Leak {
                    users: l.users,
                    connections,
                    rooms,
                }
            })
            .collect()
    }
}

impl PointResult {
    /// The capacity of a point benched at fixed levels, as its bench's verdict means it (`Capacity`):
    /// the capacity, or why there is none; the limiting component of its knee; the app's leaks.
    pub fn judged(&mut self, r: &Results) {
        let c = Capacity::of(&r.verdict);
        self.capacity = c.users;
        self.at_least = c.at_least;
        self.unknown = c.unknown.map(String::from);
        self.limiting = r.verdict.limiting.clone();
        self.leaks = Leak::of(&r.levels);
    }

    /// A probe of the capacity search, from its one-level bench `r` at `users`: held its users (a level
    /// that held them and leaked counts, as in a bench's verdict), failed, or invalid (neither); its
    /// bench and its level recorded, and its leak.
    pub fn probed(&mut self, users: u64, r: &Results, level: Option<LevelSummary>) {
        let outcome = r.levels.first().map(LevelResult::outcome);
        self.probes.push(Probe {
            users,
            passed: outcome.is_some_and(Outcome::held),
            invalid: outcome == Some(Outcome::Invalid),
            run_id: r.run_id.clone(),
            reasons: level
                .as_ref()
                .map(|l| l.reasons.clone())
                .unwrap_or_default(),
        });
        self.benches.push(r.run_id.clone());
        self.levels.extend(level);
        self.leaks.extend(Leak::of(&r.levels));
    }

    /// What the search's probes found: the capacity, or `unknown` when it gave up on invalid probes;
    /// `limiting` is the limiting component of each failed probe's bench, by its users.
    pub fn searched(&mut self, b: &Bounds, limiting: &BTreeMap<u64, Limiting>) {
        let found = search::found(b, &self.probes);
        self.capacity = found.users;
        self.at_least = found.at_least;
        self.unknown = found.unknown.then(|| "unknown".to_string());
        // The limiting component of the lowest fail: what bounds the capacity found.
        self.limiting = found.failed_at.and_then(|u| limiting.get(&u).cloned());
        self.levels.sort_by_key(|l| (l.users, l.room));
    }

    /// Its capacity as the progress and the report say it: `1,200`, `at least 1,500`, `unknown
    /// (invalid levels)`, `not established (…)`, or `below its first level` (`probe` with a search).
    pub fn capacity_text(&self) -> String {
        match (self.capacity, self.at_least, &self.unknown) {
            (Some(c), true, _) => format!("at least {}", crate::plateau::group(c)),
            (Some(c), false, _) => crate::plateau::group(c),
            (None, _, Some(u)) => super::summary::unknown_text(u),
            (None, _, None) if self.probes.is_empty() => "below its first level".into(),
            (None, _, None) => "below its first probe".into(),
        }
    }
}

/// One level of a point, the figures a comparison puts side by side.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LevelSummary {
    pub users: u64,
    /// A room-size probe's room (users per project): its level is compared with the same room's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub room: Option<u64>,
    pub passed: bool,
    /// It could not count (its figures are no measurement: no spread takes them).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub invalid: bool,
    /// Its bench's run id.
    pub bench: String,
    /// Users served, percent of the level.
    pub held_pct: f64,
    pub login_p95_ms: Option<f64>,
    pub connect_p95_ms: Option<f64>,
    pub health_p95_ms: Option<f64>,
    /// collab/editing: how long a frame took to reach each room-mate (p50, p95, p99).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivery_ms: Option<crate::bench::Pcts>,
    /// collab/editing: frames relayed to room-mates a second, per app instance.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub relayed_per_s_per_instance: Option<f64>,
    /// The busiest container during the level, on the bench's CPU scale: service, share (1.0 = all it
    /// may use), and as the report says it.
    pub busiest: Option<Busiest>,
    /// App instance → its share of the instances' connections during the common hold (0..1).
    pub shares: BTreeMap<String, f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub browser: Option<BrowserProbe>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reasons: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Busiest {
    pub service: String,
    pub share: f64,
    pub text: String,
}

impl LevelSummary {
    /// A bench level as the sweep compares it, from its result and the bench's timeline.
    pub fn of(bench: &str, l: &LevelResult, samples: &[Sample], cpu: &CpuScale) -> LevelSummary {
        let f = &l.figures;
        let busiest = l
            .span
            .during(samples)
            .flat_map(|s| &s.containers)
            .filter_map(|c| Some((cpu.share(c)?, c)))
            .max_by(|a, b| a.0.total_cmp(&b.0))
            .map(|(share, c)| Busiest {
                service: c.service.clone(),
                share,
                text: format!("{} {}", c.service, cpu.show(c).unwrap_or_default()),
            });
        LevelSummary {
            users: l.users,
            room: None,
            passed: l.passed,
            invalid: l.outcome() == Outcome::Invalid,
            bench: bench.into(),
            held_pct: if f.users == 0 {
                0.0
            } else {
                100.0 * f.held as f64 / f.users as f64
            },
            login_p95_ms: f.login_ms.map(|p| p.p95),
            connect_p95_ms: f.connect_ms.map(|p| p.p95),
            health_p95_ms: f.health_ms.map(|p| p.p95),
            delivery_ms: f.delivery_ms,
            relayed_per_s_per_instance: f.relayed_per_s.map(|r| {
                let mut instances: Vec<&str> = l
                    .span
                    .during(samples)
                    .flat_map(|s| s.instances.iter().map(|i| i.service.as_str()))
                    .collect();
                instances.sort_unstable();
                instances.dedup();
                r / instances.len().max(1) as f64
            }),
            busiest,
            shares: shares(l, samples),
            browser: f.browser.clone(),
            reasons: l.reasons.clone(),
        }
    }

    /// The largest instance's share (1.0: one instance held every socket).
    pub fn top_share(&self) -> Option<f64> {
        self.shares.values().copied().max_by(f64::total_cmp)
    }
}

/// Each instance's mean connections over the level's common hold (its whole load when it had none), as
/// a share of their sum.
fn shares(l: &LevelResult, samples: &[Sample]) -> BTreeMap<String, f64> {
    let mut held: Vec<&Sample> = l.span.holding(samples).collect();
    if held.is_empty() {
        held = l.span.during(samples).collect();
    }
    let mut sums: BTreeMap<String, (f64, usize)> = BTreeMap::new();
    for s in held {
        for i in &s.instances {
            if let Some(c) = i.connections {
                let e = sums.entry(i.service.clone()).or_default();
                e.0 += c as f64;
                e.1 += 1;
            }
        }
    }
    let means: BTreeMap<String, f64> = sums
        .into_iter()
        .map(|(k, (sum, n))| (k, sum / n as f64))
        .collect();
    let total: f64 = means.values().sum();
    if total <= 0.0 {
        return BTreeMap::new();
    }
    means.into_iter().map(|(k, m)| (k, m / total)).collect()
}

/// results.json as written: the results and, for machines, their comparison (`summary::summarize`,
/// rebuilt from the points whenever it is read).
#[derive(Serialize)]
struct Written<'a> {
    #[serde(flatten)]
    results: &'a SweepResults,
    comparison: super::summary::Summary,
}

impl SweepResults {
    /// What each point's capacity counts: "capacity" (users at once), or with `--find-room` "max
    /// collaborators per project at 1,000 users".
    pub fn capacity_word(&self) -> String {
        match self.room_users {
            Some(n) => format!(
                "max collaborators per project at {} users",
                crate::plateau::group(n)
            ),
            None => "capacity".into(),
        }
    }

    /// The unit of a capacity: "users" at once, or "users per project".
    pub fn capacity_unit(&self) -> &'static str {
        match self.room_users {
            Some(_) => "users per project",
            None => "users",
        }
    }

    /// results.json's text, sealed.
    pub fn to_json(&self) -> serde_json::Result<String> {
        let mut sealed = self.clone();
        sealed.seal();
        let mut s = serde_json::to_string_pretty(&Written {
            results: &sealed,
            comparison: super::summary::summarize(self),
        })?;
        s.push('\n');
        Ok(s)
    }

    /// The label of a point's values: `tuned-ip-hash`, or `2 × 0.5` with two variables.
    pub fn label(values: &[String]) -> String {
        values.join(" × ")
    }

    /// The fingerprints set to what the results are now (each write does it).
    pub fn seal(&mut self) {
        Sealed::seal(self)
    }

    /// What was changed since the results were last sealed: each field (or `points.N`) whose fingerprint
    /// differs, was dropped or was added. Empty for the file as exectl wrote it.
    pub fn edited(&self) -> Vec<String> {
        Sealed::edited(self)
    }
}

impl Sealed for SweepResults {
    const ITEMS: &'static str = "points";
    fn fingerprints(&self) -> &BTreeMap<String, String> {
        &self.fingerprints
    }
    fn fingerprints_mut(&mut self) -> &mut BTreeMap<String, String> {
        &mut self.fingerprints
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::{InstanceSample, LevelSpan};
    use crate::sweep::summary::tests::{point, sweep};

    /// The file as written reads back unedited; a value, a point or a dropped point is named.
    #[test]
    fn an_edit_of_the_written_file_is_named() {
        let mut r = sweep(vec![
            point(1, "c", 1, Some(100), 40.123456789012345),
            point(2, "d", 1, Some(200), 0.1 + 0.2),
        ]);
        r.duration_s = 1234.567890123457;
        r.values = vec![vec!["c".into(), "d".into(), "e".into()]];
        let text = r.to_json().unwrap();
        let read: SweepResults = serde_json::from_str(&text).unwrap();
        assert_eq!(read.edited(), Vec::<String>::new(), "{text}");
        // Rewritten by a resume (state, pid), sealed again: still as written.
        let mut again = read.clone();
        again.pid = Some(7);
        let again: SweepResults = serde_json::from_str(&again.to_json().unwrap()).unwrap();
        assert!(again.edited().is_empty());

        let edit = |from: &str, to: &str| -> Vec<String> {
            assert!(text.contains(from), "{from}");
            serde_json::from_str::<SweepResults>(&text.replacen(from, to, 1))
                .unwrap()
                .edited()
        };
        assert_eq!(edit("\"e\"", "\"Y\""), ["values"]);
        assert_eq!(edit("\"capacity\": 200", "\"capacity\": 900"), ["points.2"]);
        let mut planned = r.clone();
        planned.plan = serde_json::json!({"bench": {"settle": {"secs": 45, "nanos": 0}}});
        let text = planned.to_json().unwrap();
        let changed: SweepResults =
            serde_json::from_str(&text.replace("\"secs\": 45", "\"secs\": 5")).unwrap();
        assert_eq!(changed.edited(), ["plan"]);
        let mut dropped: SweepResults = serde_json::from_str(&text).unwrap();
        dropped.points.pop();
        assert_eq!(dropped.edited(), ["points.2"]);
        let mut unsealed: SweepResults = serde_json::from_str(&text).unwrap();
        unsealed.fingerprints.clear();
        assert!(unsealed.edited().contains(&"values".to_string()));
    }

    #[test]
    fn shares_are_of_the_instances_own_counts_during_the_hold() {
        let span = LevelSpan {
            users: 100,
            start_ms: 0,
            hold_ms: 1000,
            hold_end_ms: 3000,
            end_ms: 4000,
            settled_ms: 5000,
        };
        let at = |t, a, b| Sample {
            t_ms: t,
            instances: vec![
                InstanceSample {
                    service: "app-1".into(),
                    connections: Some(a),
                    rooms: None,
                },
                InstanceSample {
                    service: "app-2".into(),
                    connections: Some(b),
                    rooms: None,
                },
            ],
            ..Sample::default()
        };
        // During the ramp app-2 had none; over the hold it is 50/50.
        let samples = vec![
            at(500, 10, 0),
            at(1000, 50, 50),
            at(2000, 50, 50),
            at(3500, 0, 0),
        ];
        let (result, _) = crate::bench::report::tests::example();
        let mut l = result.levels[0].clone();
        l.span = span;
        let s = LevelSummary::of("b", &l, &samples, &CpuScale::default());
        assert_eq!(s.shares["app-1"], 0.5);
        assert_eq!(s.top_share(), Some(0.5));
        let one = vec![at(1000, 100, 0), at(2000, 100, 0)];
        assert_eq!(
            LevelSummary::of("b", &l, &one, &CpuScale::default()).top_share(),
            Some(1.0)
        );
    }

    /// A level of `users` judged as a bench judges it: held all its users or half, made invalid by
    /// another client, its leak check left `leaked` connections.
    fn judged_level(users: u64, held: bool, invalid: bool, leaked: u64) -> LevelResult {
        use crate::bench::{Besides, LeakCheck, LevelFigures, Slos};
        let figures = LevelFigures {
            users,
            held: if held { users } else { users / 2 },
            ..LevelFigures::default()
        };
        let slos = Slos::default().check(&figures);
        let leak = LeakCheck::judge(
            vec![InstanceSample {
                service: "app-1".into(),
                connections: Some(leaked),
                rooms: Some(leaked / 4),
            }],
            2_000,
            &[],
        );
        let besides = Besides {
            invalid: match invalid {
                true => vec!["invalid: another client is connected".into()],
                false => vec![],
            },
            ..Besides::default()
        };
        let span = LevelSpan {
            users,
            ..LevelSpan::default()
        };
        LevelResult::judge(span, figures, slos, leak, besides, Limiting::unknown)
    }

    fn bench_of(levels: Vec<LevelResult>) -> Results {
        let (mut r, _) = crate::bench::report::tests::example();
        r.levels_asked = levels.iter().map(|l| l.users).collect();
        r.verdict = crate::bench::Verdict::of(&levels, &r.levels_asked);
        r.levels = levels;
        r
    }

    fn empty_point() -> PointResult {
        let mut p = crate::sweep::summary::tests::point(1, "A", 1, None, 1.0);
        p.levels.clear();
        p.benches.clear();
        p
    }

    /// A point's capacity is its bench's, as the verdict means it: unknown when its levels were
    /// invalid, not established when a level below a pass failed (both read "below its first level"
    /// and counted as 0), and a leak beside a capacity that stands.
    #[test]
    fn a_point_is_judged_as_its_bench_verdict_means_it() {
        let judged = |levels| {
            let mut p = empty_point();
            p.judged(&bench_of(levels));
            p
        };
        let p = judged(vec![judged_level(10, true, true, 0)]);
        assert_eq!((p.capacity, p.unknown.as_deref()), (None, Some("unknown")));
        assert_eq!(
            p.capacity_text(),
            "unknown (its levels could not count: invalid)"
        );
        let p = judged(vec![
            judged_level(10, false, false, 0),
            judged_level(20, true, false, 0),
        ]);
        assert_eq!(
            (p.capacity, p.unknown.as_deref()),
            (None, Some("not established"))
        );
        let p = judged(vec![judged_level(10, false, false, 0)]);
        assert_eq!((p.capacity, p.unknown.as_deref()), (None, None));
        assert_eq!(p.capacity_text(), "below its first level");
        // Held both levels and leaked at each: at least 20, the leaks said, no limiting component.
        let p = judged(vec![
            judged_level(10, true, false, 10),
            judged_level(20, true, false, 20),
        ]);
        assert_eq!((p.capacity, p.at_least), (Some(20), true));
        assert_eq!(
            p.leaks,
            [
                Leak {
                    users: 10,
                    connections: 10,
                    rooms: 2
                },
                Leak {
                    users: 20,
                    connections: 20,
                    rooms: 5
                }
            ]
        );
        assert_eq!(p.limiting, None);
    }

    /// A probe whose bench was invalid is neither a pass nor a fail: probed again, then the point's
    /// capacity is unknown (an invalid probe counted as a fail set the capacity below it).
    #[test]
    fn an_invalid_probe_is_no_fail() {
        let b = Bounds::new(10, 40, 0.1).unwrap();
        let mut p = empty_point();
        let mut probe = |users, held, invalid, leaked| {
            let r = bench_of(vec![judged_level(users, held, invalid, leaked)]);
            p.probed(users, &r, None);
            search::next(&b, &p.probes)
        };
        assert_eq!(probe(10, true, false, 5), Some(20));
        assert_eq!(probe(20, false, true, 0), Some(20), "probed again");
        assert_eq!(probe(20, false, true, 0), None, "invalid twice: over");
        p.searched(&b, &BTreeMap::new());
        assert_eq!((p.capacity, p.unknown.as_deref()), (None, Some("unknown")));
        assert_eq!(p.probes.iter().filter(|q| q.invalid).count(), 2);
        assert_eq!(p.benches.len(), 3);
        assert_eq!(p.leaks.len(), 1, "the leak of the probe that held");
        assert!(p.probes[0].passed, "held and leaked counts");
    }
}
