//! `load`: the client's limits checked for the run (exit 2 when it cannot hold what was asked), then the
//! scenario run to its summary. Options come from `cli::options::load` or from a bench level.

use super::{Event, Progress};
use crate::load::summary::Summary;
use crate::load::{preflight, LoadOptions};
use anyhow::Result;
use exectl_core::units::readable;

/// A run whose client can hold it: its limits raised, its processes settled (`ready`).
pub struct Ready {
    opts: LoadOptions,
    limits: preflight::Limits,
    processes: usize,
}

impl Ready {
    pub fn opts(&self) -> &LoadOptions {
        &self.opts
    }
}

/// Check (and raise) the client's limits for `opts`: exit 2 when it cannot hold the run. Nothing is
/// sent anywhere.
pub fn ready(opts: LoadOptions, progress: &dyn Progress) -> Result<Ready> {
    if let Some(w) = opts.manifest.tokens_expiring_within(opts.ramp + opts.hold) {
        progress.event(Event::Note(&format!("warning: {w}")));
    }
    let (limits, processes) = preflight::ensure(preflight::Needs::of(&opts), &opts.sources)?;
    let mut opts = opts;
    opts.processes = Some(processes);
    Ok(Ready {
        opts,
        limits,
        processes,
    })
}

/// Run it to its summary (its header first).
pub fn run(ready: Ready, progress: &dyn Progress) -> Result<Summary> {
    let Ready {
        opts,
        limits,
        processes,
    } = ready;
    progress.event(Event::Step(&header(&opts, limits, processes)));
    crate::load::run(opts)
}

/// `ready`, then `run`.
pub fn load(opts: LoadOptions, progress: &dyn Progress) -> Result<Summary> {
    run(ready(opts, progress)?, progress)
}

/// "exectl load idle: 3 users → URL (ramp 3 s, hold 1 s, 3 in flight; nofile …; 3 of the 5 processes
/// asked: …)": what runs.
fn header(opts: &LoadOptions, limits: preflight::Limits, processes: usize) -> String {
    let hold = if opts.scenario.uses_socket() {
        format!(", hold {}", readable(opts.hold))
    } else {
        String::new()
    };
    // What runs: a slice is never without a room, so fewer than asked when the users have fewer.
    let hosts = opts.generators.hosts.len();
    let here = match (processes, hosts, opts.generators.local) {
        (_, 1.., false) => 0,
        (p @ (0 | 1), 0, _) => p,
        (p, _, _) => opts.dealt(p)[..p].iter().filter(|u| !u.is_empty()).count(),
    };
    let host = opts
        .endpoint
        .host_header
        .as_deref()
        .map_or(String::new(), |h| format!(" Host {h}"));
    let procs = match (here, processes) {
        (h, p) if h < p && h > 0 => format!(
            "; {h} of the {p} processes asked: the users' rooms fill only {h} (a room is never split)"
        ),
        (0 | 1, _) => String::new(),
        (h, _) => format!("; {h} processes"),
    };
    let generators = match hosts {
        0 => String::new(),
        1 => "; 1 generator host".to_string(),
        n => format!("; {n} generator hosts"),
    };
    format!(
        "exectl load {}: {} users → {}{host} (ramp {}{hold}, {} in flight; nofile {}, ports {}{procs}{generators})",
        opts.scenario,
        opts.users,
        opts.endpoint.base,
        readable(opts.ramp),
        opts.dial_concurrency,
        limits.nofile_soft,
        limits
            .ephemeral_ports
            .map_or("?".to_string(), |p| p.to_string()),
    )
}
