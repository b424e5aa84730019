//! `deploy` and `plan`: the spec's defaults fitted to the target (`Spec::fit`), the spec staged (secrets,
//! bundle, desired state), preflight (nothing is created before it passes), the lock, the bundle written
//! and uploaded, the plan applied, readiness waited for, the limits in effect read back, and the run
//! record written.

use super::{Context, Event};
use crate::engine::desired::Desired;
use crate::engine::{apply, limits, observe, preflight};
use crate::state::{runs, secrets};
use crate::sut::Target;
use anyhow::{bail, Result};
use exectl_core::error::UsageError;
use exectl_core::plan::{self, Plan};
use exectl_core::render::{self, Bundle, Templates};
use exectl_core::spec::{Fitted, Spec};
use serde::Serialize;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

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
pub(super) struct Staged<'a> {
    pub spec: &'a Spec,
    pub bundle: Bundle,
    pub secrets: secrets::Secrets,
    pub desired: Desired,
    /// The defaults of `spec` that were fitted to the target, for the run record.
    pub fitted: Vec<Fitted>,
}

pub(super) fn stage<'a>(
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

/// `spec` on `target`: the defaults the target cannot take lowered to what it allows (`Spec::fit`),
/// and each one that was. Bad input (exit 2) when a value given to nginx cannot fit the lowered nofile.
pub async fn fit(target: &Target, spec: &Spec) -> Result<(Spec, Vec<Fitted>)> {
    let offers = preflight::offers(target, spec).await?;
    Ok(spec.fit(&offers)?)
}

/// The defaults fitted, as lines for people (deploy's progress, plan's output).
pub fn fitted_lines(fitted: &[Fitted]) -> Vec<String> {
    if fitted.is_empty() {
        return Vec::new();
    }
    let mut lines =
        vec!["defaults fitted to the target (give a value to set it yourself):".to_string()];
    lines.extend(fitted.iter().map(|f| format!("  fitted   {f}")));
    lines
}

/// The plan for `spec` on `target`, and what deploy's preflight would refuse; changes nothing.
pub async fn plan(
    cx: &Context<'_>,
    spec: &Spec,
    templates: &Templates,
    place: &[exectl_core::swarm::PlaceRule],
) -> Result<PlanOutcome> {
    let target = cx.target;
    if let Some(swarm) = &target.swarm {
        return super::deploy_swarm::plan(target, swarm, spec, templates, place).await;
    }
    refuse_place(place)?;
    // A refusal (bad input) is reported after the plan; a failure to check at all is that failure. A
    // spec whose defaults cannot be fitted is the refusal deploy would stop at first: the plan shown is
    // the spec's as given.
    let usage = |e: anyhow::Error| match exectl_core::error::is_usage(&e) {
        true => Ok(e),
        false => Err(e),
    };
    let (spec, fitted, misfit) = match fit(target, spec).await {
        Ok((s, f)) => (s, f, None),
        Err(e) => (spec.clone(), Vec::new(), Some(usage(e)?)),
    };
    let p = stage(target, &spec, templates, fitted.clone())?;
    let observed = observe::observe(&target.docker, &spec.stack).await?;
    let refused = match misfit {
        Some(e) => Some(e),
        None => preflight::check(target, &spec, &p.desired, &observed)
            .await
            .err()
            .map(usage)
            .transpose()?,
    };
    let to_pull = preflight::missing_images(target, &images_of(&p.desired)).await;
    let plan = plan::plan(&p.desired, &observed).map_err(anyhow::Error::msg)?;
    Ok(PlanOutcome {
        spec,
        fitted,
        plan,
        to_pull,
        refused,
    })
}

