//! The JSON Schema of a campaign file and of a sweep file, made from the declarations their readers use:
//! the bench settings (`bench::settings`), the spec settings (`spec_settings`), a row's keys and a sweep's
//! (`campaign::file`). Shipped as campaigns/campaign.schema.json and campaigns/sweep.schema.json (a
//! test keeps them current and validates every shipped file against them), so that an editor given
//! `# yaml-language-server: $schema=campaign.schema.json` completes and checks each key. The schema
//! says a file's shape and each value's type and range; the readers also check what a schema cannot
//! (a fault's service in the row's topology, a credential in `set:`).

use serde_json::{json, Map, Value};

use crate::bench::settings::{Kind, Scope, Setting, BENCH_SETTINGS};
use crate::campaign::file::CAMPAIGN_SAYS;
use crate::spec_settings::{Kind as SpecKind, SETTINGS};

/// A duration as `units` reads it: `30s`, `1m30s`, `500ms`, or `0`.
const DURATION: &str = r"^(0|([0-9]+(\.[0-9]+)?(ns|us|ms|s|m|h|d))+)$";
/// A whole number as text: `10_000`.
const WHOLE: &str = r"^[0-9][0-9_]*$";

fn with_description(mut v: Value, description: String) -> Value {
    v["description"] = Value::String(description);
    v
}

/// One bench setting's value.
fn bench_value(s: &Setting) -> Value {
    let v = match s.kind {
        Kind::Duration { .. } => json!({"type": "string", "pattern": DURATION}),
        Kind::Count { min, max } => json!({"anyOf": [
            {"type": "integer", "minimum": min, "maximum": max},
            {"type": "string", "pattern": WHOLE},
        ]}),
        Kind::Rate { min, max } => json!({"anyOf": [
            {"type": "number", "minimum": min, "maximum": max},
            {"type": "string", "pattern": r"^[0-9]+(\.[0-9]+)?(/s)?$"},
        ]}),
        Kind::Switch => json!({"type": "boolean"}),
        Kind::Scenario => json!({"enum": crate::load::scenario::NAMES}),
        Kind::Objectives => json!({"anyOf": [
            {"type": "array", "items": {"type": "string", "pattern": "^[a-z0-9_]+=.+$"}},
            {"type": "string"},
        ]}),
        Kind::Fault => json!({"type": "string", "pattern": "@"}),
        Kind::Text => json!({"type": "string"}),
    };
    let duration = match s.kind {
        Kind::Duration { .. } => format!(" ({})", s.kind.describe()),
        _ => String::new(),
    };
    with_description(v, format!("{}{duration}", s.help_line()))
}

/// `bench:`: the settings a file may give.
fn bench() -> Value {
    let props: Map<String, Value> = BENCH_SETTINGS
        .iter()
        .filter(|s| s.scope == Scope::Files)
        .map(|s| (s.key.to_string(), bench_value(s)))
        .collect();
    json!({
        "type": "object",
        "description": "bench settings: `exectl bench`'s flags without `--`; a row's go over the file's key by key",
        "properties": props,
        "additionalProperties": false,
    })
}

/// `spec:`: exectl.yaml's settings but those the campaign says.
fn spec() -> Value {
    let props: Map<String, Value> = SETTINGS
        .iter()
        .filter(|s| !CAMPAIGN_SAYS.contains(&s.key))
        .map(|s| {
            let v = match s.kind {
                SpecKind::Switch => json!({"type": "boolean"}),
                _ => json!({"type": ["string", "number"]}),
            };
            (s.key.to_string(), with_description(v, s.help.to_string()))
        })
        .collect();
    json!({
        "type": "object",
        "description": "exectl.yaml's settings but `topology`, `stack` and `target`, which the campaign says; a row's go over the file's key by key",
        "properties": props,
        "additionalProperties": false,
    })
}

fn whole(min: u64, max: u64, description: &str) -> Value {
    json!({
        "anyOf": [
            {"type": "integer", "minimum": min, "maximum": max},
            {"type": "string", "pattern": WHOLE},
        ],
        "description": description,
    })
}

fn percent() -> Value {
    json!({"type": "string", "pattern": r"^[0-9]+(\.[0-9]+)? ?%$",
        "description": "0.1% to 100%, with its %"})
}

