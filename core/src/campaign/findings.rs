//! The findings: sentences made from measured facts, each with its evidence — the bench (its folder),
//! the level, and where in that bench's results.json the figure it cites is (a JSON pointer and the
//! value read there), so a reader (or a test) can open it and check. And what was not measured: rows
//! not run, scaled down, and the objectives no level measured.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::results::{RowRecord, RowState};
use crate::bench::results::Results;
use crate::bench::verdict::Outcome;
use crate::plateau::group;
use crate::sweep::results::SweepResults;

/// What a finding is about (the report groups them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// What a row's stack held, and what gave out first.
    Capacity,
    /// A difference over repeats, or none measurable.
    Difference,
    /// What the checks caught: the app's defects (leak, echo, blocking login, frozen instance,
    /// growth) and the balancer's (every connection on one instance).
    Defect,
    /// A level that could not count (the generator was the limit, another client).
    Invalid,
}

/// Where a finding's figure is: a folder relative to the campaign's (a bench's, or a row's sweep's),
/// and in its results.json.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Evidence {
    pub dir: String,
    /// A JSON pointer into the bench's results.json ("/levels/1/figures/held").
    pub pointer: String,
    /// What is there.
    pub value: Value,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    pub kind: Kind,
    pub row: String,
    pub sentence: String,
    pub evidence: Vec<Evidence>,
}

/// One bench of a row, as read back: its folder (relative to the campaign's) and its results.
pub struct Bench<'a> {
    pub dir: &'a str,
    pub results: &'a Results,
}

/// The value at `pointer` of `r` as its results.json holds it.
fn at(r: &impl Serialize, pointer: &str) -> Value {
    serde_json::to_value(r)
        .ok()
        .and_then(|v| v.pointer(pointer).cloned())
        .unwrap_or(Value::Null)
}

fn evidence(b: &Bench, pointer: String) -> Evidence {
    Evidence {
        dir: b.dir.to_string(),
        value: at(b.results, &pointer),
        pointer,
    }
}

/// A share of the instances' connections at or above this during a hold is "every connection on one
/// instance" (a balancer that sends one client address to one instance: ip_hash).
pub const ONE_INSTANCE: f64 = 0.9;

/// The row's sweep (its folder relative to the campaign's, and its results): each level where one
/// app instance of several carried nearly every connection.
pub fn imbalance(row: &RowRecord, dir: &str, sweep: &SweepResults) -> Vec<Finding> {
    let mut out = Vec::new();
    for (i, p) in sweep.points.iter().enumerate() {
        for (j, l) in p.levels.iter().enumerate() {
            let Some((service, share)) = l
                .shares
                .iter()
                .max_by(|a, b| a.1.total_cmp(b.1))
                .filter(|(_, s)| l.shares.len() > 1 && **s >= ONE_INSTANCE)
            else {
                continue;
            };
            let point: Vec<String> = sweep
                .variables
                .iter()
                .zip(&p.values)
                .map(|(k, v)| format!("{k}={v}"))
                .collect();
            let pointer = format!("/points/{i}/levels/{j}/shares/{service}");
            out.push(Finding {
                kind: Kind::Defect,
                row: row.name.clone(),
                sentence: format!(
                    "{}{service} carried {:.0} % of the {} instances' connections through the hold at {} users: the balancer sent (nearly) every user to one instance",
                    match point.is_empty() {
                        true => String::new(),
                        false => format!("{}: ", point.join(", ")),
                    },
                    share * 100.0,
                    l.shares.len(),
                    group(l.users)
                ),
                evidence: vec![Evidence {
                    dir: dir.to_string(),
                    value: at(sweep, &pointer),
                    pointer,
                }],
            });
        }
    }
    out
}

/// Counts for the capacity (held its users at once).
fn held(o: Outcome) -> bool {
    matches!(o, Outcome::Pass | Outcome::Leaked | Outcome::LeakUnchecked)
}

/// What a level measured, not its name: "9,995 of 10,000 served (99.95 %, within the objective
/// ≥ 99.9 %)".
fn served(l: &crate::bench::verdict::LevelResult) -> String {
    let f = &l.figures;
    let objective = match l.slos.iter().find(|c| c.key == "held") {
        Some(c) if c.ok == Some(true) => format!(", within the objective {}", c.bound),
        Some(c) if c.ok == Some(false) => format!(", below the objective {}", c.bound),
        _ => String::new(),
    };
    format!(
        "{} of {} served ({}{objective})",
        group(f.held),
        group(f.users),
        super::table::pct((f.users > 0).then(|| 100.0 * f.held as f64 / f.users as f64))
    )
}

