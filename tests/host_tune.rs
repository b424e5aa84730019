//! `exectl host tune|restore` for real, on the local target, inside a private network namespace and a
//! private mount namespace (`unshare --net --mount`): every path it reads and writes goes under a tmpfs
//! given as `--root`, sysctls included (ROOT/proc/sys), so the machine's own settings and /etc are never
//! touched. The namespace's /proc/sys/net is bind-mounted at ROOT/proc/sys/net, as a chroot's /proc would
//! be: the network sysctls it changes are the namespace's own. Each test runs its whole sequence in one
//! `unshare` (a fresh namespace would start from the defaults again). Needs root and the local engine.
//! The last test runs without any namespace: --root alone keeps the live kernel out of reach.

use std::collections::BTreeMap;
use std::process::Command;

const EXECTL: &str = env!("CARGO_BIN_EXE_exectl");
const NETNS_SYSCTL: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/netns-sysctl.conf"
);

/// Run `script` with bash in a new network and mount namespace, with $EXECTL, $FIXTURE and $ROOT (a
/// tmpfs private to the namespace) set; its output split into `== NAME` sections.
fn in_namespaces(script: &str) -> (String, BTreeMap<String, String>) {
    let cwd = tempfile::tempdir().unwrap(); // no exectl.yaml naming another target
                                            // `files` lists what was written under ROOT, leaving out the mounted /proc/sys/net.
    let prelude = r#"set -u
ROOT=$(mktemp -d)
mount -t tmpfs exectl-host-tune "$ROOT"
mkdir -p "$ROOT/proc/sys/net"
mount --bind /proc/sys/net "$ROOT/proc/sys/net"
trap 'umount -R "$ROOT"; rmdir "$ROOT"' EXIT
files() { find "$ROOT" -mindepth 1 -path "$ROOT/proc" -prune -o -print | sort; }
"#;
    let out = Command::new("unshare")
        .args(["--net", "--mount", "bash", "-c"])
        .arg(format!("{prelude}{script}"))
        .env("EXECTL", EXECTL)
        .env("FIXTURE", NETNS_SYSCTL)
        .env_remove("EXECTL_TARGET")
        .current_dir(cwd.path())
        .output()
        .expect("unshare (util-linux) runs as root here");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "the namespace script failed:\n{text}");
    let mut sections = BTreeMap::new();
    let mut current: Option<String> = None;
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        if let Some(name) = line.strip_prefix("== ") {
            current = Some(name.trim().to_string());
            sections.insert(name.trim().to_string(), String::new());
        } else if let Some(name) = &current {
            let body = sections.get_mut(name).unwrap();
            body.push_str(line);
            body.push('\n');
        }
    }
    (text, sections)
}

/// The most open files a container of the local engine may have: dockerd's hard limit (the daemon of
/// /var/run/docker.pid) and fs.nr_open, the lower.
fn engine_max_nofile() -> u64 {
    let pid = std::fs::read_to_string("/var/run/docker.pid").unwrap();
    let limits = std::fs::read_to_string(format!("/proc/{}/limits", pid.trim())).unwrap();
    let hard: u64 = limits
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .and_then(|l| l.split_whitespace().nth(4))
        .and_then(|w| w.parse().ok())
        .unwrap_or(u64::MAX);
    let nr_open: u64 = std::fs::read_to_string("/proc/sys/fs/nr_open")
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    hard.min(nr_open)
}

/// The machine's own state that the tests must leave alone.
fn host_state() -> Vec<String> {
    let mut s: Vec<String> = [
        "/proc/sys/net/core/somaxconn",
        "/proc/sys/net/ipv4/ip_local_port_range",
        "/proc/sys/net/ipv4/tcp_tw_reuse",
        "/proc/sys/net/ipv4/tcp_max_syn_backlog",
        "/etc/docker/daemon.json",
        "/etc/security/limits.d/99-exectl.conf",
    ]
    .iter()
    .map(|p| format!("{p}: {:?}", std::fs::read_to_string(p).ok()))
    .collect();
    s.push(format!(
        "/var/lib/exectl/host exists: {}",
        std::path::Path::new("/var/lib/exectl/host").exists()
    ));
    s
}

/// `exit N` at the end of a section.
fn exit_of(section: &str) -> i32 {
    let last = section.lines().last().unwrap_or_default();
    last.strip_prefix("exit ")
        .and_then(|c| c.trim().parse().ok())
        .unwrap_or_else(|| panic!("no exit line in {section:?}"))
}

