//! `exectl deploy` and `exectl plan`: render, preflight, converge the target's engine on the bundle.

use crate::cli::spec::{load_templates, spec_from};
use crate::cli::{DeployArgs, PlanArgs};
use crate::engine::desired::Desired;
use crate::engine::{apply, limits, observe, preflight};
use crate::sut::Target;
use exectl_core::plan::{self, Plan};
use exectl_core::render::{self, Bundle};
use exectl_core::spec::Spec;

use crate::state::{runs, secrets};
use anyhow::{bail, Result};
use serde_json::json;
use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::time::{Duration, Instant};

/// Everything deploy and plan share: the spec, its bundle and the desired state for a target.
struct Staged {
    spec: Spec,
    bundle: Bundle,
    secrets: secrets::Secrets,
    desired: Desired,
}

fn stage(
    file: exectl_core::spec::SpecInput,
    args: &crate::cli::spec::SpecArgs,
    target: &Target,
) -> Result<Staged> {
    let spec = spec_from(file, args)?;
    let templates = load_templates(args)?;
    let secrets = secrets::load_or_generate(&target.stack_dir(&spec.stack), false)?;
    let exectl_core::pipeline::Rendered { bundle, desired } = exectl_core::pipeline::desired_state(
        &spec,
        &secrets,
        &templates,
        &target.host_bundle_dir(&spec.stack),
    )?;
    Ok(Staged {
        spec,
        bundle,
        secrets,
        desired,
    })
}

fn print_plan(plan: &Plan) {
    if let Some(n) = &plan.create_network {
        println!("  create   network {n}");
    }
    for v in &plan.create_volumes {
        println!("  create   volume {v}");
    }
    for a in &plan.actions {
        println!("  {}", a.describe());
    }
}

/// The plan, and what deploy's preflight would refuse (then the error, exit 2, after the plan).
pub async fn plan_cmd(args: &PlanArgs) -> Result<()> {
    let (file, target) = super::connect_with_spec(&args.target, &args.spec).await?;
    let p = stage(file, &args.spec, &target)?;
    let observed = observe::observe(&target.docker, &p.spec.stack).await?;
    // A refusal (bad input) is shown after the plan; a failure to check at all is that failure.
    let refused = match preflight::check(&target, &p.spec, &p.desired, &observed).await {
        Ok(()) => None,
        Err(e) if exectl_core::error::is_usage(&e) => Some(e),
        Err(e) => return Err(e),
    };
    let to_pull = preflight::missing_images(&target, &images_of(&p.desired)).await;
    let plan = plan::plan(&p.desired, &observed).map_err(anyhow::Error::msg)?;
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&json!({
                "stack": p.spec.stack, "noop": plan.is_noop(), "plan": plan, "pull": to_pull,
                "refused": refused.as_ref().map(|e| format!("{e:#}")),
            }))?
        );
    } else {
        println!(
            "plan for stack {} ({}):",
            p.spec.stack,
            super::render::describe(&p.spec)
        );
        for image in &to_pull {
            println!("  pull     image {image} (not on the target)");
        }
        print_plan(&plan);
        if plan.is_noop() && refused.is_none() {
            println!("nothing to change");
        }
    }
    match refused {
        Some(e) => Err(e.context("deploy would refuse this spec")),
        None => Ok(()),
    }
}

/// Every image the stack's services use, once each.
fn images_of(desired: &Desired) -> Vec<String> {
    let mut images: Vec<String> = desired
        .services
        .iter()
        .map(|s| s.service.image.clone())
        .collect();
    images.sort();
    images.dedup();
    images
}

