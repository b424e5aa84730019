//! The shipped JSON Schemas (campaigns/campaign.schema.json, campaigns/sweep.schema.json) and the
//! key-by-key reference in docs/campaign-file.md are made from the declarations the readers use
//! (`exectl_core::campaign::schema`): a test holds each current (`EXECTL_BLESS=1` rewrites them), and
//! every shipped campaign and sweep file validates against its schema with a real validator (Python's
//! `jsonschema`, the reference implementation; scripts/packages.sh installs it). Files the readers
//! refuse — `tokens: yes`, an unknown key — are refused by the schema too.

use std::path::{Path, PathBuf};
use std::process::Command;

use exectl_core::campaign::schema;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// `path` holds `want`, or is rewritten to it under EXECTL_BLESS=1.
fn current(path: &Path, want: &str) {
    if std::env::var_os("EXECTL_BLESS").is_some() {
        std::fs::write(path, want).unwrap();
    }
    let have = std::fs::read_to_string(path).unwrap_or_default();
    assert!(
        have == want,
        "{} is not what the declarations make: run EXECTL_BLESS=1 cargo test --test suite schema_files::",
        path.display()
    );
}

const BEGIN: &str = "<!-- reference: generated from core/src/campaign/schema.rs -->\n";
const END: &str = "<!-- end of the generated reference -->\n";

#[test]
fn the_shipped_schemas_and_the_reference_are_current() {
    let dir = root().join("campaigns");
    current(
        &dir.join("campaign.schema.json"),
        &schema::shipped(&schema::campaign()),
    );
    current(
        &dir.join("sweep.schema.json"),
        &schema::shipped(&schema::sweep()),
    );
    let doc_path = root().join("docs/campaign-file.md");
    let doc = std::fs::read_to_string(&doc_path).unwrap();
    let (before, rest) = doc
        .split_once(BEGIN)
        .expect("the generated reference's start");
    let (_, after) = rest.split_once(END).expect("the generated reference's end");
    current(
        &doc_path,
        &format!(
            "{before}{BEGIN}{}{END}{after}",
            exectl_core::campaign::reference::reference()
        ),
    );
}

/// Each YAML file as JSON, `schema`'s verdict on it from Python's jsonschema: None when valid, else
/// the validator's first message.
fn validate(schema_path: &Path, files: &[(String, serde_json::Value)]) -> Vec<Option<String>> {
    let script = r#"
import json, sys, jsonschema
schema = json.load(open(sys.argv[1]))
jsonschema.Draft7Validator.check_schema(schema)
v = jsonschema.Draft7Validator(schema)
for doc in json.load(sys.stdin):
    errors = sorted(v.iter_errors(doc), key=lambda e: list(e.path))
    print(json.dumps(None if not errors else "/".join(map(str, errors[0].path)) + ": " + errors[0].message))
"#;
    let mut child = Command::new("python3")
        .args(["-c", script])
        .arg(schema_path)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("python3");
    let docs: Vec<&serde_json::Value> = files.iter().map(|(_, v)| v).collect();
    let input = serde_json::to_vec(&docs).unwrap();
    use std::io::Write;
    child.stdin.take().unwrap().write_all(&input).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "python3 jsonschema: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn yaml_files(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .collect();
    out.sort();
    out
}

fn as_json(body: &str) -> serde_json::Value {
    serde_norway::from_str(body).unwrap()
}

#[test]
fn every_shipped_campaign_and_sweep_file_validates_and_bad_ones_do_not() {
    let campaigns: Vec<(String, serde_json::Value)> = yaml_files(&root().join("campaigns"))
        .iter()
        .map(|p| {
            let body = std::fs::read_to_string(p).unwrap();
            assert!(
                body.starts_with("# yaml-language-server: $schema=campaign.schema.json\n"),
                "{} does not name its schema on its first line",
                p.display()
            );
            (p.display().to_string(), as_json(&body))
        })
        .collect();
    assert!(campaigns.len() >= 3, "{campaigns:?}");
    let one = "rows: [{name: a, topology: single, levels: [1]}]";
    let bad = [
        format!("name: x\nbench: {{tokens: yes}}\n{one}\n"),
        format!("name: x\nspec: {{traefik: yes}}\n{one}\n"),
        format!("name: x\nbench: {{hold: soon}}\n{one}\n"),
        format!("name: x\nbench: {{generators: local}}\n{one}\n"),
        format!("name: x\ncolour: red\n{one}\n"),
        "name: x\nrows: [{name: a, topology: single, levels: [1], bench: {scenario: idel}}]\n"
            .into(),
        "name: x\nrows: [{name: a, topology: triple, levels: [1]}]\n".into(),
        "name: x\nrows: [{name: a, topology: single, levels: [1], spec: {stack: s}}]\n".into(),
    ];
    let mut docs = campaigns.clone();
    docs.extend(bad.iter().map(|b| (b.clone(), as_json(b))));
    let verdicts = validate(&root().join("campaigns/campaign.schema.json"), &docs);
    for ((name, _), verdict) in docs.iter().zip(&verdicts) {
        let shipped = campaigns.iter().any(|(n, _)| n == name);
        assert_eq!(verdict.is_none(), shipped, "{name}: {verdict:?}");
        // The readers refuse what the schema refuses.
        if !shipped {
            assert!(
                exectl_core::campaign::file::parse("c.yaml", name).is_err(),
                "{name}"
            );
        }
    }
    let sweeps: Vec<(String, serde_json::Value)> = yaml_files(&root().join("examples/sweeps"))
        .iter()
        .map(|p| {
            let body = std::fs::read_to_string(p).unwrap();
            exectl_core::sweep::file::parse(&p.display().to_string(), &body).unwrap();
            (p.display().to_string(), as_json(&body))
        })
        .collect();
    assert!(!sweeps.is_empty());
    let mut docs = sweeps.clone();
    docs.push((
        "levels: [10]\nrepeat: many\n".into(),
        as_json("levels: [10]\nrepeat: many\n"),
    ));
    let verdicts = validate(&root().join("campaigns/sweep.schema.json"), &docs);
    assert_eq!(
        verdicts.iter().map(Option::is_none).collect::<Vec<_>>(),
        sweeps
            .iter()
            .map(|_| true)
            .chain([false])
            .collect::<Vec<_>>(),
        "{verdicts:?}"
    );
}