/// A section's text without its `exit N` line.
fn body_of(section: &str) -> String {
    let lines: Vec<&str> = section.lines().collect();
    lines[..lines.len().saturating_sub(1)].join("\n")
}

#[test]
#[ignore = "needs root (unshare: network and mount namespaces) and the Docker engine; bash scripts/test.sh runs it"]
fn check_apply_check_restore_brings_everything_back() {
    let host_before = host_state();
    let (all, s) = in_namespaces(
        r#"
tune="$EXECTL host tune --role sut --sysctl-file $FIXTURE --root $ROOT"
values() { for k in net/core/somaxconn net/ipv4/tcp_max_syn_backlog net/ipv4/ip_local_port_range net/ipv4/tcp_tw_reuse; do
  echo "$k = $(echo $(cat /proc/sys/$k))"; done; }
# A host with its own daemon.json (a key exectl does not manage) and no limits file.
mkdir -p "$ROOT/etc/docker"
printf '{ "log-driver": "local", "userland-proxy": true }\n' > "$ROOT/etc/docker/daemon.json"
cp "$ROOT/etc/docker/daemon.json" "$ROOT/original-daemon.json"
echo "== root"; echo "$ROOT"
echo "== defaults"; values
echo "== check"; $tune --check; echo "exit $?"
echo "== check json"; $tune --check --json; echo "exit $?"
echo "== files after check"; files
echo "== apply"; $tune; echo "exit $?"
echo "== tuned"; values
echo "== daemon.json"; cat "$ROOT/etc/docker/daemon.json"
echo "== limits"; cat "$ROOT/etc/security/limits.d/99-exectl.conf"
echo "== check again"; $tune --check; echo "exit $?"
echo "== apply again"; $tune; echo "exit $?"
echo "== restore"; $EXECTL host restore --root "$ROOT"; echo "exit $?"
echo "== restored"; values
echo "== files after restore"
cmp -s "$ROOT/etc/docker/daemon.json" "$ROOT/original-daemon.json" && echo "daemon.json: as it was"
[ -e "$ROOT/etc/security/limits.d/99-exectl.conf" ] || echo "limits file: removed"
[ -e "$ROOT/var/lib/exectl/host" ] || echo "state: removed"
echo "== restore again"; $EXECTL host restore --root "$ROOT"; echo "exit $?"
"#,
    );
    let defaults = &s["defaults"];

    // --check on a default namespace lists the four sysctls, the limits file and daemon.json's keys.
    let check = &s["check"];
    assert_eq!(
        exit_of(check),
        1,
        "--check exits 1 when something would change:\n{all}"
    );
    for key in [
        "net.core.somaxconn",
        "net.ipv4.tcp_max_syn_backlog",
        "net.ipv4.ip_local_port_range",
        "net.ipv4.tcp_tw_reuse",
        "/etc/security/limits.d/99-exectl.conf: absent -> exectl's copy",
        "/etc/docker/daemon.json userland-proxy: true -> false",
        "/etc/docker/daemon.json default-ulimits: absent -> ",
    ] {
        assert!(
            check
                .lines()
                .any(|l| l.starts_with("would change ") && l.contains(key)),
            "{key} missing from --check:\n{all}"
        );
    }
    assert!(check.contains("7 setting(s) would change"), "{all}");
    assert!(
        check.contains("dockerd reads it only when it starts"),
        "{all}"
    );

    let json: serde_json::Value =
        serde_json::from_str(&body_of(&s["check json"])).unwrap_or_else(|e| panic!("{e}:\n{all}"));
    assert_eq!(exit_of(&s["check json"]), 1);
    let settings = json["settings"].as_array().unwrap();
    assert_eq!(settings.len(), 7, "{json}");
    let somaxconn = settings
        .iter()
        .find(|x| x["key"] == "net.core.somaxconn")
        .unwrap();
    assert_eq!(somaxconn["action"], "change");
    assert_eq!(somaxconn["wanted"], "65535");
    assert!(defaults.contains(&format!(
        "net/core/somaxconn = {}",
        somaxconn["current"].as_str().unwrap()
    )));
    assert_eq!(json["docker_restart_needed"], true);

    // --check wrote nothing.
    assert_eq!(
        s["files after check"].trim(),
        format!(
            "{0}/etc\n{0}/etc/docker\n{0}/etc/docker/daemon.json\n{0}/original-daemon.json",
            s["root"].trim()
        ),
        "{all}"
    );

    // Apply: every setting changed, daemon.json merged (the user's key kept), dockerd restart asked for.
    let apply = &s["apply"];
    assert_eq!(exit_of(apply), 0, "{all}");
    assert_eq!(
        apply
            .lines()
            .filter(|l| l.starts_with("changed ") && l.contains(" -> "))
            .count(),
        7,
        "{all}"
    );
    assert!(apply.contains("`exectl host restore`"), "{all}");
    assert!(
        apply.contains("Restart it for the new default-ulimits"),
        "{all}"
    );
    assert_eq!(
        s["tuned"],
        "net/core/somaxconn = 65535\nnet/ipv4/tcp_max_syn_backlog = 65535\n\
         net/ipv4/ip_local_port_range = 1024 65535\nnet/ipv4/tcp_tw_reuse = 1\n",
        "{all}"
    );
    let daemon: serde_json::Value = serde_json::from_str(&s["daemon.json"]).unwrap();
    assert_eq!(
        daemon["log-driver"], "local",
        "the user's key stays: {daemon}"
    );
    assert_eq!(daemon["userland-proxy"], false);
    // exectl's 1048576, capped at what a container may have here: above it, containers that set no
    // ulimits would not start.
    let max = engine_max_nofile();
    let nofile = 1048576.min(max);
    assert_eq!(
        daemon["default-ulimits"]["nofile"]["Soft"], nofile,
        "{daemon}"
    );
    assert_eq!(
        daemon["default-ulimits"]["nofile"]["Hard"], nofile,
        "{daemon}"
    );
    assert_eq!(
        apply.contains(&format!(
            "default-ulimits nofile is {max}, not exectl's 1048576"
        )),
        max < 1048576,
        "{all}"
    );
    assert!(s["limits"].contains("nofile 1048576"), "{all}");

    // Idempotent: nothing more to change, and applying again changes nothing.
    assert_eq!(exit_of(&s["check again"]), 0, "{all}");
    assert!(
        body_of(&s["check again"]).starts_with("nothing to change on the local engine"),
        "{all}"
    );
    assert_eq!(exit_of(&s["apply again"]), 0, "{all}");
    assert!(
        body_of(&s["apply again"]).starts_with("nothing to change"),
        "{all}"
    );

    // Restore: the namespace's defaults and the files as they were (the absent one removed).
    let restore = &s["restore"];
    assert_eq!(exit_of(restore), 0, "{all}");
    assert_eq!(
        restore
            .lines()
            .filter(|l| l.starts_with("restored ") && l.contains(" -> "))
            .count(),
        6,
        "{all}"
    );
    assert_eq!(&s["restored"], defaults, "{all}");
    assert_eq!(
        s["files after restore"].trim(),
        "daemon.json: as it was\nlimits file: removed\nstate: removed",
        "{all}"
    );
    assert_eq!(exit_of(&s["restore again"]), 0, "{all}");
    assert!(s["restore again"].contains("nothing to restore"), "{all}");

    assert_eq!(host_state(), host_before, "the machine itself was changed");
}

