//! The parent of a run over several processes: one `exectl load-slice` per slice, children of this
//! process or on the generator hosts (`remote`), their counters summed into the run's `Live` (so the
//! progress line and bench's sampler see the whole run), the common hold begun in every slice at once
//! when every slice's dials are over, a stop passed on, and the slices' reports merged. A slice that
//! dies, falls silent or stays past the run's end is reported as failed, its users counted as
//! failures, and the run still ends on time.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use tokio::time::Instant;

use super::merge::{self, Outcome, SliceResult};
use super::remote::{self, Remote};
use super::{Counters, FromSlice, Picked, SliceSpec, HOLD, STOP};
use crate::load::metrics::{self, Live};
use crate::load::summary::Summary;
use crate::load::{runner, LoadOptions};
use crate::progress::{Event, Progress};

/// Time for every child to start and read its spec before the common start instant (a slice over
/// SSH needs a channel and a process started there besides).
const START_LEAD: Duration = Duration::from_millis(1500);
const START_LEAD_REMOTE: Duration = Duration::from_millis(3000);

/// A slice that says nothing for this long (it ticks four times a second) has stopped, or its host
/// or link has: its users fail.
const SILENT: Duration = Duration::from_secs(5);

/// Where a slice runs.
enum Proc {
    Local {
        child: Child,
        stdin: Option<ChildStdin>,
    },
    Remote(Remote),
}

impl Proc {
    fn tell(&mut self, word: &str) {
        match self {
            Proc::Local { stdin, .. } => {
                if let Some(s) = stdin {
                    if writeln!(s, "{word}").and_then(|_| s.flush()).is_err() {
                        *stdin = None;
                    }
                }
            }
            Proc::Remote(r) => r.tell(word),
        }
    }

    fn kill(&mut self) {
        match self {
            Proc::Local { child, .. } => drop(child.kill()),
            Proc::Remote(r) => r.kill(),
        }
    }

    /// How it ended, once its output has.
    fn ended(&mut self) -> String {
        match self {
            Proc::Local { child, .. } => child
                .wait()
                .map_or("its process ended (unknown status)".into(), |st| {
                    format!("its process ended ({st})")
                }),
            Proc::Remote(r) => r.ended(),
        }
    }

    /// At the run's end, first: its stdin closed (a slice ends its hold, as when its parent is gone).
    fn close(&mut self) {
        match self {
            Proc::Local { stdin, .. } => *stdin = None,
            Proc::Remote(r) => r.close(),
        }
    }

    /// Whether it may still be running.
    fn running(&mut self) -> bool {
        match self {
            Proc::Local { child, .. } => child.try_wait().ok().flatten().is_none(),
            Proc::Remote(_) => true,
        }
    }

    /// Then, after a moment for all of them at once: killed if still there, and reaped.
    fn end(&mut self) {
        match self {
            Proc::Local { child, .. } => {
                if child.try_wait().ok().flatten().is_none() {
                    let _ = child.kill();
                }
                let _ = child.wait();
            }
            Proc::Remote(r) => {
                r.kill();
                r.ended();
            }
        }
    }
}

/// At the run's end: every slice's stdin closed, one moment for them all to go, then the rest killed.
fn finish(slices: &mut [Slice]) {
    for s in slices.iter_mut() {
        s.proc.close();
    }
    if slices.iter_mut().any(|s| s.proc.running()) {
        std::thread::sleep(Duration::from_millis(200));
    }
    for s in slices.iter_mut() {
        s.proc.end();
    }
}

struct Slice {
    users: usize,
    proc: Proc,
    latest: Counters,
    outcome: Option<Outcome>,
    pid: u32,
    skew_ms: Option<f64>,
    /// "local", or the generator host's URL.
    generator: String,
    clock_offset_ms: Option<f64>,
    heard: std::time::Instant,
}

impl Slice {
    fn new(users: usize, proc: Proc, pid: u32, generator: String) -> Slice {
        Slice {
            users,
            proc,
            latest: Counters::default(),
            outcome: None,
            pid,
            skew_ms: None,
            generator,
            clock_offset_ms: None,
            heard: std::time::Instant::now(),
        }
    }

    /// Its dials are over (or it is gone): the hold may begin as far as it is concerned.
    fn ready(&self) -> bool {
        self.outcome.is_some() || self.latest.dials_over >= self.users as u64
    }

    fn fail(&mut self, why: String) {
        self.proc.kill();
        self.outcome = Some(Outcome::Failed(why));
    }
}

/// The slices' words, from one reader per slice: `None` when its output ended.
pub type Said = (usize, Heard);

