//! `status` on a swarm: each service's task found through the manager, then read on the node that runs
//! it (state, health, cgroup CPU and memory, limits), and each instance's own counts asked at its task's
//! address on the node's `docker_gwbridge` (an overlay address is not reachable from a node's host; the
//! gateway bridge is), through that node's SSH. A node that does not answer is named, with its services.

use super::{
    instance_info, service_status, unanswered, with_cgroup_reads, Deployed, PROBE_TIMEOUTS,
};
use crate::engine::desired::LABEL_SERVICE;
use crate::sut::swarm::{running_tasks, Swarm};
use crate::sut::Target;
use anyhow::{Context, Result};
use bollard::query_parameters::InspectNetworkOptions;
use exectl_core::status::{self as report, InstanceStatus, Report, ServiceStatus};
use exectl_core::swarm::service::LABEL_NODE;
use std::collections::HashMap;

/// The network every swarm task also joins on its node, reachable from the node's host.
const GATEWAY_BRIDGE: &str = "docker_gwbridge";

struct Found {
    service: String,
    node: String,
    /// The running task's container, if one runs.
    container: Option<String>,
}

pub async fn observe_swarm(
    target: &Target,
    swarm: &Swarm,
    stack: &str,
    deployed: &Deployed,
) -> Result<Report> {
    let services = crate::engine::swarm::stack_services(&target.docker, stack).await?;
    let tasks = running_tasks(&target.docker, stack).await?;
    let mut found: Vec<Found> = services
        .into_iter()
        .filter_map(|s| {
            let id = s.id?;
            let labels = s.spec?.labels.unwrap_or_default();
            let task = tasks.iter().find(|t| t.service_id == id);
            Some(Found {
                service: labels.get(LABEL_SERVICE).cloned()?,
                // Where it runs; else where it is pinned.
                node: task
                    .and_then(|t| swarm.by_id(&t.node_id))
                    .map(|n| n.node.hostname.clone())
                    .or_else(|| labels.get(LABEL_NODE).cloned())
                    .unwrap_or_default(),
                container: task.map(|t| t.container_id.clone()),
            })
        })
        .collect();
    found.sort_by(|a, b| a.service.cmp(&b.service));

    let client = crate::app::Client::new(2, PROBE_TIMEOUTS);
    let token = tokio::sync::OnceCell::new();
    let mut statuses = Vec::new();
    let mut instances = Vec::new();
    for n in &swarm.nodes {
        let here: Vec<&Found> = found.iter().filter(|f| f.node == n.node.hostname).collect();
        if here.is_empty() {
            continue;
        }
        let node = match &n.target {
            Ok(t) => t,
            Err(why) => {
                let why = format!(
                    "node {} ({}) does not answer: {why}",
                    n.node.hostname, n.node.addr
                );
                for f in here {
                    statuses.push(absent(f, "unreachable", &why));
                    if report::is_app(&f.service) {
                        instances.push(InstanceStatus {
                            error: Some(why.clone()),
                            node: Some(f.node.clone()),
                            ..unanswered(&f.service)
                        });
                    }
                }
                continue;
            }
        };
        let bridge = gateway_addresses(node).await.unwrap_or_default();
        let mut inspected = Vec::new();
        for f in &here {
            let Some(container) = &f.container else {
                statuses.push(absent(f, "not running", "no running task"));
                continue;
            };
            let (mut s, pid) = service_status(&node.docker, container, &f.service).await?;
            s.node = Some(f.node.clone());
            inspected.push((s, pid));
        }
        statuses.extend(with_cgroup_reads(node, inspected).await);
        for f in here.iter().filter(|f| report::is_app(&f.service)) {
            let mut i = match f.container.as_ref().and_then(|c| bridge.get(c)) {
                Some(ip) => match node.reach(ip, exectl_core::render::APP_PORT).await {
                    Ok(addr) => {
                        let ep = crate::app::Endpoint::at(addr, None);
                        instance_info(&client, &ep, &f.service, deployed, &token).await
                    }
                    Err(e) => InstanceStatus {
                        error: Some(format!("{e:#}")),
                        ..unanswered(&f.service)
                    },
                },
                None => InstanceStatus {
                    error: Some(format!(
                        "no running task with an address on {GATEWAY_BRIDGE} of {}",
                        f.node
                    )),
                    ..unanswered(&f.service)
                },
            };
            i.node = Some(f.node.clone());
            instances.push(i);
        }
    }
    // Services pinned to a node the manager no longer lists.
    for f in found
        .iter()
        .filter(|f| !swarm.nodes.iter().any(|n| n.node.hostname == f.node))
    {
        statuses.push(absent(f, "unplaced", "its node is not in the swarm"));
    }
    statuses.sort_by(|a, b| a.name.cmp(&b.name));
    instances.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(Report {
        stack: stack.to_string(),
        topology: deployed.topology.clone(),
        lb_algorithm: deployed.lb_algorithm.clone(),
        expected: deployed.services.clone(),
        services: statuses,
        instances,
        total_connections: 0,
        warnings: vec![],
        problems: vec![],
        verdict: String::new(),
    })
}

/// A service with nothing to read: its state says why.
fn absent(f: &Found, state: &str, why: &str) -> ServiceStatus {
    ServiceStatus {
        name: f.service.clone(),
        container: why.to_string(),
        state: state.to_string(),
        health: "unknown".into(),
        image: String::new(),
        digest: String::new(),
        uptime_s: None,
        restarts: 0,
        cpu_percent: None,
        mem_bytes: None,
        mem_usage_bytes: None,
        mem_limit_bytes: None,
        nofile: None,
        node: Some(f.node.clone()),
    }
}

/// Container id → its address on the node's gateway bridge.
pub(crate) async fn gateway_addresses(node: &Target) -> Result<HashMap<String, String>> {
    let net = node
        .docker
        .inspect_network(GATEWAY_BRIDGE, None::<InspectNetworkOptions>)
        .await
        .with_context(|| format!("inspecting {GATEWAY_BRIDGE}"))?;
    Ok(net
        .containers
        .unwrap_or_default()
        .into_iter()
        .filter_map(|(id, c)| {
            let ip = c.ipv4_address?;
            Some((id, ip.split('/').next()?.to_string()))
        })
        .collect())
}
