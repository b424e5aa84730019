//! The campaign's reports, from its results.json and findings alone: report.md (to paste into an issue
//! or a pull request, as the study was published) and report.html (self-contained, in the bench and
//! sweep reports' style). Each table cell and each finding links to the bench it came from.

use serde::Serialize;

use super::findings::{Finding, Kind};
use super::results::{Attempt, CampaignResults, RowRecord, RowState};
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

/// Text from the campaign's file or records (a name, a note, a study, a reason, a finding quoting
/// them) as markdown that stays text: nothing in it ends a table's cell or line, makes a link, code
/// or HTML (`<script>` is shown, not run), as report.html's escaping does for HTML.
pub fn md(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\\' | '|' | '`' | '[' | ']' => {
                out.push('\\');
                out.push(c);
            }
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '\n' | '\r' => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// A relative path as a markdown link's target (a space or a parenthesis would end it).
fn href(path: &str) -> String {
    path.replace(' ', "%20")
        .replace('(', "%28")
        .replace(')', "%29")
}

/// `[text](path)`, the text escaped; the text alone when there is no path.
fn md_link(text: &str, path: &str) -> String {
    match path.is_empty() {
        true => md(text),
        false => format!("[{}]({})", md(text), href(path)),
    }
}

/// One run of a row that does not count, as both reports show it.
#[derive(Serialize)]
struct NotCounted {
    row: String,
    run: String,
    dir: String,
    ended: String,
    /// (label, path relative to the campaign's folder) of each report it left.
    reports: Vec<(String, String)>,
}

/// "stopped: SIGINT received", "not run: …".
fn ended(s: &RowState) -> String {
    match s {
        RowState::Done => "done".into(),
        RowState::Pending => "not reached".into(),
        RowState::Interrupted(why) => format!("interrupted: {why}"),
        RowState::NotRun(why) => format!("not run: {why}"),
    }
}

fn not_counted(r: &CampaignResults) -> Vec<NotCounted> {
    let one = |row: &RowRecord, a: &Attempt| NotCounted {
        row: format!("row {} ({})", row.index, row.name),
        run: a.sweep.clone(),
        dir: a.dir.clone(),
        ended: ended(&a.state),
        reports: a
            .reports
            .iter()
            .map(|p| {
                let label = match p.rsplit('/').nth(1) {
                    Some(id) if p.contains("/points/") => format!("bench {id}"),
                    _ => "its sweep's report".into(),
                };
                (label, p.clone())
            })
            .collect(),
    };
    r.rows
        .iter()
        .flat_map(|row| row.attempts.iter().map(move |a| one(row, a)))
        .collect()
}

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

/// report.md: every text from the file or the records escaped (`md`).
pub fn markdown(r: &CampaignResults, findings: &[Finding], not_measured: &[String]) -> String {
    let mut s = format!(
        "# Campaign {}: {}\n\nexectl campaign {} · {} · target {} · started {}\n\n## Summary table\n\n",
        md(&r.name),
        md(&r.run_id),
        md(&r.file),
        md(&status(r)),
        md(&r.target),
        show_utc(r.started_unix_s)
    );
    s.push_str("| row | study | scenario | users | instances | duration | WS success | HTTP errors | SUT CPU | Redis CPU | result |\n");
    s.push_str("|---|---|---|---|---|---|---|---|---|---|---|\n");
    for c in all_cells(r) {
        let result = match c.why.is_empty() {
            true => c.result.clone(),
            false => format!("{}: {}", c.result, c.why),
        };
        let instances = match c.instances {
            0 => "—".into(),
            n => n.to_string(),
        };
        let cells = [
            md(&c.row),
            md(&c.study),
            md(&c.scenario),
            md_link(&c.users, &c.report),
            instances,
            md_link(&c.duration, &c.timeline),
            md(&c.success),
            md(&c.http_errors),
            md(&c.sut_cpu),
            md(&c.redis_cpu),
            md_link(&result, &c.report),
        ];
        s.push_str(&format!("| {} |\n", cells.join(" | ")));
    }
    s.push_str("\nSUT CPU: the busiest app instance's mean over the common hold, as a share of what it can use; Redis CPU likewise (ha). WS success: users served (held the whole hold; logged in, for a login burst). HTTP errors: users that failed at the login or the upgrade's handshake.\n");
    let stopped = not_counted(r);
    if !stopped.is_empty() {
        s.push_str("\n## Interrupted, not counted\n\nRuns of a row that did not end (stopped; or not run, then run again): their figures are in no table line or finding, and their folders are kept.\n\n");
        for n in &stopped {
            let links: Vec<String> = n.reports.iter().map(|(l, p)| md_link(l, p)).collect();
            s.push_str(&format!(
                "- {}: run {} in {}, {}, not counted{}\n",
                md(&n.row),
                md(&n.run),
                md(&n.dir),
                md(&n.ended),
                match links.is_empty() {
                    true => String::new(),
                    false => format!(" ({})", links.join(", ")),
                }
            ));
        }
    }
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
                .map(|e| {
                    md_link(
                        &format!("{} = {}", e.pointer, e.value),
                        &format!("{}/results.json", e.dir),
                    )
                })
                .collect();
            s.push_str(&format!("- **{}**: {}", md(&f.row), md(&f.sentence)));
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
                s.push_str(&format!("- {}\n", md(n)));
            }
        }
    }
    s.push_str(&stacks_md(r));
    s
}

/// The stacks it left running, and the commands that remove them; those it tore down.
fn stacks_md(r: &CampaignResults) -> String {
    let mut s = String::new();
    if r.left_up.is_empty() && r.torn_down.is_empty() {
        return s;
    }
    s.push_str("\n## Stacks\n\n");
    if !r.torn_down.is_empty() {
        s.push_str(&format!(
            "Torn down at the end (their data kept): {}.\n",
            md(&r.torn_down.join(", "))
        ));
    }
    if !r.left_up.is_empty() {
        let names: Vec<&str> = r.left_up.iter().map(|x| x.stack.as_str()).collect();
        s.push_str(&format!(
            "Left running: {}. Removed (their data kept; --purge removes it too) with:\n\n",
            md(&names.join(", "))
        ));
        for x in &r.left_up {
            s.push_str(&format!("    {}\n", x.command.replace(['\n', '\r'], " ")));
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
    ctx.insert("not_counted", &not_counted(r));
    tera::Tera::one_off(TEMPLATE, &ctx, true).map_err(|e| format!("{e:?}"))
}

#[cfg(test)]
mod tests {
    use super::super::findings::{of_row, Bench};
    use super::super::results::tests::record;
    use super::super::results::{Attempt, SCHEMA};
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
            left_up: vec![],
            torn_down: vec![],
        };
        (r, findings)
    }

    /// Unescaped `|` of a markdown line: its cells' borders.
    fn borders(line: &str) -> usize {
        let mut n = 0;
        let mut chars = line.chars();
        while let Some(c) = chars.next() {
            match c {
                '\\' => {
                    chars.next();
                }
                '|' => n += 1,
                _ => {}
            }
        }
        n
    }

    /// A row's name, study and note with a cell's border, a line's end, HTML and a link in them: the
    /// markdown keeps 11 cells a line and shows each as text.
    #[test]
    fn a_hostile_name_study_or_note_stays_text_in_the_markdown() {
        let (mut r, _) = campaign();
        let hostile = "a | b\nc <script>alert(1)</script> [x](http://evil) `y` \\| &";
        r.rows[0].name = hostile.into();
        r.rows[0].study = Some(format!("study {hostile}"));
        for l in &mut r.rows[0].lines {
            l.row = hostile.into();
        }
        r.rows[1].name = format!("b {hostile}");
        let note = format!("row 1 ({hostile}): note {hostile}");
        let f = vec![Finding {
            kind: Kind::Defect,
            row: hostile.into(),
            sentence: format!("{hostile} leaked"),
            evidence: vec![],
        }];
        let md = markdown(&r, &f, &[note]);
        let table: Vec<&str> = md.lines().filter(|l| l.starts_with("| ")).collect();
        assert_eq!(table.len(), 1 + 2 + 1, "{md}");
        for line in &table {
            assert_eq!(borders(line), 12, "{line}");
        }
        for bad in ["<script>", "[x](http://evil)", "`y`", "\nc "] {
            assert!(!md.contains(bad), "{bad:?} in {md}");
        }
        assert!(
            md.contains("a \\| b c &lt;script&gt;alert(1)&lt;/script&gt; \\[x\\](http://evil) \\`y\\` \\\\\\| &amp;"),
            "{md}"
        );
        // Every line of the findings and of what was not measured is one line.
        assert!(md.contains("- **a \\| b c &lt;script&gt;"), "{md}");
        assert!(md.contains("- row 1 (a \\| b c &lt;script&gt;"), "{md}");
        // report.html escapes them as HTML.
        let html = html(&r, &f, &[]).unwrap();
        assert!(!html.contains("<script>"), "{html}");
    }

    /// A run of a row stopped and run again: shown apart from the counted figures, linked; and the
    /// stacks left running, with the command that removes each.
    #[test]
    fn an_interrupted_run_and_the_stacks_left_running_are_said() {
        let (mut r, f) = campaign();
        r.rows[0].attempts = vec![Attempt {
            sweep: "quick-1-r01".into(),
            dir: "rows/01-ha".into(),
            state: RowState::Interrupted("SIGINT received".into()),
            took_s: Some(12.0),
            reports: vec![
                "rows/01-ha/report.html".into(),
                "rows/01-ha/points/quick-1-r01-p1/report.html".into(),
            ],
        }];
        r.left_up = vec![super::super::results::LeftUp {
            stack: "q-ha".into(),
            command: "exectl teardown --stack q-ha".into(),
        }];
        let md = markdown(&r, &f, &[]);
        assert!(
            md.contains("## Interrupted, not counted\n\nRuns of a row that did not end"),
            "{md}"
        );
        assert!(
            md.contains("- row 1 (ha): run quick-1-r01 in rows/01-ha, interrupted: SIGINT received, not counted ([its sweep's report](rows/01-ha/report.html), [bench quick-1-r01-p1](rows/01-ha/points/quick-1-r01-p1/report.html))"),
            "{md}"
        );
        assert!(
            md.contains("Left running: q-ha. Removed (their data kept; --purge removes it too) with:\n\n    exectl teardown --stack q-ha\n"),
            "{md}"
        );
        let html = html(&r, &f, &[]).unwrap().replace("&#x2F;", "/");
        assert!(
            html.contains(
                "<a href=\"rows/01-ha/points/quick-1-r01-p1/report.html\">bench quick-1-r01-p1</a>"
            ),
            "{html}"
        );
        assert!(html.contains("exectl teardown --stack q-ha\n"), "{html}");
        r.left_up.clear();
        r.torn_down = vec!["q-single".into(), "q-ha".into()];
        let md = markdown(&r, &f, &[]);
        assert!(
            md.contains("Torn down at the end (their data kept): q-single, q-ha."),
            "{md}"
        );
        assert!(!md.contains("Left running"), "{md}");
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
