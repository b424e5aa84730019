//! `exectl sweep` on the real engine with the stand-in, one test per acceptance line of issue #22: the
//! nginx variants (only nginx recreated), two images (the digest is the variable), a capacity search
//! per instance count, a second variable stopping the sweep, repeats that find no difference, the
//! browser probe per level, and a killed sweep resumed (from another folder, its `--set-secret` in no
//! file but the stack's 0600 ones). Issue #36: a sweep keeps the accounts prepared before it.

use crate::common;

use std::path::Path;
use std::process::Output;
use std::time::{Duration, Instant};

use common::{cpu, docker, docker_cli, single_sqlite, Exectl, Paused, Stack, FIXTURES, HA_LIMITS};
use exectl_core::spec::NginxVariant;

/// One sweep at a time: two at once on two cores measure each other.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Rooms dropped quickly after their last socket, so each level's leak check settles in seconds.
const ROOM_CLEANUP: &str = "STANDIN_ROOM_CLEANUP_MS=500";

/// A short level of a few users: enough for the points whose figures are not the subject.
const SHORT: [&str; 8] = [
    "--hold", "2s", "--ramp", "1s", "--settle", "10s", "--sample", "500ms",
];

/// `exectl sweep ARGS --images IMAGES --bcrypt-cost COST --out OUT --json`.
fn command_line<'a>(
    args: &[&'a str],
    images: &'a str,
    cost: &'a str,
    out: &'a Path,
) -> Vec<&'a str> {
    let mut full = vec!["sweep"];
    full.extend(args);
    full.extend([
        "--images",
        images,
        "--health-interval",
        "1s",
        "--bcrypt-cost",
        cost,
        "--out",
        out.to_str().unwrap(),
        "--json",
    ]);
    full
}

/// The sweep with the fixture images and cheap logins: its exit code, stderr and results.
fn sweep(x: &Exectl, out: &Path, args: &[&str]) -> (i32, String, serde_json::Value) {
    parsed(&x.run(&command_line(args, FIXTURES, "4", out)), out)
}

/// ha ×2 with each instance at a 0.2-CPU quota and rooms dropped quickly; seeded at bcrypt cost 10
/// (`COSTLY`), a login costs real CPU there (≈ 0.3 s of an instance's quota). `cpus`: 0.2 scaled to this
/// machine's speed (`cpu::quota`), so that a quota checks as many logins a second as where the figures
/// were measured.
fn cpu_limited_ha<'a>(stack: &'a str, port: &'a str, cpus: &'a str) -> Vec<&'a str> {
    let mut args = vec![
        "ha",
        "--stack",
        stack,
        "--lb-port",
        port,
        "--cpus",
        cpus,
        "--memory",
        "512m",
        "--set",
        ROOM_CLEANUP,
    ];
    args.extend(HA_LIMITS);
    args
}

const COSTLY: &str = "10";

fn parsed(o: &Output, out: &Path) -> (i32, String, serde_json::Value) {
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    // Its results on stdout, or (a sweep that stopped before printing) as written so far.
    let text = match o.stdout.is_empty() {
        false => String::from_utf8_lossy(&o.stdout).into_owned(),
        true => std::fs::read_to_string(out.join("results.json"))
            .unwrap_or_else(|e| panic!("no results ({e}): {err}")),
    };
    let r = serde_json::from_str(&text).unwrap_or_else(|e| panic!("results ({e}): {text}\n{err}"));
    (o.status.code().unwrap_or(-1), err, r)
}

fn points(r: &serde_json::Value) -> &Vec<serde_json::Value> {
    r["points"].as_array().unwrap()
}

/// The report, and a check that it links every point's bench report and that each exists.
fn report(out: &Path, r: &serde_json::Value) -> String {
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    for p in points(r) {
        for b in p["benches"].as_array().unwrap() {
            let rel = format!("points/{}/report.html", b.as_str().unwrap());
            assert!(html.contains(&rel), "the report links {rel}");
            assert!(out.join(&rel).exists(), "{rel} exists");
        }
    }
    html
}

