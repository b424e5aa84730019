//! A campaign file (`exectl campaign FILE`, YAML): a study as rows, each one bench or one sweep of a
//! stack of its topology, run in order.
//!
//! ```yaml
//! name: quick                 # the campaign's name (its run ids begin with it)
//! stack: quick                # each topology's stack is STACK-single / STACK-ha [default: name]
//! images: ../images/fixtures.yaml   # the images file, relative to this file [default: none]
//! spec: {nofile: 20000}       # exectl.yaml settings every row starts from
//! set: [STANDIN_ROOM_CLEANUP_MS=500]   # the app's environment every row starts from
//! bcrypt_cost: 4              # the seeding's (prepare --bcrypt-cost)
//! bench: {hold: 20s, ramp: 5s, settle: 10s, tokens: true}   # every row's bench flags
//! rows:
//!   - name: idle 100 on one instance
//!     study: WS inactivo 100 · 1     # the study's row it stands for (the report pairs them)
//!     topology: single
//!     spec: {db: sqlite}             # over the file's
//!     bench: {scenario: idle}        # over the file's
//!     levels: [100]                  # or vary/repeat/find_capacity/find_room: a sweep file's keys
//!     users_per_project: 1           # the seeding's rooms [default: one project per account]
//!     note: scaled from 10,000 users: this machine has 2 cores
//! ```
//! Each value stays text, as its flag's would, and is checked by the same code when the campaign's
//! options are made (`cli::options::campaign`): here only the file's shape, each fault naming its row.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_norway::{Mapping, Value};

use crate::error::UsageError;
use crate::sweep::file::{joined as text, SweepFile};

/// The bench keys a row (or the file, for every row) may give: `exectl bench`'s flags, without `--`.
pub const BENCH_KEYS: [&str; 16] = [
    "scenario",
    "hold",
    "ramp",
    "settle",
    "sample",
    "tokens",
    "slo",
    "interval",
    "ping_after",
    "dial_concurrency",
    "arrival_rate",
    "fault",
    "relogin",
    "churn",
    "browser_probe",
    "continue_after_fail",
];

/// The sweep keys a row may give (a sweep file's).
const SWEEP_KEYS: [&str; 6] = [
    "levels",
    "vary",
    "matrix",
    "repeat",
    "find_capacity",
    "find_room",
];

/// The file as read: names, settings and every value as text.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct CampaignFile {
    pub name: String,
    pub stack: String,
    pub images: Option<String>,
    /// exectl.yaml keys and values, in the file's order.
    pub spec: Vec<(String, String)>,
    pub set: Vec<String>,
    pub bcrypt_cost: Option<String>,
    /// Bench flag (without `--`) → value; `slo` is a list, its items joined by `;`.
    pub bench: BTreeMap<String, String>,
    pub rows: Vec<Row>,
    /// `teardown: true`: each stack removed after its last row (as `--teardown`).
    pub teardown: bool,
}

#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct Row {
    pub name: String,
    pub study: Option<String>,
    pub topology: String,
    pub spec: Vec<(String, String)>,
    pub set: Vec<String>,
    /// The file's bench keys with the row's over them.
    pub bench: BTreeMap<String, String>,
    /// Its levels, or its sweep (variable, repeats, search), as a sweep file gives them.
    pub sweep: SweepFile,
    pub users_per_project: Option<String>,
    pub note: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    name: String,
    stack: Option<String>,
    images: Option<String>,
    #[serde(default)]
    spec: Mapping,
    #[serde(default)]
    set: Vec<Value>,
    bcrypt_cost: Option<Value>,
    #[serde(default)]
    bench: Mapping,
    rows: Vec<Mapping>,
    #[serde(default)]
    teardown: bool,
}

/// What is wrong with the file at `field`, exit 2.
fn bad(
    path: &str,
    field: &str,
    value: impl std::fmt::Display,
    problem: impl Into<String>,
) -> UsageError {
    UsageError::new(
        format!("{field} (in {path})"),
        value,
        problem,
        "see README's campaign section for the file's keys",
    )
}

/// `key: value` pairs of a mapping, each as text (a list joined by `sep`).
fn pairs(
    path: &str,
    field: &str,
    m: &Mapping,
    sep: &str,
) -> Result<Vec<(String, String)>, UsageError> {
    m.iter()
        .map(|(k, v)| {
            let key = text(k, sep).ok_or_else(|| bad(path, field, "", "a key that is not text"))?;
            let value = text(v, sep).ok_or_else(|| {
                bad(
                    path,
                    &format!("{field}.{key}"),
                    "",
                    "give a value or a list of values",
                )
            })?;
            Ok((key, value))
        })
        .collect()
}

