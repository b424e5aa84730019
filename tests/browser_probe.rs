//! The real-browser probe against a real stack: headless Chromium logs in, opens the project and gets
//! its first Yjs sync through single's Traefik (at `STACK.localhost`, which Chromium resolves itself);
//! with the app paused, it names the step that did not finish and returns within its timeout.

use crate::common;

use std::path::PathBuf;
use std::time::Duration;

use common::{single_sqlite, Paused, Stack};
use exectl::browser::{run, Probe};
use exectl::load::manifest::{Manifest, Role};
use tokio::time::Instant;

/// The one manifest `prepare` wrote under the stack's folder.
fn manifest_dir(s: &Stack) -> PathBuf {
    let root = s.x.stack_dir(&s.name).join("manifests");
    let dirs: Vec<PathBuf> = std::fs::read_dir(&root)
        .unwrap_or_else(|e| panic!("{}: {e}", root.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    assert_eq!(dirs.len(), 1, "{dirs:?}");
    dirs[0].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the Docker engine, the fixture images and chromium; bash scripts/test.sh runs it"]
async fn a_browser_logs_in_opens_and_syncs_and_names_the_step_a_paused_app_stops() {
    let s = Stack::new("browser").await;
    let port = Stack::port();
    let d = s.x.deploy_json(&single_sqlite(&s.name, &port));
    assert_eq!(d["ok"], true, "{d}");
    s.x.ok(&[
        "prepare",
        "--stack",
        &s.name,
        "--accounts",
        "4",
        "--users-per-project",
        "2",
        "--bcrypt-cost",
        "4",
        "--json",
    ]);
    let m = Manifest::read(&manifest_dir(&s), false).unwrap();
    let owner = m
        .accounts
        .iter()
        .find(|a| a.role == Role::Owner)
        .expect("an owner among the accounts");
    let probe = Probe {
        chromium: "/usr/bin/chromium".into(),
        base_url: format!("http://{}.localhost:{port}", s.name),
        email: owner.email.clone(),
        password: owner.password.clone(),
        project_uuid: owner.project_uuid.clone(),
        timeout: Duration::from_secs(30),
    };

    // Twice: the first run pays for Chromium's cold start (its files read from disk).
    for round in 1..=2 {
        let started = Instant::now();
        let r = run(&probe).await;
        let took = started.elapsed();
        eprintln!("probe {round}: {r:?} in {took:?}");
        assert!(r.finished(), "{r:?}");
        let (l, o, y, t) = (
            r.login_ms.unwrap(),
            r.open_ms.unwrap(),
            r.sync_ms.unwrap(),
            r.total_ms.unwrap(),
        );
        assert!(l > 0.0 && o > 0.0 && y > 0.0, "{r:?}");
        assert!((t - (l + o + y)).abs() < 1e-6, "{r:?}");
        assert!(took < probe.timeout, "{took:?}");
        assert!(!format!("{r:?}").contains(&owner.password));
    }

    // A collaborator: the metadata route is the owner's (403), the document and the room are theirs too.
    let collaborator = m
        .accounts
        .iter()
        .find(|a| a.role == Role::Collaborator)
        .expect("a collaborator among the accounts");
    let r = run(&Probe {
        email: collaborator.email.clone(),
        password: collaborator.password.clone(),
        project_uuid: collaborator.project_uuid.clone(),
        ..probe.clone()
    })
    .await;
    eprintln!("collaborator: {r:?}");
    assert!(r.finished(), "{r:?}");

    // A project that does not exist: open fails, by name.
    let r = run(&Probe {
        project_uuid: "0b9d3c1e-8f55-4a86-9a43-7a1c1b2d3e4f".into(),
        ..probe.clone()
    })
    .await;
    assert_eq!(r.failed_step(), Some("open"), "{r:?}");
    assert!(r.login_ms.is_some(), "{r:?}");

    // A wrong password: login fails, by name, with the app's answer.
    let wrong = run(&Probe {
        password: "not-the-password".into(),
        ..probe.clone()
    })
    .await;
    assert_eq!(wrong.failed_step(), Some("login"), "{wrong:?}");
    assert!(
        wrong.failed.as_deref().unwrap().contains("401"),
        "{wrong:?}"
    );

    // The app paused: the proxy takes the connections, nothing answers.
    let app = s.container("app");
    let paused = Paused::pause(&app);
    let timeout = Duration::from_secs(5);
    let started = Instant::now();
    let r = run(&Probe {
        timeout,
        ..probe.clone()
    })
    .await;
    let took = started.elapsed();
    eprintln!("paused: {r:?} in {took:?}");
    assert!(!r.finished(), "{r:?}");
    assert!(
        matches!(r.failed_step(), Some("login" | "open" | "sync")),
        "{r:?}"
    );
    assert!(took <= timeout + Duration::from_secs(5), "{took:?}");
    drop(paused);

    // Unpaused, it works again.
    let r = run(&probe).await;
    assert!(r.finished(), "{r:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the Docker engine, the fixture images and chromium; bash scripts/test.sh runs it"]
async fn a_browser_syncs_through_has_nginx_at_its_loopback_port() {
    let s = Stack::new("browser-ha").await;
    let port = Stack::port();
    let mut args = vec![
        "ha",
        "--stack",
        &s.name,
        "--instances",
        "2",
        "--lb-port",
        &port,
        "--cpus",
        "1",
        "--memory",
        "256m",
    ];
    args.extend(common::HA_LIMITS);
    let d = s.x.deploy_json(&args);
    assert_eq!(d["ok"], true, "{d}");
    s.x.ok(&[
        "prepare",
        "--stack",
        &s.name,
        "--accounts",
        "2",
        "--bcrypt-cost",
        "4",
        "--json",
    ]);
    let m = Manifest::read(&manifest_dir(&s), false).unwrap();
    let a = &m.accounts[0];
    let r = run(&Probe {
        chromium: "/usr/bin/chromium".into(),
        base_url: format!("http://127.0.0.1:{port}"),
        email: a.email.clone(),
        password: a.password.clone(),
        project_uuid: a.project_uuid.clone(),
        timeout: Duration::from_secs(30),
    })
    .await;
    eprintln!("ha: {r:?}");
    assert!(r.finished(), "{r:?}");
}

/// A front door that answers only `routes` (path prefix → JSON body) and holds every other request
/// open without a word: an app stuck at one step.
async fn stuck_after(routes: &'static [(&'static str, &'static str)]) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut conn, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = vec![0u8; 16 << 10];
                let mut len = 0;
                // One request per connection: read its head, answer it (or not), close.
                while !buf[..len].windows(4).any(|w| w == b"\r\n\r\n") {
                    match conn.read(&mut buf[len..]).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => len += n,
                    }
                }
                let head = String::from_utf8_lossy(&buf[..len]).to_string();
                let path = head.split_whitespace().nth(1).unwrap_or("").to_string();
                match routes.iter().find(|(p, _)| path.starts_with(p)) {
                    Some((_, body)) => {
                        let answer = format!(
                            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                            body.len()
                        );
                        let _ = conn.write_all(answer.as_bytes()).await;
                    }
                    None => tokio::time::sleep(Duration::from_secs(60)).await,
                }
            });
        }
    });
    format!("http://{addr}")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs chromium; bash scripts/test.sh runs it"]
