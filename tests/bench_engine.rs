//! `exectl bench` end to end on the real engine with the stand-in app (issue #15): the capacity of a
//! clean ha ×2 stack with its timeline and leak checks, the seed's leak caught on the first level (and
//! a leaking build benched from the ghosts its own prepare left, issue #36), a
//! generator pinned to a tenth of a CPU reported as generator-bound, and bad flags refused before any
//! connection.

use crate::common;

use common::*;
use serde_json::Value;
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::Path;

/// The engine tests of this file run one at a time: each measures timing (sample rates, CPU) that a
/// second bench on these two cores would distort.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// ha ×2 with fixture images, small app limits, rooms cleaned 2 s after their last member leaves.
fn deploy_ha(s: &Stack, extra: &[&str]) {
    let port = Stack::port();
    let mut args = vec![
        "ha",
        "--stack",
        &s.name,
        "--lb-port",
        &port,
        "--cpus",
        "1",
        "--memory",
        "512m",
        "--set",
        "STANDIN_ROOM_CLEANUP_MS=2000",
    ];
    args.extend(HA_LIMITS);
    args.extend(extra);
    let d = s.x.deploy_json(&args);
    assert_eq!(d["ok"], true, "{d}");
}

fn prepare(s: &Stack, accounts: &str) {
    s.x.ok(&[
        "prepare",
        "--stack",
        &s.name,
        "--accounts",
        accounts,
        "--bcrypt-cost",
        "4",
        "--json",
    ]);
}

struct Bench {
    code: Option<i32>,
    results: Value,
    timeline: Vec<Value>,
    stderr: String,
}

fn read_bench(dir: &Path, out: &std::process::Output) -> Bench {
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let results = std::fs::read_to_string(dir.join("results.json")).unwrap_or_else(|e| {
        panic!(
            "no results.json in {} ({e}); stderr:\n{stderr}",
            dir.display()
        )
    });
    let timeline = read(&dir.join("timeline.jsonl"))
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(dir.join("report.html").exists());
    Bench {
        code: out.status.code(),
        results: serde_json::from_str(&results).unwrap(),
        timeline,
        stderr,
    }
}

/// A bench of these tests, which judge counts and the timeline (see COUNTS_ONLY).
fn bench(s: &Stack, run_id: &str, args: &[&str]) -> Bench {
    let mut full = vec!["bench", "--stack", &s.name, "--run-id", run_id];
    full.extend(args);
    full.extend(COUNTS_ONLY);
    let out = s.x.run(&full);
    read_bench(&s.x.state.path().join("benches").join(run_id), &out)
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
}

/// Per container service: the t_ms of the samples that read it (its memory was read).
fn container_times(timeline: &[Value]) -> BTreeMap<String, Vec<u64>> {
    let mut out: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    for s in timeline {
        for c in s["containers"].as_array().unwrap() {
            if c["rss_bytes"].is_u64() {
                out.entry(c["service"].as_str().unwrap().into())
                    .or_default()
                    .push(u(&s["t_ms"]));
            }
        }
    }
    out
}

fn median(mut v: Vec<u64>) -> u64 {
    v.sort_unstable();
    v[v.len() / 2]
}

fn instances(s: &Value) -> Vec<(u64, u64)> {
    s["instances"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| (u(&i["connections"]), u(&i["rooms"])))
        .collect()
}

