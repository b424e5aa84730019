//! `exectl bench`: check every flag (exit 2 before any connection), then run the levels against the
//! stack with the sampler on, saving results.json, timeline.jsonl and report.html after every level,
//! and print the verdict. Exit 0 when every level passed, 1 when one failed.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result};

use crate::bench::sampler::Sampler;
use crate::bench::{self, Done};
use crate::cli::{duration_flag, BenchArgs, LoadArgs};
use crate::core::bench::results::{REPORT, RESULTS, TIMELINE};
use crate::core::bench::timeline::busiest;
use crate::core::bench::{
    parse_levels, report, LevelResult, Results, RunState, Sample, SamplerCost, Slos, Verdict,
};
use crate::error::{exit, UsageError};
use crate::load::preflight;

const MAX_WAIT: Duration = Duration::from_secs(24 * 3600);

/// Where bench runs live: `<state>/benches/RUN_ID/`.
pub fn benches_dir() -> PathBuf {
    crate::secrets::state_root().join("benches")
}

/// The load flags of one level, as `exectl load` would get them.
fn level_args(a: &BenchArgs, stack: &str, users: u64, run_id: &str) -> LoadArgs {
    LoadArgs {
        target: a.target.clone(),
        scenario: a.scenario.clone(),
        stack: Some(stack.to_string()),
        url: None,
        host_header: None,
        manifest: None,
        pattern: a.pattern.clone(),
        users: Some(users.to_string()),
        ramp: a.ramp.clone(),
        dial_concurrency: a.dial_concurrency.clone(),
        hold: a.hold.clone(),
        interval: a.interval.clone(),
        tokens: a.tokens,
        run_id: Some(format!("{run_id}-{users}")),
        json: false,
        out: None,
        quiet: true,
    }
}

/// The stack's recorded knobs and nginx's connection capacity (worker_connections × workers).
fn knobs(
    bundle: &Path,
    host_cpus: Option<f64>,
) -> (std::collections::BTreeMap<String, String>, Option<u64>) {
    let text = std::fs::read_to_string(bundle.join(crate::render::RECORD)).unwrap_or_default();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
    let mut k = crate::runs::flattened(&v["spec"]);
    k.retain(|key, _| !key.starts_with("images.") && !key.starts_with("secret_env"));
    let cap = v["spec"]["nginx"]["worker_connections"]
        .as_u64()
        .zip(host_cpus)
        .map(|(w, cpus)| w * cpus.max(1.0) as u64);
    (k, cap)
}

/// The newest deploy record of this stack, if any.
fn deploy_run_id(stack: &str) -> Option<String> {
    let dir = crate::runs::runs_dir(&crate::secrets::state_root());
    let mut newest: Option<(u64, String)> = None;
    for id in crate::runs::list_ids(&dir) {
        if let Ok(r) = crate::runs::load(&dir, &id) {
            if r.stack == stack && newest.as_ref().is_none_or(|(t, _)| r.created_epoch >= *t) {
                newest = Some((r.created_epoch, r.id));
            }
        }
    }
    newest.map(|n| n.1)
}

/// results.json, timeline.jsonl and report.html, each written whole.
pub fn save(dir: &Path, r: &Results, samples: &[Sample]) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let mut json = serde_json::to_string_pretty(r)?;
    json.push('\n');
    crate::shell::atomic::write(&dir.join(RESULTS), json.as_bytes(), 0o644)?;
    let mut lines = String::new();
    for s in samples {
        lines.push_str(&serde_json::to_string(s)?);
        lines.push('\n');
    }
    crate::shell::atomic::write(&dir.join(TIMELINE), lines.as_bytes(), 0o644)?;
    let html = report::render(r, samples).map_err(|e| anyhow::anyhow!(e))?;
    crate::shell::atomic::write(&dir.join(REPORT), html.as_bytes(), 0o644)?;
    Ok(())
}

