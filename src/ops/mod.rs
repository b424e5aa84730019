//! The operations a program calls: `deploy`, `plan`, `teardown`, `prepare` and `reset`, `load`, `bench`,
//! `status`, `sweep`, `campaign`, `doctor`, `host`, `runs`; and the planning of a sweep (`sweep_shape`,
//! `sweep_plan`) and of a campaign (`campaign_plan`).
//! Each takes a `Context` (the connected target, the progress sink, the stop token), what it acts on
//! when its options do not say it (a `Spec`, a stack's name) and an options struct (never clap's:
//! `cli::options` makes them from flags, a program sets their fields, `bench_settings`, `spec_source`
//! and `values` help it), and returns its outcome as a type; nothing here prints. `load` takes no
//! target (it only talks to a front door's URL), `doctor` an unconnected one (a failed connection is
//! one of its findings), `runs` the state folder's root (it reads the recorded runs only). `commands`
//! turn flags into options, connect, call one operation and print its outcome; `sweep` and `campaign`
//! call the others with the context they were given. What deploy, plan and prepare say of their
//! outcomes (lines for a person, `--json`'s objects) are methods of the outcomes, in `deploy_text` and
//! `prepare_text`; a person's progress is `Human`.

pub mod bench;
pub mod bench_settings;
pub mod campaign;
pub mod campaign_plan;
pub mod deploy;
pub mod deploy_stage;
pub mod deploy_swarm;
pub mod deploy_text;
pub mod doctor;
pub mod host;
pub mod load;
pub mod load_plan;
pub mod prepare;
pub mod prepare_text;
pub mod runs;
pub mod spec_source;
pub mod status;
pub mod sweep;
pub mod sweep_guard;
pub mod sweep_plan;
pub mod sweep_shape;
pub mod teardown;
pub mod templates;
pub mod values;

use std::sync::Arc;

use crate::bench::Stop;
use crate::sut::Target;

/// What an operation reports while it runs, and where it goes: defined below every layer, so that
/// the parts an operation calls (the load's generator, the locks) report through it too.
pub use crate::progress::{Event, Human, Progress, Silent};

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

    /// The stack's lock for `command` (here, and on the SUT of a remote target), what taking it took
    /// from others said as notes.
    pub async fn lock(
        &self,
        stack: &str,
        command: &str,
        break_lock: bool,
    ) -> anyhow::Result<crate::engine::remote_lock::StackGuard> {
        let lock =
            crate::engine::remote_lock::lock_stack(self.target, stack, command, break_lock).await?;
        for note in &lock.notes {
            self.progress.event(Event::Note(note));
        }
        Ok(lock)
    }
}
