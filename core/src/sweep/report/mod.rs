//! The sweep's report.html: self-contained (inline CSS and SVG, no script), in the bench report's
//! style, built from results.json alone so it is rebuilt the same after every point.

pub mod bars;
pub mod scaling;

use serde::Serialize;

use super::results::SweepResults;
use super::stats::Spread;
use super::summary::{summarize, LevelSpread, Summary};
use crate::bench::decimal::show;
use crate::bench::results::RunState;

const TEMPLATE: &str = include_str!("report.html.tera");

#[derive(Serialize)]
struct ValueRow {
    label: String,
    runs: usize,
    capacity: String,
    limiting: String,
    leaked: String,
    images: String,
    points: String,
}

#[derive(Serialize)]
struct LevelRow {
    users: String,
    label: String,
    passed: String,
    all_passed: bool,
    held: String,
    login: String,
    connect: String,
    share: String,
    cpu: String,
    browser: String,
    delivery: String,
    relayed: String,
}

#[derive(Serialize)]
struct BenchLink {
    id: String,
    href: String,
}

#[derive(Serialize)]
struct PointRow {
    index: usize,
    label: String,
    run: u32,
    deploy: String,
    recreated: String,
    benches: Vec<BenchLink>,
}

#[derive(Serialize)]
struct ProbeRow {
    index: usize,
    label: String,
    probes: String,
    capacity: String,
}

#[derive(Serialize)]
struct GridRow {
    label: String,
    cells: Vec<String>,
}

#[derive(Serialize)]
struct Grid {
    columns: Vec<String>,
    rows: Vec<GridRow>,
}

fn ms(s: &Option<Spread>) -> String {
    s.map(|s| s.text(|x| format!("{} ms", show(x.round()))))
        .unwrap_or_else(|| "—".into())
}

fn pct(s: &Option<Spread>, scale: f64) -> String {
    s.map(|s| s.text(|x| format!("{} %", show((x * scale * 10.0).round() / 10.0))))
        .unwrap_or_else(|| "—".into())
}

fn level_row(label: &str, l: &LevelSpread) -> LevelRow {
    LevelRow {
        users: match l.room {
            Some(k) => format!("{} (rooms of {k})", l.users),
            None => l.users.to_string(),
        },
        label: label.into(),
        passed: match l.invalid {
            0 => format!("{} / {}", l.passed, l.runs),
            n => format!("{} / {} ({n} invalid)", l.passed, l.runs),
        },
        // A level none of whose runs counted passed nothing.
        all_passed: l.passed == l.runs && l.runs > 0,
        held: pct(&l.held_pct, 1.0),
        login: ms(&l.login_p95_ms),
        connect: ms(&l.connect_p95_ms),
        share: pct(&l.top_share, 100.0),
        cpu: match (&l.busiest, &l.busiest_share) {
            (Some(name), Some(s)) => format!("{name} {}", pct(&Some(*s), 100.0)),
            _ => "—".into(),
        },
        // The medians over the runs (each percentile's range is in results.json's comparison).
        delivery: match (&l.delivery_p50_ms, &l.delivery_p95_ms, &l.delivery_p99_ms) {
            (Some(a), Some(b), Some(c)) => format!(
                "{} / {} / {} ms",
                show(a.median.round()),
                show(b.median.round()),
                show(c.median.round())
            ),
            _ => "—".into(),
        },
        relayed: l
            .relayed_per_s
            .map(|s| s.text(|x| format!("{}/s", show(x.round()))))
            .unwrap_or_else(|| "—".into()),
        browser: match (&l.browser_ms, l.browser_failed) {
            (_, n) if n > 0 => format!(
                "did not finish in {n} of {} run{}",
                l.runs,
                if l.runs == 1 { "" } else { "s" }
            ),
            (Some(_), _) => ms(&l.browser_ms),
            (None, _) => "—".into(),
        },
    }
}

