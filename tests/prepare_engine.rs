//! `exectl prepare` on a real Docker engine with the fixture images and the stand-in app: single with
//! MariaDB, PostgreSQL and SQLite, and ha. After `prepare --accounts 1000 --projects 250
//! --users-per-project 4`, every account logs in through the front door and holds its project's
//! WebSocket; a stranger is refused (4003); a re-run adds no rows; --reset leaves other users intact.

use crate::common;

use common::*;
use exectl::app::{Client, Endpoint};
use exectl::prepare::verify::{self, Hold};
use futures_util::StreamExt;
use std::path::Path;
use std::time::Duration;

/// deploy with the fixture images; the stack must come up healthy with the limits asked.
fn deploy(x: &Exectl, args: &[&str]) {
    let out = x.deploy_json(args);
    assert_eq!(out["ok"], true, "{out}");
}

/// Run a script in the stack's database as the app's user; rows as text.
async fn db_sql(d: &bollard::Docker, stack: &str, db: &str, script: &str) -> String {
    if db != "sqlite" {
        return sql(d, stack, db, script).await;
    }
    use std::io::Write;
    let mut child = std::process::Command::new("docker")
        .args([
            "run",
            "--rm",
            "-i",
            "--network",
            "none",
            "--user",
            "1000:1000",
            "--label",
            &format!("exectl.stack={stack}"),
            "-v",
            &format!("exectl-{stack}-app-data:/mnt/data"),
            "exectl-fixture/sqlite:3",
            "sqlite3",
            "-bail",
            "/mnt/data/exelearning.db",
        ])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(script.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{script}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

async fn count(d: &bollard::Docker, stack: &str, db: &str, what: &str) -> u64 {
    db_sql(d, stack, db, &format!("SELECT COUNT(*) FROM {what};\n"))
        .await
        .trim()
        .parse()
        .unwrap()
}

async fn table_counts(d: &bollard::Docker, stack: &str, db: &str) -> [u64; 3] {
    [
        count(d, stack, db, "users").await,
        count(d, stack, db, "projects").await,
        count(d, stack, db, "project_collaborators").await,
    ]
}

fn prepare_json(x: &Exectl, stack: &str, out: &Path, extra: &[&str]) -> serde_json::Value {
    let mut args = vec![
        "prepare",
        "--stack",
        stack,
        "--accounts",
        "1000",
        "--projects",
        "250",
        "--users-per-project",
        "4",
        "--bcrypt-cost",
        "4",
        "--mint-tokens",
        "--json",
        "--out",
        out.to_str().unwrap(),
    ];
    args.extend(extra);
    serde_json::from_str(&x.ok(&args)).unwrap()
}

fn read_json(p: &Path) -> serde_json::Value {
    serde_json::from_str(&read(p)).unwrap()
}

/// Every account of the manifest logs in through the front door and holds its project's socket.
async fn every_account_holds(door: &Endpoint, accounts: &serde_json::Value) {
    let client = Client::new(4, verify::TIMEOUTS);
    let checks: Vec<_> = futures_util::stream::iter(accounts.as_array().unwrap().iter().map(|a| {
        let client = client.clone();
        async move {
            let (email, pw, uuid) = (
                a["email"].as_str().unwrap(),
                a["password"].as_str().unwrap(),
                a["projectUuid"].as_str().unwrap(),
            );
            verify::check(&client, door, email, pw, uuid, a["role"].as_str().unwrap())
                .await
                .unwrap_or_else(|e| panic!("{email}: {e:#}"))
        }
    }))
    .buffer_unordered(200)
    .collect()
    .await;
    assert_eq!(checks.len(), 1000);
    let bad: Vec<_> = checks.iter().filter(|c| !c.ok()).collect();
    assert!(
        bad.is_empty(),
        "{} of 1000 not held, e.g. {:?}",
        bad.len(),
        bad.first()
    );
    assert_eq!(
        checks.iter().filter(|c| c.role == "collaborator").count(),
        750
    );
}

/// The acceptance scenario on one deployed stack.
async fn scenario(d: &bollard::Docker, x: &Exectl, stack: &str, db: &str, door: Endpoint) {
    let out = tempfile::tempdir().unwrap();
    // Someone else's account that matches the pattern: prepare must neither adopt nor remove it.
    let stranger_email = "bench-user-50000@exelearning.net";
    let stranger_project = match db {
        "sqlite" => None,
        _ => Some(seed_owner(d, stack, db, stranger_email, "pw-stranger").await),
    };
    let base = table_counts(d, stack, db).await;

    let first = prepare_json(x, stack, out.path(), &[]);
    assert_eq!(
        first["added"],
        serde_json::json!({"accounts": 1000, "projects": 250, "collaborators": 750, "documents": 250}),
        "{first}"
    );
    let checks = first["checks"].as_array().unwrap();
    assert_eq!(
        checks.len(),
        2,
        "a sampled owner and a sampled collaborator: {first}"
    );
    assert!(
        checks.iter().all(|c| c["socket"]["result"] == "held"),
        "{first}"
    );
    let after_first = table_counts(d, stack, db).await;
    assert_eq!(after_first, [base[0] + 1000, base[1] + 250, base[2] + 750]);

    // The manifest: 0600, the seed's shapes, one entry per account.
    for f in [
        "projects.json",
        "accounts.json",
        "accounts.csv",
        "tokens.json",
    ] {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(out.path().join(f))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600, "{f}");
    }
    let accounts = read_json(&out.path().join("accounts.json"));
    let projects = read_json(&out.path().join("projects.json"));
    assert_eq!(projects.as_array().unwrap().len(), 250);
    // Account a is in project a mod 250: project 1 is owned by account 1; the manifest lists members
    // project by project, 4 each: its entry 5 is account 251, a collaborator of project 1.
    assert_eq!(projects[1]["ownerEmail"], "bench-user-1@exelearning.net");
    assert_eq!(accounts[4]["email"], "bench-user-1@exelearning.net");
    assert_eq!(accounts[5]["email"], "bench-user-251@exelearning.net");
    assert_eq!(accounts[5]["projectUuid"], projects[1]["uuid"]);
    assert_eq!(accounts[5]["role"], "collaborator");
    assert_eq!(read(&out.path().join("accounts.csv")).lines().count(), 1001);

    every_account_holds(&door, &accounts).await;

    // A minted token opens the socket without a login.
    let tokens = read_json(&out.path().join("tokens.json"));
    assert_eq!(tokens[7]["email"], accounts[7]["email"]);
    let held = verify::hold(
        &Client::new(1, verify::TIMEOUTS),
        &door,
        accounts[7]["projectUuid"].as_str().unwrap(),
        tokens[7]["token"].as_str().unwrap(),
        verify::HOLD,
    )
    .await
    .unwrap();
    assert!(matches!(held, Hold::Held { .. }), "{held:?}");

    // A stranger to a private project is refused: account 0 (project 0) joins project 1.
    let token = verify::login(
        &Client::new(4, verify::TIMEOUTS),
        &door,
        "bench-user-0@exelearning.net",
        "Bench1234!",
    )
    .await
    .unwrap();
    let refused = verify::hold(
        &Client::new(1, verify::TIMEOUTS),
        &door,
        projects[1]["uuid"].as_str().unwrap(),
        &token,
        verify::HOLD,
    )
    .await
    .unwrap();
    assert!(
        matches!(refused, Hold::Closed { code: 4003, .. }),
        "{refused:?}"
    );

    // Re-running adds nothing.
    let again = prepare_json(x, stack, out.path(), &[]);
    assert_eq!(
        again["added"],
        serde_json::json!({"accounts": 0, "projects": 0, "collaborators": 0, "documents": 0}),
        "{again}"
    );
    assert_eq!(table_counts(d, stack, db).await, after_first);

    // --reset removes only what prepare made: the admin and the stranger stay, with the stranger's project.
    let r = x.ok(&[
        "prepare",
        "--stack",
        stack,
        "--reset",
        "--out",
        out.path().to_str().unwrap(),
    ]);
    assert!(
        r.contains("removed 1000 account(s) and 250 project(s)"),
        "{r}"
    );
    assert_eq!(table_counts(d, stack, db).await, base);
    let admin = db_sql(
        d,
        stack,
        db,
        "SELECT COUNT(*) FROM users WHERE email = 'exectl-admin@exelearning.net';\n",
    )
    .await;
    assert_eq!(admin.trim(), "1");
    if let Some(uuid) = stranger_project {
        let s = db_sql(
            d,
            stack,
            db,
            &format!("SELECT COUNT(*) FROM projects WHERE uuid = '{uuid}';\n"),
        )
        .await;
        assert_eq!(s.trim(), "1");
        login(
            &format!("http://{}", door.addr),
            door.host_header.as_deref(),
            stranger_email,
            "pw-stranger",
        )
        .await;
    }
    assert!(
        !out.path().join("accounts.json").exists(),
        "reset removes the manifest"
    );
}

fn single_door(port: &str, stack: &str) -> Endpoint {
    Endpoint::at(
        format!("127.0.0.1:{port}").parse().unwrap(),
        Some(format!("{stack}.localhost")),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the Docker engine, the docker CLI and the fixture images; bash scripts/test.sh runs it"]
async fn prepare_single_mariadb_and_bad_input() {
    let d = docker().await;
    // A guard: a failed assertion still tears the stack down and frees its port.
    let s = Stack::new("prep-maria").await;
    let (x, stack, port) = (&*s.x, s.name.as_str(), Stack::port());
    deploy(
        x,
        &[
            "single",
            "--stack",
            stack,
            "--db",
            "mariadb",
            "--http-port",
            &port,
            "--nofile",
            "20000",
        ],
    );
    scenario(&d, x, stack, "mariadb", single_door(&port, stack)).await;

    // Bad input: exit 2, the field named, nothing written.
    let out = tempfile::tempdir().unwrap();
    let o = out.path().to_str().unwrap();
    let before = table_counts(&d, stack, "mariadb").await;
    for (flags, field) in [
        (vec!["--accounts", "0"], "--accounts"),
        (
            vec!["--accounts", "10", "--users-per-project", "0"],
            "--users-per-project",
        ),
        (
            vec!["--accounts", "3", "--users-per-project", "4"],
            "--users-per-project",
        ),
    ] {
        let mut args = vec!["prepare", "--stack", stack, "--out", o];
        args.extend(flags);
        let r = x.run(&args);
        let stderr = String::from_utf8_lossy(&r.stderr);
        assert_eq!(r.status.code(), Some(2), "{stderr}");
        assert!(
            stderr.contains(field) && stderr.contains("fix:"),
            "{stderr}"
        );
    }
    let r = x.run(&[
        "prepare",
        "--stack",
        "hp-prep-none",
        "--accounts",
        "5",
        "--out",
        o,
    ]);
    let stderr = String::from_utf8_lossy(&r.stderr);
    assert_eq!(r.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("not deployed"), "{stderr}");
    // A database the app has not migrated: a clear error once the wait is over.
    sql(&d, stack, "mariadb", "DROP TABLE project_collaborators;\n").await;
    let r = x.run(&[
        "prepare",
        "--stack",
        stack,
        "--accounts",
        "5",
        "--out",
        o,
        "--schema-timeout",
        "2s",
    ]);
    let stderr = String::from_utf8_lossy(&r.stderr);
    assert_eq!(r.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("has not created its tables") && stderr.contains("3 of 4"),
        "{stderr}"
    );
    assert_eq!(count(&d, stack, "mariadb", "users").await, before[0]);
    assert_eq!(
        std::fs::read_dir(out.path()).unwrap().count(),
        0,
        "no manifest written"
    );

    x.ok(&["teardown", "--stack", stack, "--purge"]);
    assert!(labelled(&d, stack).await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the Docker engine, the docker CLI and the fixture images; bash scripts/test.sh runs it"]
async fn prepare_single_postgres_default_cost_and_public() {
    let d = docker().await;
    // A guard: a failed assertion still tears the stack down and frees its port.
    let s = Stack::new("prep-pg").await;
    let (x, stack, port) = (&*s.x, s.name.as_str(), Stack::port());
    deploy(
        x,
        &[
            "single",
            "--stack",
            stack,
            "--db",
            "postgres",
            "--http-port",
            &port,
            "--nofile",
            "20000",
        ],
    );
    scenario(&d, x, stack, "postgres", single_door(&port, stack)).await;

    // The default cost is the app's: $2b$10$. Public projects: anyone may join.
    let out = tempfile::tempdir().unwrap();
    x.ok(&[
        "prepare",
        "--stack",
        stack,
        "--accounts",
        "2",
        "--email-pattern",
        "cost-{i}@exelearning.net",
        "--visibility",
        "public",
        "--out",
        out.path().to_str().unwrap(),
    ]);
    let hash = sql(
        &d,
        stack,
        "postgres",
        "SELECT password FROM users WHERE email = 'cost-1@exelearning.net';\n",
    )
    .await;
    assert!(hash.trim().starts_with("$2b$10$"), "{hash}");
    let vis = sql(&d, stack, "postgres", "SELECT DISTINCT visibility || ' ' || status || ' ' || saved_once FROM projects p JOIN users u ON u.id = p.owner_id WHERE u.email LIKE 'cost-%';\n").await;
    assert_eq!(vis.trim(), "public active 1");

    // A larger N adds only the difference.
    let o = out.path().to_str().unwrap();
    let grow = |n: &'static str| {
        let args = [
            "prepare",
            "--stack",
            stack,
            "--accounts",
            n,
            "--email-pattern",
            "grow-{i}@exelearning.net",
            "--bcrypt-cost",
            "4",
            "--out",
            o,
            "--json",
        ];
        serde_json::from_str::<serde_json::Value>(&x.ok(&args)).unwrap()
    };
    assert_eq!(
        grow("8")["added"],
        serde_json::json!({"accounts": 8, "projects": 8, "collaborators": 0, "documents": 8})
    );
    assert_eq!(
        grow("12")["added"],
        serde_json::json!({"accounts": 4, "projects": 4, "collaborators": 0, "documents": 4})
    );

    // Another password than the earlier run's, or an account of the pattern prepare did not make: refused.
    let r = x.run(&[
        "prepare",
        "--stack",
        stack,
        "--accounts",
        "12",
        "--email-pattern",
        "grow-{i}@exelearning.net",
        "--password",
        "another-pw",
        "--out",
        o,
    ]);
    let stderr = String::from_utf8_lossy(&r.stderr);
    assert_eq!(r.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("--password") && !stderr.contains("another-pw"),
        "{stderr}"
    );
    seed_owner(&d, stack, "postgres", "clash-1@exelearning.net", "theirs").await;
    let before = table_counts(&d, stack, "postgres").await;
    let r = x.run(&[
        "prepare",
        "--stack",
        stack,
        "--accounts",
        "3",
        "--email-pattern",
        "clash-{i}@exelearning.net",
        "--out",
        o,
    ]);
    let stderr = String::from_utf8_lossy(&r.stderr);
    assert_eq!(r.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("clash-1@exelearning.net exists and was not made by prepare"),
        "{stderr}"
    );
    assert_eq!(
        table_counts(&d, stack, "postgres").await,
        before,
        "nothing written"
    );
    login(
        &format!("http://127.0.0.1:{port}"),
        Some(format!("{stack}.localhost").as_str()),
        "clash-1@exelearning.net",
        "theirs",
    )
    .await;

    x.ok(&["teardown", "--stack", stack, "--purge"]);
    assert!(labelled(&d, stack).await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the Docker engine, the docker CLI and the fixture images; bash scripts/test.sh runs it"]
async fn prepare_single_sqlite_through_a_one_shot() {
    let d = docker().await;
    // A guard: a failed assertion still tears the stack down and frees its port.
    let s = Stack::new("prep-lite").await;
    let (x, stack, port) = (&*s.x, s.name.as_str(), Stack::port());
    deploy(
        x,
        &[
            "single",
            "--stack",
            stack,
            "--db",
            "sqlite",
            "--http-port",
            &port,
            "--nofile",
            "20000",
        ],
    );
    scenario(&d, x, stack, "sqlite", single_door(&port, stack)).await;
    // The one-shot is gone; the app's files in its volume still belong to the app's user.
    let o = exectl::engine::observe::observe(&d, stack).await.unwrap();
    assert!(
        o.containers.iter().all(|c| c.service != "prepare-sqlite"),
        "{:?}",
        o.containers
    );
    let owners = db_sql(
        &d,
        stack,
        "sqlite",
        ".shell stat -c '%u %n' /mnt/data/exelearning.db\n",
    )
    .await;
    assert!(owners.starts_with("1000 "), "{owners}");
    x.ok(&["teardown", "--stack", stack, "--purge"]);
    assert!(labelled(&d, stack).await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the Docker engine, the docker CLI and the fixture images; bash scripts/test.sh runs it"]
async fn prepare_ha_through_the_lb() {
    let d = docker().await;
    // A guard: a failed assertion still tears the stack down and frees its port for the next suite.
    let s = Stack::new("prep-ha").await;
    let (x, stack, port) = (&*s.x, s.name.as_str(), Stack::port());
    let mut args = vec![
        "ha",
        "--stack",
        stack,
        "--lb-port",
        &port,
        "--cpus",
        "1",
        "--memory",
        "512m",
    ];
    args.extend(HA_LIMITS);
    deploy(x, &args);
    let door = Endpoint::at(format!("127.0.0.1:{port}").parse().unwrap(), None);
    scenario(&d, x, stack, "postgres", door).await;
    x.ok(&["teardown", "--stack", stack, "--purge"]);
    assert!(labelled(&d, stack).await.is_empty());
}

#[test]
fn hold_duration_is_long_enough_to_see_a_refusal() {
    assert!(verify::HOLD >= Duration::from_millis(500));
}
