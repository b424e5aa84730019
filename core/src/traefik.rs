//! Typed models of the two Traefik files exectl renders, to re-parse them (unknown keys refused).

use serde::Deserialize;
use std::collections::BTreeMap;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct StaticConfig {
    pub global: Option<serde_norway::Value>,
    pub log: Option<serde_norway::Value>,
    pub entry_points: BTreeMap<String, EntryPoint>,
    pub ping: Option<serde_norway::Value>,
    pub providers: Providers,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct EntryPoint {
    pub address: String,
    pub transport: Option<serde_norway::Value>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Providers {
    pub file: FileProvider,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileProvider {
    pub filename: String,
    pub watch: Option<bool>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DynamicConfig {
    pub http: Http,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Http {
    pub routers: BTreeMap<String, Router>,
    pub services: BTreeMap<String, TraefikService>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Router {
    pub rule: String,
    pub entry_points: Vec<String>,
    pub service: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct TraefikService {
    pub load_balancer: LoadBalancer,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct LoadBalancer {
    pub pass_host_header: Option<bool>,
    pub servers: Vec<Server>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Server {
    pub url: String,
}

/// Cross-file checks: routers use declared entry points and services; every service has a server.
pub fn check(stat: &StaticConfig, dynamic: &DynamicConfig) -> Vec<String> {
    let mut faults = Vec::new();
    for (name, r) in &dynamic.http.routers {
        for ep in &r.entry_points {
            if !stat.entry_points.contains_key(ep) {
                faults.push(format!("router {name} uses undeclared entry point {ep}"));
            }
        }
        if !dynamic.http.services.contains_key(&r.service) {
            faults.push(format!(
                "router {name} uses undeclared service {}",
                r.service
            ));
        }
        if !r.rule.starts_with("Host(`") {
            faults.push(format!("router {name} has no Host rule: {}", r.rule));
        }
    }
    for (name, s) in &dynamic.http.services {
        if s.load_balancer.servers.is_empty() {
            faults.push(format!("service {name} has no server"));
        }
    }
    faults
}
