//! A campaign's results.json: the file it ran (path and digest, each row's own digest so a resume can
//! name the row that changed), each row as it ended — run (its sweep's id and folder, its table's
//! lines) or not run (why) — and the estimate it began with. Written after every row, so a campaign
//! stopped at row k keeps rows 1..k-1.

use serde::{Deserialize, Serialize};

use super::table::Line;
use crate::bench::results::RunState;

/// results.json's version: a reader refuses another.
pub const SCHEMA: u32 = 1;

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
    /// The sha256 of the row as the file gives it (with the file's settings under it): a resume
    /// refuses a file whose recorded rows changed, naming the first.
    pub sha256: String,
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
    /// The first row whose digest is not the file's now (its own keys, or the file's settings under
    /// it): a resume refuses a campaign file edited since it began, naming that row. `now` holds each
    /// row's name and digest from the file read again.
    pub fn changed_row(&self, now: &[(String, String)]) -> Option<String> {
        if now.len() != self.rows.len() {
            return Some(format!(
                "the file has {} rows, the campaign {}",
                now.len(),
                self.rows.len()
            ));
        }
        self.rows
            .iter()
            .zip(now)
            .find(|(r, (name, sha))| r.name != *name || r.sha256 != *sha)
            .map(|(r, (name, _))| match r.name == *name {
                true => format!("row {} ({}) changed", r.index, r.name),
                false => format!("row {} is {name:?} now, {:?} when it ran", r.index, r.name),
            })
    }

    /// The row a resume goes on with (None: every row ended).
    pub fn next_row(&self) -> Option<usize> {
        self.rows.iter().position(|r| r.state.to_run())
    }
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
            sha256: format!("sha-{name}"),
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

    #[test]
    fn a_resume_goes_on_from_the_first_row_not_ended_and_refuses_a_changed_one() {
        let r = CampaignResults {
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
            rows: vec![
                record(1, "a", RowState::Done),
                record(2, "b", RowState::Interrupted("SIGINT".into())),
                record(3, "c", RowState::Pending),
            ],
            stopped: None,
            not_measured: vec![],
            left_up: vec![],
            torn_down: vec![],
        };
        assert_eq!(r.next_row(), Some(1));
        let same: Vec<(String, String)> = ["a", "b", "c"]
            .map(|n| (n.to_string(), format!("sha-{n}")))
            .into();
        assert_eq!(r.changed_row(&same), None);
        // A row not run yet is the campaign's too: the file is the one it began with, or refused.
        let mut edited = same.clone();
        edited[2].1 = "other".into();
        assert_eq!(r.changed_row(&edited).unwrap(), "row 3 (c) changed");
        edited[0].0 = "z".into();
        assert_eq!(
            r.changed_row(&edited).unwrap(),
            "row 1 is \"z\" now, \"a\" when it ran"
        );
        let shorter = same[..2].to_vec();
        assert!(r.changed_row(&shorter).unwrap().contains("2 rows"));
        let json = serde_json::to_value(&r.rows[1].state).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"state": "interrupted", "why": "SIGINT"})
        );
    }
}
