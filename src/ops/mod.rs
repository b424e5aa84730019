//! The operations a program calls: `deploy`, `plan`, `teardown`, `prepare`, `load`, `bench`, `status`,
//! `sweep`.
//! Each takes an options struct (never clap's: `cli::options` makes them from flags, a program sets their
//! fields, `bench_settings` and `spec_source` help it) and a `Progress`, and returns its outcome as a
//! type; nothing here prints. deploy, plan, teardown, prepare and status take a connected `sut::Target`;
//! bench and sweep a `TargetSpec` (they run their own runtimes). `commands` turn flags into options,
//! call one operation and print its outcome; `sweep` calls them in a loop.

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
