//! The bundle's `stack.yaml`: the swarm services as a compose 3.8 stack file, for people to read and for
//! `docker stack deploy --resolve-image never -c stack.yaml NAME` to accept (exectl itself deploys
//! through the API, as on one host). Under `stack deploy`, services and configs take the stack's name as
//! a prefix; the layout, limits, placement and ports are the same.

use serde_json::{json, Map, Value};

use super::service::SwarmService;
use crate::desired::Desired;

/// The stack file, YAML.
pub fn render(desired: &Desired, services: &[SwarmService]) -> String {
    let net_key = "stack";
    let mut out_services = Map::new();
    let mut configs = Map::new();
    let mut volumes = Map::new();
    for s in services {
        let mut svc = Map::new();
        svc.insert("image".into(), json!(s.image));
        if let Some(c) = &s.command {
            svc.insert("command".into(), json!(c));
        }
        if !s.environment.is_empty() {
            svc.insert("environment".into(), json!(s.environment));
        }
        if let Some(h) = &s.healthcheck {
            svc.insert("healthcheck".into(), json!(h));
        }
        if !s.ulimits.is_empty() {
            svc.insert("ulimits".into(), json!(s.ulimits));
        }
        if !s.volumes.is_empty() {
            let list: Vec<Value> = s
                .volumes
                .iter()
                .map(|(source, target, ro)| {
                    let key = volume_key(&desired.stack, source);
                    volumes.insert(
                        key.clone(),
                        json!({"name": source, "labels": {crate::desired::LABEL_STACK: desired.stack}}),
                    );
                    json!({"type": "volume", "source": key, "target": target, "read_only": ro})
                })
                .collect();
            svc.insert("volumes".into(), Value::Array(list));
        }
        if !s.configs.is_empty() {
            let list: Vec<Value> = s
                .configs
                .iter()
                .map(|c| {
                    configs.insert(
                        c.name.clone(),
                        json!({"name": c.name, "file": format!("./{}", c.path)}),
                    );
                    json!({"source": c.name, "target": c.target})
                })
                .collect();
            svc.insert("configs".into(), Value::Array(list));
        }
        if !s.ports.is_empty() {
            let list: Vec<Value> = s
                .ports
                .iter()
                .map(|(published, target)| {
                    json!({"target": target, "published": published, "protocol": "tcp", "mode": "host"})
                })
                .collect();
            svc.insert("ports".into(), Value::Array(list));
        }
        svc.insert(
            "networks".into(),
            json!({ net_key: {"aliases": [s.service]} }),
        );
        let mut deploy = Map::new();
        deploy.insert("endpoint_mode".into(), json!("dnsrr"));
        deploy.insert("replicas".into(), json!(1));
        deploy.insert(
            "placement".into(),
            json!({"constraints": [super::service::constraint(&s.node)]}),
        );
        if let Some(l) = &s.limits {
            deploy.insert(
                "resources".into(),
                json!({"limits": {"cpus": l.cpus, "memory": l.memory}}),
            );
        }
        deploy.insert("restart_policy".into(), json!({"condition": "any"}));
        deploy.insert("labels".into(), json!(s.labels));
        svc.insert("deploy".into(), Value::Object(deploy));
        out_services.insert(s.service.clone(), Value::Object(svc));
    }
    let file = json!({
        "version": "3.8",
        "services": out_services,
        "networks": { net_key: {
            "name": desired.network,
            "driver": "overlay",
            "attachable": true,
            "labels": {crate::desired::LABEL_STACK: desired.stack},
        }},
        "volumes": volumes,
        "configs": configs,
    });
    let yaml = serde_norway::to_string(&file).expect("a JSON value is valid YAML");
    format!(
        "# exectl's swarm stack {} (what exectl deploys through the engine API; for people, and for\n# `docker stack deploy --resolve-image never -c stack.yaml {}`). It holds the stack's secrets in its\n# services' environment: keep it private (0600), as .env.\n{yaml}",
        desired.stack, desired.stack
    )
}

/// A volume's key in the file: its name without the stack's prefix (`app-data`).
fn volume_key(stack: &str, name: &str) -> String {
    name.strip_prefix(&format!("{}-", crate::naming::prefix(stack)))
        .unwrap_or(name)
        .to_string()
}