#[test]
#[ignore = "needs root (unshare: network and mount namespaces) and the Docker engine; bash scripts/test.sh runs it"]
fn the_roles_own_files_are_checked_and_nothing_is_written() {
    let host_before = host_state();
    let (all, s) = in_namespaces(
        r#"
for role in sut client; do
  echo "== $role"; $EXECTL host tune --role $role --check --json --root "$ROOT"; echo "exit $?"
done
echo "== written"; files
"#,
    );
    for (role, keys) in [
        (
            "sut",
            &[
                "net.core.somaxconn",
                "net.ipv4.tcp_max_syn_backlog",
                "net.ipv4.ip_local_port_range",
                "net.ipv4.tcp_tw_reuse",
                "fs.file-max",
                "fs.nr_open",
                "net.netfilter.nf_conntrack_max",
            ][..],
        ),
        (
            "client",
            &[
                "net.ipv4.ip_local_port_range",
                "net.ipv4.tcp_tw_reuse",
                "fs.nr_open",
            ][..],
        ),
    ] {
        let section = &s[role];
        assert!([0, 1].contains(&exit_of(section)), "{all}");
        let json: serde_json::Value = serde_json::from_str(&body_of(section)).unwrap();
        assert_eq!(json["mode"], "check");
        let settings = json["settings"].as_array().unwrap();
        let has = |k: &str| {
            settings
                .iter()
                .any(|x| x["key"].as_str().unwrap().ends_with(k))
        };
        for k in keys.iter().copied().chain([
            "/etc/security/limits.d/99-exectl.conf",
            "/etc/docker/daemon.json userland-proxy",
        ]) {
            assert!(has(k), "{role}: {k} missing: {json}");
        }
        assert!(settings
            .iter()
            .all(|x| ["change", "keep", "skip"].contains(&x["action"].as_str().unwrap())));
    }
    assert_eq!(s["written"].trim(), "", "--check wrote nothing: {all}");
    assert_eq!(host_state(), host_before);
}

