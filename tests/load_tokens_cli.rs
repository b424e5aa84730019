//! `exectl load --tokens` on a manifest whose minted tokens have expired exits 2 before any connection,
//! naming the file, the time and the fix; tokens that would expire during the run are warned about.

use std::net::TcpListener;
use std::path::Path;
use std::process::Command;

use exectl::load::manifest::{Account, Manifest, Project, Role, TokenEntry};

const UUID: &str = "0b8e6f6e-8a43-4f55-9d3c-2f1b7b0a9e11";

fn now_s() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

/// Two accounts with tokens minted at `iat` for `ttl` seconds.
fn manifest(dir: &Path, iat: i64, ttl: i64) {
    let accounts: Vec<Account> = (0..2)
        .map(|i| Account {
            email: format!("u{i}@x.org"),
            password: "pw".into(),
            project_uuid: UUID.into(),
            role: if i == 0 {
                Role::Owner
            } else {
                Role::Collaborator
            },
        })
        .collect();
    let projects = [Project {
        uuid: UUID.into(),
        owner_email: "u0@x.org".into(),
    }];
    let tokens: Vec<TokenEntry> = accounts
        .iter()
        .enumerate()
        .map(|(i, a)| TokenEntry {
            email: a.email.clone(),
            token: exectl::prepare::token::mint(b"secret", i as i64 + 1, &a.email, iat, ttl),
        })
        .collect();
    Manifest::write(dir, &accounts, &projects, Some(&tokens)).unwrap();
}

#[test]
fn expired_tokens_exit_2_before_any_connection() {
    let d = tempfile::tempdir().unwrap();
    // Minted two days ago for a day.
    manifest(d.path(), now_s() - 2 * 86_400, 86_400);
    let server = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", server.local_addr().unwrap());
    let out = Command::new(env!("CARGO_BIN_EXE_exectl"))
        .args(["load", "idle", "--url", &url, "--tokens", "--hold", "5s"])
        .arg("--manifest")
        .arg(d.path())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("invalid --tokens")
            && err.contains("tokens.json")
            && err.contains("tokens expired at ")
            && err.contains("(2 of 2)")
            && err.contains("--mint-tokens"),
        "{err}"
    );
    // Not one connection reached the server.
    server.set_nonblocking(true).unwrap();
    let accepted = server.accept();
    assert!(
        matches!(&accepted, Err(e) if e.kind() == std::io::ErrorKind::WouldBlock),
        "load connected before refusing: {accepted:?}"
    );
}

#[test]
fn tokens_that_expire_before_the_run_ends_are_warned_about() {
    let d = tempfile::tempdir().unwrap();
    // Valid for another minute; the run would take an hour.
    manifest(d.path(), now_s() - 3_540, 3_600);
    let out = Command::new(env!("CARGO_BIN_EXE_exectl"))
        // Nothing listens on port 1: the run fails fast after the warning.
        .args(["load", "idle", "--url", "http://127.0.0.1:1", "--tokens"])
        .args(["--hold", "1h", "--users", "1", "--quiet"])
        .arg("--manifest")
        .arg(d.path())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("warning: the tokens in ") && err.contains("before this run could end"),
        "{err}"
    );
}
