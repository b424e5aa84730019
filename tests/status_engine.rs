//! status and runs on a real engine with the stand-in app: the leak check, the ip_hash pinning warning,
//! the JSON shape, and a diff of two recorded deploys.

use crate::common;

use common::*;
use std::process::Output;

fn status(x: &Exectl, stack: &str, extra: &[&str]) -> (Output, serde_json::Value) {
    let mut args = vec!["status", "--stack", stack, "--json"];
    args.extend(extra);
    let out = x.run(&args);
    let json = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "status JSON ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    });
    (out, json)
}

fn counts(report: &serde_json::Value) -> Vec<u64> {
    report["instances"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["totalConnections"].as_u64().unwrap())
        .collect()
}

/// Every documented field, with its type.
fn check_shape(r: &serde_json::Value, services: &[&str], apps: usize) {
    assert_eq!(r["stack"], format!("{}status", common::stack_prefix()));
    assert_eq!(r["topology"], "ha");
    assert!(["ok", "warn", "fail"].contains(&r["verdict"].as_str().unwrap()));
    assert!(r["warnings"].is_array() && r["problems"].is_array());
    let names: Vec<&str> = r["services"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, services);
    for s in r["services"].as_array().unwrap() {
        assert_eq!(s["state"], "running", "{s}");
        assert!(
            ["healthy", "none"].contains(&s["health"].as_str().unwrap()),
            "{s}"
        );
        assert!(s["image"].as_str().unwrap().starts_with("exectl-fixture/"));
        assert!(s["digest"].as_str().unwrap().starts_with("sha256:"), "{s}");
        assert!(s["cpu_percent"].as_f64().unwrap() >= 0.0, "{s}");
        assert!(s["mem_bytes"].is_u64(), "{s}");
        assert_eq!(s["nofile"], 20000, "{s}");
        assert!(s["uptime_s"].is_u64() && s["restarts"].is_i64());
    }
    let app = r["services"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "app-1")
        .unwrap();
    assert_eq!(app["mem_limit_bytes"], 512u64 << 20);
    assert_eq!(r["instances"].as_array().unwrap().len(), apps);
    for i in r["instances"].as_array().unwrap() {
        assert!(i["name"].as_str().unwrap().starts_with("app-"));
        assert!(
            i["totalConnections"].is_u64() && i["roomsCount"].is_u64(),
            "{i}"
        );
        assert!(i["error"].is_null(), "{i}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the Docker engine, the docker CLI and the fixture images; bash scripts/test.sh runs it"]
async fn leak_check_pinning_warning_json_and_run_diff() {
    let d = docker().await;
    // A guard: a failed assertion still tears the stack down and frees its port.
    let guard = Stack::new("status").await;
    let (x, stack, port) = (&*guard.x, guard.name.as_str(), Stack::port());
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
    let services = ["app-1", "app-2", "nginx", "postgres", "redis"];

    // Idle stack: every instance at 0, --expect-idle passes.
    let least = x.deploy_json(&base);
    let (out, r) = status(
        x,
        stack,
        &["--expect-idle", "--expect-healthy", "--settle", "5s"],
    );
    assert_eq!(out.status.code(), Some(0), "{r}");
    check_shape(&r, &services, 2);
    assert_eq!(counts(&r), [0, 0]);
    assert_eq!(r["verdict"], "ok");

    // 40 held sockets, spread by least_conn: reported per instance, not idle, no pinning warning.
    let email = "status-owner@exelearning.net";
    let uuid = seed_owner(&d, stack, "postgres", email, "pw-status").await;
    let token = login(
        &format!("http://127.0.0.1:{port}"),
        None,
        email,
        "pw-status",
    )
    .await;
    let sockets = hold_sockets(&port, &uuid, &token, 40).await;
    let (out, r) = status(x, stack, &["--expect-idle", "--settle", "1s"]);
    assert_eq!(out.status.code(), Some(1), "{r}");
    check_shape(&r, &services, 2);
    let c = counts(&r);
    assert_eq!(c.iter().sum::<u64>(), 40, "{r}");
    assert!(c.iter().all(|n| *n > 0), "{c:?}");
    assert!(
        r["problems"][0].as_str().unwrap().contains("is not idle"),
        "{r}"
    );
    assert!(
        r["warnings"].as_array().unwrap().is_empty(),
        "least_conn: no pinning warning: {r}"
    );
    close_sockets(sockets).await;
    let (out, r) = status(x, stack, &["--expect-idle", "--settle", "10s"]);
    assert_eq!(out.status.code(), Some(0), "idle again after close: {r}");

    // Same single source under ip_hash: everything on one backend, and status says so.
    let hashed = x.deploy_json(&args(&base, &["--nginx", "tuned-ip-hash"]));
    assert_eq!(hashed["changed"], 1, "only nginx: {hashed}");
    let sockets = hold_sockets(&port, &uuid, &token, 40).await;
    let (_, r) = status(x, stack, &[]);
    assert_eq!(r["lb_algorithm"], "ip_hash");
    assert_eq!(counts(&r).iter().max(), Some(&40), "{r}");
    assert_eq!(r["verdict"], "warn");
    assert!(
        r["warnings"][0]
            .as_str()
            .unwrap()
            .contains("holds 100% of 40 connections under ip_hash"),
        "{r}"
    );
    close_sockets(sockets).await;

    // The two deploys differ in exactly the nginx variant.
    let (a, b) = (
        least["run_id"].as_str().unwrap(),
        hashed["run_id"].as_str().unwrap(),
    );
    assert!(
        a.starts_with("E-ha-2-tuned-least-conn-") && b.starts_with("E-ha-2-tuned-ip-hash-"),
        "{a} {b}"
    );
    let diff = x.ok(&["runs", "diff", a, b]);
    let changed: Vec<&str> = diff
        .lines()
        .skip(1)
        .filter(|l| l.starts_with("  "))
        .map(|l| l.split_whitespace().next().unwrap())
        .collect();
    assert_eq!(
        changed,
        [
            "files/nginx/nginx.conf",
            "knobs.nginx.lb_algorithm",
            "knobs.nginx.variant"
        ],
        "{diff}"
    );
    assert!(diff.contains("1 variable changed: nginx variant"), "{diff}");
    let list: serde_json::Value = serde_json::from_str(&x.ok(&["runs", "list", "--json"])).unwrap();
    assert_eq!(list.as_array().unwrap().len(), 2);
    let record = x.ok(&["runs", "show", a]);
    let secrets = read(&x.stack_dir(stack).join("secrets.env"));
    for line in secrets.lines() {
        let value = line.split_once('=').unwrap().1;
        assert!(!record.contains(value), "a secret reached the run record");
    }

    // With the seed's leak: sockets opened and closed stay counted, and the leak check fails.
    x.deploy_json(&args(&base, &["--set", "STANDIN_FAULT=leak-on-close"]));
    let sockets = hold_sockets(&port, &uuid, &token, 10).await;
    close_sockets(sockets).await;
    let (out, r) = status(x, stack, &["--expect-idle", "--settle", "3s"]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "the leak must fail the check: {r}"
    );
    assert!(counts(&r).iter().sum::<u64>() >= 10, "{r}");

    // Newer images guard /api/websocket/info behind ROLE_ADMIN: status logs in as the stack's admin.
    x.deploy_json(&args(&base, &["--set", "STANDIN_INFO_REQUIRES_ADMIN=1"]));
    let ip = container_ip(&d, &guard.container("app-1")).await;
    let anonymous = reqwest::get(format!("http://{ip}:8080/api/websocket/info"))
        .await
        .unwrap();
    assert!(
        anonymous.status() == 401 || anonymous.status() == 403,
        "{}",
        anonymous.status()
    );
    let (out, r) = status(x, stack, &["--expect-idle", "--settle", "5s"]);
    assert_eq!(out.status.code(), Some(0), "{r}");
    assert_eq!(counts(&r), [0, 0]);

    x.ok(&["teardown", "--stack", stack, "--purge"]);
    assert!(labelled(&d, stack).await.is_empty());
}

/// Deploy returns once the apps answer their own probe, which can be before Docker's first health
/// tick: wait (up to 10 s) until no container of the stack is still "starting", so that a plain
/// status says ok.
async fn docker_health_ran(d: &bollard::Docker, stack: &str) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let mut starting = Vec::new();
        for c in exectl::engine::observe::observe(d, stack)
            .await
            .unwrap()
            .containers
        {
            let health = d
                .inspect_container(&c.name, None)
                .await
                .unwrap()
                .state
                .and_then(|s| s.health)
                .and_then(|h| h.status);
            if health == Some(bollard::models::HealthStatusEnum::STARTING) {
                starting.push(c.name);
            }
        }
        if starting.is_empty() {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "still starting: {starting:?}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
}

fn args<'a>(base: &[&'a str], extra: &[&'a str]) -> Vec<&'a str> {
    base.iter().chain(extra).copied().collect()
}

/// A stack that lost services is not ok: a killed database fails plain status, and containers removed
/// behind exectl's back are named as missing (compared with what the deploy rendered); a re-deploy
/// converges and status is ok again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the Docker engine, the docker CLI and the fixture images; bash scripts/test.sh runs it"]
async fn lost_or_dead_services_fail_and_are_named() {
    let d = docker().await;
    // A guard: a failed assertion still tears the stack down and frees its port for the next suite.
    let s = Stack::new("status-lost").await;
    let (x, stack, port) = (&*s.x, s.name.as_str(), Stack::port());
    let mut base = vec![
        "ha",
        "--stack",
        stack,
        "--lb-port",
        &port,
        "--memory",
        "256m",
    ];
    base.extend(HA_LIMITS);
    x.deploy_json(&base);
    docker_health_ran(&d, stack).await;
    let (out, r) = status(x, stack, &[]);
    assert_eq!(
        (out.status.code(), r["verdict"].as_str()),
        (Some(0), Some("ok")),
        "{r}"
    );
    assert_eq!(
        r["expected"],
        serde_json::json!(["app-1", "app-2", "nginx", "postgres", "redis"])
    );

    // A dead database: plain status (no --expect-*) fails.
    docker_cli(&["kill", &format!("exectl-{stack}-postgres")]);
    let (out, r) = status(x, stack, &[]);
    assert_eq!(out.status.code(), Some(1), "{r}");
    assert_eq!(r["verdict"], "fail", "{r}");
    let problems = r["problems"].to_string();
    assert!(problems.contains("postgres is exited"), "{r}");

    // Services removed behind exectl's back: named, with --expect-healthy and --expect-idle too.
    docker_cli(&[
        "rm",
        "-f",
        &format!("exectl-{stack}-app-1"),
        &format!("exectl-{stack}-nginx"),
    ]);
    for extra in [
        &[][..],
        &["--expect-healthy"],
        &["--expect-idle", "--settle", "1s"],
    ] {
        let (out, r) = status(x, stack, extra);
        assert_eq!(out.status.code(), Some(1), "{extra:?}: {r}");
        let problems: Vec<&str> = r["problems"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p.as_str().unwrap())
            .collect();
        for name in ["app-1", "nginx"] {
            assert!(
                problems
                    .iter()
                    .any(|p| p.starts_with(&format!("{name} is missing"))),
                "{extra:?}: {problems:?}"
            );
        }
    }
    let text = x.run(&["status", "--stack", stack]);
    assert_eq!(text.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&text.stdout);
    assert!(
        stdout.contains("problem: app-1 is missing") && stdout.contains("verdict: fail"),
        "{stdout}"
    );

    // The next deploy converges from there.
    x.deploy_json(&base);
    docker_health_ran(&d, stack).await;
    let (out, r) = status(x, stack, &["--expect-healthy"]);
    assert_eq!(out.status.code(), Some(0), "{r}");
    x.ok(&["teardown", "--stack", stack, "--purge"]);
    assert!(labelled(&d, stack).await.is_empty());
}

/// `--watch` at an interval that would hammer the engine and the apps is bad input (exit 2).
#[test]
fn watch_interval_below_the_floor_is_refused() {
    let x = Exectl::new();
    for bad in ["0s", "500ms", "0"] {
        let out = x.run(&["status", "--stack", "t-any", "--watch", "--interval", bad]);
        let (code, err) = failed(&out);
        assert_eq!(code, Some(2), "{bad}: {err}");
        assert!(err.contains("invalid --interval"), "{bad}: {err}");
    }
}

/// A `swarm+ssh://` target whose engine is no swarm manager is bad input naming --target (it was exit 1),
/// for status as for every command that lists the swarm's nodes. This engine is in no swarm: it answers
/// the node list as a worker does (503, "This node is not a swarm manager").
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the Docker engine; bash scripts/test.sh runs it"]
async fn an_engine_that_is_no_swarm_manager_is_bad_input() {
    let d = docker().await;
    let swarm = d.info().await.unwrap().swarm.unwrap_or_default();
    assert!(
        swarm.control_available != Some(true),
        "this test needs an engine that manages no swarm: {swarm:?}"
    );
    let target = "swarm+ssh://root@10.199.99.2:2222";
    let e = exectl::sut::swarm::list_nodes(&d, target)
        .await
        .unwrap_err();
    assert_eq!(exectl::error::exit_code(&e), 2, "{e:#}");
    let text = format!("{e:#}");
    assert!(
        text.starts_with(&format!(
            "invalid --target \"{target}\": that engine is not a swarm manager"
        )) && text.contains("This node is not a swarm manager"),
        "{text}"
    );
}
