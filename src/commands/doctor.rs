//! `exectl doctor`: placeholder until the checks land.

use crate::cli::TargetArgs;
use anyhow::Result;
use clap::Args;

#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// Connections the benchmark will hold (checked against ports, files, conntrack).
    #[arg(long)]
    pub connections: Option<String>,
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub target: TargetArgs,
}

pub async fn run(_args: &DoctorArgs) -> Result<i32> {
    anyhow::bail!("exectl doctor is not built yet")
}