fn grid(r: &SweepResults, s: &Summary) -> Option<Grid> {
    let [a, b] = r.values.as_slice() else {
        return None;
    };
    Some(Grid {
        columns: b.clone(),
        rows: a
            .iter()
            .map(|va| GridRow {
                label: va.clone(),
                cells: b
                    .iter()
                    .map(|vb| {
                        s.values
                            .iter()
                            .find(|v| v.values == [va.clone(), vb.clone()])
                            .map(|v| v.capacity_text())
                            .unwrap_or_else(|| "not run".into())
                    })
                    .collect(),
            })
            .collect(),
    })
}

pub fn render(r: &SweepResults) -> Result<String, String> {
    let s = summarize(r);
    let variables = r.variables.join(" × ");
    let bars: Vec<bars::Bar> = s
        .values
        .iter()
        .map(|v| bars::Bar {
            label: v.label.clone(),
            spread: v.capacity,
            at_least: v.at_least,
        })
        .collect();
    let title = match r.room_users {
        Some(n) => format!(
            "Max collaborators per project by {variables}: the largest room whose level of {} users at once met every objective (bar: median; whisker: range over the runs; pale: at least)",
            crate::plateau::group(n)
        ),
        None => format!("Capacity by {variables}: users at once for the whole hold (bar: median; whisker: range over the runs; pale: at least)"),
    };
    let capacity_chart = bars::figure("capacity", &title, r.capacity_unit(), &bars)?;
    let scaling_chart = match &s.scaling {
        Some(sc) => scaling::chart(sc)?,
        None => None,
    };
    let values: Vec<ValueRow> = s
        .values
        .iter()
        .map(|v| ValueRow {
            label: v.label.clone(),
            runs: v.runs,
            capacity: v.capacity_text(),
            limiting: if v.limiting.is_empty() {
                "—".into()
            } else {
                v.limiting.join("; ")
            },
            leaked: v.leaked.clone().unwrap_or_else(|| "—".into()),
            images: v
                .images
                .iter()
                .map(|(svc, d)| format!("{svc} {d}"))
                .collect::<Vec<_>>()
                .join(" · "),
            points: v
                .points
                .iter()
                .map(usize::to_string)
                .collect::<Vec<_>>()
                .join(", "),
        })
        .collect();
    // Each level (its users, and its room in a room-size search) with every value's figures at it.
    let mut keys: Vec<(u64, Option<u64>)> = s
        .values
        .iter()
        .flat_map(|v| v.levels.iter().map(|l| (l.users, l.room)))
        .collect();
    keys.sort_unstable();
    keys.dedup();
    let levels: Vec<LevelRow> = keys
        .iter()
        .flat_map(|key| {
            s.values.iter().filter_map(move |v| {
                let l = v.levels.iter().find(|l| (l.users, l.room) == *key)?;
                Some(level_row(&v.label, l))
            })
        })
        .collect();
    let points: Vec<PointRow> = r
        .points
        .iter()
        .map(|p| PointRow {
            index: p.index,
            label: SweepResults::label(&p.values),
            run: p.run,
            deploy: p.deploy_run_id.clone(),
            recreated: if p.recreated.is_empty() {
                "nothing".into()
            } else {
                p.recreated.join(", ")
            },
            benches: p
                .benches
                .iter()
                .map(|b| BenchLink {
                    id: b.clone(),
                    href: format!("{}/{b}/report.html", super::results::POINTS),
                })
                .collect(),
        })
        .collect();
    let probes: Vec<ProbeRow> = r
        .points
        .iter()
        .map(|p| ProbeRow {
            index: p.index,
            label: SweepResults::label(&p.values),
            probes: p
                .probes
                .iter()
                .map(|q| {
                    // Held its users, and something besides capacity failed (the leak check): said.
                    let besides: Vec<&str> = q
                        .reasons
                        .iter()
                        .map(|r| r.split(':').next().unwrap_or(r))
                        .collect();
                    match (q.passed, q.invalid, besides.is_empty()) {
                        (true, _, true) => format!("{} ✓", q.users),
                        (true, _, false) => format!("{} ✓ ({})", q.users, besides.join("; ")),
                        (false, true, _) => format!("{} invalid", q.users),
                        (false, false, _) => format!("{} ✗", q.users),
                    }
                })
                .collect::<Vec<_>>()
                .join(", "),
            capacity: p.capacity_text(),
        })
        .collect();
    let mode = match (&r.search, r.room_users) {
        (Some(b), Some(users)) => format!(
            "room-size search {}..{} users per project at {} users at once, to {} %",
            b.from,
            b.to,
            crate::plateau::group(users),
            show(b.precision * 100.0)
        ),
        (Some(b), None) => format!(
            "capacity search {}..{} to {} %",
            b.from,
            b.to,
            show(b.precision * 100.0)
        ),
        (None, _) => format!(
            "levels {}",
            r.levels
                .iter()
                .map(u64::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    let state = match (&r.state, &r.stopped) {
        (_, Some(why)) => Some(format!("Stopped early: {why}")),
        (RunState::Running, None) => {
            Some("Running: this report is rebuilt after every point".to_string())
        }
        (RunState::Interrupted, None) => Some(format!(
            "Interrupted after {} point{}: `exectl sweep --resume {}` goes on",
            r.points.len(),
            if r.points.len() == 1 { "" } else { "s" },
            r.run_id
        )),
        (RunState::Complete, None) => None,
    };
    let mut ctx = tera::Context::new();
    ctx.insert("r", r);
    ctx.insert("started", &crate::units::show_utc(r.started_unix_s));
    ctx.insert("s", &s);
    ctx.insert("variables", &variables);
    ctx.insert("mode", &mode);
    ctx.insert("state", &state);
    ctx.insert("capacity_chart", &capacity_chart);
    ctx.insert("capacity_word", &r.capacity_word());
    ctx.insert("scaling_chart", &scaling_chart);
    ctx.insert("values", &values);
    ctx.insert(
        "deliveries",
        &levels.iter().any(|l| l.delivery != "—" || l.relayed != "—"),
    );
    ctx.insert("levels", &levels);
    ctx.insert("points", &points);
    ctx.insert("probes", &probes);
    ctx.insert("grid", &grid(r, &s));
    let mut t = tera::Tera::default();
    t.add_raw_template("sweep.html", TEMPLATE)
        .map_err(|e| format!("sweep report template: {e}"))?;
    t.render("sweep.html", &ctx)
        .map_err(|e| format!("sweep report template: {e:?}"))
}

#[cfg(test)]
mod tests {
    use super::super::summary::tests::{point, sweep};
    use super::*;

    /// A level none of whose runs counted is no pass: its row is not green and says why.
    #[test]
    fn a_level_that_never_counted_is_not_shown_as_passed() {
        let mut p = crate::sweep::summary::tests::point(1, "a", 1, None, 10.0);
        p.levels[0].invalid = true;
        let s = crate::sweep::summary::summarize(&crate::sweep::summary::tests::sweep(vec![p]));
        let row = level_row("a", &s.values[0].levels[0]);
        assert_eq!(row.passed, "0 / 0 (1 invalid)");
        assert!(!row.all_passed);
        assert_eq!(
            row.login, "—",
            "no figure from a level that could not count"
        );
    }

    #[test]
    fn the_report_shows_each_value_its_range_and_whether_they_differ() {
        let r = sweep(vec![
            point(1, "1g", 1, Some(100), 40.0),
            point(2, "1g", 2, Some(100), 55.0),
            point(3, "1024m", 1, Some(100), 50.0),
        ]);
        let html = render(&r).unwrap();
        assert!(html.contains("What does memory change on exe?"));
        assert!(html.contains("no difference measurable between 1g and 1024m"));
        assert!(
            html.contains("data-bars=\"1g|1024m\""),
            "the capacity chart has a bar per value"
        );
        assert!(
            html.contains("48 ms (40 ms–55 ms)"),
            "login p95's median and range"
        );
        assert!(
            html.contains("href=\"points/S-1/report.html\""),
            "each bench's report linked"
        );
        assert!(!html.contains("<script"), "self-contained, no script");
    }

    #[test]
    fn a_sweep_over_instances_shows_its_scaling_law_and_chart() {
        // 1, 2, 3 instances: 100, 180, 240 users (σ, κ > 0).
        let mut r = sweep(vec![
            point(1, "1", 1, Some(100), 40.0),
            point(2, "2", 1, Some(180), 40.0),
            point(3, "3", 1, Some(240), 40.0),
        ]);
        r.variables = vec!["instances".into()];
        let html = render(&r).unwrap();
        assert!(html.contains("Does adding instances pay?"), "{html}");
        assert!(html.contains("id=\"scaling\""));
        assert!(
            html.contains("data-series=\"measured|USL fit|predicted\"")
                && html.contains("data-points=\"3|4|1\""),
            "measured at 3 counts, the fit drawn on to the 4th, its prediction"
        );
        assert!(html.contains("4 instances: about"), "the prediction said");
        let json = r.to_json().unwrap();
        assert!(
            json.contains("\"scaling\"") && json.contains("\"kappa\""),
            "results.json keeps the fit"
        );
        // Any other variable: no such section.
        r.variables = vec!["memory".into()];
        assert!(!render(&r).unwrap().contains("Does adding instances pay?"));
    }

    /// The header says when the sweep started as a date and time people read (#36: the bench's said
    /// "unix time 1796472849").
    #[test]
    fn the_header_says_when_the_sweep_started_as_a_date_and_time() {
        let mut r = sweep(vec![point(1, "1g", 1, Some(100), 40.0)]);
        r.started_unix_s = 1_796_479_331;
        let html = render(&r).unwrap();
        assert!(html.contains("started 2026-12-05 14:02:11 UTC"), "{html}");
        assert!(!html.contains("1796479331"), "no unix time");
    }

    /// A probe that held its users and leaked counts for the capacity (as a bench's verdict does) and
    /// says its leak; a probe that did not hold them is the fail above it.
    #[test]
    fn a_probe_that_held_and_leaked_is_marked_with_its_leak() {
        use super::super::search::{Bounds, Probe};
        let mut p = point(1, "1g", 1, Some(20), 40.0);
        p.probes = vec![
            Probe {
                users: 20,
                passed: true,
                invalid: false,
                run_id: "S-1-01-20".into(),
                reasons: vec![
                    "leak check failed: still open after 45 s: app-1 20 connections / 5 rooms"
                        .into(),
                ],
            },
            Probe {
                users: 40,
                passed: false,
                invalid: false,
                run_id: "S-1-01-40".into(),
                reasons: vec!["held 50 % (≥ 99.9 %)".into()],
            },
        ];
        let mut r = sweep(vec![p]);
        r.search = Some(Bounds::new(20, 40, 0.1).unwrap());
        let html = render(&r).unwrap();
        assert!(html.contains("20 ✓ (leak check failed), 40 ✗"), "{html}");
    }

    /// A search that gave up on invalid probes says so, probe by probe and in its capacity; a value
    /// whose build leaked says it in its own column.
    #[test]
    fn invalid_probes_and_a_leak_are_said() {
        use super::super::results::Leak;
        use super::super::search::{Bounds, Probe};
        let probe = |users, passed, invalid| Probe {
            users,
            passed,
            invalid,
            run_id: format!("S-1-01-{users}"),
            reasons: vec![],
        };
        let mut p = point(1, "1g", 1, None, 40.0);
        p.probes = vec![
            probe(20, true, false),
            probe(40, false, true),
            probe(40, false, true),
        ];
        p.unknown = Some("unknown".into());
        let mut q = point(2, "leaky", 1, Some(20), 40.0);
        q.leaks = vec![Leak {
            users: 20,
            connections: 20,
            rooms: 5,
        }];
        let mut r = sweep(vec![p, q]);
        r.search = Some(Bounds::new(20, 40, 0.1).unwrap());
        let html = render(&r).unwrap();
        assert!(html.contains("20 ✓, 40 invalid, 40 invalid"), "{html}");
        assert!(
            html.contains("<td>unknown (its levels could not count: invalid)</td>"),
            "{html}"
        );
        assert!(!html.contains("below the first probe"), "{html}");
        assert!(
            html.contains(
                "<td class=\"bad\">leaked 20 connections and 5 rooms in the 20 users level</td>"
            ),
            "{html}"
        );
    }
}
