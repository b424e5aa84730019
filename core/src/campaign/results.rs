//! A campaign's results.json: the file it ran (path and digest, a digest of each setting it gives, the
//! file's and each row's, so a resume can name the key that changed), each row as it ended — run (its
//! sweep's id and folder, its table's lines) or not run (why) — and the estimate it began with.
//! Written after every row, so a campaign stopped at row k keeps rows 1..k-1. Each write seals it
//! (`crate::seal`): a resume refuses a file changed since, naming what changed.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::file::{CampaignFile, Row};
use super::table::Line;
use crate::bench::results::RunState;
use crate::seal::{fingerprint, Sealed};

/// results.json's version: a reader refuses another. 2: sealed, and a digest per setting (`inputs`)
/// with the images file's content, where 1 had one digest per row and the images file's path.
pub const SCHEMA: u32 = 2;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CampaignResults {
    pub schema: u32,
    pub run_id: String,
    pub state: RunState,
    /// The process running it (None once it ended): a resume refuses a campaign still running.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    pub exectl_version: String,
    pub name: String,
    /// The campaign file, as given, where it is (a resume reads it there) and the sha256 of its text.
    pub file: String,
    pub file_path: String,
    pub file_sha256: String,
    pub target: String,
    /// The target as the shell keeps it (a resume connects to it again), and the flags given over the
    /// file's: a resume runs the rest as begun.
    #[serde(default)]
    pub target_spec: serde_json::Value,
    #[serde(default)]
    pub flags: RunFlags,
    pub started_unix_s: u64,
    /// Seconds spent running rows (over every resume).
    pub duration_s: f64,
    /// What `--plan` estimated for the whole campaign, seconds.
    pub estimate_s: f64,
    /// Every row of the file, in order: those not reached yet are `Pending`.
    pub rows: Vec<RowRecord>,
    /// Why the campaign stopped before its last row (a signal, a lost link), when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<String>,
    /// What was not measured, over every row, as the reports say it (each row's findings are its own).
    #[serde(default)]
    pub not_measured: Vec<String>,
    /// The file's own settings (`file_inputs`), each as given or, for one that may hold a secret and
    /// the images file's content, as its fingerprint: what every row starts from.
    #[serde(default)]
    pub inputs: BTreeMap<String, String>,
    /// Each other field's fingerprint, and each row's (`rows.N`), as last written (`crate::seal`).
    #[serde(default)]
    pub fingerprints: BTreeMap<String, String>,
    /// The rows' stacks still running when it ended, each with the command that removes it, and those
    /// it tore down (`--teardown`).
    #[serde(default)]
    pub left_up: Vec<LeftUp>,
    #[serde(default)]
    pub torn_down: Vec<String>,
}

/// A stack a campaign left running (its data kept), and the command that removes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LeftUp {
    pub stack: String,
    pub command: String,
}

/// A row's run that ended before its end (stopped, or not run) and was run again: its figures are
/// not counted, its folder is kept.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Attempt {
    pub sweep: String,
    pub dir: String,
    pub state: RowState,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub took_s: Option<f64>,
    /// Its reports found in its folder (the sweep's, each bench's), relative to the campaign's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reports: Vec<String>,
}

/// The flags over every row's spec: `--stack`, `--http-port`, `--lb-port`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunFlags {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stack: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http_port: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lb_port: Option<String>,
    /// `--teardown` (or the file's `teardown: true`): each stack removed after its last row.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub teardown: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RowRecord {
    /// 1-based.
    pub index: usize,
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub study: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    pub topology: String,
    pub stack: String,
    /// The row's settings (`row_inputs`: its own keys, the file's bench keys under them), each as
    /// given or as its fingerprint (`file_inputs`'): a resume names the key that changed.
    #[serde(default)]
    pub inputs: BTreeMap<String, String>,
    pub state: RowState,
    /// Its sweep's run id and folder (relative to the campaign's), once begun.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sweep: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dir: Option<String>,
    /// What --plan estimated for it, and what it took, seconds.
    pub estimate_s: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub took_s: Option<f64>,
    /// Its lines of the summary table (one per level of each of its benches).
    #[serde(default)]
    pub lines: Vec<Line>,
    /// A capacity search's capacity per point, as the sweep says it ("1,200 (1,100–1,300)").
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub capacities: Vec<(String, String)>,
    /// The sweep's headline and its differences over repeats, as sentences.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub headline: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub differences: Vec<(bool, String)>,
    /// Its findings (each citing its figures) and the objectives its benches did not judge: found
    /// once, when it ended, from its benches as they were read for its lines.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub findings: Vec<super::findings::Finding>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unmeasured: Vec<String>,
    /// Its earlier runs, stopped or not run, in the order run (not counted; their folders kept).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attempts: Vec<Attempt>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "state", content = "why")]
