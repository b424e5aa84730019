//! `exectl bench`'s flags as `BenchOptions`: the levels, the objectives, the sampling, the bench's folder
//! and each level's load (checked as `exectl load` checks it), all before any connection (exit 2).

use std::sync::Arc;
use std::time::Duration;

use super::load::LoadFlags;
use crate::bench::Stop;
use crate::cli::values::duration_flag;
use crate::cli::BenchArgs;
use crate::load::LoadOptions;
use crate::ops::bench::BenchOptions;
use crate::state::bench_dir::BenchDir;
use exectl_core::bench::{parse_levels, Slos};
use exectl_core::error::UsageError;

/// Longest --settle.
const MAX_WAIT: Duration = Duration::from_secs(24 * 3600);

/// Every flag and the bench's folder, checked; nothing is connected to or made.
pub fn bench(a: &BenchArgs) -> Result<BenchOptions, UsageError> {
    let levels = parse_levels(&a.levels)?;
    let slos = Slos::with_overrides(&a.slo)?;
    let sample = duration_flag(
        "--sample",
        &a.sample,
        Duration::from_millis(200),
        Duration::from_secs(60),
    )?;
    let settle = duration_flag("--settle", &a.settle, Duration::ZERO, MAX_WAIT)?;
    let stack = exectl_core::spec::resolve_stack_name(a.stack.as_deref())?;
    let run_id = crate::cli::values::run_id(a.run_id.as_deref(), "B-IDLE-HA2-001", |now| {
        format!("B-{}-{now}", a.scenario)
    })?;
    let (field, value, out_path) = match &a.out {
        Some(d) => ("--out", d.display().to_string(), d.clone()),
        None => (
            "--run-id",
            run_id.clone(),
            crate::state::benches_dir(&crate::state::root()).join(&run_id),
        ),
    };
    let out = BenchDir::check(&out_path, field, &value)?;
    let plans = level_plans(a, &stack, &levels, &run_id)?;
    Ok(BenchOptions {
        run_id,
        stack,
        out,
        levels_text: a.levels.clone(),
        levels,
        plans,
        slos,
        sample,
        settle,
        continue_after_fail: a.continue_after_fail,
        sample_lines: !a.json,
        stop: Arc::new(Stop::default()),
    })
}

/// The load flags of one level, as `exectl load` would get them.
fn level_flags(a: &BenchArgs, stack: &str, users: u64, run_id: &str) -> LoadFlags {
    LoadFlags {
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
        quiet: true,
    }
}

/// Each level's load, checked as `exectl load` checks it (the manifest holds the top level).
fn level_plans(
    a: &BenchArgs,
    stack: &str,
    levels: &[u64],
    run_id: &str,
) -> Result<Vec<LoadOptions>, UsageError> {
    levels
        .iter()
        .map(|users| {
            super::load::load(&level_flags(a, stack, *users, run_id)).map_err(|e| {
                // bench has no --users: a level's count is one of --levels.
                if e.field != "--users" {
                    e
                } else if e.problem.contains("accounts (one per user)") {
                    UsageError::new(
                        "--levels",
                        &a.levels,
                        e.problem,
                        "prepare at least as many accounts as the top level",
                    )
                } else {
                    UsageError::new(
                        "--levels",
                        &a.levels,
                        format!("the {users} users level: {}", e.problem),
                        e.fix.replace("give --users", "start --levels at"),
                    )
                }
            })
        })
        .collect()
}
