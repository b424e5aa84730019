//! `runs`: the recorded runs of the state folder (deploy records, benches, sweeps) listed, one shown by
//! its id, and what differs between two deploys or two benches. They read the state folder only, so
//! each takes its root (`state::checked_root`) where the others take a `Context`; nothing here prints:
//! each outcome gives its lines and its JSON as `exectl runs` prints them.

use crate::state::benches::{self, BenchRun, Shown};
use crate::state::runs::{self, Record};
use crate::state::sweeps::{self, SweepRun};
use anyhow::Result;
use exectl_core::bench::compare::{self, BenchDiff, Capacity};
use exectl_core::bench::results::Results;
use exectl_core::bench::RunState;
use exectl_core::error::{UsageError, UsageErrors};
use exectl_core::sweep::results::SweepResults;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// A run of the state folder, with what to show for its state (read once, when it was listed).
#[derive(Debug, Clone)]
pub struct Listed<T> {
    pub run: T,
    pub shown: Shown,
}

/// A run whose file cannot be read: its id, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unreadable {
    pub id: String,
    pub why: String,
}

/// Every recorded run: deploy records by id, benches and sweeps oldest first; those that cannot be read
/// beside them, by id.
#[derive(Debug, Clone, Default)]
pub struct RunList {
    pub deploys: Vec<Record>,
    pub unreadable_deploys: Vec<Unreadable>,
    pub benches: Vec<Listed<BenchRun>>,
    pub unreadable_benches: Vec<Unreadable>,
    pub sweeps: Vec<Listed<SweepRun>>,
    pub unreadable_sweeps: Vec<Unreadable>,
}

/// Every run of the state folder `root`. A record that cannot be read is listed as such; the others are
/// listed all the same.
pub fn list(root: &Path) -> RunList {
    let unreadable = |broken: Vec<(String, String)>| {
        broken
            .into_iter()
            .map(|(id, why)| Unreadable { id, why })
            .collect()
    };
    let (deploys, broken_deploys) = runs::list(&crate::state::runs_dir(root));
    let (benches, broken_benches) = benches::list(root);
    let (sweeps, broken_sweeps) = sweeps::list(root);
    RunList {
        deploys,
        unreadable_deploys: unreadable(broken_deploys),
        benches: benches
            .into_iter()
            .map(|b| Listed {
                shown: Shown::now(&b.results),
                run: b,
            })
            .collect(),
        unreadable_benches: unreadable(broken_benches),
        sweeps: sweeps
            .into_iter()
            .map(|s| Listed {
                shown: sweeps::shown(&s.results),
                run: s,
            })
            .collect(),
        unreadable_sweeps: unreadable(broken_sweeps),
    }
}

impl RunList {
    pub fn is_empty(&self) -> bool {
        self.deploys.is_empty()
            && self.unreadable_deploys.is_empty()
            && self.benches.is_empty()
            && self.unreadable_benches.is_empty()
            && self.sweeps.is_empty()
            && self.unreadable_sweeps.is_empty()
    }

    /// `runs list --json`: one object per run (`kind`, `id`, and its figures or its `error`): the
    /// deploys, the benches, the unreadable deploys and benches, the sweeps, the unreadable sweeps.
    pub fn json(&self) -> Value {
        let unreadable = |kind: &str, broken: &[Unreadable]| -> Vec<Value> {
            broken
                .iter()
                .map(|u| json!({"kind": kind, "id": u.id, "error": u.why}))
                .collect()
        };
        let mut list: Vec<Value> = self
            .deploys
            .iter()
            .map(|r| {
                json!({"kind": "deploy", "id": r.id, "created": r.created, "stack": r.stack,
                       "topology": r.knobs.get("topology"), "instances": r.knobs.get("instances"),
                       "changed": r.changed, "seconds": r.seconds})
            })
            .collect();
        list.extend(self.benches.iter().map(|Listed { run: b, shown }| {
            let r = &b.results;
            json!({"kind": "bench", "id": b.id, "dir": b.dir, "state": shown.text(),
                   "started_unix_s": r.started_unix_s, "stack": r.stack, "scenario": r.scenario,
                   "levels": r.levels_asked, "capacity": r.verdict.capacity,
                   "capacity_at_least": Capacity::of(&r.verdict).at_least, "knee": r.verdict.knee})
        }));
        list.extend(unreadable("deploy", &self.unreadable_deploys));
        list.extend(unreadable("bench", &self.unreadable_benches));
        list.extend(self.sweeps.iter().map(|Listed { run: s, shown }| {
            let r = &s.results;
            json!({"kind": "sweep", "id": s.id, "dir": s.dir, "state": shown.text(),
                   "started_unix_s": r.started_unix_s, "stack": r.stack,
                   "variables": r.variables, "values": r.values, "points": r.points.len()})
        }));
        list.extend(unreadable("sweep", &self.unreadable_sweeps));
        Value::Array(list)
    }

