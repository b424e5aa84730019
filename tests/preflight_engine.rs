//! Deploy's preflight on a real engine: what the target cannot give, a database engine change over kept
//! data (told from the volume's own files, with or without the stack's record), and names or ports
//! something else holds are refused with exit 2 before anything is created, by deploy and by plan alike,
//! every refusal at once; nothing foreign is touched.

use crate::common;

use common::*;

/// Exit 2, the flag named, and not one object of the stack on the engine.
async fn refused(
    x: &Exectl,
    d: &bollard::Docker,
    stack: &str,
    args: &[&str],
    flag: &str,
) -> String {
    let (code, err) = failed(&x.run(args));
    assert_eq!(code, Some(2), "{args:?}: {err}");
    assert!(err.contains(&format!("invalid {flag} ")), "{args:?}: {err}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(
        labelled(d, stack).await.is_empty(),
        "{args:?} created objects"
    );
    err
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the Docker engine, the docker CLI and the fixture images; bash scripts/test.sh runs it"]
async fn what_the_target_cannot_give_is_refused_by_plan_and_deploy() {
    let d = docker().await;
    let s = Stack::new("pre-cap").await;
    let (x, stack, port) = (&*s.x, s.name.as_str(), Stack::port());
    let cases: [(&[&str], &str); 6] = [
        (&["--nofile", "30000"], "--nofile"),
        (&["--cpus", "1000"], "--cpus"),
        (&["--memory", "200g"], "--memory"),
        (&["--memory", "99999999999999999999"], "--memory"),
        (&["--cpus", "1e-10"], "--cpus"),
        (&["--wait-timeout", "0s"], "--wait-timeout"),
    ];
    for (extra, flag) in cases {
        for cmd in ["plan", "deploy"] {
            if cmd == "plan" && flag == "--wait-timeout" {
                continue;
            }
            let mut args = vec![cmd, "single", "--db", "sqlite", "--stack", stack];
            args.extend(["--http-port", &port, "--images", FIXTURES]);
            if flag != "--nofile" {
                args.extend(["--nofile", "20000"]);
            }
            args.extend(extra);
            let err = refused(x, &d, stack, &args, flag).await;
            if cmd == "plan" && flag == "--nofile" {
                assert!(err.contains("deploy would refuse"), "{err}");
            }
        }
    }
    // A value given beyond the target is refused as given, never fitted like a default (a given
    // --nofile: above, and deploy_engine's preflight test): nginx's worker_connections that the nofile
    // fitted to the target cannot hold, named.
    for cmd in ["plan", "deploy"] {
        let mut args = vec![cmd, "ha", "--stack", stack, "--lb-port", &port];
        args.extend(["--images", FIXTURES, "--worker-connections", "16000"]);
        let err = refused(x, &d, stack, &args, "--worker-connections").await;
        assert!(
            err.contains("nginx needs worker_rlimit_nofile 32000")
                && err.contains("pass --worker-connections 10000 or less"),
            "{cmd}: {err}"
        );
    }
    assert!(
        !x.stack_dir(stack).join("bundle").exists(),
        "nothing written"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the Docker engine, the docker CLI and the fixture images; bash scripts/test.sh runs it"]
async fn changing_db_over_kept_data_is_refused_before_anything_changes() {
    let d = docker().await;
    let s = Stack::new("pre-db").await;
    let (x, stack, port) = (&*s.x, s.name.as_str(), Stack::port());
    let base = [
        "single",
        "--stack",
        stack,
        "--http-port",
        &port,
        "--nofile",
        "20000",
    ];
    x.deploy_json(&[&base[..], &["--db", "mariadb"]].concat());
    let before = container_ids(&d, stack).await;
    for cmd in ["deploy", "plan"] {
        let mut args = vec![cmd];
        args.extend(base);
        args.extend(["--db", "postgres", "--images", FIXTURES]);
        let (code, err) = failed(&x.run(&args));
        assert_eq!(code, Some(2), "{cmd}: {err}");
        assert!(
            err.contains("invalid --db \"postgres\"")
                && err.contains("holds MariaDB data")
                && err.contains("--purge"),
            "{cmd}: {err}"
        );
    }
    assert_eq!(container_ids(&d, stack).await, before, "nothing changed");
    // A sweep whose second point would meet the data is refused before its first: exit 2, nothing
    // deployed, nothing recorded, no resume suggested.
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("sweep");
    let mut args = vec!["sweep"];
    args.extend(base);
    args.extend([
        "--vary",
        "db=sqlite,postgres",
        "--levels",
        "5",
        "--hold",
        "1s",
    ]);
    args.extend(["--images", FIXTURES, "--out", out.to_str().unwrap()]);
    let (code, err) = failed(&x.run(&args));
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("invalid --db \"postgres\"") && err.contains("holds MariaDB data"),
        "{err}"
    );
    assert!(!err.contains("--resume") && !out.exists(), "{err}");
    assert_eq!(container_ids(&d, stack).await, before, "nothing changed");
    // After --purge the same change deploys.
    x.ok(&["teardown", "--stack", stack, "--purge"]);
    x.deploy_json(&[&base[..], &["--db", "postgres"]].concat());
    x.ok(&["teardown", "--stack", stack, "--purge"]);
    assert!(labelled(&d, stack).await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the Docker engine, the docker CLI and the fixture images; bash scripts/test.sh runs it"]
async fn names_and_ports_held_elsewhere_are_found_before_anything_is_created() {
    let d = docker().await;
    let s = Stack::new("pre-clash").await;
    let (x, stack, free) = (&*s.x, s.name.as_str(), Stack::port());
    let foreign = s.container("app");
    let _held = Foreign::start(
        &foreign,
        &[
            "create",
            "--name",
            &foreign,
            "exectl-fixture/debian:bookworm",
            "sleep",
            "600",
        ],
    );
    let base = [
        "deploy", "single", "--db", "sqlite", "--stack", stack, "--images", FIXTURES, "--nofile",
        "20000",
    ];
    let err = refused(
        x,
        &d,
        stack,
        &[&base[..], &["--http-port", &free]].concat(),
        "--stack",
    )
    .await;
    assert!(
        err.contains(&foreign) && err.contains("did not create"),
        "{err}"
    );
    // Never touched: the foreign container is still there, as it was.
    let state = docker_cli(&["inspect", "-f", "{{.State.Status}}", &foreign]);
    assert_eq!(state.trim(), "created");
    docker_cli(&["rm", "-f", &foreign]);

    // A port some process here listens on.
    let listener = std::net::TcpListener::bind("0.0.0.0:0").unwrap();
    let port = listener.local_addr().unwrap().port().to_string();
    let err = refused(
        x,
        &d,
        stack,
        &[&base[..], &["--http-port", &port]].concat(),
        "--http-port",
    )
    .await;
    assert!(err.contains("already in use"), "{err}");
    drop(listener);

    // Free again: it deploys, and a re-deploy of its own port is no conflict.
    x.deploy_json(&single_sqlite(stack, &port));
    x.deploy_json(&single_sqlite(stack, &port));
    // Another stack asking for the same port is told which container holds it.
    let s2 = s.beside("pre-clash2").await;
    let other = s2.name.as_str();
    let err = refused(
        x,
        &d,
        other,
        &[
            "deploy",
            "single",
            "--db",
            "sqlite",
            "--stack",
            other,
            "--http-port",
            &port,
            "--images",
            FIXTURES,
            "--nofile",
            "20000",
        ],
        "--http-port",
    )
    .await;
    assert!(
        err.contains(&format!("container exectl-{stack}-traefik")),
        "{err}"
    );
    x.ok(&["teardown", "--stack", stack, "--purge"]);
    assert!(labelled(&d, stack).await.is_empty());
}

/// The stack's record file (exectl.lock.json), which README says to remove when it cannot be read.
fn remove_record(x: &Exectl, stack: &str) {
    let record = x.stack_dir(stack).join("bundle").join("exectl.lock.json");
    std::fs::remove_file(&record).unwrap_or_else(|e| panic!("{}: {e}", record.display()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the Docker engine, the docker CLI and the fixture images; bash scripts/test.sh runs it"]
async fn the_db_guard_reads_the_data_not_the_record() {
    let d = docker().await;
    let s = Stack::new("pre-dbvol").await;
    let (x, stack, port) = (&*s.x, s.name.as_str(), Stack::port());
    let base = [
        "single",
        "--stack",
        stack,
        "--http-port",
        &port,
        "--nofile",
        "20000",
    ];
    let deploy = |db: &'static str| x.deploy_json(&[&base[..], &["--db", db]].concat());
    let with = |cmd: &'static str, db: &'static str| {
        let mut args = vec![cmd];
        args.extend(base);
        args.extend(["--db", db, "--images", FIXTURES]);
        args
    };
    for (kept, other, found) in [
        (
            "mariadb",
            "postgres",
            "holds MariaDB data (ibdata1, mysql/ found in it)",
        ),
        (
            "postgres",
            "mariadb",
            "holds PostgreSQL data (PG_VERSION found in it)",
        ),
    ] {
        deploy(kept);
        // No record: what the volume holds still decides.
        remove_record(x, stack);
        let before = container_ids(&d, stack).await;
        assert!(before.contains_key(kept), "{before:?}");
        for cmd in ["deploy", "plan"] {
            let (code, err) = failed(&x.run(&with(cmd, other)));
            assert_eq!(code, Some(2), "{cmd} --db {other}: {err}");
            assert!(
                err.contains(&format!("invalid --db \"{other}\""))
                    && err.contains(found)
                    && err.contains(&format!("deploy with --db {kept}")),
                "{cmd} --db {other}: {err}"
            );
        }
        assert_eq!(
            container_ids(&d, stack).await,
            before,
            "nothing changed: the {kept} container is still there"
        );
        let probes = docker_cli(&[
            "ps",
            "-aq",
            "--filter",
            &format!("name={stack}-db-data-probe"),
        ]);
        assert_eq!(probes.trim(), "", "the volume's probe container is removed");
        // The data's own engine converges, on the same data.
        let again = deploy(kept);
        assert_eq!(again["ok"], true, "{again}");
        x.ok(&["teardown", "--stack", stack, "--purge"]);
    }
    assert!(labelled(&d, stack).await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the Docker engine, the docker CLI and the fixture images; bash scripts/test.sh runs it"]
async fn plan_and_deploy_name_every_refusal() {
    let d = docker().await;
    let s = Stack::new("pre-all").await;
    let (x, stack) = (&*s.x, s.name.as_str());
    // Two problems at once: more CPUs than the target has, and a port a process here listens on.
    let listener = std::net::TcpListener::bind("0.0.0.0:0").unwrap();
    let port = listener.local_addr().unwrap().port().to_string();
    for cmd in ["plan", "deploy"] {
        let args = [
            cmd,
            "single",
            "--db",
            "sqlite",
            "--stack",
            stack,
            "--images",
            FIXTURES,
            "--nofile",
            "20000",
            "--cpus",
            "64",
            "--http-port",
            &port,
        ];
        let err = refused(x, &d, stack, &args, "--cpus").await;
        assert!(
            err.contains("2 problems")
                && err.contains(&format!("invalid --http-port \"{port}\""))
                && err.contains("already in use"),
            "{cmd}: {err}"
        );
    }
    drop(listener);
}
