//! The client sockets open to a stack right now, read in its containers' network namespaces on their
//! hosts (`exectl_core::scripts::sockets`: the rule, and why it tells an app's ghosts from a client).
//! Engine API calls for the containers' addresses and PIDs, one host command per engine for the
//! sockets: the same locally, over SSH and on each node of a swarm.

use std::net::IpAddr;

use anyhow::Result;

use crate::sut::Target;
use exectl_core::scripts::sockets::{self, Netns};

/// How many client sockets are open to `stack`'s `services` (a service not running has none).
pub async fn count(target: &Target, stack: &str, services: &[String]) -> Result<u64> {
    // (its engine, its PID, what the count needs of it)
    let mut found: Vec<(&Target, i64, Netns)> = Vec::new();
    let mut internal: Vec<IpAddr> = Vec::new();
    for service in services {
        let (engine, container) = target.locate(stack, service).await?;
        let info = engine.docker.inspect_container(&container, None).await?;
        let state = info.state.clone().unwrap_or_default();
        let nets = info
            .network_settings
            .as_ref()
            .and_then(|n| n.networks.clone())
            .unwrap_or_default();
        let ip = |s: &Option<String>| s.as_deref().and_then(|s| s.parse::<IpAddr>().ok());
        internal.extend(nets.values().filter_map(|n| ip(&n.ip_address)));
        let Some(pid) = state.pid.filter(|p| state.running == Some(true) && *p > 0) else {
            continue;
        };
        let app = exectl_core::status::is_app(service);
        let mut client_ports: Vec<u16> = info
            .host_config
            .as_ref()
            .and_then(|h| h.port_bindings.as_ref())
            .map(|b| {
                b.keys()
                    .filter_map(|k| k.strip_suffix("/tcp")?.parse().ok())
                    .collect()
            })
            .unwrap_or_default();
        if app {
            client_ports.push(exectl_core::render::APP_PORT);
        }
        // The front door listens on 80 (compose/, the swarm's host-mode port): also where a swarm
        // task's inspect lists no binding.
        if matches!(service.as_str(), "nginx" | "traefik") && client_ports.is_empty() {
            client_ports.push(80);
        }
        if client_ports.is_empty() {
            continue;
        }
        found.push((
            engine,
            pid,
            Netns {
                service: service.clone(),
                client_ports,
                app,
                gateways: nets.values().filter_map(|n| ip(&n.gateway)).collect(),
                sockets: vec![],
            },
        ));
    }
    // One host command per engine for the sockets of all its containers.
    let mut done = vec![false; found.len()];
    for i in 0..found.len() {
        if done[i] {
            continue;
        }
        let engine = found[i].0;
        let same: Vec<usize> = (i..found.len())
            .filter(|j| std::ptr::eq(found[*j].0, engine))
            .collect();
        let pids: Vec<i64> = same.iter().map(|j| found[*j].1).collect();
        let out = engine.host_shell(&sockets::established(&pids)).await?;
        for (j, socks) in same.iter().zip(sockets::parse_established(&out, &pids)) {
            found[*j].2.sockets = socks;
            done[*j] = true;
        }
    }
    let netns: Vec<Netns> = found.into_iter().map(|(_, _, n)| n).collect();
    Ok(sockets::clients(&netns, &internal))
}