    /// `runs list`: a line per run (the deploys, then the benches, then the sweeps, each kind's
    /// unreadable ones after it), or one saying there is none.
    pub fn lines(&self) -> Vec<String> {
        if self.is_empty() {
            return vec!["no runs recorded yet (every deploy and every bench records one)".into()];
        }
        let unreadable = |kind: &str, broken: &[Unreadable]| -> Vec<String> {
            broken
                .iter()
                .map(|u| format!("{kind:<6} {:<36} unreadable: {}", u.id, u.why))
                .collect()
        };
        let mut lines: Vec<String> = self
            .deploys
            .iter()
            .map(|r| {
                format!(
                    "deploy {:<36} {}  stack {}  {} change(s)",
                    r.id, r.created, r.stack, r.changed
                )
            })
            .collect();
        lines.extend(unreadable("deploy", &self.unreadable_deploys));
        lines.extend(self.benches.iter().map(bench_line));
        lines.extend(unreadable("bench", &self.unreadable_benches));
        lines.extend(self.sweeps.iter().map(sweep_line));
        lines.extend(unreadable("sweep", &self.unreadable_sweeps));
        lines
    }
}

/// The bench's levels, its capacity as its verdict means it, and its state.
fn bench_line(Listed { run: b, shown }: &Listed<BenchRun>) -> String {
    let r = &b.results;
    format!(
        "bench  {:<36} stack {}  {} levels {}  capacity {}  {}",
        b.id,
        r.stack,
        r.scenario,
        r.levels_asked
            .iter()
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join(","),
        Capacity::of(&r.verdict).text(),
        shown.text()
    )
}

/// The sweep's variables and values, its points and its state.
fn sweep_line(Listed { run: s, shown }: &Listed<SweepRun>) -> String {
    let r = &s.results;
    let vary: Vec<String> = r
        .variables
        .iter()
        .zip(&r.values)
        .map(|(v, vs)| format!("{v}={}", vs.join(",")))
        .collect();
    format!(
        "sweep  {:<36} stack {}  {}  {} point(s) of {}  {}",
        s.id,
        r.stack,
        vary.join(" "),
        r.points.len(),
        r.values.iter().map(Vec::len).product::<usize>() * r.repeat as usize,
        shown.text()
    )
}

/// A results.json still `running` whose process is gone: the file, and the pid it named.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Killed {
    pub file: PathBuf,
    pub pid: Option<u32>,
}

impl Killed {
    /// ` (pid N)`, or nothing when the file named none.
    fn pid_text(&self) -> String {
        self.pid.map(|p| format!(" (pid {p})")).unwrap_or_default()
    }
}

/// One run as `runs show` prints it: a deploy's record, a bench's or a sweep's results as readers must
/// take them (a file still `running` without its process was killed: shown `interrupted`, without its
/// pid, and `killed` says so).
#[derive(Debug, Clone)]
pub enum ShownRun {
    Deploy(Box<Record>),
    Bench {
        results: Box<Results>,
        killed: Option<Killed>,
    },
    Sweep {
        id: String,
        results: Box<SweepResults>,
        killed: Option<Killed>,
    },
}

/// Run `id` of the state folder `root`, or the usage error naming it when no deploy record, bench or
/// sweep has that id (or its file cannot be read).
pub fn show(root: &Path, id: &str) -> Result<ShownRun> {
    Ok(match find(root, id)? {
        Some(Run::Deploy(r)) => ShownRun::Deploy(r),
        Some(Run::Bench(b)) => {
            let mut r = b.results;
            let file = b.dir.join(exectl_core::bench::results::RESULTS);
            let killed = killed(Shown::now(&r), file, &mut r.state, &mut r.pid);
            ShownRun::Bench {
                results: Box::new(r),
                killed,
            }
        }
        Some(Run::Sweep(s)) => {
            let mut r = s.results;
            let file = s.dir.join(exectl_core::sweep::results::RESULTS);
            let killed = killed(sweeps::shown(&r), file, &mut r.state, &mut r.pid);
            ShownRun::Sweep {
                id: s.id,
                results: Box::new(r),
                killed,
            }
        }
        None => return Err(no_such_run(root, id).into()),
    })
}

