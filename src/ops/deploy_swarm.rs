//! `deploy` on a swarm target: the same staging (secrets, bundle, desired state) as on one host, then
//! the placement (`--place`, or the default), the swarm services, images on every node that runs one,
//! the lock, the bundle with its `stack.yaml`, the plan over the services, the apply, readiness and
//! limits read on each node, and the run record.

use super::deploy_stage::{
    apply_plan, finish, stage, Applied, DeployOptions, DeployOutcome, PlanOutcome, Staged,
};
use super::{Context, Event};
use crate::engine::{preflight, swarm as engine};
use crate::state::secrets;
use crate::sut::swarm::Swarm;
use crate::sut::Target;
use anyhow::Result;
use exectl_core::error::UsageError;
use exectl_core::plan;
use exectl_core::render::Templates;
use exectl_core::spec::Spec;
use exectl_core::swarm::{self, PlaceRule, SwarmService};
use std::collections::BTreeMap;
use std::time::Instant;

/// The bundle file that holds the stack as a swarm stack file.
pub const STACK_FILE: &str = "stack.yaml";

/// Converge the swarm behind `target` on `spec`.
pub async fn deploy(
    cx: &Context<'_>,
    nodes: &Swarm,
    spec: &Spec,
    opts: &DeployOptions,
) -> Result<DeployOutcome> {
    let (target, progress) = (cx.target, cx.progress);
    let started = Instant::now();
    let (p, services) = staged(target, nodes, spec, &opts.templates, &opts.place)?;
    let stack = spec.stack.as_str();

    // Preflight: every node that runs a service answers and has (or is sent) its images.
    let mut loaded = Vec::new();
    for n in &nodes.nodes {
        let mut images: Vec<String> = services
            .iter()
            .filter(|s| s.node == n.node.hostname)
            .map(|s| s.image.clone())
            .collect();
        images.sort();
        images.dedup();
        if images.is_empty() {
            continue;
        }
        let node = nodes.target(&n.node.hostname)?;
        if opts.load_images {
            let host = n.node.hostname.clone();
            let sent = preflight::send_images(node, &images, &|image| {
                progress.event(Event::Note(&format!(
                    "sending image {image} to node {host}"
                )))
            })
            .await?;
            loaded.extend(
                sent.into_iter()
                    .map(|i| format!("{i} → {}", n.node.hostname)),
            );
        }
        let missing = preflight::missing_images(node, &images).await;
        if let Some(image) = missing.first() {
            return Err(UsageError::new(
                "image",
                image,
                format!(
                    "node {} runs a service of it and does not have it",
                    n.node.hostname
                ),
                "add --load-images (sends it from this machine's engine), or load it there",
            )
            .into());
        }
    }

    let lock = cx.lock(stack, "exectl deploy", opts.break_lock).await?;
    secrets::save_if_absent(&target.stack_dir(stack), &p.secrets)?;
    let mut bundle = p.bundle.clone();
    bundle.files.push(exectl_core::render::BundleFile {
        path: STACK_FILE,
        bytes: swarm::stack::render(&p.desired, &services).into_bytes(),
        // Its services' environment holds the stack's secrets, resolved: private, as .env is.
        mode: 0o600,
    });
    crate::state::bundle::write(&bundle, &target.bundle_dir(stack))?;
    target.upload_bundle(stack, &bundle).await?;

    let wanted = with_swarm_hashes(&p.desired, &services);
    let observed = engine::observe(&target.docker, stack, &wanted).await?;
    let plan = plan::plan(&wanted, &observed).map_err(anyhow::Error::msg)?;
    let heading = format!(
        "deploying stack {stack} ({}) on {} ({} nodes)",
        spec.describe(),
        target.describe(),
        nodes.nodes.len()
    );
    let applied = apply_plan(progress, &lock, &heading, &plan, async |on_step, held| {
        engine::apply(
            target,
            &wanted,
            &services,
            &plan,
            opts.wait_timeout,
            on_step,
            held,
        )
        .await
    })
    .await?;
    let workers = spec.nginx.as_ref().map(|n| n.worker_processes);
    let limits = engine::read_back(target, nodes, &wanted, &services, workers).await?;
    let applied = Applied {
        ready: applied.ready,
        restarts: Vec::new(),
        pulled: Vec::new(),
        loaded,
        limits,
    };
    finish(target, &p, plan, started, applied).await
}

/// The spec staged as for one host, placed, and made swarm services.
fn staged<'a>(
    target: &Target,
    nodes: &Swarm,
    spec: &'a Spec,
    templates: &Templates,
    place: &[PlaceRule],
) -> Result<(Staged<'a>, Vec<SwarmService>)> {
    // No defaults fitted on a swarm: its preflight does not read the nodes' limits yet.
    let p = stage(target, spec, templates, Vec::new())?;
    let files: BTreeMap<String, Vec<u8>> = p
        .bundle
        .files
        .iter()
        .map(|f| (f.path.to_string(), f.bytes.clone()))
        .collect();
    let names: Vec<String> = p.desired.services.iter().map(|s| s.name.clone()).collect();
    let placement = swarm::place(&names, place, &nodes.core_nodes(), &nodes.home)?;
    let services = swarm::services(
        &p.desired,
        &placement,
        &target.host_bundle_dir(&spec.stack),
        &files,
    )?;
    Ok((p, services))
}

/// The plan on the swarm, and the images nodes lack (`image → node`); changes nothing.
pub async fn plan(
    target: &Target,
    nodes: &Swarm,
    spec: &Spec,
    templates: &Templates,
    place: &[PlaceRule],
) -> Result<PlanOutcome> {
    let (p, services) = staged(target, nodes, spec, templates, place)?;
    let mut to_pull = Vec::new();
    for n in &nodes.nodes {
        let images: Vec<String> = services
            .iter()
            .filter(|s| s.node == n.node.hostname)
            .map(|s| s.image.clone())
            .collect();
        if images.is_empty() {
            continue;
        }
        let node = nodes.target(&n.node.hostname)?;
        for image in preflight::missing_images(node, &images).await {
            to_pull.push(format!("{image} (node {})", n.node.hostname));
        }
    }
    to_pull.dedup();
    let wanted = with_swarm_hashes(&p.desired, &services);
    let observed = engine::observe(&target.docker, &spec.stack, &wanted).await?;
    let plan = plan::plan(&wanted, &observed).map_err(anyhow::Error::msg)?;
    Ok(PlanOutcome {
        spec: spec.clone(),
        fitted: Vec::new(),
        plan,
        to_pull,
        refused: None,
    })
}

/// The desired state with each service's hash replaced by its swarm hash (definition and node): what
/// the plan compares with the services' labels.
fn with_swarm_hashes(
    desired: &crate::engine::desired::Desired,
    services: &[SwarmService],
) -> crate::engine::desired::Desired {
    let mut d = desired.clone();
    for s in &mut d.services {
        if let Some(w) = services.iter().find(|w| w.service == s.name) {
            s.hash = w.hash.clone();
        }
    }
    d
}
