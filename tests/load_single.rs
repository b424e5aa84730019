//! `exectl load` on a single stack, whose Traefik routes by Host: `--stack` sends the stack's host,
//! `--url http://NAME.localhost:PORT` and `--url ... --host-header NAME` send theirs, and a bare
//! `--url http://127.0.0.1:PORT` (every login a 404) is refused up front with a fix that works — which
//! this test then runs. Real engine, stand-in app, SQLite.

use crate::common;

use common::*;

const USERS: &str = "8";

fn load(x: &Exectl, door: &[&str], manifest: &str) -> (Option<i32>, serde_json::Value, String) {
    let mut args = vec!["load", "idle"];
    args.extend(door);
    args.extend([
        "--manifest",
        manifest,
        "--users",
        USERS,
        "--hold",
        "2s",
        "--ramp",
        "500ms",
        "--json",
        "--quiet",
    ]);
    let out = x.run(&args);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let json = serde_json::from_slice(&out.stdout).unwrap_or(serde_json::Value::Null);
    (out.status.code(), json, stderr)
}

fn assert_all_held(r: (Option<i32>, serde_json::Value, String), stack: &str, how: &str) {
    let (code, j, stderr) = r;
    assert_eq!(code, Some(0), "{how}: {j:#}\n{stderr}");
    assert_eq!(j["held_full_duration"], 8, "{how}: {j:#}");
    assert_eq!(j["login_ms"]["count"], 8, "{how}: {j:#}");
    assert_eq!(
        j["settings"]["host_header"],
        format!("{stack}.localhost"),
        "{how}: {j:#}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the Docker engine and the fixture images; bash scripts/test.sh runs it"]
async fn load_on_a_single_stack_sends_its_host() {
    let d = docker().await;
    let st = Stack::new("single").await;
    let (x, stack, port) = (&st.x, st.name.as_str(), Stack::port());
    let deployed = x.deploy_json(&[
        "single",
        "--stack",
        stack,
        "--db",
        "sqlite",
        "--http-port",
        &port,
        "--nofile",
        "20000",
    ]);
    assert_eq!(deployed["ok"], true, "{deployed}");
    let prepared: serde_json::Value = serde_json::from_str(&x.ok(&[
        "prepare",
        "--stack",
        stack,
        "--accounts",
        USERS,
        "--users-per-project",
        "1",
        "--bcrypt-cost",
        "4",
        "--json",
    ]))
    .unwrap();
    // The folder prepare wrote this pattern's manifest to (one per pattern under the stack's folder).
    let manifest = prepared["manifest"].as_str().unwrap();

    // By name: the stack's recorded host goes with every login and dial.
    assert_all_held(load(x, &["--stack", stack], manifest), stack, "--stack");

    // The bare address: Traefik 404s every request, so it is refused before any load, exit 2, and the
    // fix names this stack and a URL that reaches it.
    let bare = format!("http://127.0.0.1:{port}");
    let (code, _, stderr) = load(x, &["--url", &bare], manifest);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("--url") && stderr.contains("404"),
        "{stderr}"
    );
    assert!(stderr.contains(&format!("--stack {stack}")), "{stderr}");
    let fixed = format!("http://{stack}.localhost:{port}");
    assert!(
        stderr.contains(&format!("--url {fixed}")),
        "the fix names the URL: {stderr}"
    );

    // The printed fix works: a *.localhost URL is dialled on loopback with its name as Host.
    assert_all_held(
        load(x, &["--url", &fixed], manifest),
        stack,
        "the printed --url",
    );
    // And the address with an explicit Host.
    let host = format!("{stack}.localhost");
    assert_all_held(
        load(x, &["--url", &bare, "--host-header", &host], manifest),
        stack,
        "--host-header",
    );
    // A Host the front door does not route: refused naming --host-header.
    let (code, _, stderr) = load(
        x,
        &["--url", &bare, "--host-header", "elsewhere.localhost"],
        manifest,
    );
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("--host-header"), "{stderr}");

    x.ok(&["teardown", "--stack", stack, "--purge"]);
    assert!(labelled(&d, stack).await.is_empty());
}
