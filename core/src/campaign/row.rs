//! A row read back once its sweep ended, and the campaign's files written after it: pure, over what
//! `ops::campaign` read from disk. A row's lines of the summary table (one per level of each bench),
//! its sweep's headline, capacities and differences when it compares, its findings and what its
//! benches did not measure; then results.json, report.md and report.html, each made whole.

use super::findings::{self, Bench, Finding};
use super::report;
use super::results::{CampaignResults, RowRecord, RowState};
use super::table;
use crate::bench::results::Results;
use crate::bench::timeline::Sample;
use crate::sweep::results::SweepResults;
use crate::sweep::summary::summarize;

/// One bench of a row's sweep, as read from its folder.
pub struct ReadBench {
    /// Which of the sweep's points ran it (its index in `SweepResults::points`).
    pub point: usize,
    /// Its folder, relative to the campaign's.
    pub dir: String,
    pub results: Results,
    pub samples: Vec<Sample>,
}

/// `record` filled from its sweep and the benches read of it (a bench whose files could not be read
/// has no line: the row's sweep report still links it).
pub fn read(
    record: &mut RowRecord,
    sweep: &SweepResults,
    benches: &[ReadBench],
    rel: &str,
    compares: bool,
) {
    record.lines.clear();
    for b in benches {
        let point = point_label(sweep, b.point, compares);
        record.lines.extend(table::lines(
            &record.name,
            &point,
            &b.dir,
            &b.results,
            &b.samples,
        ));
    }
    if compares && !sweep.points.is_empty() {
        let s = summarize(sweep);
        record.headline = Some(s.headline.clone());
        record.differences = s
            .differences
            .iter()
            .map(|d| (d.measurable, d.sentence.clone()))
            .collect();
        record.capacities = s
            .values
            .iter()
            .map(|v| (v.values.join(" × "), v.capacity_text()))
            .collect();
    }
    let read: Vec<Bench> = benches
        .iter()
        .map(|b| Bench {
            dir: &b.dir,
            results: &b.results,
        })
        .collect();
    record.findings = findings::of_row(record, &read);
    if sweep.room_users.is_some() {
        // Its benches all ran the same users at once: its capacity is the largest room found.
        record
            .findings
            .retain(|f| f.kind != findings::Kind::Capacity);
        record
            .findings
            .extend(findings::room_search(record, rel, sweep));
    }
    record
        .findings
        .extend(findings::imbalance(record, rel, sweep));
    record.unmeasured = findings::objectives_unmeasured(&read);
}

/// The point a line stands for, in a row that compares: `cpus=2 · run 1`.
fn point_label(sweep: &SweepResults, index: usize, compares: bool) -> String {
    let Some(p) = sweep.points.get(index) else {
        return String::new();
    };
    if sweep.variables.is_empty() || !compares {
        return String::new();
    }
    let mut v: Vec<String> = sweep
        .variables
        .iter()
        .zip(&p.values)
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    if sweep.repeat > 1 {
        v.push(format!("run {}", p.run));
    }
    v.join(" · ")
}

/// How a row ended, as its progress line says it.
pub fn ended(record: &RowRecord) -> String {
    match &record.state {
        RowState::Done => format!(
            "done in {}",
            crate::units::readable_s(record.took_s.unwrap_or(0.0))
        ),
        RowState::NotRun(why) => format!("not run: {why}"),
        RowState::Interrupted(why) => format!("stopped: {why}"),
        RowState::Pending => "pending".into(),
    }
}

/// The campaign's files, each made whole from its results (what was not measured set over every row
/// first), and the findings of every row. results.json stands even when the HTML cannot be made.
pub struct Files {
    pub results_json: String,
    pub report_md: String,
    pub report_html: Result<String, String>,
    pub findings: Vec<Finding>,
}

/// results.json, report.md and report.html of `r` as it stands (each row's findings were found
/// when it ended).
pub fn files(r: &mut CampaignResults) -> serde_json::Result<Files> {
    let found: Vec<Finding> = r.rows.iter().flat_map(|x| x.findings.clone()).collect();
    let unmeasured: Vec<(String, Vec<String>)> = r
        .rows
        .iter()
        .map(|x| (x.name.clone(), x.unmeasured.clone()))
        .collect();
    r.not_measured = findings::not_measured(&r.rows, &unmeasured);
    Ok(Files {
        results_json: r.to_json()?,
        report_md: report::markdown(r, &found, &r.not_measured),
        report_html: report::html(r, &found, &r.not_measured),
        findings: found,
    })
}