#[test]
#[ignore = "needs root (unshare: network and mount namespaces) and the Docker engine; bash scripts/test.sh runs it"]
fn bad_input_exits_2_names_the_flag_and_changes_nothing() {
    let host_before = host_state();
    let (all, s) = in_namespaces(
        r#"
printf 'net.core.somaxconn 65535\n' > /tmp/exectl-bad-sysctl.$$
before=$(cat /proc/sys/net/core/somaxconn)
tune="$EXECTL host tune --root $ROOT"
for case in "--role db --sysctl-file $FIXTURE" "--role sut --sysctl-file /nonexistent/sysctl.conf" \
            "--role sut --sysctl-file /tmp/exectl-bad-sysctl.$$"; do
  echo "== $case"; $tune $case 2>&1; echo "exit $?"
done
echo "== --root relative"; $EXECTL host tune --role sut --sysctl-file $FIXTURE --root relative 2>&1; echo "exit $?"
echo "== restore"; $EXECTL host restore --root relative 2>&1; echo "exit $?"
rm -f /tmp/exectl-bad-sysctl.$$
echo "== somaxconn"; [ "$(cat /proc/sys/net/core/somaxconn)" = "$before" ] && echo unchanged
echo "== written"; files
"#,
    );
    let expect = [
        ("--role db", "invalid --role \"db\"", "--role sut"),
        (
            "/nonexistent",
            "invalid --sysctl-file \"/nonexistent/sysctl.conf\": cannot read /nonexistent/sysctl.conf",
            "readable sysctl.d file",
        ),
        (
            "exectl-bad-sysctl",
            "not a sysctl.d file: line 1",
            "KEY = VALUE",
        ),
        (
            "--root relative",
            "invalid --root \"relative\": not an absolute path",
            "absolute folder",
        ),
        ("restore", "invalid --root \"relative\"", "absolute folder"),
    ];
    for (case, problem, fix) in expect {
        let (_, out) = s
            .iter()
            .find(|(k, _)| k.contains(case))
            .unwrap_or_else(|| panic!("{case}: {all}"));
        assert_eq!(exit_of(out), 2, "{case}: {all}");
        assert!(out.contains(problem), "{case}: {out}");
        assert!(
            out.contains("; fix: ") && out.contains(fix),
            "{case}: {out}"
        );
    }
    assert_eq!(s["somaxconn"].trim(), "unchanged", "{all}");
    assert_eq!(s["written"].trim(), "", "{all}");
    assert_eq!(host_state(), host_before);
}

/// The live values of sysctls the tests use, to prove they never moved.
fn live_sysctls() -> Vec<String> {
    [
        "net/core/somaxconn",
        "net/ipv4/tcp_max_syn_backlog",
        "net/ipv4/ip_local_port_range",
        "net/ipv4/tcp_tw_reuse",
        "fs/file-max",
        "fs/nr_open",
    ]
    .iter()
    .map(|k| {
        format!(
            "{k}: {:?}",
            std::fs::read_to_string(format!("/proc/sys/{k}")).ok()
        )
    })
    .collect()
}

