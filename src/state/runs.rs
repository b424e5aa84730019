//! Run records: what a deploy deployed, precisely enough to compare two runs one variable at a time.
//! Records are JSON files under <state>/runs/; building, flattening and diffing them is pure.

use anyhow::{Context, Result};
use exectl_core::bench::compare::{follows_variant, knob_variable};
use exectl_core::error::UsageError;
use exectl_core::spec::Spec;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Record {
    pub id: String,
    pub created: String,
    pub created_epoch: u64,
    pub stack: String,
    /// Every knob's effective value, flattened (`nginx.variant`, `cpus`, `env.DB_POOL_MAX`, ...).
    pub knobs: BTreeMap<String, String>,
    /// The full effective spec, as deployed.
    pub spec: serde_json::Value,
    /// Bundle path → sha256 (the .env hash stands for the secrets; their values are never recorded).
    pub files: BTreeMap<String, String>,
    /// Service → image reference and the digest resolved on the target.
    pub images: BTreeMap<String, ImageRecord>,
    pub engine: EngineRecord,
    pub exectl: ExectlRecord,
    pub changed: usize,
    pub seconds: f64,
    /// The defaults lowered to what the target allows (`Spec::fit`); the knobs hold the values used.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fitted: Vec<exectl_core::spec::Fitted>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ImageRecord {
    pub reference: String,
    pub digest: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct EngineRecord {
    pub version: String,
    pub api_version: String,
    pub kernel: String,
    pub os: String,
    pub cpus: i64,
    pub mem_bytes: i64,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ExectlRecord {
    pub version: String,
    pub git_commit: String,
}

impl ExectlRecord {
    pub fn current() -> ExectlRecord {
        ExectlRecord {
            version: env!("CARGO_PKG_VERSION").into(),
            git_commit: option_env!("EXECTL_GIT_COMMIT").unwrap_or("unknown").into(),
        }
    }
}

use exectl_core::record::flatten_into as flatten;
/// A JSON value's scalars under dotted keys (one definition: the record's, in core).
pub use exectl_core::record::flattened;

/// Every knob of a spec, flattened.
pub fn knobs(spec: &Spec) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    flatten(
        "",
        &serde_json::to_value(spec).expect("spec serialises"),
        &mut out,
    );
    out
}

/// `E-<topology>-<instances>-<variant>-<seq>`: the variant is the nginx variant for ha, the database for
/// single. `seq` follows the highest record of the same prefix.
pub fn next_id(spec: &Spec, existing: &[String]) -> String {
    let variant = match &spec.nginx {
        Some(n) => n.variant.name(),
        None => spec.db.name(),
    };
    let prefix = format!("E-{}-{}-{}-", spec.topology.name(), spec.instances, variant);
    let seq = existing
        .iter()
        .filter_map(|id| id.strip_prefix(&prefix)?.parse::<u32>().ok())
        .max()
        .unwrap_or(0)
        + 1;
    format!("{prefix}{seq:03}")
}

pub fn list_ids(dir: &Path) -> Vec<String> {
    let mut ids: Vec<String> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            e.file_name()
                .to_str()?
                .strip_suffix(".json")
                .map(String::from)
        })
        .collect();
    ids.sort();
    ids
}

/// Give the record the next free id for its spec and save it. Never overwrites another run's record:
/// two deploys picking the same id at once get consecutive ones.
pub fn save_next(dir: &Path, spec: &Spec, r: &mut Record) -> Result<PathBuf> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    for _ in 0..10 {
        r.id = next_id(spec, &list_ids(dir));
        let path = dir.join(format!("{}.json", r.id));
        let mut text = serde_json::to_string_pretty(r)?;
        text.push('\n');
        // Whole or absent (never a half record), and never over another run's.
        if crate::shell::atomic::write_new(&path, text.as_bytes(), 0o644)? {
            return Ok(path);
        }
    }
    anyhow::bail!("could not pick a free run id in {}", dir.display())
}

