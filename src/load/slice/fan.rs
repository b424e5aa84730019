//! The parent of a run over several processes: one `exectl load-slice` child per slice, their counters
//! summed into the run's `Live` (so the progress line and bench's sampler see the whole run), the common
//! hold begun in every slice at once when every slice's dials are over, a stop passed on, and the
//! slices' reports merged. A slice that dies or stays silent past the run's end is reported as failed,
//! its users counted as failures, and the run still ends on time.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use tokio::time::Instant;

use super::merge::{self, Outcome, SliceResult};
use super::{Counters, FromSlice, SliceSpec, HOLD, STOP};
use crate::load::metrics::{self, Live};
use crate::load::summary::Summary;
use crate::load::{runner, LoadOptions};

/// Time for every child to start and read its spec before the common start instant.
const START_LEAD: Duration = Duration::from_millis(1500);

struct Slice {
    users: usize,
    child: Child,
    stdin: Option<ChildStdin>,
    latest: Counters,
    outcome: Option<Outcome>,
    pid: u32,
    skew_ms: Option<f64>,
}

impl Slice {
    fn tell(&mut self, word: &str) {
        if let Some(s) = &mut self.stdin {
            if writeln!(s, "{word}").and_then(|_| s.flush()).is_err() {
                self.stdin = None;
            }
        }
    }

    /// Its dials are over (or it is gone): the hold may begin as far as it is concerned.
    fn ready(&self) -> bool {
        self.outcome.is_some() || self.latest.dials_over >= self.users as u64
    }
}

/// The slices' words, from one reader thread per child: `None` when its stdout ended.
type Said = (usize, Option<Result<FromSlice, String>>);

fn spawn(
    exe: &std::path::Path,
    k: usize,
    spec: &SliceSpec,
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
    let line = serde_json::to_string(spec).context("serialising a slice's spec")?;
    writeln!(stdin, "{line}").context("sending a slice its spec")?;
    stdin.flush()?;
    let stdout = child.stdout.take().expect("piped");
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            let msg = serde_json::from_str::<FromSlice>(&line)
                .map_err(|e| format!("unreadable line from slice {k}: {e}"));
            if tx.send((k, Some(msg))).is_err() {
                return;
            }
        }
        let _ = tx.send((k, None));
    });
    Ok(Slice {
        users: spec.accounts.len(),
        pid: child.id(),
        child,
        stdin: Some(stdin),
        latest: Counters::default(),
        outcome: None,
        skew_ms: None,
    })
}

/// Run `opts` over `processes` slices of this host.
pub fn run(opts: LoadOptions, processes: usize) -> Result<Summary> {
    let n = opts.users;
    let rooms: Vec<u64> = opts.manifest.accounts[..n]
        .iter()
        .map(|a| exectl_core::frame::room_id(&a.project_uuid))
        .collect();
    let dealt = exectl_core::load::slices::assign(&rooms, processes);
    let dealt: Vec<Vec<usize>> = dealt.into_iter().filter(|u| !u.is_empty()).collect();
    let exe = std::env::current_exe().context("finding this exectl binary for the slices")?;
    let start_at = super::unix_ms() + START_LEAD.as_millis() as u64;
    let (tx, rx) = mpsc::channel::<Said>();
    let mut slices = Vec::new();
    for (k, users) in dealt.iter().enumerate() {
        let spec = SliceSpec::of(&opts, k, dealt.len(), users, start_at);
        match spawn(&exe, k, &spec, tx.clone()) {
            Ok(s) => slices.push(s),
            Err(e) => {
                for s in &mut slices {
                    let _ = s.child.kill();
                }
                return Err(e);
            }
        }
    }
    drop(tx);

    let live: Arc<Live> = opts.live.clone().unwrap_or_default();
    let t0 = Instant::now() + START_LEAD;
    live.plateau.gate();
    live.plateau.arm(n as u64, opts.ramp, opts.hold, t0);
    // The same safety nets as one process's run.
    let ramp_deadline = runner::ramp_deadline(&opts, t0);
    let after_hold = runner::after_hold(&opts);
    let mut stop_sent = false;
    let mut next_line = t0 + Duration::from_secs(1);
    loop {
        match rx.recv_timeout(Duration::from_millis(100)) {
            Ok((k, Some(Ok(msg)))) => {
                let s = &mut slices[k];
                match msg {
                    FromSlice::Started { skew_ms, .. } => s.skew_ms = Some(skew_ms),
                    FromSlice::Tick(c) => s.latest = c,
                    FromSlice::Report(r) => s.outcome = Some(Outcome::Report(r)),
                    FromSlice::Refused(why) => s.outcome = Some(Outcome::Failed(why)),
                }
            }
            Ok((k, Some(Err(e)))) => slices[k].outcome = Some(Outcome::Failed(e)),
            Ok((k, None)) => {
                let s = &mut slices[k];
                if s.outcome.is_none() {
                    let status = s.child.wait().map_or("unknown".into(), |st| st.to_string());
                    s.outcome = Some(Outcome::Failed(format!(
                        "its process ended ({status}) before its report"
                    )));
                }
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
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
                s.tell(HOLD);
            }
        }
        if live.plateau.stopped() && !stop_sent {
            stop_sent = true;
            for s in &mut slices {
                s.tell(STOP);
            }
        }
        if opts.progress && Instant::now() >= next_line {
            next_line += Duration::from_secs(1);
            eprintln!("{}", runner::progress_line(&live, &opts, t0, n));
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
                let _ = s.child.kill();
                s.outcome = Some(Outcome::Failed(
                    "no report by the run's hard deadline".into(),
                ));
            }
            break;
        }
    }
    for s in &mut slices {
        s.stdin = None;
        if s.child.try_wait().ok().flatten().is_none() {
            std::thread::sleep(Duration::from_millis(200));
            if s.child.try_wait().ok().flatten().is_none() {
                let _ = s.child.kill();
            }
        }
        let _ = s.child.wait();
    }
    let duration_s = t0.elapsed().as_secs_f64();
    let results = slices
        .into_iter()
        .enumerate()
        .map(|(k, s)| SliceResult {
            slice: k,
            users: s.users,
            pid: s.pid,
            skew_ms: s.skew_ms,
            outcome: s.outcome.unwrap_or(Outcome::Failed("no report".into())),
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
