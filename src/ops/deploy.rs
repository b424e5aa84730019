//! `deploy` and `plan`: the spec's defaults fitted to the target (`Spec::fit`), the spec staged (secrets,
//! bundle, desired state: `deploy_stage`), preflight (nothing is created before it passes), the lock,
//! the bundle written and uploaded, the plan applied, readiness waited for, the limits in effect read
//! back, and the run record written (`deploy_stage::finish`). On one engine here; a swarm target's is
//! `deploy_swarm`, the other backend, with the same staging and end.

use super::deploy_stage::{apply_plan, finish, images_of, record_of, stage, Applied};
pub use super::deploy_stage::{DeployOptions, DeployOutcome, PlanOutcome};
use super::{Context, Event};
use crate::engine::{apply, limits, observe, preflight};
use crate::state::{runs, secrets};
use crate::sut::Target;
use anyhow::{bail, Result};
use exectl_core::error::UsageError;
use exectl_core::plan;
use exectl_core::render::Templates;
use exectl_core::spec::{Fitted, Spec};
use std::time::Instant;

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
    let heading = format!(
        "deploying stack {stack} ({}) on {}",
        spec.describe(),
        target.describe()
    );
    let apply::Applied { ready, restarts } =
        apply_plan(progress, &lock, &heading, &plan, async |on_step, held| {
            apply::apply(target, &p.desired, &plan, opts.wait_timeout, on_step, held).await
        })
        .await?;
    let workers = spec.nginx.as_ref().map(|n| n.worker_processes);
    let limits = limits::read_back(target, &p.desired.services, workers).await?;
    let applied = Applied {
        ready,
        restarts,
        pulled,
        loaded,
        limits,
    };
    finish(target, &p, plan, started, applied).await
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
