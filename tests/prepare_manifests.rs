//! prepare's manifests on a real engine with the stand-in app: one manifest per --email-pattern in the
//! stack's folder (a second pattern never replaces the first), `--reset` of one pattern removes its rows
//! and its manifest only, a manifest of the layout before (files in the stack's folder itself) is kept
//! and moved into its pattern's folder, `--out DIR` also leaves a copy that `load --stack` finds, and
//! `load --stack` takes the newest unless `--pattern` picks another; a manifest of accounts --reset
//! cannot remove (--via api) is kept, and a --reset never takes another pattern's rows. One stack.

use crate::common;

use common::*;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

const STACK: &str = "hp-manifests";
const A: &str = "hp-a-{i}@exelearning.net";
const B: &str = "hp-b-{i}@exelearning.net";
const C: &str = "hp-c-{i}@exelearning.net";
const D: &str = "hp-d-{i}@exelearning.net";
/// Its emails match A's LIKE pattern.
const AX: &str = "hp-a-x{i}@exelearning.net";

/// Traefik may answer 404 for a moment after the deploy while it loads the stack's route: wait for
/// the app's login to answer through it (a 400 for an empty body) before seeding.
async fn wait_for_route(port: &str) {
    let client = reqwest::Client::new();
    for _ in 0..60 {
        let r = client
            .post(format!("http://127.0.0.1:{port}/api/auth/login"))
            .header("Host", format!("{STACK}.localhost"))
            .json(&serde_json::json!({}))
            .send()
            .await;
        if r.is_ok_and(|r| r.status() != 404) {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    }
    panic!("no route to the app through Traefik on port {port}");
}

fn prepare(x: &Exectl, pattern: &str, accounts: &str, extra: &[&str]) -> serde_json::Value {
    let mut args = vec![
        "prepare",
        "--stack",
        STACK,
        "--accounts",
        accounts,
        "--users-per-project",
        "1",
        "--email-pattern",
        pattern,
        "--bcrypt-cost",
        "4",
        "--json",
    ];
    args.extend(extra);
    serde_json::from_str(&x.ok(&args)).unwrap()
}

/// The folder under `<stack>/manifests/` whose pattern.json names `pattern`.
fn manifest_of(x: &Exectl, pattern: &str) -> Option<PathBuf> {
    let root = x.stack_dir(STACK).join("manifests");
    std::fs::read_dir(&root).ok()?.find_map(|e| {
        let dir = e.unwrap().path();
        let meta: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("pattern.json")).ok()?).ok()?;
        (meta["pattern"] == pattern).then_some(dir)
    })
}

fn accounts_in(dir: &Path) -> usize {
    let v: serde_json::Value = serde_json::from_str(&read(&dir.join("accounts.json"))).unwrap();
    v.as_array().unwrap().len()
}

fn mode(p: &Path) -> u32 {
    std::fs::metadata(p).unwrap().permissions().mode() & 0o777
}

/// Every file of a manifest folder is the owner's only, and so is the folder.
fn private(dir: &Path) {
    assert_eq!(mode(dir), 0o700, "{}", dir.display());
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        assert_eq!(mode(&p), 0o600, "{}", p.display());
    }
}

async fn users_like(d: &bollard::Docker, prefix: &str) -> u64 {
    sql(
        d,
        STACK,
        "postgres",
        &format!("SELECT COUNT(*) FROM users WHERE email LIKE '{prefix}%';\n"),
    )
    .await
    .trim()
    .parse()
    .unwrap()
}

/// `load` that must stop at its flag checks: which manifest it chose shows in the --users refusal
/// ("the manifest in DIR has only N accounts"), before a single dial.
fn load_refusal(x: &Exectl, extra: &[&str]) -> String {
    let mut args = vec!["load", "idle", "--stack", STACK, "--users", "100000"];
    args.extend(extra);
    let r = x.run(&args);
    let stderr = String::from_utf8_lossy(&r.stderr).into_owned();
    assert_eq!(r.status.code(), Some(2), "{args:?}: {stderr}");
    stderr
}

