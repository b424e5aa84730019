//! Growth while users come and go (#39, part 2), on the real engine with the stand-in: `bench --churn`
//! makes each user leave and come back (a normal close, a new socket at once) through the hold, and
//! each app instance's RSS, open files, connections and rooms are fitted to a trend over it (the
//! `growth` objective). The healthy stand-in's counts stay flat and the level passes; with its
//! `leak-on-close` fault (the seed study's leak: a closed connection stays counted) every leave leaves
//! a ghost, and the level fails on `growth`, naming the instance's connections and their rate.

use crate::common;

use common::*;
use serde_json::Value;

/// The growth objective's default bound: the most growth over the hold that passes, percent.
const BOUND_PCT: f64 = 10.0;

/// A single SQLite stack (`fault` as STANDIN_FAULT, or none), 40 accounts with minted tokens, and one
/// idle level of 40 users held 10 s with a socket's mean life of 2 s (about 200 leaves, 10 samples of
/// each series): exit code and the level.
async fn churned(short: &str, fault: Option<&str>) -> (Option<i32>, Value, String) {
    let s = Stack::new(short).await;
    let port = Stack::port();
    let mut spec = single_sqlite(&s.name, &port);
    // One database connection, opened at boot. The default pool (10) opens one more whenever two
    // sockets' lookups overlap, 2 open files each (the database and its WAL) that stay: a warm-up of
    // up to 18 files that a busy host spreads over the hold (61 → 65 of a healthy instance in a suite
    // run, +6.6 % against a 10 % bound) and that this short a hold cannot tell from growth.
    spec.extend([
        "--set",
        "STANDIN_ROOM_CLEANUP_MS=500",
        "--set",
        "DB_POOL_MAX=1",
    ]);
    let set = fault.map(|f| format!("STANDIN_FAULT={f}"));
    if let Some(f) = &set {
        spec.extend(["--set", f.as_str()]);
    }
    let d = s.x.deploy_json(&spec);
    assert_eq!(d["ok"], true, "{d}");
    s.prepare_tokens("40", &[]);
    let mut args = vec![
        "bench",
        "--stack",
        &s.name,
        "--run-id",
        "churn",
        "--scenario",
        "idle",
        "--levels",
        "40",
        "--tokens",
        "--hold",
        "10s",
        "--ramp",
        "2s",
        // The leak check after the level: the healthy instance is back at 0 within a second (rooms
        // dropped 0.5 s after their last socket); the leaking one waits all of it.
        "--settle",
        "5s",
        "--churn",
        "2s",
    ];
    args.extend(COUNTS_ONLY);
    let out = s.x.run(&args);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let text = std::fs::read_to_string(s.x.state.path().join("benches/churn/results.json"))
        .unwrap_or_else(|e| panic!("no results.json ({e}); stderr:\n{stderr}"));
    let r: Value = serde_json::from_str(&text).unwrap();
    // The report draws each instance's series over the hold with its trend.
    let report =
        std::fs::read_to_string(s.x.state.path().join("benches/churn/report.html")).unwrap();
    assert!(report.contains("Growth over the hold"), "no growth charts");
    assert!(
        report.contains(
            "data-series=\"app connections|app connections: trend|app rooms|app rooms: trend\""
        ),
        "the counts chart's series"
    );
    (out.status.code(), r["levels"][0].clone(), stderr)
}

#[tokio::test]
#[ignore = "needs the Docker engine, the docker CLI and the fixture images; bash scripts/test.sh runs it"]
async fn users_coming_and_going_leave_a_healthy_instance_flat() {
    let (code, level, stderr) = churned("churn-ok", None).await;
    let g = &level["figures"]["growth"];
    eprintln!("{g:#}");
    assert_eq!(code, Some(0), "{stderr}\n{level:#}");
    // 40 users with a mean life of 2 s over 10 s: about 200 leaves, every one back.
    assert!(g["recovery"]["leaves"].as_u64().unwrap() >= 100, "{g:#}");
    assert_eq!(g["recovery"]["not_back"], 0, "{g:#}");
    assert_eq!(level["figures"]["held"], 40, "{level:#}");
    // RSS, open files, connections and rooms of the one instance, each fitted.
    assert_eq!(g["series"].as_array().unwrap().len(), 4, "{g:#}");
    // The objective passes with room to spare: half its bound at most (a leak measures 10 times it).
    // Not exactly 0: on a busy host a few files in flux can make a significant trend of a few percent.
    let c = slo_check(&level, "growth");
    assert_eq!(
        (&c["ok"], &c["bound"]),
        (&true.into(), &"≤ 10%".into()),
        "{c:#}"
    );
    assert!(c["measured"].as_f64().unwrap() <= BOUND_PCT / 2.0, "{c:#}");
    // What churn moves, users leaving and coming back, does not grow: none of its trends counts.
    for s in g["series"].as_array().unwrap() {
        if s["resource"] == "connections" || s["resource"] == "rooms" {
            assert_eq!(s["significant"], false, "{s:#}");
        }
    }
    assert!(
        slo_check(&level, "plateau")["measured"].is_null(),
        "{level:#}"
    );
}

#[tokio::test]
#[ignore = "needs the Docker engine, the docker CLI and the fixture images; bash scripts/test.sh runs it"]
async fn a_leak_under_churn_is_unbounded_growth_of_the_instances_connections() {
    let (code, level, stderr) = churned("churn-leak", Some("leak-on-close")).await;
    let g = &level["figures"]["growth"];
    eprintln!("{g:#}");
    assert_eq!(code, Some(1), "{stderr}\n{level:#}");
    let c = slo_check(&level, "growth");
    assert_eq!(c["ok"], false, "{level:#}");
    // A ghost per leave: about 200 over 40 users (500 %), ten times the bound at least.
    assert!(c["measured"].as_f64().unwrap() > 10.0 * BOUND_PCT, "{c:#}");
    let worst = g["series"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["significant"] == true)
        .max_by(|a, b| {
            a["pct_over_hold"]
                .as_f64()
                .unwrap()
                .total_cmp(&b["pct_over_hold"].as_f64().unwrap())
        })
        .unwrap();
    assert_eq!(worst["service"], "app", "{g:#}");
    assert_eq!(worst["resource"], "connections", "{g:#}");
    assert!(
        worst["trend"]["low_per_h"].as_f64().unwrap() > 0.0,
        "{worst:#}"
    );
    assert!(
        stderr.contains("the most growth: app connections +"),
        "{stderr}"
    );
    // Said as what it is, and what grew named as what gave out.
    assert!(
        level["reasons"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r.as_str().unwrap().starts_with("unbounded growth ")),
        "{:#}",
        level["reasons"]
    );
    assert_eq!(level["limiting"]["resource"], "growth", "{level:#}");
    assert_eq!(
        level["limiting"]["component"], "app's connections",
        "{level:#}"
    );
}
