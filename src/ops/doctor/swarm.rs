//! doctor on a swarm: the manager lists the nodes, its services and overlay networks; every node is
//! connected on its own and read as one engine is (`facts_of`), with its clock and its link's MTU.

use super::{facts_of, failed_link, within};
use crate::sut::{Target, TargetSpec};
use anyhow::Result;
use exectl_core::doctor::facts::{Facts, Link};
use exectl_core::doctor::swarm::SwarmFacts;

/// A swarm's facts: every node's own (each over its own connection, all at once), its clock and link,
/// and the manager's services and overlay networks. Err: the manager's facts, when it did not answer.
pub(super) async fn gather(
    spec: &TargetSpec,
    stack: Option<&str>,
) -> Result<Result<SwarmFacts, Facts>> {
    use exectl_core::doctor::swarm::{Overlay, Service};
    let manager = match Target::connect_engine(spec).await {
        Ok(t) => t,
        Err(e) => return Ok(Err(Facts::unreachable(failed_link(true, &e)))),
    };
    let nodes = crate::sut::swarm::list_nodes(&manager.docker, &spec.describe()).await?;
    // The stack's app instances per node (their services are pinned by the node label).
    let mut placed: std::collections::BTreeMap<String, u64> = Default::default();
    if let Some(stack) = stack {
        for s in crate::engine::swarm::stack_services(&manager.docker, stack).await? {
            let labels = s.spec.and_then(|s| s.labels).unwrap_or_default();
            let app = labels
                .get(crate::engine::desired::LABEL_SERVICE)
                .is_some_and(|s| exectl_core::status::is_app(s));
            if let (true, Some(node)) = (app, labels.get(exectl_core::swarm::service::LABEL_NODE)) {
                *placed.entry(node.clone()).or_default() += 1;
            }
        }
    }
    let read = nodes.iter().map(|n| {
        let instances = stack.map(|_| placed.get(&n.hostname).copied().unwrap_or(0));
        node_facts(spec, n, instances)
    });
    let (nodes, services, overlays) = tokio::join!(
        futures_util::future::join_all(read),
        within(
            manager
                .docker
                .list_services(None::<bollard::query_parameters::ListServicesOptions>)
        ),
        within(
            manager.docker.list_networks(Some(
                bollard::query_parameters::ListNetworksOptionsBuilder::default()
                    .filters(&std::collections::HashMap::from([(
                        "driver",
                        vec!["overlay"]
                    )]))
                    .build(),
            ))
        ),
    );
    let services = services
        .and_then(|r| r.map_err(|e| e.to_string()))
        .map(|list| {
            list.into_iter()
                .map(|s| {
                    use bollard::models::{
                        EndpointPortConfigPublishModeEnum as Publish, EndpointSpecModeEnum as Mode,
                    };
                    let spec = s.spec.unwrap_or_default();
                    let endpoint = spec.endpoint_spec.unwrap_or_default();
                    Service {
                        name: spec.name.unwrap_or_default(),
                        // The engine's default is a VIP.
                        vip: !matches!(endpoint.mode, Some(Mode::DNSRR)),
                        ingress_ports: endpoint
                            .ports
                            .unwrap_or_default()
                            .into_iter()
                            .filter(|p| !matches!(p.publish_mode, Some(Publish::HOST)))
                            .filter_map(|p| p.published_port.and_then(|p| u32::try_from(p).ok()))
                            .collect(),
                    }
                })
                .collect()
        });
    let overlays = overlays
        .and_then(|r| r.map_err(|e| e.to_string()))
        .map(|list| {
            list.into_iter()
                .map(|n| Overlay {
                    name: n.name.unwrap_or_default(),
                    mtu: n
                        .options
                        .and_then(|o| o.get("com.docker.network.driver.mtu")?.parse().ok()),
                })
                .collect()
        });
    Ok(Ok(SwarmFacts {
        nodes,
        services,
        overlays,
    }))
}

/// One node: connected on its own, its facts as on one engine, then its clock (read against this
/// machine's, with the round trip it took) and its link's MTU in one host command.
async fn node_facts(
    spec: &TargetSpec,
    n: &exectl_core::swarm::Node,
    instances: Option<u64>,
) -> exectl_core::doctor::swarm::NodeFacts {
    use exectl_core::doctor::swarm::{Clock, NodeFacts};
    let mut out = NodeFacts {
        hostname: n.hostname.clone(),
        addr: n.addr.clone(),
        facts: Facts::unreachable(Link::Local),
        clock: Err("not reached".into()),
        link_mtu: Err("not reached".into()),
        instances,
    };
    let Some(node) = crate::sut::swarm::node_spec(spec, &n.addr) else {
        return out;
    };
    let target = match Target::connect(&node).await {
        Ok(t) => t,
        Err(e) => {
            out.facts = Facts::unreachable(failed_link(true, &e));
            return out;
        }
    };
    out.facts = facts_of(&target, &node).await;
    let script = exectl_core::scripts::facts::node_link(&n.addr);
    let before = std::time::SystemTime::now();
    let answer = within(target.host_shell(&script)).await;
    let after = std::time::SystemTime::now();
    match answer.and_then(|r| r.map_err(|e| format!("{e:#}"))) {
        Ok(text) => {
            let (now, mtu) = exectl_core::scripts::facts::parse_node_link(&text, &n.addr);
            let ns = |t: std::time::SystemTime| {
                t.duration_since(std::time::UNIX_EPOCH)
                    .map_or(0.0, |d| d.as_nanos() as f64)
            };
            out.clock = now.map(|now| Clock {
                offset_ms: (now as f64 - (ns(before) + ns(after)) / 2.0) / 1e6,
                rtt_ms: (ns(after) - ns(before)) / 1e6,
            });
            out.link_mtu = mtu;
        }
        Err(e) => {
            out.clock = Err(e.clone());
            out.link_mtu = Err(e);
        }
    }
    out
}
