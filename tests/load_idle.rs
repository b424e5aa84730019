//! `exectl load idle` against the real stand-in: held sockets succeed; sockets the server closes right
//! after the 101 (ACCESS_DENIED) are failures with their close code, not successes.

use crate::load_support;

use std::time::Duration;

use load_support::{exectl_load, Seeded, Standin};

const USERS: usize = 200;

fn args<'a>(url: &'a str, manifest: &'a str, users: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut v = vec![
        "idle",
        "--url",
        url,
        "--manifest",
        manifest,
        "--users",
        users,
        "--ramp",
        "2s",
        "--hold",
        "3s",
        "--dial-concurrency",
        "32",
    ];
    v.extend_from_slice(extra);
    v
}

#[test]
fn idle_holds_every_socket_and_reports_access_denied_as_failure() {
    let s = Standin::start(&[]);
    let seeded = load_support::seed(&s, USERS, Seeded::solo_layout(USERS), 4);
    let url = s.url();

    // Each user in the project it owns: all held for the full hold, exit 0.
    let good = tempfile::tempdir().unwrap();
    seeded.write_manifest(good.path(), None, 0);
    let m = good.path().to_str().unwrap();
    let (code, json, stderr) = exectl_load(&args(&url, m, "200", &[]), Duration::from_secs(120));
    let j = json.unwrap_or_else(|| panic!("no summary; stderr:\n{stderr}"));
    assert_eq!(code, 0, "{j:#}\n{stderr}");
    assert_eq!(j["scenario"], "idle");
    assert_eq!(j["users"], USERS);
    assert_eq!(j["connected"], USERS, "{j:#}");
    assert_eq!(j["held_full_duration"], USERS, "{j:#}");
    assert_eq!(j["failed"], 0);
    assert_eq!(j["close_codes"], serde_json::json!({}));
    assert_eq!(j["login_ms"]["count"], USERS);
    assert!(j["login_ms"]["p50"].as_f64().unwrap() > 0.0);
    assert_eq!(j["connect_ms"]["count"], USERS);
    for k in ["p50", "p95", "p99", "max"] {
        assert!(j["connect_ms"][k].is_number(), "{k}");
    }
    assert!(j["client_peak_rss_bytes"].as_u64().unwrap() > 0);
    assert!(j["client_cpu_seconds"].is_number());
    assert!(j["run_id"].as_str().unwrap().starts_with("idle-200-"));
    // The per-second progress line.
    assert!(stderr.contains("held"), "{stderr}");

    // Users mapped to projects they cannot access: the upgrade still answers 101, then 4003 closes.
    // Counted as connected but failed, never as held, and the exit code says so.
    let denied = tempfile::tempdir().unwrap();
    seeded.write_manifest(denied.path(), None, 1);
    let m = denied.path().to_str().unwrap();
    let (code, json, stderr) = exectl_load(
        &args(&url, m, "200", &["--run-id", "denied-1", "--json"]),
        Duration::from_secs(120),
    );
    let j = json.unwrap_or_else(|| panic!("no summary; stderr:\n{stderr}"));
    assert_eq!(code, 1, "{j:#}");
    assert_eq!(j["run_id"], "denied-1");
    assert_eq!(j["connected"], USERS, "the 101 is not success: {j:#}");
    assert_eq!(j["held_full_duration"], 0, "{j:#}");
    assert_eq!(j["failed"], USERS);
    assert_eq!(j["close_codes"]["4003"], USERS, "{j:#}");
    assert_eq!(j["failures"]["closed_4003"], USERS, "{j:#}");
    // Closed right after the upgrade, far from the 3 s hold.
    assert!(j["early_end_ms"]["max"].as_f64().unwrap() < 2000.0, "{j:#}");
    assert!(stderr.contains("4003"), "{stderr}");

    // Wrong passwords: each user tries once (no retry storm), fails with 401, opens no socket.
    let wrong = tempfile::tempdir().unwrap();
    seeded.write_manifest(wrong.path(), None, 0);
    let accounts = wrong.path().join("accounts.json");
    let text = std::fs::read_to_string(&accounts).unwrap();
    std::fs::write(
        &accounts,
        text.replace(load_support::PASSWORD, "wrong-password"),
    )
    .unwrap();
    let m = wrong.path().to_str().unwrap();
    let (code, json, stderr) =
        exectl_load(&args(&url, m, "10", &["--quiet"]), Duration::from_secs(60));
    let j = json.unwrap_or_else(|| panic!("no summary; stderr:\n{stderr}"));
    assert_eq!(code, 1, "{j:#}");
    assert_eq!(j["failures"]["login_401"], 10, "{j:#}");
    // One attempt per user, each a 401 counted as such: a refused login is no latency.
    assert_eq!(j["login_ms"]["count"], 0, "{j:#}");
    assert_eq!(j["connected"], 0);
}

