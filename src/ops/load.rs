//! `load`: the client's limits checked for the run (exit 2 when it cannot hold what was asked), then the
//! scenario run to its summary. Options come from `cli::options::load` or from a bench level.

use super::{Event, Progress};
use crate::load::summary::Summary;
use crate::load::{preflight, runner, LoadOptions};
use anyhow::Result;

pub fn load(opts: LoadOptions, progress: &dyn Progress) -> Result<Summary> {
    if let Some(w) = opts.manifest.tokens_expiring_within(opts.ramp + opts.hold) {
        progress.event(Event::Note(&format!("warning: {w}")));
    }
    let needs = preflight::Needs {
        sockets: if opts.scenario.uses_socket() {
            opts.users as u64
        } else {
            0
        },
        http: opts.dial_concurrency as u64 + 1,
        sources: opts.sources.len(),
    };
    preflight::check_sources(&opts.sources)?;
    let limits = preflight::ensure(needs)?;
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
            "exectl load {}: {} users → {}{host} (ramp {:?}{hold}, {} in flight; nofile {}, ports {})",
            opts.scenario,
            opts.users,
            opts.endpoint.base,
            opts.ramp,
            opts.dial_concurrency,
            limits.nofile_soft,
            limits
                .ephemeral_ports
                .map_or("?".to_string(), |p| p.to_string())
        )));
    }
    runner::run(opts)
}
