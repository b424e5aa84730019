//! Read the objects carrying a stack's label from the engine, and where an inspected container answers.

use super::desired::{LABEL_HASH, LABEL_PARTS, LABEL_SERVICE, LABEL_STACK};
use anyhow::Result;
use bollard::query_parameters::{
    ListContainersOptionsBuilder, ListNetworksOptionsBuilder, ListVolumesOptionsBuilder,
};
use bollard::Docker;
use exectl_core::plan::{Observed, ObservedContainer};
use std::collections::HashMap;

/// A container's name as a listing gives it (`["/exectl-exe-app-1"]`), without the leading slash.
pub fn summary_name(names: Option<Vec<String>>) -> Option<String> {
    names
        .and_then(|n| n.into_iter().next())
        .map(|n| n.trim_start_matches('/').to_string())
}

/// An inspected container's address on its stack network (None before it has one).
pub fn address_of(info: &bollard::models::ContainerInspectResponse) -> Option<String> {
    info.network_settings
        .as_ref()
        .and_then(|n| n.networks.as_ref())
        .and_then(|nets| {
            nets.values()
                .find_map(|n| n.ip_address.clone().filter(|ip| !ip.is_empty()))
        })
}

pub fn label_filter(stack: &str) -> HashMap<String, Vec<String>> {
    HashMap::from([("label".to_string(), vec![format!("{LABEL_STACK}={stack}")])])
}

/// What the plan reads of a container (or a swarm service): its service, config hash and parts, from
/// its labels.
pub fn labelled(
    name: String,
    labels: &HashMap<String, String>,
    state: String,
) -> ObservedContainer {
    ObservedContainer {
        service: labels
            .get(LABEL_SERVICE)
            .cloned()
            .unwrap_or_else(|| name.clone()),
        hash: labels.get(LABEL_HASH).cloned().unwrap_or_default(),
        parts: labels
            .get(LABEL_PARTS)
            .and_then(|p| serde_json::from_str(p).ok())
            .unwrap_or_default(),
        state,
        name,
    }
}

pub async fn observe(docker: &Docker, stack: &str) -> Result<Observed> {
    let filters = label_filter(stack);
    let containers = docker
        .list_containers(Some(
            ListContainersOptionsBuilder::default()
                .all(true)
                .filters(&filters)
                .build(),
        ))
        .await?;
    let networks = docker
        .list_networks(Some(
            ListNetworksOptionsBuilder::default()
                .filters(&filters)
                .build(),
        ))
        .await?;
    let volumes = docker
        .list_volumes(Some(
            ListVolumesOptionsBuilder::default()
                .filters(&filters)
                .build(),
        ))
        .await?;
    let mut observed = Observed {
        containers: containers
            .into_iter()
            .map(|c| {
                labelled(
                    summary_name(c.names).unwrap_or_default(),
                    &c.labels.unwrap_or_default(),
                    c.state.map(|s| s.to_string()).unwrap_or_default(),
                )
            })
            .collect(),
        networks: networks.into_iter().filter_map(|n| n.name).collect(),
        volumes: volumes
            .volumes
            .unwrap_or_default()
            .into_iter()
            .map(|v| v.name)
            .collect(),
    };
    observed
        .containers
        .sort_by(|a, b| a.service.cmp(&b.service));
    Ok(observed)
}