fn progress(d: &Done, json: bool) {
    if json {
        return;
    }
    let l = d.result;
    let busiest = busiest(l.span.during(d.samples).flat_map(|s| &s.containers));
    eprintln!(
        "level {}/{}: {} users, held {}/{}, failures {}, busiest {} — {}",
        d.index + 1,
        d.of,
        l.users,
        l.figures.held,
        l.figures.users,
        l.figures.failures.values().sum::<u64>(),
        busiest,
        if l.passed {
            "pass".to_string()
        } else {
            format!("FAIL: {}", l.reasons.join("; "))
        }
    );
}

pub fn run(a: &BenchArgs) -> Result<i32> {
    // Every flag first: no connection, no file, before these hold.
    let levels = parse_levels(&a.levels)?;
    let slos = Slos::with_overrides(&a.slo)?;
    let sample = duration_flag(
        "--sample",
        &a.sample,
        Duration::from_millis(200),
        Duration::from_secs(60),
    )?;
    let settle = duration_flag("--settle", &a.settle, Duration::ZERO, MAX_WAIT)?;
    let stack = crate::spec::resolve_stack_name(a.stack.as_deref())?;
    let run_id = super::run_id(a.run_id.as_deref(), "B-IDLE-HA2-001", |now| {
        format!("B-{}-{now}", a.scenario)
    })?;
    let out_dir = match &a.out {
        Some(d) => d.clone(),
        None => benches_dir().join(&run_id),
    };
    if out_dir.join(RESULTS).exists() {
        return Err(UsageError::new(
            if a.out.is_some() { "--out" } else { "--run-id" },
            if a.out.is_some() {
                out_dir.display().to_string()
            } else {
                run_id.clone()
            },
            "a bench already wrote its results there",
            "give another --run-id (or --out), or remove that folder",
        )
        .into());
    }
    let top = *levels.last().expect("at least one level");
    // Each level's load flags, checked as `exectl load` checks them (the manifest holds the top level).
    let mut plans = Vec::with_capacity(levels.len());
    for users in &levels {
        let opts = super::load::options(&level_args(a, &stack, *users, &run_id)).map_err(|e| {
            if e.field == "--users" {
                UsageError::new(
                    "--levels",
                    &a.levels,
                    e.problem,
                    "prepare at least as many accounts as the top level",
                )
            } else {
                e
            }
        })?;
        plans.push(opts);
    }
    let first = &plans[0];
    let needs = preflight::Needs {
        sockets: if first.scenario.uses_socket() { top } else { 0 },
        http: plans.last().map_or(1, |p| p.dial_concurrency as u64 + 1),
    };
    preflight::ensure(needs)?;
    let (hold, ramp) = (first.hold, first.ramp);
    let scenario = first.scenario.name().to_string();

    let spec = super::target_spec(&a.target)?;
    let target_name = spec.describe();
    let deployed = {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let target = rt.block_on(crate::sut::Target::connect(&spec))?;
        crate::status::read_deployed(&target, &stack)?
    };
    let bundle = spec.bundle_dir(&stack);
    let started_unix_s = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let sampler = Sampler::start(spec, stack.clone(), deployed, sample, None)?;
    let (knobs, nginx_capacity) = knobs(&bundle, sampler.facts.host_cpus);
    if !a.json {
        eprintln!(
            "exectl bench {run_id}: {scenario} on {stack} ({target_name}), levels {}, hold {:?}, ramp {:?}; results in {}",
            a.levels,
            hold,
            ramp,
            out_dir.display()
        );
    }
    let mut results = Results {
        run_id: run_id.clone(),
        state: RunState::Running,
        pid: Some(std::process::id()),
        exectl_version: env!("CARGO_PKG_VERSION").into(),
        stack: stack.clone(),
        target: target_name,
        scenario,
        started_unix_s,
        duration_s: 0.0,
        deploy_run_id: deploy_run_id(&stack),
        knobs,
        images: sampler.facts.images.clone(),
        levels_asked: levels.clone(),
        hold_s: hold.as_secs_f64(),
        ramp_s: ramp.as_secs_f64(),
        sample_s: sample.as_secs_f64(),
        settle_s: settle.as_secs_f64(),
        slos: slos.clone(),
        continue_after_fail: a.continue_after_fail,
        levels: vec![],
        verdict: Verdict::of(&[], &levels),
        sampler: SamplerCost::default(),
        generator_cpus: crate::load::metrics::cpu_capacity(),
    };
    let t0 = std::time::Instant::now();
    let plan = bench::Plan {
        levels: plans,
        slos,
        settle,
        continue_after_fail: a.continue_after_fail,
        nginx_capacity,
        progress: !a.json,
    };
    let ran: Result<Vec<LevelResult>> = bench::run(plan, &sampler, |d| {
        progress(&d, a.json);
        results.levels.push(d.result.clone());
        results.verdict = Verdict::of(&results.levels, &levels);
        results.duration_s = t0.elapsed().as_secs_f64();
        save(&out_dir, &results, d.samples)
    });
    let finished = sampler.stop();
    let ran = ran?;
    results.levels = ran;
    results.verdict = Verdict::of(&results.levels, &levels);
    results.duration_s = t0.elapsed().as_secs_f64();
    results.state = RunState::Complete;
    results.pid = None;
    let n = finished.samples.len() as u64;
    results.sampler = SamplerCost {
        samples: n,
        mean_sample_ms: if n == 0 {
            0.0
        } else {
            finished.sample_ms_total / n as f64
        },
        sut_cpu_pct: (results.duration_s > 0.0)
            .then(|| finished.sut_cpu_s / results.duration_s * 100.0),
        host_scripts: finished.host_scripts,
    };
    save(&out_dir, &results, &finished.samples)?;
    if let Some(what) = finished.link_lost {
        return Err(crate::error::Unreachable {
            what,
            fix: format!(
                "check sshd and the network to the SUT, then bench again; what was measured until then is in {}",
                out_dir.display()
            ),
        }
        .into());
    }
    let passed = results.levels.iter().all(|l| l.passed) && results.levels.len() == levels.len();
    if a.json {
        println!("{}", serde_json::to_string_pretty(&results)?);
        // A failing bench says why on stderr too: exit 1 with nothing there reads as a crash.
        if !passed {
            eprintln!("{}", results.verdict.headline);
        }
    } else {
        println!("{}", results.verdict.headline);
        println!("report: {}", out_dir.join(REPORT).display());
    }
    Ok(if passed { exit::OK } else { exit::FAILED })
}

