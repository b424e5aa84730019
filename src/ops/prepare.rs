//! `prepare` and `reset`: under the stack's lock, seed accounts and projects into the deployed stack
//! (SQL into its database, or the app's API), verified through the front door, with the manifest
//! written; or remove what prepare made. A manifest of the layout before moves into its pattern's
//! folder first.

use super::{Context, Event, Progress};
use crate::prepare::plan::EmailPattern;
use crate::prepare::{self, Options, ResetSummary, Stack, Summary, Via};
use crate::state::manifests::{self, Migration};
use anyhow::{Context as _, Result};
use exectl_core::manifest;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A seeding run: what to make (`prepare::Options`), and how to take the lock.
pub struct PrepareOptions {
    pub seed: Options,
    /// Take the stack's lock even from another holder (`--break-lock`).
    pub break_lock: bool,
}

/// What `reset` removes: the rows and manifests of one email pattern.
pub struct ResetOptions {
    pub pattern: EmailPattern,
    pub schema_timeout: Duration,
    /// The `--out` folder a prepare also wrote to, whose copy goes too.
    pub out: Option<PathBuf>,
    pub break_lock: bool,
}

/// What a seeding run made and checked, the stack it seeded, and the env of a k6 run against it.
pub struct PrepareOutcome {
    pub summary: Summary,
    pub stack: Stack,
    pub k6: manifest::K6Env,
}

pub async fn prepare(
    cx: &Context<'_>,
    stack: &str,
    opts: PrepareOptions,
) -> Result<PrepareOutcome> {
    let (target, progress) = (cx.target, cx.progress);
    let mut seed = opts.seed;
    let deployed = Stack::read(target, stack)?;
    let _lock = locked(cx, stack, &seed.plan.pattern, opts.break_lock).await?;
    seed.stack_dir = target.stack_dir(stack);
    let count = |done: u64, total: u64| progress.event(Event::Count { done, total });
    let summary = match seed.via {
        Via::Sql => prepare::run(target, &deployed, &seed, &count).await,
        Via::Api => prepare::run_api(&deployed, &seed, &count).await,
    }?;
    Ok(PrepareOutcome {
        k6: k6_env(&seed, &deployed, &summary)?,
        summary,
        stack: deployed,
    })
}

/// The env of a k6 run against the stack just prepared; BENCH_PROJECTS_FILE is the projects.json written
/// (in `--out` when given, else the stack's copy), as an absolute path.
fn k6_env(seed: &Options, stack: &Stack, s: &Summary) -> Result<manifest::K6Env> {
    let dir = seed.out.as_deref().unwrap_or(&s.manifest);
    let projects = dir.join(manifest::PROJECTS);
    let projects = std::fs::canonicalize(&projects)
        .with_context(|| format!("the projects.json just written: {}", projects.display()))?;
    let door = stack.front_door();
    let pattern = seed.plan.pattern.text();
    Ok(manifest::k6_env(&manifest::K6Input {
        base_url: door.base.as_str(),
        host_header: door.host_header.as_deref(),
        accounts: s.accounts,
        users_per_project: s.users_per_project,
        password: prepare::plan::DEFAULT_PASSWORD,
        password_from: seed.password_from,
        projects_file: &projects.to_string_lossy(),
        default_pattern: pattern == prepare::plan::DEFAULT_PATTERN,
        pattern: &pattern,
    }))
}

pub async fn reset(cx: &Context<'_>, stack: &str, opts: &ResetOptions) -> Result<ResetSummary> {
    let target = cx.target;
    let deployed = Stack::read(target, stack)?;
    let _lock = locked(cx, stack, &opts.pattern, opts.break_lock).await?;
    prepare::reset(
        target,
        &deployed,
        &opts.pattern,
        &target.stack_dir(stack),
        opts.out.as_deref(),
        opts.schema_timeout,
    )
    .await
}

/// The stack's lock, and its manifests in the current layout.
async fn locked(
    cx: &Context<'_>,
    stack: &str,
    pattern: &EmailPattern,
    break_lock: bool,
) -> Result<crate::engine::remote_lock::StackGuard> {
    let lock = cx.lock(stack, "exectl prepare", break_lock).await?;
    migrate(&cx.target.stack_dir(stack), pattern, cx.progress)?;
    Ok(lock)
}

/// A manifest of the layout before (one, in the stack's folder) moves into its pattern's folder.
fn migrate(stack_dir: &Path, pattern: &EmailPattern, progress: &dyn Progress) -> Result<()> {
    match manifests::migrate_legacy(stack_dir, Some(pattern))? {
        Migration::None => {}
        Migration::Moved(to) => progress.event(Event::Note(&format!(
            "note: moved the manifest of {} into {}",
            stack_dir.display(),
            to.display()
        ))),
        Migration::Left(why) => progress.event(Event::Note(&format!(
            "note: left the manifest in place: {why}"
        ))),
    }
    Ok(())
}