async fn an_app_stuck_at_a_step_gets_that_step_named_within_the_timeout() {
    const PAGE: (&str, &str) = ("/healthcheck", r#"{"status":"ok"}"#);
    const LOGIN: (&str, &str) = (
        "/api/auth/login",
        r#"{"access_token":"t0k3n","user":{"id":1}}"#,
    );
    const META: (&str, &str) = ("/api/v1/projects/", r#"{"success":true,"data":{}}"#);
    const DOC: (&str, &str) = ("/api/projects/uuid/", "");
    let cases: [(&'static [(&str, &str)], &str); 3] = [
        (&[PAGE], "login"),
        (&[PAGE, LOGIN], "open"),
        (&[PAGE, LOGIN, META, DOC], "sync"),
    ];
    for (routes, step) in cases {
        let timeout = Duration::from_secs(4);
        let probe = Probe {
            chromium: "/usr/bin/chromium".into(),
            base_url: stuck_after(routes).await,
            email: "someone@example.org".into(),
            password: "s3cret-pw".into(),
            project_uuid: "0b9d3c1e-8f55-4a86-9a43-7a1c1b2d3e4f".into(),
            timeout,
        };
        let started = Instant::now();
        let r = run(&probe).await;
        let took = started.elapsed();
        eprintln!("stuck at {step}: {r:?} in {took:?}");
        assert_eq!(r.failed_step(), Some(step), "{r:?}");
        assert!(
            r.failed
                .as_deref()
                .unwrap()
                .contains("by the probe's timeout"),
            "{r:?}"
        );
        assert!(took <= timeout + Duration::from_secs(5), "{took:?}");
        let shown = format!("{r:?}");
        assert!(
            !shown.contains("s3cret-pw") && !shown.contains("t0k3n"),
            "{shown}"
        );
        match step {
            "open" => assert!(r.login_ms.is_some(), "{r:?}"),
            "sync" => assert!(r.login_ms.is_some() && r.open_ms.is_some(), "{r:?}"),
            _ => {}
        }
    }
}