/// Progress lines: a spinner on a terminal, plain lines otherwise (logs, CI).
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

    fn event(&self, e: apply::Event) {
        let line = format!("{} {}: {}", self.stack, e.service, e.what);
        match &self.bar {
            Some(b) => {
                b.println(line);
                b.set_message(format!("deploying {}: last {}", self.stack, e.service));
            }
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

pub async fn deploy(args: &DeployArgs) -> Result<bool> {
    let started = Instant::now();
    let timeout = parse_timeout(&args.wait_timeout)?;
    let (file, target) = super::connect_with_spec(&args.target, &args.spec).await?;
    let p = stage(file, &args.spec, &target)?;
    let stack = p.spec.stack.clone();

    // Preflight: nothing is created before these pass.
    let before = observe::observe(&target.docker, &stack).await?;
    preflight::check(&target, &p.spec, &p.desired, &before).await?;
    if args.load_images && !target.is_remote() {
        bail!(exectl_core::error::UsageError::new(
            "--load-images",
            "true",
            "the target is the local engine, which already has the local images",
            "drop --load-images (it sends images to a remote --target)",
        ));
    }
    let images = images_of(&p.desired);
    let loaded = if args.load_images {
        preflight::send_images(&target, &images, !args.json).await?
    } else {
        Vec::new()
    };
    let pulled = preflight::images(&target, &images).await?;

    let lock =
        crate::engine::remote_lock::lock_stack(&target, &stack, "exectl deploy", args.break_lock)
            .await?;
    secrets::save_if_absent(&target.stack_dir(&stack), &p.secrets)?;
    crate::state::bundle::write(&p.bundle, &target.bundle_dir(&stack))?;
    target.upload_bundle(&stack, &p.bundle).await?;

    let observed = observe::observe(&target.docker, &stack).await?;
    let plan = plan::plan(&p.desired, &observed).map_err(anyhow::Error::msg)?;
    if !args.json {
        println!(
            "deploying stack {} ({}) on {}",
            stack,
            super::render::describe(&p.spec),
            target.describe()
        );
        print_plan(&plan);
    }
    let reporter = Reporter::new(&stack, args.json);
    let progress = |e: apply::Event| reporter.event(e);
    let held = || lock.still_held();
    let result = apply::apply(&target, &p.desired, &plan, timeout, &progress, &held).await;
    reporter.finish();
    let apply::Applied {
        ready: readied,
        restarts,
    } = result?;
    let workers = p.spec.nginx.as_ref().map(|n| n.worker_processes);
    let effective = limits::read_back(&target, &p.desired.services, workers).await?;
    let mismatched: Vec<_> = effective
        .iter()
        .filter(|e| !e.mismatches.is_empty())
        .collect();
    let restarted = restarts
        .iter()
        .map(|r| r.service.as_str())
        .collect::<Vec<_>>()
        .join(", ");
    let changed = plan.actions.iter().filter(|a| a.changes()).count();
    let elapsed = started.elapsed().as_secs_f64();
    let run_id = record_run(&target, &p, changed, elapsed).await?;
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&json!({
                "stack": stack,
                "run_id": run_id,
                "topology": p.spec.topology.name(),
                "ok": mismatched.is_empty() && restarts.is_empty(),
                "changed": changed,
                "noop": plan.is_noop(),
                "plan": plan,
                "ready": readied,
                "restarts": restarts,
                "pulled": pulled,
                "loaded": loaded,
                "target": target.describe(),
                "host_bundle": target.host_bundle_dir(&stack).display().to_string(),
                "limits": effective,
                "bundle": target.bundle_dir(&stack).display().to_string(),
                "seconds": elapsed,
            }))?
        );
    } else {
        if !restarts.is_empty() {
            println!(
                "stack {stack} NOT ready: {restarted} restarted during this deploy ({changed} change(s) in {elapsed:.1}s)"
            );
        } else if plan.is_noop() {
            println!("nothing changed: stack {stack} already matches the spec");
        } else {
            println!("stack {stack} ready: {changed} change(s) in {elapsed:.1}s");
        }
        println!("run id: {run_id}");
        for e in &effective {
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
    for r in &restarts {
        eprintln!(
            "error: {} {}: the stack is not ready over a crash (its last log lines are in the progress \
             above, or under `restarts` with --json); fix the cause, then deploy again (a restart before \
             a deploy does not count)",
            r.service,
            r.summary()
        );
    }
    Ok(mismatched.is_empty() && restarts.is_empty())
}

/// Write this deploy's run record; returns its id.
async fn record_run(target: &Target, p: &Staged, changed: usize, seconds: f64) -> Result<String> {
    let version = target.docker.version().await?;
    let info = target.docker.info().await?;
    let mut images = BTreeMap::new();
    for s in &p.desired.services {
        let digest = match target.docker.inspect_image(&s.service.image).await {
            Ok(i) => i
                .repo_digests
                .and_then(|d| d.first().cloned())
                .or(i.id)
                .unwrap_or_default(),
            Err(_) => "unknown".into(),
        };
        images.insert(
            s.name.clone(),
            runs::ImageRecord {
                reference: s.service.image.clone(),
                digest,
            },
        );
    }
    let dir = crate::state::runs_dir(&crate::state::root());
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs();
    let mut record = runs::Record {
        id: String::new(),
        created: crate::engine::lock::format_epoch(now),
        created_epoch: now,
        stack: p.spec.stack.clone(),
        knobs: {
            // Where it ran is a variable of the run like any knob.
            let mut k = runs::knobs(&p.spec);
            k.insert("target".into(), target.key.clone());
            k
        },
        spec: serde_json::to_value(&p.spec)?,
        files: p
            .bundle
            .files
            .iter()
            .filter(|f| f.path != render::RECORD)
            .map(|f| (f.path.to_string(), f.sha256()))
            .collect(),
        images,
        engine: runs::EngineRecord {
            version: version.version.unwrap_or_default(),
            api_version: version.api_version.unwrap_or_default(),
            kernel: version.kernel_version.unwrap_or_default(),
            os: info.operating_system.unwrap_or_default(),
            cpus: info.ncpu.unwrap_or(0),
            mem_bytes: info.mem_total.unwrap_or(0),
        },
        exectl: runs::ExectlRecord::current(),
        changed,
        seconds,
    };
    runs::save_next(&dir, &p.spec, &mut record)?;
    Ok(record.id)
}

fn opt(v: Option<u64>) -> String {
    v.map(|v| v.to_string()).unwrap_or_else(|| "?".into())
}

/// --wait-timeout: more than zero, at most a day.
fn parse_timeout(text: &str) -> Result<Duration, exectl_core::error::UsageError> {
    crate::cli::values::duration_flag(
        "--wait-timeout",
        text,
        Duration::from_millis(1),
        Duration::from_secs(86_400),
    )
}
