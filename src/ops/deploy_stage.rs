//! What every deploy shares, on one engine or on a swarm (`deploy`, `deploy_swarm`: the backends): its
//! options and outcome, the spec staged (secrets, bundle, desired state), the plan as lines, and the
//! end — what changed, how long it took, the run record, the outcome (`finish`).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::Result;
use serde::Serialize;

use super::{Event, Progress};
use crate::engine::desired::Desired;
use crate::engine::remote_lock::StackGuard;
use crate::engine::{apply, wait::Held};
use crate::state::{runs, secrets};
use crate::sut::Target;
use exectl_core::plan::Plan;
use exectl_core::render::{self, Bundle, Templates};
use exectl_core::spec::{Fitted, Spec};

/// How to deploy, besides the spec.
#[derive(Debug, Clone)]
pub struct DeployOptions {
    /// The templates to render (the embedded ones, or with `--templates` overrides).
    pub templates: Templates,
    /// How long to wait for every service to be ready.
    pub wait_timeout: Duration,
    /// Send the images the stack uses to a remote target first (`--load-images`).
    pub load_images: bool,
    /// Take the stack's lock even from another holder (`--break-lock`).
    pub break_lock: bool,
    /// On a swarm target, where services go (`--place SERVICE=NODE[,NODE...]`); the default otherwise.
    pub place: Vec<exectl_core::swarm::PlaceRule>,
}

impl DeployOptions {
    pub const DEFAULT_WAIT: Duration = Duration::from_secs(300);

    pub fn new(templates: Templates) -> DeployOptions {
        DeployOptions {
            templates,
            wait_timeout: Self::DEFAULT_WAIT,
            load_images: false,
            break_lock: false,
            place: Vec::new(),
        }
    }
}

/// What a deploy did. `ok()` when every service is ready, none restarted and every limit is in effect.
#[derive(Debug, Serialize)]
pub struct DeployOutcome {
    pub stack: String,
    pub run_id: String,
    pub plan: Plan,
    pub ready: Vec<exectl_core::readiness::Ready>,
    pub restarts: Vec<exectl_core::readiness::Restart>,
    pub pulled: Vec<String>,
    pub loaded: Vec<String>,
    pub limits: Vec<crate::shell::scripts::limits::Effective>,
    pub changed: usize,
    pub seconds: f64,
    /// The defaults lowered to what the target allows (also in the run record).
    pub fitted: Vec<Fitted>,
}

impl DeployOutcome {
    pub fn ok(&self) -> bool {
        self.restarts.is_empty() && self.mismatched().is_empty()
    }

    /// The services whose limits in effect differ from the spec.
    pub fn mismatched(&self) -> Vec<&crate::shell::scripts::limits::Effective> {
        self.limits
            .iter()
            .filter(|e| !e.mismatches.is_empty())
            .collect()
    }
}

/// What `plan` found: the plan, the images the target lacks, and what deploy's preflight would refuse.
#[derive(Debug)]
pub struct PlanOutcome {
    /// The spec deploy would deploy: its defaults fitted to the target.
    pub spec: Spec,
    /// The defaults lowered to what the target allows.
    pub fitted: Vec<Fitted>,
    pub plan: Plan,
    pub to_pull: Vec<String>,
    /// Bad input deploy would refuse (exit 2), said after the plan.
    pub refused: Option<anyhow::Error>,
}

/// Everything deploy and plan share: the spec, its bundle and the desired state for a target.
pub struct Staged<'a> {
    pub spec: &'a Spec,
    pub bundle: Bundle,
    pub secrets: secrets::Secrets,
    pub desired: Desired,
    /// The defaults of `spec` that were fitted to the target, for the run record.
    pub fitted: Vec<Fitted>,
}

pub fn stage<'a>(
    target: &Target,
    spec: &'a Spec,
    templates: &Templates,
    fitted: Vec<Fitted>,
) -> Result<Staged<'a>> {
    let secrets = secrets::load_or_generate(&target.stack_dir(&spec.stack), false)?;
    let exectl_core::pipeline::Rendered { bundle, desired } = exectl_core::pipeline::desired_state(
        spec,
        &secrets,
        templates,
        &target.host_bundle_dir(&spec.stack),
    )?;
    Ok(Staged {
        spec,
        bundle,
        secrets,
        desired,
        fitted,
    })
}

