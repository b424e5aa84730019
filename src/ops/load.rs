//! `load`: the client's limits checked for the run (exit 2 when it cannot hold what was asked), then the
//! scenario run to its summary. Options come from `cli::options::load` or from a bench level.

use super::{Event, Progress};
use crate::load::summary::Summary;
use crate::load::{preflight, LoadOptions};
use anyhow::Result;

pub fn load(opts: LoadOptions, progress: &dyn Progress) -> Result<Summary> {
    if let Some(w) = opts.manifest.tokens_expiring_within(opts.ramp + opts.hold) {
        progress.event(Event::Note(&format!("warning: {w}")));
    }
    let (limits, processes) = preflight::ensure(preflight::Needs::of(&opts), &opts.sources)?;
    let mut opts = opts;
    opts.processes = Some(processes);
    {
        let hold = if opts.scenario.uses_socket() {
            format!(", hold {:?}", opts.hold)
        } else {
            String::new()
        };
        let host = opts
            .endpoint
            .host_header
            .as_deref()
            .map_or(String::new(), |h| format!(" Host {h}"));
        progress.event(Event::Step(&format!(
            "exectl load {}: {} users → {}{host} (ramp {:?}{hold}, {} in flight; nofile {}, ports {}{})",
            opts.scenario,
            opts.users,
            opts.endpoint.base,
            opts.ramp,
            opts.dial_concurrency,
            limits.nofile_soft,
            limits
                .ephemeral_ports
                .map_or("?".to_string(), |p| p.to_string()),
            match processes {
                1 => String::new(),
                p => format!("; {p} processes"),
            }
        )));
    }
    crate::load::run(opts)
}
