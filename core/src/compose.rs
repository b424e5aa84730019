//! A typed model of the compose files exectl renders. Rendered compose.yaml is re-parsed into it (unknown
//! keys refused, so a template typo cannot pass unnoticed), and later deployed from it.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ComposeFile {
    /// The stack, as an extension field (docker-compose 1.x refuses a top-level `name`).
    #[serde(rename = "x-exectl-stack")]
    pub stack: String,
    pub services: BTreeMap<String, Service>,
    #[serde(default)]
    pub networks: BTreeMap<String, Network>,
    #[serde(default)]
    pub volumes: BTreeMap<String, Volume>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Service {
    pub image: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restart: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<Vec<String>>,
    #[serde(default)]
    pub environment: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub healthcheck: Option<Healthcheck>,
    #[serde(default)]
    pub ulimits: BTreeMap<String, Ulimit>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deploy: Option<Deploy>,
    #[serde(default)]
    pub ports: Vec<String>,
    #[serde(default)]
    pub volumes: Vec<String>,
    #[serde(default)]
    pub depends_on: BTreeMap<String, DependsOn>,
    /// Dependencies whose new container this service follows with a new one of its own, because it read
    /// their addresses when it started. Compose v2 says `depends_on: {restart: true}`, which docker-compose
    /// 1.x (the validator here) refuses: an extension field says it to both.
    #[serde(
        default,
        rename = "x-exectl-renew-with",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub renew_with: Vec<String>,
    #[serde(default)]
    pub networks: Vec<String>,
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Healthcheck {
    pub test: Vec<String>,
    pub interval: String,
    pub timeout: String,
    pub retries: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_period: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Ulimit {
    pub soft: u64,
    pub hard: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Deploy {
    pub resources: Resources,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Resources {
    pub limits: Limits,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Limits {
    pub cpus: String,
    pub memory: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DependsOn {
    pub condition: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Network {
    pub name: String,
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Volume {
    pub name: String,
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
}

/// Where a parse failed, as `line` (1-based) and message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseFault {
    pub line: Option<usize>,
    pub message: String,
}

pub fn parse(text: &str) -> Result<ComposeFile, ParseFault> {
    serde_norway::from_str(text).map_err(|e| ParseFault {
        line: e.location().map(|l| l.line()),
        message: e.to_string(),
    })
}

/// Check the references inside a parsed file: depends_on, networks and named volumes must exist, a
/// `service_healthy` dependency must have a healthcheck, and a service is renewed only with what it
/// depends on (so that it starts after them). Returns one message per fault.
pub fn check_references(file: &ComposeFile) -> Vec<String> {
    let mut faults = Vec::new();
    for (name, svc) in &file.services {
        for (dep, cond) in &svc.depends_on {
            match file.services.get(dep) {
                None => faults.push(format!("service {name} depends on unknown service {dep}")),
                Some(d) if cond.condition == "service_healthy" && d.healthcheck.is_none() => faults
                    .push(format!(
                        "service {name} waits for {dep} to be healthy, but {dep} has no healthcheck"
                    )),
                Some(_) => {}
            }
            if ![
                "service_healthy",
                "service_started",
                "service_completed_successfully",
            ]
            .contains(&cond.condition.as_str())
            {
                faults.push(format!(
                    "service {name}: unknown depends_on condition {}",
                    cond.condition
                ));
            }
        }
        for dep in &svc.renew_with {
            if !svc.depends_on.contains_key(dep) {
                faults.push(format!(
                    "service {name} is renewed with {dep}, which is not one of its depends_on"
                ));
            }
        }
        for net in &svc.networks {
            if !file.networks.contains_key(net) {
                faults.push(format!("service {name} uses undeclared network {net}"));
            }
        }
        for vol in &svc.volumes {
            let source = vol.split(':').next().unwrap_or("");
            let is_path = source.starts_with('.') || source.starts_with('/');
            if !is_path && !file.volumes.contains_key(source) {
                faults.push(format!("service {name} mounts undeclared volume {source}"));
            }
        }
    }
    faults
}

#[cfg(test)]
mod tests {
    use super::*;

    const TWO: &str = "x-exectl-stack: s
services:
  app:
    image: a
  lb:
    image: b
    depends_on:
      app:
        condition: service_started
    x-exectl-renew-with: [RENEWED]
";

    #[test]
    fn a_service_is_renewed_only_with_what_it_depends_on() {
        let ok = parse(&TWO.replace("RENEWED", "app")).unwrap();
        assert_eq!(ok.services["lb"].renew_with, ["app"]);
        assert!(check_references(&ok).is_empty());
        let bad = parse(&TWO.replace("RENEWED", "db")).unwrap();
        assert_eq!(
            check_references(&bad),
            ["service lb is renewed with db, which is not one of its depends_on"]
        );
    }
}
