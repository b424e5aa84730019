//! ansible-free/tune.sh, run for real inside a private network namespace (`unshare -n`), where the
//! network sysctls it changes belong to the namespace and the machine itself is untouched; the files it
//! installs (and, with --root, the sysctls: ROOT/proc/sys) go under a tmpfs given as --root in a private
//! mount namespace (`unshare -m`).

use std::process::Command;

fn run_in_netns(script: &str) -> String {
    run_in_namespaces(script, &["-n"])
}

/// `unshare FLAGS bash -c SCRIPT`, required to succeed: its stdout.
fn run_in_namespaces(script: &str, flags: &[&str]) -> String {
    let out = Command::new("unshare")
        .args(flags)
        .args(["bash", "-c", script])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("unshare (util-linux) runs as root here");
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
#[ignore = "needs root (unshare: network and mount namespaces); bash scripts/test.sh runs it"]
fn check_apply_is_idempotent_and_restore_brings_the_values_back() {
    let host_before = std::fs::read_to_string("/proc/sys/net/core/somaxconn").unwrap();
    let out = run_in_netns(
        r#"set -e
        t="ansible-free/tune.sh --sysctl-file tests/fixtures/netns-sysctl.conf --state $(mktemp -d)"
        before=$(cat /proc/sys/net/core/somaxconn /proc/sys/net/ipv4/ip_local_port_range)
        echo "== check"; $t --check
        echo "== apply"; $t --apply
        echo "== check"; $t --check
        echo "== apply"; $t --apply
        echo "== restore"; $t --restore
        after=$(cat /proc/sys/net/core/somaxconn /proc/sys/net/ipv4/ip_local_port_range)
        [ "$before" = "$after" ] && echo "== same as before""#,
    );
    let sections: Vec<&str> = out.split("== ").skip(1).collect();
    assert_eq!(sections.len(), 6, "{out}");
    assert_eq!(
        sections[0]
            .lines()
            .filter(|l| l.starts_with("change "))
            .count(),
        4,
        "{out}"
    );
    assert!(sections[0].contains("net.core.somaxconn"), "{out}");
    assert_eq!(
        sections[1]
            .lines()
            .filter(|l| l.starts_with("set "))
            .count(),
        4,
        "{out}"
    );
    assert_eq!(
        without_keep(sections[2]),
        "check\nnothing to change",
        "{out}"
    );
    assert_eq!(
        sections[2]
            .lines()
            .filter(|l| l.starts_with("keep "))
            .count(),
        4,
        "{out}"
    );
    assert_eq!(
        without_keep(sections[3]),
        "apply\nnothing to change",
        "a second apply changes nothing: {out}"
    );
    assert_eq!(
        sections[4]
            .lines()
            .filter(|l| l.starts_with("restored "))
            .count(),
        4,
        "{out}"
    );
    assert_eq!(sections[5].trim(), "same as before", "{out}");
    // The machine's own value never moved.
    assert_eq!(
        std::fs::read_to_string("/proc/sys/net/core/somaxconn").unwrap(),
        host_before
    );
}

/// A section's lines other than `keep ...` (settings already as wanted).
fn without_keep(section: &str) -> String {
    section
        .lines()
        .filter(|l| !l.starts_with("keep "))
        .collect::<Vec<_>>()
        .join("\n")
        .trim()
        .to_string()
}

#[test]
#[ignore = "needs root (unshare: network and mount namespaces); bash scripts/test.sh runs it"]
fn files_are_installed_recorded_and_put_back_under_root() {
    // A private mount namespace with a tmpfs as --root: /etc is never touched. The sysctls are under
    // --root too: the namespace's /proc/sys/net is mounted there, as in a chroot.
    let out = run_in_namespaces(
        r#"set -e
        root=$(mktemp -d); mount -t tmpfs exectl-test "$root"
        mkdir -p "$root/proc/sys/net"; mount --bind /proc/sys/net "$root/proc/sys/net"
        mkdir -p "$root/etc/docker"; echo '{"debug": true}' > "$root/etc/docker/daemon.json"
        printf '{"debug": true, "userland-proxy": false}\n' > "$root/merged.json"
        t="ansible-free/tune.sh --sysctl-file tests/fixtures/netns-sysctl.conf --root $root
           --limits ansible-free/limits/99-exectl.conf --daemon-json $root/merged.json"
        echo "== check"; $t --check
        echo "== apply"; $t --apply
        echo "== records"; (cd "$root/var/lib/exectl/host" && find . -type f | sort)
        echo "== check"; $t --check
        echo "== restore"; ansible-free/tune.sh --root "$root" --restore
        echo "== after"; cat "$root/etc/docker/daemon.json"; ls "$root/etc/security/limits.d"
        ls "$root/var/lib/exectl/host""#,
        &["-n", "-m"],
    );
    let s: Vec<&str> = out.split("== ").skip(1).collect();
    assert_eq!(s.len(), 6, "{out}");
    assert!(
        s[0].contains("/etc/security/limits.d/99-exectl.conf: absent -> exectl's copy\n"),
        "{out}"
    );
    assert!(
        s[0].contains("/etc/docker/daemon.json: other content -> exectl's copy\n"),
        "{out}"
    );
    assert_eq!(
        s[1].lines().filter(|l| l.starts_with("set ")).count(),
        6,
        "{out}"
    );
    let records: Vec<&str> = s[2].lines().skip(1).collect();
    assert_eq!(records.len(), 3, "{out}");
    assert!(records[0].ends_with("/etc/docker/daemon.json"), "{out}");
    assert!(
        records[1].ends_with("/etc/security/limits.d/99-exectl.conf.absent"),
        "{out}"
    );
    assert_eq!(records[2], "./previous.conf", "{out}");
    assert_eq!(without_keep(s[3]), "check\nnothing to change", "{out}");
    assert!(
        s[4].contains("/etc/security/limits.d/99-exectl.conf: present -> absent\n"),
        "{out}"
    );
    assert_eq!(s[5], "after\n{\"debug\": true}\n", "{out}");
}

#[test]
#[ignore = "needs root (unshare: network and mount namespaces); bash scripts/test.sh runs it"]
fn capacity_minimums_are_never_lowered() {
    let out = run_in_namespaces(
        r#"set -e
        f=$(mktemp); printf 'net.core.somaxconn = 128\nnet.ipv4.ip_local_port_range = 40000 50000\nnet.ipv4.tcp_tw_reuse = 0\n' > "$f"
        ansible-free/tune.sh --sysctl-file "$f" --state "$(mktemp -d)" --check; rm -f "$f""#,
        &["-n"],
    );
    assert!(
        out.contains("keep net.core.somaxconn: 4096 >= 128\n"),
        "{out}"
    );
    assert!(
        out.contains("keep net.ipv4.ip_local_port_range: 32768 60999 >= 40000 50000\n"),
        "{out}"
    );
    assert!(
        out.contains("change net.ipv4.tcp_tw_reuse: 2 -> 0\n"),
        "exact values differ: {out}"
    );
}

#[test]
fn bad_arguments_exit_2() {
    for args in [
        vec!["--role", "db", "--check"],
        vec!["--role", "sut"],
        vec!["--bogus"],
        vec!["--role", "sut", "--limits", "/nonexistent", "--check"],
    ] {
        let out = Command::new("bash")
            .arg("ansible-free/tune.sh")
            .args(&args)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
    }
}
