//! The operations a program calls: `deploy`, `plan`, `teardown`, `prepare`, `load`, `bench`, `status`,
//! `sweep`.
//! Each takes a `Context` (the connected target, the progress sink, the stop token) and an options struct
//! (never clap's: `cli::options` makes them from flags, a program sets their fields, `bench_settings` and
//! `spec_source` help it), and returns its outcome as a type; nothing here prints. `load` alone takes no
//! target: it only talks to a front door's URL. `commands` turn flags into options, connect, call one
//! operation and print its outcome; `sweep` calls them in a loop with its own context.

pub mod bench;
pub mod bench_settings;
pub mod deploy;
pub mod deploy_swarm;
pub mod load;
pub mod prepare;
pub mod spec_source;
pub mod status;
pub mod sweep;
pub mod sweep_plan;
pub mod teardown;

use std::sync::Arc;

use crate::bench::Stop;
use crate::sut::Target;

/// What an operation runs with besides its options: the connected target (its state is found through
/// it: `Target::stack_dir`, `bundle_dir`), where its events go, and the token that stops it from outside
/// (a signal handler, a program; bench and sweep end their running level when it is set).
///
/// bench and sweep run runtimes of their own (the sampler's thread, the load's) and are called outside
/// any; their target stays usable because it was connected on a multi-thread runtime that outlives the
/// call (`commands::Connected`, or a program's own).
pub struct Context<'a> {
    pub target: &'a Target,
    pub progress: &'a dyn Progress,
    pub stop: Arc<Stop>,
}

impl<'a> Context<'a> {
    /// Operations on `target` reporting to `progress`, with a stop token of their own.
    pub fn new(target: &'a Target, progress: &'a dyn Progress) -> Context<'a> {
        Context {
            target,
            progress,
            stop: Arc::default(),
        }
    }
}

/// Something an operation reports while it runs.
#[derive(Debug, Clone, Copy)]
pub enum Event<'a> {
    /// A step of a long operation, for a human ("deploying stack s (ha ×2) on the local engine").
    Step(&'a str),
    /// What happened to one service of the stack during a deploy or teardown.
    Service { service: &'a str, what: &'a str },
    /// How far a counted step is (rows seeded, requests sent).
    Count { done: u64, total: u64 },
    /// Something a human should read and the outcome does not carry (a `note:` or `warning:` line).
    Note(&'a str),
}

/// Where an operation's events go: human lines, `--json` events, or nowhere (`Silent`). Shared by the
/// tasks of one operation, hence `&self` and `Sync`.
pub trait Progress: Sync {
    fn event(&self, event: Event<'_>);
}

/// Reports nothing: for programs that only want the outcome.
pub struct Silent;

impl Progress for Silent {
    fn event(&self, _: Event<'_>) {}
}
