//! The campaign's reports, from its results.json and findings alone: report.md (to paste into an issue
//! or a pull request, as the study was published) and report.html (self-contained, in the bench and
//! sweep reports' style). Each table cell and each finding links to the bench it came from.

use serde::Serialize;

use super::findings::{Finding, Kind};
use super::results::{CampaignResults, RowState};
use super::table::{pct, Line};
use crate::plateau::group;
use crate::units::{readable_s, show_utc};

const TEMPLATE: &str = include_str!("report.html.tera");

/// One line of the table as both reports show it.
#[derive(Serialize)]
struct Cells {
    row: String,
    study: String,
    scenario: String,
    users: String,
    instances: u32,
    duration: String,
    success: String,
    http_errors: String,
    sut_cpu: String,
    redis_cpu: String,
    result: String,
    passed: bool,
    why: String,
    report: String,
    timeline: String,
}

fn cells(r: &CampaignResults, l: &Line) -> Cells {
    let study = r
        .rows
        .iter()
        .find(|x| x.name == l.row)
        .and_then(|x| x.study.clone())
        .unwrap_or_default();
    Cells {
        row: match l.point.is_empty() {
            true => l.row.clone(),
            false => format!("{} · {}", l.row, l.point),
        },
        study,
        scenario: l.scenario.clone(),
        users: group(l.users),
        instances: l.instances,
        duration: readable_s(l.duration_s),
        success: pct(Some(l.success_pct)),
        http_errors: pct(Some(l.http_errors_pct)),
        sut_cpu: pct(l.sut_cpu_pct),
        redis_cpu: pct(l.redis_cpu_pct),
        result: l.result.clone(),
        passed: l.result == "pass",
        why: l.reasons.join("; "),
        report: format!("{}/report.html", l.bench),
        timeline: format!("{}/timeline.jsonl", l.bench),
    }
}

/// Rows not run (or not reached) get a line saying so, in the table's order.
fn all_cells(r: &CampaignResults) -> Vec<Cells> {
    let mut out = Vec::new();
    for row in &r.rows {
        if row.lines.is_empty() {
            let why = match &row.state {
                RowState::NotRun(why) => format!("not run: {why}"),
                RowState::Pending => "not reached".into(),
                RowState::Interrupted(why) => format!("stopped: {why}"),
                RowState::Done => "no level ran".into(),
            };
            out.push(Cells {
                row: row.name.clone(),
                study: row.study.clone().unwrap_or_default(),
                scenario: "—".into(),
                users: "—".into(),
                instances: 0,
                duration: "—".into(),
                success: "—".into(),
                http_errors: "—".into(),
                sut_cpu: "—".into(),
                redis_cpu: "—".into(),
                result: "not measured".into(),
                passed: false,
                why,
                report: String::new(),
                timeline: String::new(),
            });
        }
        out.extend(row.lines.iter().map(|l| cells(r, l)));
    }
    out
}

fn kind_title(k: Kind) -> &'static str {
    match k {
        Kind::Capacity => "Capacity",
        Kind::Difference => "Differences",
        Kind::Defect => "What the checks caught",
        Kind::Invalid => "Results that could not count",
    }
}

const KINDS: [Kind; 4] = [
    Kind::Capacity,
    Kind::Defect,
    Kind::Difference,
    Kind::Invalid,
];

/// "12 rows · 10 done · 1 not run · 1 not reached · 41 min (estimated 38 min)".
fn status(r: &CampaignResults) -> String {
    let count = |f: fn(&RowState) -> bool| r.rows.iter().filter(|x| f(&x.state)).count();
    let mut parts = vec![
        format!("{} rows", r.rows.len()),
        format!("{} done", count(|s| *s == RowState::Done)),
    ];
    for (n, word) in [
        (count(|s| matches!(s, RowState::NotRun(_))), "not run"),
        (count(|s| matches!(s, RowState::Interrupted(_))), "stopped"),
        (count(|s| *s == RowState::Pending), "not reached"),
    ] {
        if n > 0 {
            parts.push(format!("{n} {word}"));
        }
    }
    parts.push(format!(
        "{} (estimated {})",
        readable_s(r.duration_s),
        readable_s(r.estimate_s)
    ));
    parts.join(" · ")
}

/// report.md.
pub fn markdown(r: &CampaignResults, findings: &[Finding], not_measured: &[String]) -> String {
    let mut s = format!(
        "# Campaign {}: {}\n\nexectl campaign {} · {} · target {} · started {}\n\n## Summary table\n\n",
        r.name,
        r.run_id,
        r.file,
        status(r),
        r.target,
        show_utc(r.started_unix_s)
    );
    s.push_str("| row | study | scenario | users | instances | duration | WS success | HTTP errors | SUT CPU | Redis CPU | result |\n");
    s.push_str("|---|---|---|---|---|---|---|---|---|---|---|\n");
    for c in all_cells(r) {
        let link = |text: &str, href: &str| match href.is_empty() {
            true => text.to_string(),
            false => format!("[{text}]({href})"),
        };
        let result = match c.why.is_empty() {
            true => c.result.clone(),
            false => format!("{}: {}", c.result, c.why.replace('|', "\\|")),
        };
        s.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
            c.row,
            c.study,
            c.scenario,
            link(&c.users, &c.report),
            if c.instances == 0 {
                "—".into()
            } else {
                c.instances.to_string()
            },
            link(&c.duration, &c.timeline),
            c.success,
            c.http_errors,
            c.sut_cpu,
            c.redis_cpu,
            link(&result, &c.report),
        ));
    }
    s.push_str("\nSUT CPU: the busiest app instance's mean over the common hold, as a share of what it can use; Redis CPU likewise (ha). WS success: users served (held the whole hold; logged in, for a login burst). HTTP errors: users that failed at the login or the upgrade's handshake.\n");
    s.push_str("\n## Findings\n");
    for k in KINDS {
        let of: Vec<&Finding> = findings.iter().filter(|f| f.kind == k).collect();
        if of.is_empty() {
            continue;
        }
        s.push_str(&format!("\n### {}\n\n", kind_title(k)));
        for f in of {
            let cites: Vec<String> = f
                .evidence
                .iter()
                .map(|e| format!("[{} = {}]({}/results.json)", e.pointer, e.value, e.dir))
                .collect();
            s.push_str(&format!("- **{}**: {}", f.row, f.sentence));
            if !cites.is_empty() {
                s.push_str(&format!(" ({})", cites.join(", ")));
            }
            s.push('\n');
        }
    }
    s.push_str("\n## Not measured\n\n");
    match not_measured.is_empty() {
        true => s.push_str("Every row ran, and every objective was measured by some level.\n"),
        false => {
            for n in not_measured {
                s.push_str(&format!("- {n}\n"));
            }
        }
    }
    s
}

