//! `runs diff A B` on two benches: the settings that differ (what was changed), the variables they come
//! from (more than one: the comparison does not isolate one), and, level by level, how the figures moved
//! (what it did). The stack's knobs are grouped into variables here for deploy records too.

use std::collections::BTreeMap;

use serde::Serialize;

use super::results::Results;
use super::verdict::{LevelResult, Verdict};

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

/// A bench's capacity as its verdict means it: when no level failed, the knee lies beyond the levels
/// run and the capacity is "at least" the last one; the app's leak is said beside it (its users were
/// held: the capacity stands, and the bench failed on the leak).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Capacity {
    pub users: Option<u64>,
    pub at_least: bool,
    /// No capacity, and why not "none": `not established` (a level below a pass failed), `unknown`
    /// (the levels below the knee, or every level, were invalid).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unknown: Option<&'static str>,
    /// A level that held its users failed its leak check.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub leaked: bool,
}

impl Capacity {
    pub fn of(v: &Verdict) -> Capacity {
        let unknown = match (v.capacity, v.knee) {
            (Some(_), _) => None,
            (None, Some(_)) if !v.held_above_knee.is_empty() => Some("not established"),
            (None, Some(k)) if v.invalid.iter().any(|i| *i < k) => Some("unknown"),
            (None, None) if !v.invalid.is_empty() => Some("unknown"),
            (None, _) => None,
        };
        Capacity {
            users: v.capacity,
            at_least: v.capacity.is_some() && v.knee.is_none(),
            unknown,
            leaked: !v.leaked.is_empty(),
        }
    }

