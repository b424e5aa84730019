//! One module per subcommand: each turns its flags into options (`cli::options`), connects, calls one
//! operation (`ops`) and prints what it returned.

pub mod bench;
pub mod campaign;
pub mod deploy;
pub mod doctor;
pub mod host;
pub mod load;
pub mod prepare;
pub mod render;
pub mod report;
pub mod runs;
pub mod status;
pub mod sweep;
pub mod teardown;
pub mod validate;

use crate::sut::target_flags::TargetFlags;
use crate::sut::{Target, TargetSpec};
use anyhow::Result;

/// Target key for the local engine's state.
pub const LOCAL_TARGET: &str = crate::sut::LOCAL_KEY;

/// Connect to the target named by the flags (`ops::spec_source::target_spec`).
pub async fn connect(args: &TargetFlags) -> Result<crate::sut::Target> {
    crate::sut::Target::connect(&crate::ops::spec_source::target_spec(args)?).await
}

/// A target connected for the operations that run their own runtimes (bench, sweep, called outside
/// any): connected on a multi-thread runtime kept up while they run, so that its connections are still
/// served. Dropped without waiting for blocking reads (a stalled SSH link's would hold the exit for ever).
pub struct Connected {
    pub target: Target,
    rt: Option<tokio::runtime::Runtime>,
}

impl Connected {
    pub fn to(spec: &TargetSpec) -> Result<Connected> {
        let rt = runtime()?;
        let target = rt.block_on(Target::connect(spec))?;
        Ok(Connected {
            target,
            rt: Some(rt),
        })
    }
}

impl Drop for Connected {
    fn drop(&mut self) {
        if let Some(rt) = self.rt.take() {
            rt.shutdown_background();
        }
    }
}

/// The runtime a command runs its operation on: two workers (the engine's and the SSH link's I/O,
/// the operation's waits), dropped with `shutdown_background` so that a blocking read on a stalled link
/// never holds the exit.
pub fn runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
}
