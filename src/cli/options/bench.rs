//! `exectl bench`'s flags as `BenchSettings` (the objectives, the sampling, each level's load: checked as
//! `exectl load` checks them), then as the bench of its levels on its stack (`BenchSettings::options`),
//! all before any connection (exit 2).

use std::time::Duration;

use super::load::LoadFlags;
use crate::cli::target::TargetArgs;
use crate::cli::values::duration_flag;
use crate::cli::{BenchArgs, BenchFlags};
use crate::ops::bench::BenchOptions;
use crate::ops::bench_settings::BenchSettings;
use crate::state::bench_dir::BenchDir;
use crate::sut::TargetSpec;
use exectl_core::bench::{fault, parse_levels, Slos};
use exectl_core::error::UsageError;

/// Longest --settle.
const MAX_WAIT: Duration = Duration::from_secs(24 * 3600);

/// `flags` checked on their own, before the stack they will bench exists (sweep, before its first
/// deploy): the objectives, the sampling and a level's load, as settings.
pub fn settings(
    flags: &BenchFlags,
    target: &TargetArgs,
    json: bool,
) -> Result<BenchSettings, UsageError> {
    let slos = Slos::with_overrides(&flags.slo)?;
    let sample = duration_flag(
        "--sample",
        &flags.sample,
        Duration::from_millis(200),
        Duration::from_secs(60),
    )?;
    let settle = duration_flag("--settle", &flags.settle, Duration::ZERO, MAX_WAIT)?;
    let level = level_flags(flags, target);
    let load = super::load::check(&level)?;
    let fault = flags
        .fault
        .as_deref()
        .map(|text| {
            let bad = |why: String| {
                UsageError::new("--fault", text, why, format!("write {}", fault::FORMS))
            };
            let f = fault::Fault::parse(text).map_err(bad)?;
            f.check_hold(load.hold).map_err(|why| {
                UsageError::new(
                    "--fault",
                    text,
                    why,
                    "give a WHEN shorter than --hold, or a longer --hold",
                )
            })?;
            Ok(f)
        })
        .transpose()?;
    if fault.is_some() && !load.scenario.uses_socket() {
        return Err(UsageError::new(
            "--fault",
            flags.fault.as_deref().unwrap_or(""),
            format!("{} holds no socket to drop", load.scenario.name()),
            "use it with idle, collab or editing",
        ));
    }
    Ok(BenchSettings {
        load,
        slos,
        sample,
        settle,
        continue_after_fail: flags.continue_after_fail,
        browser_probe: flags.browser_probe,
        sample_lines: !json,
        fault,
    })
}

/// Every flag and the bench's folder, checked; nothing is connected to or made.
pub fn bench(a: &BenchArgs) -> Result<(TargetSpec, BenchOptions), UsageError> {
    let levels = parse_levels(&a.levels)?;
    let settings = settings(&a.flags, &a.target, a.json)?;
    let stack = exectl_core::spec::resolve_stack_name(a.stack.as_deref())?;
    let run_id = crate::cli::values::run_id(a.run_id.as_deref(), "B-IDLE-HA2-001", |now| {
        format!("B-{}-{now}", a.flags.scenario)
    })?;
    let benches = crate::state::benches_dir(&crate::state::root());
    let (field, value, path) = crate::cli::values::run_folder(a.out.as_deref(), &run_id, &benches);
    let out = BenchDir::check(&path, field, &value)?;
    let target = crate::cli::target::target_spec(&a.target)?;
    let mut opts = settings.options(&target, &stack, &levels, &run_id, out)?;
    opts.levels_text = a.levels.clone();
    Ok((target, opts))
}

/// The load flags of a level, as `exectl load` would get them (its users and run id are the bench's).
fn level_flags(flags: &BenchFlags, target: &TargetArgs) -> LoadFlags {
    LoadFlags {
        target: target.clone(),
        scenario: flags.scenario.clone(),
        stack: None,
        url: None,
        host_header: None,
        manifest: None,
        pattern: flags.pattern.clone(),
        users: None,
        ramp: flags.ramp.clone(),
        dial_concurrency: flags.dial_concurrency.clone(),
        arrival_rate: flags.arrival_rate.clone(),
        hold: flags.hold.clone(),
        interval: flags.interval.clone(),
        ping_after: flags.ping_after.clone(),
        tokens: flags.tokens,
        // A fault drops sockets on purpose: the users come back as the real client does.
        reconnect: flags.fault.is_some(),
        relogin: flags.relogin,
        churn: flags.churn.clone(),
        source_addrs: flags.source_addrs.clone(),
        processes: flags.processes.clone(),
        generators: flags.generators.clone(),
        run_id: None,
        quiet: true,
    }
}
