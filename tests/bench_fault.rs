//! Faults during a level (#39, part 3), on the real engine with the stand-in: `bench --fault` restarts
//! a service (or every app instance in turn) at its moment of the common hold; the users reconnect as
//! the real client does (y-websocket's backoff, the same token), and the level is judged on their
//! return (`back`), the planned restart being no incident. `load --reconnect` alone: a restart the test
//! makes drops every socket, and each user comes back, its frames numbered on from before the drop —
//! where without it each user fails. Both restarts make the proxy log the users' failed dials, whose
//! URLs carry their tokens: no token reaches `docker logs` or a file exectl writes (issue #50, item 6).

use crate::common;

use common::*;
use serde_json::Value;

/// ha ×2, fixture images, 40 accounts with minted tokens (a reconnect dials with the same token).
fn deploy_ha(s: &Stack, port: &str) {
    let mut args = vec!["ha", "--stack", &s.name, "--lb-port", port];
    args.extend(HA_LIMITS);
    args.extend(["--set", "STANDIN_ROOM_CLEANUP_MS=500"]);
    // A redeploy fault reloads nginx once each new instance passes Docker's healthcheck: at 1 s, within
    // the 12 s hold.
    args.extend(["--health-interval", "1s"]);
    let d = s.x.deploy_json(&args);
    assert_eq!(d["ok"], true, "{d}");
    s.prepare_tokens("40", &[]);
}

/// `bench` of one idle level of 40 users on minted tokens, held 12 s, with `extra`: exit code,
/// results.json, stderr.
fn bench(s: &Stack, run_id: &str, extra: &[&str]) -> (Option<i32>, Value, String) {
    let mut args = vec![
        "bench",
        "--stack",
        &s.name,
        "--run-id",
        run_id,
        "--scenario",
        "idle",
        "--levels",
        "40",
        "--tokens",
        "--hold",
        "12s",
        "--ramp",
        "2s",
        "--settle",
        "10s",
    ];
    args.extend(COUNTS_ONLY);
    args.extend(extra);
    let out = s.x.run(&args);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let dir = s.x.state.path().join("benches").join(run_id);
    let text = std::fs::read_to_string(dir.join("results.json"))
        .unwrap_or_else(|e| panic!("no results.json ({e}); stderr:\n{stderr}"));
    (
        out.status.code(),
        serde_json::from_str(&text).unwrap(),
        stderr,
    )
}