fn chose(stderr: &str, dir: &Path, accounts: usize) {
    assert!(
        stderr.contains(&format!(
            "the manifest in {} has only {accounts} accounts",
            dir.display()
        )),
        "expected {} ({accounts} accounts): {stderr}",
        dir.display()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the Docker engine and the fixture images; bash scripts/test.sh runs it"]
async fn one_manifest_per_pattern_reset_keeps_the_others_and_out_leaves_a_copy() {
    let d = docker().await;
    let x = Exectl::new();
    x.purge_leftovers(&[STACK]).await;
    let port = Stack::port();
    let deployed = x.deploy_json(&[
        "single",
        "--stack",
        STACK,
        "--db",
        "postgres",
        "--http-port",
        &port,
        "--nofile",
        "20000",
    ]);
    assert_eq!(deployed["ok"], true, "{deployed}");
    wait_for_route(&port).await;

    // Two patterns: two manifests, each with its own counts; neither replaces the other.
    prepare(&x, A, "300", &[]);
    prepare(&x, B, "5", &[]);
    let a = manifest_of(&x, A).expect("A's manifest is kept");
    let b = manifest_of(&x, B).expect("B's manifest");
    assert_ne!(a, b);
    assert_eq!(accounts_in(&a), 300);
    assert_eq!(accounts_in(&b), 5);
    private(&a);
    private(&b);
    assert!(
        !x.stack_dir(STACK).join("accounts.json").exists(),
        "nothing in the old single place"
    );

    // load --stack takes the newest (B); --pattern picks A; an unknown pattern names the choices.
    chose(&load_refusal(&x, &[]), &b, 5);
    chose(&load_refusal(&x, &["--pattern", A]), &a, 300);
    let r = x.run(&[
        "load",
        "idle",
        "--stack",
        STACK,
        "--pattern",
        "hp-z-{i}@exelearning.net",
    ]);
    let stderr = String::from_utf8_lossy(&r.stderr);
    assert_eq!(r.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("--pattern") && stderr.contains(A) && stderr.contains(B),
        "names the choices: {stderr}"
    );
    // A real, short run with A's accounts: the chosen manifest works.
    let out = x.run(&[
        "load",
        "login-burst",
        "--stack",
        STACK,
        "--pattern",
        A,
        "--users",
        "20",
        "--json",
        "--quiet",
    ]);
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(0), "{summary}");

    // --reset of B: B's rows and B's manifest go; A's rows and A's manifest stay.
    x.ok(&["prepare", "--stack", STACK, "--reset", "--email-pattern", B]);
    assert_eq!(users_like(&d, "hp-b-").await, 0);
    assert_eq!(users_like(&d, "hp-a-").await, 300);
    assert!(
        manifest_of(&x, B).is_none() && !b.exists(),
        "B's manifest removed"
    );
    assert_eq!(manifest_of(&x, A).as_deref(), Some(a.as_path()));
    assert_eq!(accounts_in(&a), 300);
    chose(&load_refusal(&x, &[]), &a, 300);

    // A stack prepared before per-pattern manifests: A's files in the stack's folder itself. load --stack
    // still reads them; a --reset of another pattern moves them into A's folder and keeps them.
    let stack_dir = x.stack_dir(STACK);
    for f in ["accounts.json", "accounts.csv", "projects.json"] {
        std::fs::rename(a.join(f), stack_dir.join(f)).unwrap();
    }
    std::fs::remove_dir_all(stack_dir.join("manifests")).unwrap();
    chose(&load_refusal(&x, &[]), &stack_dir, 300);
    let r = x.ok(&["prepare", "--stack", STACK, "--reset", "--email-pattern", B]);
    assert!(r.contains("removed 0 account(s)"), "{r}");
    let a = manifest_of(&x, A).expect("the old manifest moved into A's folder");
    assert_eq!(accounts_in(&a), 300);
    private(&a);
    assert!(!stack_dir.join("accounts.json").exists());
    assert_eq!(users_like(&d, "hp-a-").await, 300);
    chose(&load_refusal(&x, &[]), &a, 300);

    // --out DIR: the files go there and a copy stays in the stack's folder, which load --stack finds.
    let out_dir = tempfile::tempdir().unwrap();
    let o = out_dir.path().join("m");
    prepare(&x, C, "7", &["--mint-tokens", "--out", o.to_str().unwrap()]);
    assert_eq!(accounts_in(&o), 7);
    let c = manifest_of(&x, C).expect("a copy in the stack's folder");
    assert_eq!(accounts_in(&c), 7);
    private(&c);
    assert!(c.join("tokens.json").exists());
    chose(&load_refusal(&x, &[]), &c, 7);
    let out = x.run(&[
        "load", "idle", "--stack", STACK, "--tokens", "--hold", "1s", "--ramp", "0s", "--json",
        "--quiet",
    ]);
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(0), "{summary}");
    assert_eq!(summary["held_full_duration"], 7, "{summary}");

    // --reset of C with --out: both copies go; A's stays.
    x.ok(&[
        "prepare",
        "--stack",
        STACK,
        "--reset",
        "--email-pattern",
        C,
        "--out",
        o.to_str().unwrap(),
    ]);
    assert!(!o.join("accounts.json").exists() && manifest_of(&x, C).is_none());
    assert_eq!(accounts_in(&a), 300);

    // --via api makes accounts without prepare's marker, which --reset cannot remove: their manifest
    // stays, since it still describes rows in the database.
    prepare(&x, D, "2", &["--via", "api"]);
    let r = x.ok(&["prepare", "--stack", STACK, "--reset", "--email-pattern", D]);
    assert!(
        r.contains("kept the manifest in") && r.contains("2 of its 2 accounts are still"),
        "{r}"
    );
    assert_eq!(users_like(&d, "hp-d-").await, 2);
    assert_eq!(manifest_of(&x, D).map(|m| accounts_in(&m)), Some(2));

    // A's LIKE (hp-a-%@…) also matches another pattern's emails (hp-a-x0@…): --reset of A must
    // leave that pattern's rows and manifest.
    prepare(&x, AX, "3", &[]);
    x.ok(&["prepare", "--stack", STACK, "--reset", "--email-pattern", A]);
    assert_eq!(users_like(&d, "hp-a-x").await, 3);
    assert_eq!(users_like(&d, "hp-a-").await, 3, "only hp-a-x… left");
    assert!(manifest_of(&x, A).is_none());
    assert_eq!(manifest_of(&x, AX).map(|m| accounts_in(&m)), Some(3));

    x.ok(&["teardown", "--stack", STACK, "--purge"]);
    assert!(labelled(&d, STACK).await.is_empty());
}