/// An id is one file or folder name in the state folder, never a path to somewhere else.
pub fn check_id(id: &str) -> Result<(), UsageError> {
    if id.is_empty()
        || id.starts_with('.')
        || !id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
    {
        return Err(UsageError::new(
            "run id",
            id,
            "not a run id (letters, digits, - _ . only)",
            "see `exectl runs list` for the recorded ids",
        ));
    }
    Ok(())
}

/// The deploy record `id`, if there is one. One that cannot be read, or is not a record, is bad input
/// naming the file (exit 2): `runs list` shows it as unreadable.
pub fn find(dir: &Path, id: &str) -> Result<Option<Record>, UsageError> {
    check_id(id)?;
    let path = dir.join(format!("{id}.json"));
    let unreadable = |problem: String| {
        UsageError::new(
            "run id",
            id,
            problem,
            "fix or remove that file (`exectl runs list` shows every unreadable record)",
        )
    };
    let text = match crate::shell::user_file::read_text(&path, crate::shell::user_file::RECORD) {
        Ok(t) => t,
        Err(u) if u.missing => return Ok(None),
        Err(u) => return Err(unreadable(u.problem)),
    };
    serde_json::from_str(&text).map(Some).map_err(|e| {
        unreadable(format!(
            "{} is not a deploy's run record: {e}",
            path.display()
        ))
    })
}

/// Every deploy record, by id; those that cannot be read, as (id, why).
pub fn list(dir: &Path) -> (Vec<Record>, Vec<(String, String)>) {
    let (mut found, mut broken) = (Vec::new(), Vec::new());
    for id in list_ids(dir) {
        match find(dir, &id) {
            Ok(Some(r)) => found.push(r),
            Ok(None) => {}
            Err(e) => broken.push((id, e.problem)),
        }
    }
    (found, broken)
}

pub fn load(dir: &Path, id: &str) -> Result<Record> {
    find(dir, id)?.ok_or_else(|| {
        UsageError::new(
            "run id",
            id,
            "no such run record",
            "see `exectl runs list` for the recorded ids",
        )
        .into()
    })
}

/// One difference between two records.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Change {
    pub key: String,
    pub a: String,
    pub b: String,
}

/// What a comparison changed: the differing keys, and the independent variables they come from.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Diff {
    pub changes: Vec<Change>,
    pub variables: Vec<String>,
}

/// Prefix of the bundle files' keys: a path follows (`files/.env`, `files/nginx/nginx.conf`), as a dot
/// would run into the file names' own dots (`files..env`).
pub const FILES: &str = "files/";

/// A value as one token on one line: as it is when plain, else quoted with escapes (a `--set` value may
/// hold newlines, spaces or nothing at all).
pub fn shown(v: &str) -> String {
    let plain = !v.is_empty()
        && !v.contains(" -> ")
        && !v.starts_with('"')
        && v.chars()
            .all(|c| !c.is_control() && !c.is_whitespace() || c == ' ')
        && v.trim() == v;
    if plain {
        v.to_string()
    } else {
        format!("{v:?}")
    }
}

/// The variable a key belongs to. nginx's knobs move together when only the variant changes, so they are
/// one variable; rendered files follow from knobs and are not variables of their own.
fn variable_of(key: &str) -> Option<String> {
    if key.starts_with(FILES) {
        return None;
    }
    if let Some(k) = key.strip_prefix("knobs.") {
        return Some(knob_variable(k));
    }
    if let Some(rest) = key.strip_prefix("images.") {
        return Some(format!("image {}", rest.split('.').next().unwrap_or(rest)));
    }
    Some(key.split('.').next().unwrap_or(key).to_string())
}