#[derive(Serialize)]
struct Group<'a> {
    title: &'static str,
    findings: Vec<&'a Finding>,
}

/// report.html.
pub fn html(
    r: &CampaignResults,
    findings: &[Finding],
    not_measured: &[String],
) -> Result<String, String> {
    let mut ctx = tera::Context::new();
    ctx.insert("r", r);
    ctx.insert("status", &status(r));
    ctx.insert("started", &show_utc(r.started_unix_s));
    ctx.insert("lines", &all_cells(r));
    let groups: Vec<Group> = KINDS
        .iter()
        .map(|k| Group {
            title: kind_title(*k),
            findings: findings.iter().filter(|f| f.kind == *k).collect(),
        })
        .filter(|g| !g.findings.is_empty())
        .collect();
    ctx.insert("groups", &groups);
    ctx.insert("not_measured", not_measured);
    tera::Tera::one_off(TEMPLATE, &ctx, true).map_err(|e| format!("{e:?}"))
}

#[cfg(test)]
mod tests {
    use super::super::findings::{of_row, Bench};
    use super::super::results::tests::record;
    use super::super::results::SCHEMA;
    use super::super::table::lines;
    use super::*;
    use crate::bench::report::tests::example;
    use crate::bench::results::RunState;

    fn campaign() -> (CampaignResults, Vec<Finding>) {
        let (b, samples) = example();
        let mut done = record(1, "ha", RowState::Done);
        done.study = Some("Colaboración HA".into());
        done.lines = lines("ha", "", "rows/01-ha/points/b1", &b, &samples);
        let findings = of_row(
            &done,
            &[Bench {
                dir: "rows/01-ha/points/b1",
                results: &b,
            }],
        );
        let r = CampaignResults {
            schema: SCHEMA,
            run_id: "quick-1".into(),
            state: RunState::Complete,
            pid: None,
            exectl_version: "0".into(),
            name: "quick".into(),
            file: "campaigns/quick.yaml".into(),
            file_path: "/w/campaigns/quick.yaml".into(),
            file_sha256: "x".into(),
            target: "local".into(),
            target_spec: serde_json::Value::Null,
            flags: Default::default(),
            started_unix_s: 1_796_479_331,
            duration_s: 300.0,
            estimate_s: 280.0,
            rows: vec![
                done,
                record(
                    2,
                    "b",
                    RowState::NotRun("the image x is not on the target".into()),
                ),
            ],
            stopped: None,
            not_measured: vec![],
            inputs: Default::default(),
            fingerprints: Default::default(),
        };
        (r, findings)
    }

    #[test]
    fn the_markdown_has_the_table_linked_the_findings_cited_and_what_was_not_measured() {
        let (r, f) = campaign();
        let md = markdown(
            &r,
            &f,
            &["row 2 (b) did not run: the image x is not on the target".into()],
        );
        assert!(md.contains("started 2026-12-05 14:02:11 UTC"), "{md}");
        assert!(md.contains("| ha | Colaboración HA | "), "{md}");
        assert!(
            md.contains("[200](rows/01-ha/points/b1/report.html)"),
            "{md}"
        );
        assert!(md.contains("(rows/01-ha/points/b1/timeline.jsonl)"), "{md}");
        assert!(md.contains("| b |  | — |"), "{md}");
        assert!(
            md.contains("not run: the image x is not on the target"),
            "{md}"
        );
        assert!(md.contains("### Capacity"), "{md}");
        assert!(
            md.contains("[/levels/0/figures/held = 200](rows/01-ha/points/b1/results.json)"),
            "{md}"
        );
        assert!(
            md.contains("## Not measured\n\n- row 2 (b) did not run"),
            "{md}"
        );
    }

    #[test]
    fn the_html_has_the_same() {
        let (r, f) = campaign();
        // tera escapes '/' in attributes; a browser reads it back.
        let html = html(&r, &f, &["row 2 (b) did not run".into()])
            .unwrap()
            .replace("&#x2F;", "/");
        assert!(
            html.contains("href=\"rows/01-ha/points/b1/report.html\""),
            "{html}"
        );
        assert!(html.contains("id=\"findings\""), "{html}");
        assert!(html.contains("row 2 (b) did not run"), "{html}");
        assert!(html.contains("2 rows · 1 done · 1 not run"), "{html}");
    }
}
