//! A campaign file (`exectl campaign FILE`, YAML): a study as rows, each one bench or one sweep of a
//! stack of its topology, run in order.
//!
//! ```yaml
//! name: quick                 # the campaign's name (its run ids begin with it)
//! stack: quick                # each topology's stack is STACK-single / STACK-ha [default: name]
//! images: ../images/fixtures.yaml   # the images file, relative to this file [default: none]
//! spec: {nofile: 20000}       # exectl.yaml settings every row starts from
//! set: [STANDIN_ROOM_CLEANUP_MS=500]   # the app's environment every row starts from
//! secrets: [SMTP_PASSWORD]    # app variables whose values come from exectl's environment
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
//! The bench keys are read here as their types (`bench::settings`, the table bench's flags come from:
//! a switch a YAML boolean, a duration a duration); the spec's stay text, as their flags' would, and are
//! checked by the same code when the campaign is planned. Here also each fault naming its row, and no
//! credential in a plain setting. Every key is documented in docs/campaign-file.md (a test holds the
//! two together).

use serde::Deserialize;
use serde_norway::{Mapping, Value};

use crate::bench::settings::{self, BenchInput, Kind, Scope};
use crate::error::UsageError;
use crate::sweep::file::{joined as text, SweepFile};

/// The file's own keys, in the order the reference lists them.
pub const FILE_KEYS: [&str; 10] = [
    "name",
    "stack",
    "images",
    "spec",
    "set",
    "secrets",
    "bcrypt_cost",
    "bench",
    "teardown",
    "rows",
];

/// The keys of a row besides its sweep's.
pub const ROW_KEYS: [&str; 9] = [
    "name",
    "study",
    "topology",
    "spec",
    "set",
    "secrets",
    "bench",
    "users_per_project",
    "note",
];

/// The sweep keys a row may give (a sweep file's).
pub const SWEEP_KEYS: [&str; 6] = [
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
    /// App variables given as secrets, by name only: their values are read from exectl's environment
    /// when the campaign is planned, and go only to each stack's 0600 .env (`deploy --set-secret`).
    pub secrets: Vec<String>,
    pub bcrypt_cost: Option<String>,
    /// The bench settings every row starts from (`bench::settings`).
    pub bench: BenchInput,
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
    /// The file's secrets and the row's, by name (none: no `secrets` among the row's recorded inputs).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub secrets: Vec<String>,
    /// The file's bench settings with the row's over them.
    pub bench: BenchInput,
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
    #[serde(default)]
    secrets: Value,
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
    fixed(
        path,
        field,
        value,
        problem,
        "see docs/campaign-file.md for the file's keys",
    )
}

