//! `exectl prepare --via api` on a real Docker engine: a single SQLite stack with the stand-in app.
//! Accounts, projects, visibility, saved_once and collaborators are made through the app's HTTP API at
//! the front door (Traefik); every account then logs in and holds its project's WebSocket, an account
//! of another project is refused (4003), and a re-run makes nothing new and keeps the app's uuids.

mod common;

use common::*;
use exectl::app::{Client, Endpoint};
use exectl::prepare::verify::{self, Hold};
use futures_util::StreamExt;
use std::path::Path;

const STACK: &str = "t-prep-api";
const PORT: &str = "18380";

fn prepare(x: &Exectl, out: &Path) -> (serde_json::Value, String) {
    let args = [
        "prepare",
        "--via",
        "api",
        "--stack",
        STACK,
        "--accounts",
        "40",
        "--projects",
        "10",
        "--users-per-project",
        "4",
        "--bcrypt-cost",
        "4",
        "--mint-tokens",
        "--json",
        "--out",
        out.to_str().unwrap(),
    ];
    let o = x.run(&args);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    );
    assert!(
        o.status.success(),
        "prepare --via api failed:\n{stdout}\n{stderr}"
    );
    (serde_json::from_str(&stdout).unwrap(), stderr)
}

fn read_json(p: &Path) -> serde_json::Value {
    serde_json::from_str(&read(p)).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the Docker engine and the fixture images; bash scripts/test.sh runs it"]
async fn prepare_via_api_on_single_sqlite() {
    let d = docker().await;
    let x = Exectl::new();
    x.purge_leftovers(&[STACK]).await;
    let out = x.deploy_json(&[
        "single",
        "--stack",
        STACK,
        "--db",
        "sqlite",
        "--http-port",
        PORT,
        "--nofile",
        "20000",
    ]);
    assert_eq!(out["ok"], true, "{out}");
    let door = Endpoint::at(
        format!("127.0.0.1:{PORT}").parse().unwrap(),
        Some(format!("{STACK}.localhost")),
    );
    let dir = tempfile::tempdir().unwrap();

    let (first, stderr) = prepare(&x, dir.path());
    assert!(
        stderr.contains("--bcrypt-cost is not used with --via api"),
        "{stderr}"
    );
    assert_eq!(first["via"], "api", "{first}");
    assert_eq!(
        first["added"],
        serde_json::json!({"accounts": 40, "projects": 10, "collaborators": 30}),
        "{first}"
    );
    assert_eq!(
        first["before"],
        serde_json::json!({"accounts": 0, "projects": 0, "collaborators": 0})
    );
    let checks = first["checks"].as_array().unwrap();
    assert_eq!(checks.len(), 2, "{first}");
    assert!(
        checks.iter().all(|c| c["socket"]["result"] == "held"),
        "{first}"
    );

    // The manifest, in the SQL path's shapes, naming the uuids the app chose.
    for f in [
        "projects.json",
        "accounts.json",
        "accounts.csv",
        "tokens.json",
    ] {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(dir.path().join(f))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600, "{f}");
    }
    let accounts = read_json(&dir.path().join("accounts.json"));
    let projects = read_json(&dir.path().join("projects.json"));
    assert_eq!(accounts.as_array().unwrap().len(), 40);
    assert_eq!(projects.as_array().unwrap().len(), 10);
    // Account a is in project a mod 10: project 1 is owned by account 1; the manifest lists members
    // project by project, 4 each: its entry 5 is account 11, a collaborator of project 1.
    assert_eq!(projects[1]["ownerEmail"], "bench-user-1@exelearning.net");
    assert_eq!(accounts[4]["email"], "bench-user-1@exelearning.net");
    assert_eq!(accounts[5]["email"], "bench-user-11@exelearning.net");
    assert_eq!(accounts[5]["projectUuid"], projects[1]["uuid"]);
    assert_eq!(accounts[5]["role"], "collaborator");
    assert_eq!(read(&dir.path().join("accounts.csv")).lines().count(), 41);

    // Every account logs in through the front door and holds its project's socket.
    let client = Client::new(4, verify::TIMEOUTS);
    let all: Vec<verify::Check> =
        futures_util::stream::iter(accounts.as_array().unwrap().iter().map(|a| {
            let (client, door) = (client.clone(), &door);
            async move {
                let email = a["email"].as_str().unwrap();
                verify::check(
                    &client,
                    door,
                    email,
                    a["password"].as_str().unwrap(),
                    a["projectUuid"].as_str().unwrap(),
                    a["role"].as_str().unwrap(),
                )
                .await
                .unwrap_or_else(|e| panic!("{email}: {e:#}"))
            }
        }))
        .buffer_unordered(40)
        .collect()
        .await;
    let bad: Vec<_> = all.iter().filter(|c| !c.ok()).collect();
    assert!(
        bad.is_empty(),
        "{} of 40 not held, e.g. {:?}",
        bad.len(),
        bad.first()
    );
    assert_eq!(all.iter().filter(|c| c.role == "collaborator").count(), 30);

    // A stranger to project 1 (account 0, of project 0) is refused.
    let t0 = verify::login(&client, &door, "bench-user-0@exelearning.net", "Bench1234!")
        .await
        .unwrap();
    let refused = verify::hold(
        &client,
        &door,
        projects[1]["uuid"].as_str().unwrap(),
        &t0,
        verify::HOLD,
    )
    .await
    .unwrap();
    assert!(
        matches!(refused, Hold::Closed { code: 4003, .. }),
        "{refused:?}"
    );

    // The owner sees its project saved (saved_once) through the API; a minted token opens the socket.
    let tokens = read_json(&dir.path().join("tokens.json"));
    assert_eq!(
        tokens[4]["email"], "bench-user-1@exelearning.net",
        "project 1's owner"
    );
    let resp = reqwest::Client::new()
        .get(format!(
            "http://{}/api/v1/projects/{}",
            door.addr,
            projects[1]["uuid"].as_str().unwrap()
        ))
        .header("Host", door.host_header.clone().unwrap())
        .bearer_auth(tokens[4]["token"].as_str().unwrap())
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let body: serde_json::Value = resp.json().await.unwrap();
    assert_eq!(body["data"]["saved_once"], true, "{body}");
    let held = verify::hold(
        &client,
        &door,
        accounts[7]["projectUuid"].as_str().unwrap(),
        tokens[7]["token"].as_str().unwrap(),
        verify::HOLD,
    )
    .await
    .unwrap();
    assert!(matches!(held, Hold::Held { .. }), "{held:?}");

    // A re-run finds everything and makes nothing; the uuids stay the app's.
    let (second, _) = prepare(&x, dir.path());
    assert_eq!(
        second["added"],
        serde_json::json!({"accounts": 0, "projects": 0, "collaborators": 0}),
        "{second}"
    );
    assert_eq!(
        second["before"],
        serde_json::json!({"accounts": 40, "projects": 10, "collaborators": 30})
    );
    assert_eq!(read_json(&dir.path().join("projects.json")), projects);

    // --reset goes through SQL only: refused with --via api, naming the flag.
    let o = x.run(&["prepare", "--stack", STACK, "--reset", "--via", "api"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--via"));

    x.ok(&["teardown", "--stack", STACK, "--purge"]);
    assert!(labelled(&d, STACK).await.is_empty());
}
