//! `exectl prepare` failing for real in the middle of its writes never prints what it seeded: not the
//! bcrypt hash of the --password-file password, not an email or a project uuid. It names the statement
//! (its kind and tables) and the rows instead. Two real failures: a CHECK constraint PostgreSQL enforces
//! on one account (its error details the whole failing row, hash included), and MariaDB killed while a
//! large seed streams in (its client echoes the whole batch it lost: thousands of emails and the hash).

use crate::common;

use common::*;
use std::time::{Duration, Instant};

/// Nothing seeded in the text: no bcrypt hash, no email, no uuid, and not the password.
fn assert_no_values(err: &str, password: &str) {
    assert!(!err.contains("$2"), "a bcrypt hash in: {err}");
    assert!(!err.contains('@'), "an email in: {err}");
    assert!(!err.contains(password), "the password in: {err}");
    let uuid_like = err
        .split(|c: char| !c.is_ascii_hexdigit() && c != '-')
        .any(|w| w.len() == 36 && w.matches('-').count() == 4);
    assert!(!uuid_like, "a uuid in: {err}");
    assert!(err.len() < 2000, "{} bytes of error: {err}", err.len());
}

/// A single stack on `db`, deployed and ready.
fn deploy_single(x: &Exectl, stack: &str, db: &str) {
    let port = Stack::port();
    let out = x.deploy_json(&[
        "single",
        "--db",
        db,
        "--stack",
        stack,
        "--http-port",
        &port,
        "--nofile",
        "20000",
    ]);
    assert_eq!(out["ok"], true, "{out}");
}

fn password_file(dir: &std::path::Path, password: &str) -> String {
    let file = dir.join("pw");
    std::fs::write(&file, format!("{password}\n")).unwrap();
    file.display().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the Docker engine, the docker CLI and the fixture images; bash scripts/test.sh runs it"]
async fn a_row_the_database_refuses_is_named_by_statement_and_rows() {
    let d = docker().await;
    let s = Stack::new("prep-check").await;
    let (x, stack) = (&*s.x, s.name.as_str());
    deploy_single(x, stack, "postgres");
    // The app has migrated (it is ready): refuse one of the accounts prepare will write.
    sql(
        &d,
        stack,
        "postgres",
        "ALTER TABLE users ADD CONSTRAINT exectl_test_refuses_seven \
         CHECK (email <> 'bench-user-7@exelearning.net');",
    )
    .await;
    let dir = tempfile::tempdir().unwrap();
    let password = "Pw-check-9a7c";
    let pw = password_file(dir.path(), password);
    let (code, err) = failed(&x.run(&[
        "prepare",
        "--stack",
        stack,
        "--accounts",
        "20",
        "--password-file",
        &pw,
        "--bcrypt-cost",
        "4",
    ]));
    assert_eq!(code, Some(1), "{err}");
    assert_no_values(&err, password);
    assert!(
        // A first run: accounts with their projects and documents in one statement (seed::sql::Fresh).
        err.contains("error: writing accounts 1–20 of 20 (INSERT INTO users, projects and yjs_documents): postgres client"),
        "names the statement and the rows: {err}"
    );
    assert!(
        err.contains("check constraint \"exectl_test_refuses_seven\""),
        "keeps the database's own reason: {err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the Docker engine, the docker CLI, the fixture images and root; bash scripts/test.sh runs it"]
async fn a_database_lost_mid_write_prints_no_seeded_value() {
    let d = docker().await;
    let s = Stack::new("prep-lost").await;
    let (x, stack) = (&*s.x, s.name.as_str());
    deploy_single(x, stack, "mariadb");
    let dir = tempfile::tempdir().unwrap();
    let password = "Pw-lost-41be";
    let pw = password_file(dir.path(), password);
    // Large enough that the writes take several execs: the kill lands while one streams in.
    let prepare = x
        .command(&[
            "prepare",
            "--stack",
            stack,
            "--accounts",
            "150000",
            "--password-file",
            &pw,
            "--bcrypt-cost",
            "4",
            "--email-pattern",
            "lost-{i}@exelearning.net",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // As soon as prepare's first rows are committed (the app's own admin is there from the start),
    // kill the database's server process.
    let db = s.container("mariadb");
    let started = Instant::now();
    loop {
        let n = sql(
            &d,
            stack,
            "mariadb",
            "SELECT COUNT(*) FROM users WHERE email LIKE 'lost-%';",
        )
        .await;
        if n.trim().parse::<u64>().unwrap_or(0) > 0 {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(120), "no rows came");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let pid = docker_cli(&["inspect", "-f", "{{.State.Pid}}", &db]);
    let killed = std::process::Command::new("kill")
        .args(["-9", pid.trim()])
        .status()
        .unwrap();
    assert!(killed.success(), "kill -9 {pid}");
    let done = prepare.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&done.stderr).into_owned();
    assert_eq!(
        done.status.code(),
        Some(1),
        "prepare must fail once its database is gone: {err}"
    );
    assert_no_values(&err, password);
    assert!(
        err.contains("error: writing ") && err.contains(" of 150000 (INSERT INTO "),
        "names the statement and the rows: {err}"
    );
}