/// A sweep's keys, as a sweep file and a campaign row give them.
fn sweep_properties() -> Map<String, Value> {
    let users = crate::bench::levels::MAX_USERS;
    let room = crate::sweep::vary::Workload::MAX_ROOM;
    let values = json!({"anyOf": [
        {"type": "array", "minItems": 1, "items": {"type": ["string", "number", "boolean"]}},
        {"type": ["string", "number"]},
    ]});
    let props = json!({
        "levels": {
            "anyOf": [
                {"type": "array", "minItems": 1, "items": {"type": "integer", "minimum": 1, "maximum": users}},
                {"type": "integer", "minimum": 1, "maximum": users},
                {"type": "string"},
            ],
            "description": "ascending user counts, 1 to 1,000,000 each: one bench at these levels per point",
        },
        "vary": {
            "type": "object",
            "description": "one variable (two with `matrix`) and its values, 1 to 32 of them: a spec setting by its exectl.yaml key (`nginx: [tuned-ip-hash, tuned-least-conn]`), `image.SERVICE`, `env.NAME`, or the workload (`users_per_project`, `scenario`, `interval`); no credential [default: none, the stack as it is]",
            "additionalProperties": values,
        },
        "matrix": {"type": "boolean", "description": "`true`: `vary` gives two variables, every pair of their values a point [default: false]"},
        "repeat": whole(1, 50, "runs of each point, interleaved [default: 1]"),
        "find_capacity": {
            "type": "object",
            "description": "a capacity search over the users at once: `from` (users, default 100), `to` (users, required), `precision` (0.1% to 100%, default 10%)",
            "properties": {
                "from": whole(1, users, "the first level [default: 100]"),
                "to": whole(1, users, "the last level (required)"),
                "precision": percent(),
            },
            "required": ["to"],
            "additionalProperties": false,
        },
        "find_room": {
            "type": "object",
            "description": "a room-size search, the largest room of `users` users at once: `users` (2 or more, required), `from` (room, default 2), `to` (room, at most `users`, required), `precision` (default 10%)",
            "properties": {
                "users": whole(2, users, "the users at once (required)"),
                "from": whole(1, room, "the first room [default: 2]"),
                "to": whole(1, room, "the largest room, at most users (required)"),
                "precision": percent(),
            },
            "required": ["users", "to"],
            "additionalProperties": false,
        },
    });
    match props {
        Value::Object(m) => m,
        _ => unreachable!("an object"),
    }
}

fn text(description: &str) -> Value {
    json!({"type": "string", "description": description})
}

fn settings_list(description: &str) -> Value {
    json!({"type": "array", "items": {"type": "string", "pattern": "^[^=]+=.*$"}, "description": description})
}

fn secret_names() -> Value {
    json!({"type": "array", "items": {"type": "string", "pattern": "^[A-Za-z_][A-Za-z0-9_]*$"},
        "description": "app variables whose values come from exectl's environment, never from the file (docs/campaign-file.md, Secrets); a row's are added to the file's"})
}

fn row() -> Value {
    let mut props = Map::new();
    props.insert(
        "name".into(),
        text("not empty, each row's its own; its folder is `rows/NN-name`"),
    );
    props.insert(
        "study".into(),
        text("the study's row it stands for (the table's \"study\" column)"),
    );
    props.insert(
        "topology".into(),
        json!({"enum": ["single", "ha"], "description": "the row's stack: STACK-single or STACK-ha"}),
    );
    props.insert("spec".into(), spec());
    props.insert(
        "set".into(),
        settings_list("the app's environment, added to the file's (a key the file sets, a row cannot set again)"),
    );
    props.insert("secrets".into(), secret_names());
    props.insert("bench".into(), bench());
    props.insert(
        "users_per_project".into(),
        whole(1, 100_000, "the seeding's room size, not beside a `vary` of `users_per_project` [default: one project per account]"),
    );
    props.insert(
        "note".into(),
        text("said under \"Not measured\" in the report"),
    );
    props.extend(sweep_properties());
    json!({
        "type": "object",
        "properties": props,
        "required": ["name", "topology"],
        "additionalProperties": false,
    })
}