#[tokio::test]
#[ignore = "needs the Docker engine, the docker CLI and the fixture images; bash scripts/test.sh runs it"]
async fn a_restarted_instance_drops_its_sockets_and_the_level_is_judged_on_their_return() {
    let s = Stack::new("fault").await;
    let port = Stack::port();

    // Refused before any connection: a fault that is no fault, one past the hold, one of a scenario
    // with no socket.
    for (extra, says) in [
        (vec!["--fault", "kill:app-1@1s"], "is no fault"),
        (vec!["--fault", "restart:app-1@20s"], "into a hold of 12s"),
        (
            vec!["--fault", "roll@1s", "--scenario", "login-burst"],
            "holds no socket",
        ),
    ] {
        let mut args = vec![
            "bench", "--stack", &s.name, "--levels", "40", "--hold", "12s",
        ];
        args.extend(&extra);
        let (code, err) = failed(&s.x.run(&args));
        assert_eq!(code, Some(2), "{extra:?}: {err}");
        assert!(
            err.contains("--fault") && err.contains(says),
            "{extra:?}: {err}"
        );
    }

    deploy_ha(&s, &port);
    // A service the stack does not run, a redeploy to an image the target does not have: exit 2 once
    // its record is read, before the lock or a level.
    for (fault, says) in [
        ("restart:app-9@1s", "no service app-9"),
        (
            "redeploy:image=exectl-fixture/none:0@1s",
            "exectl-fixture/none:0 is not on",
        ),
    ] {
        let (code, err) = failed(&s.x.run(&[
            "bench", "--stack", &s.name, "--levels", "40", "--tokens", "--fault", fault,
            "--run-id", "refused",
        ]));
        assert_eq!(code, Some(2), "{err}");
        assert!(err.contains(says), "{err}");
        let refused = s.x.state.path().join("benches/refused/results.json");
        assert!(!refused.exists(), "a refused bench measured nothing");
    }

    // app-1 restarted 3 s into the hold: the users on it drop and come back; app-2's never drop.
    let (code, r, stderr) = bench(&s, "restart-app-1", &["--fault", "restart:app-1@3s"]);
    let level = &r["levels"][0];
    let f = &level["figures"]["fault"];
    eprintln!("{}", level["figures"]);
    assert_eq!(code, Some(0), "{stderr}\n{level:#}");
    assert_eq!(level["passed"], true, "{level:#}");
    assert_eq!(f["services"], serde_json::json!(["app-1"]), "{f:#}");
    let at = f["at_s"].as_f64().unwrap();
    assert!((3.0..4.5).contains(&at), "{f:#}");
    assert!(f.get("error").is_none(), "{f:#}");
    let rec = &f["recovery"];
    let dropped = rec["users_dropped"].as_u64().unwrap();
    // nginx least_conn shares the 40 between the two instances: some on app-1, not all.
    assert!((5..40).contains(&dropped), "{rec:#}");
    assert_eq!(rec["users_back"].as_u64(), Some(dropped), "{rec:#}");
    assert_eq!(rec["not_back"], 0, "{rec:#}");
    assert!(rec["back_max_ms"].as_f64().unwrap() < 12_000.0, "{rec:#}");
    // Served: those held all along and those back.
    assert_eq!(level["figures"]["held"], 40, "{level:#}");
    assert_eq!(slo_check(level, "back")["ok"], true, "{level:#}");
    assert!(
        slo_check(level, "plateau")["measured"].is_null(),
        "{level:#}"
    );
    // The restart happened (the sampler saw app-1 exit), and it is no incident.
    let reasons = level["reasons"].to_string();
    assert!(!reasons.contains("app-1 exited"), "{reasons}");
    let timeline = std::fs::read_to_string(
        s.x.state
            .path()
            .join("benches/restart-app-1/timeline.jsonl"),
    )
    .unwrap();
    let exits = timeline
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .flat_map(|v| v["containers"].as_array().cloned().unwrap_or_default())
        .filter(|c| c["service"] == "app-1")
        .filter_map(|c| c["exits"].as_u64())
        .max();
    assert_eq!(exits, Some(1), "app-1 exited once");
    assert!(stderr.contains("app-1 restarted"), "{stderr}");
    let report =
        std::fs::read_to_string(s.x.state.path().join("benches/restart-app-1/report.html"))
            .unwrap();
    assert!(report.contains("app-1 restarted"));

    // A rolling redeploy with a new variable, the users logging in again on their way back (no
    // --tokens): each instance replaced by a new container (a new id, the variable in its
    // environment), nginx reloaded after each, every user back.
    let ids = |s: &Stack| -> Vec<String> {
        ["app-1", "app-2"]
            .map(|a| docker_inspect(&format!("exectl-{}-{a}", s.name), "{{.Id}}"))
            .into()
    };
    let before = ids(&s);
    let mut args = vec![
        "bench",
        "--stack",
        &s.name,
        "--run-id",
        "redeploy",
        "--scenario",
        "idle",
        "--levels",
        "40",
        "--hold",
        "14s",
        "--ramp",
        "2s",
        "--settle",
        "10s",
        "--fault",
        "redeploy:EXECTL_REDEPLOYED=1@2s",
        "--relogin",
    ];
    args.extend(COUNTS_ONLY);
    let out = s.x.run(&args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let r: Value = serde_json::from_str(
        &std::fs::read_to_string(s.x.state.path().join("benches/redeploy/results.json")).unwrap(),
    )
    .unwrap();
    let level = &r["levels"][0];
    let f = &level["figures"]["fault"];
    eprintln!("{}\n{stderr}", level["figures"]);
    assert!(f.get("error").is_none(), "{f:#}\n{stderr}");
    assert_eq!(
        f["services"],
        serde_json::json!(["app-1", "app-2"]),
        "{f:#}"
    );
    let rec = &f["recovery"];
    assert_eq!(rec["users_dropped"], 40, "{rec:#}");
    assert_eq!(rec["users_back"], 40, "{rec:#}");
    // Each drop was followed by a login (a user on app-1 may come back on app-2 and drop again).
    let logins = &rec["relogins"];
    assert!(logins["ok"].as_u64().unwrap() >= 40, "{rec:#}");
    assert!(logins["p95_ms"].as_f64().unwrap() > 0.0, "{rec:#}");
    assert_eq!(level["passed"], true, "{level:#}\n{stderr}");
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("redeployed in turn with EXECTL_REDEPLOYED=1"),
        "{stderr}"
    );
    let after = ids(&s);
    assert!(
        before.iter().zip(&after).all(|(b, a)| b != a),
        "{before:?} {after:?}"
    );
    for a in ["app-1", "app-2"] {
        let env = docker_inspect(&format!("exectl-{}-{a}", s.name), "{{json .Config.Env}}");
        assert!(env.contains("EXECTL_REDEPLOYED=1"), "{a}: {env}");
    }
    // The stack converges back: a plan of the recorded spec replaces both instances.
    let mut plan = vec!["plan", "ha", "--stack", &s.name, "--lb-port", &port];
    plan.extend(HA_LIMITS);
    plan.extend(["--set", "STANDIN_ROOM_CLEANUP_MS=500", "--images", FIXTURES]);
    plan.extend(["--health-interval", "1s"]);
    let plan = s.x.ok(&plan);
    for a in ["app-1", "app-2"] {
        assert!(
            plan.lines()
                .any(|l| l.contains("recreate") && l.contains(a)),
            "{a}: {plan}"
        );
    }

    // Every instance in turn, and an objective no reconnect can meet (the first wait alone is 100 ms):
    // all 40 drop, the level fails on `back`.
    let (code, r, stderr) = bench(&s, "roll", &["--fault", "roll@2s", "--slo", "back=1ms"]);
    let level = &r["levels"][0];
    let f = &level["figures"]["fault"];
    eprintln!("{f}");
    assert_eq!(code, Some(1), "{stderr}\n{level:#}");
    assert_eq!(
        f["services"],
        serde_json::json!(["app-1", "app-2"]),
        "{f:#}"
    );
    assert!(f["took_s"].as_f64().unwrap() > 0.0, "{f:#}");
    // Both instances went down: every user dropped (whether each is back in time is nginx's to say:
    // its max_fails=3 fail_timeout=30s can leave both instances marked down, answering 502).
    assert_eq!(f["recovery"]["users_dropped"], 40, "{f:#}");
    assert_eq!(slo_check(level, "back")["ok"], false, "{level:#}");
    let reasons = level["reasons"].to_string();
    assert!(reasons.contains("back"), "{reasons}");
    assert!(!reasons.contains("exited"), "{reasons}");

    // The users who dialed a restarting instance again were refused or cut by nginx, which logged each
    // at `error` level quoting its request line and upstream URL, token and all: the lines are there,
    // their tokens cut.
    let logs = no_token_left_behind(&s, "nginx");
    assert!(logs.contains("?token=…"), "no request line logged:\n{logs}");
}