/// A run shown `killed` is `interrupted`, without its pid: its file and the pid it named, then.
fn killed(
    shown: Shown,
    file: PathBuf,
    state: &mut RunState,
    pid: &mut Option<u32>,
) -> Option<Killed> {
    if shown != Shown::Killed {
        return None;
    }
    let k = Killed { file, pid: *pid };
    *state = RunState::Interrupted;
    *pid = None;
    Some(k)
}

impl ShownRun {
    /// The note on stderr when the run was killed.
    pub fn note(&self) -> Option<String> {
        match self {
            ShownRun::Deploy(_) => None,
            ShownRun::Bench { killed, .. } => killed.as_ref().map(|k| {
                format!(
                    "note: {} says running, but its process{} is gone: the bench was killed",
                    k.file.display(),
                    k.pid_text()
                )
            }),
            ShownRun::Sweep { id, killed, .. } => killed.as_ref().map(|k| {
                format!(
                    "note: {} says running, but its process{} is gone: the sweep was killed (exectl sweep --resume {id} goes on)",
                    k.file.display(),
                    k.pid_text()
                )
            }),
        }
    }

    /// The run's JSON, ending in a newline: a record's or a bench's results pretty, a sweep's results
    /// as its results.json holds them (with its comparison).
    pub fn to_json(&self) -> serde_json::Result<String> {
        let pretty = match self {
            ShownRun::Deploy(r) => serde_json::to_string_pretty(r)?,
            ShownRun::Bench { results, .. } => serde_json::to_string_pretty(results)?,
            ShownRun::Sweep { results, .. } => return results.to_json(),
        };
        Ok(pretty + "\n")
    }
}

/// What differs between two runs of one kind: two benches (the settings, the variables, level by
/// level; and each one's state, as a bench that did not complete ends its levels early) or two deploys
/// (knob by knob).
#[derive(Debug, Clone)]
pub enum RunDiff {
    Bench {
        a: String,
        b: String,
        diff: BenchDiff,
        shown: (Shown, Shown),
    },
    Deploy {
        a: String,
        b: String,
        diff: runs::Diff,
    },
}

/// Runs `a` and `b` of the state folder `root` compared; the usage errors naming each id that is no
/// run, or the one that cannot be compared (a sweep; a bench with a deploy).
pub fn diff(root: &Path, a: &str, b: &str) -> Result<RunDiff> {
    let (ra, rb) = (find(root, a)?, find(root, b)?);
    let missing: Vec<UsageError> = [(a, &ra), (b, &rb)]
        .iter()
        .filter(|(_, r)| r.is_none())
        .map(|(id, _)| no_such_run(root, id))
        .collect();
    UsageErrors::result(missing)?;
    let (a, b) = (a.to_string(), b.to_string());
    Ok(match (ra.expect("found"), rb.expect("found")) {
        (Run::Bench(x), Run::Bench(y)) => RunDiff::Bench {
            diff: compare::diff(&x.results, &y.results),
            shown: (Shown::now(&x.results), Shown::now(&y.results)),
            a,
            b,
        },
        (Run::Deploy(x), Run::Deploy(y)) => RunDiff::Deploy {
            diff: runs::diff(&x, &y),
            a,
            b,
        },
        (x, y) => return Err(not_compared(&a, &b, x.kind(), y.kind()).into()),
    })
}

impl RunDiff {
    /// `runs diff --json`: the diff's JSON, ending in a newline.
    pub fn to_json(&self) -> serde_json::Result<String> {
        let pretty = match self {
            RunDiff::Bench { diff, .. } => serde_json::to_string_pretty(diff)?,
            RunDiff::Deploy { diff, .. } => serde_json::to_string_pretty(diff)?,
        };
        Ok(pretty + "\n")
    }

