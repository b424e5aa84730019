//! The record of a deployed stack: the file render writes into the stack's bundle
//! (`exectl.lock.json`) and status, prepare, load, doctor and deploy's preflight read back. One type,
//! `StackRecord`: render writes it with the whole spec (`StackRecord<&Spec>`, for people and `runs
//! diff`), readers parse it with `RecordedSpec`, the part of the spec they use. Every field a reader
//! uses must be there with a known value: a missing field or an unknown topology is an error naming
//! the file, never a default. Pure: text in, record or error out (`render::record` reads the file).

use crate::spec::{Db, Images, LbAlgorithm, Topology};
use serde::{Deserialize, Deserializer, Serialize};
use std::collections::BTreeMap;

/// The record's file name in a stack's bundle folder. Kept as it was when "lock" was its name too:
/// deployments made before the rename are read as they are.
pub const FILE: &str = "exectl.lock.json";

/// The record: what was deployed (the effective spec) and a sha256 per rendered file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StackRecord<S = RecordedSpec> {
    pub exectl_version: String,
    pub stack: String,
    pub topology: Topology,
    pub spec: S,
    pub files: BTreeMap<String, String>,
}

/// The part of the recorded spec that readers use. The record holds the whole spec; the other keys
/// are for people and are not checked here. No secret is in it (`--set-secret` values are recorded
/// redacted, and not read back).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordedSpec {
    pub topology: Topology,
    pub stack: String,
    pub instances: u32,
    pub db: Db,
    /// The load balancer (ha); null for single. Must be present either way.
    #[serde(deserialize_with = "present")]
    pub nginx: Option<RecordedNginx>,
    /// CPU limit per app instance, as given (e.g. "1.5").
    pub cpus: String,
    pub memory_bytes: u64,
    pub host: String,
    /// Traefik's published port.
    pub http_port: u16,
    /// nginx's published port (ha).
    pub lb_port: u16,
    pub images: Images,
    /// The app's environment as set (`--set`; the secrets are not in it).
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// The whole recorded spec's settings under dotted keys (`nginx.worker_connections`), as run records
    /// and `runs diff` show them, but the image references and the secrets' fingerprints: filled by
    /// `parse` (the fields above are the ones read).
    #[serde(skip)]
    pub knobs: BTreeMap<String, String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordedNginx {
    pub lb_algorithm: LbAlgorithm,
    /// Connections per worker process (absent from records older than it).
    #[serde(default)]
    pub worker_connections: Option<u64>,
}

/// An `Option` that must be in the file (`null` allowed): serde would default a missing one to None.
fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<T>, D::Error> {
    Option::<T>::deserialize(d)
}

/// A record that cannot be used: the file and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordError {
    pub file: String,
    pub problem: String,
}

impl std::fmt::Display for RecordError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.file, self.problem)
    }
}

/// Parse the record of stack `stack` read from `file` (named in the error). The record must be of
/// that stack, and its two topologies must agree.
pub fn parse(file: &str, stack: &str, text: &str) -> Result<StackRecord, RecordError> {
    let bad = |problem: String| RecordError {
        file: file.to_string(),
        problem,
    };
    // Read once as JSON: the typed record from it, the knobs from its spec's own keys.
    let raw: serde_json::Value = serde_json::from_str(text).map_err(|e| bad(e.to_string()))?;
    let knobs = knobs(&raw["spec"]);
    let mut r: StackRecord = serde_json::from_value(raw).map_err(|e| bad(e.to_string()))?;
    r.spec.knobs = knobs;
    if r.stack != stack || r.spec.stack != stack {
        return Err(bad(format!(
            "it records stack {:?} (spec: {:?}), not {stack:?}",
            r.stack, r.spec.stack
        )));
    }
    if r.topology != r.spec.topology {
        return Err(bad(format!(
            "its topology {} disagrees with its spec's {}",
            r.topology.name(),
            r.spec.topology.name()
        )));
    }
    Ok(r)
}

/// A spec's settings under dotted keys, without the image references and the secrets' fingerprints.
fn knobs(spec: &serde_json::Value) -> BTreeMap<String, String> {
    let mut knobs = flattened(spec);
    knobs.retain(|key, _| !key.starts_with("images.") && !key.starts_with("secret_env"));
    knobs
}

/// A JSON value's scalars under dotted keys (`nginx.variant`), as records and `runs diff` show them
/// (null as `-`).
pub fn flattened(v: &serde_json::Value) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    flatten_into("", v, &mut out);
    out
}

/// `flattened`, its keys under `prefix` (none when empty), into `out`.
pub fn flatten_into(prefix: &str, v: &serde_json::Value, out: &mut BTreeMap<String, String>) {
    match v {
        serde_json::Value::Object(m) => {
            for (k, v) in m {
                let key = match prefix.is_empty() {
                    true => k.clone(),
                    false => format!("{prefix}.{k}"),
                };
                flatten_into(&key, v, out);
            }
        }
        serde_json::Value::String(s) => drop(out.insert(prefix.to_string(), s.clone())),
        serde_json::Value::Null => drop(out.insert(prefix.to_string(), "-".into())),
        other => drop(out.insert(prefix.to_string(), other.to_string())),
    }
}

