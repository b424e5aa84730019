//! `exectl runs list|show|diff`: the recorded deploys and benches, and what differs between two of them.

use crate::cli::{RunsArgs, RunsCommand};
use crate::runs;
use anyhow::Result;
use serde_json::json;

use crate::core::bench::{compare, Results};
use crate::error::UsageError;

/// Every bench with a results.json under STATE/benches, oldest first.
fn benches() -> Vec<Results> {
    let dir = super::bench::benches_dir();
    let mut out: Vec<Results> = std::fs::read_dir(&dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let text = std::fs::read_to_string(e.path().join(crate::core::bench::results::RESULTS))
                .ok()?;
            serde_json::from_str(&text).ok()
        })
        .collect();
    out.sort_by(|a, b| (a.started_unix_s, &a.run_id).cmp(&(b.started_unix_s, &b.run_id)));
    out
}

fn bench(id: &str) -> Option<Results> {
    benches().into_iter().find(|r| r.run_id == id)
}

pub fn run(args: &RunsArgs) -> Result<()> {
    let dir = runs::runs_dir(&crate::secrets::checked_state_root()?);
    match &args.command {
        RunsCommand::List { json } => {
            let records: Vec<runs::Record> = runs::list_ids(&dir)
                .iter()
                .map(|id| runs::load(&dir, id))
                .collect::<Result<_>>()?;
            let benches = benches();
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
                    json!({"kind": "bench", "id": b.run_id, "started_unix_s": b.started_unix_s,
                           "stack": b.stack, "scenario": b.scenario, "levels": b.levels_asked,
                           "capacity": b.verdict.capacity, "knee": b.verdict.knee})
                }));
                println!("{}", serde_json::to_string_pretty(&list)?);
            } else if records.is_empty() && benches.is_empty() {
                println!("no runs recorded yet (every deploy and every bench records one)");
            } else {
                for r in &records {
                    println!(
                        "deploy {:<36} {}  stack {}  {} change(s)",
                        r.id, r.created, r.stack, r.changed
                    );
                }
                for b in &benches {
                    println!(
                        "bench  {:<36} stack {}  {} levels {}  capacity {}",
                        b.run_id,
                        b.stack,
                        b.scenario,
                        b.levels_asked
                            .iter()
                            .map(u64::to_string)
                            .collect::<Vec<_>>()
                            .join(","),
                        b.verdict.capacity.map_or("none".into(), |c| c.to_string())
                    );
                }
            }
        }
        RunsCommand::Show { id } => {
            println!("{}", serde_json::to_string_pretty(&runs::load(&dir, id)?)?);
        }
        RunsCommand::Diff { a, b, json } => {
            match (bench(a), bench(b)) {
                (Some(x), Some(y)) => {
                    let d = compare::diff(&x, &y);
                    if *json {
                        println!("{}", serde_json::to_string_pretty(&d)?);
                    } else {
                        print!("{}", compare::render(a, b, &d));
                    }
                    return Ok(());
                }
                (Some(_), None) | (None, Some(_)) => {
                    let (bench_id, other) = if bench(a).is_some() { (a, b) } else { (b, a) };
                    return Err(UsageError::new(
                        "ID",
                        other,
                        format!("{bench_id} is a bench and {other} is not"),
                        "compare two benches or two deploys (exectl runs list)",
                    )
                    .into());
                }
                (None, None) => {}
            }
            let d = runs::diff(&runs::load(&dir, a)?, &runs::load(&dir, b)?);
            if *json {
                println!("{}", serde_json::to_string_pretty(&d)?);
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
            match d.variables.len() {
                0 => println!("identical: no variable changed"),
                1 => println!("1 variable changed: {}", d.variables[0]),
                n => println!(
                    "WARNING: {n} variables changed ({}): this comparison does not isolate one variable",
                    d.variables.join(", ")
                ),
            }
        }
    }
    Ok(())
}