/// What the fan hears from a slice.
pub enum Heard {
    /// A line of its stdout: a message, or why it could not be read.
    Line(Result<FromSlice, String>),
    /// A line of a generator host's slice's stderr, for people.
    Stderr(String),
    /// Its stdout ended.
    Ended,
}

fn spawn(
    exe: &std::path::Path,
    k: usize,
    spec: &SliceSpec<Picked>,
    tx: mpsc::Sender<Said>,
) -> Result<Slice> {
    let mut child = Command::new(exe)
        .arg("load-slice")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .with_context(|| format!("starting slice {k} ({})", exe.display()))?;
    let mut stdin = child.stdin.take().expect("piped");
    // Written straight from the manifest into the pipe: the parent keeps no copy of a slice's users.
    let mut w = std::io::BufWriter::new(&mut stdin);
    serde_json::to_writer(&mut w, spec)
        .map_err(anyhow::Error::from)
        .and_then(|_| Ok(writeln!(w)?))
        .and_then(|_| Ok(w.flush()?))
        .context("sending a slice its spec")?;
    drop(w);
    let stdout = child.stdout.take().expect("piped");
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            let msg = serde_json::from_str::<FromSlice>(&line)
                .map_err(|e| format!("unreadable line from slice {k}: {e}"));
            if tx.send((k, Heard::Line(msg))).is_err() {
                return;
            }
        }
        let _ = tx.send((k, Heard::Ended));
    });
    let pid = child.id();
    Ok(Slice::new(
        spec.users.len(),
        Proc::Local {
            child,
            stdin: Some(stdin),
        },
        pid,
        "local".into(),
    ))
}

/// Every generator host connected, its binary and clock checked, at once (a copy takes seconds).
fn prepare_hosts(opts: &LoadOptions, progress: &dyn Progress) -> Result<Vec<remote::Host>> {
    if opts.generators.hosts.is_empty() {
        return Ok(Vec::new());
    }
    let exe = remote::Exe::current()?;
    let hosts: Vec<Result<remote::Host>> = std::thread::scope(|s| {
        let joins: Vec<_> = opts
            .generators
            .hosts
            .iter()
            .map(|o| s.spawn(|| remote::prepare(o, &exe)))
            .collect();
        joins
            .into_iter()
            .map(|j| {
                j.join()
                    .unwrap_or_else(|_| anyhow::bail!("a connecting thread panicked"))
            })
            .collect()
    });
    let hosts = hosts.into_iter().collect::<Result<Vec<_>>>()?;
    if opts.progress {
        for h in &hosts {
            progress.event(Event::Step(&format!(
                "generator {}: {}, its clock {:+.1} ms from this one's",
                h.url,
                if h.copied {
                    "this exectl sent"
                } else {
                    "this exectl already there"
                },
                h.clock_offset_ms
            )));
        }
    }
    Ok(hosts)
}

