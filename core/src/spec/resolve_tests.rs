//! The spec's resolution, as data: inputs in, a spec or the UsageError naming the field out.

use super::*;
use crate::spec::{Origin, Raw};

fn ha() -> SpecInput {
    SpecInput {
        topology: Some(Raw::flag("topology", "ha")),
        ..Default::default()
    }
}

fn err(input: SpecInput) -> UsageError {
    resolve(input).unwrap_err()
}

#[test]
fn ha_defaults_follow_the_seed() {
    let s = resolve(ha()).unwrap();
    assert_eq!(s.instances, 2);
    assert_eq!(s.db, Db::Postgres);
    let n = s.nginx.unwrap();
    assert_eq!(n.variant, NginxVariant::TunedLeastConn);
    assert_eq!(n.worker_connections, 32768);
    assert_eq!(n.worker_rlimit_nofile, Some(200_000));
    assert_eq!(
        (s.cpus.as_str(), s.memory.as_str(), s.nofile),
        ("2", "2g", 200_000)
    );
}

#[test]
fn instances_zero_refused_and_one_is_the_baseline() {
    let e = err(SpecInput {
        instances: Some(Raw::flag("--instances", "0")),
        ..ha()
    });
    assert_eq!(e.field, "--instances");
    assert!(e.fix.contains("--instances 1"), "{e}");
    let one = resolve(SpecInput {
        instances: Some(Raw::flag("--instances", "1")),
        ..ha()
    })
    .unwrap();
    assert_eq!(one.instances, 1);
}

#[test]
fn unknown_nginx_variant_refused() {
    let e = err(SpecInput {
        nginx: Some(Raw::flag("--nginx", "tuned-round-robin")),
        ..ha()
    });
    assert_eq!(e.field, "--nginx");
    assert!(e.fix.contains("tuned-least-conn"));
}

#[test]
fn sqlite_with_ha_refused() {
    let e = err(SpecInput {
        db: Some(Raw::flag("--db", "sqlite")),
        ..ha()
    });
    assert_eq!(e.field, "--db");
    assert!(e.fix.contains("postgres"));
}

#[test]
fn negative_cpus_refused() {
    for v in ["-1", "0", "abc", "NaN", "inf"] {
        let e = err(SpecInput {
            cpus: Some(Raw::flag("--cpus", v)),
            ..ha()
        });
        assert_eq!(e.field, "--cpus", "{v}");
    }
    for v in ["1e-10", "0.009", "NaN", "inf", "-inf", "1025"] {
        let e = err(SpecInput {
            cpus: Some(Raw::flag("--cpus", v)),
            ..ha()
        });
        assert!(e.problem.starts_with("out of range"), "{v}: {e}");
    }
}

#[test]
fn cpus_are_normalised() {
    for (given, rendered) in [("+2", "2"), ("1.50", "1.5"), ("0.01", "0.01"), ("1e0", "1")] {
        let s = resolve(SpecInput {
            cpus: Some(Raw::flag("--cpus", given)),
            ..ha()
        })
        .unwrap();
        assert_eq!(s.cpus, rendered, "{given}");
    }
}

#[test]
fn rlimit_below_twice_worker_connections_refused() {
    let e = err(SpecInput {
        worker_connections: Some(Raw::flag("--worker-connections", "32768")),
        worker_rlimit_nofile: Some(Raw::flag("--worker-rlimit-nofile", "40000")),
        ..ha()
    });
    assert_eq!(e.field, "--worker-rlimit-nofile");
    assert!(e.fix.contains("65536"), "{e}");
}

