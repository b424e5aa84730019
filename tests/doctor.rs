//! `exectl doctor` against the local engine: a container without exectl's labels is a warning that names
//! it, and `--connections` beyond the ephemeral port range is a failure (exit 1).

use crate::common;

use common::{doctor_check, stack_prefix, Exectl, Foreign};

fn doctor(x: &Exectl, extra: &[&str]) -> (i32, serde_json::Value) {
    let mut args = vec!["doctor", "--json"];
    args.extend(extra);
    let out = x.run(&args);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let v = serde_json::from_str(&stdout).unwrap_or_else(|e| {
        panic!(
            "doctor {extra:?} did not print JSON ({e}):\n{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out.status.code().unwrap(), v)
}

/// The size of this host's ephemeral port range.
fn port_range_size() -> u64 {
    let text = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range").unwrap();
    let v: Vec<u64> = text
        .split_whitespace()
        .map(|w| w.parse().unwrap())
        .collect();
    v[1] - v[0] + 1
}

#[tokio::test]
#[ignore = "needs the Docker engine, the docker CLI and the fixture images; bash scripts/test.sh runs it"]
async fn doctor_warns_about_a_foreign_container_and_fails_beyond_the_port_range() {
    common::docker().await;
    let x = Exectl::new();
    let name = format!("exectl-{}doctor-foreign", stack_prefix());
    // Removed when the test ends, passed or not.
    let f = Foreign::start(
        &name,
        &[
            "run",
            "-d",
            "--name",
            &name,
            // No network: the check is about the container, not its bridge.
            "--network",
            "none",
            "exectl-fixture/debian:bookworm",
            "sleep",
            "300",
        ],
    );

    // The shape: {target, checks: [{name, level, detail, fix}], summary: {pass, warn, fail}}.
    let (code, report) = doctor(&x, &[]);
    assert_eq!(report["target"], "the local engine");
    let checks = report["checks"].as_array().unwrap();
    for c in checks {
        for key in ["name", "level", "detail", "fix"] {
            assert!(c[key].is_string(), "{key} of {c}");
        }
        assert!(["pass", "warn", "fail"].contains(&c["level"].as_str().unwrap()));
    }
    let fails = checks.iter().filter(|c| c["level"] == "fail").count() as u64;
    assert_eq!(report["summary"]["fail"], fails);
    assert_eq!(code, i32::from(fails > 0), "{report:#}");
    assert_eq!(doctor_check(&report, "local-engine")["level"], "pass");

    let foreign = doctor_check(&report, "foreign-containers");
    assert_eq!(foreign["level"], "warn", "{foreign}");
    let detail = foreign["detail"].as_str().unwrap();
    assert!(detail.contains(&f.name), "{detail}");
    assert!(
        foreign["fix"].as_str().unwrap().contains("dedicated SUT"),
        "{foreign}"
    );

    // Beyond the ephemeral port range: a failure, exit 1.
    let (code, report) = doctor(&x, &["--connections", "1000000"]);
    assert_eq!(code, 1, "{report:#}");
    let ports = doctor_check(&report, "ephemeral-ports");
    assert_eq!(ports["level"], "fail", "{ports}");
    assert!(
        ports["detail"]
            .as_str()
            .unwrap()
            .contains(&port_range_size().to_string()),
        "{ports}"
    );
    assert!(
        ports["fix"]
            .as_str()
            .unwrap()
            .contains("exectl host tune --role client"),
        "{ports}"
    );

    // Well within it: the ports check passes.
    let (_, report) = doctor(&x, &["--connections", "100"]);
    let ports = doctor_check(&report, "ephemeral-ports");
    assert_eq!(ports["level"], "pass", "{ports}");
}

#[test]
fn a_bad_connections_value_is_a_usage_error() {
    let x = Exectl::new();
    for bad in ["0", "lots", "-3"] {
        let out = x.run(&["doctor", "--connections", bad]);
        assert_eq!(out.status.code(), Some(2), "{bad}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("--connections"), "{err}");
        assert!(err.contains(&format!("{bad:?}")), "{err}");
        assert!(err.contains("fix:"), "{err}");
    }
}

#[test]
fn a_stack_without_a_deployment_is_a_usage_error() {
    let x = Exectl::new();
    let out = x.run(&["doctor", "--stack", "never-deployed"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--stack"));
}
