//! An instance that stops during a level, on the real engine (issue #20, section 4): killed, the level
//! fails naming it exited with its exit code, and no CPU figure anywhere exceeds the container's scale (a
//! gone container's cgroup path once read as the host's root cgroup: "app-2 253554 % CPU"); paused, the
//! level fails naming it paused. The sampler follows containers by id and cgroup, their state by the
//! engine's events. Unpaused, Docker calls it unhealthy until its next check: deploy and bench both wait
//! for that check (issue #36, 13).

use crate::common;

use common::*;
use serde_json::Value;
use std::io::BufRead;
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// ha ×2 with fixture images, half a CPU per instance, rooms cleaned 2 s after their last member leaves.
fn ha_flags<'a>(s: &'a Stack, port: &'a str) -> Vec<&'a str> {
    let mut args = vec![
        "ha",
        "--stack",
        &s.name,
        "--lb-port",
        port,
        "--cpus",
        "0.5",
        "--memory",
        "512m",
        "--set",
        "STANDIN_ROOM_CLEANUP_MS=2000",
    ];
    args.extend(HA_LIMITS);
    args
}

/// `ha_flags` deployed (Docker's health checked every second), and 100 accounts prepared.
fn deploy_ha(s: &Stack, port: &str) {
    let d = s.x.deploy_json(&ha_flags(s, port));
    assert_eq!(d["ok"], true, "{d}");
    s.x.ok(&[
        "prepare",
        "--stack",
        &s.name,
        "--accounts",
        "100",
        "--bcrypt-cost",
        "4",
        "--json",
    ]);
}

struct Bench {
    code: Option<i32>,
    results: Value,
    results_text: String,
    timeline: Vec<Value>,
    stderr: String,
}

/// `exectl bench` of one idle level of 40 users held 20 s; `during` runs once the progress line says
/// every socket is open.
fn bench_with(s: &Stack, run_id: &str, during: impl FnOnce()) -> Bench {
    let mut child =
        s.x.command(&[
            "bench",
            "--stack",
            &s.name,
            "--run-id",
            run_id,
            "--scenario",
            "idle",
            "--levels",
            "40",
            "--hold",
            "20s",
            "--ramp",
            "2s",
            "--settle",
            "5s",
            "--sample",
            "1s",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let (tx, rx) = mpsc::channel::<String>();
    let err = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut all = String::new();
        for line in std::io::BufReader::new(err).lines().map_while(Result::ok) {
            all.push_str(&line);
            all.push('\n');
            let _ = tx.send(line);
        }
        all
    });
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut seen = Vec::new();
    loop {
        let line = rx
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            .unwrap_or_else(|_| {
                panic!(
                    "no progress line with every socket open:\n{}",
                    seen.join("\n")
                )
            });
        let open = line.contains("level 1/1: 40 users, open 40/40 at once");
        seen.push(line);
        if open {
            break;
        }
    }
    during();
    let out = child.wait_with_output().unwrap();
    let stderr = reader.join().unwrap();
    let dir = s.x.state.path().join("benches").join(run_id);
    let results_text = std::fs::read_to_string(dir.join("results.json"))
        .unwrap_or_else(|e| panic!("no results.json ({e}); stderr:\n{stderr}"));
    let timeline = read(&dir.join("timeline.jsonl"))
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    Bench {
        code: out.status.code(),
        results: serde_json::from_str(&results_text).unwrap(),
        results_text,
        timeline,
        stderr,
    }
}