#[test]
fn container_nofile_must_cover_nginx_rlimit() {
    // A tuned variant follows a lower nofile: as tuned as the containers' ulimit allows.
    let s = resolve(SpecInput {
        nofile: Some(Raw::flag("--nofile", "20000")),
        ..ha()
    })
    .unwrap();
    let n = s.nginx.unwrap();
    assert_eq!(
        (n.worker_connections, n.worker_rlimit_nofile),
        (10_000, Some(20_000))
    );
    // An rlimit asked for past the ulimit is refused, naming --nofile.
    let e = err(SpecInput {
        nofile: Some(Raw::flag("--nofile", "20000")),
        worker_rlimit_nofile: Some(Raw::flag("--worker-rlimit-nofile", "40000")),
        ..ha()
    });
    assert_eq!(e.field, "--nofile");
}

#[test]
fn explicit_overrides_apply_over_variant() {
    let s = resolve(SpecInput {
        nginx: Some(Raw::flag("--nginx", "baseline-default")),
        lb_algorithm: Some(Raw::flag("--lb-algorithm", "least_conn")),
        ..ha()
    })
    .unwrap();
    let n = s.nginx.unwrap();
    assert_eq!(n.lb_algorithm, LbAlgorithm::LeastConn);
    assert_eq!(n.worker_connections, 1024);
    assert_eq!(n.worker_rlimit_nofile, None);
}

#[test]
fn ha_flags_refused_for_single() {
    let e = err(SpecInput {
        topology: Some(Raw::flag("topology", "single")),
        nginx: Some(Raw::flag("--nginx", "tuned-ip-hash")),
        ..Default::default()
    });
    assert_eq!(e.field, "--nginx");
}

#[test]
fn set_rejects_bad_keys_and_managed_keys() {
    for (v, needle) in [
        ("NOEQUALS", "KEY=VALUE"),
        ("lower=1", "environment variable name"),
        ("DB_HOST=x", "set by exectl"),
    ] {
        let e = err(SpecInput {
            env: vec![Raw::flag("--set", v)],
            ..ha()
        });
        assert!(e.to_string().contains(needle), "{e}");
    }
    let s = resolve(SpecInput {
        env: vec![Raw::flag("--set", "X=a \"b\" $c # d\ne")],
        ..ha()
    })
    .unwrap();
    assert_eq!(s.env["X"], "a \"b\" $c # d\ne");
}

#[test]
fn set_secret_follows_set_rules_and_never_echoes_the_value() {
    for (v, needle) in [
        ("NOEQUALS-hunter2", "KEY=VALUE"),
        ("lower=hunter2", "environment variable name"),
        ("DB_HOST=hunter2", "set by exectl"),
        ("DB_ROOT_PASSWORD=hunter2", "exectl generates"),
        ("X=hunter2", "also given with --set"),
        ("Y=hunter 2", "unquoted"),
        ("Y=", "unquoted"),
    ] {
        let e = err(SpecInput {
            env: vec![Raw::flag("--set", "X=1")],
            secret_env: vec![Raw::flag("--set-secret", v)],
            ..ha()
        });
        assert_eq!(e.field, "--set-secret");
        assert!(e.to_string().contains(needle), "{e}");
        assert!(!e.to_string().contains("hunter"), "{e}");
    }
    let s = resolve(SpecInput {
        secret_env: vec![Raw::flag("--set-secret", "SMTP_PASSWORD=hunter2+/=")],
        ..ha()
    })
    .unwrap();
    let v = &s.secret_env["SMTP_PASSWORD"];
    assert_eq!(v.expose(), "hunter2+/=");
    let shown = format!("{:?} {}", s, serde_json::to_string(&s).unwrap());
    assert!(
        !shown.contains("hunter2") && shown.contains(v.redacted()),
        "{shown}"
    );
}

