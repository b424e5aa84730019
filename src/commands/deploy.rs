//! `exectl deploy` and `exectl plan`: flags → options, connect, call the operation (`ops::deploy`), print
//! its outcome (human lines or `--json`: `ops::deploy_text`).

use crate::cli::spec::load_templates;
use crate::cli::{DeployArgs, PlanArgs};
use crate::ops::{Context, Human, Silent};
use anyhow::Result;

/// The plan, and what deploy's preflight would refuse (then the error, exit 2, after the plan).
pub async fn plan_cmd(args: &PlanArgs) -> Result<()> {
    let place = crate::cli::options::place(&args.place)?;
    // Every bad value is refused before the connection (exit 2, the engine untouched).
    let (spec, target) = crate::cli::options::spec_and_target(&args.target.flags(), &args.spec)?;
    let target = crate::sut::Target::connect(&target).await?;
    let templates = load_templates(&args.spec)?;
    let p = crate::ops::deploy::plan(&Context::new(&target, &Silent), &spec, &templates, &place)
        .await?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&p.json())?);
    } else {
        for line in p.lines() {
            println!("{line}");
        }
    }
    match p.refused {
        Some(e) => Err(e.context("deploy would refuse this spec")),
        None => Ok(()),
    }
}

/// The deploy: a spinner on a terminal, plain lines otherwise (logs, CI), only notes with --json (stdout
/// is the outcome); its steps (the plan) on stdout, as before the operation existed.
pub async fn deploy(args: &DeployArgs) -> Result<bool> {
    let (spec, target, opts) = crate::cli::options::deploy(args)?;
    let target = crate::sut::Target::connect(&target).await?;
    let progress = Human::deploying(&spec.stack, args.json);
    let result = crate::ops::deploy::deploy(&Context::new(&target, &progress), &spec, &opts).await;
    drop(progress);
    let o = result?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&o.json(&spec, &target))?);
    } else {
        for line in o.lines() {
            println!("{line}");
        }
    }
    for line in o.error_lines() {
        eprintln!("{line}");
    }
    Ok(o.ok())
}
