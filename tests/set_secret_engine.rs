//! `--set-secret` on the real engine: the value reaches the app's environment through the 0600 .env, and
//! no other file exectl writes (bundle, state, run records) nor any output holds it.

use crate::common;

use common::{docker, labelled, Stack, FIXTURES};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

/// Every file below `dir`, with its mode.
fn files(dir: &Path, out: &mut Vec<(std::path::PathBuf, u32)>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let m = std::fs::symlink_metadata(e.path()).unwrap();
        if m.is_dir() {
            files(&e.path(), out);
        } else {
            out.push((e.path(), m.permissions().mode() & 0o777));
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the Docker engine and the fixture images; bash scripts/test.sh runs it"]
async fn set_secret_reaches_the_app_and_nothing_else() {
    let d = docker().await;
    let s = Stack::new("secret").await;
    let (x, port) = (&*s.x, Stack::port());
    let stack = s.name.as_str();
    let (first, second) = ("hrFirst-9f3c2a71e5", "hrSecond-0b8d4e6a2c");
    // `flag` is `KEY=VALUE`, or a bare `KEY` whose value exectl reads from its environment.
    let spec = |flag: &str| {
        vec![
            "single".to_string(),
            "--stack".into(),
            stack.into(),
            "--db".into(),
            "sqlite".into(),
            "--http-port".into(),
            port.clone(),
            "--nofile".into(),
            "20000".into(),
            "--images".into(),
            FIXTURES.into(),
            "--health-interval".into(),
            "1s".into(),
            "--set-secret".into(),
            flag.to_string(),
            "--set".into(),
            "PLAIN_NOTE=recorded".into(),
        ]
    };
    let mut outputs = String::new();
    // exectl's environment holds the second value (for the bare flag), never its command line.
    let mut run = |cmd: &[&str], extra: &[String]| -> String {
        let mut args: Vec<&str> = cmd.to_vec();
        args.extend(extra.iter().map(String::as_str));
        let out = x
            .command(&args)
            .env("SMTP_PASSWORD", second)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout).to_string();
        let stderr = String::from_utf8_lossy(&out.stderr).to_string();
        assert!(out.status.success(), "{args:?}: {stdout}\n{stderr}");
        outputs.push_str(&stdout);
        outputs.push_str(&stderr);
        stdout
    };
    let first_flag = format!("SMTP_PASSWORD={first}");
    run(&["plan"], &spec(&first_flag));
    run(&["plan", "--json"], &spec(&first_flag));
    let a: serde_json::Value =
        serde_json::from_str(&run(&["deploy", "--json"], &spec(&first_flag))).unwrap();
    assert_eq!(a["ok"], true, "{a}");
    // The app really has it, from .env through compose.yaml's ${SMTP_PASSWORD}.
    let info = d
        .inspect_container(&s.container("app"), None)
        .await
        .unwrap();
    let env = info.config.unwrap().env.unwrap();
    assert!(
        env.contains(&format!("SMTP_PASSWORD={first}")),
        "app environment lacks the secret"
    );
    // A bare --set-secret KEY: the value from exectl's environment, out of the command line `ps` shows.
    run(&["deploy"], &spec("SMTP_PASSWORD"));
    let info = d
        .inspect_container(&s.container("app"), None)
        .await
        .unwrap();
    assert!(
        info.config
            .unwrap()
            .env
            .unwrap()
            .contains(&format!("SMTP_PASSWORD={second}")),
        "the app lacks the value of the bare --set-secret's environment variable"
    );
    let ids: Vec<serde_json::Value> =
        serde_json::from_str(&run(&["runs", "list", "--json"], &[])).unwrap();
    assert_eq!(ids.len(), 2, "{ids:?}");
    let (ra, rb) = (
        ids[0]["id"].as_str().unwrap().to_string(),
        ids[1]["id"].as_str().unwrap().to_string(),
    );
    run(&["runs", "show"], std::slice::from_ref(&ra));
    let diff = run(&["runs", "diff"], &[ra.clone(), rb.clone()]);
    // The change is visible (a fingerprint differs), the values are not.
    assert!(
        diff.contains("knobs.secret_env.SMTP_PASSWORD") && diff.contains("<secret sha256:"),
        "{diff}"
    );
    assert!(
        diff.contains("1 variable changed: secret_env.SMTP_PASSWORD"),
        "{diff}"
    );
    run(&["runs", "diff", "--json"], &[ra, rb]);
    run(&["status", "--stack", stack, "--json"], &[]);

    for secret in [first, second] {
        assert!(
            !outputs.contains(secret),
            "a --set-secret value was printed"
        );
    }
    let mut all = Vec::new();
    files(x.state.path(), &mut all);
    assert!(all.iter().any(|(p, _)| p.ends_with("exectl.lock.json")));
    assert!(all
        .iter()
        .any(|(p, _)| p.to_string_lossy().contains("/runs/")));
    for (path, mode) in &all {
        let bytes = std::fs::read(path).unwrap();
        let text = String::from_utf8_lossy(&bytes);
        if path.file_name().unwrap() == ".env" {
            assert_eq!(*mode, 0o600, "{}", path.display());
            continue;
        }
        for secret in [first, second] {
            assert!(
                !text.contains(secret),
                "{} holds a --set-secret value",
                path.display()
            );
        }
    }
    // Plain --set values are recorded (README says so).
    let record = std::fs::read_dir(x.state.path().join("runs"))
        .unwrap()
        .flatten()
        .next()
        .unwrap()
        .path();
    assert!(std::fs::read_to_string(record)
        .unwrap()
        .contains("\"recorded\""));

    x.ok(&["teardown", "--stack", stack, "--purge"]);
    assert!(labelled(&d, stack).await.is_empty());
}