pub enum RowState {
    /// Not reached yet.
    Pending,
    /// Ran to its end (its levels passed or not).
    Done,
    /// Began and was stopped (a signal, a lost link): run again by a resume.
    Interrupted(String),
    /// Could not run (its deploy refused, an image missing): why; the campaign went on.
    NotRun(String),
}

impl RowState {
    /// Not ended: the campaign runs it, or a resume does (again).
    pub fn to_run(&self) -> bool {
        matches!(self, RowState::Pending | RowState::Interrupted(_))
    }

    /// A resume runs it: not ended, or not run (its cause may be gone: an image built since).
    pub fn resumed(&self) -> bool {
        self.to_run() || matches!(self, RowState::NotRun(_))
    }
}

impl CampaignResults {
    /// What changed in the campaign file (or its images file) since it began, each said once: a
    /// setting of the file's (under every row), a row's own key (`row 2 (idle): levels changed`), a
    /// row renamed, rows added or dropped. `file` is `file_inputs` and `rows` each row's name and
    /// `row_inputs`, of the file read again. Empty: every setting is as it ran (a comment or a blank
    /// line may have changed).
    pub fn changed_inputs(
        &self,
        file: &BTreeMap<String, String>,
        rows: &[(String, BTreeMap<String, String>)],
    ) -> Vec<String> {
        let of_file = changed_keys(&self.inputs, file);
        let mut out: Vec<String> = of_file
            .iter()
            .map(|(k, how)| match k.as_str() {
                IMAGES_CONTENT => format!(
                    "the content of the images file {} names {how}: every row starts from it",
                    self.file
                ),
                k => format!("{k} of {} {how}: every row starts from it", self.file),
            })
            .collect();
        if rows.len() != self.rows.len() {
            out.push(format!(
                "the file has {} rows, the campaign {}",
                rows.len(),
                self.rows.len()
            ));
        }
        for (r, (name, now)) in self.rows.iter().zip(rows) {
            if r.name != *name {
                out.push(format!(
                    "row {} is {name:?} now, {:?} when it ran",
                    r.index, r.name
                ));
                continue;
            }
            // A bench key of the file's that changed is said once, as the file's.
            let own: Vec<String> = changed_keys(&r.inputs, now)
                .into_iter()
                .filter(|(k, _)| !(k.starts_with("bench.") && of_file.iter().any(|(f, _)| f == k)))
                .map(|(k, how)| format!("{k} {how}"))
                .collect();
            if !own.is_empty() {
                out.push(format!("row {} ({}): {}", r.index, r.name, own.join(", ")));
            }
        }
        out
    }

    /// The folders the results cite, relative to the campaign's, each with the row citing it: a row
    /// that ran (its folder), every bench a line of the table or a finding links, each interrupted
    /// run kept ("interrupted, not counted" links it). A resume refuses
    /// a campaign one of them is gone from: its report would cite evidence no longer there.
    pub fn cited(&self) -> Vec<(&RowRecord, &str)> {
        let mut out: Vec<(&RowRecord, &str)> = Vec::new();
        for r in &self.rows {
            let ran = r.dir.as_deref().filter(|_| r.state == RowState::Done);
            let lines = r.lines.iter().map(|l| l.bench.as_str());
            let evidence = r
                .findings
                .iter()
                .flat_map(|f| f.evidence.iter().map(|e| e.dir.as_str()));
            // An interrupted run's folder is linked from "interrupted, not counted" too.
            let attempts = r.attempts.iter().map(|a| a.dir.as_str());
            for dir in ran.into_iter().chain(lines).chain(evidence).chain(attempts) {
                if !dir.is_empty() && !out.iter().any(|(_, d)| *d == dir) {
                    out.push((r, dir));
                }
            }
        }
        out
    }

    /// results.json's text, sealed.
    pub fn to_json(&self) -> serde_json::Result<String> {
        let mut sealed = self.clone();
        sealed.seal();
        Ok(serde_json::to_string_pretty(&sealed)? + "\n")
    }

    /// The row a resume goes on with (None: every row ended).
    pub fn next_row(&self) -> Option<usize> {
        self.rows.iter().position(|r| r.state.to_run())
    }
}

impl Sealed for CampaignResults {
    const ITEMS: &'static str = "rows";
    fn fingerprints(&self) -> &BTreeMap<String, String> {
        &self.fingerprints
    }
    fn fingerprints_mut(&mut self) -> &mut BTreeMap<String, String> {
        &mut self.fingerprints
    }
}