/// What is wrong with the file at `field`, and the fix.
fn fixed(
    path: &str,
    field: &str,
    value: impl std::fmt::Display,
    problem: impl Into<String>,
    fix: impl Into<String>,
) -> UsageError {
    UsageError::new(format!("{field} (in {path})"), value, problem, fix)
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

/// The spec keys a campaign says itself: each row's topology, its stack (NAME-TOPOLOGY), its target.
pub const CAMPAIGN_SAYS: [&str; 3] = ["topology", "stack", "target"];

/// `spec:` pairs (exectl.yaml's settings, each value text, checked when the row is planned), none of
/// them one the campaign says.
fn spec_pairs(path: &str, field: &str, m: &Mapping) -> Result<Vec<(String, String)>, UsageError> {
    // A switch is a YAML boolean here as in `bench:` (and as the schema says): `traefik: yes` is text.
    for (k, v) in m {
        let Some(key) = text(k, ",") else { continue };
        let switch = crate::spec_settings::setting(&key)
            .is_some_and(|s| s.kind == crate::spec_settings::Kind::Switch);
        if switch && !matches!(v, Value::Bool(_)) {
            return Err(fixed(
                path,
                &format!("{field}.{key}"),
                text(v, ",").unwrap_or_default(),
                format!("{key} is a switch and takes a YAML boolean"),
                format!("write {key}: true or {key}: false, unquoted"),
            ));
        }
    }
    let pairs = pairs(path, field, m, ",")?;
    if let Some((k, v)) = pairs
        .iter()
        .find(|(k, _)| CAMPAIGN_SAYS.contains(&k.as_str()))
    {
        return Err(fixed(
            path,
            &format!("{field}.{k}"),
            v,
            "a campaign says it: each row's topology, its stack (NAME-TOPOLOGY), its --target",
            format!("drop spec.{k} (--stack NAME and --target URL are the campaign's flags)"),
        ));
    }
    Ok(pairs)
}

/// The bench settings of `m`, each a key a file may give (`bench::settings`, `Scope::Files`) read as
/// its type: a switch a YAML boolean (`tokens: yes` read as false once benched with logins), `slo` a
/// list, any other a single value.
fn bench_keys(path: &str, field: &str, m: &Mapping) -> Result<BenchInput, UsageError> {
    let mut out = BenchInput::default();
    for (k, v) in m {
        let key = text(k, ",").ok_or_else(|| bad(path, field, "", "a key that is not text"))?;
        let at = format!("{field}.{key}");
        let shown = text(v, ",").unwrap_or_default();
        let Some(s) = settings::setting(&key).filter(|s| s.scope == Scope::Files) else {
            return Err(bad(
                path,
                &at,
                shown,
                format!("no such bench key: use {}", settings::keys(Scope::Files)),
            ));
        };
        if s.kind == Kind::Switch && !matches!(v, Value::Bool(_)) {
            let what = match v {
                Value::String(_) => "text",
                Value::Number(_) => "a number",
                _ => "not a single value",
            };
            return Err(fixed(
                path,
                &at,
                shown,
                format!("{key} is a switch and takes a YAML boolean; this is {what}"),
                format!("write {key}: true or {key}: false, unquoted"),
            ));
        }
        let texts: Vec<String> = match (v, s.kind) {
            (Value::Sequence(items), Kind::Objectives) => items
                .iter()
                .map(|i| text(i, ",").ok_or_else(|| bad(path, &at, "", "give text items")))
                .collect::<Result<_, _>>()?,
            _ => vec![text(v, ";").ok_or_else(|| bad(path, &at, "", "give a single value"))?],
        };
        for t in texts {
            out.set(&key, &t)
                .map_err(|i| fixed(path, &at, &t, i.problem, i.fix))?;
        }
    }
    Ok(out)
}

/// `set:` items (`KEY=VALUE`), none a credential (`secrets::credential`): a campaign's settings are
/// copied into its records and reports, where no secret may go.
fn strings(path: &str, field: &str, v: &[Value]) -> Result<Vec<String>, UsageError> {
    let items = v
        .iter()
        .map(|i| text(i, ",").ok_or_else(|| bad(path, field, "", "give text items")))
        .collect::<Result<Vec<String>, UsageError>>()?;
    for item in &items {
        let (key, value) = item.split_once('=').unwrap_or((item.as_str(), ""));
        crate::secrets::refuse_credential(
            &format!("{field} (in {path})"),
            key,
            value,
            &format!("give its name in secrets: [{key}] instead, and export {key}=... before exectl campaign: its value is then read from exectl's environment and goes only to the stack's 0600 .env"),
        )?;
    }
    Ok(items)
}

/// `secrets:` names, each an environment variable's name, once. Only names: the values stay out of
/// the file (which is shared, and copied into the campaign's folder) and are read from exectl's
/// environment when the campaign is planned.
fn secret_names(path: &str, field: &str, v: &Value) -> Result<Vec<String>, UsageError> {
    let list = match v {
        Value::Null => return Ok(Vec::new()),
        Value::Sequence(list) => list,
        _ => {
            return Err(bad(
                path,
                field,
                "",
                "give a list of names, e.g. [SMTP_PASSWORD]",
            ))
        }
    };
    let mut names: Vec<String> = Vec::new();
    for (i, item) in list.iter().enumerate() {
        let at = format!("{field}[{i}]");
        let name = match item {
            Value::String(s) => s.as_str(),
            _ => {
                return Err(bad(
                    path,
                    &at,
                    "",
                    "give the secret's name, e.g. SMTP_PASSWORD",
                ))
            }
        };
        if !crate::spec::is_env_key(name) {
            // Not said back: a value written where its name belongs is a secret all the same.
            return Err(fixed(
                path,
                &at,
                "<redacted>",
                "not an app variable's name (upper-case letters, digits and _): secrets: lists names only",
                "give the name, e.g. secrets: [SMTP_PASSWORD], and export SMTP_PASSWORD=... before exectl campaign",
            ));
        }
        if names.iter().any(|n| n == name) {
            return Err(bad(path, &at, name, format!("{name} is given twice")));
        }
        names.push(name.to_string());
    }
    Ok(names)
}

/// A secret's name also given a plain value in `set:` (the file's or the row's): which one was meant?
fn secret_also_set(path: &str, file_set: &[String], i: usize, row: &Row) -> Result<(), UsageError> {
    for name in &row.secrets {
        let plain = file_set
            .iter()
            .chain(&row.set)
            .any(|kv| kv.split_once('=').map_or(kv.as_str(), |(k, _)| k) == name);
        if plain {
            return Err(bad(
                path,
                &format!("rows[{i}].secrets"),
                name,
                format!("{name} is also given in set:: give it once, in secrets:"),
            ));
        }
    }
    Ok(())
}

pub fn parse(path: &str, body: &str) -> Result<CampaignFile, UsageError> {
    let body = crate::spec::yaml_tree::without_bom(body);
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
    let set = strings(path, "set", &raw.set)?;
    let secrets = secret_names(path, "secrets", &raw.secrets)?;
    let mut rows = Vec::new();
    for (i, m) in raw.rows.iter().enumerate() {
        let r = row(path, i, m, &bench, &secrets)?;
        secret_also_set(path, &set, i, &r)?;
        rows.push(r);
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
        spec: spec_pairs(path, "spec", &raw.spec)?,
        set,
        secrets,
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
    defaults: &BenchInput,
    secrets: &[String],
) -> Result<Row, UsageError> {
    let field = |k: &str| format!("rows[{i}].{k}");
    let mut r = Row {
        bench: defaults.clone(),
        secrets: secrets.to_vec(),
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
                let map = v
                    .as_mapping()
                    .ok_or_else(|| bad(path, &field("spec"), "", "give a mapping"))?;
                r.spec = spec_pairs(path, &field("spec"), map)?;
            }
            "set" => {
                let list = v
                    .as_sequence()
                    .ok_or_else(|| bad(path, &field("set"), "", "give a list"))?;
                r.set = strings(path, &field("set"), list)?;
            }
            "secrets" => {
                for name in secret_names(path, &field("secrets"), v)? {
                    if !r.secrets.contains(&name) {
                        r.secrets.push(name);
                    }
                }
            }
            "bench" => {
                let map = v
                    .as_mapping()
                    .ok_or_else(|| bad(path, &field("bench"), "", "give a mapping"))?;
                r.bench = r
                    .bench
                    .clone()
                    .over(&bench_keys(path, &field("bench"), map)?);
            }
            k if SWEEP_KEYS.contains(&k) => {
                sweep.insert(Value::String(key.clone()), v.clone());
            }
            _ => {
                return Err(bad(
                    path,
                    &field(&key),
                    "",
                    format!(
                        "no such row key: use {}, {}",
                        ROW_KEYS.join(", "),
                        SWEEP_KEYS.join(", ")
                    ),
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
        let (at, bt) = (a.bench.texts(), b.bench.texts());
        assert_eq!(at["hold"], "20s");
        assert_eq!(at["slo"], "login_p95=30s;connect_p95=10s");
        assert_eq!(a.study.as_deref(), Some("WS inactivo 100"));
        assert_eq!(bt["hold"], "30s", "the row's over the file's");
        assert_eq!(bt["ramp"], "5s");
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
            ("name: x\nbench: {generators: local}\nrows: [{name: a, topology: ha, levels: [1]}]\n", "bench.generators", "no such bench key"),
            ("name: x\nbench: {hold: fast}\nrows: [{name: a, topology: ha, levels: [1]}]\n", "bench.hold", "duration"),
            ("name: x\nrows: [{name: a, topology: ha, levels: [1], bench: {sample: 10ms}}]\n", "rows[0].bench.sample", "out of range"),
            ("name: x\nrows: [{name: a, topology: ha, levels: [1], bench: {scenario: idel}}]\n", "rows[0].bench.scenario", "unknown scenario"),
            ("name: x\nrows: [{name: a, topology: ha, levels: [1], bench: {slo: [login_p96=1s]}}]\n", "rows[0].bench.slo", "login_p96"),
            ("name: x\nrowz: []\n", "campaign", "unknown field"),
            (
                "name: x\nset: [SMTP_PASSWORD=hunter2]\nrows: [{name: a, topology: ha, levels: [1]}]\n",
                "set",
                "looks like a credential",
            ),
        ] {
            let e = parse("c.yaml", body).unwrap_err();
            assert!(e.field.starts_with(field), "{body}: {e}");
            assert!(e.to_string().contains(says), "{body}: {e}");
            assert!(!e.to_string().contains("hunter2"), "a secret said back: {e}");
        }
    }

    /// A credential as a plain value is refused wherever a row can give one — `set:` by a name with
    /// PASS, KEY, DSN… or a URL's password, and a sweep's `vary` — with the fix (`secrets:`), never
    /// saying the value back.
    #[test]
    fn a_credential_in_set_or_vary_is_refused_without_its_value() {
        let one = "rows: [{name: a, topology: single, levels: [1]}]";
        for (body, field, fix) in [
            (format!("name: x\nset: [SMTP_PASS=hunter2]\n{one}\n"), "set (in", "secrets: [SMTP_PASS]"),
            (format!("name: x\nset: [API_KEY=hunter2]\n{one}\n"), "set (in", "secrets: [API_KEY]"),
            (
                format!("name: x\nset: ['MAILER_URL=smtp://u:hunter2@mail:25']\n{one}\n"),
                "set (in",
                "secrets: [MAILER_URL]",
            ),
            (
                "name: x\nrows: [{name: a, topology: single, levels: [1], set: [MAILER_DSN=hunter2]}]\n".into(),
                "rows[0].set",
                "secrets: [MAILER_DSN]",
            ),
            (
                "name: x\nrows: [{name: a, topology: single, levels: [1], vary: {env.SMTP_PASSWORD: [hunter2, hunter3]}}]\n".into(),
                "vary.env.SMTP_PASSWORD",
                "secrets: [NAME]",
            ),
            (
                "name: x\nrows: [{name: a, topology: single, levels: [1], vary: {env.DB_URL: ['pg://a:hunter2@db']}}]\n".into(),
                "vary.env.DB_URL",
                "--set-secret",
            ),
        ] {
            let e = parse("c.yaml", &body).unwrap_err();
            let text = e.to_string();
            assert!(e.field.starts_with(field), "{body}: {text}");
            assert!(text.contains("looks like a credential") && text.contains(fix), "{body}: {text}");
            assert!(!text.contains("hunter"), "a secret said back: {text}");
        }
        // The shipped campaigns' settings stay plain.
        let f = parse(
            "c.yaml",
            &format!(
                "name: x\nset: [STANDIN_ROOM_CLEANUP_MS=500, STANDIN_FAULT=leak-on-close]\n{one}\n"
            ),
        );
        assert_eq!(f.unwrap().set.len(), 2);
    }

    /// `secrets:` names app variables whose values exectl reads from its environment: the file's and
    /// the row's, names only, each a variable's name once and not also a plain setting.
    #[test]
    fn secrets_are_names_of_the_file_and_of_the_row() {
        let f = parse(
            "c.yaml",
            "name: x\nsecrets: [SMTP_PASSWORD]\nrows:\n  - {name: a, topology: single, levels: [1]}\n  - {name: b, topology: single, levels: [1], secrets: [API_KEY, SMTP_PASSWORD]}\n",
        )
        .unwrap();
        assert_eq!(f.secrets, ["SMTP_PASSWORD"]);
        assert_eq!(f.rows[0].secrets, ["SMTP_PASSWORD"]);
        assert_eq!(f.rows[1].secrets, ["SMTP_PASSWORD", "API_KEY"]);
        let one = "rows: [{name: a, topology: single, levels: [1]}]";
        for (body, field, says) in [
            (format!("name: x\nsecrets: [hunter2]\n{one}\n"), "secrets[0]", "not an app variable's name"),
            (format!("name: x\nsecrets: hunter2\n{one}\n"), "secrets", "give a list of names"),
            (format!("name: x\nsecrets: [A_KEY, A_KEY]\n{one}\n"), "secrets[1]", "given twice"),
            (
                "name: x\nset: [A_MODE=1]\nrows: [{name: a, topology: single, levels: [1], secrets: [A_MODE]}]\n".into(),
                "rows[0].secrets",
                "also given in set:",
            ),
        ] {
            let e = parse("c.yaml", &body).unwrap_err();
            assert!(e.field.starts_with(field), "{body}: {e}");
            assert!(e.problem.contains(says), "{body}: {e}");
            assert!(!e.to_string().contains("hunter2"), "{e}");
        }
        // No secrets: no `secrets` key in the row as recorded (`row_inputs`).
        let plain = parse("c.yaml", &format!("name: x\n{one}\n")).unwrap();
        assert!(!serde_json::to_string(&plain.rows[0])
            .unwrap()
            .contains("secrets"));
    }

    /// A bench switch takes a YAML boolean: `tokens: yes` read as false once benched with logins.
    #[test]
    fn a_bench_switch_takes_a_boolean_and_nothing_else() {
        let f = parse(
            "c.yaml",
            "name: x\nbench: {tokens: true, relogin: false}\nrows: [{name: a, topology: single, levels: [1], bench: {browser_probe: true}}]\n",
        )
        .unwrap();
        let b = &f.rows[0].bench;
        assert_eq!((b.tokens, b.browser_probe), (Some(true), Some(true)));
        assert_eq!((b.relogin, b.continue_after_fail), (Some(false), None));
        for (bench, key, given) in [
            ("{tokens: yes}", "tokens", "text"),
            ("{relogin: 1}", "relogin", "a number"),
            ("{browser_probe: 'true'}", "browser_probe", "text"),
            (
                "{continue_after_fail: [true]}",
                "continue_after_fail",
                "not a single value",
            ),
        ] {
            for body in [
                format!(
                    "name: x\nbench: {bench}\nrows: [{{name: a, topology: single, levels: [1]}}]\n"
                ),
                format!(
                    "name: x\nrows: [{{name: a, topology: single, levels: [1], bench: {bench}}}]\n"
                ),
            ] {
                let e = parse("c.yaml", &body).unwrap_err();
                assert!(e.field.contains(&format!("bench.{key}")), "{body}: {e}");
                assert!(
                    e.problem
                        .contains(&format!("takes a YAML boolean; this is {given}")),
                    "{e}"
                );
                assert!(e.fix.contains(&format!("{key}: true")), "{e}");
            }
        }
    }

    /// A spec switch takes a YAML boolean too, in the file's `spec:` and a row's, as the schema says.
    #[test]
    fn a_spec_switch_takes_a_boolean() {
        let ok = parse(
            "c.yaml",
            "name: x\nspec: {traefik: true}\nrows: [{name: a, topology: ha, levels: [1]}]\n",
        )
        .unwrap();
        assert_eq!(ok.spec, [("traefik".to_string(), "true".to_string())]);
        for body in [
            "name: x\nspec: {traefik: yes}\nrows: [{name: a, topology: ha, levels: [1]}]\n",
            "name: x\nrows: [{name: a, topology: ha, levels: [1], spec: {traefik: 1}}]\n",
        ] {
            let e = parse("c.yaml", body).unwrap_err();
            assert!(e.field.contains("spec.traefik"), "{body}: {e}");
            assert!(e.problem.contains("takes a YAML boolean"), "{e}");
            assert!(e.fix.contains("traefik: true"), "{e}");
        }
    }

    /// A file an editor began with a byte-order mark reads as without it: a campaign file, a sweep
    /// file, exectl.yaml, an images file.
    #[test]
    fn a_byte_order_mark_is_no_part_of_the_file() {
        let path = std::path::Path::new("exectl.yaml");
        let spec = crate::spec::parse_spec_file(path, "\u{feff}instances: 3\n").unwrap();
        assert_eq!(spec.instances.unwrap().value, "3");
        let images = crate::spec::parse_images_file(path, "\u{feff}app: a/b:1\n").unwrap();
        assert_eq!(images[0].0, "app");
        let with = format!("\u{feff}{QUICK}");
        assert_eq!(
            parse("quick.yaml", &with).unwrap(),
            parse("quick.yaml", QUICK).unwrap()
        );
        let sweep = "\u{feff}vary: {nginx: [a, b]}\nlevels: [10]\n";
        assert_eq!(
            crate::sweep::file::parse("s.yaml", sweep).unwrap().vary,
            ["nginx=a,b"]
        );
    }

    /// docs/campaign-file.md documents every key the parser takes: the file's (as serde lists them),
    /// a row's, the bench's, the sweep's and its searches'.
    #[test]
    fn every_key_is_documented() {
        let doc = include_str!("../../../docs/campaign-file.md");
        // serde names every field it takes when it meets one it does not.
        let listed = |e: String| -> Vec<String> {
            let (_, list) = e
                .split_once("expected one of")
                .unwrap_or_else(|| panic!("{e}"));
            list.split('`')
                .skip(1)
                .step_by(2)
                .map(str::to_string)
                .collect()
        };
        let file_keys = listed(parse("c.yaml", "nosuchkey: 1\n").unwrap_err().problem);
        assert!(
            file_keys.len() >= 9 && file_keys.contains(&"secrets".to_string()),
            "{file_keys:?}"
        );
        let search = |key: &str| {
            listed(
                crate::sweep::file::parse("s.yaml", &format!("{key}: {{nosuchkey: 1}}\n"))
                    .unwrap_err()
                    .problem,
            )
        };
        let keys: Vec<String> = file_keys
            .into_iter()
            .chain(
                ROW_KEYS
                    .iter()
                    .chain(&SWEEP_KEYS)
                    .map(|k| k.to_string())
                    .chain(
                        settings::BENCH_SETTINGS
                            .iter()
                            .filter(|s| s.scope == Scope::Files)
                            .map(|s| s.key.to_string()),
                    ),
            )
            .chain(search("find_capacity"))
            .chain(search("find_room"))
            .collect();
        let missing: Vec<&String> = keys
            .iter()
            .filter(|k| !doc.contains(&format!("`{k}`")))
            .collect();
        assert!(
            missing.is_empty(),
            "docs/campaign-file.md does not document {missing:?}"
        );
    }
}
