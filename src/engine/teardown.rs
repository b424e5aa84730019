//! Remove what carries the stack's label, and only that: containers and network; volumes with --purge.

use super::observe::label_filter;
use anyhow::{Context, Result};
use bollard::query_parameters::{
    ListContainersOptionsBuilder, ListNetworksOptionsBuilder, ListVolumesOptionsBuilder,
    RemoveContainerOptionsBuilder, RemoveVolumeOptionsBuilder,
};
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
    let filters = label_filter(stack);
    let mut removed = Removed::default();
    let containers = docker
        .list_containers(Some(
            ListContainersOptionsBuilder::default()
                .all(true)
                .filters(&filters)
                .build(),
        ))
        .await?;
    // Remove in parallel: each force-remove stops its container first.
    let futures = containers
        .iter()
        .filter_map(|c| c.id.clone())
        .map(|id| async move {
            docker
                .remove_container(
                    &id,
                    Some(
                        RemoveContainerOptionsBuilder::default()
                            .force(true)
                            .v(false)
                            .build(),
                    ),
                )
                .await
                .with_context(|| format!("removing container {id}"))
        });
    for r in futures_util::future::join_all(futures).await {
        r?;
    }
    removed.containers = containers
        .iter()
        .filter_map(|c| {
            c.names
                .as_ref()?
                .first()
                .map(|n| n.trim_start_matches('/').to_string())
        })
        .collect();
    for n in docker
        .list_networks(Some(
            ListNetworksOptionsBuilder::default()
                .filters(&filters)
                .build(),
        ))
        .await?
    {
        if let Some(name) = n.name {
            docker
                .remove_network(&name)
                .await
                .with_context(|| format!("removing network {name}"))?;
            removed.networks.push(name);
        }
    }
    let volumes = docker
        .list_volumes(Some(
            ListVolumesOptionsBuilder::default()
                .filters(&filters)
                .build(),
        ))
        .await?
        .volumes
        .unwrap_or_default();
    for v in volumes {
        if purge {
            docker
                .remove_volume(&v.name, Some(RemoveVolumeOptionsBuilder::default().build()))
                .await
                .with_context(|| format!("removing volume {}", v.name))?;
            removed.volumes.push(v.name);
        } else {
            removed.kept_volumes.push(v.name);
        }
    }
    Ok(removed)
}
