//! A SUT whose sshd has no sftp subsystem (hardened hosts drop the `Subsystem sftp` line): exectl uploads
//! by exec instead (`cat` into a private file beside, `chmod`, `mv`). Through tests/sut/sut.sh's third
//! sshd (2224), a single stack is deployed with its bundle uploaded that way, byte for byte and mode for
//! mode (.env 0600), `host tune --check` stages ansible-free/ the same way, and teardown leaves nothing.

use crate::common;

use common::sut::Sut;
use common::*;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

const STACK: &str = "hh-nosftp";

fn text(out: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Every file under `dir`, relative, with its mode.
fn files_with_modes(dir: &Path) -> Vec<(PathBuf, u32)> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                todo.push(p);
            } else {
                let mode = std::fs::metadata(&p).unwrap().permissions().mode() & 0o777;
                out.push((p.strip_prefix(dir).unwrap().to_path_buf(), mode));
            }
        }
    }
    out.sort();
    out
}

/// ARGS then the target flags.
fn with_target<'a>(target: &[&'a str], args: &[&'a str]) -> Vec<&'a str> {
    [args, target].concat()
}

#[test]
#[ignore = "needs root, sshd, dockerd and the fixture images for the fake SUT (tests/sut/sut.sh); bash scripts/test.sh runs it"]
fn a_sut_without_sftp_gets_its_files_by_exec() {
    let sut = Sut::up_with_images(
        "hh-nosftp",
        30,
        &[
            "exectl-fixture/standin:latest",
            "exectl-fixture/traefik:3",
            "exectl-fixture/sqlite:3",
        ],
    );
    // The premise: this sshd really refuses SFTP.
    let sftp = std::process::Command::new("sftp")
        .arg("-i")
        .arg(&sut.key)
        .arg("-o")
        .arg(format!("UserKnownHostsFile={}", sut.known_hosts.display()))
        .args([
            "-o",
            "BatchMode=yes",
            "-o",
            "IdentitiesOnly=yes",
            "-b",
            "/dev/null",
        ])
        .args(["-P", &sut.ssh_port_nosftp.to_string()])
        .arg(format!("root@{}", sut.addr))
        .output()
        .unwrap();
    assert!(
        !sftp.status.success(),
        "sftp works on 2224: {}",
        text(&sftp)
    );
    assert!(
        text(&sftp).contains("subsystem request failed"),
        "{}",
        text(&sftp)
    );

    let x = Exectl::new();
    let url = format!("ssh://root@{}:{}", sut.addr, sut.ssh_port_nosftp);
    let target = [
        "--target",
        url.as_str(),
        "--identity",
        sut.key.to_str().unwrap(),
        "--known-hosts",
        sut.known_hosts.to_str().unwrap(),
        "--docker-socket",
        sut.docker_sock.as_str(),
    ];
    let host_bundle = PathBuf::from(format!("/opt/exectl/{STACK}"));
    let _ = std::fs::remove_dir_all(&host_bundle);

    // Deploy: the bundle goes up by exec and the stack comes up healthy on the SUT's engine.
    let port = "18431";
    let deploy = with_target(
        &target,
        &[
            "deploy",
            "single",
            "--stack",
            STACK,
            "--db",
            "sqlite",
            "--http-port",
            port,
            "--nofile",
            "20000",
            "--images",
            FIXTURES,
            "--health-interval",
            "1s",
            "--json",
        ],
    );
    let out = x.run(&deploy);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(summary["ok"], true, "{summary}");
    assert_eq!(summary["host_bundle"], host_bundle.to_str().unwrap());

    // The SUT's copy is the local bundle, byte for byte and mode for mode; .env private; no temp file.
    let local_bundle = x
        .state
        .path()
        .join(format!("ssh-root@{}-{}", sut.addr, sut.ssh_port_nosftp))
        .join(STACK)
        .join("bundle");
    let local = files_with_modes(&local_bundle);
    let remote = files_with_modes(&host_bundle);
    assert!(local.len() >= 3, "{local:?}");
    assert_eq!(remote, local, "the same files with the same modes");
    for (rel, _) in &local {
        assert_eq!(
            std::fs::read(host_bundle.join(rel)).unwrap(),
            std::fs::read(local_bundle.join(rel)).unwrap(),
            "{}",
            rel.display()
        );
    }
    let env = std::fs::metadata(host_bundle.join(".env")).unwrap();
    assert_eq!(env.permissions().mode() & 0o777, 0o600);
    assert!(remote
        .iter()
        .all(|(p, _)| !p.to_string_lossy().contains("exectl-tmp")));

    // A second deploy replaces the files in place (rename over the existing ones) and changes nothing.
    let again: serde_json::Value = serde_json::from_slice(&x.run(&deploy).stdout).unwrap();
    assert_eq!(again["ok"], true, "{again}");
    assert_eq!(files_with_modes(&host_bundle), local);

    // host tune --check stages ansible-free/ by exec too, and leaves nothing under --root.
    let root = tempfile::tempdir().unwrap();
    let check = with_target(
        &target,
        &[
            "host",
            "tune",
            "--role",
            "sut",
            "--check",
            "--json",
            "--root",
            root.path().to_str().unwrap(),
        ],
    );
    let out = x.run(&check);
    assert!(
        [Some(0), Some(1)].contains(&out.status.code()),
        "{}",
        text(&out)
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let keys: Vec<&str> = report["settings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["key"].as_str().unwrap())
        .collect();
    assert!(keys.contains(&"net.core.somaxconn"), "{report}");
    assert!(
        keys.iter()
            .any(|k| k.ends_with("/etc/docker/daemon.json userland-proxy")),
        "{report}"
    );
    assert_eq!(
        std::fs::read_dir(root.path()).unwrap().count(),
        0,
        "--check wrote nothing"
    );

    x.ok(&with_target(
        &target,
        &["teardown", "--stack", STACK, "--purge"],
    ));
    assert!(!host_bundle.exists());
    let left = sut.docker(&[
        "ps",
        "-aq",
        "--filter",
        &format!("label=exectl.stack={STACK}"),
    ]);
    assert_eq!(String::from_utf8_lossy(&left.stdout).trim(), "");
}