#[test]
#[ignore = "needs the Docker engine and the fixture images; bash scripts/test.sh runs it"]
fn idle_levels_pass_with_the_timeline_on_one_clock_and_a_leak_check_after_each() {
    let _one = serial();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let s = rt.block_on(Stack::new("cap"));
    deploy_ha(&s, &[]);
    prepare(&s, "1000");

    let b = bench(
        &s,
        "b1-cap",
        &[
            "--scenario",
            "idle",
            "--levels",
            "200,500,1000",
            "--hold",
            "10s",
            "--ramp",
            "2s",
            "--settle",
            "45s",
        ],
    );
    let r = &b.results;
    let levels = r["levels"].as_array().unwrap();
    assert_eq!(b.code, Some(0), "{}\n{:#}", b.stderr, r["verdict"]);
    assert_eq!(levels.len(), 3);
    assert_eq!(r["verdict"]["capacity"], 1000, "{:#}", r["verdict"]);
    assert!(r["verdict"]["knee"].is_null());

    for l in levels {
        let users = u(&l["users"]);
        assert_eq!(l["passed"], true, "{l:#}");
        assert_eq!(u(&l["figures"]["held"]), users, "{l:#}");
        let span = &l["span"];
        let (hold, hold_end, end, settled) = (
            u(&span["hold_ms"]),
            u(&span["hold_end_ms"]),
            u(&span["end_ms"]),
            u(&span["settled_ms"]),
        );
        // During the hold, the instances' own counts add up to the level, sample after sample.
        let holding: Vec<&Value> = b
            .timeline
            .iter()
            .filter(|x| (hold..=hold_end).contains(&u(&x["t_ms"])))
            .collect();
        assert!(
            holding.len() >= 7,
            "{users}: {} samples in a 10 s hold ({hold}..{hold_end})",
            holding.len()
        );
        for x in &holding {
            let counts = instances(x);
            assert_eq!(counts.len(), 2, "{x}");
            let sum: u64 = counts.iter().map(|c| c.0).sum();
            assert_eq!(sum, users, "{users} at {}: {counts:?}", x["t_ms"]);
            assert!(counts.iter().all(|c| c.0 > 0), "least_conn: {counts:?}");
            assert_eq!(x["level"], users);
        }
        // The leak check ran after the load, and waited for the rooms too: the app cleans a room 2 s
        // after its last member left, so a sample between the load's end and the check's shows rooms
        // still open with every connection closed, and the check ended on all at zero.
        let leak = &l["leak"];
        assert_eq!(leak["ok"], true, "{leak:#}");
        assert!(settled > end, "{span}");
        let after: Vec<&Value> = b
            .timeline
            .iter()
            .filter(|x| (end + 1..=settled).contains(&u(&x["t_ms"])))
            .collect();
        assert!(
            after
                .iter()
                .any(|x| instances(x).iter().any(|c| c.0 == 0 && c.1 > 0)),
            "{users}: no sample saw rooms outlive their sockets: {after:?}"
        );
        let last = after.last().expect("a sample during the leak check");
        assert!(instances(last).iter().all(|c| *c == (0, 0)), "{last}");
        eprintln!(
            "level {users}: hold {hold}..{hold_end} ({} samples), end {end}, settled {settled} (leak check {} ms), connect p95 {} ms, login p95 {} ms",
            holding.len(),
            leak["waited_ms"],
            l["figures"]["connect_ms"]["p95"],
            l["figures"]["login_ms"]["p95"]
        );
    }

    // Every container sampled at 1 Hz over the whole run: median gap ≤ 1.1 s, none over 2.5 s (slack
    // for a machine shared with other benches).
    let times = container_times(&b.timeline);
    let services: Vec<&str> = times.keys().map(String::as_str).collect();
    assert_eq!(services, ["app-1", "app-2", "nginx", "postgres", "redis"]);
    let run_ms = u(&levels[2]["span"]["settled_ms"]);
    for (service, t) in &times {
        let gaps: Vec<u64> = t.windows(2).map(|w| w[1] - w[0]).collect();
        let (med, max) = (median(gaps.clone()), *gaps.iter().max().unwrap());
        eprintln!(
            "{service}: {} samples over {run_ms} ms, median gap {med} ms, max {max} ms",
            t.len()
        );
        assert!(t[0] <= 1100, "{service} first sampled at {} ms", t[0]);
        assert!(
            *t.last().unwrap() + 1100 >= run_ms,
            "{service} sampled to the end"
        );
        assert!(med <= 1100, "{service}: median gap {med} ms");
        assert!(max <= 2500, "{service}: a gap of {max} ms");
    }
    eprintln!("sampler: {:#}", r["sampler"]);
}