/// The users' tokens (`prepare --mint-tokens`' tokens.json of every manifest of the stack).
fn minted_tokens(s: &Stack) -> Vec<String> {
    let mut tokens = Vec::new();
    let manifests = s.x.stack_dir(&s.name).join("manifests");
    for dir in std::fs::read_dir(&manifests).unwrap().flatten() {
        let Ok(text) = std::fs::read_to_string(dir.path().join("tokens.json")) else {
            continue;
        };
        let entries: Vec<Value> = serde_json::from_str(&text).unwrap();
        tokens.extend(
            entries
                .iter()
                .map(|e| e["token"].as_str().unwrap().to_string()),
        );
    }
    assert!(
        !tokens.is_empty(),
        "no tokens.json in {}",
        manifests.display()
    );
    tokens
}

/// No JWT in `docker logs` of the stack's `proxy` nor in any file of the state folder but the
/// manifests that hold the minted tokens: neither a minted token, whole or cut short (its header and
/// first dot: a log line cut at nginx's 2,048 bytes), nor any other (a relogin's). Returns the log.
fn no_token_left_behind(s: &Stack, proxy: &str) -> String {
    let out = std::process::Command::new("docker")
        .args(["logs", &s.container(proxy)])
        .output()
        .unwrap();
    let logs = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let jwts = jwt_words(&logs);
    assert!(
        jwts.is_empty(),
        "{jwts:?} in docker logs of {proxy}:\n{logs}"
    );
    let manifests = s.x.stack_dir(&s.name).join("manifests");
    let mut starts: Vec<String> = minted_tokens(s)
        .iter()
        .map(|t| format!("{}.", t.split('.').next().unwrap()))
        .collect();
    starts.dedup();
    for start in &starts {
        assert!(
            !logs.contains(start.as_str()),
            "{start} in docker logs of {proxy}:\n{logs}"
        );
    }
    let mut todo = vec![s.x.state.path().to_path_buf()];
    while let Some(dir) = todo.pop() {
        for e in std::fs::read_dir(&dir).unwrap().flatten() {
            let p = e.path();
            if p.starts_with(&manifests) {
                continue;
            }
            if e.file_type().unwrap().is_dir() {
                todo.push(p);
                continue;
            }
            let text = String::from_utf8_lossy(&std::fs::read(&p).unwrap_or_default()).into_owned();
            let jwts = jwt_words(&text);
            assert!(jwts.is_empty(), "{jwts:?} in {}", p.display());
            for start in &starts {
                assert!(!text.contains(start.as_str()), "{start} in {}", p.display());
            }
        }
    }
    logs
}

