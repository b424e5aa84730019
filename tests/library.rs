//! exectl as a library: deploy → prepare → bench as calls of the operations (`exectl::ops`), with
//! options structs made in code — no subprocess, no clap — on the real engine with the stand-in app.
//! This is how `sweep` drives them.

mod common;

use std::sync::Arc;
use std::time::Duration;

use exectl::bench::Stop;
use exectl::load::{endpoint, LoadOptions, Manifest, Scenario};
use exectl::ops::bench::BenchOptions;
use exectl::ops::deploy::DeployOptions;
use exectl::ops::prepare::PrepareOptions;
use exectl::ops::Silent;
use exectl::prepare::plan::{self, EmailPattern, Visibility};
use exectl::prepare::{Options, Via};
use exectl::state::bench_dir::BenchDir;
use exectl::sut::{Target, TargetSpec};
use exectl_core::bench::Slos;
use exectl_core::render::Templates;
use exectl_core::spec::{self, SpecInput};

#[test]
#[ignore = "needs the Docker engine and the fixture images"]
fn deploy_prepare_and_bench_are_library_calls() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let stack = rt.block_on(common::Stack::new("lib"));
    // The operations keep their state where the guard's teardown looks for it.
    std::env::set_var("EXECTL_STATE_DIR", stack.x.state.path());
    let target = rt.block_on(Target::connect(&TargetSpec::local())).unwrap();

    // The spec, set by key as sweep sets the variable it varies.
    let mut input = SpecInput::default();
    let port = common::Stack::port();
    for (key, value) in [
        ("topology", "ha"),
        ("stack", stack.name.as_str()),
        ("instances", "2"),
        ("lb_port", port.as_str()),
        ("cpus", "1"),
        ("memory", "512m"),
        ("nofile", "20000"),
        ("worker_rlimit_nofile", "20000"),
        ("worker_connections", "10000"),
        ("health_interval", "1s"),
    ] {
        input.set(key, value).unwrap();
    }
    // Rooms dropped 2 s after their last member left (the app's 30 s would outlast the settle).
    input
        .env
        .push(spec::Raw::flag("--set", "STANDIN_ROOM_CLEANUP_MS=2000"));
    let images = std::path::Path::new(common::FIXTURES);
    input.images =
        spec::parse_images_file(images, &std::fs::read_to_string(images).unwrap()).unwrap();
    let spec = spec::resolve(input).unwrap();

    let opts = DeployOptions::new(Templates::embedded());
    let deployed = rt
        .block_on(exectl::ops::deploy::deploy(&target, &spec, &opts, &Silent))
        .unwrap();
    assert!(deployed.ok(), "{deployed:?}");
    assert!(deployed.changed > 0 && !deployed.plan.is_noop());
    // Limits read back on every app instance and nginx, all as the spec says.
    let limited: Vec<&str> = deployed.limits.iter().map(|e| e.service.as_str()).collect();
    assert_eq!(limited, ["app-1", "app-2", "nginx"], "{deployed:?}");
    assert!(deployed.limits.iter().all(|e| e.nofile_soft == Some(20000)));
    // Converging: the same spec again changes nothing, and says so in its outcome.
    let again = rt
        .block_on(exectl::ops::deploy::deploy(&target, &spec, &opts, &Silent))
        .unwrap();
    assert!(
        again.plan.is_noop() && again.changed == 0,
        "{:?}",
        again.plan
    );
    assert_ne!(
        again.run_id, deployed.run_id,
        "every deploy has its run record"
    );

    // 40 accounts, 4 to a project, seeded through SQL.
    let pattern = EmailPattern::parse(plan::DEFAULT_PATTERN).unwrap();
    let shape = plan::shape(40, None, Some(4)).unwrap();
    let seed = Options {
        via: Via::Sql,
        plan: plan::plan(shape, &pattern, Visibility::Private),
        password: plan::DEFAULT_PASSWORD.into(),
        bcrypt_cost: 4,
        stack_dir: Default::default(),
        out: None,
        token_ttl: None,
        batch: 5000,
        schema_timeout: Duration::from_secs(60),
    };
    let prepared = rt
        .block_on(exectl::ops::prepare::prepare(
            &target,
            &stack.name,
            PrepareOptions {
                seed,
                break_lock: false,
            },
            &Silent,
        ))
        .unwrap();
    assert_eq!(prepared.summary.accounts, 40);
    assert!(
        !prepared.summary.checks.is_empty(),
        "verified through the front door"
    );

    // Two idle levels, 10 and 40 users at once for 3 s each, from the manifest just written.
    let record = exectl::state::record::read(&target.bundle_dir(&stack.name), &stack.name)
        .unwrap()
        .expect("the deploy wrote its record");
    let door = endpoint::from_stack(&stack.name, Some(&record), target.address()).unwrap();
    let manifest = Manifest::read(&prepared.summary.manifest, false).unwrap();
    let plans: Vec<LoadOptions> = [10, 40]
        .iter()
        .map(|&users| {
            let mut l = LoadOptions::new(Scenario::Idle, door.clone(), manifest.clone(), users);
            (l.ramp, l.hold, l.run_id) = (
                Duration::from_secs(2),
                Duration::from_secs(3),
                format!("lib-{users}"),
            );
            l
        })
        .collect();
    let out = stack.x.state.path().join("bench-lib");
    let bench = BenchOptions {
        run_id: "LIB-1".into(),
        stack: stack.name.clone(),
        out: BenchDir::check(&out, "out", "bench-lib").unwrap(),
        levels_text: "10,40".into(),
        levels: vec![10, 40],
        plans,
        slos: Slos::default(),
        sample: Duration::from_millis(500),
        settle: Duration::from_secs(15),
        continue_after_fail: false,
        sample_lines: false,
        stop: Arc::new(Stop::default()),
        browser: None,
    };
    // bench runs its own runtime (the sampler's thread, the load's), so it is called outside this one.
    let benched = exectl::ops::bench::bench(&TargetSpec::local(), bench, &Silent).unwrap();
    let r = &benched.results;
    assert!(benched.passed(), "{}", r.verdict.headline);
    assert_eq!(
        r.levels.iter().map(|l| l.users).collect::<Vec<_>>(),
        [10, 40]
    );
    let held = r.levels[1].figures.plateau.as_ref().expect("a plateau");
    assert_eq!(
        held.min_open, 40,
        "40 open at once for the whole hold: {held:?}"
    );
    assert_eq!(r.deploy_run_id.as_deref(), Some(again.run_id.as_str()));
    // What the outcome says is what the bench's folder holds.
    let (saved, samples) = exectl::state::bench_dir::read(&out, "LIB-1").unwrap();
    assert_eq!(saved.levels.len(), 2);
    assert!(!samples.is_empty() && benched.report.exists());
    drop(target);
    drop(stack);
}