    /// `at least 1000`, `1000`, `not established`, `unknown`, or `none` (the first level failed, or
    /// none ran); `(the app leaked)` after it when a level that held its users leaked.
    pub fn text(&self) -> String {
        let c = match (self.users, self.at_least) {
            (Some(c), true) => format!("at least {c}"),
            (Some(c), false) => c.to_string(),
            (None, _) => self.unknown.unwrap_or("none").into(),
        };
        match self.leaked {
            true => format!("{c} (the app leaked)"),
            false => c,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BenchDiff {
    pub knobs: Vec<Changed>,
    /// The independent variables the differing settings come from.
    pub variables: Vec<String>,
    pub capacity: (Capacity, Capacity),
    pub limiting: (Option<String>, Option<String>),
    pub levels: Vec<LevelDelta>,
}

/// The variable a stack knob belongs to (`cpus`, `nginx worker connections`, `env.DB_POOL_MAX`).
pub fn knob_variable(key: &str) -> String {
    match key.strip_prefix("nginx.") {
        Some(rest) => format!("nginx {}", rest.replace('_', " ")),
        None => key.to_string(),
    }
}

/// Whether nginx knob `key` (`nginx.worker_connections`) only followed its variant's defaults in
/// `knobs`: when the variant changed, such a knob is the variant's change, not a variable of its own.
pub fn follows_variant(key: &str, knobs: &BTreeMap<String, String>) -> bool {
    let Some(variant) = knobs.get("nginx.variant") else {
        return false;
    };
    let Some((alg, wc, rl)) = crate::spec::NginxVariant::ALL
        .iter()
        .find(|(n, _)| n == variant)
        .map(
            |(_, v)| match knobs.get("nofile").and_then(|n| n.parse().ok()) {
                Some(nofile) => v.defaults_for(nofile),
                None => v.defaults(),
            },
        )
    else {
        return false;
    };
    let expected = match key {
        "nginx.variant" => return true,
        "nginx.lb_algorithm" => serde_json::to_value(alg)
            .ok()
            .and_then(|v| v.as_str().map(String::from)),
        "nginx.worker_connections" => Some(wc.to_string()),
        "nginx.worker_rlimit_nofile" => {
            Some(rl.map(|r| r.to_string()).unwrap_or_else(|| "-".into()))
        }
        _ => None,
    };
    expected.is_some() && knobs.get(key) == expected.as_ref()
}

/// The variables of a bench's settings keys (see `settings`): a stack knob is its knob's, nginx's
/// knobs that followed a variant change are that change, every other setting is one of its own.
fn variables(changed: &[Changed], b: &Results) -> Vec<String> {
    let variant_changed = changed.iter().any(|c| c.key == "nginx.variant");
    let mut out: Vec<String> = Vec::new();
    for c in changed {
        let key = c.key.as_str();
        let v = if let Some(k) = key.strip_prefix("slo.") {
            format!("objective {k}")
        } else if let Some(s) = key.strip_prefix("image.") {
            format!("image {s}")
        } else if b.knobs.contains_key(key) || key.starts_with("nginx.") {
            if variant_changed && key.starts_with("nginx.") && follows_variant(key, &b.knobs) {
                "nginx variant".to_string()
            } else {
                knob_variable(key)
            }
        } else {
            key.trim_end_matches("_s").replace('_', " ")
        };
        if !out.contains(&v) {
            out.push(v);
        }
    }
    out
}

/// The settings of a bench as flat keys: the stack's knobs, the scenario and its levels, the load's
/// shape, the objectives, the images.
fn settings(r: &Results) -> BTreeMap<String, String> {
    let mut m: BTreeMap<String, String> = r
        .knobs
        .iter()
        .filter(|(k, _)| *k != "stack")
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    m.insert("scenario".into(), r.scenario.clone());
    m.insert(
        "levels".into(),
        r.levels_asked
            .iter()
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join(","),
    );
    m.insert(
        "continue_after_fail".into(),
        r.continue_after_fail.to_string(),
    );
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
    let knobs: Vec<Changed> = keys
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
        variables: variables(&knobs, b),
        knobs,
        capacity: (Capacity::of(&a.verdict), Capacity::of(&b.verdict)),
        limiting: (
            a.verdict.limiting.as_ref().map(|l| l.component.clone()),
            b.verdict.limiting.as_ref().map(|l| l.component.clone()),
        ),
        levels,
    }
}

/// How many variables changed, loudly when more than one: that comparison isolates none (deploys and
/// benches alike).
pub fn variables_line(variables: &[String]) -> String {
    match variables.len() {
        0 => "identical: no variable changed".to_string(),
        1 => format!("1 variable changed: {}", variables[0]),
        n => format!(
            "WARNING: {n} variables changed ({}): this comparison does not isolate one variable",
            variables.join(", ")
        ),
    }
}

/// The diff for people: changed knobs, then one line per level.
pub fn render(a_id: &str, b_id: &str, d: &BenchDiff) -> String {
    use std::fmt::Write as _;
    let opt = |v: Option<String>| v.unwrap_or_else(|| "—".into());
    let mut s = format!("{a_id} -> {b_id}\n");
    for c in &d.knobs {
        let _ = writeln!(s, "  {:<34} {} -> {}", c.key, c.a, c.b);
    }
    let _ = writeln!(s, "{}", variables_line(&d.variables));
    let _ = writeln!(
        s,
        "capacity: {} -> {}",
        d.capacity.0.text(),
        d.capacity.1.text()
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
    let ms = |v: Option<f64>| v.map_or("—".into(), |v| format!("{} ms", super::decimal::show(v)));
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
        b.verdict.knee = None;
        let d = diff(&a, &b);
        assert_eq!(
            d.knobs,
            vec![Changed {
                key: "cpus".into(),
                a: "0.5".into(),
                b: "2".into()
            }]
        );
        assert_eq!(d.variables, ["cpus"]);
        assert_eq!(d.capacity.0.text(), "200");
        assert_eq!(d.capacity.1.text(), "at least 500", "{:?}", d.capacity.1);
        assert_eq!(d.levels.len(), 2);
        assert_eq!(d.levels[1].passed, (Some(false), None));
        let text = render("A", "B", &d);
        assert!(text.contains("cpus") && text.contains("0.5 -> 2"), "{text}");
        assert!(text.contains("1 variable changed: cpus"), "{text}");
        assert!(text.contains("capacity: 200 -> at least 500"), "{text}");
        assert!(text.contains("500 users: fail -> not run"), "{text}");
        assert!(diff(&a, &a).knobs.is_empty());
        assert!(diff(&a, &a).variables.is_empty());
    }

    /// `runs list` says a capacity as the verdict means it (issue #36, 7 and 20): a level that held its
    /// users and leaked is a capacity with a leak, levels that do not rise to a knee no capacity.
    #[test]
    fn a_capacity_with_a_leak_and_one_not_established() {
        let (mut r, _) = super::super::report::tests::example();
        r.verdict.capacity = Some(500);
        r.verdict.knee = None;
        r.verdict.leaked = vec![500];
        assert_eq!(
            Capacity::of(&r.verdict).text(),
            "at least 500 (the app leaked)"
        );
        r.verdict.capacity = None;
        r.verdict.knee = Some(200);
        r.verdict.leaked = vec![];
        r.verdict.held_above_knee = vec![500];
        assert_eq!(Capacity::of(&r.verdict).text(), "not established");
        r.verdict.held_above_knee = vec![];
        assert_eq!(Capacity::of(&r.verdict).text(), "none");
        r.verdict.knee = None;
        r.verdict.invalid = vec![200];
        assert_eq!(Capacity::of(&r.verdict).text(), "unknown");
    }

    #[test]
    fn more_than_one_variable_is_warned_about() {
        let (a, _) = super::super::report::tests::example();
        let mut b = a.clone();
        b.scenario = "collab".into();
        b.levels_asked = vec![100, 200];
        b.hold_s += 10.0;
        b.knobs.insert("instances".into(), "4".into());
        let d = diff(&a, &b);
        assert_eq!(d.variables, ["hold", "instances", "levels", "scenario"]);
        let text = render("A", "B", &d);
        assert!(
            text.contains("WARNING: 4 variables changed (hold, instances, levels, scenario)"),
            "{text}"
        );
    }

    #[test]
    fn nginx_knobs_that_follow_the_variant_are_the_variant() {
        let (a, _) = super::super::report::tests::example();
        let (mut a, mut b) = (a.clone(), a);
        for (r, variant, alg, wc) in [
            (&mut a, "tuned-ip-hash", "ip_hash", "32768"),
            (&mut b, "tuned-least-conn", "least_conn", "32768"),
        ] {
            r.knobs.insert("nginx.variant".into(), variant.into());
            r.knobs.insert("nginx.lb_algorithm".into(), alg.into());
            r.knobs.insert("nginx.worker_connections".into(), wc.into());
        }
        assert_eq!(diff(&a, &b).variables, ["nginx variant"]);
        b.knobs
            .insert("nginx.worker_connections".into(), "1024".into());
        assert_eq!(
            diff(&a, &b).variables,
            ["nginx variant", "nginx worker connections"]
        );
    }
}