pub fn diff(a: &Record, b: &Record) -> Diff {
    let view = |r: &Record| {
        let mut m = BTreeMap::new();
        for (k, v) in &r.knobs {
            m.insert(format!("knobs.{k}"), v.clone());
        }
        // The stack name says where, not what: comparing two stacks is the normal case.
        m.remove("knobs.stack");
        for (k, v) in &r.files {
            m.insert(format!("{FILES}{k}"), v.clone());
        }
        for (k, v) in &r.images {
            m.insert(format!("images.{k}.digest"), v.digest.clone());
        }
        let mut e = BTreeMap::new();
        flatten(
            "engine",
            &serde_json::to_value(&r.engine).unwrap_or_default(),
            &mut e,
        );
        flatten(
            "exectl",
            &serde_json::to_value(&r.exectl).unwrap_or_default(),
            &mut e,
        );
        m.extend(e);
        m
    };
    let (va, vb) = (view(a), view(b));
    let keys: std::collections::BTreeSet<&String> = va.keys().chain(vb.keys()).collect();
    let changes: Vec<Change> = keys
        .into_iter()
        .filter(|k| va.get(*k) != vb.get(*k))
        .map(|k| Change {
            key: k.clone(),
            a: va.get(k).cloned().unwrap_or_else(|| "-".into()),
            b: vb.get(k).cloned().unwrap_or_else(|| "-".into()),
        })
        .collect();
    let mut variables: Vec<String> = Vec::new();
    let nginx_variant_changed = changes.iter().any(|c| c.key == "knobs.nginx.variant");
    for c in &changes {
        let Some(mut v) = variable_of(&c.key) else {
            continue;
        };
        // Knobs that only followed the variant's defaults are the variant's change.
        if nginx_variant_changed
            && v.starts_with("nginx ")
            && follows_variant(c.key.trim_start_matches("knobs."), &b.knobs)
        {
            v = "nginx variant".into();
        }
        if !variables.contains(&v) {
            variables.push(v);
        }
    }
    Diff { changes, variables }
}

#[cfg(test)]
mod tests {
    use super::*;
    use exectl_core::spec::{resolve, Raw, SpecInput};

