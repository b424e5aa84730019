//! `load`: the client's limits checked for the run (exit 2 when it cannot hold what was asked), then the
//! scenario run to its summary. Options come from `load_plan::plan` (a `LoadRequest`) or from a bench level.

use super::{Event, Progress};
use crate::engine::lock::{LockLost, ReaderLock};
use crate::load::summary::Summary;
use crate::load::{preflight, LoadOptions};
use anyhow::Result;
use exectl_core::units::readable;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

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

/// A run's end: its summary, and whether a `--break-lock` took a stack it held (the run stopped then).
pub struct LoadOutcome {
    pub summary: Summary,
    pub lock_lost: Option<LockLost>,
}

/// Run it to its summary (its header first), holding the stacks it loads as a reader: a deploy,
/// prepare (reset included), bench or teardown of them is refused meanwhile (exit 4, naming this
/// load), and a `--break-lock` of one stops the run there. Refused (exit 4) while a writer holds one.
pub fn run(ready: Ready, progress: &dyn Progress) -> Result<LoadOutcome> {
    let Ready {
        mut opts,
        limits,
        processes,
    } = ready;
    let command = format!("exectl load {}", opts.scenario);
    let held = opts
        .stacks
        .iter()
        .map(|s| ReaderLock::acquire(&s.dir, &s.name, &command))
        .collect::<Result<Vec<_>>>()?;
    if held.is_empty() {
        progress.event(Event::Note(&format!(
            "note: no stack recorded on this target publishes {}: this load holds no stack's lock, \
             so a deploy, prepare --reset or teardown of the stack behind it is not refused meanwhile \
             (give --stack NAME for one exectl deployed)",
            opts.endpoint.addr
        )));
    }
    progress.event(Event::Step(&header(&opts, limits, processes)));
    let live = opts.live.get_or_insert_with(Default::default).clone();
    let done = Arc::new(AtomicBool::new(false));
    // Checked every second: a writer that broke the lock ends the hold now, as Ctrl-C would.
    let watch = (!held.is_empty()).then(|| {
        let done = done.clone();
        std::thread::spawn(move || {
            while !done.load(Ordering::Acquire) {
                if let Some(lost) = held.iter().find_map(|l| l.still_held().err()) {
                    live.stop();
                    return Some(lost);
                }
                std::thread::sleep(Duration::from_secs(1));
            }
            // The last look, after the run: released on drop here.
            held.iter().find_map(|l| l.still_held().err())
        })
    });
    let summary = crate::load::run(opts, progress);
    done.store(true, Ordering::Release);
    let lock_lost = watch.and_then(|w| w.join().ok().flatten());
    Ok(LoadOutcome {
        summary: summary?,
        lock_lost,
    })
}

/// `ready`, then `run`.
pub fn load(opts: LoadOptions, progress: &dyn Progress) -> Result<LoadOutcome> {
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
