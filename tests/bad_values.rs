//! Every duration, size, count, port and CPU flag of every command, through the same absurd values: each
//! exits 2 naming the flag and the value, none panics. The flags are found in clap's own definition (by
//! their value name), so a new one is walked too; a value-taking flag of another kind must be listed in
//! NOT_NUMERIC, so that a new numeric flag cannot hide under a default value name.
//!
//! No engine: DOCKER_HOST points at a socket that does not exist, so a value checked only after
//! connecting would exit 3 here, not 2.

use clap::CommandFactory;
use exectl::cli::Cli;
use std::process::Command;

/// Value names that mark a numeric flag (set in src/cli.rs and src/commands/doctor.rs).
const NUMERIC: [&str; 7] = ["DURATION", "SIZE", "N", "PORT", "CPUS", "PERCENT", "RATE"];

/// Value-taking flags that are not numbers (names, paths, URLs, choices, KEY=VALUE).
const NOT_NUMERIC: &[&str] = &[
    "--target",
    "--identity",
    "--known-hosts",
    "--docker-socket",
    "--stack",
    "--place",
    "--config",
    "--nginx",
    "--lb-algorithm",
    "--db",
    "--host",
    "--app-env",
    "--app-debug",
    "--set",
    "--set-secret",
    "--images",
    "--templates",
    "--out",
    "--url",
    "--host-header",
    "--manifest",
    "--pattern",
    "--run-id",
    "--password",
    "--password-file",
    "--visibility",
    "--email-pattern",
    "--via",
    "--role",
    "--sysctl-file",
    "--root",
    "--scenario",
    "--slo",
    "--from",
    // A sweep's variable and its values, its file, and the run it resumes.
    "--vary",
    "--sweep-file",
    "--resume",
    // Addresses (core::load::sources, with tests of its own).
    "--source-addrs",
    "--generators",
    // A list of counts, with a parser and tests of its own (core::bench::levels).
    "--levels",
    // A fault and its moment, with a parser and tests of its own (core::bench::fault, bench_fault).
    "--fault",
];

/// Flags where zero is a meaningful value (no ramp, no settling).
const ZERO_OK: &[&str] = &["--ramp", "--settle"];

const ABSURD: [&str; 7] = [
    "1e30",
    "99999999999d",
    "-1",
    "NaN",
    "18446744073709551616",
    "99999999999999999999",
    "1e-10",
];

/// What a command needs besides the flag under test to get as far as reading it.
fn base(path: &[String], out: &str) -> Vec<String> {
    let v: Vec<&str> = match path.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        ["render"] => vec!["ha", "--out", out],
        ["validate"] | ["deploy"] | ["plan"] => vec!["ha"],
        ["load"] => vec!["idle", "--url", "http://127.0.0.1:9", "--manifest", out],
        ["prepare"] => vec!["--accounts", "10", "--mint-tokens"],
        ["host", "tune"] => vec!["--role", "sut"],
        ["bench"] => vec!["--levels", "10"],
        ["campaign"] => vec![
            concat!(env!("CARGO_MANIFEST_DIR"), "/campaigns/quick.yaml"),
            "--plan",
        ],
        ["sweep"] => vec![
            "ha",
            "--vary",
            "nginx=baseline-default,tuned-ip-hash",
            "--find-capacity",
            "--to",
            "1000",
        ],
        _ => vec![],
    };
    v.into_iter().map(String::from).collect()
}

struct Flag {
    path: Vec<String>,
    long: String,
    kind: String,
}

/// Every value-taking `--flag` of every (sub)command, with its value name.
fn walk(cmd: &clap::Command, path: Vec<String>, found: &mut Vec<Flag>, unknown: &mut Vec<String>) {
    for arg in cmd.get_arguments() {
        if arg.is_positional() || !arg.get_action().takes_values() {
            continue;
        }
        let Some(long) = arg.get_long() else { continue };
        let long = format!("--{long}");
        let kind = arg
            .get_value_names()
            .and_then(|n| n.first())
            .map(|n| n.to_string())
            .unwrap_or_default();
        if NUMERIC.contains(&kind.as_str()) {
            found.push(Flag {
                path: path.clone(),
                long,
                kind,
            });
        } else if !NOT_NUMERIC.contains(&long.as_str()) {
            unknown.push(format!("{} {long} <{kind}>", path.join(" ")));
        }
    }
    for sub in cmd.get_subcommands() {
        let mut p = path.clone();
        p.push(sub.get_name().to_string());
        walk(sub, p, found, unknown);
    }
}