#[test]
fn a_key_given_twice_on_the_command_line_is_refused_naming_it() {
    let twice = |env: Vec<Raw>, secret_env: Vec<Raw>| {
        resolve(SpecInput {
            env,
            secret_env,
            ..ha()
        })
    };
    let e = twice(
        vec![Raw::flag("--set", "X=1"), Raw::flag("--set", "X=2")],
        vec![],
    )
    .unwrap_err();
    assert_eq!((e.field.as_str(), e.value.as_str()), ("--set", "X=2"));
    assert!(e.problem.contains("X is given twice with --set"), "{e}");
    let e = twice(
        vec![],
        vec![
            Raw::flag("--set-secret", "S=hunter2"),
            Raw::flag("--set-secret", "S=hunter3"),
        ],
    )
    .unwrap_err();
    assert_eq!(
        (e.field.as_str(), e.value.as_str()),
        ("--set-secret", "S=<redacted>")
    );
    assert!(
        e.problem.contains("S is given twice with --set-secret"),
        "{e}"
    );
    assert!(!e.to_string().contains("hunter"), "{e}");
    // A flag still wins over exectl.yaml's env:, and a sweep's --vary env.X over both.
    let file = Raw {
        value: "X=1".into(),
        origin: Origin::File {
            path: "exectl.yaml".into(),
            field: "env",
        },
    };
    let s = twice(
        vec![file, Raw::flag("--set", "X=2"), Raw::flag("--vary", "X=3")],
        vec![],
    )
    .unwrap();
    assert_eq!(s.env["X"], "3");
    assert!(twice(
        vec![Raw::flag("--set", "X=1"), Raw::flag("--set", "Y=1")],
        vec![Raw::flag("--set-secret", "Z=a")]
    )
    .is_ok());
}

#[test]
fn memory_sizes() {
    let ok = |v: &str| {
        resolve(SpecInput {
            memory: Some(Raw::flag("--memory", v)),
            ..ha()
        })
    };
    assert_eq!(ok("512M").unwrap().memory_bytes, 512 << 20);
    assert_eq!(ok("1.5g").unwrap().memory_bytes, 3 << 29);
    for bad in [
        "-1g",
        "1x",
        "g",
        "1k",
        "99999999999999999999",
        "9999999999g",
    ] {
        assert_eq!(ok(bad).unwrap_err().field, "--memory", "{bad}");
    }
}

#[test]
fn bad_stack_host_and_images_refused() {
    assert_eq!(
        err(SpecInput {
            stack: Some(Raw::flag("--stack", "Bad Name")),
            ..ha()
        })
        .field,
        "--stack"
    );
    assert_eq!(
        err(SpecInput {
            host: Some(Raw::flag("--host", "a b")),
            ..ha()
        })
        .field,
        "--host"
    );
    assert_eq!(
        err(SpecInput {
            images: vec![("app".into(), Raw::flag("--images", "x y"))],
            ..ha()
        })
        .field,
        "--images"
    );
    assert!(err(SpecInput {
        images: vec![("memcached".into(), Raw::flag("--images", "x"))],
        ..ha()
    })
    .problem
    .contains("memcached"));
}

#[test]
fn worker_processes_are_auto_or_a_count_up_to_64() {
    let with = |v: &str| {
        resolve(SpecInput {
            worker_processes: Some(Raw::flag("--worker-processes", v)),
            ..ha()
        })
    };
    assert_eq!(
        resolve(ha()).unwrap().nginx.unwrap().worker_processes,
        WorkerProcesses::Auto
    );
    assert_eq!(
        with("auto").unwrap().nginx.unwrap().worker_processes,
        WorkerProcesses::Auto
    );
    assert_eq!(
        with("4").unwrap().nginx.unwrap().worker_processes,
        WorkerProcesses::Count(4)
    );
    for bad in ["0", "65", "-1", "two", "Auto", "1.5"] {
        let e = with(bad).unwrap_err();
        assert_eq!(
            (e.field.as_str(), e.value.as_str()),
            ("--worker-processes", bad)
        );
        assert!(e.fix.contains("auto") && e.fix.contains("1 to 64"), "{e}");
    }
    let single = resolve(SpecInput {
        topology: Some(Raw::flag("topology", "single")),
        worker_processes: Some(Raw::flag("--worker-processes", "2")),
        ..Default::default()
    })
    .unwrap_err();
    assert_eq!(single.field, "--worker-processes");
}
