//! `exectl runs list|show|diff`: the recorded deploys, and what differs between two of them.

use crate::cli::{RunsArgs, RunsCommand};
use crate::runs;
use anyhow::Result;
use serde_json::json;

pub fn run(args: &RunsArgs) -> Result<()> {
    let dir = runs::runs_dir(&crate::secrets::checked_state_root()?);
    match &args.command {
        RunsCommand::List { json } => {
            let records: Vec<runs::Record> = runs::list_ids(&dir)
                .iter()
                .map(|id| runs::load(&dir, id))
                .collect::<Result<_>>()?;
            if *json {
                let list: Vec<_> = records
                    .iter()
                    .map(|r| {
                        json!({"id": r.id, "created": r.created, "stack": r.stack,
                               "topology": r.knobs.get("topology"), "instances": r.knobs.get("instances"),
                               "changed": r.changed, "seconds": r.seconds})
                    })
                    .collect();
                println!("{}", serde_json::to_string_pretty(&list)?);
            } else if records.is_empty() {
                println!("no runs recorded yet (every deploy records one)");
            } else {
                for r in &records {
                    println!(
                        "{:<36} {}  stack {}  {} change(s)",
                        r.id, r.created, r.stack, r.changed
                    );
                }
            }
        }
        RunsCommand::Show { id } => {
            println!("{}", serde_json::to_string_pretty(&runs::load(&dir, id)?)?);
        }
        RunsCommand::Diff { a, b, json } => {
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
