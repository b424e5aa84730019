//! Desired state, pure: the parsed compose file, the stack's .env and the bundle's files → one container
//! definition per service, each with a config hash that changes exactly when its container must be
//! recreated (its definition, or a file it mounts).

use crate::compose::{ComposeFile, Service};
use crate::error::UsageError;
use anyhow::{bail, Result};
use serde::Serialize;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::path::Path;

pub const LABEL_STACK: &str = "exectl.stack";
pub const LABEL_SERVICE: &str = "exectl.service";
pub const LABEL_HASH: &str = "exectl.config-hash";
/// Short hashes of the parts of a definition, so a recreate can say what changed.
pub const LABEL_PARTS: &str = "exectl.config-parts";

#[derive(Debug, Clone, PartialEq)]
pub struct DesiredService {
    pub name: String,
    pub container_name: String,
    /// The service with ${VAR} resolved and relative mount sources made absolute.
    pub service: Service,
    pub hash: String,
    pub parts: BTreeMap<String, String>,
    /// Services to wait for, with `true` when they must be healthy (not only started).
    pub depends_on: Vec<(String, bool)>,
    /// How deploy asks the service itself whether it is ready (not part of the config hash).
    pub probe: Option<crate::readiness::Probe>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Desired {
    pub stack: String,
    pub network: String,
    pub volumes: Vec<String>,
    /// In start order: every service after the services it depends on.
    pub services: Vec<DesiredService>,
}

/// Resolve `${NAME}` from `vars` and `$$` to `$`, as compose does. An unknown name is an error, never "".
pub fn interpolate(text: &str, vars: &BTreeMap<String, String>) -> Result<String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        if let Some(r) = after.strip_prefix('$') {
            out.push('$');
            rest = r;
        } else if let Some(r) = after.strip_prefix('{') {
            let Some(end) = r.find('}') else {
                bail!("unterminated ${{ in {text:?}");
            };
            let name = &r[..end];
            match vars.get(name) {
                Some(v) => out.push_str(v),
                None => bail!("${{{name}}} is not defined in the stack's .env"),
            }
            rest = &r[end + 1..];
        } else {
            bail!("a bare $ in {text:?}: write $$ for a literal dollar");
        }
    }
    out.push_str(rest);
    Ok(out)
}

/// Parse a .env text (KEY=VALUE lines, # comments).
pub fn parse_env(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect()
}

fn short_hash(v: &impl Serialize) -> String {
    let json = serde_json::to_vec(v).expect("serialisable");
    hex::encode(&Sha256::digest(json)[..6])
}

/// `files`: bundle-relative path → contents, for every file a service may bind-mount.
pub fn desired(
    compose: &ComposeFile,
    env: &BTreeMap<String, String>,
    bundle_dir: &Path,
    files: &BTreeMap<String, Vec<u8>>,
) -> Result<Desired> {
    let stack = compose.stack.clone();
    let network = match compose.networks.values().next() {
        Some(n) if compose.networks.len() == 1 => n.name.clone(),
        _ => bail!("compose.yaml must declare exactly one network"),
    };
    let volume_names: BTreeMap<&str, &str> = compose
        .volumes
        .iter()
        .map(|(k, v)| (k.as_str(), v.name.as_str()))
        .collect();
    let mut services = Vec::new();
    for (name, svc) in &compose.services {
        let mut s = svc.clone();
        for v in s.environment.values_mut() {
            *v = interpolate(v, env)?;
        }
        let mut mounted = BTreeMap::new();
        s.volumes = svc
            .volumes
            .iter()
            .map(|v| {
                let (source, rest) = v.split_once(':').unwrap_or((v, ""));
                if let Some(rel) = source.strip_prefix("./") {
                    // A file or every file below a folder: their contents are part of the config.
                    for (path, bytes) in files {
                        if path == rel || path.starts_with(&format!("{rel}/")) {
                            mounted.insert(path.clone(), hex::encode(Sha256::digest(bytes)));
                        }
                    }
                    format!("{}:{rest}", bundle_dir.join(rel).display())
                } else {
                    let real = volume_names.get(source).copied().unwrap_or(source);
                    format!("{real}:{rest}")
                }
            })
            .collect();
        s.labels.insert(LABEL_STACK.into(), stack.clone());
        s.labels.insert(LABEL_SERVICE.into(), name.clone());
        let mut parts = BTreeMap::new();
        parts.insert("image".to_string(), short_hash(&s.image));
        parts.insert("command".to_string(), short_hash(&s.command));
        parts.insert("environment".to_string(), short_hash(&s.environment));
        parts.insert("healthcheck".to_string(), short_hash(&s.healthcheck));
        parts.insert(
            "limits".to_string(),
            short_hash(&(&s.ulimits, &s.deploy, &s.restart)),
        );
        parts.insert(
            "mounts".to_string(),
            short_hash(&(&s.volumes, &s.ports, &s.networks)),
        );
        parts.insert("files".to_string(), short_hash(&mounted));
        parts.insert("labels".to_string(), short_hash(&s.labels));
        let hash = short_hash(&parts);
        services.push(DesiredService {
            name: name.clone(),
            container_name: crate::naming::container(&stack, name),
            depends_on: s
                .depends_on
                .iter()
                .map(|(d, c)| (d.clone(), c.condition == "service_healthy"))
                .collect(),
            probe: None,
            service: s,
            hash,
            parts,
        });
    }
    Ok(Desired {
        stack,
        network,
        volumes: compose.volumes.values().map(|v| v.name.clone()).collect(),
        services: start_order(services)?,
    })
}

/// Order services so each comes after its dependencies; a cycle is an error.
fn start_order(mut pending: Vec<DesiredService>) -> Result<Vec<DesiredService>> {
    let mut ordered: Vec<DesiredService> = Vec::new();
    while !pending.is_empty() {
        let ready = pending.iter().position(|s| {
            s.depends_on
                .iter()
                .all(|(d, _)| ordered.iter().any(|o| &o.name == d))
        });
        match ready {
            Some(i) => ordered.push(pending.remove(i)),
            None => bail!(UsageError::new(
                "depends_on",
                pending
                    .iter()
                    .map(|s| s.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
                "these services depend on each other in a cycle (or on a missing service)",
                "fix the compose template",
            )),
        }
    }
    Ok(ordered)
}

/// A compose duration such as "30s", "1m30s", "500ms" in nanoseconds, as the engine's healthcheck
/// takes them (read by `core::units`, the one duration reader).
pub fn duration_ns(text: &str) -> Result<i64> {
    let d = crate::units::duration(text)
        .map_err(|e| anyhow::anyhow!("cannot read duration {text:?}: {}", e.problem))?;
    i64::try_from(d.as_nanos()).map_err(|_| anyhow::anyhow!("duration {text:?} is out of range"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars() -> BTreeMap<String, String> {
        [("A".to_string(), "x$y".to_string())].into_iter().collect()
    }

    #[test]
    fn interpolation_matches_compose() {
        assert_eq!(interpolate("${A}-$$B", &vars()).unwrap(), "x$y-$B");
        assert!(interpolate("${MISSING}", &vars()).is_err());
        assert!(interpolate("$A", &vars()).is_err());
    }

    #[test]
    fn durations() {
        assert_eq!(duration_ns("30s").unwrap(), 30_000_000_000);
        assert_eq!(duration_ns("1m30s").unwrap(), 90_000_000_000);
        assert_eq!(duration_ns("500ms").unwrap(), 500_000_000);
        assert!(duration_ns("5").is_err());
        assert!(duration_ns("99999999999999h").is_err());
        assert!(duration_ns("9223372036854775807s").is_err());
    }
}