/// The key of the images file's content among the file's inputs.
const IMAGES_CONTENT: &str = "images:content";

/// Each key whose recorded input differs between `was` and `now`, with how: "changed (20s → 30s)",
/// "was added (30s)", "was removed (it was 20s)" — the values only of a key `shown`.
fn changed_keys(
    was: &BTreeMap<String, String>,
    now: &BTreeMap<String, String>,
) -> Vec<(String, String)> {
    let mut keys: Vec<&String> = was.keys().chain(now.keys()).collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .filter_map(|k| {
            let how = match (was.get(k), now.get(k), shown(k)) {
                (Some(a), Some(b), _) if a == b => return None,
                (Some(a), Some(b), true) => format!("changed ({a} → {b})"),
                (Some(_), Some(_), false) => "changed".into(),
                (None, Some(b), true) => format!("was added ({b})"),
                (Some(a), None, true) => format!("was removed (it was {a})"),
                (None, _, _) => "was added".into(),
                (_, None, _) => "was removed".into(),
            };
            Some((k.clone(), how))
        })
        .collect()
}

/// A key whose value results.json keeps as given: not one that may hold a secret (the app's
/// environment, `set.*`; a row's variables, `vary`, whose `env.*` values are the app's
/// environment too) nor the images file's content, kept as their fingerprints.
fn shown(key: &str) -> bool {
    !(key.starts_with("set.") || key == "vary" || key == IMAGES_CONTENT)
}

/// A setting's recorded input: its value as given (text as is, anything else as compact JSON,
/// none as `none`), or its fingerprint when it is not `shown`.
fn input(key: &str, value: &serde_json::Value) -> String {
    use serde_json::Value;
    match value {
        _ if !shown(key) => fingerprint(key, value),
        Value::String(s) => s.clone(),
        Value::Null => "none".into(),
        other => other.to_string(),
    }
}

/// Settings given as `KEY=VALUE` or `(key, value)`, one input per key (`spec.db`, `set.FOO`): a key
/// given twice is its values together.
fn keyed<'a>(
    out: &mut BTreeMap<String, String>,
    group: &str,
    pairs: impl Iterator<Item = (&'a str, &'a str)>,
) {
    let mut by_key: BTreeMap<String, Vec<&str>> = BTreeMap::new();
    for (k, v) in pairs {
        by_key.entry(format!("{group}.{k}")).or_default().push(v);
    }
    for (k, v) in by_key {
        let value = match v.as_slice() {
            [one] => serde_json::json!(one),
            more => serde_json::json!(more),
        };
        let recorded = input(&k, &value);
        out.insert(k, recorded);
    }
}

/// `KEY=VALUE` as its key and value (a text with no `=`: all key).
fn env_pair(s: &str) -> (&str, &str) {
    s.split_once('=').unwrap_or((s, ""))
}

/// Each setting the campaign file gives every row, as recorded (`input`): its name, stack, images
/// file (as given, and its content's sha256: `images_sha256`, read by the shell), spec, set,
/// seeding and bench keys, one each.
pub fn file_inputs(file: &CampaignFile, images_sha256: Option<&str>) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut one = |k: &str, v: serde_json::Value| {
        out.insert(k.to_string(), input(k, &v));
    };
    one("name", serde_json::json!(file.name));
    one("stack", serde_json::json!(file.stack));
    one("images", serde_json::json!(file.images));
    one(IMAGES_CONTENT, serde_json::json!(images_sha256));
    one("bcrypt_cost", serde_json::json!(file.bcrypt_cost));
    keyed(
        &mut out,
        "spec",
        file.spec.iter().map(|(k, v)| (k.as_str(), v.as_str())),
    );
    keyed(&mut out, "set", file.set.iter().map(|s| env_pair(s)));
    let bench = file.bench.texts();
    keyed(
        &mut out,
        "bench",
        bench.iter().map(|(k, v)| (k.as_str(), v.as_str())),
    );
    out
}