/// Run `opts` over `processes` slices of this host and one on each generator host.
pub fn run(opts: LoadOptions, processes: usize, progress: &dyn Progress) -> Result<Summary> {
    let n = opts.users;
    let hosts = prepare_hosts(&opts, progress)?;
    // This host's slices first, then one per generator host; a slice left without a room is dropped.
    let dealt = opts.dealt(processes);
    let mut hosts: Vec<Option<remote::Host>> = hosts.into_iter().map(Some).collect();
    let dealt: Vec<(Option<remote::Host>, Vec<usize>)> = dealt
        .into_iter()
        .enumerate()
        .map(|(i, users)| {
            let host = i.checked_sub(processes).and_then(|h| hosts[h].take());
            (host, users)
        })
        .filter(|(_, users)| !users.is_empty())
        .collect();
    let exe = std::env::current_exe().context("finding this exectl binary for the slices")?;
    let lead = if dealt.iter().any(|(h, _)| h.is_some()) {
        START_LEAD_REMOTE
    } else {
        START_LEAD
    };
    let start_at = super::unix_ms() + lead.as_millis() as u64;
    let (tx, rx) = mpsc::channel::<Said>();
    let mut slices: Vec<Slice> = Vec::new();
    let of = dealt.len();
    for (k, (host, users)) in dealt.into_iter().enumerate() {
        let mut spec = SliceSpec::of(&opts, k, of, &users, start_at);
        let started = match host {
            None => spawn(&exe, k, &spec, tx.clone()),
            Some(h) => {
                // Its own clock's instant for the common start; a front door on loopback here is this
                // host's address as that host reached it; its own addresses to dial from.
                spec.start_at_unix_ms = (start_at as f64 + h.clock_offset_ms).round() as u64;
                if spec.addr.ip().is_loopback() {
                    spec.dial_at(h.here);
                }
                spec.sources.clear();
                let (url, offset) = (h.url.clone(), h.clock_offset_ms);
                serde_json::to_string(&spec)
                    .context("serialising a slice's spec")
                    .and_then(|line| h.spawn(k, &line, tx.clone()))
                    .map(|r| {
                        let mut s = Slice::new(users.len(), Proc::Remote(r), 0, url);
                        s.clock_offset_ms = Some(offset);
                        s
                    })
            }
        };
        match started {
            Ok(s) => slices.push(s),
            Err(e) => {
                for s in &mut slices {
                    s.proc.kill();
                }
                return Err(e);
            }
        }
    }
    drop(tx);

    let live: Arc<Live> = opts.live.clone().unwrap_or_default();
    let t0 = Instant::now() + lead;
    live.plateau.gate();
    live.plateau.arm(n as u64, opts.ramp, opts.hold, t0);
    // The same safety nets as one process's run.
    let ramp_deadline = runner::ramp_deadline(&opts, t0);
    let after_hold = runner::after_hold(&opts);
    let mut stop_sent = false;
    let mut next_line = t0 + Duration::from_secs(1);
    loop {
        match rx.recv_timeout(Duration::from_millis(100)) {
            Ok((k, Heard::Line(Ok(msg)))) => {
                let s = &mut slices[k];
                s.heard = std::time::Instant::now();
                match msg {
                    FromSlice::Started { skew_ms, pid, .. } => {
                        s.skew_ms = Some(skew_ms);
                        s.pid = pid;
                    }
                    FromSlice::Tick(c) => s.latest = c,
                    FromSlice::Report(r) => s.outcome = Some(Outcome::Report(r)),
                    FromSlice::Refused(why) => s.outcome = Some(Outcome::Failed(why)),
                }
            }
            Ok((k, Heard::Line(Err(e)))) => slices[k].outcome = Some(Outcome::Failed(e)),
            Ok((_, Heard::Stderr(line))) => progress.event(Event::Note(&line)),
            Ok((k, Heard::Ended)) => {
                let s = &mut slices[k];
                if s.outcome.is_none() {
                    let how = s.proc.ended();
                    s.outcome = Some(Outcome::Failed(format!("{how} before its report")));
                }
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
        for s in slices.iter_mut().filter(|s| s.outcome.is_none()) {
            if s.heard.elapsed() > SILENT {
                s.fail(format!(
                    "silent for {} s: its process, host or link stopped answering",
                    SILENT.as_secs()
                ));
            }
        }
        // Only what is still running counts as open; a slice that ended has its report.
        let mut sum = Counters::default();
        for s in slices.iter().filter(|s| s.outcome.is_none()) {
            sum.add(&s.latest);
        }
        sum.store(&live);
        live.plateau.opened(sum.open);
        live.plateau.closed(sum.open);
        if live.plateau.window().is_none() && slices.iter().all(Slice::ready) {
            live.release();
            for s in &mut slices {
                s.proc.tell(HOLD);
            }
        }
        if live.plateau.stopped() && !stop_sent {
            stop_sent = true;
            for s in &mut slices {
                s.proc.tell(STOP);
            }
        }
        if opts.progress && Instant::now() >= next_line {
            next_line += Duration::from_secs(1);
            progress.event(Event::Step(&runner::progress_line(&live, &opts, t0, n)));
        }
        if slices.iter().all(|s| s.outcome.is_some()) {
            break;
        }
        let deadline = match live.plateau.window() {
            Some(w) => w.end + after_hold,
            None => ramp_deadline,
        };
        if Instant::now() >= deadline {
            for s in slices.iter_mut().filter(|s| s.outcome.is_none()) {
                s.fail("no report by the run's hard deadline".into());
            }
            break;
        }
    }
    finish(&mut slices);
    let duration_s = t0.elapsed().as_secs_f64();
    let results = slices
        .into_iter()
        .enumerate()
        .map(|(k, s)| SliceResult {
            slice: k,
            users: s.users,
            pid: s.pid,
            skew_ms: s.skew_ms,
            generator: s.generator,
            clock_offset_ms: s.clock_offset_ms,
            outcome: s.outcome.unwrap_or(Outcome::Failed("no report".into())),
            last: s.latest,
            last_heard_s: s
                .heard
                .saturating_duration_since(t0.into_std())
                .as_secs_f64(),
        })
        .collect();
    let (peak_rss, _) = metrics::rss_bytes();
    Ok(merge::merge(
        &opts,
        results,
        merge::Parent {
            duration_s,
            window: live.plateau.figures(None, None),
            stopped: live.plateau.stopped(),
            peak_rss,
            cpu_s: metrics::cpu_seconds(),
        },
    ))
}
