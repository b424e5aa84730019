//! `runs diff A B` on two benches: the knobs that differ (what was changed) and, level by level, how the
//! figures moved (what it did).

use serde::Serialize;

use super::results::Results;
use super::verdict::LevelResult;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Changed {
    pub key: String,
    pub a: String,
    pub b: String,
}

/// One level's figures in both runs (None: the level was not run there).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LevelDelta {
    pub users: u64,
    pub passed: (Option<bool>, Option<bool>),
    pub held: (Option<u64>, Option<u64>),
    pub login_p95_ms: (Option<f64>, Option<f64>),
    pub connect_p95_ms: (Option<f64>, Option<f64>),
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BenchDiff {
    pub knobs: Vec<Changed>,
    pub capacity: (Option<u64>, Option<u64>),
    pub limiting: (Option<String>, Option<String>),
    pub levels: Vec<LevelDelta>,
}

/// The settings of a bench as flat keys: the stack's knobs, the scenario, the load's shape, the objectives.
fn settings(r: &Results) -> std::collections::BTreeMap<String, String> {
    let mut m: std::collections::BTreeMap<String, String> = r
        .knobs
        .iter()
        .filter(|(k, _)| *k != "stack")
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    m.insert("scenario".into(), r.scenario.clone());
    m.insert("target".into(), r.target.clone());
    m.insert("hold_s".into(), r.hold_s.to_string());
    m.insert("ramp_s".into(), r.ramp_s.to_string());
    m.insert("settle_s".into(), r.settle_s.to_string());
    m.insert("sample_s".into(), r.sample_s.to_string());
    if let Ok(serde_json::Value::Object(slos)) = serde_json::to_value(&r.slos) {
        for (k, v) in slos {
            m.insert(format!("slo.{k}"), v.to_string());
        }
    }
    for (service, image) in &r.images {
        m.insert(format!("image.{service}"), image.clone());
    }
    m
}

pub fn diff(a: &Results, b: &Results) -> BenchDiff {
    let (sa, sb) = (settings(a), settings(b));
    let keys: std::collections::BTreeSet<&String> = sa.keys().chain(sb.keys()).collect();
    let none = "(unset)".to_string();
    let knobs = keys
        .into_iter()
        .filter_map(|k| {
            let (x, y) = (sa.get(k).unwrap_or(&none), sb.get(k).unwrap_or(&none));
            (x != y).then(|| Changed {
                key: k.clone(),
                a: x.clone(),
                b: y.clone(),
            })
        })
        .collect();
    let mut users: Vec<u64> = a.levels.iter().chain(&b.levels).map(|l| l.users).collect();
    users.sort_unstable();
    users.dedup();
    let find = |r: &Results, u: u64| r.levels.iter().find(|l| l.users == u).cloned();
    let pair = |u: u64, f: &dyn Fn(&LevelResult) -> Option<f64>| {
        (
            find(a, u).as_ref().and_then(f),
            find(b, u).as_ref().and_then(f),
        )
    };
    let levels = users
        .into_iter()
        .map(|u| LevelDelta {
            users: u,
            passed: (find(a, u).map(|l| l.passed), find(b, u).map(|l| l.passed)),
            held: (
                find(a, u).map(|l| l.figures.held),
                find(b, u).map(|l| l.figures.held),
            ),
            login_p95_ms: pair(u, &|l| l.figures.login_ms.map(|p| p.p95)),
            connect_p95_ms: pair(u, &|l| l.figures.connect_ms.map(|p| p.p95)),
        })
        .collect();
    BenchDiff {
        knobs,
        capacity: (a.verdict.capacity, b.verdict.capacity),
        limiting: (
            a.verdict.limiting.as_ref().map(|l| l.component.clone()),
            b.verdict.limiting.as_ref().map(|l| l.component.clone()),
        ),
        levels,
    }
}

/// The diff for people: changed knobs, then one line per level.
pub fn render(a_id: &str, b_id: &str, d: &BenchDiff) -> String {
    use std::fmt::Write as _;
    let opt = |v: Option<String>| v.unwrap_or_else(|| "—".into());
    let mut s = format!("{a_id} -> {b_id}\n");
    if d.knobs.is_empty() {
        s += "  no setting differs\n";
    }
    for c in &d.knobs {
        let _ = writeln!(s, "  {:<34} {} -> {}", c.key, c.a, c.b);
    }
    let cap = |c: Option<u64>| c.map_or("none".into(), |c| c.to_string());
    let _ = writeln!(
        s,
        "capacity: {} -> {}",
        cap(d.capacity.0),
        cap(d.capacity.1)
    );
    if d.limiting.0.is_some() || d.limiting.1.is_some() {
        let _ = writeln!(
            s,
            "limiting component: {} -> {}",
            opt(d.limiting.0.clone()),
            opt(d.limiting.1.clone())
        );
    }
    let verdict = |p: Option<bool>| match p {
        Some(true) => "pass",
        Some(false) => "fail",
        None => "not run",
    };
    let ms = |v: Option<f64>| v.map_or("—".into(), |v| format!("{} ms", super::slo::show(v)));
    for l in &d.levels {
        let _ = writeln!(
            s,
            "  {:>6} users: {} -> {}; held {} -> {}; login p95 {} -> {}; connect p95 {} -> {}",
            l.users,
            verdict(l.passed.0),
            verdict(l.passed.1),
            opt(l.held.0.map(|h| h.to_string())),
            opt(l.held.1.map(|h| h.to_string())),
            ms(l.login_p95_ms.0),
            ms(l.login_p95_ms.1),
            ms(l.connect_p95_ms.0),
            ms(l.connect_p95_ms.1),
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn knobs_that_differ_and_levels_side_by_side() {
        let (a, _) = super::super::report::tests::example();
        let mut b = a.clone();
        b.knobs.insert("cpus".into(), "2".into());
        b.levels.truncate(1);
        b.verdict.capacity = Some(500);
        let d = diff(&a, &b);
        assert_eq!(
            d.knobs,
            vec![Changed {
                key: "cpus".into(),
                a: "0.5".into(),
                b: "2".into()
            }]
        );
        assert_eq!(d.capacity, (Some(200), Some(500)));
        assert_eq!(d.levels.len(), 2);
        assert_eq!(d.levels[1].passed, (Some(false), None));
        let text = render("A", "B", &d);
        assert!(text.contains("cpus") && text.contains("0.5 -> 2"), "{text}");
        assert!(text.contains("500 users: fail -> not run"), "{text}");
        assert!(diff(&a, &a).knobs.is_empty());
    }
}
