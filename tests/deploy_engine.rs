//! deploy / plan / teardown on a real Docker engine with the fixture images and the stand-in app.

use crate::common;

use common::*;
use std::time::Duration;

/// Open `n` WebSockets through the front door at `port`, hold them, and return each app instance's
/// totalConnections as reported by the instance itself (queried directly, not through the LB).
async fn spread(d: &bollard::Docker, stack: &str, port: &str, apps: &[&str], n: usize) -> Vec<u64> {
    let email = format!("spread-{}@exelearning.net", now_ms());
    let uuid = seed_owner(d, stack, "postgres", &email, "Bench1234!").await;
    let base = format!("http://127.0.0.1:{port}");
    let token = login(&base, None, &email, "Bench1234!").await;
    let sockets = hold_sockets(port, &uuid, &token, n).await;
    let mut counts = Vec::new();
    for app in apps {
        let info = ws_info(d, &format!("exectl-{stack}-{app}")).await;
        counts.push(info["totalConnections"].as_u64().unwrap());
    }
    close_sockets(sockets).await;
    counts
}

fn args<'a>(base: &[&'a str], extra: &[&'a str]) -> Vec<&'a str> {
    base.iter().chain(extra).copied().collect()
}

/// The defaults of one deploy (knob, default, value), as its JSON lists them.
fn fitted(deployed: &serde_json::Value) -> Vec<(String, String, String)> {
    deployed["fitted"]
        .as_array()
        .unwrap_or_else(|| panic!("no fitted: {deployed}"))
        .iter()
        .map(|f| {
            let s = |k: &str| f[k].as_str().unwrap().to_string();
            (s("knob"), s("default"), s("value"))
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the Docker engine, the docker CLI and the fixture images; bash scripts/test.sh runs it"]
async fn ha_deploys_converges_scales_and_tears_down() {
    let d = docker().await;
    let s = Stack::new("ha").await;
    let (x, stack, port) = (&*s.x, s.name.as_str(), Stack::port());
    let plain = vec!["ha", "--stack", stack, "--lb-port", &port];
    let mut base = plain.clone();
    base.extend(HA_LIMITS);

    // The card's first command, no limit flag: the seed's nofile 200000 and nginx's tuned values do
    // not fit this engine (hard limit 20000), so they are lowered together, said, and recorded.
    let first = x.deploy_json(&args(&plain, &["--instances", "2"]));
    assert_eq!(first["ok"], true, "{first}");
    assert_eq!(
        first["changed"], 5,
        "app-1, app-2, postgres, redis, nginx: {first}"
    );
    let owned = |v: [&str; 3]| v.map(String::from).into();
    assert_eq!(
        fitted(&first),
        [
            owned(["nofile", "200000", "20000"]),
            owned(["nginx.worker_rlimit_nofile", "200000", "20000"]),
            owned(["nginx.worker_connections", "32768", "10000"]),
        ]
    );
    for l in first["limits"].as_array().unwrap() {
        assert_eq!(l["nofile_soft"], 20000, "{l}");
        assert!(l["mismatches"].as_array().unwrap().is_empty(), "{l}");
    }
    let record: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(
            x.state
                .path()
                .join("runs")
                .join(format!("{}.json", first["run_id"].as_str().unwrap())),
        )
        .unwrap(),
    )
    .unwrap();
    assert_eq!(
        fitted(&record),
        fitted(&first),
        "kept in the run record: {record}"
    );
    assert_eq!(record["knobs"]["nginx.worker_connections"], "10000");
    // CPUs and memory: deploy's defaults, fitted to the engine the same way.
    let info = d.info().await.unwrap();
    let app1 = first["limits"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["service"] == "app-1")
        .unwrap();
    assert_eq!(
        (app1["cpus"].as_f64(), app1["memory"].as_u64()),
        (
            Some(exectl_core::spec::fit::default_cpus(info.ncpu)),
            Some(exectl_core::spec::fit::default_memory(info.mem_total))
        )
    );

    let counts = spread(&d, stack, &port, &["app-1", "app-2"], 40).await;
    assert_eq!(counts.iter().sum::<u64>(), 40, "{counts:?}");
    assert!(
        counts.iter().all(|c| *c > 0),
        "least_conn reaches every instance: {counts:?}"
    );

    // Same spec again, the fitted values now given as flags: the same stack, nothing recreated.
    let ids = container_ids(&d, stack).await;
    let again = x.deploy_json(&args(&base, &["--instances", "2"]));
    assert_eq!(
        (again["noop"].as_bool(), again["changed"].as_u64()),
        (Some(true), Some(0)),
        "{again}"
    );
    assert_eq!(container_ids(&d, stack).await, ids);
    // A no-op still waits for every service (all at once) and reads every limit back.
    let mut ready: Vec<&str> = again["ready"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["service"].as_str().unwrap())
        .collect();
    ready.sort();
    assert_eq!(
        ready,
        ids.keys().map(String::as_str).collect::<Vec<_>>(),
        "{again}"
    );
    assert_eq!(
        (
            again["ok"].as_bool(),
            again["limits"].as_array().map(Vec::len)
        ),
        (Some(true), Some(3)),
        "{again}"
    );

    // Only the nginx variant changes: only nginx is recreated.
    let v = x.deploy_json(&args(
        &base,
        &["--instances", "2", "--nginx", "tuned-ip-hash"],
    ));
    assert_eq!(v["changed"], 1, "{v}");
    let after = container_ids(&d, stack).await;
    for (service, id) in &ids {
        assert_eq!(after[service] != *id, service == "nginx", "{service}");
    }

    // Scale to 4 (least_conn again): app-3 and app-4 join, nginx is rewritten, the rest is kept.
    let four = x.deploy_json(&args(&base, &["--instances", "4"]));
    assert_eq!(four["changed"], 3, "{four}");
    let apps = ["app-1", "app-2", "app-3", "app-4"];
    let counts = spread(&d, stack, &port, &apps, 40).await;
    assert_eq!(counts.iter().sum::<u64>(), 40, "{counts:?}");
    assert!(
        counts.iter().all(|c| *c > 0),
        "every one of 4 instances serves some: {counts:?}"
    );

    // The fitted values given, or left to be fitted again: the same stack, nothing to change; plan
    // says what it fits, as deploy does.
    for (flags, fits) in [(&base, false), (&plain, true)] {
        let plan = x.ok(&args(
            &["plan"],
            &args(
                flags,
                &[
                    "--instances",
                    "4",
                    "--images",
                    FIXTURES,
                    "--health-interval",
                    HEALTH_INTERVAL,
                ],
            ),
        ));
        assert!(plan.contains("nothing to change"), "{plan}");
        assert_eq!(
            plan.contains("defaults fitted to the target")
                && plan.contains("fitted   nofile 200000 -> 20000"),
            fits,
            "{plan}"
        );
    }

    x.ok(&["teardown", "--stack", stack, "--purge"]);
    assert!(labelled(&d, stack).await.is_empty());
    assert!(
        !x.stack_dir(stack).exists(),
        "purge removes the local state"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the Docker engine, the docker CLI and the fixture images; bash scripts/test.sh runs it"]
async fn single_mariadb_routes_by_host_and_teardown_spares_other_stacks() {
    let d = docker().await;
    let single = Stack::new("single").await;
    let spare = single.beside("other").await;
    let x = &*single.x;
    let (t_single, t_other) = (single.name.as_str(), spare.name.as_str());
    let (port, other_port) = (Stack::port(), Stack::port());
    let host = format!("{t_single}.localhost");
    let first = x.deploy_json(&[
        "single",
        "--stack",
        t_single,
        "--http-port",
        &port,
        "--nofile",
        "20000",
    ]);
    assert_eq!(first["ok"], true, "{first}");
    let other = x.deploy_json(&[
        "single",
        "--stack",
        t_other,
        "--db",
        "sqlite",
        "--http-port",
        &other_port,
        "--nofile",
        "20000",
    ]);
    assert_eq!(other["ok"], true, "{other}");

    // Through Traefik, the Host header decides: the stack's host reaches the app, another does not.
    let client = reqwest::Client::new();
    let get = |host: &str| {
        client
            .get(format!("http://127.0.0.1:{port}/healthcheck"))
            .header("Host", host)
            .send()
    };
    let ok = get(&host).await.unwrap();
    assert_eq!(ok.status(), 200);
    let body: serde_json::Value = ok.json().await.unwrap();
    assert_eq!(body["status"], "ok");
    assert_eq!(get("elsewhere.localhost").await.unwrap().status(), 404);
    // The app really talks to MariaDB: a seeded user logs in through Traefik.
    seed_owner(
        &d,
        t_single,
        "mariadb",
        "via-traefik@exelearning.net",
        "pw-1234",
    )
    .await;
    login(
        &format!("http://127.0.0.1:{port}"),
        Some(host.as_str()),
        "via-traefik@exelearning.net",
        "pw-1234",
    )
    .await;

    // Data kept but secrets lost: refused before anything changes, naming the way out.
    let secrets = x.stack_dir(t_single).join("secrets.env");
    let saved = std::fs::read(&secrets).unwrap();
    std::fs::remove_file(&secrets).unwrap();
    let out = x.run(&[
        "deploy",
        "single",
        "--stack",
        t_single,
        "--http-port",
        &port,
        "--nofile",
        "20000",
        "--images",
        FIXTURES,
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("secrets") && stderr.contains("--purge"),
        "{stderr}"
    );
    assert!(!secrets.exists(), "no new secrets written");
    std::fs::write(&secrets, saved).unwrap();

    // Without --purge the data stays; with it nothing labelled t-single remains; t-other is untouched.
    let kept = x.ok(&["teardown", "--stack", t_single]);
    assert!(kept.contains("kept volumes"), "{kept}");
    x.ok(&["teardown", "--stack", t_single, "--purge"]);
    assert!(labelled(&d, t_single).await.is_empty());
    let again = x.ok(&["teardown", "--stack", t_single]);
    assert!(again.contains("nothing to remove"), "{again}");
    let others = exectl::engine::observe::observe(&d, t_other).await.unwrap();
    assert_eq!(others.containers.len(), 2);
    assert!(others.containers.iter().all(|c| c.state == "running"));
    x.ok(&["teardown", "--stack", t_other, "--purge"]);
    assert!(labelled(&d, t_other).await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the Docker engine, the docker CLI and the fixture images; bash scripts/test.sh runs it"]
async fn interrupted_deploy_converges_on_the_next_run() {
    let d = docker().await;
    let s = Stack::new("int").await;
    let (x, t_int, port) = (&*s.x, s.name.as_str(), Stack::port());
    let flags = [
        "deploy",
        "single",
        "--stack",
        t_int,
        "--db",
        "sqlite",
        "--http-port",
        &port,
        "--nofile",
        "20000",
        "--images",
        FIXTURES,
        "--health-interval",
        "3s",
    ];
    let mut child = x
        .command(&flags)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Kill it while it waits for the app (and then Traefik) to answer.
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let o = exectl::engine::observe::observe(&d, t_int).await.unwrap();
        if o.containers
            .iter()
            .any(|c| c.service == "app" && c.state == "running")
        {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "deploy never created the app"
        );
        assert!(
            child.try_wait().unwrap().is_none(),
            "deploy ended before it could be interrupted"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        child.try_wait().unwrap().is_none(),
        "still in the readiness wait"
    );
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(
        x.stack_dir(t_int).join("exectl.lock").exists(),
        "the killed run left its lock"
    );

    let out = x.deploy_json(&[
        "single",
        "--stack",
        t_int,
        "--db",
        "sqlite",
        "--http-port",
        &port,
        "--nofile",
        "20000",
    ]);
    assert_eq!(out["ok"], true, "{out}");
    for c in exectl::engine::observe::observe(&d, t_int)
        .await
        .unwrap()
        .containers
    {
        assert_eq!(c.state, "running", "{}", c.name);
    }
    // Ready by its own answer, or by Docker's health when its tick came first; either way the
    // front door routes to it.
    let app = out["ready"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["service"] == "app")
        .unwrap();
    assert!(
        ["probe", "healthy"].contains(&app["by"].as_str().unwrap()),
        "{out}"
    );
    let routed: serde_json::Value = reqwest::Client::new()
        .get(format!("http://127.0.0.1:{port}/healthcheck"))
        .header("Host", format!("{t_int}.localhost"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(routed["status"], "ok", "{routed}");
    x.ok(&["teardown", "--stack", t_int, "--purge"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the Docker engine, the docker CLI and the fixture images; bash scripts/test.sh runs it"]
async fn preflight_refuses_what_the_target_cannot_give_before_creating_anything() {
    let d = docker().await;
    let s = Stack::new("pre").await;
    let (x, t_pre) = (&*s.x, s.name.as_str());
    for (flags, field) in [
        (vec!["--nofile", "200000"], "--nofile"),
        (
            vec![
                "--cpus",
                "64",
                "--nofile",
                "20000",
                "--worker-rlimit-nofile",
                "20000",
                "--worker-connections",
                "10000",
            ],
            "--cpus",
        ),
    ] {
        let out = x.run(&args(
            &["deploy", "ha", "--stack", t_pre, "--images", FIXTURES],
            &flags,
        ));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(
            stderr.contains(field) && stderr.contains("fix:"),
            "{stderr}"
        );
        if field == "--nofile" {
            assert!(stderr.contains("20000"), "names the limit: {stderr}");
        }
    }
    assert!(labelled(&d, t_pre).await.is_empty(), "nothing created");
    assert!(!x.stack_dir(t_pre).exists(), "no state written");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the Docker engine, the docker CLI and the fixture images; bash scripts/test.sh runs it"]
async fn a_held_lock_stops_a_second_deploy_at_once_and_names_its_holder() {
    let d = docker().await;
    let s = Stack::new("lock").await;
    let (x, t_lock) = (&*s.x, s.name.as_str());
    let dir = x.stack_dir(t_lock);
    std::fs::create_dir_all(&dir).unwrap();
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    let holder = serde_json::json!({
        "pid": std::process::id(), "host": host.trim(), "command": "exectl deploy",
        "since": "2026-11-29 10:00:00 UTC", "since_epoch": 0u64,
    });
    std::fs::write(dir.join("exectl.lock"), holder.to_string()).unwrap();
    for cmd in [
        vec![
            "deploy", "single", "--stack", t_lock, "--db", "sqlite", "--nofile", "20000",
            "--images", FIXTURES,
        ],
        vec!["teardown", "--stack", t_lock],
    ] {
        let out = x.run(&cmd);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(4), "{stderr}");
        assert!(
            stderr.contains("locked by exectl deploy")
                && stderr.contains("since 2026-11-29 10:00:00 UTC"),
            "{stderr}"
        );
        assert!(
            stderr.contains(&format!("pid {}", std::process::id())),
            "{stderr}"
        );
    }
    assert!(labelled(&d, t_lock).await.is_empty());
    // Broken explicitly, the lock no longer stops a (no-op) teardown.
    x.ok(&["teardown", "--stack", t_lock, "--break-lock"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the Docker engine, the docker CLI and the fixture images; bash scripts/test.sh runs it"]
async fn health_gate_timeout_names_the_service_and_shows_its_logs() {
    let d = docker().await;
    let s = Stack::new("bad").await;
    let (x, t_bad, port) = (&*s.x, s.name.as_str(), Stack::port());
    let out = x.run(&[
        "deploy",
        "single",
        "--stack",
        t_bad,
        "--db",
        "sqlite",
        "--http-port",
        &port,
        "--nofile",
        "20000",
        "--images",
        FIXTURES,
        "--health-interval",
        "1s",
        "--wait-timeout",
        "8s",
        "--set",
        "STANDIN_FAULT=no-such-fault",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("service app is not ready"), "{stderr}");
    assert!(
        stderr.contains("STANDIN_FAULT"),
        "shows the app's own log line: {stderr}"
    );
    x.ok(&["teardown", "--stack", t_bad, "--purge"]);
    assert!(labelled(&d, t_bad).await.is_empty());
}

/// A network still in use after the stack's containers are gone is waited for, not given up on after
/// teardown's old ten passes of 300 ms. Here a container outside the stack holds the network for 8 s;
/// teardown converges once it leaves (before: exit 1 after about 3 s, "after 10 passes").
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the Docker engine, the docker CLI and the fixture images; bash scripts/test.sh runs it"]
async fn teardown_waits_for_a_network_still_in_use() {
    let d = docker().await;
    let s = Stack::new("inuse").await;
    let (x, stack, port) = (&*s.x, s.name.as_str(), Stack::port());
    let dep = x.deploy_json(&[
        "single",
        "--stack",
        stack,
        "--db",
        "sqlite",
        "--http-port",
        &port,
        "--nofile",
        "20000",
    ]);
    assert_eq!(dep["ok"], true, "{dep}");
    let network = format!("exectl-{stack}");
    let holder = format!("{stack}-holder");
    let run = std::process::Command::new("docker")
        .args([
            "run",
            "-d",
            "--rm",
            "--name",
            &holder,
            "--network",
            &network,
        ])
        .args(["exectl-fixture/debian:bookworm", "sleep", "8"])
        .output()
        .unwrap();
    assert!(run.status.success(), "{run:?}");
    let started = std::time::Instant::now();
    let out = x.run(&["teardown", "--stack", stack, "--purge"]);
    let waited = started.elapsed();
    let _ = std::process::Command::new("docker")
        .args(["rm", "-f", &holder])
        .output();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        waited >= Duration::from_secs(4),
        "teardown returned after {waited:?}, before the holder left the network"
    );
    assert!(labelled(&d, stack).await.is_empty());
    let gone = std::process::Command::new("docker")
        .args(["network", "inspect", &network])
        .output()
        .unwrap();
    assert!(!gone.status.success(), "network {network} is still there");
}
