//! `exectl bench`'s flags as `BenchOptions`: the levels, the objectives, the sampling, the bench's folder
//! and each level's load (checked as `exectl load` checks it), all before any connection (exit 2).

use std::sync::Arc;
use std::time::Duration;

use super::load::LoadFlags;
use crate::bench::Stop;
use crate::cli::target::TargetArgs;
use crate::cli::values::duration_flag;
use crate::cli::{BenchArgs, BenchFlags};
use crate::load::LoadOptions;
use crate::ops::bench::BenchOptions;
use crate::state::bench_dir::BenchDir;
use exectl_core::bench::{parse_levels, Slos};
use exectl_core::error::UsageError;

/// Longest --settle.
const MAX_WAIT: Duration = Duration::from_secs(24 * 3600);

/// The objectives, the sampling and the settle of `flags`, checked.
fn judged(flags: &BenchFlags) -> Result<(Slos, Duration, Duration), UsageError> {
    let slos = Slos::with_overrides(&flags.slo)?;
    let sample = duration_flag(
        "--sample",
        &flags.sample,
        Duration::from_millis(200),
        Duration::from_secs(60),
    )?;
    let settle = duration_flag("--settle", &flags.settle, Duration::ZERO, MAX_WAIT)?;
    Ok((slos, sample, settle))
}

/// `flags` checked on their own, before the stack they will bench exists (sweep, before its first
/// deploy): the objectives, the sampling, and a level's load flags.
pub fn check_flags(flags: &BenchFlags, target: &TargetArgs) -> Result<(), UsageError> {
    judged(flags)?;
    let a = BenchArgs {
        target: target.clone(),
        stack: None,
        levels: "1".into(),
        flags: flags.clone(),
        run_id: None,
        json: true,
        out: None,
    };
    super::load::check(&level_flags(&a, "exe", 1, "check"))
}

/// Every flag and the bench's folder, checked; nothing is connected to or made.
pub fn bench(a: &BenchArgs) -> Result<BenchOptions, UsageError> {
    let levels = parse_levels(&a.levels)?;
    let (slos, sample, settle) = judged(&a.flags)?;
    let stack = exectl_core::spec::resolve_stack_name(a.stack.as_deref())?;
    let run_id = crate::cli::values::run_id(a.run_id.as_deref(), "B-IDLE-HA2-001", |now| {
        format!("B-{}-{now}", a.flags.scenario)
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
    let browser = match a.flags.browser_probe {
        true => Some(browser(plans.last().expect("at least one level"))?),
        false => None,
    };
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
        continue_after_fail: a.flags.continue_after_fail,
        sample_lines: !a.json,
        stop: Arc::new(Stop::default()),
        browser,
    })
}

/// Where the browser's Chromium is: $EXECTL_CHROMIUM, else Debian's.
const CHROMIUM: &str = "/usr/bin/chromium";
/// How long the browser may take, from Chromium's start to the first sync.
const BROWSER_TIMEOUT: Duration = Duration::from_secs(30);

/// `--browser-probe`: Chromium, the front door as a browser reaches it, and the account after the top
/// level's users (so the browser is one more user, not one of them).
fn browser(top: &LoadOptions) -> Result<crate::browser::Probe, UsageError> {
    let chromium = std::env::var_os("EXECTL_CHROMIUM")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| CHROMIUM.into());
    if !chromium.is_file() {
        return Err(UsageError::new(
            "--browser-probe",
            chromium.display(),
            "no Chromium there",
            "install it (bash scripts/packages.sh installs Debian's chromium), or set EXECTL_CHROMIUM to its path",
        ));
    }
    let Some(account) = top.manifest.accounts.get(top.users) else {
        return Err(UsageError::new(
            "--browser-probe",
            top.users + 1,
            format!(
                "the browser needs an account of its own after the top level's {} users, and the manifest in {} has {}",
                top.users,
                top.manifest.dir.display(),
                top.manifest.accounts.len()
            ),
            format!("prepare at least {} accounts", top.users + 1),
        ));
    };
    let e = &top.endpoint;
    // A Host rule (Traefik) is reached by name: Chromium resolves *.localhost to loopback itself.
    let base_url = match &e.host_header {
        None => e.base.as_str().trim_end_matches('/').to_string(),
        Some(h) if e.addr.ip().is_loopback() && (h == "localhost" || h.ends_with(".localhost")) => {
            format!("http://{h}:{}", e.addr.port())
        }
        Some(h) => {
            return Err(UsageError::new(
                "--browser-probe",
                h,
                format!("a browser cannot send Host {h} to {}", e.addr),
                "probe a stack whose front door a browser reaches by name (an ha stack's nginx port, or a single stack on this machine with --host NAME.localhost)",
            ))
        }
    };
    Ok(crate::browser::Probe {
        chromium,
        base_url,
        email: account.email.clone(),
        password: account.password.clone(),
        project_uuid: account.project_uuid.clone(),
        timeout: BROWSER_TIMEOUT,
    })
}

/// The load flags of one level, as `exectl load` would get them.
fn level_flags(a: &BenchArgs, stack: &str, users: u64, run_id: &str) -> LoadFlags {
    LoadFlags {
        target: a.target.clone(),
        scenario: a.flags.scenario.clone(),
        stack: Some(stack.to_string()),
        url: None,
        host_header: None,
        manifest: None,
        pattern: a.flags.pattern.clone(),
        users: Some(users.to_string()),
        ramp: a.flags.ramp.clone(),
        dial_concurrency: a.flags.dial_concurrency.clone(),
        hold: a.flags.hold.clone(),
        interval: a.flags.interval.clone(),
        ping_after: a.flags.ping_after.clone(),
        tokens: a.flags.tokens,
        source_addrs: a.flags.source_addrs.clone(),
        processes: a.flags.processes.clone(),
        generators: a.flags.generators.clone(),
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