/// The campaign file's schema.
pub fn campaign() -> Value {
    json!({
        "$schema": "http://json-schema.org/draft-07/schema#",
        "title": "exectl campaign file",
        "description": "A study as rows, each one bench or one sweep of a stack of its topology (docs/campaign-file.md)",
        "type": "object",
        "properties": {
            "name": text("not empty: the run id is `C-NAME-TIME` (`--run-id` overrides it)"),
            "stack": text("each row's stack is `STACK-single` or `STACK-ha`; `--stack` overrides it [default: `name`]"),
            "images": text("an images file (as `--images`), relative to the campaign file [default: the embedded images]"),
            "spec": spec(),
            "set": settings_list("the app's environment every row starts from, as `--set`; no credential (docs/campaign-file.md, Secrets)"),
            "secrets": secret_names(),
            "bcrypt_cost": whole(4, 31, "the seeded accounts' password cost [default: 10, prepare's]"),
            "bench": bench(),
            "teardown": {"type": "boolean", "description": "`true`: each stack is removed (its data kept) after the last row that uses it, as `--teardown`; left out, the end of the run says which stacks are still up and the command that removes each [default: false]"},
            "rows": {"type": "array", "minItems": 1, "items": row(), "description": "the study's rows, run in order: at least one"},
        },
        "required": ["name", "rows"],
        "additionalProperties": false,
    })
}

/// The sweep file's schema.
pub fn sweep() -> Value {
    json!({
        "$schema": "http://json-schema.org/draft-07/schema#",
        "title": "exectl sweep file",
        "description": "A sweep's variable, repeats and levels or search (`exectl sweep --sweep-file`)",
        "type": "object",
        "properties": sweep_properties(),
        "additionalProperties": false,
    })
}

/// The schema as shipped: pretty JSON and a final newline.
pub fn shipped(schema: &Value) -> String {
    format!(
        "{}\n",
        serde_json::to_string_pretty(schema).expect("a JSON value")
    )
}

/// docs/campaign-file.md's table of the bench keys, from the same declaration.
pub fn bench_table() -> String {
    let mut out = String::from("| Key | Type | Default | What it does |\n|---|---|---|---|\n");
    for s in BENCH_SETTINGS.iter().filter(|s| s.scope == Scope::Files) {
        let default = match (s.default, s.kind) {
            (Some(d), _) => d.to_string(),
            (None, Kind::Switch) => "`false`".into(),
            (None, _) => "none".into(),
        };
        let escape = |t: &str| t.replace('|', "\\|");
        out.push_str(&format!(
            "| `{}` | {} | {} | {} |\n",
            s.key,
            escape(&s.kind.describe()),
            escape(&default),
            escape(s.help)
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::campaign::file::{ROW_KEYS, SWEEP_KEYS};

    fn keys(v: &Value) -> Vec<String> {
        let mut k: Vec<String> = v["properties"]
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect();
        k.sort();
        k
    }

    /// The schema's keys are the readers': a row's and a sweep's from `campaign::file`, the bench's
    /// from its table; a key added to a reader and not here fails.
    #[test]
    fn the_schema_names_the_keys_the_readers_take() {
        let c = campaign();
        let row = &c["properties"]["rows"]["items"];
        let mut want: Vec<String> = ROW_KEYS
            .iter()
            .chain(&SWEEP_KEYS)
            .map(|k| k.to_string())
            .collect();
        want.sort();
        assert_eq!(keys(row), want);
        let mut sweep_keys: Vec<String> = SWEEP_KEYS.iter().map(|k| k.to_string()).collect();
        sweep_keys.sort();
        assert_eq!(keys(&sweep()), sweep_keys);
        let bench = &c["properties"]["bench"];
        assert!(keys(bench).contains(&"tokens".to_string()));
        assert!(!keys(bench).contains(&"generators".to_string()));
        assert_eq!(bench["properties"]["tokens"]["type"], "boolean");
        assert!(!keys(&c["properties"]["spec"]).contains(&"topology".to_string()));
    }

    #[test]
    fn the_bench_table_has_a_line_per_file_key() {
        let t = bench_table();
        for s in BENCH_SETTINGS {
            assert_eq!(
                t.contains(&format!("| `{}` |", s.key)),
                s.scope == Scope::Files,
                "{}",
                s.key
            );
        }
    }
}