    /// `runs diff`, each line ending in a newline: `A -> B`, what changed, how many variables; a
    /// bench's levels after it, and first a note for each bench that did not complete.
    pub fn text(&self) -> String {
        match self {
            RunDiff::Bench { a, b, diff, shown } => {
                let mut s = String::new();
                for (id, shown) in [(a, shown.0), (b, shown.1)] {
                    if shown != Shown::Complete {
                        s += &format!("note: {id} is {}: its levels end early\n", shown.text());
                    }
                }
                s + &compare::render(a, b, diff)
            }
            RunDiff::Deploy { a, b, diff } => {
                let mut s = format!("{a} -> {b}\n");
                for c in &diff.changes {
                    s += &format!(
                        "  {:<34} {} -> {}\n",
                        runs::shown(&c.key),
                        runs::shown(&c.a),
                        runs::shown(&c.b)
                    );
                }
                s + &compare::variables_line(&diff.variables) + "\n"
            }
        }
    }
}

/// A run by its id: a deploy's record, a bench's results or a sweep's.
enum Run {
    Deploy(Box<Record>),
    Bench(Box<BenchRun>),
    Sweep(Box<SweepRun>),
}

/// What a run is, for the errors of a comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Deploy,
    Bench,
    Sweep,
}

impl Run {
    fn kind(&self) -> Kind {
        match self {
            Run::Deploy(_) => Kind::Deploy,
            Run::Bench(_) => Kind::Bench,
            Run::Sweep(_) => Kind::Sweep,
        }
    }
}

/// Run `id`, or None when no deploy record, bench or sweep has that id.
fn find(root: &Path, id: &str) -> Result<Option<Run>> {
    if let Some(r) = runs::find(&crate::state::runs_dir(root), id)? {
        return Ok(Some(Run::Deploy(Box::new(r))));
    }
    if let Some(b) = benches::find(root, id)? {
        return Ok(Some(Run::Bench(Box::new(b))));
    }
    Ok(sweeps::load(root, id)?.map(|s| Run::Sweep(Box::new(s))))
}

fn no_such_run(root: &Path, id: &str) -> UsageError {
    UsageError::new(
        "run id",
        id,
        format!(
            "no such run: no deploy record in {}, no bench in {} and no sweep in {}",
            crate::state::runs_dir(root).display(),
            crate::state::benches_dir(root).display(),
            crate::state::sweeps_dir(root).display()
        ),
        "see `exectl runs list` for the recorded ids",
    )
}

/// Why runs `a` (of kind `ka`) and `b` (of kind `kb`) are not compared: a sweep (the first named) is
/// not diffed; a bench and a deploy are not compared, the deploy named.
fn not_compared(a: &str, b: &str, ka: Kind, kb: Kind) -> UsageError {
    match (ka, kb) {
        (Kind::Sweep, _) => not_diffed(a),
        (_, Kind::Sweep) => not_diffed(b),
        _ => {
            let (bench_id, other) = match ka {
                Kind::Bench => (a, b),
                _ => (b, a),
            };
            UsageError::new(
                "run id",
                other,
                format!("{bench_id} is a bench and {other} is a deploy"),
                "compare two benches or two deploys (exectl runs list)",
            )
        }
    }
}

