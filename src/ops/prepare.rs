//! `prepare` and `reset`: under the stack's lock, seed accounts and projects into the deployed stack
//! (SQL into its database, or the app's API), verified through the front door, with the manifest
//! written; or remove what prepare made. A manifest of the layout before moves into its pattern's
//! folder first.

use super::{Event, Progress};
use crate::prepare::plan::EmailPattern;
use crate::prepare::{self, Options, ResetSummary, Stack, Summary, Via};
use crate::state::manifests::{self, Migration};
use crate::sut::Target;
use anyhow::Result;
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

/// What a seeding run made and checked, and the stack it seeded (its front door, for k6's env).
pub struct PrepareOutcome {
    pub summary: Summary,
    pub stack: Stack,
}

pub async fn prepare(
    target: &Target,
    stack: &str,
    opts: PrepareOptions,
    progress: &dyn Progress,
) -> Result<PrepareOutcome> {
    let mut seed = opts.seed;
    let deployed = Stack::read(target, stack)?;
    let _lock = locked(target, stack, &seed.plan.pattern, opts.break_lock, progress).await?;
    seed.stack_dir = target.stack_dir(stack);
    let count = |done: u64, total: u64| progress.event(Event::Count { done, total });
    let summary = match seed.via {
        Via::Sql => prepare::run(target, &deployed, &seed, &count).await,
        Via::Api => prepare::run_api(&deployed, &seed, &count).await,
    }?;
    Ok(PrepareOutcome {
        summary,
        stack: deployed,
    })
}

pub async fn reset(
    target: &Target,
    stack: &str,
    opts: &ResetOptions,
    progress: &dyn Progress,
) -> Result<ResetSummary> {
    let deployed = Stack::read(target, stack)?;
    let _lock = locked(target, stack, &opts.pattern, opts.break_lock, progress).await?;
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
    target: &Target,
    stack: &str,
    pattern: &EmailPattern,
    break_lock: bool,
    progress: &dyn Progress,
) -> Result<crate::engine::remote_lock::StackGuard> {
    let lock =
        crate::engine::remote_lock::lock_stack(target, stack, "exectl prepare", break_lock).await?;
    let stack_dir = target.stack_dir(stack);
    migrate(&stack_dir, pattern, progress)?;
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