/// Converge `target` on `spec`. Safe to interrupt: the next deploy observes what exists and converges.
pub async fn deploy(cx: &Context<'_>, spec: &Spec, opts: &DeployOptions) -> Result<DeployOutcome> {
    let (target, progress) = (cx.target, cx.progress);
    if let Some(swarm) = &target.swarm {
        return super::deploy_swarm::deploy(cx, swarm, spec, opts).await;
    }
    refuse_place(&opts.place)?;
    let started = Instant::now();
    let (spec, fitted) = fit(target, spec).await?;
    let spec = &spec;
    for line in fitted_lines(&fitted) {
        progress.event(Event::Step(&line));
    }
    let p = stage(target, spec, &opts.templates, fitted)?;
    let stack = spec.stack.as_str();

    // Preflight: nothing is created before these pass.
    let before = observe::observe(&target.docker, stack).await?;
    preflight::check(target, spec, &p.desired, &before).await?;
    if opts.load_images && !target.is_remote() {
        bail!(UsageError::new(
            "--load-images",
            "true",
            "the target is the local engine, which already has the local images",
            "drop --load-images (it sends images to a remote --target)",
        ));
    }
    let images = images_of(&p.desired);
    let loaded = if opts.load_images {
        preflight::send_images(target, &images, &|image| {
            progress.event(Event::Note(&format!(
                "sending image {image} to {}",
                target.describe()
            )))
        })
        .await?
    } else {
        Vec::new()
    };
    let pulled = preflight::images(target, &images).await?;

    let lock = cx.lock(stack, "exectl deploy", opts.break_lock).await?;
    secrets::save_if_absent(&target.stack_dir(stack), &p.secrets)?;
    crate::state::bundle::write(&p.bundle, &target.bundle_dir(stack))?;
    target.upload_bundle(stack, &p.bundle).await?;

    let observed = observe::observe(&target.docker, stack).await?;
    let plan = plan::plan(&p.desired, &observed).map_err(anyhow::Error::msg)?;
    progress.event(Event::Step(&format!(
        "deploying stack {stack} ({}) on {}",
        spec.describe(),
        target.describe()
    )));
    for line in plan_lines(&plan) {
        progress.event(Event::Step(&line));
    }
    let on_step = |e: apply::Event| {
        progress.event(Event::Service {
            service: &e.service,
            what: &e.what,
        })
    };
    let held = || lock.still_held();
    let apply::Applied { ready, restarts } = apply::apply(
        target,
        &p.desired,
        &plan,
        opts.wait_timeout,
        &on_step,
        &held,
    )
    .await?;
    let workers = spec.nginx.as_ref().map(|n| n.worker_processes);
    let limits = limits::read_back(target, &p.desired.services, workers).await?;
    let changed = plan.actions.iter().filter(|a| a.changes()).count();
    let seconds = started.elapsed().as_secs_f64();
    let run_id = record_run(target, &p, changed, seconds).await?;
    Ok(DeployOutcome {
        stack: stack.to_string(),
        run_id,
        plan,
        ready,
        restarts,
        pulled,
        loaded,
        limits,
        changed,
        seconds,
        fitted: p.fitted,
    })
}

/// `--place` means a swarm: on one engine it is bad input, not ignored.
fn refuse_place(place: &[exectl_core::swarm::PlaceRule]) -> Result<()> {
    match place.first() {
        None => Ok(()),
        Some(p) => bail!(UsageError::new(
            "--place",
            format!("{}={}", p.service, p.nodes.join(",")),
            "the target is one engine, not a swarm",
            "drop --place, or give --target swarm+ssh://USER@MANAGER",
        )),
    }
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

/// The run record a deploy of `spec` would write now (its defaults fitted to the target as deploy fits
/// them), without deploying anything: what `sweep` compares with the previous point's record before it
/// deploys the next point.
pub async fn would_record(
    target: &Target,
    spec: &Spec,
    templates: &Templates,
) -> Result<runs::Record> {
    let (spec, fitted) = fit(target, spec).await?;
    let p = stage(target, &spec, templates, fitted)?;
    record_of(target, &p, 0, 0.0).await
}

/// Write this deploy's run record; returns its id.
pub(super) async fn record_run(
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
async fn record_of(
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
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs();
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
