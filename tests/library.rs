//! exectl as a library: deploy → prepare → bench as calls of the operations (`exectl::ops`), with
//! options structs made in code — no subprocess, no clap — on the real engine with the stand-in app.
//! This is how `sweep` drives them.

use crate::common;

use std::time::Duration;

use exectl::load::settings::LoadSettings;
use exectl::load::Scenario;
use exectl::ops::bench_settings::BenchSettings;
use exectl::ops::deploy::DeployOptions;
use exectl::ops::prepare::PrepareOptions;
use exectl::ops::spec_source::SpecSource;
use exectl::ops::sweep::{Mode, SweepOptions};
use exectl::ops::{Context, Silent};
use exectl::state::bench_dir::BenchDir;
use exectl::state::sweeps::SweepDir;
use exectl::sut::{Target, TargetSpec};
use exectl_core::render::Templates;
use exectl_core::spec::{self, SpecInput};
use exectl_core::sweep::vary;

#[test]
#[ignore = "needs the Docker engine and the fixture images"]
fn deploy_prepare_and_bench_are_library_calls() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let stack = rt.block_on(common::Stack::new("lib"));
    // The operations keep their state where the guard's teardown looks for it.
    std::env::set_var("EXECTL_STATE_DIR", stack.x.state.path());
    let target = rt.block_on(Target::connect(&TargetSpec::local())).unwrap();
    // Every operation runs in a context: the connected target, where its events go, its stop token.
    let cx = Context::new(&target, &Silent);

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
        .block_on(exectl::ops::deploy::deploy(&cx, &spec, &opts))
        .unwrap();
    assert!(deployed.ok(), "{deployed:?}");
    assert!(deployed.changed > 0 && !deployed.plan.is_noop());
    // Limits read back on every app instance and nginx, all as the spec says.
    let limited: Vec<&str> = deployed.limits.iter().map(|e| e.service.as_str()).collect();
    assert_eq!(limited, ["app-1", "app-2", "nginx"], "{deployed:?}");
    assert!(deployed.limits.iter().all(|e| e.nofile_soft == Some(20000)));
    // Converging: the same spec again changes nothing, and says so in its outcome.
    let again = rt
        .block_on(exectl::ops::deploy::deploy(&cx, &spec, &opts))
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

    // 40 accounts in 10 projects, seeded through SQL at bcrypt's lowest cost.
    let mut seed = exectl::prepare::Options::seeding(40, Some(10)).unwrap();
    seed.bcrypt_cost = 4;
    let prepare = PrepareOptions {
        seed,
        break_lock: false,
    };
    let prepared = rt
        .block_on(exectl::ops::prepare::prepare(&cx, &stack.name, prepare))
        .unwrap();
    assert_eq!(prepared.summary.accounts, 40);
    assert!(
        !prepared.summary.checks.is_empty(),
        "verified through the front door"
    );

    // Two benches of the stack, with different options: idle levels of 10 and 40 users held 3 s, then
    // one collab level of 20 (rooms of 4) sampled every 250 ms.
    let idle = BenchSettings {
        load: LoadSettings {
            ramp: Some(Duration::from_secs(2)),
            hold: Duration::from_secs(3),
            ..LoadSettings::default()
        },
        sample: Duration::from_millis(500),
        settle: Duration::from_secs(15),
        ..BenchSettings::default()
    };
    let collab = BenchSettings {
        load: LoadSettings {
            scenario: Scenario::Collab,
            ..idle.load.clone()
        },
        sample: Duration::from_millis(250),
        ..idle.clone()
    };
    let local = TargetSpec::local();
    let mut benched = Vec::new();
    for (id, settings, levels) in [("LIB-1", &idle, &[10, 40][..]), ("LIB-2", &collab, &[20])] {
        let out = stack.x.state.path().join(id);
        let folder = BenchDir::check(&out, "out", id).unwrap();
        let o = settings
            .options(&local, &stack.name, levels, id, folder)
            .unwrap();
        // bench runs its own runtimes (the sampler's thread, the load's), so it is called outside this
        // one, which stays up and serves the target's connections.
        let b = exectl::ops::bench::bench(&cx, o).unwrap();
        assert!(b.passed(), "{id}: {}", b.results.verdict.headline);
        // What the outcome says is what the bench's folder holds.
        let (saved, samples) = exectl::state::bench_dir::read(&out, id).unwrap();
        assert_eq!(saved.levels.len(), levels.len());
        assert!(!samples.is_empty() && b.report.exists());
        benched.push(b.results);
    }
    let (first, second) = (&benched[0], &benched[1]);
    assert_eq!(
        first.levels.iter().map(|l| l.users).collect::<Vec<_>>(),
        [10, 40]
    );
    let held = first.levels[1].figures.plateau.as_ref().expect("a plateau");
    assert_eq!(
        held.min_open, 40,
        "40 open at once for the whole hold: {held:?}"
    );
    assert_eq!(first.deploy_run_id.as_deref(), Some(again.run_id.as_str()));
    // The second bench's options are its own: collab frames relayed, sampled twice as often.
    assert_eq!(second.scenario, "collab");
    assert!(
        second.levels[0].figures.delivery_ms.is_some(),
        "{:?}",
        second.levels[0].figures
    );
    assert!(
        second.sample_s < first.sample_s,
        "{} {}",
        second.sample_s,
        first.sample_s
    );
    drop(target);
    drop(stack);
}