/// The plan as lines for people: what is created, and each action.
pub fn plan_lines(plan: &Plan) -> Vec<String> {
    let mut lines = Vec::new();
    if let Some(n) = &plan.create_network {
        lines.push(format!("  create   network {n}"));
    }
    for v in &plan.create_volumes {
        lines.push(format!("  create   volume {v}"));
    }
    for a in &plan.actions {
        lines.push(format!("  {}", a.describe()));
    }
    lines
}

/// Say the plan under `heading`, then apply it with `apply` (one engine's or a swarm's), given what
/// both report and check between their steps: each service's step, said; the stack's lock, still held.
pub async fn apply_plan<T>(
    progress: &dyn Progress,
    lock: &StackGuard,
    heading: &str,
    plan: &Plan,
    apply: impl AsyncFnOnce(apply::Progress<'_>, Held<'_>) -> Result<T>,
) -> Result<T> {
    progress.event(Event::Step(heading));
    for line in plan_lines(plan) {
        progress.event(Event::Step(&line));
    }
    let on_step = |e: apply::Event| {
        progress.event(Event::Service {
            service: &e.service,
            what: &e.what,
        })
    };
    let held = || lock.still_held();
    apply(&on_step, &held).await
}

/// Every image the stack's services use, once each.
pub fn images_of(desired: &Desired) -> Vec<String> {
    let mut images: Vec<String> = desired
        .services
        .iter()
        .map(|s| s.service.image.clone())
        .collect();
    images.sort();
    images.dedup();
    images
}

/// What a backend's apply and read-back gave.
pub struct Applied {
    pub ready: Vec<exectl_core::readiness::Ready>,
    pub restarts: Vec<exectl_core::readiness::Restart>,
    pub pulled: Vec<String>,
    pub loaded: Vec<String>,
    pub limits: Vec<crate::shell::scripts::limits::Effective>,
}

/// The end of every deploy: what the plan changed, how long it took (from `started`), the run record
/// written, and the outcome.
pub async fn finish(
    target: &Target,
    p: &Staged<'_>,
    plan: Plan,
    started: Instant,
    a: Applied,
) -> Result<DeployOutcome> {
    let changed = plan.actions.iter().filter(|a| a.changes()).count();
    let seconds = started.elapsed().as_secs_f64();
    let run_id = record_run(target, p, changed, seconds).await?;
    Ok(DeployOutcome {
        stack: p.spec.stack.clone(),
        run_id,
        plan,
        ready: a.ready,
        restarts: a.restarts,
        pulled: a.pulled,
        loaded: a.loaded,
        limits: a.limits,
        changed,
        seconds,
        fitted: p.fitted.clone(),
    })
}

/// Write this deploy's run record; returns its id.
async fn record_run(
    target: &Target,
    p: &Staged<'_>,
    changed: usize,
    seconds: f64,
) -> Result<String> {
    let mut record = record_of(target, p, changed, seconds).await?;
    let dir = crate::state::runs_dir(&crate::state::root());
    runs::save_next(&dir, p.spec, &mut record)?;
    Ok(record.id)
}

/// The record of a deploy of `p` (its id not given yet): knobs, files, image digests on the target,
/// the engine and exectl.
pub async fn record_of(
    target: &Target,
    p: &Staged<'_>,
    changed: usize,
    seconds: f64,
) -> Result<runs::Record> {
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
    let now = crate::clock::unix_s();
    Ok(runs::Record {
        id: String::new(),
        created: crate::engine::lock::format_epoch(now),
        created_epoch: now,
        stack: p.spec.stack.clone(),
        knobs: {
            // Where it ran is a variable of the run like any knob.
            let mut k = runs::knobs(p.spec);
            k.insert("target".into(), target.key.clone());
            k
        },
        spec: serde_json::to_value(p.spec)?,
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
        fitted: p.fitted.clone(),
    })
}