/// A sweep is not diffed: its own report compares its values.
fn not_diffed(sweep_id: &str) -> UsageError {
    UsageError::new(
        "run id",
        sweep_id,
        format!("{sweep_id} is a sweep, and its report compares its values"),
        "compare two of its points' benches or deploys (their ids are in exectl runs show SWEEP_ID), or read its report.html",
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::runs::{EngineRecord, ExectlRecord};
    use std::collections::BTreeMap;

    /// A bench's results (the core's example: levels 200, 500 and 1000 asked, the knee at 500).
    fn bench_results(id: &str, state: RunState, pid: Option<u32>) -> Results {
        let (mut r, _) = exectl_core::bench::report::tests::example();
        r.run_id = id.into();
        r.state = state;
        r.pid = pid;
        r
    }

    fn sweep_results(id: &str, state: RunState, pid: Option<u32>) -> SweepResults {
        SweepResults {
            schema: exectl_core::sweep::results::SCHEMA,
            run_id: id.into(),
            state,
            pid,
            pid_since_unix_s: None,
            exectl_version: "0".into(),
            stack: "exe".into(),
            target: "local".into(),
            variables: vec!["nginx".into(), "env.M".into()],
            values: vec![vec!["stock".into(), "tuned".into()], vec!["c".into()]],
            repeat: 2,
            scenario: "login-burst".into(),
            levels: vec![200],
            search: None,
            room_users: None,
            browser_probe: false,
            started_unix_s: 1_795_000_000,
            duration_s: 0.0,
            points: vec![],
            stopped: None,
            plan: Value::Null,
            started_in: PathBuf::from("/"),
            fingerprints: BTreeMap::new(),
        }
    }

    fn record(id: &str, instances: &str) -> Record {
        Record {
            id: id.into(),
            created: "2026-12-01T10:00:00Z".into(),
            created_epoch: 0,
            stack: "exe".into(),
            knobs: BTreeMap::from([
                ("topology".to_string(), "ha".to_string()),
                ("instances".to_string(), instances.to_string()),
            ]),
            spec: Value::Null,
            files: BTreeMap::new(),
            images: BTreeMap::new(),
            engine: EngineRecord::default(),
            exectl: ExectlRecord::current(),
            changed: 3,
            seconds: 1.5,
            fitted: vec![],
        }
    }

    fn unreadable(id: &str, why: &str) -> Unreadable {
        Unreadable {
            id: id.into(),
            why: why.into(),
        }
    }

    fn typed_list() -> RunList {
        RunList {
            deploys: vec![record("E-ha-2-001", "2")],
            unreadable_deploys: vec![unreadable("E-bad", "not a record")],
            benches: vec![Listed {
                run: BenchRun {
                    id: "B-1".into(),
                    dir: PathBuf::from("/s/benches/B-1"),
                    results: bench_results("B-1", RunState::Running, Some(7)),
                },
                shown: Shown::Killed,
            }],
            unreadable_benches: vec![unreadable("B-bad", "{")],
            sweeps: vec![Listed {
                run: SweepRun {
                    id: "S-1".into(),
                    dir: PathBuf::from("/s/sweeps/S-1"),
                    results: sweep_results("S-1", RunState::Interrupted, None),
                },
                shown: Shown::Interrupted,
            }],
            unreadable_sweeps: vec![unreadable("S-bad", "has layout 1")],
        }
    }

    #[test]
    fn a_list_is_a_line_per_run_kind_by_kind() {
        let pad = |id: &str| format!("{id:<36}");
        assert_eq!(
            typed_list().lines(),
            [
                format!(
                    "deploy {} 2026-12-01T10:00:00Z  stack exe  3 change(s)",
                    pad("E-ha-2-001")
                ),
                format!("deploy {} unreadable: not a record", pad("E-bad")),
                format!(
                    "bench  {} stack exe  login-burst levels 200,500,1000  capacity 200  interrupted (killed)",
                    pad("B-1")
                ),
                format!("bench  {} unreadable: {{", pad("B-bad")),
                format!(
                    "sweep  {} stack exe  nginx=stock,tuned env.M=c  0 point(s) of 4  interrupted",
                    pad("S-1")
                ),
                format!("sweep  {} unreadable: has layout 1", pad("S-bad")),
            ]
        );
        assert_eq!(
            RunList::default().lines(),
            ["no runs recorded yet (every deploy and every bench records one)"]
        );
        assert_eq!(RunList::default().json(), json!([]));
    }

    #[test]
    fn a_lists_json_is_an_object_per_run_the_unreadable_with_their_error() {
        let json = typed_list().json();
        let runs = json.as_array().unwrap();
        let kinds: Vec<(&str, &str)> = runs
            .iter()
            .map(|r| (r["kind"].as_str().unwrap(), r["id"].as_str().unwrap()))
            .collect();
        assert_eq!(
            kinds,
            [
                ("deploy", "E-ha-2-001"),
                ("bench", "B-1"),
                ("deploy", "E-bad"),
                ("bench", "B-bad"),
                ("sweep", "S-1"),
                ("sweep", "S-bad")
            ]
        );
        assert_eq!(
            runs[0],
            json!({"kind": "deploy", "id": "E-ha-2-001", "created": "2026-12-01T10:00:00Z",
                   "stack": "exe", "topology": "ha", "instances": "2", "changed": 3, "seconds": 1.5})
        );
        assert_eq!(
            runs[1],
            json!({"kind": "bench", "id": "B-1", "dir": "/s/benches/B-1",
                   "state": "interrupted (killed)", "started_unix_s": 1_795_000_000u64,
                   "stack": "exe", "scenario": "login-burst", "levels": [200, 500, 1000],
                   "capacity": 200, "capacity_at_least": false, "knee": 500})
        );
        assert_eq!(
            runs[2],
            json!({"kind": "deploy", "id": "E-bad", "error": "not a record"})
        );
        assert_eq!(
            runs[4],
            json!({"kind": "sweep", "id": "S-1", "dir": "/s/sweeps/S-1", "state": "interrupted",
                   "started_unix_s": 1_795_000_000u64, "stack": "exe",
                   "variables": ["nginx", "env.M"], "values": [["stock", "tuned"], ["c"]],
                   "points": 0})
        );
    }

    /// A state folder of real files: a bench killed (its pid gone), a sweep killed, a deploy record
    /// that cannot be read.
    fn state_root() -> tempfile::TempDir {
        let root = tempfile::tempdir().unwrap();
        let bench = crate::state::benches_dir(root.path()).join("B-1");
        std::fs::create_dir_all(&bench).unwrap();
        let r = bench_results("B-1", RunState::Running, Some(u32::MAX));
        std::fs::write(
            bench.join(exectl_core::bench::results::RESULTS),
            serde_json::to_vec(&r).unwrap(),
        )
        .unwrap();
        let sweep = crate::state::sweeps_dir(root.path()).join("S-1");
        std::fs::create_dir_all(&sweep).unwrap();
        let s = sweep_results("S-1", RunState::Running, Some(u32::MAX));
        std::fs::write(
            sweep.join(exectl_core::sweep::results::RESULTS),
            s.to_json().unwrap(),
        )
        .unwrap();
        let runs = crate::state::runs_dir(root.path());
        std::fs::create_dir_all(&runs).unwrap();
        std::fs::write(runs.join("E-bad.json"), "{").unwrap();
        root
    }

    #[test]
    fn a_state_folder_is_listed_with_what_cannot_be_read() {
        let root = state_root();
        let list = list(root.path());
        assert!(list.deploys.is_empty());
        assert_eq!(list.unreadable_deploys.len(), 1);
        assert_eq!(list.unreadable_deploys[0].id, "E-bad");
        assert!(
            list.unreadable_deploys[0]
                .why
                .contains("is not a deploy's run record"),
            "{list:?}"
        );
        let benches: Vec<(&str, Shown)> = list
            .benches
            .iter()
            .map(|b| (b.run.id.as_str(), b.shown))
            .collect();
        assert_eq!(benches, [("B-1", Shown::Killed)]);
        let sweeps: Vec<(&str, Shown)> = list
            .sweeps
            .iter()
            .map(|s| (s.run.id.as_str(), s.shown))
            .collect();
        assert_eq!(sweeps, [("S-1", Shown::Killed)]);
        assert!(list.unreadable_benches.is_empty() && list.unreadable_sweeps.is_empty());
        assert!(!list.is_empty());
        assert!(super::list(&root.path().join("none")).is_empty());
    }

    #[test]
    fn a_killed_run_is_shown_interrupted_with_a_note() {
        let root = state_root();
        let shown = show(root.path(), "B-1").unwrap();
        let file = crate::state::benches_dir(root.path()).join("B-1/results.json");
        assert_eq!(
            shown.note().unwrap(),
            format!(
                "note: {} says running, but its process (pid {}) is gone: the bench was killed",
                file.display(),
                u32::MAX
            )
        );
        let ShownRun::Bench { results, .. } = &shown else {
            panic!("{shown:?}")
        };
        assert_eq!((results.state, results.pid), (RunState::Interrupted, None));
        let text = shown.to_json().unwrap();
        assert!(text.ends_with("}\n") && text.contains("\"state\": \"interrupted\""));

        let shown = show(root.path(), "S-1").unwrap();
        let file = crate::state::sweeps_dir(root.path()).join("S-1/results.json");
        assert_eq!(
            shown.note().unwrap(),
            format!(
                "note: {} says running, but its process (pid {}) is gone: the sweep was killed (exectl sweep --resume S-1 goes on)",
                file.display(),
                u32::MAX
            )
        );
        let ShownRun::Sweep { results, .. } = &shown else {
            panic!("{shown:?}")
        };
        assert_eq!((results.state, results.pid), (RunState::Interrupted, None));

        // Not killed: no note, nothing corrected; without a pid, none said.
        let (mut state, mut pid) = (RunState::Complete, Some(3));
        assert_eq!(
            killed(Shown::Complete, "f".into(), &mut state, &mut pid),
            None
        );
        assert_eq!((state, pid), (RunState::Complete, Some(3)));
        let k = Killed {
            file: "f".into(),
            pid: None,
        };
        let bench = ShownRun::Bench {
            results: Box::new(bench_results("B", RunState::Interrupted, None)),
            killed: Some(k),
        };
        assert_eq!(
            bench.note().unwrap(),
            "note: f says running, but its process is gone: the bench was killed"
        );
        assert_eq!(ShownRun::Deploy(Box::new(record("E", "2"))).note(), None);
    }

    #[test]
    fn an_unknown_id_is_named_with_where_it_was_looked_for() {
        let root = state_root();
        let e = show(root.path(), "nope").unwrap_err();
        let u = e.downcast_ref::<UsageError>().unwrap();
        assert_eq!((u.field.as_str(), u.value.as_str()), ("run id", "nope"));
        assert_eq!(
            u.problem,
            format!(
                "no such run: no deploy record in {}, no bench in {} and no sweep in {}",
                crate::state::runs_dir(root.path()).display(),
                crate::state::benches_dir(root.path()).display(),
                crate::state::sweeps_dir(root.path()).display()
            )
        );
        // Both ids of a diff, when neither is a run; one, when one is.
        let e = diff(root.path(), "nope", "gone").unwrap_err();
        let both = e.downcast_ref::<UsageErrors>().unwrap();
        let ids: Vec<&str> = both.0.iter().map(|u| u.value.as_str()).collect();
        assert_eq!(ids, ["nope", "gone"]);
        let e = diff(root.path(), "B-1", "gone").unwrap_err();
        assert_eq!(e.downcast_ref::<UsageError>().unwrap().value, "gone");
        // A sweep is not diffed, even with itself.
        let e = diff(root.path(), "S-1", "S-1").unwrap_err();
        let u = e.downcast_ref::<UsageError>().unwrap();
        assert_eq!(
            u.problem,
            "S-1 is a sweep, and its report compares its values"
        );
    }

    #[test]
    fn runs_of_two_kinds_are_not_compared_the_other_named() {
        let error = |ka, kb| {
            let u = not_compared("x", "y", ka, kb);
            (u.value, u.problem)
        };
        let sweep = |id: &str| {
            (
                id.to_string(),
                format!("{id} is a sweep, and its report compares its values"),
            )
        };
        assert_eq!(error(Kind::Sweep, Kind::Bench), sweep("x"));
        assert_eq!(error(Kind::Sweep, Kind::Sweep), sweep("x"));
        assert_eq!(error(Kind::Deploy, Kind::Sweep), sweep("y"));
        assert_eq!(
            error(Kind::Bench, Kind::Deploy),
            (
                "y".to_string(),
                "x is a bench and y is a deploy".to_string()
            )
        );
        assert_eq!(
            error(Kind::Deploy, Kind::Bench),
            (
                "x".to_string(),
                "y is a bench and x is a deploy".to_string()
            )
        );
        let u = not_compared("x", "y", Kind::Bench, Kind::Deploy);
        assert_eq!(
            u.fix,
            "compare two benches or two deploys (exectl runs list)"
        );
    }

    #[test]
    fn a_diff_is_its_lines_and_its_json() {
        let d = RunDiff::Deploy {
            a: "E-1".into(),
            b: "E-2".into(),
            diff: runs::diff(&record("E-1", "2"), &record("E-2", "4 ")),
        };
        assert_eq!(
            d.text(),
            format!(
                "E-1 -> E-2\n  {:<34} 2 -> \"4 \"\n1 variable changed: instances\n",
                "knobs.instances"
            )
        );
        let json: Value = serde_json::from_str(&d.to_json().unwrap()).unwrap();
        assert_eq!(json["variables"], json!(["instances"]));
        assert!(d.to_json().unwrap().ends_with("}\n"));

        let (x, y) = (
            bench_results("B-1", RunState::Interrupted, None),
            bench_results("B-2", RunState::Complete, None),
        );
        let diff = compare::diff(&x, &y);
        let d = RunDiff::Bench {
            a: "B-1".into(),
            b: "B-2".into(),
            diff: diff.clone(),
            shown: (Shown::Killed, Shown::Complete),
        };
        assert_eq!(
            d.text(),
            format!(
                "note: B-1 is interrupted (killed): its levels end early\n{}",
                compare::render("B-1", "B-2", &diff)
            )
        );
        assert_eq!(
            d.to_json().unwrap(),
            serde_json::to_string_pretty(&diff).unwrap() + "\n"
        );
    }
}
