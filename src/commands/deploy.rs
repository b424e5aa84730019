//! `exectl deploy` and `exectl plan`: flags → options, connect, call the operation (`ops::deploy`), print
//! its outcome (human lines or `--json`).

use crate::cli::spec::load_templates;
use crate::cli::{DeployArgs, PlanArgs};
use crate::ops::deploy::{fitted_lines, plan_lines, DeployOutcome};
use crate::ops::{Event, Progress};
use anyhow::Result;
use serde_json::json;
use std::io::IsTerminal;
use std::time::Duration;

/// The plan, and what deploy's preflight would refuse (then the error, exit 2, after the plan).
pub async fn plan_cmd(args: &PlanArgs) -> Result<()> {
    let place = crate::cli::options::place(&args.place)?;
    // Every bad value is refused before the connection (exit 2, the engine untouched).
    let (spec, target) = crate::cli::options::spec_and_target(&args.target.flags(), &args.spec)?;
    let target = crate::sut::Target::connect(&target).await?;
    let templates = load_templates(&args.spec)?;
    let p = crate::ops::deploy::plan(
        &crate::ops::Context::new(&target, &crate::ops::Silent),
        &spec,
        &templates,
        &place,
    )
    .await?;
    // The spec deploy would deploy: its defaults fitted to the target.
    let spec = &p.spec;
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&json!({
                "stack": spec.stack, "noop": p.plan.is_noop(), "plan": p.plan, "pull": p.to_pull,
                "fitted": p.fitted,
                "refused": p.refused.as_ref().map(|e| format!("{e:#}")),
            }))?
        );
    } else {
        println!("plan for stack {} ({}):", spec.stack, spec.describe());
        for line in fitted_lines(&p.fitted) {
            println!("{line}");
        }
        for image in &p.to_pull {
            println!("  pull     image {image} (not on the target)");
        }
        for line in plan_lines(&p.plan) {
            println!("{line}");
        }
        if p.plan.is_noop() && p.refused.is_none() {
            println!("nothing to change");
        }
    }
    match p.refused {
        Some(e) => Err(e.context("deploy would refuse this spec")),
        None => Ok(()),
    }
}

/// Progress lines: a spinner on a terminal, plain lines otherwise (logs, CI); only notes with --json
/// (stdout is the outcome). The plan goes to stdout, as before the operation existed.
struct Reporter {
    bar: Option<indicatif::ProgressBar>,
    stack: String,
    quiet: bool,
}

impl Reporter {
    fn new(stack: &str, quiet: bool) -> Reporter {
        let bar = (!quiet && std::io::stderr().is_terminal()).then(|| {
            let b = indicatif::ProgressBar::new_spinner();
            b.enable_steady_tick(Duration::from_millis(120));
            b.set_message(format!("deploying {stack}"));
            b
        });
        Reporter {
            bar,
            stack: stack.to_string(),
            quiet,
        }
    }

    fn line(&self, line: &str) {
        match &self.bar {
            Some(b) => b.println(line),
            None if !self.quiet => eprintln!("{line}"),
            None => {}
        }
    }

    fn finish(&self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}

impl Progress for Reporter {
    fn event(&self, e: Event<'_>) {
        match e {
            Event::Step(line) if !self.quiet => match &self.bar {
                Some(b) => b.suspend(|| println!("{line}")),
                None => println!("{line}"),
            },
            Event::Service { service, what } => {
                self.line(&format!("{} {service}: {what}", self.stack));
                if let Some(b) = &self.bar {
                    b.set_message(format!("deploying {}: last {service}", self.stack));
                }
            }
            // A note is said even with --json (on stderr: stdout is the outcome).
            Event::Note(note) => match &self.bar {
                Some(b) => b.println(note),
                None => eprintln!("{note}"),
            },
            Event::Step(_) | Event::Count { .. } => {}
        }
    }
}

pub async fn deploy(args: &DeployArgs) -> Result<bool> {
    let (spec, target, opts) = crate::cli::options::deploy(args)?;
    let target = crate::sut::Target::connect(&target).await?;
    let reporter = Reporter::new(&spec.stack, args.json);
    let result =
        crate::ops::deploy::deploy(&crate::ops::Context::new(&target, &reporter), &spec, &opts)
            .await;
    reporter.finish();
    let o = result?;
    let stack = &o.stack;
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&json!({
                "stack": stack,
                "run_id": o.run_id,
                "topology": spec.topology.name(),
                "ok": o.ok(),
                "changed": o.changed,
                "noop": o.plan.is_noop(),
                "plan": o.plan,
                "ready": o.ready,
                "restarts": o.restarts,
                "pulled": o.pulled,
                "loaded": o.loaded,
                "target": target.describe(),
                "host_bundle": target.host_bundle_dir(stack).display().to_string(),
                "limits": o.limits,
                "bundle": target.bundle_dir(stack).display().to_string(),
                "seconds": o.seconds,
                "fitted": o.fitted,
            }))?
        );
    } else {
        print_outcome(&o);
    }
    print_errors(&o);
    Ok(o.ok())
}

fn print_outcome(o: &DeployOutcome) {
    let (stack, changed, elapsed) = (&o.stack, o.changed, o.seconds);
    let restarted = o
        .restarts
        .iter()
        .map(|r| r.service.as_str())
        .collect::<Vec<_>>()
        .join(", ");
    if !o.restarts.is_empty() {
        println!(
            "stack {stack} NOT ready: {restarted} restarted during this deploy ({changed} change(s) in {elapsed:.1}s)"
        );
    } else if o.plan.is_noop() {
        println!("nothing changed: stack {stack} already matches the spec");
    } else {
        println!("stack {stack} ready: {changed} change(s) in {elapsed:.1}s");
    }
    println!("run id: {}", o.run_id);
    for e in &o.limits {
        let state = if e.mismatches.is_empty() {
            "ok"
        } else {
            "MISMATCH"
        };
        let workers = e
            .nginx_workers
            .map(|n| format!(" workers {n}"))
            .unwrap_or_default();
        println!(
            "  limits {:<9} nofile {}/{} cpus {} memory {}{workers} {state} {}",
            e.service,
            opt(e.nofile_soft),
            opt(e.nofile_hard),
            e.cpus
                .map(|c| format!("{c}"))
                .unwrap_or_else(|| "unlimited".into()),
            e.memory
                .map(|m| format!("{}m", m >> 20))
                .unwrap_or_else(|| "unlimited".into()),
            e.mismatches.join("; ")
        );
    }
}

fn print_errors(o: &DeployOutcome) {
    let mismatched = o.mismatched();
    let restarts = &o.restarts;
    if !mismatched.is_empty() {
        eprintln!(
            "error: limits in effect differ from the spec in {}",
            mismatched
                .iter()
                .map(|e| e.service.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    for r in restarts {
        eprintln!(
            "error: {} {}: the stack is not ready over a crash (its last log lines are in the progress \
             above, or under `restarts` with --json); fix the cause, then deploy again (a restart before \
             a deploy does not count)",
            r.service,
            r.summary()
        );
    }
}

fn opt(v: Option<u64>) -> String {
    v.map(|v| v.to_string()).unwrap_or_else(|| "?".into())
}
