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
mod tests;