/// A room-size search's row: the largest room its sweep found at its users at once, per point, cited
/// from the sweep's results.json (`dir`). Every bench of such a row has the same users at once, so the
/// levels' capacity sentence of [`of_row`] would say nothing true ("held none of its levels and failed
/// at 500" of a search that found 80): the row's findings take these instead.
pub fn room_search(row: &RowRecord, dir: &str, sweep: &SweepResults) -> Vec<Finding> {
    let Some(users) = sweep.room_users else {
        return Vec::new();
    };
    sweep
        .points
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let pointer = format!("/points/{i}/capacity");
            let of = match p.values.is_empty() {
                true => String::new(),
                false => format!(" with {}", p.values.join(" · ")),
            };
            let found = match (p.capacity, p.at_least) {
                (Some(0), _) => "no room size met the objectives (below the search's first)".into(),
                (Some(n), false) => {
                    format!("at most {n} collaborators per project met the objectives")
                }
                (Some(n), true) => format!(
                    "{n} collaborators per project or more met the objectives (the search's top)"
                ),
                (None, _) => format!(
                    "the largest room was not established ({})",
                    p.unknown.as_deref().unwrap_or("no probe finished")
                ),
            };
            Finding {
                kind: Kind::Capacity,
                row: row.name.clone(),
                sentence: format!(
                    "{} ({}){of}, at {} users: {found}",
                    row.stack,
                    row.topology,
                    group(users)
                ),
                evidence: vec![Evidence {
                    dir: dir.to_string(),
                    value: at(sweep, &pointer),
                    pointer,
                }],
            }
        })
        .collect()
}

/// The findings of one row from its benches (in the order run).
pub fn of_row(row: &RowRecord, benches: &[Bench]) -> Vec<Finding> {
    let mut out = Vec::new();
    let finding = |kind, sentence: String, evidence: Vec<Evidence>| Finding {
        kind,
        row: row.name.clone(),
        sentence,
        evidence,
    };
    // What the row held and what gave out first: its best level that held, its first that failed.
    let levels = || {
        benches.iter().flat_map(|b| {
            b.results
                .levels
                .iter()
                .enumerate()
                .map(move |(i, l)| (b, i, l))
        })
    };
    let best = levels()
        .filter(|(_, _, l)| held(l.outcome()))
        .max_by_key(|(_, _, l)| l.users);
    let failed = levels()
        .filter(|(_, _, l)| l.outcome() == Outcome::Fail)
        .min_by_key(|(_, _, l)| l.users);
    let topology = format!(
        "{} ({})",
        row.stack,
        benches
            .first()
            .and_then(|b| b.results.knobs.get("instances"))
            .map_or_else(
                || row.topology.clone(),
                |n| format!("{} × {n}", row.topology)
            )
    );
    // Each level said by what it measured: its users served of its users, and the held objective.
    let level = |held: bool, l: &crate::bench::verdict::LevelResult| {
        format!(
            "the {} users level {}: {}",
            group(l.users),
            if held { "held" } else { "failed" },
            served(l)
        )
    };
    match (best, failed) {
        (Some((b, i, l)), None) => out.push(finding(
            Kind::Capacity,
            format!(
                "{topology}: {}, its highest; no level failed",
                level(true, l)
            ),
            vec![evidence(b, format!("/levels/{i}/figures/held"))],
        )),
        (best, Some((fb, fi, fl))) => {
            let gave = fl
                .limiting
                .as_ref()
                .map(|x| format!("; what gave out first: {} ({})", x.component, x.detail))
                .unwrap_or_default();
            let held_text = match best {
                Some((_, _, l)) => level(true, l),
                None => "none of its levels held".into(),
            };
            let mut ev = vec![
                evidence(fb, format!("/levels/{fi}/figures/held")),
                evidence(fb, format!("/levels/{fi}/reasons")),
            ];
            if fl.limiting.is_some() {
                ev.push(evidence(fb, format!("/levels/{fi}/limiting/component")));
            }
            if let Some((b, i, _)) = best {
                ev.insert(0, evidence(b, format!("/levels/{i}/figures/held")));
            }
            out.push(finding(
                Kind::Capacity,
                format!(
                    "{topology}: {held_text}; {}; why: {}{gave}",
                    level(false, fl),
                    fl.reasons.join("; ")
                ),
                ev,
            ));
        }
        (None, None) => {}
    }
    for (b, i, l) in levels() {
        let f = &l.figures;
        let users = group(l.users);
        if l.outcome() == Outcome::Leaked {
            out.push(finding(
                Kind::Defect,
                format!(
                    "the app leaked after the {users} users level: {}",
                    l.leak.detail
                ),
                vec![evidence(b, format!("/levels/{i}/leak/detail"))],
            ));
        }
        if let Some(n) = f.frame_error_kinds.get("echoed").filter(|n| **n > 0) {
            out.push(finding(
                Kind::Defect,
                format!(
                    "the app echoed {} frames back to their sender at {users} users",
                    group(*n)
                ),
                vec![evidence(
                    b,
                    format!("/levels/{i}/figures/frame_error_kinds/echoed"),
                )],
            ));
        }
        if let Some(j) = l
            .slos
            .iter()
            .position(|c| c.key == "health_p95" && c.ok == Some(false))
        {
            out.push(finding(
                Kind::Defect,
                format!(
                    "logins blocked the server at {users} users: its /healthcheck answered in {} ms at p95 during the burst ({})",
                    l.slos[j].measured.map_or("—".into(), |m| format!("{m:.0}")),
                    l.slos[j].bound
                ),
                vec![evidence(b, format!("/levels/{i}/slos/{j}/measured"))],
            ));
        }
        if f.stalled > 0 {
            out.push(finding(
                Kind::Defect,
                format!(
                    "{} sockets stalled at {users} users: open, and the server silent past the liveness bound (a frozen instance)",
                    group(f.stalled)
                ),
                vec![evidence(b, format!("/levels/{i}/figures/stalled"))],
            ));
        }
        if let Some(j) = l
            .reasons
            .iter()
            .position(|r| r.contains("unbounded growth"))
        {
            out.push(finding(
                Kind::Defect,
                format!("at {users} users with churn: {}", l.reasons[j]),
                vec![evidence(b, format!("/levels/{i}/reasons/{j}"))],
            ));
        }
        if l.outcome() == Outcome::Invalid {
            out.push(finding(
                Kind::Invalid,
                format!(
                    "the {users} users level could not count: {}",
                    l.reasons.join("; ")
                ),
                vec![evidence(b, format!("/levels/{i}/reasons"))],
            ));
        }
    }
    for (measurable, sentence) in &row.differences {
        out.push(finding(
            Kind::Difference,
            match measurable {
                true => sentence.clone(),
                false => format!("no measurable difference: {sentence}"),
            },
            vec![],
        ));
    }
    out
}