    #[test]
    fn ids_that_are_paths_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("secret.json"), "{}").unwrap();
        let runs = dir.path().join("runs");
        std::fs::create_dir(&runs).unwrap();
        for bad in ["../secret", "/etc/passwd", "", ".hidden", "a/b"] {
            let e = load(&runs, bad).unwrap_err();
            let u = e.downcast_ref::<UsageError>().expect("usage error");
            assert!(u.to_string().contains("not a run id"), "{bad}: {u}");
        }
        let e = load(&runs, "E-ha-2-tuned-least-conn-001").unwrap_err();
        assert!(e.to_string().contains("no such run record"), "{e}");
    }

    fn spec(nginx: &str, instances: &str) -> Spec {
        resolve(SpecInput {
            topology: Some(Raw::flag("topology", "ha")),
            nginx: Some(Raw::flag("--nginx", nginx)),
            instances: Some(Raw::flag("--instances", instances)),
            ..Default::default()
        })
        .unwrap()
    }

    fn record(s: &Spec, id: &str) -> Record {
        Record {
            id: id.into(),
            created: "t".into(),
            created_epoch: 0,
            stack: s.stack.clone(),
            knobs: knobs(s),
            spec: serde_json::to_value(s).unwrap(),
            files: BTreeMap::from([("nginx/nginx.conf".to_string(), format!("{:?}", s.nginx))]),
            images: BTreeMap::new(),
            engine: EngineRecord::default(),
            exectl: ExectlRecord::current(),
            changed: 0,
            seconds: 0.0,
            fitted: vec![],
        }
    }

    /// Each setting of the table shows its effective value under its knob, so a new setting cannot go
    /// unrecorded (`target`, the one file-only setting, is added by deploy beside these).
    #[test]
    fn every_setting_lands_in_its_knob() {
        use exectl_core::spec_settings::{Kind, SETTINGS};
        let given = [
            ("topology", "ha", "ha"),
            ("stack", "k", "k"),
            ("instances", "3", "3"),
            ("nginx", "tuned-ip-hash", "tuned-ip-hash"),
            ("lb_algorithm", "least_conn", "least_conn"),
            ("worker_connections", "4096", "4096"),
            ("worker_rlimit_nofile", "10000", "10000"),
            ("worker_processes", "3", "3"),
            ("db", "mariadb", "mariadb"),
            ("cpus", "1.5", "1.5"),
            ("memory", "1g", "1g"),
            ("nofile", "65536", "65536"),
            ("host", "k.example", "k.example"),
            ("lb_port", "18090", "18090"),
            ("http_port", "18080", "18080"),
            ("traefik", "true", "true"),
            ("app_env", "dev", "dev"),
            ("app_debug", "1", "1"),
            ("health_interval", "5s", "5"),
        ];
        let mut input = SpecInput::default();
        for s in SETTINGS.iter().filter(|s| s.kind != Kind::FileOnly) {
            let (_, value, _) = given
                .iter()
                .find(|(k, _, _)| *k == s.key)
                .unwrap_or_else(|| panic!("give {} a value here", s.key));
            *(s.slot)(&mut input) = Some(Raw::flag(s.flag, *value));
        }
        let k = knobs(&resolve(input).unwrap());
        for (key, _, shown) in given {
            let s = exectl_core::spec_settings::setting(key).unwrap();
            assert_eq!(k.get(s.knob).map(String::as_str), Some(shown), "{key}");
        }
    }

    #[test]
    fn ids_count_up_per_prefix() {
        let s = spec("tuned-ip-hash", "4");
        assert_eq!(next_id(&s, &[]), "E-ha-4-tuned-ip-hash-001");
        let existing = vec![
            "E-ha-4-tuned-ip-hash-001".into(),
            "E-ha-2-tuned-ip-hash-007".into(),
        ];
        assert_eq!(next_id(&s, &existing), "E-ha-4-tuned-ip-hash-002");
    }

    #[test]
    fn saving_twice_takes_consecutive_ids_and_never_overwrites() {
        let dir = tempfile::tempdir().unwrap();
        let s = spec("tuned-ip-hash", "2");
        let mut a = record(&s, "");
        let mut b = record(&s, "");
        save_next(dir.path(), &s, &mut a).unwrap();
        save_next(dir.path(), &s, &mut b).unwrap();
        assert_eq!(
            (a.id.as_str(), b.id.as_str()),
            ("E-ha-2-tuned-ip-hash-001", "E-ha-2-tuned-ip-hash-002")
        );
        assert_eq!(load(dir.path(), &a.id).unwrap(), a);
    }

    #[test]
    fn variant_change_is_one_variable() {
        let a = record(&spec("tuned-ip-hash", "2"), "a");
        let b = record(&spec("tuned-least-conn", "2"), "b");
        let d = diff(&a, &b);
        let keys: Vec<&str> = d.changes.iter().map(|c| c.key.as_str()).collect();
        assert_eq!(
            keys,
            [
                "files/nginx/nginx.conf",
                "knobs.nginx.lb_algorithm",
                "knobs.nginx.variant"
            ]
        );
        assert_eq!(d.variables, ["nginx variant"]);
    }

    #[test]
    fn values_print_on_one_line() {
        assert_eq!(shown("50"), "50");
        assert_eq!(shown("a b"), "a b");
        assert_eq!(shown("a\nb"), "\"a\\nb\"");
        assert_eq!(shown(""), "\"\"");
        assert_eq!(shown(" x"), "\" x\"");
        assert_eq!(shown("x -> y"), "\"x -> y\"");
    }

    #[test]
    fn two_changes_are_two_variables() {
        let a = record(&spec("tuned-ip-hash", "2"), "a");
        let b = record(&spec("tuned-least-conn", "4"), "b");
        assert_eq!(diff(&a, &b).variables, ["instances", "nginx variant"]);
    }
}