/// The bench keys of `m`, each a known one.
fn bench_keys(
    path: &str,
    field: &str,
    m: &Mapping,
) -> Result<BTreeMap<String, String>, UsageError> {
    let mut out = BTreeMap::new();
    for (k, v) in pairs(path, field, m, ";")? {
        if !BENCH_KEYS.contains(&k.as_str()) {
            return Err(bad(
                path,
                &format!("{field}.{k}"),
                v,
                format!("no such bench key: use {}", BENCH_KEYS.join(", ")),
            ));
        }
        out.insert(k, v);
    }
    Ok(out)
}

/// `set:` items (`KEY=VALUE`), none a secret: a campaign's settings are copied into its records and
/// reports, where no secret may go.
fn strings(path: &str, field: &str, v: &[Value]) -> Result<Vec<String>, UsageError> {
    let items = v
        .iter()
        .map(|i| text(i, ",").ok_or_else(|| bad(path, field, "", "give text items")))
        .collect::<Result<Vec<String>, UsageError>>()?;
    for item in &items {
        let key = item.split_once('=').map_or(item.as_str(), |(k, _)| k);
        let upper = key.to_ascii_uppercase();
        if upper.contains("SECRET") || upper.contains("PASSWORD") || upper.contains("TOKEN") {
            return Err(bad(
                path,
                field,
                format!("{key}=<redacted>"),
                format!("{key} looks like a secret, and a campaign's settings are written into its records and reports: deploy secrets with exectl deploy --set-secret, not in a campaign file"),
            ));
        }
    }
    Ok(items)
}

pub fn parse(path: &str, body: &str) -> Result<CampaignFile, UsageError> {
    let raw: RawFile =
        serde_norway::from_str(body).map_err(|e| bad(path, "campaign", "", e.to_string()))?;
    if raw.name.trim().is_empty() || raw.rows.is_empty() {
        return Err(bad(
            path,
            if raw.rows.is_empty() { "rows" } else { "name" },
            "",
            "a campaign has a name and at least one row",
        ));
    }
    let bench = bench_keys(path, "bench", &raw.bench)?;
    let mut rows = Vec::new();
    for (i, m) in raw.rows.iter().enumerate() {
        rows.push(row(path, i, m, &bench)?);
    }
    for (i, r) in rows.iter().enumerate() {
        if let Some(j) = rows[..i].iter().position(|o| o.name == r.name) {
            return Err(bad(
                path,
                &format!("rows[{i}].name"),
                &r.name,
                format!(
                    "row {} has the same name: each row's name is its own",
                    j + 1
                ),
            ));
        }
    }
    Ok(CampaignFile {
        stack: raw.stack.unwrap_or_else(|| raw.name.clone()),
        name: raw.name,
        images: raw.images,
        spec: pairs(path, "spec", &raw.spec, ",")?,
        set: strings(path, "set", &raw.set)?,
        bcrypt_cost: raw.bcrypt_cost.as_ref().and_then(|v| text(v, ",")),
        bench,
        rows,
        teardown: raw.teardown,
    })
}