/// Each of a row's settings, as recorded (`input`): its own keys (topology, spec, set, its levels or
/// sweep, seeding, the report's words) and every bench key it runs with (the file's under its own).
pub fn row_inputs(row: &Row) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let doc = serde_json::to_value(row).unwrap_or_default();
    for (k, v) in doc.as_object().into_iter().flatten() {
        match (k.as_str(), v) {
            ("spec" | "set" | "bench", _) => {}
            ("sweep", serde_json::Value::Object(sweep)) => {
                for (sk, sv) in sweep {
                    out.insert(sk.clone(), input(sk, sv));
                }
            }
            _ => {
                out.insert(k.clone(), input(k, v));
            }
        }
    }
    keyed(
        &mut out,
        "spec",
        row.spec.iter().map(|(k, v)| (k.as_str(), v.as_str())),
    );
    keyed(&mut out, "set", row.set.iter().map(|s| env_pair(s)));
    let bench = row.bench.texts();
    keyed(
        &mut out,
        "bench",
        bench.iter().map(|(k, v)| (k.as_str(), v.as_str())),
    );
    out
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub fn record(index: usize, name: &str, state: RowState) -> RowRecord {
        RowRecord {
            index,
            name: name.into(),
            study: None,
            note: None,
            topology: "single".into(),
            stack: "c-single".into(),
            inputs: BTreeMap::new(),
            state,
            sweep: None,
            dir: None,
            estimate_s: 60.0,
            took_s: None,
            lines: vec![],
            capacities: vec![],
            headline: None,
            differences: vec![],
            findings: vec![],
            unmeasured: vec![],
            attempts: vec![],
        }
    }

    /// A line of the table citing bench `dir`, `pct` % served.
    fn line(dir: &str, pct: f64) -> Line {
        Line {
            row: "a".into(),
            point: String::new(),
            scenario: "idle".into(),
            users: 20,
            instances: 1,
            duration_s: 30.0,
            success_pct: pct,
            http_errors_pct: 0.0,
            sut_cpu_pct: None,
            redis_cpu_pct: None,
            result: "pass".into(),
            reasons: vec![],
            bench: dir.into(),
        }
    }

    pub fn campaign(rows: Vec<RowRecord>) -> CampaignResults {
        CampaignResults {
            schema: SCHEMA,
            run_id: "c".into(),
            state: RunState::Interrupted,
            pid: None,
            exectl_version: "0".into(),
            name: "c".into(),
            file: "c.yaml".into(),
            file_path: "/c.yaml".into(),
            file_sha256: "x".into(),
            target: "local".into(),
            target_spec: serde_json::Value::Null,
            flags: RunFlags::default(),
            started_unix_s: 0,
            duration_s: 0.0,
            estimate_s: 180.0,
            rows,
            stopped: None,
            not_measured: vec![],
            inputs: BTreeMap::new(),
            fingerprints: BTreeMap::new(),
            left_up: vec![],
            torn_down: vec![],
        }
    }

    #[test]
    fn a_resume_goes_on_from_the_first_row_not_ended() {
        let r = campaign(vec![
            record(1, "a", RowState::Done),
            record(2, "b", RowState::Interrupted("SIGINT".into())),
            record(3, "c", RowState::Pending),
        ]);
        assert_eq!(r.next_row(), Some(1));
        let json = serde_json::to_value(&r.rows[1].state).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"state": "interrupted", "why": "SIGINT"})
        );
    }

    const FILE: &str = "name: c
images: images.yaml
bench: {hold: 20s, ramp: 5s}
rows:
  - {name: a, topology: single, levels: [10]}
  - {name: b, topology: ha, levels: [10, 20], bench: {hold: 40s}}
  - {name: c, topology: ha, levels: [10], vary: {nginx: [default, tuned]}}