#[test]
fn idle_with_minted_tokens_skips_login() {
    let s = Standin::start(&[
        ("STANDIN_PING_INTERVAL_MS", "300"),
        ("STANDIN_PONG_TIMEOUT_MS", "1000"),
    ]);
    let seeded = load_support::seed(&s, 50, Seeded::solo_layout(50), 4);
    let dir = tempfile::tempdir().unwrap();
    seeded.write_manifest(dir.path(), Some(&s.secret), 0);
    let m = dir.path().to_str().unwrap();
    let url = s.url();
    // Pings every 300 ms, 4008 after 1 s without a pong: a 3 s hold is held only if pings are answered.
    let (code, json, stderr) = exectl_load(
        &[
            "idle",
            "--url",
            &url,
            "--manifest",
            m,
            "--tokens",
            "--ramp",
            "500ms",
            "--hold",
            "3s",
            "--json",
        ],
        Duration::from_secs(60),
    );
    let j = json.unwrap_or_else(|| panic!("no summary; stderr:\n{stderr}"));
    assert_eq!(code, 0, "{j:#}\n{stderr}");
    assert_eq!(j["held_full_duration"], 50);
    assert_eq!(j["login_ms"]["count"], 0, "no logins with --tokens");
    assert_eq!(j["settings"]["tokens"], true);

    // A token signed with another secret is a 4001 close.
    let bad = tempfile::tempdir().unwrap();
    seeded.write_manifest(bad.path(), Some("not-the-secret"), 0);
    let m = bad.path().to_str().unwrap();
    let (code, json, _) = exectl_load(
        &[
            "idle",
            "--url",
            &url,
            "--manifest",
            m,
            "--tokens",
            "--ramp",
            "0",
            "--hold",
            "2s",
            "--users",
            "10",
            "--quiet",
        ],
        Duration::from_secs(60),
    );
    let j = json.unwrap();
    assert_eq!(code, 1);
    assert_eq!(j["close_codes"]["4001"], 10, "{j:#}");
}

#[test]
fn leak_on_close_is_invisible_to_the_client_but_not_to_the_server() {
    // The run itself succeeds either way; only the server's count (what status --expect-idle checks)
    // tells the leaking server from the healthy one after the run.
    for (fault, leaked) in [(None, false), (Some("leak-on-close"), true)] {
        let env: Vec<(&str, &str)> = fault.map(|f| ("STANDIN_FAULT", f)).into_iter().collect();
        let s = Standin::start(&env);
        let seeded = load_support::seed(&s, 20, Seeded::solo_layout(20), 4);
        let dir = tempfile::tempdir().unwrap();
        seeded.write_manifest(dir.path(), Some(&s.secret), 0);
        let m = dir.path().to_str().unwrap();
        let url = s.url();
        let (code, json, stderr) = exectl_load(
            &[
                "idle",
                "--url",
                &url,
                "--manifest",
                m,
                "--tokens",
                "--ramp",
                "200ms",
                "--hold",
                "1s",
                "--quiet",
            ],
            Duration::from_secs(60),
        );
        let j = json.unwrap_or_else(|| panic!("no summary; stderr:\n{stderr}"));
        assert_eq!(code, 0, "{fault:?}: {j:#}");
        assert_eq!(j["held_full_duration"], 20);
        // Closes are processed right after the client's close handshake; allow a moment.
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        let mut n = load_support::server_connections(s.port);
        while !leaked && n > 0 && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
            n = load_support::server_connections(s.port);
        }
        if leaked {
            assert_eq!(n, 20, "leak-on-close keeps every closed socket counted");
        } else {
            assert_eq!(n, 0, "every socket closed cleanly");
        }
    }
}