fn row(
    path: &str,
    i: usize,
    m: &Mapping,
    defaults: &BTreeMap<String, String>,
) -> Result<Row, UsageError> {
    let field = |k: &str| format!("rows[{i}].{k}");
    let mut r = Row {
        bench: defaults.clone(),
        ..Row::default()
    };
    let mut sweep = Mapping::new();
    for (k, v) in m {
        let key = text(k, ",").unwrap_or_default();
        let one =
            |v: &Value| text(v, ",").ok_or_else(|| bad(path, &field(&key), "", "give a value"));
        match key.as_str() {
            "name" => r.name = one(v)?,
            "study" => r.study = Some(one(v)?),
            "topology" => r.topology = one(v)?,
            "note" => r.note = Some(one(v)?),
            "users_per_project" => r.users_per_project = Some(one(v)?),
            "spec" => {
                let map = v.as_mapping().ok_or_else(|| bad(path, &field("spec"), "", "give a mapping"))?;
                r.spec = pairs(path, &field("spec"), map, ",")?;
            }
            "set" => {
                let list = v.as_sequence().ok_or_else(|| bad(path, &field("set"), "", "give a list"))?;
                r.set = strings(path, &field("set"), list)?;
            }
            "bench" => {
                let map = v.as_mapping().ok_or_else(|| bad(path, &field("bench"), "", "give a mapping"))?;
                r.bench.extend(bench_keys(path, &field("bench"), map)?);
            }
            k if SWEEP_KEYS.contains(&k) => {
                sweep.insert(Value::String(key.clone()), v.clone());
            }
            _ => {
                return Err(bad(
                    path,
                    &field(&key),
                    "",
                    "no such row key: use name, study, topology, spec, set, bench, levels, vary, matrix, repeat, find_capacity, find_room, users_per_project, note",
                ))
            }
        }
    }
    if r.name.trim().is_empty() {
        return Err(bad(path, &field("name"), "", "each row has a name"));
    }
    if !matches!(r.topology.as_str(), "single" | "ha") {
        return Err(bad(path, &field("topology"), &r.topology, "single or ha"));
    }
    let body = serde_norway::to_string(&sweep)
        .map_err(|e| bad(path, &field("levels"), "", e.to_string()))?;
    r.sweep = crate::sweep::file::parse(&format!("{path} rows[{i}]"), &body)?;
    if r.sweep.levels.is_none() && !r.sweep.find_capacity && !r.sweep.find_room {
        return Err(bad(
            path,
            &field("levels"),
            "",
            "a row runs levels, a capacity search or a room-size search: give levels, find_capacity or find_room",
        ));
    }
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    const QUICK: &str = r#"
name: quick
images: images/fixtures.yaml
spec: {nofile: 20000}
set: [STANDIN_ROOM_CLEANUP_MS=500]
bcrypt_cost: 4
bench: {hold: 20s, ramp: 5s, tokens: true, slo: [login_p95=30s, connect_p95=10s]}
rows:
  - name: idle 100
    study: WS inactivo 100
    topology: single
    spec: {db: sqlite}
    levels: [50, 100]
  - name: capacity
    topology: ha
    bench: {hold: 30s}
    vary: {instances: [1, 2]}
    find_capacity: {from: 100, to: 1000}
    note: scaled down
"#;

    #[test]
    fn a_file_gives_its_rows_with_the_files_settings_under_theirs() {
        let f = parse("quick.yaml", QUICK).unwrap();
        assert_eq!((f.name.as_str(), f.stack.as_str()), ("quick", "quick"));
        assert_eq!(f.spec, [("nofile".to_string(), "20000".to_string())]);
        assert_eq!(f.bcrypt_cost.as_deref(), Some("4"));
        assert_eq!(f.rows.len(), 2);
        let (a, b) = (&f.rows[0], &f.rows[1]);
        assert_eq!(a.topology, "single");
        assert_eq!(a.sweep.levels.as_deref(), Some("50,100"));
        assert_eq!(a.bench["hold"], "20s");
        assert_eq!(a.bench["slo"], "login_p95=30s;connect_p95=10s");
        assert_eq!(a.study.as_deref(), Some("WS inactivo 100"));
        assert_eq!(b.bench["hold"], "30s", "the row's over the file's");
        assert_eq!(b.bench["ramp"], "5s");
        assert_eq!(b.sweep.vary, ["instances=1,2"]);
        assert!(b.sweep.find_capacity);
        assert_eq!(b.note.as_deref(), Some("scaled down"));
    }

    #[test]
    fn a_bad_file_is_refused_naming_the_row_and_the_key() {
        for (body, field, says) in [
            ("name: x\nrows: []\n", "rows", "at least one row"),
            (
                "name: x\nrows: [{name: a, topology: single, levels: [1]}, {name: a, topology: ha, levels: [1]}]\n",
                "rows[1].name",
                "same name",
            ),
            ("name: x\nrows: [{name: a, topology: triple, levels: [1]}]\n", "rows[0].topology", "single or ha"),
            ("name: x\nrows: [{name: a, topology: ha}]\n", "rows[0].levels", "give levels"),
            ("name: x\nrows: [{name: a, topology: ha, levels: [1], bench: {holdd: 1s}}]\n", "rows[0].bench.holdd", "no such bench key"),
            ("name: x\nrows: [{name: a, topology: ha, levels: [1], colour: red}]\n", "rows[0].colour", "no such row key"),
            ("name: x\nbench: {speed: 1}\nrows: [{name: a, topology: ha, levels: [1]}]\n", "bench.speed", "no such bench key"),
            ("name: x\nrowz: []\n", "campaign", "unknown field"),
            (
                "name: x\nset: [SMTP_PASSWORD=hunter2]\nrows: [{name: a, topology: ha, levels: [1]}]\n",
                "set",
                "looks like a secret",
            ),
        ] {
            let e = parse("c.yaml", body).unwrap_err();
            assert!(e.field.starts_with(field), "{body}: {e}");
            assert!(e.to_string().contains(says), "{body}: {e}");
            assert!(!e.to_string().contains("hunter2"), "a secret said back: {e}");
        }
    }
}