/// What the campaign did not measure: rows not run (why), not reached, scaled down (their note), and
/// each objective no level of a row measured.
pub fn not_measured(rows: &[RowRecord], unmeasured: &[(String, Vec<String>)]) -> Vec<String> {
    let mut out = Vec::new();
    for r in rows {
        match &r.state {
            RowState::NotRun(why) => {
                out.push(format!("row {} ({}) did not run: {why}", r.index, r.name))
            }
            RowState::Pending => out.push(format!("row {} ({}) was not reached", r.index, r.name)),
            RowState::Interrupted(why) => {
                out.push(format!("row {} ({}) was stopped: {why}", r.index, r.name))
            }
            RowState::Done => {}
        }
        if let Some(note) = &r.note {
            out.push(format!("row {} ({}): {note}", r.index, r.name));
        }
    }
    for (row, keys) in unmeasured.iter().filter(|(_, k)| !k.is_empty()) {
        out.push(format!(
            "{row}: not measured by any level: {}",
            keys.join(", ")
        ));
    }
    out
}

/// The objectives of `benches` that no level measured.
pub fn objectives_unmeasured(benches: &[Bench]) -> Vec<String> {
    let mut keys: Vec<String> = Vec::new();
    for b in benches {
        for l in &b.results.levels {
            for c in &l.slos {
                if !keys.contains(&c.key) {
                    keys.push(c.key.clone());
                }
            }
        }
    }
    keys.retain(|k| {
        !benches.iter().any(|b| {
            b.results
                .levels
                .iter()
                .any(|l| l.slos.iter().any(|c| &c.key == k && c.measured.is_some()))
        })
    });
    keys
}

#[cfg(test)]
mod tests {
    use super::super::results::tests::record;
    use super::*;
    use crate::bench::report::tests::example;

