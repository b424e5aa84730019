//! The client sockets open to a stack right now, read in its containers' network namespaces on their
//! hosts (`exectl_core::scripts::sockets`: the rule, and why it tells an app's ghosts from a client).
//! Engine API calls for the containers' addresses and PIDs, one host command per engine for the
//! sockets: the same locally, over SSH and on each node of a swarm.

use std::net::IpAddr;

use anyhow::Result;

use crate::sut::Target;
use exectl_core::scripts::sockets::{self, Netns};

/// How many client sockets are open to `stack`'s `services` (a service not running has none); Err when
/// a container's sockets could not be read (`sockets::clients`: no count is better than a wrong 0).
pub async fn count(target: &Target, stack: &str, services: &[String]) -> Result<u64> {
    // An instance of a stack with Redis holds its relay's connections for its life.
    let redis = services.iter().any(|s| s == "redis");
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
                pid,
                client_ports,
                app,
                always_connected: app && redis,
                gateways: nets.values().filter_map(|n| ip(&n.gateway)).collect(),
                sockets: None,
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
    sockets::clients(&netns, &internal).map_err(|why| {
        anyhow::anyhow!("the client sockets open to stack {stack} are unknown: {why}")
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shell::{HostShell, Local};

    /// Review of #36, H1: the host script run for real on this machine: a PID it cannot read (one
    /// that does not exist: as one hidden by hidepid, or of another PID namespace) is said unreadable,
    /// not read as no socket; this process's own namespace is read.
    #[test]
    fn the_script_says_a_pid_it_cannot_read() {
        let me = std::process::id() as i64;
        let gone = i32::MAX as i64;
        let pids = [me, gone];
        let out = Local.run(&sockets::established(&pids), None).unwrap();
        assert_eq!(out.code, 0, "{out:?}");
        let parts = sockets::parse_established(&out.stdout, &pids);
        assert!(parts[0].is_some(), "{}", out.stdout);
        assert_eq!(parts[1], None, "{}", out.stdout);
    }
}
