//! exectl load against a deployed HA stack by name, with a prepared manifest, watched by status: the
//! load issue's end-to-end acceptance on a real engine with the stand-in app.

use crate::common;

use common::*;
use std::time::Duration;

fn status_json(x: &Exectl, stack: &str, extra: &[&str]) -> (Option<i32>, serde_json::Value) {
    let mut args = vec!["status", "--stack", stack, "--json"];
    args.extend(extra);
    let out = x.run(&args);
    (
        out.status.code(),
        serde_json::from_slice(&out.stdout).unwrap(),
    )
}

fn per_instance(r: &serde_json::Value) -> Vec<u64> {
    r["instances"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["totalConnections"].as_u64().unwrap())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the Docker engine and the fixture images; bash scripts/test.sh runs it"]
async fn idle_1000_held_through_the_lb_then_idle_and_the_leak_is_caught() {
    let d = docker().await;
    let st = Stack::new("load").await;
    let (x, stack, port) = (&st.x, st.name.as_str(), Stack::port());
    let mut base = vec![
        "ha",
        "--stack",
        stack,
        "--lb-port",
        &port,
        "--cpus",
        "1",
        "--memory",
        "512m",
        "--set",
        "STANDIN_ROOM_CLEANUP_MS=300",
    ];
    base.extend(HA_LIMITS);
    let deployed = x.deploy_json(&base);
    assert_eq!(deployed["ok"], true, "{deployed}");
    x.ok(&[
        "prepare",
        "--stack",
        stack,
        "--accounts",
        "1000",
        "--users-per-project",
        "4",
        "--bcrypt-cost",
        "4",
        "--json",
    ]);

    // 1000 users log in through nginx and hold their project's socket for 30 s.
    let load = x
        .command(&[
            "load", "idle", "--stack", stack, "--users", "1000", "--hold", "30s", "--ramp", "5s",
            "--json", "--quiet",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // During the hold, status sees them on the instances themselves.
    let deadline = std::time::Instant::now() + Duration::from_secs(25);
    let during = loop {
        let (_, r) = status_json(x, stack, &[]);
        if per_instance(&r).iter().sum::<u64>() == 1000 || std::time::Instant::now() > deadline {
            break r;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    let counts = per_instance(&during);
    assert_eq!(counts.iter().sum::<u64>(), 1000, "{during}");
    // The load holds the stack as a reader: a reset of the accounts it holds is refused (exit 4,
    // naming it), and the accounts stay (every user still holds through the hold, below).
    let reset = x.run(&["prepare", "--stack", stack, "--reset", "--json"]);
    let said = String::from_utf8_lossy(&reset.stderr);
    assert_eq!(reset.status.code(), Some(4), "{said}");
    assert!(
        said.contains(&format!("stack {stack} is locked by exectl load idle (pid")),
        "{said}"
    );
    assert!(
        counts.iter().all(|c| *c > 0),
        "least_conn spreads them: {counts:?}"
    );
    let out = load.wait_with_output().unwrap();
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(0), "{summary}");
    assert_eq!(summary["users"], 1000);
    assert_eq!(summary["connected"], 1000, "{summary}");
    assert_eq!(summary["held_full_duration"], 1000, "{summary}");
    // After the run: no connections, no rooms.
    let (code, r) = status_json(x, stack, &["--expect-idle", "--settle", "10s"]);
    assert_eq!(code, Some(0), "idle after the run: {r}");

    // The seed's leak: the run itself succeeds, the leak check afterwards does not.
    x.deploy_json(&args(&base, &["--set", "STANDIN_FAULT=leak-on-close"]));
    let out = x.run(&[
        "load", "idle", "--stack", stack, "--users", "50", "--hold", "2s", "--ramp", "1s",
        "--json", "--quiet",
    ]);
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(0), "{summary}");
    assert_eq!(summary["held_full_duration"], 50, "{summary}");
    let (code, r) = status_json(x, stack, &["--expect-idle", "--settle", "3s"]);
    assert_eq!(code, Some(1), "leak must fail the check: {r}");
    assert!(per_instance(&r).iter().sum::<u64>() >= 50, "{r}");

    x.ok(&["teardown", "--stack", stack, "--purge"]);
    assert!(labelled(&d, stack).await.is_empty());
}

fn args<'a>(base: &[&'a str], extra: &[&'a str]) -> Vec<&'a str> {
    base.iter().chain(extra).copied().collect()
}