#[test]
fn a_frozen_server_is_stalled_even_in_a_hold_shorter_than_the_stall_bound() {
    // The app's own pings every 30 s never come in a 4 s hold: only the client's last ping can tell a
    // frozen server (SIGSTOP, as `docker pause` freezes a container) from a live one.
    let s = Standin::start(&[]);
    let seeded = load_support::seed(&s, 20, Seeded::solo_layout(20), 4);
    let dir = tempfile::tempdir().unwrap();
    seeded.write_manifest(dir.path(), Some(&s.secret), 0);
    let m = dir.path().to_str().unwrap();
    let url = s.url();
    let run = |run_id: &str| {
        let url = url.clone();
        let argv: Vec<String> = [
            "idle",
            "--url",
            &url,
            "--manifest",
            m,
            "--tokens",
            "--ramp",
            "200ms",
            "--hold",
            "4s",
            "--run-id",
            run_id,
            "--quiet",
        ]
        .iter()
        .map(|a| a.to_string())
        .collect();
        std::thread::spawn(move || {
            let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
            exectl_load(&argv, Duration::from_secs(60))
        })
    };

    let (code, json, stderr) = run("alive").join().unwrap();
    let j = json.unwrap_or_else(|| panic!("no summary; stderr:\n{stderr}"));
    assert_eq!(code, 0, "{j:#}");
    assert_eq!(
        (j["held_full_duration"].as_u64(), j["stalled"].as_u64()),
        (Some(20), Some(0)),
        "{j:#}"
    );

    let load = run("frozen");
    s.wait_for_sockets(20, Duration::from_secs(10));
    s.signal("-STOP");
    let (code, json, stderr) = load.join().unwrap();
    s.signal("-CONT");
    let j = json.unwrap_or_else(|| panic!("no summary; stderr:\n{stderr}"));
    assert_eq!(code, 1, "{j:#}");
    assert_eq!(j["connected"], 20, "{j:#}");
    assert_eq!(j["held_full_duration"], 0, "{j:#}");
    assert_eq!(j["stalled"], 20, "{j:#}");
    assert_eq!(j["failures"]["stalled"], 20, "{j:#}");
    // Stalled, not an early end: the sockets never closed.
    assert_eq!(j["early_end_ms"]["count"], 0, "{j:#}");
    assert_eq!(j["settings"]["stall_after_s"], 15.0, "{j:#}");
}

