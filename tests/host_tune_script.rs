//! ansible-free/tune.sh, run for real inside a private network namespace (`unshare -n`), where the
//! network sysctls it changes belong to the namespace and the machine itself is untouched.

use std::process::Command;

fn run_in_netns(script: &str) -> String {
    let out = Command::new("unshare")
        .args(["-n", "bash", "-c", script])
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
    assert_eq!(sections[2].trim(), "check\nnothing to change", "{out}");
    assert_eq!(
        sections[3].trim(),
        "apply",
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

#[test]
fn bad_arguments_exit_2() {
    for args in [
        vec!["--role", "db", "--check"],
        vec!["--role", "sut"],
        vec!["--bogus"],
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
