//! The comparison: each value's runs gathered (median and range of its capacity and of each level's
//! figures), the values compared in order, and a headline. Ranges that overlap are said to show no
//! measurable difference rather than ranked. A run whose capacity is unknown or not established is
//! left out of its value's capacity (never counted as 0); the app's leak is said beside the capacity.

use std::collections::BTreeMap;

use serde::Serialize;

use super::results::{PointResult, SweepResults};
use super::stats::{compare, Difference, Spread};

/// One value of the variable (one cell of a matrix) over its runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ValueSummary {
    pub values: Vec<String>,
    pub label: String,
    pub runs: usize,
    /// Over its runs whose capacity is known (0 for a run whose first level failed); None before any
    /// ran, or when none of them has a known capacity.
    pub capacity: Option<Spread>,
    /// Every run with a known capacity held everything it tried: the capacity is at least its top level.
    pub at_least: bool,
    /// Each run's capacity that is not known, as its point says it (`unknown`, `not established`): left
    /// out of `capacity` and of the differences.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unknown: Vec<String>,
    /// The app's leak in its runs, said: `leaked 100 connections and 25 rooms in the 100 users level`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub leaked: Option<String>,
    /// The limiting components named by its runs, once each.
    pub limiting: Vec<String>,
    /// Service → image digest (the digests of its runs, joined when they differ — which the sweep stops on).
    pub images: BTreeMap<String, String>,
    pub levels: Vec<LevelSpread>,
    /// Its points' indices.
    pub points: Vec<usize>,
}

/// One level of one value, over the runs that ran it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LevelSpread {
    pub users: u64,
    /// A room-size search's room (users per project): each room size is its own level.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub room: Option<u64>,
    /// Runs whose level counted (an invalid one is apart: no figure comes from it).
    pub runs: usize,
    pub passed: usize,
    pub held_pct: Option<Spread>,
    pub login_p95_ms: Option<Spread>,
    pub connect_p95_ms: Option<Spread>,
    pub top_share: Option<Spread>,
    pub busiest_share: Option<Spread>,
    /// collab/editing: delivery latency percentiles, and frames relayed a second per instance.
    pub delivery_p50_ms: Option<Spread>,
    pub delivery_p95_ms: Option<Spread>,
    pub delivery_p99_ms: Option<Spread>,
    pub relayed_per_s: Option<Spread>,
    /// The busiest container's name in its runs (the most frequent).
    pub busiest: Option<String>,
    pub browser_ms: Option<Spread>,
    /// Runs whose browser did not finish.
    pub browser_failed: usize,
    /// Runs whose level could not count.
    #[serde(skip_serializing_if = "is_zero")]
    pub invalid: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    pub values: Vec<ValueSummary>,
    /// Each value against the next, on capacity and on the login p95 of the levels they share.
    pub differences: Vec<Difference>,
    pub headline: String,
    /// A sweep over `instances` alone: the scaling law fitted to its capacities.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scaling: Option<super::scaling::Scaling>,
}

fn spread(xs: impl Iterator<Item = Option<f64>>) -> Option<Spread> {
    Spread::of(&xs.flatten().collect::<Vec<_>>())
}

/// The app's leak over a value's runs: at the lowest level any of them leaked in, the connections and
/// rooms left (median and range over the runs that leaked there), and in how many runs.
fn leaked(points: &[&PointResult]) -> Option<String> {
    let lowest = points
        .iter()
        .flat_map(|p| &p.leaks)
        .map(|l| l.users)
        .min()?;
    let at: Vec<_> = points
        .iter()
        .flat_map(|p| p.leaks.iter().filter(|l| l.users == lowest).take(1))
        .collect();
    let of = |f: fn(&super::results::Leak) -> u64| {
        Spread::of(&at.iter().map(|l| f(l) as f64).collect::<Vec<_>>())
            .map_or_else(String::new, |s| s.text(show_users))
    };
    let runs = points.iter().filter(|p| !p.leaks.is_empty()).count();
    Some(format!(
        "leaked {} connections and {} rooms in the {} users level{}",
        of(|l| l.connections),
        of(|l| l.rooms),
        show_users(lowest as f64),
        match points.len() {
            1 => String::new(),
            n => format!(" (in {runs} of {n} runs)"),
        }
    ))
}

