//! The fake remote SUT of tests/sut/sut.sh: sshd with the generated keys, stream-local forwarding allowed on
//! one port and refused on the other, its own engine with the fixture images, ports published on the SUT's
//! address only, and nothing left after drop.

use crate::common;

use common::sut::Sut;
use std::io::{Read, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn stdout(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn ok(what: &str, out: std::process::Output) -> String {
    assert!(
        out.status.success(),
        "{what} failed ({:?}):\n{}\n{}",
        out.status.code(),
        stdout(&out),
        String::from_utf8_lossy(&out.stderr)
    );
    stdout(&out)
}

/// A plain HTTP/1.0 GET over `stream`; the response as far as it came (a refused forward is a reset).
fn get<S: Read + Write>(mut stream: S, path: &str) -> String {
    let mut body = Vec::new();
    if write!(stream, "GET {path} HTTP/1.0\r\nHost: sut\r\n\r\n").is_ok() {
        let _ = stream.read_to_end(&mut body);
    }
    String::from_utf8_lossy(&body).into_owned()
}

fn until<T>(what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// `ssh -N -L LOCAL:SUT_ENGINE_SOCKET` through `port`; the forward is ready once LOCAL exists.
fn forward(sut: &Sut, port: u16, local: &Path) -> Child {
    let _ = std::fs::remove_file(local);
    Command::new("ssh")
        .arg("-i")
        .arg(&sut.key)
        .arg("-o")
        .arg(format!("UserKnownHostsFile={}", sut.known_hosts.display()))
        .args(["-o", "StrictHostKeyChecking=yes", "-o", "BatchMode=yes"])
        .args(["-o", "IdentitiesOnly=yes", "-N", "-L"])
        .arg(format!("{}:{}", local.display(), sut.docker_sock))
        .args(["-p", &port.to_string(), &format!("root@{}", sut.addr)])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

/// GET /version of the SUT engine through a forward on `port`: Some(response) if the forward carried it.
fn version_through(sut: &Sut, port: u16) -> Option<String> {
    let local = sut.dir.join(format!("fwd-{port}.sock"));
    let mut ssh = forward(sut, port, &local);
    until("the forwarded socket", || local.exists().then_some(()));
    let stream = std::os::unix::net::UnixStream::connect(&local).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let response = get(stream, "/version");
    ssh.kill().unwrap();
    ssh.wait().unwrap();
    response.starts_with("HTTP/1.").then_some(response)
}

#[test]
#[ignore = "needs root, sshd, dockerd and the fixture images for the fake SUT (tests/sut/sut.sh); bash scripts/test.sh runs it"]
fn sut_harness() {
    let started = Instant::now();
    let sut = Sut::up("harness", 9);
    eprintln!("sut.sh up: {:?}", started.elapsed());
    assert_eq!(sut.addr, "10.199.9.2");
    assert_eq!(sut.target_url(), "ssh://root@10.199.9.2:2222");

    // sshd: the client key logs in as root on both ports (host key checked); the wrong key is refused.
    ok("ssh with the key", sut.ssh(&sut.key, sut.ssh_port, "true"));
    ok(
        "ssh with the key (no-forwarding port)",
        sut.ssh(&sut.key, sut.ssh_port_nofwd, "true"),
    );
    let wrong = sut.ssh(&sut.wrong_key, sut.ssh_port, "true");
    assert!(!wrong.status.success(), "the wrong key was accepted");
    assert!(
        String::from_utf8_lossy(&wrong.stderr).contains("Permission denied"),
        "{}",
        String::from_utf8_lossy(&wrong.stderr)
    );

    // Forwarding the engine's socket works on 2222 and is refused on 2223.
    let version = version_through(&sut, sut.ssh_port).expect("forward through 2222");
    assert!(
        version.contains("200 OK") && version.contains("ApiVersion"),
        "{version}"
    );
    assert_eq!(version_through(&sut, sut.ssh_port_nofwd), None);

    // The SUT's engine answers and holds the fixture images.
    let images = ok(
        "docker images on the SUT",
        sut.docker(&["images", "--format", "{{.Repository}}:{{.Tag}}"]),
    );
    for image in [
        "exectl-fixture/standin:latest",
        "exectl-fixture/postgres:15",
        "exectl-fixture/nginx:1",
    ] {
        assert!(
            images.lines().any(|l| l == image),
            "{image} not in\n{images}"
        );
    }

    // A port published on the SUT answers on its address, from this host; the container is not ours.
    let container = "exectl-sut-harness-web";
    ok(
        "docker run on the SUT",
        sut.docker(&[
            "run",
            "-d",
            "--name",
            container,
            "-p",
            "18080:80",
            "exectl-fixture/nginx:1",
        ]),
    );
    let page = until("nginx on the SUT", || {
        let s = std::net::TcpStream::connect_timeout(
            &format!("{}:18080", sut.addr).parse().unwrap(),
            Duration::from_secs(1),
        )
        .ok()?;
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        Some(get(s, "/")).filter(|r| r.starts_with("HTTP/1.1 200"))
    });
    assert!(page.contains("nginx"), "{page}");
    let local = ok(
        "docker ps on the host engine",
        Command::new("docker")
            .args(["ps", "-a", "--format", "{{.Names}}"])
            .output()
            .unwrap(),
    );
    assert!(!local.lines().any(|l| l == container), "{local}");

    let dir = sut.dir.clone();
    let down = Instant::now();
    drop(sut);
    eprintln!("sut.sh down: {:?}", down.elapsed());
    assert!(!Path::new("/run/netns/exectl-harness").exists());
    assert!(!dir.exists());
    eprintln!("up, checks and down: {:?}", started.elapsed());
}