/// `--source-addrs`: the users dial from the given loopback addresses in turn, so each address holds
/// its share of the sockets (seen from the kernel's own table), and the run holds them all.
#[test]
fn source_addresses_share_the_sockets_round_robin() {
    let s = Standin::start(&[]);
    let seeded = load_support::seed(&s, 40, Seeded::solo_layout(40), 4);
    let m = tempfile::tempdir().unwrap();
    seeded.write_manifest(m.path(), None, 0);
    let (url, port) = (s.url(), s.port);
    let manifest = m.path().to_str().unwrap().to_string();
    let run = std::thread::spawn(move || {
        let a = [
            "idle",
            "--url",
            &url,
            "--manifest",
            &manifest,
            "--users",
            "40",
            "--ramp",
            "1s",
            "--hold",
            "5s",
            "--source-addrs",
            "127.0.0.2-127.0.0.5",
        ];
        exectl_load(&a, Duration::from_secs(120))
    });
    // During the hold: every socket open, ten from each address, as the server's side of them shows
    // (the logins' HTTP pool dials from 127.0.0.1, the kernel's choice, and is left out).
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let seen = loop {
        let mut by = load_support::clients_of(port);
        by.remove("127.0.0.1");
        if by.values().sum::<u64>() >= 40 || std::time::Instant::now() > deadline {
            break by;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let (code, json, stderr) = run.join().unwrap();
    let j = json.unwrap_or_else(|| panic!("no summary; stderr:\n{stderr}"));
    assert_eq!(code, 0, "{j:#}\n{stderr}");
    assert_eq!(j["held_full_duration"], 40, "{j:#}");
    let want: std::collections::BTreeMap<String, u64> =
        (2..=5).map(|i| (format!("127.0.0.{i}"), 10)).collect();
    assert_eq!(seen, want, "sockets by source address");
}

/// A `load --url` to the front door of a stack recorded on this target holds that stack as a reader:
/// a writer (prepare, its reset, deploy, bench, teardown: all take `StackLock`) is refused while it
/// runs, naming it; a writer's `--break-lock` ends the hold (exit 4, what was measured printed). A
/// `--url` no recorded stack publishes says it holds no stack.
#[test]
fn a_load_holds_the_stack_it_loads_and_writers_stand_back() {
    let s = Standin::start(&[]);
    let seeded = load_support::seed(&s, 5, Seeded::solo_layout(5), 4);
    let m = tempfile::tempdir().unwrap();
    seeded.write_manifest(m.path(), None, 0);
    let state = tempfile::tempdir().unwrap();
    let stack = "ld-lock";
    let stack_dir = exectl::state::stack_dir(state.path(), "local", stack);
    let bundle = exectl::state::bundle_dir(&stack_dir);
    std::fs::create_dir_all(&bundle).unwrap();
    let mut record = exectl_core::record::example(stack, exectl_core::spec::Topology::Ha);
    record.spec.lb_port = s.port;
    std::fs::write(
        bundle.join(exectl_core::render::RECORD),
        serde_json::to_string(&record).unwrap(),
    )
    .unwrap();
    let readers = exectl::state::readers_dir(&stack_dir);
    let exectl = env!("CARGO_BIN_EXE_exectl");
    let load = |hold: &str, state: &std::path::Path| {
        std::process::Command::new(exectl)
            .env("EXECTL_STATE_DIR", state)
            .args(["load", "idle", "--url", &s.url(), "--manifest"])
            .arg(m.path())
            .args(["--ramp", "0s", "--hold", hold, "--quiet", "--json"])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let reader_up = || {
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        loop {
            let n = std::fs::read_dir(&readers).map_or(0, |d| d.count());
            if n > 0 {
                return;
            }
            assert!(std::time::Instant::now() < deadline, "no reader appeared");
            std::thread::sleep(Duration::from_millis(50));
        }
    };

    // Held as a reader while it runs: a writer is refused, naming the load; it still passes.
    let run = load("3s", state.path());
    reader_up();
    let e = exectl::engine::lock::StackLock::acquire(&stack_dir, stack, "exectl prepare", false)
        .unwrap_err();
    let said = e.to_string();
    assert!(
        said.contains(&format!(
            "stack {stack} is locked by exectl load idle (pid {}",
            run.id()
        )),
        "{said}"
    );
    assert_eq!(exectl::error::exit_code(&e), 4);
    let out = run.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!readers.exists(), "released at its end");

    // A --break-lock ends the hold now: the summary, then exit 4 naming who took the stack.
    let run = load("60s", state.path());
    reader_up();
    std::thread::sleep(Duration::from_millis(500));
    let t = std::time::Instant::now();
    let taken =
        exectl::engine::lock::StackLock::acquire(&stack_dir, stack, "exectl teardown", true)
            .unwrap();
    let out = run.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        t.elapsed() < Duration::from_secs(20),
        "stopped at once: {err}"
    );
    assert_eq!(out.status.code(), Some(4), "{err}");
    assert!(err.contains("taken over by exectl teardown"), "{err}");
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(j["interrupted"], true, "{j:#}");
    drop(taken);

    // A --url no recorded stack publishes: said, and the run goes on.
    let elsewhere = tempfile::tempdir().unwrap();
    let out = load("1s", elsewhere.path()).wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("this load holds no stack's lock"), "{err}");
}