";

    /// The campaign as begun with `text` (its images file's content `images`), and what a resume
    /// says of the file `now` (and `images_now`).
    fn changes(now: &str, images_now: &str) -> Vec<String> {
        let inputs = |text: &str, images: &str| {
            let f = crate::campaign::file::parse("c.yaml", text).unwrap();
            let rows: Vec<(String, BTreeMap<String, String>)> = f
                .rows
                .iter()
                .map(|r| (r.name.clone(), row_inputs(r)))
                .collect();
            (file_inputs(&f, Some(images)), rows)
        };
        let (file, rows) = inputs(FILE, "sha-1");
        let mut r = campaign(
            rows.iter()
                .enumerate()
                .map(|(i, (name, inputs))| RowRecord {
                    inputs: inputs.clone(),
                    ..record(i + 1, name, RowState::Done)
                })
                .collect(),
        );
        r.inputs = file;
        let (file, rows) = inputs(now, images_now);
        r.changed_inputs(&file, &rows)
    }

    /// Each edit is named by its key: a file's setting as under every row (once, not as each row's
    /// change), a row's own, the images file's content; a comment changes nothing.
    #[test]
    fn a_resume_names_the_setting_that_changed() {
        let none: Vec<String> = vec![];
        assert_eq!(changes(FILE, "sha-1"), none);
        assert_eq!(changes(&format!("# a note\n{FILE}"), "sha-1"), none);
        assert_eq!(
            changes(&FILE.replace("hold: 20s", "hold: 30s"), "sha-1"),
            ["bench.hold of c.yaml changed (20s → 30s): every row starts from it"]
        );
        assert_eq!(
            changes(FILE, "sha-2"),
            ["the content of the images file c.yaml names changed: every row starts from it"]
        );
        assert_eq!(
            changes(
                &FILE.replace("levels: [10, 20]", "levels: [10, 30]"),
                "sha-1"
            ),
            ["row 2 (b): levels changed (10,20 → 10,30)"]
        );
        assert_eq!(
            changes(
                &FILE.replace("hold: 40s", "hold: 40s, tokens: true"),
                "sha-1"
            ),
            ["row 2 (b): bench.tokens was added (true)"]
        );
        // The app's environment and a row's variables may hold secrets: named, their values never.
        assert_eq!(
            changes(
                &FILE.replacen("bench: {", "set: [API_X=s3cret]\nbench: {", 1),
                "sha-1"
            ),
            ["set.API_X of c.yaml was added: every row starts from it"]
        );
        let f = crate::campaign::file::parse("c.yaml", &FILE.replace("tuned]", "s3cret]")).unwrap();
        assert!(!format!("{:?}", row_inputs(&f.rows[2])).contains("s3cret"));
        assert_eq!(
            changes(&FILE.replace("tuned]", "tuned, default]"), "sha-1"),
            ["row 3 (c): vary changed"]
        );
        assert_eq!(
            changes(&FILE.replace("{name: a,", "{name: z,"), "sha-1"),
            ["row 1 is \"z\" now, \"a\" when it ran"]
        );
        let shorter = FILE.lines().take(6).collect::<Vec<_>>().join("\n");
        assert_eq!(
            changes(&shorter, "sha-1"),
            ["the file has 2 rows, the campaign 3"]
        );
    }

    /// The file as written reads back unedited (a resume's rewrite too); a figure, a row's state or a
    /// dropped row is named.
    #[test]
    fn an_edit_of_the_written_results_is_named() {
        let mut done = record(1, "a", RowState::Done);
        done.lines = vec![line("rows/01-a/points/B-1", 99.95)];
        let r = campaign(vec![done, record(2, "b", RowState::Pending)]);
        let text = r.to_json().unwrap();
        let read: CampaignResults = serde_json::from_str(&text).unwrap();
        assert_eq!(read.edited(), Vec::<String>::new(), "{text}");
        let mut again = read.clone();
        again.pid = Some(7);
        let again: CampaignResults = serde_json::from_str(&again.to_json().unwrap()).unwrap();
        assert!(again.edited().is_empty());

        let edit = |from: &str, to: &str| -> Vec<String> {
            assert!(text.contains(from), "{from} in {text}");
            serde_json::from_str::<CampaignResults>(&text.replacen(from, to, 1))
                .unwrap()
                .edited()
        };
        assert_eq!(edit("99.95", "42.0"), ["rows.1"]);
        assert_eq!(edit("\"pending\"", "\"done\""), ["rows.2"]);
        assert_eq!(
            edit("\"estimate_s\": 180.0", "\"estimate_s\": 1.0"),
            ["estimate_s"]
        );
        let mut dropped = read.clone();
        dropped.rows.pop();
        assert_eq!(dropped.edited(), ["rows.2"]);
    }

    /// A row that ran cites its folder and each bench its lines and findings link, once each.
    #[test]
    fn the_results_cite_each_folder_once() {
        let mut done = record(1, "a", RowState::Done);
        done.dir = Some("rows/01-a".into());
        done.lines = vec![
            line("rows/01-a/points/B-1", 100.0),
            line("rows/01-a/points/B-1", 100.0),
        ];
        let mut stopped = record(2, "b", RowState::Interrupted("SIGINT".into()));
        stopped.dir = Some("rows/02-b".into());
        // Run again after a stop: the first run's folder is linked as "interrupted, not counted".
        let mut again = record(3, "c", RowState::Done);
        again.dir = Some("rows/03-c.2".into());
        again.attempts = vec![Attempt {
            sweep: "c-r03".into(),
            dir: "rows/03-c".into(),
            state: RowState::Interrupted("SIGINT".into()),
            took_s: None,
            reports: vec![],
        }];
        let r = campaign(vec![done, stopped, again]);
        let cited: Vec<(usize, &str)> = r.cited().iter().map(|(r, d)| (r.index, *d)).collect();
        assert_eq!(
            cited,
            [
                (1, "rows/01-a"),
                (1, "rows/01-a/points/B-1"),
                (3, "rows/03-c.2"),
                (3, "rows/03-c")
            ]
        );
    }
}
