//! `exectl runs list|show|diff`: the recorded deploys, benches and sweeps, and what differs between two
//! deploys or two benches; the operation is `ops::runs`, this prints it.

use crate::cli::{RunsArgs, RunsCommand};
use crate::ops::runs;
use anyhow::Result;

pub fn run(args: &RunsArgs) -> Result<()> {
    let root = crate::state::checked_root()?;
    match &args.command {
        RunsCommand::List { json } => {
            let list = runs::list(&root);
            if *json {
                println!("{}", serde_json::to_string_pretty(&list.json())?);
            } else {
                for line in list.lines() {
                    println!("{line}");
                }
            }
        }
        RunsCommand::Show { id } => {
            let shown = runs::show(&root, id)?;
            if let Some(note) = shown.note() {
                eprintln!("{note}");
            }
            print!("{}", shown.to_json()?);
        }
        RunsCommand::Diff { a, b, json } => {
            let d = runs::diff(&root, a, b)?;
            print!("{}", if *json { d.to_json()? } else { d.text() });
        }
    }
    Ok(())
}
