//! A stack's desired services as swarm services, pure: the same definitions and config hashes as on one
//! host (`desired`), plus the node each is pinned to. What differs on a swarm, and why:
//! - A bundle file a service mounts (nginx.conf) becomes a swarm config, named by its content's hash:
//!   the node that runs the task need not hold the bundle, and a changed file is a new config.
//! - Named volumes are the node's own (a swarm has no shared volume driver here).
//! - Endpoint mode dnsrr and the LB's port published in host mode on its node: no VIP, no ingress mesh.
//! - The service's own name on the overlay is its compose name (`app-1`, `postgres`), as a network alias,
//!   so the rendered nginx.conf and environment work unchanged.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{bail, Context, Result};
use serde::Serialize;
use sha2::{Digest, Sha256};

use super::placement::Placement;
use crate::compose::{Healthcheck, Limits, Ulimit};
use crate::desired::{Desired, DesiredService, LABEL_HASH, LABEL_PARTS};

/// The node a service is pinned to, as a label on the service (status and teardown read it back).
pub const LABEL_NODE: &str = "exectl.node";

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SwarmService {
    /// The swarm service's name: `exectl-STACK-SERVICE`, as the container's on one host.
    pub name: String,
    /// The compose service (`app-1`), its alias on the overlay.
    pub service: String,
    /// The hostname of the node it is pinned to.
    pub node: String,
    pub image: String,
    pub command: Option<Vec<String>>,
    pub environment: BTreeMap<String, String>,
    pub healthcheck: Option<Healthcheck>,
    pub ulimits: BTreeMap<String, Ulimit>,
    pub limits: Option<Limits>,
    /// Named volumes: (the volume's name, the path in the container, read-only).
    pub volumes: Vec<(String, String, bool)>,
    pub configs: Vec<ConfigMount>,
    /// Host-mode published ports: (on the node, in the container).
    pub ports: Vec<(u16, u16)>,
    /// The service's labels, its config hash and parts among them.
    pub labels: BTreeMap<String, String>,
    /// The desired hash and the node together: moving a service is a change.
    pub hash: String,
    /// Services to be running (true: healthy) before this one starts, by compose name.
    pub depends_on: Vec<(String, bool)>,
}

/// A bundle file given to a task as a swarm config.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ConfigMount {
    /// `exectl-STACK-SERVICE-FILE-SHA8`: configs cannot change, so a new content is a new name.
    pub name: String,
    /// The file in the bundle.
    pub path: String,
    /// The path in the container.
    pub target: String,
    pub data: Vec<u8>,
}

/// Every service of `desired` as a swarm service, in start order. `files` are the bundle's (relative
/// path → contents), as `desired::desired` got them; `bundle_dir` is where `desired` rooted them.
pub fn services(
    desired: &Desired,
    placement: &Placement,
    bundle_dir: &Path,
    files: &BTreeMap<String, Vec<u8>>,
) -> Result<Vec<SwarmService>> {
    desired
        .services
        .iter()
        .map(|s| one(desired, s, placement, bundle_dir, files))
        .collect()
}

fn one(
    desired: &Desired,
    s: &DesiredService,
    placement: &Placement,
    bundle_dir: &Path,
    files: &BTreeMap<String, Vec<u8>>,
) -> Result<SwarmService> {
    let svc = &s.service;
    let Some(node) = placement.node_of(&s.name) else {
        bail!("service {} has no node in the placement", s.name);
    };
    let mut volumes = Vec::new();
    let mut configs = Vec::new();
    for v in &svc.volumes {
        let mut fields = v.split(':');
        let (source, target) = (fields.next().unwrap_or(""), fields.next().unwrap_or(""));
        let read_only = fields.next() == Some("ro");
        if target.is_empty() {
            bail!("mount {v:?} of {} has no target", s.name);
        }
        match Path::new(source).strip_prefix(bundle_dir) {
            Ok(rel) => {
                let rel = rel.to_string_lossy().to_string();
                let below = format!("{rel}/");
                let mut found = false;
                for (path, data) in files {
                    let inner = if *path == rel {
                        Some("")
                    } else {
                        path.strip_prefix(&below)
                    };
                    let Some(inner) = inner else { continue };
                    found = true;
                    let target = match inner {
                        "" => target.to_string(),
                        inner => format!("{}/{inner}", target.trim_end_matches('/')),
                    };
                    configs.push(ConfigMount {
                        name: config_name(&desired.stack, &s.name, path, data),
                        path: path.clone(),
                        target,
                        data: data.clone(),
                    });
                }
                if !found {
                    bail!("{} mounts {rel}, which the bundle does not hold", s.name);
                }
            }
            Err(_) if source.starts_with('/') => {
                bail!(
                    "{} bind-mounts {source}, a path on one host: a swarm task may run on any node",
                    s.name
                )
            }
            Err(_) => volumes.push((source.to_string(), target.to_string(), read_only)),
        }
    }
    let ports = svc
        .ports
        .iter()
        .map(|p| {
            let (host, container) = p
                .split_once(':')
                .with_context(|| format!("port {p:?} of {} is not HOST:CONTAINER", s.name))?;
            let port = |t: &str| {
                t.parse::<u16>()
                    .with_context(|| format!("port {p:?} of {}", s.name))
            };
            Ok((port(host)?, port(container)?))
        })
        .collect::<Result<Vec<_>>>()?;
    let hash = {
        let digest = Sha256::digest(format!("{}\n{node}", s.hash));
        hex::encode(&digest[..6])
    };
    let mut labels = svc.labels.clone();
    labels.insert(LABEL_HASH.into(), hash.clone());
    labels.insert(LABEL_PARTS.into(), serde_json::to_string(&s.parts)?);
    labels.insert(LABEL_NODE.into(), node.to_string());
    Ok(SwarmService {
        name: s.container_name.clone(),
        service: s.name.clone(),
        node: node.to_string(),
        image: svc.image.clone(),
        command: svc.command.clone(),
        environment: svc.environment.clone(),
        healthcheck: svc.healthcheck.clone(),
        ulimits: svc.ulimits.clone(),
        limits: svc.deploy.as_ref().map(|d| d.resources.limits.clone()),
        volumes,
        configs,
        ports,
        labels,
        hash,
        depends_on: s.depends_on.clone(),
    })
}

/// The placement constraint that pins a service to its node.
pub fn constraint(hostname: &str) -> String {
    format!("node.hostname == {hostname}")
}

/// A config's name: the stack, the service, the file and its content's hash (a swarm config is
/// immutable, so the name must change with the content). Names are at most 64 characters.
fn config_name(stack: &str, service: &str, path: &str, data: &[u8]) -> String {
    let slug: String = path
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    let sha = hex::encode(&Sha256::digest(data)[..4]);
    let mut name = format!("{}-{service}-{slug}", crate::naming::prefix(stack));
    name.truncate(64 - 9);
    format!("{name}-{sha}")
}
