//! scripts/dockerd.sh on a fresh machine, for real but private: in its own network and mount namespace
//! (`unshare --net --mount`), with tmpfs over /run and /var/lib/docker and a folder of its own over
//! /etc/docker, so the engine it starts has its own socket, pid file, data root, bridge and iptables, and
//! the host's engine is never touched. The engine comes up with the userland proxy off, and a published
//! port still answers on 127.0.0.1 (DNAT; Docker sets route_localnet on its bridges) with no docker-proxy
//! behind it. A daemon.json that sets "userland-proxy" itself is obeyed.

use std::process::Command;

const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/dockerd.sh");
const IMAGE: &str = "exectl-fixture/standin:latest";

/// Run `body` in the private namespaces with the stand-in image saved at $IMAGE_TAR; stdout and stderr.
fn in_private_engine(daemon_json: Option<&str>, body: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let tar = dir.path().join("image.tar");
    let saved = Command::new("docker")
        .args(["save", "-o", tar.to_str().unwrap(), IMAGE])
        .output()
        .unwrap();
    assert!(
        saved.status.success(),
        "{IMAGE} (bash images/build.sh): {}",
        String::from_utf8_lossy(&saved.stderr)
    );
    let etc = dir.path().join("etc-docker");
    std::fs::create_dir(&etc).unwrap();
    if let Some(text) = daemon_json {
        std::fs::write(etc.join("daemon.json"), text).unwrap();
    }
    let script = format!(
        r#"set -u
mount --make-rprivate /
mount -t tmpfs exectl-dockerd-run /run
mkdir -p /var/lib/docker && mount -t tmpfs exectl-dockerd-data /var/lib/docker
mount --bind "$ETC" /etc/docker
ip link set lo up
stop() {{
  docker rm -f $(docker ps -aq) >/dev/null 2>&1
  p=$(cat /run/docker.pid 2>/dev/null) && kill "$p" && for _ in $(seq 1 100); do [ -d /proc/$p ] || break; sleep 0.1; done
}}
trap stop EXIT
bash "$SCRIPT" || exit 1
docker load -q -i "$IMAGE_TAR" >/dev/null
echo "== cmdline"; tr '\0' ' ' < /proc/$(cat /run/docker.pid)/cmdline; echo
{body}
"#
    );
    let out = Command::new("unshare")
        .args(["--net", "--mount", "--fork", "bash", "-c", &script])
        .env("SCRIPT", SCRIPT)
        .env("ETC", &etc)
        .env("IMAGE_TAR", &tar)
        .env("EXECTL_DOCKERD_LOG", dir.path().join("dockerd.log"))
        .env_remove("DOCKER_HOST")
        .output()
        .expect("unshare (util-linux), as root");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success(),
        "{text}\n{}",
        std::fs::read_to_string(dir.path().join("dockerd.log")).unwrap_or_default()
    );
    text
}

#[test]
#[ignore = "needs root, unshare, docker.io and the fixture images; bash scripts/test.sh runs it"]
fn a_fresh_engine_has_the_userland_proxy_off_and_loopback_still_reaches_published_ports() {
    let out = in_private_engine(
        None,
        r#"docker run -d --name web -p 18080:8080 -p 127.0.0.1:18081:8080 \
  -e APP_SECRET=0123456789abcdefghijklmnopqrstuvwxyz -e API_JWT_SECRET=zyxwvutsrqponmlkjihgfedcba9876543210 \
  exectl-fixture/standin:latest >/dev/null
for _ in $(seq 1 50); do curl -s -o /dev/null http://127.0.0.1:18080/healthcheck && break; sleep 0.1; done
echo "== reached"
for u in 127.0.0.1:18080 127.0.0.1:18081 localhost:18080; do echo "$u $(curl -s -m 3 -o /dev/null -w '%{http_code}' http://$u/healthcheck)"; done
echo "== proxies"
for d in /proc/[0-9]*; do [ "$(cat $d/comm 2>/dev/null)" = docker-proxy ] && tr '\0' ' ' < $d/cmdline | grep -- '-host-port 1808[01] ' ; done
echo "== route_localnet"; cat /proc/sys/net/ipv4/conf/docker0/route_localnet
echo "== again"; bash "$SCRIPT"; echo "exit $?"
"#,
    );
    assert!(
        out.contains("dockerd.sh: starting dockerd --userland-proxy=false"),
        "{out}"
    );
    assert!(out.contains("dockerd --userland-proxy=false"), "{out}");
    for reached in [
        "127.0.0.1:18080 200",
        "127.0.0.1:18081 200",
        "localhost:18080 200",
    ] {
        assert!(out.contains(reached), "{reached}:\n{out}");
    }
    let proxies = out.split("== proxies").nth(1).unwrap();
    assert!(
        proxies
            .split("== route_localnet")
            .next()
            .unwrap()
            .trim()
            .is_empty(),
        "no docker-proxy for the published ports:\n{out}"
    );
    assert!(out.contains("== route_localnet\n1\n"), "{out}");
    // Run again on a running engine: left alone, nothing said about the proxy.
    let again = out.split("== again").nth(1).unwrap();
    assert!(again.contains("exit 0"), "{out}");
    assert!(!again.contains("userland proxy on"), "{out}");
}

#[test]
#[ignore = "needs root, unshare, docker.io and the fixture images; bash scripts/test.sh runs it"]
fn a_daemon_json_that_sets_the_userland_proxy_is_obeyed() {
    let out = in_private_engine(
        Some("{\"userland-proxy\": true}\n"),
        r#"echo "== again"; bash "$SCRIPT"; echo "exit $?""#,
    );
    let cmdline = out.split("== cmdline").nth(1).unwrap();
    assert!(!cmdline.contains("--userland-proxy"), "{out}");
    let again = out.split("== again").nth(1).unwrap();
    assert!(
        again.contains("the running engine has the userland proxy on"),
        "{out}"
    );
}