impl StackRecord {
    /// The published port and the Host to send: nginx's for ha, Traefik's with the stack's Host for
    /// single.
    pub fn front_door(&self) -> (u16, Option<&str>) {
        match self.spec.topology {
            Topology::Ha => (self.spec.lb_port, None),
            Topology::Single => (self.spec.http_port, Some(self.spec.host.as_str())),
        }
    }

    /// The nginx balancing directive (`least_conn`, `ip_hash`) for ha.
    pub fn lb_algorithm(&self) -> Option<&'static str> {
        self.spec.nginx.as_ref().map(|n| n.lb_algorithm.directive())
    }
}

/// A whole record for tests elsewhere (front doors, limits): stack `stack`, topology `topology`.
#[cfg(any(test, feature = "fixtures"))]
pub fn example(stack: &str, topology: Topology) -> StackRecord {
    let mut r = StackRecord {
        exectl_version: "0.1.0".into(),
        stack: stack.into(),
        topology,
        spec: RecordedSpec {
            topology,
            stack: stack.into(),
            instances: if topology == Topology::Ha { 2 } else { 1 },
            db: Db::Mariadb,
            nginx: (topology == Topology::Ha).then_some(RecordedNginx {
                lb_algorithm: LbAlgorithm::LeastConn,
                worker_connections: Some(4096),
            }),
            cpus: "2".into(),
            memory_bytes: 2 << 30,
            host: format!("{stack}.localhost"),
            http_port: 8080,
            lb_port: 8090,
            images: Images::default(),
            env: BTreeMap::new(),
            knobs: BTreeMap::new(),
        },
        files: BTreeMap::new(),
    };
    // As `parse` reads them back from the record it writes.
    r.spec.knobs = knobs(&serde_json::to_value(&r.spec).expect("a spec serialises"));
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(topology: Topology) -> String {
        serde_json::to_string_pretty(&example("rec", topology)).unwrap()
    }

    #[test]
    fn a_record_round_trips() {
        for t in [Topology::Single, Topology::Ha] {
            let r = example("exe", t);
            let text = serde_json::to_string_pretty(&r).unwrap();
            let parsed = parse("f", "exe", &text).unwrap();
            // The knobs are every setting of the spec as written, the image references left out.
            assert_eq!(parsed.spec.knobs["db"], "mariadb");
            assert_eq!(parsed.spec.knobs["http_port"], "8080");
            assert!(!parsed.spec.knobs.keys().any(|k| k.starts_with("images.")));
            assert_eq!(parsed, r);
        }
    }

    #[test]
    fn an_unknown_topology_is_an_error_naming_the_file() {
        let text = text(Topology::Ha).replace("\"topology\": \"ha\"", "\"topology\": \"triple\"");
        let e = parse("/s/rec/bundle/exectl.lock.json", "rec", &text).unwrap_err();
        assert_eq!(e.file, "/s/rec/bundle/exectl.lock.json");
        assert!(e.problem.contains("triple"), "{e}");
        assert!(e
            .to_string()
            .starts_with("/s/rec/bundle/exectl.lock.json: "));
    }

    #[test]
    fn a_missing_field_is_an_error_naming_the_file_and_the_field() {
        let full = text(Topology::Ha);
        for field in [
            "lb_port",
            "http_port",
            "host",
            "memory_bytes",
            "sqlite",
            "nginx",
            "files",
        ] {
            let mut v: serde_json::Value = serde_json::from_str(&full).unwrap();
            let removed = v["spec"].as_object_mut().unwrap().remove(field).is_some()
                || v["spec"]["images"]
                    .as_object_mut()
                    .unwrap()
                    .remove(field)
                    .is_some()
                || v.as_object_mut().unwrap().remove(field).is_some();
            assert!(removed, "{field}");
            let e = parse("the/file", "rec", &v.to_string()).unwrap_err();
            assert_eq!(e.file, "the/file");
            assert!(
                e.problem.contains(&format!("missing field `{field}`")),
                "{e}"
            );
        }
        let e = parse("the/file", "rec", "{}").unwrap_err();
        assert!(e.problem.contains("missing field"), "{e}");
        let e = parse("the/file", "rec", "not json").unwrap_err();
        assert_eq!(e.file, "the/file");
    }

    #[test]
    fn a_port_out_of_range_or_another_stacks_record_is_refused() {
        let text = text(Topology::Single);
        let e = parse("f", "rec", &text.replace("8080", "70000")).unwrap_err();
        assert!(e.problem.contains("70000"), "{e}");
        let e = parse("f", "other", &text).unwrap_err();
        assert!(e.problem.contains("not \"other\""), "{e}");
        let mixed = text.replacen("\"topology\": \"single\"", "\"topology\": \"ha\"", 1);
        assert!(parse("f", "rec", &mixed)
            .unwrap_err()
            .problem
            .contains("disagrees"));
    }
}
