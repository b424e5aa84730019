//! A frozen instance is not "held": with one app container of an HA stack paused (`docker pause`) during
//! `load idle`, every socket on it keeps its TCP connection open through nginx but gets no pong, and
//! counts as `stalled`; with nothing paused the same run has no stalls. Real engine, stand-in app.

use crate::common;

use common::*;
use std::process::Stdio;
use std::time::{Duration, Instant};

const USERS: u64 = 40;

fn status_json(x: &Exectl, stack: &str) -> serde_json::Value {
    let out = x.run(&["status", "--stack", stack, "--json"]);
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Instance name → sockets it holds.
fn per_instance(r: &serde_json::Value) -> Vec<(String, u64)> {
    r["instances"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            (
                i["name"].as_str().unwrap().to_string(),
                i["totalConnections"].as_u64().unwrap_or(0),
            )
        })
        .collect()
}

fn container_of(r: &serde_json::Value, service: &str) -> String {
    r["services"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == service)
        .and_then(|s| s["container"].as_str())
        .unwrap_or_else(|| panic!("no {service} in {r}"))
        .to_string()
}

fn load(x: &Exectl, stack: &str, run_id: &str) -> std::process::Child {
    let users = USERS.to_string();
    x.command(&[
        "load", "idle", "--stack", stack, "--users", &users, "--hold", "20s", "--ramp", "2s",
        "--run-id", run_id, "--json", "--quiet",
    ])
    .stdout(Stdio::piped())
    .stderr(Stdio::null())
    .spawn()
    .unwrap()
}

/// Wait until every user's socket is on an instance; the per-instance counts.
async fn all_connected(x: &Exectl, stack: &str) -> Vec<(String, u64)> {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let counts = per_instance(&status_json(x, stack));
        if counts.iter().map(|c| c.1).sum::<u64>() == USERS || Instant::now() > deadline {
            return counts;
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

fn summary(child: std::process::Child) -> (Option<i32>, serde_json::Value) {
    let out = child.wait_with_output().unwrap();
    let j = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("no summary ({e}): {}", String::from_utf8_lossy(&out.stdout)));
    (out.status.code(), j)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the Docker engine, the docker CLI and the fixture images; bash scripts/test.sh runs it"]
async fn a_paused_instance_under_load_idle_produces_stalled_failures() {
    let d = docker().await;
    let st = Stack::new("stall").await;
    let (x, stack, port) = (&st.x, st.name.as_str(), Stack::port());
    let mut base = vec![
        "ha",
        "--stack",
        stack,
        "--instances",
        "2",
        "--lb-port",
        &port,
        "--cpus",
        "1",
        "--memory",
        "256m",
    ];
    base.extend(HA_LIMITS);
    let deployed = x.deploy_json(&base);
    assert_eq!(deployed["ok"], true, "{deployed}");
    let users = USERS.to_string();
    x.ok(&[
        "prepare",
        "--stack",
        stack,
        "--accounts",
        &users,
        "--users-per-project",
        "1",
        "--bcrypt-cost",
        "4",
        "--json",
    ]);

    // Healthy: the client's pings are answered all along, nothing is stalled.
    let run = load(x, stack, "hl-stall-healthy");
    let counts = all_connected(x, stack).await;
    assert_eq!(counts.iter().map(|c| c.1).sum::<u64>(), USERS, "{counts:?}");
    let (code, j) = summary(run);
    assert_eq!(code, Some(0), "{j:#}");
    assert_eq!(j["held_full_duration"], USERS, "{j:#}");
    assert_eq!(j["stalled"], 0, "{j:#}");
    assert!(j["failures"].get("stalled").is_none(), "{j:#}");
    // 20 s without the server's own ping (every 30 s): the client's pings kept the silence short.
    assert!(
        j["server_silence_ms"]["max"].as_f64().unwrap() < 10_000.0,
        "{j:#}"
    );

    // app-1 frozen shortly after every socket is up: its sockets stay open, and are stalled, not held.
    let run = load(x, stack, "hl-stall-paused");
    let counts = all_connected(x, stack).await;
    assert_eq!(counts.iter().map(|c| c.1).sum::<u64>(), USERS, "{counts:?}");
    let on_app1 = counts.iter().find(|c| c.0 == "app-1").unwrap().1;
    assert!(on_app1 > 0, "least_conn puts some on app-1: {counts:?}");
    let app1 = container_of(&status_json(x, stack), "app-1");
    let paused = Paused::pause(&app1);
    let (code, j) = summary(run);
    drop(paused);
    assert_eq!(code, Some(1), "a stalled socket fails the run: {j:#}");
    assert_eq!(j["stalled"], on_app1, "{counts:?} {j:#}");
    assert_eq!(j["failures"]["stalled"], on_app1, "{j:#}");
    assert_eq!(j["held_full_duration"], USERS - on_app1, "{j:#}");
    assert_eq!(j["connected"], USERS, "{j:#}");
    assert_eq!(j["close_codes"], serde_json::json!({}), "no close: {j:#}");
    assert!(
        j["server_silence_ms"]["max"].as_f64().unwrap() > 10_000.0,
        "{j:#}"
    );

    x.ok(&["teardown", "--stack", stack, "--purge"]);
    assert!(labelled(&d, stack).await.is_empty());
}