/// `exectl report RUN_ID [--out FILE]`: the HTML again, from results.json and the timeline alone.
pub fn report_cmd(run: &str, from: Option<&Path>, out: Option<&Path>) -> Result<i32> {
    let dir = match from {
        Some(d) => d.to_path_buf(),
        None => {
            if run.is_empty() || run.contains('/') || run.starts_with('.') {
                return Err(UsageError::new(
                    "RUN_ID",
                    run,
                    "not a bench run id",
                    "give the id `exectl bench` printed (exectl runs list)",
                )
                .into());
            }
            benches_dir().join(run)
        }
    };
    let results_path = dir.join(RESULTS);
    let text = std::fs::read_to_string(&results_path).map_err(|e| {
        UsageError::new(
            "RUN_ID",
            run,
            format!("cannot read {}: {e}", results_path.display()),
            "give a bench run id from `exectl runs list`",
        )
    })?;
    let results: Results = serde_json::from_str(&text).map_err(|e| {
        UsageError::new(
            "RUN_ID",
            run,
            format!("{} is not a bench's results: {e}", results_path.display()),
            "re-run the bench",
        )
    })?;
    let timeline = std::fs::read_to_string(dir.join(TIMELINE)).unwrap_or_default();
    let samples: Vec<Sample> = timeline
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(serde_json::from_str)
        .collect::<Result<_, _>>()
        .with_context(|| format!("reading {}", dir.join(TIMELINE).display()))?;
    let html = report::render(&results, &samples).map_err(|e| anyhow::anyhow!(e))?;
    let out = out
        .map(Path::to_path_buf)
        .unwrap_or_else(|| dir.join(REPORT));
    crate::shell::atomic::write(&out, html.as_bytes(), 0o644)?;
    println!("{}", out.display());
    Ok(exit::OK)
}
