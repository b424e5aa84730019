//! `--break-lock` against a running deploy on a real engine: the teardown that broke it removes
//! everything, the deploy stops at its next step naming who took the lock, and the next deploy and
//! teardown converge. A teardown of a stack never deployed leaves no state behind.

use crate::common;

use common::*;
use std::time::{Duration, Instant};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the Docker engine and the fixture images; bash scripts/test.sh runs it"]
async fn teardown_breaking_a_running_deploys_lock_converges() {
    let d = docker().await;
    let s = Stack::new("break").await;
    let (x, stack, port) = (&*s.x, s.name.as_str(), Stack::port());
    let mut args = vec!["deploy", "ha", "--stack", stack, "--lb-port", &port];
    args.extend(HA_LIMITS);
    args.extend(["--images", FIXTURES, "--health-interval", "1s"]);
    // The teardown comes while the deploy waits for the database to turn healthy.
    let deploy = x
        .command(&args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while !labelled(&d, stack)
        .await
        .iter()
        .any(|n| n.ends_with("-postgres"))
    {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "deploy never started"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let teardown = x.run(&["teardown", "--stack", stack, "--purge", "--break-lock"]);
    assert!(
        teardown.status.success(),
        "teardown: {}",
        String::from_utf8_lossy(&teardown.stderr)
    );
    assert!(String::from_utf8_lossy(&teardown.stderr).contains("(--break-lock)"));
    let deploy = deploy.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&deploy.stderr);
    assert!(
        !deploy.status.success(),
        "the broken deploy must not report success: {err}"
    );
    assert!(
        err.contains("was taken over by exectl teardown"),
        "the deploy names who took its lock: {err}"
    );
    // README's exit-code table: a lock taken from this command while it ran is 4, as a held one is.
    assert_eq!(deploy.status.code(), Some(4), "{err}");
    // Whatever is left, the next teardown converges to nothing, and the next deploy to a ready stack.
    x.ok(&["teardown", "--stack", stack, "--purge"]);
    assert!(
        labelled(&d, stack).await.is_empty(),
        "{:?}",
        labelled(&d, stack).await
    );
    let mut again = vec!["ha", "--stack", stack, "--lb-port", &port];
    again.extend(HA_LIMITS);
    x.deploy_json(&again);
    assert!(
        !x.stack_dir(stack).join("exectl.lock").exists(),
        "the lock is released"
    );
    x.ok(&["teardown", "--stack", stack, "--purge"]);
    assert!(labelled(&d, stack).await.is_empty());
}

#[test]
#[ignore = "needs the Docker engine; bash scripts/test.sh runs it"]
fn teardown_of_a_stack_never_deployed_leaves_no_state() {
    let x = Exectl::new();
    let out = x.ok(&["teardown", "--stack", "t-never-deployed"]);
    assert!(out.contains("nothing to remove"), "{out}");
    let left: Vec<_> = std::fs::read_dir(x.state.path()).unwrap().collect();
    assert!(left.is_empty(), "state written: {left:?}");
}

/// A stack locked by a live holder is exit 4 for every command that takes the lock, naming the holder.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the Docker engine and the fixture images; bash scripts/test.sh runs it"]
async fn a_held_lock_is_exit_4() {
    let d = docker().await;
    let s = Stack::new("held").await;
    let (x, stack, port) = (&*s.x, s.name.as_str(), Stack::port());
    let dir = x.stack_dir(stack);
    std::fs::create_dir_all(&dir).unwrap();
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    // PID 1 is alive: the lock is not stale.
    let holder = serde_json::json!({"pid": 1, "host": host.trim(), "command": "exectl deploy",
        "since": "2026-12-01 00:00:00 UTC", "since_epoch": 0});
    std::fs::write(dir.join("exectl.lock"), holder.to_string()).unwrap();
    let deploy = [
        &["deploy"][..],
        &single_sqlite(stack, &port),
        &["--images", FIXTURES],
    ]
    .concat();
    for args in [&["teardown", "--stack", stack][..], &deploy] {
        let (code, err) = failed(&x.run(args));
        assert_eq!(code, Some(4), "{args:?}: {err}");
        assert!(err.contains("locked by exectl deploy (pid 1"), "{err}");
    }
    assert!(dir.join("exectl.lock").exists(), "the holder's lock stays");
    assert!(labelled(&d, stack).await.is_empty(), "nothing created");
}