/// `--root DIR` with no namespace at all: check, apply and restore read and write the sysctls as the
/// files under DIR/proc/sys (seeded here with values the live kernel does not have), never the live
/// kernel's. Each step is checked before the next runs, so a --root that reached the kernel fails at the
/// read-only --check, before anything could be written.
#[test]
#[ignore = "needs the Docker engine; bash scripts/test.sh runs it"]
fn root_alone_keeps_the_live_kernel_out_of_reach() {
    let live_before = live_sysctls();
    let host_before = host_state();
    let cwd = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    let sys = root.path().join("proc/sys");
    let seeded = [
        ("net/core/somaxconn", "128"),
        ("net/ipv4/tcp_max_syn_backlog", "256"),
        ("net/ipv4/ip_local_port_range", "40000\t50000"),
        ("net/ipv4/tcp_tw_reuse", "0"),
    ];
    for (k, v) in seeded {
        let f = sys.join(k);
        std::fs::create_dir_all(f.parent().unwrap()).unwrap();
        std::fs::write(&f, format!("{v}\n")).unwrap();
    }
    let file = |k: &str| std::fs::read_to_string(sys.join(k)).unwrap();
    let root_s = root.path().to_str().unwrap();
    let run = |args: &[&str]| {
        let out = Command::new(EXECTL)
            .args(args)
            .args(["--root", root_s])
            .env_remove("EXECTL_TARGET")
            .current_dir(cwd.path())
            .output()
            .unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            text,
        )
    };
    let tune = [
        "host",
        "tune",
        "--role",
        "sut",
        "--sysctl-file",
        NETNS_SYSCTL,
    ];

    // --check reports the files' values; the role's keys with no file under DIR are skipped.
    let (code, stdout, all) = run(&[&tune[..], &["--check", "--json"]].concat());
    assert_eq!(code, Some(1), "{all}");
    let json: serde_json::Value =
        serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {all}"));
    let current = |j: &serde_json::Value, key: &str| {
        j["settings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["key"] == key)
            .unwrap_or_else(|| panic!("{key}: {j}"))
            .clone()
    };
    for (key, value) in [
        ("net.core.somaxconn", "128"),
        ("net.ipv4.tcp_max_syn_backlog", "256"),
        ("net.ipv4.ip_local_port_range", "40000 50000"),
        ("net.ipv4.tcp_tw_reuse", "0"),
    ] {
        let s = current(&json, key);
        assert_eq!(
            s["current"], value,
            "read from DIR/proc/sys, not the kernel: {json}"
        );
        assert_eq!(s["action"], "change", "{json}");
    }
    assert_eq!(json["sysctls"], format!("{root_s}/proc/sys"), "{json}");
    assert!(
        json["notes"][0]
            .as_str()
            .unwrap()
            .contains("not the live kernel's /proc/sys"),
        "{json}"
    );
    let (_, stdout, all) = run(&["host", "tune", "--role", "sut", "--check", "--json"]);
    let role: serde_json::Value =
        serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {all}"));
    for key in [
        "fs.file-max",
        "fs.nr_open",
        "net.netfilter.nf_conntrack_max",
    ] {
        let s = current(&role, key);
        assert_eq!(s["action"], "skip", "no file under DIR: {role}");
        assert_eq!(s["current"], "absent", "{role}");
    }
    assert_eq!(
        live_sysctls(),
        live_before,
        "--check under --root read nothing live"
    );

    // Apply: the files under DIR change, the kernel does not.
    let (code, _, all) = run(&tune);
    assert_eq!(code, Some(0), "{all}");
    assert!(
        all.contains("changed net.core.somaxconn: 128 -> 65535"),
        "{all}"
    );
    assert_eq!(file("net/core/somaxconn"), "65535\n");
    assert_eq!(file("net/ipv4/ip_local_port_range"), "1024 65535\n");
    assert_eq!(file("net/ipv4/tcp_tw_reuse"), "1\n");
    assert_eq!(
        live_sysctls(),
        live_before,
        "apply under --root wrote nothing live"
    );
    let recorded =
        std::fs::read_to_string(root.path().join("var/lib/exectl/host/previous.conf")).unwrap();
    assert!(
        recorded.contains("net.core.somaxconn = 128\n"),
        "{recorded}"
    );

    // Restore: the seeded values back in the files; the kernel still untouched.
    let (code, _, all) = run(&["host", "restore"]);
    assert_eq!(code, Some(0), "{all}");
    assert!(
        all.contains("restored net.core.somaxconn: 65535 -> 128"),
        "{all}"
    );
    for (k, v) in seeded {
        assert_eq!(file(k).trim_end(), v.replace('\t', " "), "{k}: {all}");
    }
    assert_eq!(
        live_sysctls(),
        live_before,
        "restore under --root wrote nothing live"
    );
    assert_eq!(host_state(), host_before);
}