/// The words of `text` shaped like a JWT: three base64url parts joined by dots, the first a JSON
/// header (`eyJ`).
fn jwt_words(text: &str) -> Vec<&str> {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || "-_.".contains(c)))
        .filter(|w| {
            let parts: Vec<&str> = w.split('.').collect();
            w.starts_with("eyJ") && parts.len() == 3 && parts.iter().all(|p| p.len() >= 4)
        })
        .collect()
}

/// `docker inspect -f FORMAT container`, trimmed.
fn docker_inspect(container: &str, format: &str) -> String {
    docker_cli(&["inspect", "-f", format, container])
        .trim()
        .to_string()
}

/// `load collab` of 20 users in rooms of 2 (with `--reconnect` or not) on a single stack whose app the
/// test restarts once all are open and 60 frames were sent: exit code and summary.
fn load_through_a_restart(s: &Stack, reconnect: bool) -> (Option<i32>, Value) {
    let mut args = vec![
        "load",
        "collab",
        "--stack",
        &s.name,
        "--users",
        "20",
        "--tokens",
        "--ramp",
        "1s",
        "--hold",
        "10s",
        "--interval",
        "200ms",
        "--json",
    ];
    if reconnect {
        args.push("--reconnect");
    }
    let mut run = Watched::spawn(s.x.command(&args));
    // Once all are open and frames flow: a sender's seq goes on across its drop.
    run.until("all were open and sending", |line| {
        let sent = line
            .split(" frames ")
            .nth(1)
            .and_then(|r| r.split('→').next())
            .and_then(|n| n.parse::<u64>().ok());
        line.contains("open 20/20 at once") && sent.is_some_and(|n| n >= 60)
    });
    let (out, said) = run.wait(|| {
        let o = std::process::Command::new("docker")
            .args(["restart", "-t", "1", &s.container("app")])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    });
    let j: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "no summary ({e}): {} {said:?}",
            String::from_utf8_lossy(&out.stdout)
        )
    });
    (out.status.code(), j)
}

#[tokio::test]
#[ignore = "needs the Docker engine, the docker CLI and the fixture images; bash scripts/test.sh runs it"]
async fn with_reconnect_every_user_comes_back_from_a_restart_and_without_it_each_fails() {
    let s = Stack::new("reconnect").await;
    let port = Stack::port();
    let d = s.x.deploy_json(&single_sqlite(&s.name, &port));
    assert_eq!(d["ok"], true, "{d}");
    s.prepare_tokens("20", &["--users-per-project", "2"]);

    let (code, j) = load_through_a_restart(&s, true);
    let rec = &j["recovery"];
    eprintln!("{rec}");
    assert_eq!(code, Some(0), "{j:#}");
    assert_eq!(j["failed"], 0, "{j:#}");
    assert_eq!(rec["users_dropped"], 20, "{rec:#}");
    assert_eq!(rec["users_back"], 20, "{rec:#}");
    assert_eq!(rec["not_back"], 0, "{rec:#}");
    assert!(rec["drops"].as_u64().unwrap() >= 20, "{rec:#}");
    // Not held all along: back.
    assert_eq!(j["held_full_duration"], 0, "{j:#}");
    // Each sender's frames go on from its last seq on its new socket: none counted twice.
    let d = &j["fanout"]["deliveries"];
    assert_eq!(d["duplicated"], 0, "{d:#}");
    assert!(d["delivered"].as_u64().unwrap() > 0, "{d:#}");
    assert!(rec["back_p95_ms"].as_f64().unwrap() > 0.0, "{rec:#}");

    let (code, j) = load_through_a_restart(&s, false);
    assert_eq!(code, Some(1), "{j:#}");
    assert_eq!(j["failed"], 20, "{j:#}");
    assert!(j.get("recovery").is_none(), "{j:#}");
    // Traefik, in front of the app, saw the same dials fail.
    no_token_left_behind(&s, "traefik");
}
