//! The host commands' flags: `doctor` and `host tune` / `host restore`.

use super::target::TargetArgs;
use clap::{Args, Subcommand};
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// Connections the benchmark will hold (checked against ports, files, conntrack).
    #[arg(long, value_name = "N", allow_hyphen_values = true)]
    pub connections: Option<String>,
    /// A deployed stack whose app limits (instances × cpus, memory) are compared with the engine.
    #[arg(long)]
    pub stack: Option<String>,
    /// App instances to compare with the engine [default: the stack's, else 1].
    #[arg(long, value_name = "N", allow_hyphen_values = true)]
    pub instances: Option<String>,
    /// CPU limit per app instance [default: the stack's, else 2].
    #[arg(long, value_name = "CPUS", allow_hyphen_values = true)]
    pub cpus: Option<String>,
    /// Memory limit per app instance, e.g. 512m, 2g [default: the stack's, else 2g].
    #[arg(long, value_name = "SIZE", allow_hyphen_values = true)]
    pub memory: Option<String>,
    /// Print {target, checks: [{name, level, detail, fix}], summary: {pass, warn, fail}}.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub target: TargetArgs,
}

#[derive(Debug, Args)]
pub struct RestoreArgs {
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
    /// The --root given to `host tune` (the sysctls are put back in DIR/proc/sys).
    #[arg(long, value_name = "DIR")]
    pub root: Option<PathBuf>,
    #[command(flatten)]
    pub target: TargetArgs,
}

#[derive(Debug, Args)]
pub struct TuneArgs {
    /// Which machine of the benchmark this is: sut (the system under test) or client (a load generator).
    #[arg(long, value_name = "ROLE")]
    pub role: String,
    /// Only report what would change (exit 1 if anything would, 0 if nothing).
    #[arg(long)]
    pub check: bool,
    /// Print the report as JSON: each setting's key, current, wanted and action.
    #[arg(long)]
    pub json: bool,
    /// A sysctl.d file (read here, sent to the host) to use instead of the role's.
    #[arg(long, value_name = "FILE")]
    pub sysctl_file: Option<PathBuf>,
    /// Prefix of every path read and written on the host (/etc/security/limits.d, /etc/docker/daemon.json,
    /// the state folder) and of the sysctls: they are the files under DIR/proc/sys, not the live kernel's
    /// (unless a /proc is mounted there). For tests and chroots.
    #[arg(long, value_name = "DIR")]
    pub root: Option<PathBuf>,
    #[command(flatten)]
    pub target: TargetArgs,
}

#[derive(Debug, Subcommand)]
pub enum HostCommand {
    /// Apply (or with --check only report) the settings a C10k benchmark needs: kernel sysctls
    /// (accept queue, ephemeral ports, TIME_WAIT reuse, open files, conntrack), open-file limits
    /// (limits.d) and the Docker daemon's default-ulimits and userland-proxy (daemon.json).
    #[command(after_help = "\
Exit codes: 0 applied, or (--check) nothing to change; 1 (--check) something would change, or a failure on
the host; 2 bad input (nothing changed).
The first change of each setting records its previous value on the host (ROOT/var/lib/exectl/host);
`exectl host restore` puts them back. dockerd reads daemon.json only when it starts: a changed daemon.json
is reported, and dockerd is not restarted.")]
    Tune(TuneArgs),
    /// Put back the values recorded by `host tune` (files that did not exist are removed), then forget them.
    Restore(RestoreArgs),
}

#[derive(Debug, Args)]
pub struct HostArgs {
    #[command(subcommand)]
    pub command: HostCommand,
}