fn value_summary(values: &[String], points: &[&PointResult]) -> ValueSummary {
    // A run whose first level failed held no level: 0, so that it ranks below one that held some. A
    // run whose capacity is unknown or not established says nothing of it: left out.
    let known: Vec<&&PointResult> = points.iter().filter(|p| p.unknown.is_none()).collect();
    let capacity = spread(known.iter().map(|p| Some(p.capacity.unwrap_or(0) as f64)));
    let mut limiting: Vec<String> = Vec::new();
    for p in points {
        if let Some(l) = &p.limiting {
            if !limiting.contains(&l.component) {
                limiting.push(l.component.clone());
            }
        }
    }
    let mut images: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for p in points {
        for (s, d) in &p.images {
            let e = images.entry(s.clone()).or_default();
            if !e.contains(d) {
                e.push(d.clone());
            }
        }
    }
    // A level is its users at once and, in a room-size search, its room: probes of other rooms are
    // other levels, never one spread.
    let mut keys: Vec<(u64, Option<u64>)> = points
        .iter()
        .flat_map(|p| p.levels.iter().map(|l| (l.users, l.room)))
        .collect();
    keys.sort_unstable();
    keys.dedup();
    let levels = keys
        .into_iter()
        .map(|(u, room)| {
            let all: Vec<_> = points
                .iter()
                .flat_map(|p| p.levels.iter())
                .filter(|l| (l.users, l.room) == (u, room))
                .collect();
            let ls: Vec<_> = all.iter().filter(|l| !l.invalid).collect();
            let mut names: BTreeMap<&str, usize> = BTreeMap::new();
            for l in &ls {
                if let Some(b) = &l.busiest {
                    *names.entry(b.service.as_str()).or_default() += 1;
                }
            }
            LevelSpread {
                users: u,
                room,
                invalid: all.len() - ls.len(),
                runs: ls.len(),
                passed: ls.iter().filter(|l| l.passed).count(),
                held_pct: spread(ls.iter().map(|l| Some(l.held_pct))),
                login_p95_ms: spread(ls.iter().map(|l| l.login_p95_ms)),
                connect_p95_ms: spread(ls.iter().map(|l| l.connect_p95_ms)),
                top_share: spread(ls.iter().map(|l| l.top_share())),
                busiest_share: spread(ls.iter().map(|l| l.busiest.as_ref().map(|b| b.share))),
                delivery_p50_ms: spread(ls.iter().map(|l| l.delivery_ms.map(|d| d.p50))),
                delivery_p95_ms: spread(ls.iter().map(|l| l.delivery_ms.map(|d| d.p95))),
                delivery_p99_ms: spread(ls.iter().map(|l| l.delivery_ms.map(|d| d.p99))),
                relayed_per_s: spread(ls.iter().map(|l| l.relayed_per_s_per_instance)),
                busiest: names
                    .into_iter()
                    .max_by_key(|(_, n)| *n)
                    .map(|(s, _)| s.to_string()),
                browser_ms: spread(
                    ls.iter()
                        .map(|l| l.browser.as_ref().and_then(|b| b.total_ms)),
                ),
                browser_failed: ls
                    .iter()
                    .filter(|l| l.browser.as_ref().is_some_and(|b| !b.finished()))
                    .count(),
            }
        })
        .collect();
    ValueSummary {
        values: values.to_vec(),
        label: SweepResults::label(values),
        runs: points.len(),
        capacity,
        at_least: !known.is_empty() && known.iter().all(|p| p.at_least),
        unknown: points.iter().filter_map(|p| p.unknown.clone()).collect(),
        leaked: leaked(points),
        limiting,
        images: images.into_iter().map(|(s, d)| (s, d.join(", "))).collect(),
        levels,
        points: points.iter().map(|p| p.index).collect(),
    }
}

