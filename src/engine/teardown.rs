//! Remove what carries the stack's label, and only that: containers and network; volumes with --purge.

use super::observe::observe;
use anyhow::{Context, Result};
use bollard::query_parameters::{RemoveContainerOptionsBuilder, RemoveVolumeOptionsBuilder};
use bollard::Docker;
use serde::Serialize;

#[derive(Debug, Default, Serialize)]
pub struct Removed {
    pub containers: Vec<String>,
    pub networks: Vec<String>,
    pub volumes: Vec<String>,
    /// Volumes kept because --purge was not given.
    pub kept_volumes: Vec<String>,
}

pub async fn teardown(docker: &Docker, stack: &str, purge: bool) -> Result<Removed> {
    let found = observe(docker, stack).await?;
    // Remove in parallel: each force-remove stops its container first.
    let removals = found.containers.iter().map(|c| async move {
        docker
            .remove_container(
                &c.name,
                Some(
                    RemoveContainerOptionsBuilder::default()
                        .force(true)
                        .v(false)
                        .build(),
                ),
            )
            .await
            .with_context(|| format!("removing container {}", c.name))
    });
    for r in futures_util::future::join_all(removals).await {
        r?;
    }
    for name in &found.networks {
        docker
            .remove_network(name)
            .await
            .with_context(|| format!("removing network {name}"))?;
    }
    let mut removed = Removed {
        containers: found.containers.into_iter().map(|c| c.name).collect(),
        networks: found.networks,
        ..Default::default()
    };
    for v in found.volumes {
        if purge {
            docker
                .remove_volume(&v, Some(RemoveVolumeOptionsBuilder::default().build()))
                .await
                .with_context(|| format!("removing volume {v}"))?;
            removed.volumes.push(v);
        } else {
            removed.kept_volumes.push(v);
        }
    }
    Ok(removed)
}