    #[test]
    fn a_finding_cites_figures_its_bench_holds() {
        let (r, _) = example();
        let row = record(1, "ha", RowState::Done);
        let b = Bench {
            dir: "rows/01-ha/points/b",
            results: &r,
        };
        let f = of_row(&row, &[b]);
        let cap = f.iter().find(|f| f.kind == Kind::Capacity).unwrap();
        // 200 passed, 500 failed on its login p95 with the instances at their quota: each said by
        // what it measured (served of its users, the held objective), not by its name alone.
        let said = |i: usize, word: &str| {
            let f = &r.levels[i].figures;
            format!(
                "the {} users level {word}: {} of {} served ({} %",
                r.levels[i].users,
                f.held,
                f.users,
                (100 * f.held / f.users)
            )
        };
        assert!(cap.sentence.contains(&said(0, "held")), "{}", cap.sentence);
        assert!(
            cap.sentence.contains(&said(1, "failed")),
            "{}",
            cap.sentence
        );
        assert!(!cap.sentence.contains("users at once"), "{}", cap.sentence);
        let whole = serde_json::to_value(&r).unwrap();
        for e in &cap.evidence {
            assert_eq!(e.dir, "rows/01-ha/points/b");
            assert_eq!(whole.pointer(&e.pointer), Some(&e.value), "{e:?}");
            assert!(!e.value.is_null(), "{e:?}");
        }
        assert_eq!(
            cap.evidence[0].value,
            serde_json::json!(r.levels[0].figures.held)
        );
    }

    #[test]
    fn one_instance_carrying_every_connection_is_caught_and_cited_from_the_rows_sweep() {
        use crate::sweep::summary::tests::{point, sweep};
        let mut even = point(1, "least_conn", 1, Some(100), 40.0);
        even.levels[0].shares = [("app-1".into(), 0.5), ("app-2".into(), 0.5)].into();
        let mut one = point(2, "ip_hash", 1, Some(100), 40.0);
        one.levels[0].shares = [("app-1".into(), 0.0), ("app-2".into(), 1.0)].into();
        let mut s = sweep(vec![even, one]);
        s.variables = vec!["lb_algorithm".into()];
        let row = record(3, "lb", RowState::Done);
        let f = imbalance(&row, "rows/03-lb", &s);
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(
            f[0].sentence.starts_with(
                "lb_algorithm=ip_hash: app-2 carried 100 % of the 2 instances' connections"
            ),
            "{}",
            f[0].sentence
        );
        let e = &f[0].evidence[0];
        assert_eq!(
            (e.dir.as_str(), e.pointer.as_str()),
            ("rows/03-lb", "/points/1/levels/0/shares/app-2")
        );
        assert_eq!(
            serde_json::to_value(&s).unwrap().pointer(&e.pointer),
            Some(&e.value)
        );
    }

    #[test]
    fn a_room_search_row_says_its_largest_room_cited_from_its_sweep() {
        use crate::sweep::summary::tests::{point, sweep};
        let mut p = point(1, "none", 1, Some(80), 40.0);
        p.values.clear();
        let mut s = sweep(vec![p]);
        s.variables.clear();
        let row = record(3, "rooms", RowState::Done);
        assert!(
            room_search(&row, "rows/03-rooms", &s).is_empty(),
            "not a room search"
        );
        s.room_users = Some(500);
        let f = room_search(&row, "rows/03-rooms", &s);
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].kind, Kind::Capacity);
        assert_eq!(
            f[0].sentence,
            "c-single (single), at 500 users: at most 80 collaborators per project met the objectives"
        );
        let e = &f[0].evidence[0];
        assert_eq!(
            (e.dir.as_str(), e.pointer.as_str()),
            ("rows/03-rooms", "/points/0/capacity")
        );
        assert_eq!(e.value, serde_json::json!(80));
        assert_eq!(
            serde_json::to_value(&s).unwrap().pointer(&e.pointer),
            Some(&e.value)
        );
    }

    #[test]
    fn what_was_not_measured_is_said() {
        let mut rows = vec![
            record(1, "a", RowState::Done),
            record(
                2,
                "b",
                RowState::NotRun("the image x is not on the target".into()),
            ),
            record(3, "c", RowState::Pending),
        ];
        rows[0].note = Some("scaled from 10,000 users".into());
        let lines = not_measured(&rows, &[("a".into(), vec!["delivery_p95".into()])]);
        assert_eq!(
            lines,
            [
                "row 1 (a): scaled from 10,000 users",
                "row 2 (b) did not run: the image x is not on the target",
                "row 3 (c) was not reached",
                "a: not measured by any level: delivery_p95",
            ]
        );
    }
}
