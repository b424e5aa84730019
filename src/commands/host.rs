//! `exectl host tune|restore`: placeholder until the host tuning lands.

use crate::cli::TargetArgs;
use anyhow::Result;
use clap::{Args, Subcommand};

#[derive(Debug, Args)]
pub struct HostArgs {
    #[command(subcommand)]
    pub command: HostCommand,
}

#[derive(Debug, Subcommand)]
pub enum HostCommand {
    /// Apply (or with --check only report) the settings a C10k benchmark needs.
    Tune {
        #[arg(long)]
        role: String,
        #[arg(long)]
        check: bool,
        #[command(flatten)]
        target: TargetArgs,
    },
    /// Put back the values recorded by the first `host tune`.
    Restore {
        #[command(flatten)]
        target: TargetArgs,
    },
}

pub async fn run(_args: &HostArgs) -> Result<i32> {
    anyhow::bail!("exectl host is not built yet")
}