/// The generator's liveness pings follow the server's own: a server that pings every 6 s is pinged
/// only before its first ping is seen (once per socket at 5 s of silence, never again: its pings,
/// answered, prove it alive), where the old rule pinged every socket at 5 s of each silence (twice in
/// a 12 s hold); a silent server is pinged at 5 s as before; and a server that freezes after the run
/// learned its cadence is still caught (stalled). The summary says how many pings went out and why.
#[test]
fn the_client_pings_only_past_a_pinging_servers_own_cadence() {
    let run = |s: &Standin, hold: &str, users: usize| {
        let seeded = load_support::seed(s, users, Seeded::solo_layout(users), 4);
        let dir = tempfile::tempdir().unwrap();
        seeded.write_manifest(dir.path(), Some(&s.secret), 0);
        let (url, m) = (s.url(), dir.path().to_str().unwrap().to_string());
        let hold = hold.to_string();
        std::thread::spawn(move || {
            let _dir = dir;
            let a = [
                "idle",
                "--url",
                &url,
                "--manifest",
                &m,
                "--tokens",
                "--ramp",
                "200ms",
                "--hold",
                &hold,
                "--json",
            ];
            exectl_load(&a, Duration::from_secs(90))
        })
    };

    // Every 6 s: one ping per socket at most, before the server's first; its cadence learned.
    let s = Standin::start(&[("STANDIN_PING_INTERVAL_MS", "6000")]);
    let (code, j, err) = run(&s, "12s", 20).join().unwrap();
    let j = j.unwrap_or_else(|| panic!("no summary:\n{err}"));
    assert_eq!(
        (code, j["held_full_duration"].as_u64()),
        (0, Some(20)),
        "{j:#}"
    );
    let p = &j["pings"];
    assert!(
        p["sent"].as_u64().unwrap() <= 20,
        "at most one per socket: {p:#}"
    );
    let every = p["server_every_s"].as_f64().unwrap();
    assert!((5.9..7.0).contains(&every), "{p:#}");
    assert!(p["ping_after_s"].as_f64().unwrap() > every + 4.9, "{p:#}");
    assert!(
        err.contains("sent,") && err.contains(": pinged past") && err.contains("of its silence"),
        "{err}"
    );

    // Silent (no heartbeat): pinged past 5 s of silence, as before.
    let quiet = Standin::start(&[("STANDIN_PING_INTERVAL_MS", "0")]);
    let (code, j, err) = run(&quiet, "6s", 20).join().unwrap();
    let j = j.unwrap_or_else(|| panic!("no summary:\n{err}"));
    assert_eq!(
        (code, j["held_full_duration"].as_u64()),
        (0, Some(20)),
        "{j:#}"
    );
    let p = &j["pings"];
    assert!(p["server_every_s"].is_null(), "{p:#}");
    assert_eq!(p["ping_after_s"], 5.0, "{p:#}");
    assert!(
        p["sent"].as_u64().unwrap() >= 20,
        "each socket pinged at 5 s: {p:#}"
    );
    assert!(
        err.contains("the server sent no ping: pinged past 5 s of silence"),
        "{err}"
    );

    // Every 2 s, learned by 4 s; then frozen (SIGSTOP) 4.5 s in: no more pings, and every socket
    // stalled (the hold's last ping unanswered), not held.
    let fast = Standin::start(&[("STANDIN_PING_INTERVAL_MS", "2000")]);
    let load = run(&fast, "6s", 10);
    fast.wait_for_sockets(10, Duration::from_secs(20));
    std::thread::sleep(Duration::from_millis(4_500));
    fast.signal("-STOP");
    let (code, j, err) = load.join().unwrap();
    fast.signal("-CONT");
    let j = j.unwrap_or_else(|| panic!("no summary:\n{err}"));
    assert_eq!(code, 1, "{j:#}");
    let every = j["pings"]["server_every_s"].as_f64();
    assert!(
        every.is_some_and(|e| (1.9..2.5).contains(&e)),
        "learned before the freeze: {j:#}"
    );
    assert_eq!(
        (j["stalled"].as_u64(), j["held_full_duration"].as_u64()),
        (Some(10), Some(0)),
        "{j:#}"
    );
}