/// The values in the sweep's order, each over its runs, compared.
pub fn summarize(r: &SweepResults) -> Summary {
    let mut order: Vec<Vec<String>> = Vec::new();
    for p in &r.points {
        if !order.contains(&p.values) {
            order.push(p.values.clone());
        }
    }
    let values: Vec<ValueSummary> = order
        .iter()
        .map(|v| {
            let ps: Vec<&PointResult> = r.points.iter().filter(|p| &p.values == v).collect();
            value_summary(v, &ps)
        })
        .collect();
    let mut differences = Vec::new();
    for pair in values.windows(2) {
        let (a, b) = (&pair[0], &pair[1]);
        if let (Some(ca), Some(cb)) = (&a.capacity, &b.capacity) {
            // Both "at least" the same top: nothing tells them apart.
            let figure = match r.room_users {
                Some(_) => "max room",
                None => "capacity",
            };
            differences.push(compare(figure, (&a.label, ca), (&b.label, cb)));
        }
        for la in &a.levels {
            let Some(lb) = b
                .levels
                .iter()
                .find(|l| (l.users, l.room) == (la.users, la.room))
            else {
                continue;
            };
            if let (Some(x), Some(y)) = (&la.login_p95_ms, &lb.login_p95_ms) {
                let at = match la.room {
                    Some(k) => format!("{} users in rooms of {k}", la.users),
                    None => format!("{} users", la.users),
                };
                differences.push(compare(
                    &format!("login p95 at {at}"),
                    (&a.label, x),
                    (&b.label, y),
                ));
            }
        }
    }
    let headline = headline(r, &values);
    let scaling = super::scaling::scaling(&r.variables, &values);
    Summary {
        values,
        differences,
        headline,
        scaling,
    }
}

/// "nginx: baseline-default 1,000 · tuned-ip-hash at least 1,200 · tuned-least-conn at least 1,200";
/// "capacity by nginx: no point finished" before any did.
fn headline(r: &SweepResults, values: &[ValueSummary]) -> String {
    let word = r.capacity_word();
    // A search with nothing varied (a campaign's room-size row): one value, no "by".
    let by = match r.variables.is_empty() {
        true => String::new(),
        false => format!(" by {}", r.variables.join(" × ")),
    };
    if values.is_empty() {
        return format!("{word}{by}: no point finished");
    }
    let parts: Vec<String> = values
        .iter()
        .map(|v| match &v.leaked {
            Some(leak) => format!("{} {} ({leak})", v.label, v.capacity_text()),
            None => format!("{} {}", v.label, v.capacity_text()),
        })
        .collect();
    let parts = parts.join(" · ");
    format!("{word}{by}: {}", parts.trim_start())
}

impl ValueSummary {
    /// `1,200`, `at least 1,500`, `1,200 (1,100–1,300)`, `below its first level` (a capacity of 0),
    /// `unknown (invalid levels)` or `not established (…)` when no run's capacity is known, and after a
    /// known one how many runs had none (`; 1 of 3 runs unknown`).
    pub fn capacity_text(&self) -> String {
        let known = match &self.capacity {
            Some(c) if c.max == 0.0 => "below its first level".into(),
            Some(c) if self.at_least => format!("at least {}", c.text(show_users)),
            Some(c) => c.text(show_users),
            None => match self.unknown.first() {
                Some(u) => return unknown_text(u),
                None => return "not measured yet".into(),
            },
        };
        match self.unknown.first() {
            Some(u) => format!("{known}; {} of {} runs {u}", self.unknown.len(), self.runs),
            None => known,
        }
    }
}

/// A capacity that is not known, with why: `unknown (invalid levels)`, `not established (a level below
/// a pass failed)`.
pub fn unknown_text(word: &str) -> String {
    match word {
        "not established" => {
            "not established (a level below one that held its users failed)".into()
        }
        "unknown" => "unknown (its levels could not count: invalid)".into(),
        other => other.into(),
    }
}