/// A sweep as a library call: a single SQLite stack, env.SWEEP_MARK = a,b, one level of 5 users at
/// each point; every option a field, no command line.
#[test]
#[ignore = "needs the Docker engine and the fixture images"]
fn a_two_value_sweep_is_a_library_call() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let stack = rt.block_on(common::Stack::new("libsweep"));
    std::env::set_var("EXECTL_STATE_DIR", stack.x.state.path());
    let mut flags = SpecInput::default();
    let port = common::Stack::port();
    for (key, value) in [
        ("topology", "single"),
        ("db", "sqlite"),
        ("stack", stack.name.as_str()),
        ("http_port", port.as_str()),
        ("nofile", "20000"),
        ("health_interval", "1s"),
    ] {
        flags.set(key, value).unwrap();
    }
    flags
        .env
        .push(spec::Raw::flag("--set", "STANDIN_ROOM_CLEANUP_MS=500"));
    let mut seed = exectl::prepare::Options::seeding(5, None).unwrap();
    seed.bcrypt_cost = 4;
    let out = stack.x.state.path().join("sweep-lib");
    let o = SweepOptions {
        run_id: "S-LIB".into(),
        dir: SweepDir::check(&out, "out", "sweep-lib").unwrap(),
        spec: SpecSource {
            flags,
            images: Some(common::FIXTURES.into()),
            ..SpecSource::default()
        },
        vary: vec![vary::parse("vary", "env.SWEEP_MARK=a,b").unwrap()],
        repeat: 1,
        mode: Mode::Levels(vec![5]),
        deploy: DeployOptions::new(Templates::embedded()),
        seed,
        bench: BenchSettings {
            load: LoadSettings {
                ramp: Some(Duration::from_secs(1)),
                hold: Duration::from_secs(2),
                ..LoadSettings::default()
            },
            sample: Duration::from_millis(500),
            settle: Duration::from_secs(10),
            ..BenchSettings::default()
        },
        teardown: false,
        resumed: None,
        sweep_file: None,
        started_in: std::env::current_dir().unwrap(),
    };
    let target = rt.block_on(Target::connect(&TargetSpec::local())).unwrap();
    let swept = exectl::ops::sweep::sweep(&Context::new(&target, &Silent), o).unwrap();
    let r = &swept.results;
    assert!(swept.complete(), "{:?}", r.stopped);
    assert_eq!(r.values, [["a", "b"]]);
    let points: Vec<(&str, Option<u64>)> = r
        .points
        .iter()
        .map(|p| (p.values[0].as_str(), p.capacity))
        .collect();
    assert_eq!(points, [("a", Some(5)), ("b", Some(5))], "{r:?}");
    // Point 2 changed the app's environment only: the app alone was recreated.
    assert_eq!(r.points[1].recreated, ["app"], "{:?}", r.points[1]);
    assert!(swept.report.exists());
    drop(stack);
}

/// A campaign as library calls: a file of two rows planned by `ops::campaign_plan::plan` (options
/// with `Default`, the stack and port as fields) and run by `ops::campaign::campaign` — no command
/// line, no clap. Row 2 runs on row 1's stack as it is.
#[test]
#[ignore = "needs the Docker engine and the fixture images"]
fn a_two_row_campaign_is_planned_and_run_by_library_calls() {
    use exectl::ops::campaign_plan::{plan, PlanOptions};
    use exectl_core::campaign::results::RunFlags;
    let rt = tokio::runtime::Runtime::new().unwrap();
    let stack = rt.block_on(common::Stack::new("libcamp"));
    std::env::set_var("EXECTL_STATE_DIR", stack.x.state.path());
    let file = stack.x.state.path().join("two.yaml");
    std::fs::write(
        &file,
        format!(
            "name: two\nimages: {}\nspec: {{db: sqlite, nofile: 20000, health_interval: 1s}}\n\
             set: [STANDIN_ROOM_CLEANUP_MS=500]\nbcrypt_cost: 4\n\
             bench: {{hold: 2s, ramp: 1s, settle: 10s, sample: 500ms}}\nrows:\n\
             \x20 - {{name: idle, topology: single, levels: [3]}}\n\
             \x20 - {{name: longer, topology: single, levels: [4], bench: {{hold: 3s}}}}\n",
            common::FIXTURES
        ),
    )
    .unwrap();
    let (target_spec, opts, planned) = plan(&PlanOptions {
        file: Some(file),
        out: Some(stack.x.state.path().join("campaign")),
        flags: RunFlags {
            stack: Some(stack.name.clone()),
            http_port: Some(common::Stack::port()),
            teardown: true,
            ..RunFlags::default()
        },
        ..PlanOptions::default()
    })
    .unwrap();
    let deploys: Vec<String> = planned
        .rows
        .iter()
        .map(|r| format!("{:?}", r.deploy))
        .collect();
    assert_eq!(deploys, ["First", "Same"]);
    let target = rt.block_on(Target::connect(&target_spec)).unwrap();
    let ran = exectl::ops::campaign::campaign(&Context::new(&target, &Silent), opts).unwrap();
    let rows = &ran.results.rows;
    assert_eq!(rows.len(), 2);
    let line = |i: usize| {
        let l = &rows[i].lines[0];
        (l.users, l.success_pct, l.result.clone())
    };
    assert_eq!(line(0), (3, 100.0, "pass".to_string()), "{rows:?}");
    assert_eq!(line(1), (4, 100.0, "pass".to_string()), "{rows:?}");
    assert!(ran.report_md.exists());
    // `teardown: true` removed the row's stack; its data too, here.
    let single = format!("{}-single", stack.name);
    rt.block_on(exectl::ops::teardown::teardown(
        &Context::new(&target, &Silent),
        &single,
        &exectl::ops::teardown::TeardownOptions {
            purge: true,
            break_lock: true,
        },
    ))
    .unwrap();
    drop(stack);
}