/// Issue #36, 18 and 20: a build that leaks (the stand-in's leak-on-close, the real image before the
/// upstream fix) is benched, not refused: prepare's verification leaves a ghost connection and room on
/// an instance, which the bench tells from a client (no client socket is open to the stack) and
/// measures from. Every socket of the level held, so the level counts for the capacity; its leak check
/// fails, naming the ghosts, and the verdict fails on the leak, said apart from the capacity. A level
/// that held its users and leaked is no knee: the next level runs, measured from what it left.
#[test]
#[ignore = "needs the Docker engine and the fixture images; bash scripts/test.sh runs it"]
fn a_leaking_build_is_benched_from_its_ghosts_and_its_leak_fails_the_verdict_not_the_capacity() {
    let _one = serial();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let s = rt.block_on(Stack::new("leak"));
    deploy_ha(&s, &["--set", "STANDIN_FAULT=leak-on-close"]);
    prepare(&s, "200");
    let status: Value =
        serde_json::from_str(&s.x.ok(&["status", "--stack", &s.name, "--json"])).unwrap();
    let ghosts = u(&status["total_connections"]);
    assert!(ghosts >= 1, "prepare's check leaked its socket: {status:#}");

    let b = bench(
        &s,
        "b1-leak",
        &[
            "--levels", "100,200", "--hold", "3s", "--ramp", "1s", "--settle", "5s",
        ],
    );
    let r = &b.results;
    assert_eq!(b.code, Some(1), "{}\n{r:#}", b.stderr);
    assert!(
        b.stderr.contains("with no client socket open to the stack") && b.stderr.contains("ghosts"),
        "the ghosts are said: {}",
        b.stderr
    );
    let levels = r["levels"].as_array().unwrap();
    // A level that held its users and leaked is no knee: the bench goes on (review of #36, H3).
    assert_eq!(levels.len(), 2, "both levels run: {r:#}");
    let l = &levels[0];
    let before: u64 = l["ghosts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| u(&g["connections"]))
        .sum();
    assert_eq!(before, ghosts, "measured from the ghosts: {l:#}");
    // Every socket was held (the instances' counts less the ghosts: no other client): only the leak
    // check fails it.
    assert_eq!(u(&l["figures"]["held"]), 100, "{l:#}");
    assert_eq!(u(&l["figures"]["users"]), 100);
    assert_eq!(l["passed"], false);
    assert_eq!(l["outcome"], "leaked", "{l:#}");
    assert_eq!(l["leak"]["ok"], false, "{:#}", l["leak"]);
    assert_eq!(
        l["leak"]["sockets"], 0,
        "no client socket left: {:#}",
        l["leak"]
    );
    assert!(u(&l["leak"]["waited_ms"]) >= 5000, "{:#}", l["leak"]);
    let reasons: Vec<&str> = l["reasons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_str().unwrap())
        .collect();
    assert_eq!(reasons.len(), 1, "{reasons:?}");
    assert!(reasons[0].starts_with("leak check failed"), "{reasons:?}");
    assert!(reasons[0].contains("ghosts: it leaked them"), "{reasons:?}");
    // Level 2 is measured from what level 1 left (its ghosts and level 1's 100), and leaks its own 200.
    let l2 = &levels[1];
    let from: u64 = l2["ghosts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| u(&g["connections"]))
        .sum();
    assert_eq!(from, ghosts + 100, "{l2:#}");
    assert_eq!(u(&l2["figures"]["held"]), 200, "{l2:#}");
    assert_eq!(l2["outcome"], "leaked", "{l2:#}");
    let v = &r["verdict"];
    assert!(v["knee"].is_null(), "a leak is no knee: {v:#}");
    assert_eq!(v["capacity"], 200, "the users were held: {v:#}");
    assert_eq!(v["leaked"], serde_json::json!([100, 200]), "{v:#}");
    let headline = v["headline"].as_str().unwrap();
    assert!(
        headline.starts_with("capacity at least 200 users")
            && headline.contains("the app leaked 100 connections")
            && headline.contains("200 connections and"),
        "{headline}"
    );
    let html = read(&s.x.state.path().join("benches/b1-leak/report.html"));
    assert!(html.contains("Capacity: at least 200 users"), "{html}");
    assert!(!html.contains("below the first level"));
    assert!(
        html.contains("Defect: The app leaked 100 connections")
            && html.contains("Defect: The app leaked 200 connections"),
        "{html}"
    );
    let list = s.x.ok(&["runs", "list"]);
    assert!(
        list.contains("capacity at least 200 (the app leaked)"),
        "{list}"
    );
    eprintln!("verdict: {headline}\nleak: {}", l["leak"]["detail"]);
}

/// A cgroup v1 CPU group of this test's own, limited to `quota_us` per 100 ms; removed when dropped.
struct CpuGroup {
    dir: std::path::PathBuf,
}

impl CpuGroup {
    fn new(name: &str, quota_us: u64) -> CpuGroup {
        let dir = Path::new("/sys/fs/cgroup/cpu").join(name);
        let _ = std::fs::remove_dir(&dir);
        std::fs::create_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        std::fs::write(dir.join("cpu.cfs_period_us"), "100000").unwrap();
        std::fs::write(dir.join("cpu.cfs_quota_us"), quota_us.to_string()).unwrap();
        CpuGroup { dir }
    }

    /// Lifts the quota: what the bench does after the measured level (its verdict, its report) is no
    /// finding, and at 3 % of a CPU the debug build took 20 s of the test's 140 for it.
    fn lift(&self) {
        std::fs::write(self.dir.join("cpu.cfs_quota_us"), "-1").unwrap();
    }
}

impl Drop for CpuGroup {
    fn drop(&mut self) {
        if let Err(e) = std::fs::remove_dir(&self.dir) {
            eprintln!("warning: removing {}: {e}", self.dir.display());
        }
    }
}

/// The generator's CPU quota: 3 ms per 100 ms. At a tenth of a CPU this debug build still serves 1000
/// collab users within the objectives (measured: connect p95 0.9 s); at 3 % it cannot (3 s).
const GENERATOR_QUOTA_US: u64 = 3_000;

#[test]
#[ignore = "needs the Docker engine, the fixture images and root (cgroup v1); bash scripts/test.sh runs it"]
fn a_generator_pinned_to_a_fraction_of_a_cpu_is_reported_as_generator_bound() {
    let _one = serial();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let s = rt.block_on(Stack::new("gen"));
    deploy_ha(&s, &[]);
    s.x.ok(&[
        "prepare",
        "--stack",
        &s.name,
        "--accounts",
        "600",
        "--users-per-project",
        "4",
        "--bcrypt-cost",
        "4",
        "--mint-tokens",
        "--json",
    ]);

    // A collab level too small for any room of two (the first two accounts share a project): refused
    // before any connection, naming --levels (bench has no --users) and where they must start.
    let out = s.x.run(&[
        "bench",
        "--stack",
        &s.name,
        "--run-id",
        "b1-one",
        "--scenario",
        "collab",
        "--levels",
        "1,600",
    ]);
    let (code, stderr) = failed(&out);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("invalid --levels")
            && stderr.contains("the 1 users level")
            && stderr.contains("start --levels at 2 or more"),
        "{stderr}"
    );
    assert!(!s.x.state.path().join("benches/b1-one").exists());

    let group = CpuGroup::new(
        &format!("{}bench-gen-{}", stack_prefix(), std::process::id()),
        GENERATOR_QUOTA_US,
    );
    let run_id = "b1-gen";
    // The bench joins the group before it execs: every thread it starts is in it.
    let script = format!(
        "echo $$ > {}/cgroup.procs && exec \"$0\" \"$@\"",
        group.dir.display()
    );
    let mut bench = std::process::Command::new("sh")
        .env("EXECTL_STATE_DIR", s.x.state.path())
        .args(["-c", &script, env!("CARGO_BIN_EXE_exectl")])
        .args([
            "bench",
            "--stack",
            &s.name,
            "--run-id",
            run_id,
            "--scenario",
            "collab",
            "--levels",
            "600",
            // Minted tokens: the pinned generator's 600 logins took 37 s to 2 min of ramp, and
            // what is judged is the hold's relaying.
            "--tokens",
            "--hold",
            "10s",
            "--ramp",
            "2s",
            // Not less: once in CI (2026-12-02) prepare's verification rooms were still counted 20 s
            // after it, where 2 s is the stack's cleanup (not reproduced since).
            "--settle",
            "45s",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The level's own line ("level 1/1: 600 users, held …", unlike the progress lines' "[  Ns] level")
    // comes once it is judged, its generator CPU measured against the quota: the rest runs unpinned.
    let stderr = BufReader::new(bench.stderr.take().unwrap());
    let lifted = &group;
    let out = std::thread::scope(|scope| {
        let reader = scope.spawn(move || {
            let mut all = String::new();
            for line in stderr.lines().map_while(Result::ok) {
                if line.starts_with("level 1/1:") {
                    lifted.lift();
                }
                all.push_str(&line);
                all.push('\n');
            }
            all
        });
        let mut out = bench.wait_with_output().unwrap();
        out.stderr = reader.join().unwrap().into_bytes();
        out
    });
    drop(group);
    let b = read_bench(&s.x.state.path().join("benches").join(run_id), &out);
    let r = &b.results;
    assert_eq!(b.code, Some(1), "{}\n{:#}", b.stderr, r["verdict"]);
    assert_eq!(r["verdict"]["knee"], 600, "{:#}", r["verdict"]);
    let lim = &r["verdict"]["limiting"];
    assert_eq!(lim["generator_bound"], true, "{lim:#}\n{}", b.stderr);
    assert_eq!(lim["resource"], "generator", "{lim:#}");
    assert_eq!(lim["component"], "the load generator's CPU", "{lim:#}");
    assert_eq!(lim["services"], serde_json::json!(["generator"]), "{lim:#}");
    let headline = r["verdict"]["headline"].as_str().unwrap();
    assert!(headline.contains("generator-bound"), "{headline}");
    assert!(
        !headline.contains("limiting component"),
        "no SUT container blamed: {headline}"
    );
    let cpus = r["generator_cpus"].as_f64().unwrap();
    assert!(
        (cpus - 0.03).abs() < 1e-9,
        "CPU % is against the quota: {cpus}"
    );
    eprintln!(
        "verdict: {headline}\nfigures: {}",
        r["levels"][0]["figures"]
    );
}

#[test]
fn bad_flags_are_refused_before_any_connection_or_file() {
    let x = Exectl::new();
    let passwd = read(Path::new("/etc/passwd"));
    // A target that would show any connection attempt: nothing may be accepted on it.
    let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    probe.set_nonblocking(true).unwrap();
    let target = format!(
        "ssh://nobody@127.0.0.1:{}",
        probe.local_addr().unwrap().port()
    );
    let dup = x.state.path().join("benches").join("b1-dup");
    std::fs::create_dir_all(&dup).unwrap();
    std::fs::write(dup.join("results.json"), "{\"kept\": true}\n").unwrap();
    for (flags, field, says) in [
        (
            vec!["--levels", "500,100"],
            "--levels",
            "100 does not come after 500",
        ),
        (vec!["--levels", "100", "--slo", "nope=1"], "--slo", "nope"),
        (
            vec!["--levels", "100", "--sample", "10ms"],
            "--sample",
            "10ms",
        ),
        (
            vec!["--levels", "100", "--run-id", "b1-dup"],
            "--run-id",
            "b1-dup",
        ),
        // A file is no bench folder: refused before the first level, not dropped after it.
        (
            vec!["--levels", "100", "--out", "/etc/passwd"],
            "--out",
            "/etc/passwd is a file, not a folder",
        ),
    ] {
        let mut args = vec!["bench", "--target", &target, "--stack", "b1-none"];
        args.extend(&flags);
        let (code, stderr) = failed(&x.run(&args));
        assert_eq!(code, Some(2), "{flags:?}: {stderr}");
        assert!(stderr.contains(field), "{flags:?} names {field}: {stderr}");
        assert!(stderr.contains(says), "{flags:?} says {says}: {stderr}");
        assert!(
            matches!(probe.accept(), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock),
            "{flags:?} connected to the target"
        );
    }
    assert_eq!(read(&dup.join("results.json")), "{\"kept\": true}\n");
    assert_eq!(read(Path::new("/etc/passwd")), passwd, "untouched");
    let benches: Vec<_> = std::fs::read_dir(x.state.path().join("benches"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(benches, ["b1-dup"], "no bench folder was made");
}
