//! `exectl runs list|show|diff`: the recorded deploys, benches and sweeps, and what differs between two
//! deploys or two benches.

use crate::cli::{RunsArgs, RunsCommand};
use crate::state::benches::{self, BenchRun, Shown};
use crate::state::runs;
use crate::state::sweeps::{self, SweepRun};
use anyhow::Result;
use serde_json::json;
use std::path::Path;

use exectl_core::bench::compare::{self, Capacity};
use exectl_core::bench::RunState;
use exectl_core::error::{UsageError, UsageErrors};

/// A run by its id: a deploy's record, a bench's results or a sweep's.
enum Run {
    Deploy(Box<runs::Record>),
    Bench(Box<BenchRun>),
    Sweep(Box<SweepRun>),
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

/// The bench's levels, its capacity as its verdict means it, and its state.
fn bench_line(b: &BenchRun) -> String {
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
        Shown::now(r).text()
    )
}

/// The sweep's variables and values, its points and its state.
fn sweep_line(s: &SweepRun) -> String {
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
        sweeps::shown(r).text()
    )
}

pub fn run(args: &RunsArgs) -> Result<()> {
    let root = crate::state::checked_root()?;
    let dir = crate::state::runs_dir(&root);
    match &args.command {
        RunsCommand::List { json } => {
            // A record that cannot be read is listed as such; the others are listed all the same.
            let (records, broken_deploys) = runs::list(&dir);
            let (benches, broken) = benches::list(&root);
            let (sweeps, broken_sweeps) = sweeps::list(&root);
            if *json {
                let mut list: Vec<_> = records
                    .iter()
                    .map(|r| {
                        json!({"kind": "deploy", "id": r.id, "created": r.created, "stack": r.stack,
                               "topology": r.knobs.get("topology"), "instances": r.knobs.get("instances"),
                               "changed": r.changed, "seconds": r.seconds})
                    })
                    .collect();
                list.extend(benches.iter().map(|b| {
                    let r = &b.results;
                    json!({"kind": "bench", "id": b.id, "dir": b.dir, "state": Shown::now(r).text(),
                           "started_unix_s": r.started_unix_s, "stack": r.stack, "scenario": r.scenario,
                           "levels": r.levels_asked, "capacity": r.verdict.capacity,
                           "capacity_at_least": Capacity::of(&r.verdict).at_least, "knee": r.verdict.knee})
                }));
                list.extend(
                    broken_deploys
                        .iter()
                        .map(|(id, why)| json!({"kind": "deploy", "id": id, "error": why})),
                );
                list.extend(
                    broken
                        .iter()
                        .map(|(id, why)| json!({"kind": "bench", "id": id, "error": why})),
                );
                list.extend(sweeps.iter().map(|s| {
                    let r = &s.results;
                    json!({"kind": "sweep", "id": s.id, "dir": s.dir,
                           "state": sweeps::shown(r).text(),
                           "started_unix_s": r.started_unix_s, "stack": r.stack,
                           "variables": r.variables, "values": r.values, "points": r.points.len()})
                }));
                list.extend(
                    broken_sweeps
                        .iter()
                        .map(|(id, why)| json!({"kind": "sweep", "id": id, "error": why})),
                );
                println!("{}", serde_json::to_string_pretty(&list)?);
            } else if records.is_empty()
                && broken_deploys.is_empty()
                && benches.is_empty()
                && broken.is_empty()
                && sweeps.is_empty()
                && broken_sweeps.is_empty()
            {
                println!("no runs recorded yet (every deploy and every bench records one)");
            } else {
                for r in &records {
                    println!(
                        "deploy {:<36} {}  stack {}  {} change(s)",
                        r.id, r.created, r.stack, r.changed
                    );
                }
                for (id, why) in &broken_deploys {
                    println!("deploy {id:<36} unreadable: {why}");
                }
                for b in &benches {
                    println!("{}", bench_line(b));
                }
                for (id, why) in &broken {
                    println!("bench  {id:<36} unreadable: {why}");
                }
                for s in &sweeps {
                    println!("{}", sweep_line(s));
                }
                for (id, why) in &broken_sweeps {
                    println!("sweep  {id:<36} unreadable: {why}");
                }
            }
        }
        RunsCommand::Show { id } => match find(&root, id)? {
            Some(Run::Deploy(r)) => println!("{}", serde_json::to_string_pretty(&r)?),
            Some(Run::Bench(b)) => {
                let mut r = b.results;
                // Shown as readers must take it: a file still `running` without its process was killed.
                if Shown::now(&r) == Shown::Killed {
                    eprintln!(
                        "note: {} says running, but its process{} is gone: the bench was killed",
                        b.dir.join(exectl_core::bench::results::RESULTS).display(),
                        r.pid.map(|p| format!(" (pid {p})")).unwrap_or_default()
                    );
                    r.state = RunState::Interrupted;
                    r.pid = None;
                }
                println!("{}", serde_json::to_string_pretty(&r)?);
            }
            Some(Run::Sweep(s)) => {
                let mut r = s.results;
                if sweeps::shown(&r) == Shown::Killed {
                    eprintln!(
                        "note: {} says running, but its process{} is gone: the sweep was killed (exectl sweep --resume {} goes on)",
                        s.dir.join(exectl_core::sweep::results::RESULTS).display(),
                        r.pid.map(|p| format!(" (pid {p})")).unwrap_or_default(),
                        s.id
                    );
                    r.state = RunState::Interrupted;
                    r.pid = None;
                }
                print!("{}", r.to_json()?);
            }
            None => return Err(no_such_run(&root, id).into()),
        },
        RunsCommand::Diff { a, b, json } => {
            let (ra, rb) = (find(&root, a)?, find(&root, b)?);
            let missing: Vec<UsageError> = [(a, &ra), (b, &rb)]
                .iter()
                .filter(|(_, r)| r.is_none())
                .map(|(id, _)| no_such_run(&root, id))
                .collect();
            UsageErrors::result(missing)?;
            match (ra.expect("found"), rb.expect("found")) {
                (Run::Bench(x), Run::Bench(y)) => {
                    let d = compare::diff(&x.results, &y.results);
                    if *json {
                        println!("{}", serde_json::to_string_pretty(&d)?);
                        return Ok(());
                    }
                    for r in [&x, &y] {
                        let shown = Shown::now(&r.results);
                        if shown != Shown::Complete {
                            println!("note: {} is {}: its levels end early", r.id, shown.text());
                        }
                    }
                    print!("{}", compare::render(a, b, &d));
                }
                (Run::Deploy(x), Run::Deploy(y)) => {
                    print_deploy_diff(a, b, &runs::diff(&x, &y), *json)?
                }
                (Run::Sweep(_), _) => return Err(not_diffed(a).into()),
                (_, Run::Sweep(_)) => return Err(not_diffed(b).into()),
                (x, _) => {
                    let (bench_id, other) = match x {
                        Run::Bench(_) => (a, b),
                        _ => (b, a),
                    };
                    return Err(UsageError::new(
                        "run id",
                        other,
                        format!("{bench_id} is a bench and {other} is a deploy"),
                        "compare two benches or two deploys (exectl runs list)",
                    )
                    .into());
                }
            }
        }
    }
    Ok(())
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

fn print_deploy_diff(a: &str, b: &str, d: &runs::Diff, json: bool) -> Result<()> {
    if json {
        println!("{}", serde_json::to_string_pretty(d)?);
        return Ok(());
    }
    println!("{a} -> {b}");
    for c in &d.changes {
        println!(
            "  {:<34} {} -> {}",
            runs::shown(&c.key),
            runs::shown(&c.a),
            runs::shown(&c.b)
        );
    }
    println!("{}", compare::variables_line(&d.variables));
    Ok(())
}