/// Waits until `path` exists (a point's bench folder: its deploy is done and its bench started).
fn wait_for(path: &Path, within: Duration) {
    let deadline = Instant::now() + within;
    while !path.exists() {
        assert!(
            Instant::now() < deadline,
            "{} never appeared",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the Docker engine and the fixture images; bash scripts/test.sh runs it"]
async fn nginx_variants_differ_and_only_nginx_is_recreated() {
    let _serial = SERIAL.lock().await;
    let d = docker().await;
    let host_cpus = d.info().await.unwrap().ncpu.unwrap() as u64;
    let s = Stack::new("swngx").await;
    let (x, stack, port) = (&*s.x, s.name.as_str(), Stack::port());
    // Each proxied socket holds two of nginx's connections: the baseline's workers carry at most
    // worker_connections × workers / 2 (auto workers: one per CPU); the level asks half as many again.
    let (_, wc, _) = NginxVariant::BaselineDefault.defaults_for(20000);
    let level = (wc * host_cpus / 2 * 3 / 2).to_string();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("sweep");
    let (code, err, r) = sweep(
        x,
        &out,
        &[
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
            "512m",
            "--nofile",
            "20000",
            "--set",
            ROOM_CLEANUP,
            "--vary",
            "nginx=baseline-default,tuned-ip-hash,tuned-least-conn",
            "--scenario",
            "idle",
            "--levels",
            &level,
            "--hold",
            "8s",
            "--ramp",
            "3s",
            "--settle",
            "20s",
            "--sample",
            "500ms",
        ],
    );
    eprintln!("{err}");
    assert_eq!(code, 0, "{r:#}");
    let p = points(&r);
    assert_eq!(p.len(), 3, "{r:#}");
    let level0 = |i: usize| &p[i]["levels"][0];

    // The baseline fails, named on nginx's worker_connections; the tuned variants hold every socket.
    assert_eq!(level0(0)["passed"], false, "{:#}", p[0]);
    assert_eq!(
        p[0]["limiting"]["component"], "nginx worker_connections",
        "{:#}",
        p[0]
    );
    for i in [1, 2] {
        assert_eq!(level0(i)["passed"], true, "{:#}", p[i]);
        assert_eq!(level0(i)["held_pct"], 100.0, "{:#}", p[i]);
    }
    // One load source: ip_hash pins it to one instance; least_conn splits it.
    let shares = |i: usize| -> Vec<f64> {
        level0(i)["shares"]
            .as_object()
            .unwrap()
            .values()
            .map(|v| v.as_f64().unwrap())
            .collect()
    };
    let ip = shares(1);
    assert!(ip.iter().any(|s| *s >= 0.95), "ip_hash: {ip:?}");
    let lc = shares(2);
    assert_eq!(lc.len(), 2, "{lc:?}");
    assert!(
        lc.iter().all(|s| (0.35..=0.65).contains(s)),
        "least_conn: {lc:?}"
    );

    // Only nginx was recreated between points: every other container id is the same.
    for i in [1, 2] {
        assert_eq!(
            p[i]["recreated"],
            serde_json::json!(["nginx"]),
            "{:#}",
            p[i]
        );
        for (service, id) in p[0]["containers"].as_object().unwrap() {
            let now = &p[i]["containers"][service];
            if service == "nginx" {
                assert_ne!(now, id, "nginx recreated at point {}", i + 1);
            } else {
                assert_eq!(now, id, "{service} kept at point {}", i + 1);
            }
        }
    }
    // The run records of two points differ in the one knob.
    let diff = x.ok(&[
        "runs",
        "diff",
        p[0]["deploy_run_id"].as_str().unwrap(),
        p[2]["deploy_run_id"].as_str().unwrap(),
    ]);
    assert!(diff.contains("1 variable changed: nginx variant"), "{diff}");

    let html = report(&out, &r);
    assert!(html.contains("nginx worker_connections"), "limiting named");
    assert!(html.contains("tuned-least-conn"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the Docker engine and the fixture images; bash scripts/test.sh runs it"]
async fn two_images_differ_and_the_digest_is_the_variable() {
    let _serial = SERIAL.lock().await;
    docker().await;
    // B: the stand-in with the seed's bug, bcrypt on the runtime's one thread, as a second tag.
    let tag = format!("exectl-test/{}standin-bb:latest", common::stack_prefix());
    let ctx = tempfile::tempdir().unwrap();
    std::fs::write(
        ctx.path().join("Dockerfile"),
        "FROM exectl-fixture/standin:latest\nENV STANDIN_FAULT=blocking-bcrypt\n",
    )
    .unwrap();
    docker_cli(&["build", "-q", "-t", &tag, ctx.path().to_str().unwrap()]);
    let s = Stack::new("swimg").await;
    let (x, stack, port) = (&*s.x, s.name.as_str(), Stack::port());
    let vary = format!("image.app=exectl-fixture/standin:latest,{tag}");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("sweep");
    let cpus = cpu::quota(0.2);
    let mut args = cpu_limited_ha(stack, &port, &cpus);
    // At a 0.2-CPU quota and cost 10 a login costs ≈ 0.3 s of the runtime's one worker with the fault:
    // the health probes wait behind the bcrypts, as the seed's /healthcheck did.
    args.extend([
        "--vary",
        &vary,
        "--scenario",
        "login-burst",
        "--levels",
        "30",
        "--hold",
        "6s",
        "--settle",
        "10s",
        "--sample",
        "500ms",
        "--slo",
        "health_p95=300ms",
        // Judged on the probe: logins at cost 10 on 0.2 CPU take seconds either way.
        "--slo",
        "login_p95=60s",
    ]);
    let (code, err, r) = parsed(&x.run(&command_line(&args, FIXTURES, COSTLY, &out)), &out);
    docker_cli(&["rmi", "-f", &tag]);
    eprintln!("{err}");
    assert_eq!(code, 0, "{r:#}");
    let p = points(&r);
    assert_eq!(p.len(), 2, "{r:#}");
    let (a, b) = (&p[0]["levels"][0], &p[1]["levels"][0]);
    eprintln!("healthy: {a:#}\nblocking-bcrypt: {b:#}");
    assert_eq!(a["passed"], true, "{a:#}");
    assert_eq!(b["passed"], false, "{b:#}");
    let health = |l: &serde_json::Value| l["health_p95_ms"].as_f64().unwrap();
    assert!(
        health(b) > 2.0 * health(a),
        "probe p95 {} vs {}",
        health(a),
        health(b)
    );

    // The variable is the image; its digests differ and the report shows both.
    assert_eq!(r["variables"], serde_json::json!(["image.app"]));
    let digest = |i: usize| p[i]["images"]["app-1"].as_str().unwrap().to_string();
    assert_ne!(digest(0), digest(1));
    let html = report(&out, &r);
    for i in [0, 1] {
        let short = digest(i);
        let short = short.trim_start_matches("sha256:");
        assert!(
            html.contains(&short[..12]),
            "the report names digest {short}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the Docker engine and the fixture images; bash scripts/test.sh runs it"]
async fn the_capacity_of_two_instances_is_searched_against_one() {
    let _serial = SERIAL.lock().await;
    docker().await;
    let s = Stack::new("swcap").await;
    let (x, stack, port) = (&*s.x, s.name.as_str(), Stack::port());
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("sweep");
    let cpus = cpu::quota(0.2);
    let mut args = cpu_limited_ha(stack, &port, &cpus);
    // Logins at cost 10 on a 0.2-CPU quota: each instance checks a few a second, so a burst's p95
    // passes 2 s at some tens of users, and two instances hold more than one.
    args.extend([
        "--vary",
        "instances=1,2",
        "--scenario",
        "login-burst",
        "--find-capacity",
        "--from",
        "4",
        "--to",
        "64",
        "--precision",
        "25%",
        "--slo",
        "login_p95=2s",
        "--hold",
        "3s",
        "--settle",
        "10s",
        "--sample",
        "500ms",
    ]);
    let (code, err, r) = parsed(&x.run(&command_line(&args, FIXTURES, COSTLY, &out)), &out);
    eprintln!("{err}");
    assert_eq!(code, 0, "{r:#}");
    let p = points(&r);
    assert_eq!(p.len(), 2, "{r:#}");
    let mut caps = Vec::new();
    for pt in p {
        let probes = pt["probes"].as_array().unwrap();
        assert!(probes.len() >= 2, "a search probes more than once: {pt:#}");
        // Each probe is a bench of its own, listed and linked.
        assert_eq!(pt["benches"].as_array().unwrap().len(), probes.len());
        let cap = pt["capacity"].as_u64().unwrap_or(0);
        // The capacity is the highest passing probe, and (unless it reached --to) one above it failed
        // within the precision.
        let passed: Vec<u64> = probes
            .iter()
            .filter(|q| q["passed"] == true)
            .map(|q| q["users"].as_u64().unwrap())
            .collect();
        assert_eq!(passed.iter().max().copied().unwrap_or(0), cap, "{pt:#}");
        if pt["at_least"] != true {
            let failed = probes
                .iter()
                .filter(|q| q["passed"] == false)
                .map(|q| q["users"].as_u64().unwrap())
                .min()
                .unwrap();
            assert!(
                failed > cap && (failed - cap) as f64 <= 0.25 * cap.max(1) as f64 + 1.0,
                "{pt:#}"
            );
        }
        caps.push(cap);
    }
    eprintln!("capacity: 1 instance {}, 2 instances {}", caps[0], caps[1]);
    assert!(caps[0] >= 4, "one instance holds the first probe: {caps:?}");
    assert!(caps[1] >= caps[0], "{caps:?}");
    let s = &r["comparison"]["values"];
    assert_eq!(s[0]["capacity"]["median"].as_f64(), Some(caps[0] as f64));
    let html = report(&out, &r);
    assert!(html.contains("probes"), "the report lists the probes");
}

/// Every point is held against the target's limits before the first deploy, from one read of them: a
/// later point's CPUs beyond the engine's, nofile beyond its hard limit (20000 here, as the set-up makes
/// it), or worker_connections the fitted nofile cannot hold is refused at once, exit 2, with nothing
/// deployed or recorded (point 1 was deployed and benched, then exit 2 and a --resume that could only
/// meet the same refusal).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the Docker engine and the fixture images; bash scripts/test.sh runs it"]
async fn a_point_the_target_cannot_take_is_refused_before_any_deploy() {
    let d = docker().await;
    let ncpu = d.info().await.unwrap().ncpu.unwrap();
    let s = Stack::new("swfit").await;
    let (x, stack, port) = (&*s.x, s.name.as_str(), Stack::port());
    let dir = tempfile::tempdir().unwrap();
    let cpus = format!("cpus=1,{}", ncpu + 2);
    let single = single_sqlite(stack, &port);
    let ha = ["ha", "--stack", stack, "--lb-port", &port];
    for (topology, vary, says) in [
        (&single[..], cpus.as_str(), "invalid --cpus"),
        (
            &single[..],
            "nofile=20000,200000",
            "invalid --nofile \"200000\"",
        ),
        (
            &ha[..],
            "worker_connections=5000,16000",
            "needs worker_rlimit_nofile 32000",
        ),
    ] {
        let out = dir.path().join(vary.replace([',', '='], "-"));
        let mut args = vec!["sweep"];
        args.extend(topology);
        args.extend([
            "--vary",
            vary,
            "--levels",
            "5",
            "--out",
            out.to_str().unwrap(),
        ]);
        // Short and on the fixture images, should point 1 run after all.
        args.extend(SHORT);
        args.extend(["--bcrypt-cost", "4", "--images", FIXTURES]);
        let o = x.run(&args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{vary}: {err}");
        assert!(
            err.contains(says) && err.contains("nothing was deployed"),
            "{vary}: {err}"
        );
        assert!(!err.contains("--resume"), "{vary}: {err}");
        assert!(
            !out.join("results.json").exists(),
            "{vary}: nothing recorded"
        );
        let filter = format!("label=exectl.stack={stack}");
        let made = docker_cli(&["ps", "-aq", "--filter", &filter]);
        assert_eq!(made.trim(), "", "{vary}: nothing deployed");
    }
}

/// The small single SQLite stack of the sweeps whose figures are not the subject.
fn small<'a>(stack: &'a str, port: &'a str, levels: &'a str) -> Vec<&'a str> {
    let mut a = single_sqlite(stack, port);
    a.extend(["--set", ROOM_CLEANUP, "--levels", levels]);
    a.extend(SHORT);
    a
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the Docker engine and the fixture images; bash scripts/test.sh runs it"]
async fn a_second_variable_stops_the_sweep_naming_it() {
    let _serial = SERIAL.lock().await;
    docker().await;
    let s = Stack::new("swtwo").await;
    let (x, stack, port) = (&*s.x, s.name.as_str(), Stack::port());
    let dir = tempfile::tempdir().unwrap();

    // A hand-edited exectl.yaml between points: the CPU limit moves under a sweep of env.SWEEP_MARK.
    let config = dir.path().join("exectl.yaml");
    std::fs::write(&config, "cpus: 1\n").unwrap();
    let out = dir.path().join("edited");
    let mut args = small(stack, &port, "5");
    let config_s = config.to_str().unwrap().to_string();
    args.extend([
        "--config",
        &config_s,
        "--vary",
        "env.SWEEP_MARK=1,2",
        "--run-id",
        "S-edit",
    ]);
    let (code, err, r) = std::thread::scope(|t| {
        let edit = t.spawn(|| {
            // Point 1's bench started: its deploy is recorded; the edit lands before point 2 reads it.
            wait_for(&out.join("points/S-edit-01"), Duration::from_secs(120));
            std::fs::write(&config, "cpus: 0.5\n").unwrap();
        });
        let r = sweep(x, &out, &args);
        edit.join().unwrap();
        r
    });
    assert_eq!(code, 1, "{err}\n{r:#}");
    let why = r["stopped"].as_str().unwrap_or_default();
    eprintln!("edited: {why}");
    assert!(why.contains("cpus"), "{why}");
    assert!(err.contains("cpus"), "{err}");
    assert_eq!(points(&r).len(), 1, "point 1 is kept: {r:#}");

    // Put back, the same sweep resumes and finishes.
    std::fs::write(&config, "cpus: 1\n").unwrap();
    let o = x.run(&["sweep", "--resume", "S-edit", "--json"]);
    let (code, err, r) = parsed(&o, &out);
    assert_eq!(code, 0, "{err}\n{r:#}");
    assert_eq!(points(&r).len(), 2, "{r:#}");

    // Prepared for more users than the next sweep's level: its prepare keeps them (it once rewrote the
    // manifest to the 5 its level needs, and a later `load --users 40` was refused).
    x.ok(&[
        "prepare",
        "--stack",
        stack,
        "--accounts",
        "40",
        "--bcrypt-cost",
        "4",
    ]);
    let manifest_accounts = || -> Vec<u64> {
        let dir = x.stack_dir(stack).join("manifests");
        std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| {
                let meta = std::fs::read_to_string(e.unwrap().path().join("pattern.json")).unwrap();
                serde_json::from_str::<serde_json::Value>(&meta).unwrap()["accounts"]
                    .as_u64()
                    .unwrap()
            })
            .collect()
    };
    assert_eq!(manifest_accounts(), [40]);

    // An image tag rebuilt under the sweep: the app's digest moves while env.SWEEP_MARK is swept.
    let tag = format!(
        "exectl-test/{}standin-rebuilt:latest",
        common::stack_prefix()
    );
    docker_cli(&["tag", "exectl-fixture/standin:latest", &tag]);
    let images = dir.path().join("images.yaml");
    let fixtures = std::fs::read_to_string(FIXTURES).unwrap();
    std::fs::write(
        &images,
        fixtures.replace("app: exectl-fixture/standin:latest", &format!("app: {tag}")),
    )
    .unwrap();
    let ctx = dir.path().join("ctx");
    std::fs::create_dir(&ctx).unwrap();
    std::fs::write(
        ctx.join("Dockerfile"),
        "FROM exectl-fixture/standin:latest\nLABEL rebuilt=yes\n",
    )
    .unwrap();
    let out = dir.path().join("rebuilt");
    let mut args = small(stack, &port, "5");
    let images_s = images.to_str().unwrap().to_string();
    args.extend(["--vary", "env.SWEEP_MARK=1,2", "--run-id", "S-rebuilt"]);
    let full = command_line(&args, &images_s, "4", &out);
    let (code, err, r) = std::thread::scope(|t| {
        let rebuild = t.spawn(|| {
            wait_for(&out.join("points/S-rebuilt-01"), Duration::from_secs(120));
            docker_cli(&["build", "-q", "-t", &tag, ctx.to_str().unwrap()]);
        });
        let o = x.run(&full);
        rebuild.join().unwrap();
        parsed(&o, &out)
    });
    docker_cli(&["rmi", "-f", &tag]);
    assert_eq!(code, 1, "{err}\n{r:#}");
    let why = r["stopped"].as_str().unwrap_or_default();
    eprintln!("rebuilt: {why}");
    assert!(why.contains("image app"), "{why}");
    assert_eq!(points(&r).len(), 1, "{r:#}");
    assert_eq!(
        manifest_accounts(),
        [40],
        "the 40 prepared are still the manifest"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the Docker engine and the fixture images; bash scripts/test.sh runs it"]
async fn three_repeats_of_equal_configurations_are_not_ranked() {
    let _serial = SERIAL.lock().await;
    docker().await;
    let s = Stack::new("swrep").await;
    let (x, stack, port) = (&*s.x, s.name.as_str(), Stack::port());
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("sweep");
    let mut args = small(stack, &port, "20");
    // The same limit written two ways: two values, one configuration.
    args.extend(["--vary", "memory=512m,536870912", "--repeat", "3"]);
    let (code, err, r) = sweep(x, &out, &args);
    assert_eq!(code, 0, "{err}\n{r:#}");
    let p = points(&r);
    assert_eq!(p.len(), 6, "{r:#}");
    assert_eq!(
        p.iter()
            .map(|q| q["run"].as_u64().unwrap())
            .collect::<Vec<_>>(),
        [1, 1, 2, 2, 3, 3],
        "repeats interleaved"
    );
    // Nothing is recreated after the first deploy: the two values are one configuration.
    for q in &p[1..] {
        assert_eq!(q["recreated"], serde_json::json!([]), "{q:#}");
    }
    let c = &r["comparison"];
    for v in c["values"].as_array().unwrap() {
        assert_eq!(v["runs"], 3, "{v:#}");
        let l = &v["levels"][0]["held_pct"];
        assert!(l["min"].as_f64() <= l["max"].as_f64(), "a range: {l:#}");
        assert_eq!(l["runs"], 3, "{l:#}");
    }
    let diffs = c["differences"].as_array().unwrap();
    assert!(!diffs.is_empty(), "{c:#}");
    for d in diffs {
        assert_eq!(d["measurable"], false, "{d:#}");
        assert!(
            d["sentence"]
                .as_str()
                .unwrap()
                .contains("no difference measurable"),
            "{d:#}"
        );
    }
    let html = report(&out, &r);
    assert!(html.contains("no difference measurable"));
    assert!(html.contains("K = 3"), "the report says how many runs");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the Docker engine, the fixture images and Chromium; bash scripts/test.sh runs it"]
async fn the_browser_is_timed_per_level_and_fails_where_the_app_is_paused() {
    let _serial = SERIAL.lock().await;
    docker().await;
    let s = Stack::new("swbrowse").await;
    let (x, stack, port) = (&*s.x, s.name.as_str(), Stack::port());
    let mut dep = single_sqlite(stack, &port);
    dep.extend(["--set", ROOM_CLEANUP]);
    assert_eq!(x.deploy_json(&dep)["ok"], true);
    x.ok(&[
        "prepare",
        "--stack",
        stack,
        "--accounts",
        "21",
        "--bcrypt-cost",
        "4",
    ]);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("bench");
    let results = out.join("results.json");
    let out_s = out.to_str().unwrap().to_string();
    let mut args = vec![
        "bench",
        "--stack",
        stack,
        "--levels",
        "10,20",
        "--continue-after-fail",
        "--browser-probe",
        "--out",
        &out_s,
        "--json",
    ];
    args.extend([
        "--hold", "8s", "--ramp", "1s", "--settle", "10s", "--sample", "500ms",
    ]);
    let app = s.container("app");
    let o = std::thread::scope(|t| {
        let pause = t.spawn(|| {
            // Level 1 recorded: pause the app for level 2, then let the bench's settling find it back.
            let deadline = Instant::now() + Duration::from_secs(120);
            loop {
                let done = std::fs::read_to_string(&results)
                    .ok()
                    .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
                    .and_then(|r| r["levels"].as_array().map(Vec::len))
                    .unwrap_or(0);
                if done >= 1 {
                    break;
                }
                assert!(Instant::now() < deadline, "level 1 never recorded");
                std::thread::sleep(Duration::from_millis(100));
            }
            // Paused until the bench is over: its browser waits for a plateau that never comes, then
            // times out at its step.
            Paused::pause(&app)
        });
        let o = x.run(&args);
        drop(pause.join().unwrap());
        o
    });
    let err = String::from_utf8_lossy(&o.stderr);
    let r: serde_json::Value =
        serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("bench JSON ({e}): {err}"));
    let levels = r["levels"].as_array().unwrap();
    assert_eq!(levels.len(), 2, "{r:#}");
    let b1 = &levels[0]["figures"]["browser"];
    assert!(
        b1["total_ms"].as_f64().is_some_and(|t| t > 0.0),
        "level 1: {b1:#}"
    );
    assert!(b1["failed"].is_null(), "level 1: {b1:#}");
    let b2 = &levels[1]["figures"]["browser"];
    assert!(b2["failed"].is_string(), "level 2: {b2:#}");
    assert!(
        levels[1]["reasons"]
            .as_array()
            .unwrap()
            .iter()
            .any(|x| x.as_str().unwrap().starts_with("browser")),
        "a failed objective: {:#}",
        levels[1]
    );
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    let total = format!("{:.0} ms (login ", b1["total_ms"].as_f64().unwrap());
    assert!(
        html.contains(&total),
        "the report shows level 1's time: {total}"
    );
    let step = b2["failed"].as_str().unwrap().split(':').next().unwrap();
    assert!(
        html.contains(&format!("did not finish: {step}")),
        "and level 2's failure at {step}"
    );
}

/// A `--set-secret` value of the killed sweep below: distinctive, to be looked for everywhere.
const SECRET: &str = "hunter2-sweep-Zq9";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the Docker engine, the fixture images and Chromium; bash scripts/test.sh runs it"]
async fn a_sweep_killed_at_point_two_resumes_and_covers_all_three() {
    let _serial = SERIAL.lock().await;
    docker().await;
    let s = Stack::new("swkill").await;
    let (x, stack, port) = (&*s.x, s.name.as_str(), Stack::port());
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("sweep");
    let out_s = out.to_str().unwrap().to_string();
    // Begun in a folder with its own exectl.yaml, a relative --images and a secret; resumed from
    // another folder.
    let (began, elsewhere) = (dir.path().join("study"), dir.path().join("elsewhere"));
    for d in [&began, &elsewhere] {
        std::fs::create_dir(d).unwrap();
    }
    std::fs::write(began.join("exectl.yaml"), "memory: 512m\n").unwrap();
    std::fs::copy(FIXTURES, began.join("images.yaml")).unwrap();
    let secret = format!("SWEEP_SECRET={SECRET}");
    let mut full = vec!["sweep"];
    full.extend(small(stack, &port, "5"));
    full.extend([
        "--vary",
        "env.SWEEP_MARK=1,2,3",
        "--browser-probe",
        "--run-id",
        "S-kill",
        "--images",
        "images.yaml",
        "--set-secret",
        &secret,
        "--health-interval",
        "1s",
        "--bcrypt-cost",
        "4",
        "--out",
        &out_s,
    ]);
    let log = |name: &str| std::fs::File::create(dir.path().join(name)).unwrap();
    let mut child = x
        .command(&full)
        .current_dir(&began)
        .stdout(log("killed.out"))
        .stderr(log("killed.err"))
        .spawn()
        .unwrap();
    // Point 2's bench started: kill the sweep as a crash would, with no chance to write anything.
    wait_for(&out.join("points/S-kill-02"), Duration::from_secs(180));
    child.kill().unwrap();
    child.wait().unwrap();
    let kept: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap()).unwrap();
    assert_eq!(points(&kept).len(), 1, "point 1 kept: {kept:#}");

    // Resumed from elsewhere, without --json: exectl.yaml and images.yaml as where it began, the
    // secret from the stack's .env.
    let resume = |json: bool| {
        let mut args = vec!["sweep", "--resume", "S-kill"];
        if json {
            args.push("--json");
        }
        x.command(&args).current_dir(&elsewhere).output().unwrap()
    };
    let o = resume(false);
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap()).unwrap();
    assert_eq!(o.status.code(), Some(0), "{err}\n{r:#}");
    let p = points(&r);
    assert_eq!(
        p.iter()
            .map(|q| q["values"][0].as_str().unwrap())
            .collect::<Vec<_>>(),
        ["1", "2", "3"],
        "{r:#}"
    );
    // Every level of every point has its browser time.
    for q in p {
        let b = &q["levels"][0]["browser"];
        assert!(b["total_ms"].as_f64().is_some_and(|t| t > 0.0), "{q:#}");
    }
    let html = report(&out, &r);
    assert!(
        html.contains("browser: login → first sync"),
        "a browser column"
    );
    for v in ["1", "2", "3"] {
        assert!(
            html.contains(&format!(">{v}<")),
            "the report covers value {v}"
        );
    }

    // The resumed points deployed the secret, and it is nowhere but in the stack's 0600 files: not in
    // the results, the reports, the run records, nor in anything the sweep said, with or without --json.
    let env = docker_cli(&[
        "inspect",
        "-f",
        "{{range .Config.Env}}{{println .}}{{end}}",
        &s.container("app"),
    ]);
    assert!(env.lines().any(|l| l == secret), "the app's env: {env}");
    let again = resume(true);
    assert_eq!(again.status.code(), Some(0));
    let printed: serde_json::Value = serde_json::from_slice(&again.stdout).unwrap();
    assert_eq!(points(&printed).len(), 3);
    let mut said = vec![o.stdout, o.stderr, again.stdout, again.stderr];
    for f in ["killed.out", "killed.err"] {
        said.push(std::fs::read(dir.path().join(f)).unwrap());
    }
    for text in said {
        assert!(!String::from_utf8_lossy(&text).contains(SECRET));
    }
    use std::os::unix::fs::PermissionsExt;
    for place in [x.state.path(), dir.path()] {
        for f in common::files_holding(place, SECRET) {
            let mode = std::fs::metadata(&f).unwrap().permissions().mode() & 0o777;
            assert!(
                f.starts_with(x.stack_dir(stack)) && mode == 0o600,
                "{} (mode {mode:o}) holds the secret",
                f.display()
            );
        }
    }
}
