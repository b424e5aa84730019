//! docs/campaign-file.md's key-by-key reference, rendered from the campaign file's schema (`schema`) and
//! the spec's and the bench's tables: each key is declared once, and its reader, the schema an editor
//! checks against and this reference all come from that declaration (a test keeps the doc current).

use serde_json::Value;

use super::file::{CAMPAIGN_SAYS, FILE_KEYS, ROW_KEYS, SWEEP_KEYS};
use super::schema;
use crate::spec_settings::{Kind as SpecKind, SETTINGS};

/// The reference: the file's keys, a row's, a row's benches (a sweep file's keys), the spec's and the
/// bench's, each a Markdown table under its heading.
pub fn reference() -> String {
    let campaign = schema::campaign();
    let row = &campaign["properties"]["rows"]["items"];
    let sweep = schema::sweep();
    let mut out = String::from("## The file's keys\n\n");
    out.push_str(&table(&campaign, &FILE_KEYS));
    out.push_str("\n## A row's keys\n\n");
    out.push_str(&table(row, &ROW_KEYS));
    out.push_str(
        "\nAnd the row's benches, as a sweep file gives them (`exectl sweep --sweep-file` reads the \
         same keys): `levels`, or `find_capacity`, or `find_room` (one of the three, required in a \
         row), with `vary`, `matrix` and `repeat` for a row that compares:\n\n",
    );
    out.push_str(&table(&sweep, &SWEEP_KEYS));
    out.push_str(
        "\n## Spec keys (`spec:`, the file's or a row's)\n\nexectl.yaml's keys, each also a flag of \
         `exectl deploy` (`--` and the key with `-` for `_`); a value is checked as the flag's is.\n\n",
    );
    out.push_str(&spec_table());
    out.push_str(
        "\n## Bench keys (`bench:`, the file's or a row's)\n\n`exectl bench`'s flags without `--`, \
         each read as its type when the file is read (`core/src/bench/settings.rs`). A row's keys go \
         over the file's one by one; a row's `slo` list replaces the file's.\n\n",
    );
    out.push_str(&schema::bench_table());
    out
}

/// `| Key | Type | What it is |` of `keys` of `object`, in the readers' order (the schema's own is
/// alphabetical).
fn table(object: &Value, keys: &[&str]) -> String {
    let mut out = String::from("| Key | Type | What it is |\n|---|---|---|\n");
    for key in keys {
        out.push_str(&line(object, key, &object["properties"][key]));
        out.push('\n');
    }
    out
}

/// One key's line, without its end: `| `key` | type | description (required) |`.
fn line(object: &Value, key: &str, v: &Value) -> String {
    let required = object["required"]
        .as_array()
        .is_some_and(|r| r.iter().any(|k| k == key));
    let description = v["description"].as_str().unwrap_or_default();
    format!(
        "| `{key}` | {} | {}{} |",
        escape(&type_words(v)),
        escape(description),
        if required { " (required)" } else { "" }
    )
}

fn escape(text: &str) -> String {
    text.replace('|', "\\|")
}

/// A schema's type in words: its first alternative (the others spell the same value as text).
fn type_words(v: &Value) -> String {
    if let Some(names) = v["enum"].as_array() {
        let names: Vec<&str> = names.iter().filter_map(Value::as_str).collect();
        return format!("one of {}", names.join(", "));
    }
    if let Some(first) = v["anyOf"].as_array().and_then(|a| a.first()) {
        return type_words(first);
    }
    let range = |unit: &str| match (v["minimum"].as_u64(), v["maximum"].as_u64()) {
        (Some(min), Some(max)) => format!("{unit}, {min}..{max}"),
        _ => unit.to_string(),
    };
    match v["type"].as_str() {
        Some("boolean") => "boolean".into(),
        Some("integer") => range("whole number"),
        Some("string") => match v["pattern"].as_str() {
            Some(p) if p.contains('%') => "percent, with its %".into(),
            _ => "text".into(),
        },
        Some("array") => {
            let items = &v["items"];
            match (items["type"].as_str(), items["pattern"].as_str()) {
                (Some("object"), _) => "list of mappings".into(),
                (Some("string"), Some(p)) if p.contains('=') => "list of KEY=VALUE".into(),
                (Some("string"), _) => "list of names".into(),
                // "whole number, 1..9" → "whole numbers, 1..9"
                _ => format!("list of {}", type_words(items).replacen(',', "s,", 1)),
            }
        }
        Some("object") => "mapping".into(),
        _ => "text or number".into(),
    }
}

/// `| Key | Type | What it is |` of exectl.yaml's settings a campaign's `spec:` takes.
fn spec_table() -> String {
    let mut out = String::from("| Key | Type | What it is |\n|---|---|---|\n");
    for s in SETTINGS.iter().filter(|s| !CAMPAIGN_SAYS.contains(&s.key)) {
        let kind = match (s.kind, s.value_name) {
            (SpecKind::Switch, _) => "boolean",
            (_, Some("N")) => "whole number",
            (_, Some("DURATION")) => "duration",
            (_, Some("SIZE")) => "size (`512m`, `2g`)",
            (_, Some("CPUS")) => "CPUs (`0.5`, `2`)",
            (_, Some("PORT")) => "port",
            _ => "text",
        };
        out.push_str(&format!("| `{}` | {kind} | {} |\n", s.key, escape(s.help)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every key a reader takes has its line, under the right heading: the file's, a row's, a sweep's,
    /// the spec's, the bench's.
    #[test]
    fn every_key_has_its_line() {
        let r = reference();
        let section = |heading: &str| {
            let start = r.find(heading).unwrap_or_else(|| panic!("{heading}"));
            let rest = &r[start + heading.len()..];
            rest[..rest.find("\n## ").unwrap_or(rest.len())].to_string()
        };
        let file = section("## The file's keys");
        for k in ["name", "stack", "images", "bcrypt_cost", "teardown", "rows"] {
            assert!(file.contains(&format!("| `{k}` |")), "{k}");
        }
        assert!(file.contains("| `bench` | mapping |"));
        assert!(file.contains("(required)"));
        let row = section("## A row's keys");
        assert!(
            file.find("| `name` |") < file.find("| `rows` |"),
            "the readers' order"
        );
        for k in ROW_KEYS {
            assert!(row.contains(&format!("| `{k}` |")), "{k}");
        }
        for k in SWEEP_KEYS {
            assert!(row.contains(&format!("| `{k}` |")), "{k}");
        }
        assert!(row.contains("| `topology` | one of single, ha |"), "{row}");
        assert!(row.contains("| `repeat` | whole number, 1..50 |"), "{row}");
        assert!(
            row.contains("| `levels` | list of whole numbers, 1..1000000 |"),
            "{row}"
        );
        let spec = section("## Spec keys");
        assert!(spec.contains("| `cpus` | CPUs"), "{spec}");
        assert!(
            !spec.contains("| `topology` |"),
            "the campaign says it: {spec}"
        );
        assert!(section("## Bench keys").contains("| `hold` | duration"));
    }
}
