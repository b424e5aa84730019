//! The open model (`--arrival-rate`) against a paused app: sessions keep starting on schedule while the
//! app is frozen, and each login counts from its scheduled start, so the p95 grows with the pause; the
//! closed model under the same pause (four sessions in flight, the others waiting for them) reports a
//! p95 of healthy logins, having seen the stall in only the four it had in flight: coordinated omission,
//! made visible. Real engine, stand-in app.
//!
//! The open-model test runs in nextest's `alone` profile, nothing beside it: its figures are a stall
//! of the length asked for, and beside three other tests the engine took seconds longer to thaw the
//! app and the host to serve the backlog (a 1 s pause measured 9.7 s in CI, more than the 4 s one).

use crate::common;

use common::*;
use std::time::{Duration, Instant};

const USERS: &str = "300";

/// How long the app was frozen, as the test could see it: at least from `docker pause`'s return to
/// `docker unpause`'s call, at most from the first's call to the second's return. The engine's own
/// latency lies between, and a busy engine stretches it: the figures go into every failure message.
struct Frozen {
    at_least: Duration,
    at_most: Duration,
}

impl std::fmt::Display for Frozen {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "app frozen {:.2} to {:.2} s",
            self.at_least.as_secs_f64(),
            self.at_most.as_secs_f64()
        )
    }
}

/// `load login-burst` of 300 users with `extra`, the app paused for `pause` once the first sessions
/// have started (its first progress line: the load checks the front door before it starts any, so a
/// pause begun earlier would only delay the whole run).
fn under_pause(
    st: &Stack,
    pause: Duration,
    run_id: &str,
    extra: &[&str],
) -> (serde_json::Value, Frozen) {
    let mut args = vec![
        "load",
        "login-burst",
        "--stack",
        st.name.as_str(),
        "--users",
        USERS,
        "--run-id",
        run_id,
        "--json",
    ];
    args.extend(extra);
    let mut run = Watched::spawn(st.x.command(&args));
    run.until("starting anyone", |line| {
        line.split(" started ")
            .nth(1)
            .and_then(|r| r.split('/').next())
            .and_then(|n| n.parse::<u64>().ok())
            .is_some_and(|n| n > 0)
    });
    let asked = Instant::now();
    let paused = Paused::pause(&st.container("app"));
    let frozen = Instant::now();
    let (mut thawing, mut thawed) = (frozen, frozen);
    let (out, said) = run.wait(|| {
        std::thread::sleep(pause);
        thawing = Instant::now();
        drop(paused);
        thawed = Instant::now();
    });
    let frozen = Frozen {
        at_least: thawing - frozen,
        at_most: thawed - asked,
    };
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "no summary ({e}): {} {said:?}",
            String::from_utf8_lossy(&out.stdout)
        )
    });
    assert_eq!(
        j["failed"], 0,
        "every login succeeds once the app is back: {j:#}"
    );
    (j, frozen)
}

fn ms(j: &serde_json::Value, p: &str) -> f64 {
    j["login_ms"][p].as_f64().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the Docker engine, the docker CLI and the fixture images; bash scripts/test.sh runs it"]
async fn the_open_model_counts_a_stall_from_the_schedule_where_the_closed_model_omits_it() {
    let st = Stack::new("arrive").await;
    let port = Stack::port();
    let deployed = st.x.deploy_json(&single_sqlite(&st.name, &port));
    assert_eq!(deployed["ok"], true, "{deployed}");
    st.x.ok(&[
        "prepare",
        "--stack",
        &st.name,
        "--accounts",
        USERS,
        "--users-per-project",
        "1",
        "--bcrypt-cost",
        "4",
        "--json",
    ]);

    // 50 sessions a second over 6 s; at most 40 in flight.
    let open = ["--arrival-rate", "50", "--dial-concurrency", "40"];
    let (short, short_frozen) = under_pause(&st, Duration::from_secs(1), "arr-open-1s", &open);
    let (long, long_frozen) = under_pause(&st, Duration::from_secs(4), "arr-open-4s", &open);
    // The closed model: 4 sessions in flight, each start waiting for a free one, over the same 6 s.
    let (closed, closed_frozen) = under_pause(
        &st,
        Duration::from_secs(4),
        "arr-closed-4s",
        &["--ramp", "6s", "--dial-concurrency", "4"],
    );
    let seen = format!(
        "login p95: open 1 s pause {} ms ({short_frozen}), open 4 s pause {} ms ({long_frozen}), \
         closed 4 s pause {} ms, max {} ms ({closed_frozen}); {}",
        ms(&short, "p95"),
        ms(&long, "p95"),
        ms(&closed, "p95"),
        ms(&closed, "max"),
        long["arrivals"]
    );
    eprintln!("{seen}");
    // Counted from the schedule, the logins of a 4 s pause wait for most of it (the sessions due in its
    // first seconds), those of a 1 s pause for at most that.
    assert!(ms(&long, "p95") >= 2000.0, "{seen}\n{long:#}");
    assert!(
        ms(&long, "p95") >= ms(&short, "p95") + 1500.0,
        "grows with the pause: {seen}"
    );
    // The schedule and what the cap delayed are reported.
    let a = &long["arrivals"];
    assert_eq!(a["rate_per_s"], 50.0, "{long:#}");
    assert_eq!(a["in_flight_cap"], 40, "{long:#}");
    assert!(a["waited_for_cap"].as_u64().unwrap() > 0, "{long:#}");
    assert!(a["longest_wait_ms"].as_f64().unwrap() >= 1000.0, "{long:#}");
    assert_eq!(
        long["settings"]["ramp_s"], 6.0,
        "300 sessions at 50/s: {long:#}"
    );

    // The closed model met the same stall (its slowest login waited through it), in its four sessions
    // in flight only: the others began after it, and its p95 is a fraction of the open model's.
    assert!(closed.get("arrivals").is_none(), "{closed:#}");
    assert!(
        ms(&closed, "max") >= 2000.0,
        "it did see the pause: {seen}\n{closed:#}"
    );
    assert!(
        ms(&closed, "p95") * 4.0 <= ms(&long, "p95"),
        "closed p95 a quarter of the open one at most under the same pause: {seen}"
    );
}

#[test]
fn a_rate_and_a_ramp_together_are_refused_before_anything_runs() {
    let x = Exectl::new();
    for (args, flag) in [
        (
            vec!["--arrival-rate", "0", "--url", "http://127.0.0.1:9"],
            "--arrival-rate",
        ),
        (
            vec!["--arrival-rate", "fast", "--url", "http://127.0.0.1:9"],
            "--arrival-rate",
        ),
        (
            vec![
                "--arrival-rate",
                "5",
                "--ramp",
                "2s",
                "--url",
                "http://127.0.0.1:9",
            ],
            "--ramp",
        ),
    ] {
        let mut all = vec!["load", "login-burst"];
        all.extend(args.iter());
        let (code, err) = failed(&x.run(&all));
        assert_eq!(code, Some(2), "{args:?}: {err}");
        assert!(err.contains(flag), "{args:?}: {err}");
    }
}