pub fn show_users(x: f64) -> String {
    crate::plateau::group(x.round() as u64)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::bench::results::RunState;
    use crate::sweep::results::LevelSummary;

    pub(crate) fn point(
        index: usize,
        value: &str,
        run: u32,
        capacity: Option<u64>,
        login: f64,
    ) -> PointResult {
        PointResult {
            index,
            values: vec![value.into()],
            run,
            deploy_run_id: format!("E-{index}"),
            recreated: vec![],
            containers: BTreeMap::new(),
            images: BTreeMap::from([("app".to_string(), format!("sha256:{value}"))]),
            benches: vec![format!("S-{index}")],
            capacity,
            at_least: false,
            unknown: None,
            leaks: vec![],
            probes: vec![],
            levels: vec![super::super::results::LevelSummary {
                users: 100,
                room: None,
                passed: true,
                invalid: false,
                bench: format!("S-{index}"),
                held_pct: 100.0,
                login_p95_ms: Some(login),
                connect_p95_ms: None,
                health_p95_ms: None,
                delivery_ms: None,
                relayed_per_s_per_instance: None,
                busiest: None,
                shares: BTreeMap::new(),
                browser: None,
                reasons: vec![],
            }],
            limiting: None,
        }
    }

    pub(crate) fn sweep(points: Vec<PointResult>) -> SweepResults {
        SweepResults {
            schema: super::super::results::SCHEMA,
            run_id: "S-1".into(),
            state: RunState::Complete,
            pid: None,
            pid_since_unix_s: None,
            exectl_version: "0".into(),
            stack: "exe".into(),
            target: "local".into(),
            variables: vec!["memory".into()],
            values: vec![vec!["1g".into(), "1024m".into()]],
            repeat: 3,
            scenario: "idle".into(),
            levels: vec![100],
            search: None,
            room_users: None,
            browser_probe: false,
            started_unix_s: 0,
            duration_s: 1.0,
            points,
            stopped: None,
            plan: serde_json::Value::Null,
            started_in: "/home/u/study".into(),
            fingerprints: BTreeMap::new(),
        }
    }

    /// A room-size search probes one count of users in rooms of several sizes: each room is a level
    /// of its own, never one spread over rooms; and a level that could not count gives no figure.
    #[test]
    fn each_room_is_its_own_level_and_an_invalid_one_gives_no_figure() {
        let mut p = point(1, "a", 1, Some(8), 0.0);
        let probe = |room: u64, login: f64, invalid: bool| LevelSummary {
            users: 40,
            room: Some(room),
            login_p95_ms: Some(login),
            invalid,
            ..p.levels[0].clone()
        };
        p.levels = vec![
            probe(2, 10.0, false),
            probe(4, 20.0, false),
            probe(8, 80.0, true),
            probe(8, 30.0, false),
        ];
        let s = summarize(&sweep(vec![p]));
        let levels = &s.values[0].levels;
        let rooms: Vec<Option<u64>> = levels.iter().map(|l| l.room).collect();
        assert_eq!(rooms, [Some(2), Some(4), Some(8)]);
        let eight = &levels[2];
        assert_eq!((eight.runs, eight.invalid), (1, 1));
        let login = eight.login_p95_ms.as_ref().unwrap();
        assert_eq!(
            (login.min, login.max),
            (30.0, 30.0),
            "the invalid probe's 80 ms is no figure"
        );
        assert_eq!(levels[0].login_p95_ms.as_ref().unwrap().median, 10.0);
    }

    #[test]
    fn equal_configurations_over_three_runs_are_not_ranked() {
        let r = sweep(vec![
            point(1, "1g", 1, Some(100), 40.0),
            point(2, "1g", 2, Some(100), 55.0),
            point(3, "1g", 3, Some(100), 47.0),
            point(4, "1024m", 1, Some(100), 50.0),
            point(5, "1024m", 2, Some(100), 43.0),
            point(6, "1024m", 3, Some(100), 60.0),
        ]);
        let s = summarize(&r);
        assert_eq!(s.values.len(), 2);
        assert_eq!(s.values[0].runs, 3);
        let login = &s.values[1].levels[0].login_p95_ms.unwrap();
        assert_eq!((login.median, login.min, login.max), (50.0, 43.0, 60.0));
        assert!(
            s.differences.iter().all(|d| !d.measurable),
            "{:?}",
            s.differences
        );
        assert!(s.differences.iter().any(|d| d
            .sentence
            .contains("no difference measurable between 1g and 1024m at K = 3")));
    }

    #[test]
    fn ranges_apart_are_ranked() {
        let mut r = sweep(vec![
            point(1, "A", 1, Some(1000), 40.0),
            point(2, "B", 1, Some(400), 2500.0),
        ]);
        r.repeat = 1;
        let s = summarize(&r);
        let cap = s
            .differences
            .iter()
            .find(|d| d.figure == "capacity")
            .unwrap();
        assert!(
            cap.measurable && cap.sentence.contains("A is higher than B"),
            "{cap:?}"
        );
        assert_eq!(s.headline, "capacity by memory: A 1,000 · B 400");
        r.points.clear();
        assert_eq!(
            summarize(&r).headline,
            "capacity by memory: no point finished"
        );
        assert_eq!(s.values[1].images["app"], "sha256:B");
    }

    /// A room-size search says what its capacities count: the largest room at its users at once.
    #[test]
    fn a_room_search_says_max_collaborators_per_project() {
        let mut r = sweep(vec![
            point(1, "none", 1, Some(112), 40.0),
            point(2, "slow-relay", 1, Some(48), 40.0),
        ]);
        r.repeat = 1;
        r.variables = vec!["env.STANDIN_FAULT".into()];
        r.room_users = Some(200);
        let s = summarize(&r);
        assert_eq!(
            s.headline,
            "max collaborators per project at 200 users by env.STANDIN_FAULT: none 112 · slow-relay 48"
        );
        assert!(
            s.differences.iter().any(|d| d.figure == "max room"),
            "{:?}",
            s.differences
        );
        let html = crate::sweep::report::render(&r).unwrap();
        assert!(
            html.contains("<th>max collaborators per project at 200 users (median, range)</th>")
        );
        assert!(html.contains("Max collaborators per project by env.STANDIN_FAULT"));
        assert!(html.contains("users per project"), "the chart's unit");

        // Nothing varied (a campaign's room-size row): the one value, no "by".
        let mut one = point(1, "none", 1, Some(80), 40.0);
        one.values.clear();
        let mut r = sweep(vec![one]);
        r.repeat = 1;
        r.variables.clear();
        r.room_users = Some(500);
        assert_eq!(
            summarize(&r).headline,
            "max collaborators per project at 500 users: 80"
        );
    }

    /// A run whose capacity is unknown (its levels invalid) or not established is no capacity of 0: left
    /// out of its value's capacity and of the differences, and said as such (it read "below its first
    /// level", and was ranked below a value that held its levels).
    #[test]
    fn an_unknown_capacity_is_not_zero() {
        let mut unknown = point(1, "A", 1, None, 40.0);
        unknown.unknown = Some("unknown".into());
        let mut r = sweep(vec![unknown, point(2, "B", 1, Some(400), 50.0)]);
        r.repeat = 1;
        let s = summarize(&r);
        assert_eq!(s.values[0].capacity, None);
        assert_eq!(
            s.headline,
            "capacity by memory: A unknown (its levels could not count: invalid) · B 400"
        );
        assert!(
            s.differences.iter().all(|d| d.figure != "capacity"),
            "{:?}",
            s.differences
        );
        // Not established, and one run of three: the other two make the capacity, the third is said.
        let mut not = point(3, "A", 2, None, 40.0);
        not.unknown = Some("not established".into());
        let mut r = sweep(vec![
            point(1, "A", 1, Some(100), 40.0),
            not,
            point(5, "A", 3, Some(100), 40.0),
        ]);
        r.repeat = 3;
        let v = &summarize(&r).values[0];
        assert_eq!(v.capacity.map(|c| (c.median, c.runs)), Some((100.0, 2)));
        assert_eq!(v.capacity_text(), "100; 1 of 3 runs not established");
        assert!(summarize(&sweep(vec![point(1, "A", 1, None, 1.0)]))
            .headline
            .ends_with("A below its first level"));
    }

    /// The app's leak is said per value in the headline, beside a capacity it does not change.
    #[test]
    fn a_leaking_value_says_its_leak() {
        use super::super::results::Leak;
        let leak = |users, connections| Leak {
            users,
            connections,
            rooms: connections / 4,
        };
        let mut leaky = point(1, "leaky", 1, Some(200), 40.0);
        leaky.at_least = true;
        leaky.leaks = vec![leak(100, 100), leak(200, 200)];
        let mut fixed = point(2, "fixed", 1, Some(200), 40.0);
        fixed.at_least = true;
        let mut r = sweep(vec![leaky, fixed]);
        r.variables = vec!["image.app".into()];
        r.repeat = 1;
        let s = summarize(&r);
        assert_eq!(
            s.headline,
            "capacity by image.app: leaky at least 200 (leaked 100 connections and 25 rooms in the 100 users level) · fixed at least 200"
        );
        assert_eq!(s.values[1].leaked, None);
        // Over repeats: the range at the lowest level, in how many runs.
        let mut a = point(1, "leaky", 1, Some(200), 40.0);
        a.leaks = vec![leak(100, 100)];
        let mut b = point(2, "leaky", 2, Some(200), 40.0);
        b.leaks = vec![leak(100, 60)];
        let c = point(3, "leaky", 3, Some(200), 40.0);
        let v = &summarize(&sweep(vec![a, b, c])).values[0];
        assert_eq!(
            v.leaked.as_deref(),
            Some("leaked 80 (60–100) connections and 20 (15–25) rooms in the 100 users level (in 2 of 3 runs)")
        );
    }
}