fn flags() -> Vec<Flag> {
    let (mut found, mut unknown) = (Vec::new(), Vec::new());
    walk(&Cli::command(), Vec::new(), &mut found, &mut unknown);
    assert!(
        unknown.is_empty(),
        "flags of no known kind: give each a value name of {NUMERIC:?} (and read it with \
         core::units), or list it in NOT_NUMERIC: {unknown:#?}"
    );
    found
}

#[test]
fn every_numeric_flag_is_found() {
    let found = flags();
    let has = |path: &str, long: &str| {
        found
            .iter()
            .any(|f| f.path.join(" ") == path && f.long == long)
    };
    // The flags the issue names, and one of each kind per command family.
    for (path, long) in [
        ("status", "--connect-timeout"),
        ("status", "--interval"),
        ("status", "--settle"),
        ("load", "--hold"),
        ("load", "--ramp"),
        ("load", "--users"),
        ("deploy", "--wait-timeout"),
        ("deploy", "--cpus"),
        ("deploy", "--memory"),
        ("deploy", "--health-interval"),
        ("plan", "--lb-port"),
        ("deploy", "--worker-processes"),
        ("prepare", "--token-ttl"),
        ("prepare", "--batch-size"),
        ("doctor", "--connections"),
        ("doctor", "--memory"),
        ("host tune", "--connect-timeout"),
        ("teardown", "--connect-timeout"),
        ("bench", "--hold"),
        ("bench", "--sample"),
        ("bench", "--settle"),
        ("load", "--arrival-rate"),
        ("sweep", "--arrival-rate"),
    ] {
        assert!(has(path, long), "{path} {long} is not walked");
    }
    assert!(found.len() > 60, "only {} flags found", found.len());
}

#[test]
fn every_numeric_flag_refuses_absurd_values_with_exit_2() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let state = tmp.path().join("state");
    let mut failures = Vec::new();
    let mut runs = 0;
    for f in flags() {
        let mut values: Vec<&str> = ABSURD.to_vec();
        if f.kind == "DURATION" {
            values.extend(["300", "soon", "1s1"]);
        }
        if !ZERO_OK.contains(&f.long.as_str()) {
            values.push("0");
        }
        // A CPU limit of 1e-10 and a size of 1e-10 are refused; as a duration it is no number at all.
        for value in values {
            // A base pair naming the flag under test would give it twice.
            let mut args = Vec::new();
            let b = base(&f.path, out.to_str().unwrap());
            let mut i = 0;
            while i < b.len() {
                if b[i] == f.long {
                    i += 2;
                    continue;
                }
                args.push(b[i].clone());
                i += 1;
            }
            let mut full = f.path.clone();
            full.extend(args);
            full.push(f.long.clone());
            full.push(value.to_string());
            let o = Command::new(env!("CARGO_BIN_EXE_exectl"))
                .args(&full)
                .current_dir(tmp.path())
                .env("EXECTL_STATE_DIR", &state)
                .env("DOCKER_HOST", "unix:///nonexistent/exectl-bad-values.sock")
                .env_remove("EXECTL_TARGET")
                .env("RUST_BACKTRACE", "0")
                .output()
                .unwrap();
            runs += 1;
            let err = String::from_utf8_lossy(&o.stderr);
            let named = format!("invalid {} {value:?}", f.long);
            if o.status.code() != Some(2) || !err.contains(&named) || err.contains("panicked") {
                failures.push(format!(
                    "exectl {}: exit {:?}, wanted 2 and {named:?}:\n{err}",
                    full.join(" "),
                    o.status.code()
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {runs} runs:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(!out.exists(), "render wrote a bundle for a bad value");
}