/// The level failed, and `what` is its reason, its limiting component and in the verdict's headline.
fn named(b: &Bench, what: &str) {
    let level = &b.results["levels"][0];
    assert_eq!(b.code, Some(1), "{}\n{:#}", b.stderr, b.results["verdict"]);
    assert_eq!(level["passed"], false, "{level:#}");
    let reasons: Vec<&str> = level["reasons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_str().unwrap())
        .collect();
    assert!(
        reasons.iter().any(|r| r.starts_with(what)),
        "{what:?} not in {reasons:?}"
    );
    let limiting = &b.results["verdict"]["limiting"];
    assert!(
        limiting["component"].as_str().unwrap().starts_with(what),
        "{limiting:#}"
    );
    let headline = b.results["verdict"]["headline"].as_str().unwrap();
    assert!(headline.contains(what), "{headline}");
    eprintln!("{headline}\n{}", limiting["detail"]);
}

/// Every CPU figure of the timeline within the container's scale (its limit, else the host's CPUs), and
/// every percentage results.json states within 100 % (10 % for the jitter of two reads of a counter).
fn no_cpu_beyond_its_scale(b: &Bench) {
    let host_cpus = std::thread::available_parallelism().unwrap().get() as f64;
    for s in &b.timeline {
        for c in s["containers"].as_array().unwrap() {
            let Some(cpu) = c["cpu_pct"].as_f64() else {
                continue;
            };
            let scale = c["cpu_limit"].as_f64().unwrap_or(host_cpus) * 100.0;
            assert!(
                cpu <= scale * 1.1,
                "{} at {} % CPU, above its scale {scale} %, at t={}",
                c["service"],
                cpu,
                s["t_ms"]
            );
        }
    }
    let text = &b.results_text;
    for (i, _) in text.match_indices(" %") {
        let digits: String = text[..i]
            .chars()
            .rev()
            .take_while(|c| c.is_ascii_digit() || *c == '.')
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        if let Ok(pct) = digits.parse::<f64>() {
            assert!(
                pct <= 110.0,
                "{pct} % in results.json: {}",
                &text[i.saturating_sub(120)..i + 2]
            );
        }
    }
}

/// The state the timeline recorded for app-2, sample by sample (None: an old sampler's timeline).
fn states(b: &Bench, service: &str) -> Vec<String> {
    b.timeline
        .iter()
        .filter_map(|s| {
            s["containers"]
                .as_array()?
                .iter()
                .find(|c| c["service"] == service)?["state"]
                .as_str()
                .map(String::from)
        })
        .collect()
}

#[test]
#[ignore = "needs the Docker engine and the fixture images; bash scripts/test.sh runs it"]
fn an_instance_paused_or_killed_mid_level_is_named_and_fails_the_level() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let s = rt.block_on(Stack::new("incidents"));
    let port = Stack::port();
    deploy_ha(&s, &port);
    let app2 = s.container("app-2");

    // Paused for a few seconds mid-level, then unpaused: named paused.
    let b = bench_with(&s, "b-paused", || {
        docker_cli(&["pause", &app2]);
        std::thread::sleep(Duration::from_secs(4));
        docker_cli(&["unpause", &app2]);
    });
    named(&b, "app-2 paused");
    let st = states(&b, "app-2");
    assert!(st.iter().any(|s| s == "paused"), "{st:?}");
    assert_eq!(st.last().map(String::as_str), Some("running"), "{st:?}");
    assert!(
        b.stderr.contains("app-2 paused"),
        "the progress says so:\n{}",
        b.stderr
    );
    no_cpu_beyond_its_scale(&b);

    // Killed mid-level: named exited with its exit code; its gone cgroup gives no figure, never the
    // host's root cgroup's.
    let b = bench_with(&s, "b-killed", || {
        docker_cli(&["kill", &app2]);
    });
    named(&b, "app-2 exited (exit code 137)");
    let st = states(&b, "app-2");
    assert!(
        st.iter().any(|s| s == "exited" || s == "restarting"),
        "{st:?}"
    );
    assert!(
        b.stderr.contains("app-2 exited (exit code 137)"),
        "the progress says so:\n{}",
        b.stderr
    );
    no_cpu_beyond_its_scale(&b);
    // After the kill, app-2's samples have no CPU figure until it runs again.
    let after_kill = b.timeline.iter().filter(|s| {
        s["containers"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["service"] == "app-2" && c["state"] == "exited")
    });
    for s in after_kill {
        let c = s["containers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["service"] == "app-2")
            .unwrap();
        assert!(c["cpu_pct"].is_null() && c["rss_bytes"].is_null(), "{c}");
    }

    // app-2 still down when the next bench begins: the bench refuses before level 1 (a level is measured
    // on a healthy, idle stack), and under --json it still says why on stderr, naming the instance.
    let out = s.x.run(&[
        "bench",
        "--stack",
        &s.name,
        "--run-id",
        "b-down",
        "--scenario",
        "idle",
        "--levels",
        "10",
        "--hold",
        "3s",
        "--ramp",
        "1s",
        "--settle",
        "5s",
        "--json",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(out.stdout.is_empty(), "no results: nothing was run");
    assert!(
        stderr.contains("is not ready for a bench") && stderr.contains("app-2 is exited"),
        "stderr: {stderr:?}"
    );
    let left = s.x.state.path().join("benches/b-down");
    assert!(
        !left.join("results.json").exists() && !left.join("timeline.jsonl").exists(),
        "a refused bench leaves no results behind"
    );

    // Issue #36, 13: Docker calls a paused instance unhealthy at once, and after the unpause until its
    // next check, one --health-interval later (6 s here). Deploy and bench read readiness alike: a
    // deploy waits for that check (it called the app ready while Docker said unhealthy), and a bench
    // waits for it within --settle (it refused the stack).
    let mut flags = vec!["deploy"];
    flags.extend(ha_flags(&s, &port));
    flags.extend(["--images", FIXTURES, "--health-interval", "6s", "--json"]);
    let deploy = || -> Value { serde_json::from_str(&s.x.ok(&flags)).unwrap() };
    assert_eq!(deploy()["ok"], true);
    let app1 = s.container("app-1");
    let health = || docker_cli(&["inspect", "-f", "{{.State.Health.Status}}", &app1]);
    let pause_unpause = || {
        docker_cli(&["pause", &app1]);
        std::thread::sleep(Duration::from_millis(500));
        docker_cli(&["unpause", &app1]);
        assert_eq!(health().trim(), "unhealthy", "Docker's word after a pause");
    };
    pause_unpause();
    let d = deploy();
    let ready = d["ready"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["service"] == "app-1")
        .unwrap_or_else(|| panic!("{d}"))
        .clone();
    assert_ne!(ready["docker_health"], "unhealthy", "{d}");
    assert_eq!(ready["by"], "healthy", "{d}");
    assert_eq!(health().trim(), "healthy");
    pause_unpause();
    let out = s.x.run(&[
        "bench",
        "--stack",
        &s.name,
        "--run-id",
        "b-unpaused",
        "--scenario",
        "idle",
        "--levels",
        "10",
        "--hold",
        "2s",
        "--ramp",
        "1s",
        "--settle",
        "20s",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
}
