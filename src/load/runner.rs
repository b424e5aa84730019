//! The run: a two-worker runtime, one spawner loop that starts users evenly over the ramp (never more than
//! `--dial-concurrency` dials in flight), the level's common hold (`plateau`: it begins when every dial is
//! over and ends for everyone at once), login-burst's probe, a per-second progress line, a stop that ends
//! the hold early (`Live::stop`), and the bounded wait for every user to finish.

use crate::progress::{Event, Progress};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context, Result};
use tokio::sync::{Notify, Semaphore};
use tokio::time::{sleep_until, Instant};

use super::metrics::{self, Hist, Live};
use super::session::{self, Ctx, UserOutcome};
use super::summary::{RunFacts, Summary};
use super::{LoadOptions, Scenario, CLOSE_GRACE, CONNECT_TIMEOUT, LOGIN_TIMEOUT};
use super::{PROBE_EVERY, PROBE_TIMEOUT};
use crate::app;
use exectl_core::load::liveness::Pings;

/// Run the scenario to its end and return the summary.
pub fn run(opts: LoadOptions, progress: &dyn Progress) -> Result<Summary> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("starting the load runtime")?;
    let summary = rt.block_on(run_async(opts, progress));
    rt.shutdown_timeout(Duration::from_secs(1));
    Ok(summary)
}

/// How long after the common hold's end the last users may take to finish: the last ping's answer and
/// the close handshakes (a safety net only: every wait of a user is bounded on its own).
pub fn after_hold(opts: &LoadOptions) -> Duration {
    Duration::from_millis(opts.liveness.answer_within_ms as u64 + 1000)
        + 3 * CLOSE_GRACE
        + Duration::from_secs(30)
}

/// Until the hold begins, the run's safety net: the ramp and every wave of dials at their timeouts.
pub fn ramp_deadline(opts: &LoadOptions, t0: Instant) -> Instant {
    let waves = opts.users.div_ceil(opts.dial_concurrency.max(1)) as u32;
    t0 + opts.ramp + (LOGIN_TIMEOUT + CONNECT_TIMEOUT) * waves + Duration::from_secs(60)
}

/// `fut`, unless the run is stopped first (checked every 100 ms).
async fn unless_stopped<F: std::future::Future>(live: &Live, fut: F) -> Option<F::Output> {
    tokio::pin!(fut);
    loop {
        tokio::select! {
            v = &mut fut => return Some(v),
            _ = tokio::time::sleep(Duration::from_millis(100)) => {
                if live.plateau.stopped() {
                    return None;
                }
            }
        }
    }
}

struct Probe {
    hist: Hist,
    samples: u64,
    errors: u64,
}

/// GET /healthcheck every 200 ms, one request at a time (a stalled server shows as few, slow samples),
/// on its own connection, until `stop`; one still waiting then counts with its wait so far. Errors are
/// counted, not timed.
async fn probe(ctx: Arc<Ctx>, stop: Arc<Notify>, deadline: Instant) -> Probe {
    let http = app::Client::new(1, super::TIMEOUTS);
    let mut p = Probe {
        hist: Hist::default(),
        samples: 0,
        errors: 0,
    };
    let stopped = stop.notified();
    tokio::pin!(stopped);
    let mut next = Instant::now();
    while Instant::now() < deadline {
        let sent = Instant::now();
        let r = tokio::select! {
            _ = &mut stopped => {
                // Unanswered when the run ends: it counts with the time it had waited (the stall was at
                // least that long). Dropped, it hid a burst's longest stall, the one the run ended in.
                p.samples += 1;
                p.hist.record(sent.elapsed());
                break;
            }
            r = http.healthcheck(&ctx.opts.endpoint).timeout(PROBE_TIMEOUT).timed() => r,
        };
        p.samples += 1;
        // A latency when answered, or when it timed out (the stall lasted at least that long, as for
        // one still waiting at the end); a probe refused or answered with an error is counted as such,
        // never as a fast answer.
        if r.ok || r.status == "timeout" {
            p.hist.record(r.took);
        }
        if !r.ok {
            p.errors += 1;
        }
        next += PROBE_EVERY;
        let now = Instant::now();
        if next < now {
            next = now;
        }
        tokio::select! {
            _ = &mut stopped => break,
            _ = sleep_until(next) => {}
        }
    }
    p
}

/// The per-second progress line of a run of `n` users begun at `t0` (one process's, or the sums a
/// parent gathers from its slices).
pub fn progress_line(l: &Live, opts: &LoadOptions, t0: Instant, n: usize) -> String {
    let g = Live::get;
    let (_, rss) = metrics::rss_bytes();
    let mut s = format!(
        "[{:>5.0}s] {} started {}/{} dialing {}",
        t0.elapsed().as_secs_f64(),
        opts.scenario,
        g(&l.started),
        n,
        g(&l.dialing)
    );
    if opts.scenario.uses_socket() {
        let logins = (!opts.tokens).then(|| g(&l.logins_ok));
        let at_once = l
            .plateau
            .view(g(&l.open), logins)
            .map(|v| exectl_core::plateau::ramp_status(&v))
            .unwrap_or_default();
        s += &format!(
            " connected {} {at_once} held {} stalled {} pings {}",
            g(&l.connected),
            g(&l.held),
            g(&l.stalled),
            g(&l.pings_sent)
        );
    } else {
        s += &format!(" logins ok {}", g(&l.logins_ok));
    }
    s += &format!(" done {} failed {}", g(&l.done), g(&l.failed));
    if matches!(opts.scenario, Scenario::Collab | Scenario::Editing) {
        s += &format!(
            " frames {}→{} http {}",
            g(&l.frames_sent),
            g(&l.frames_received),
            g(&l.http_requests)
        );
    }
    s + &format!(" rss {:.1} MiB", rss as f64 / (1 << 20) as f64)
}

async fn run_async(opts: LoadOptions, progress: &dyn Progress) -> Summary {
    let n = opts.users;
    let c = opts.dial_concurrency.max(1);
    let http = app::Client::new(c, super::TIMEOUTS);
    let ctx = Arc::new(Ctx::new(opts, http));
    let opts = &ctx.opts;
    let t0 = ctx.t0;
    ctx.live.plateau.arm(n as u64, opts.ramp, opts.hold, t0);
    let outcomes: Arc<Mutex<Vec<Option<UserOutcome>>>> = Arc::new(Mutex::new(vec![None; n]));
    let all_done = Arc::new(Notify::new());

    // Safety nets only: every dial is bounded by its own timeouts, and every hold ends with the common
    // one. Until the hold begins: the ramp and every wave of dials at their timeouts.
    let ramp_deadline = ramp_deadline(opts, t0);

    let stop_probe = Arc::new(Notify::new());
    let probe_task = (opts.scenario == Scenario::LoginBurst && opts.probe).then(|| {
        tokio::spawn(probe(
            Arc::clone(&ctx),
            Arc::clone(&stop_probe),
            ramp_deadline,
        ))
    });

    let spawner = {
        let ctx = Arc::clone(&ctx);
        let outcomes = Arc::clone(&outcomes);
        let all_done = Arc::clone(&all_done);
        tokio::spawn(async move {
            let sem = Arc::new(Semaphore::new(c));
            // The open model starts each session on schedule, whatever the server does: a start never
            // waits for the one before it; one that finds the in-flight cap full waits on its own.
            let open = ctx.opts.arrival_rate.is_some();
            for i in 0..n {
                let at = t0 + ctx.opts.start_after(i);
                if unless_stopped(&ctx.live, sleep_until(at)).await.is_none() {
                    return;
                }
                let permit = if open {
                    Arc::clone(&sem).try_acquire_owned().ok()
                } else {
                    let Some(permit) =
                        unless_stopped(&ctx.live, Arc::clone(&sem).acquire_owned()).await
                    else {
                        return;
                    };
                    Some(permit.expect("the semaphore is never closed"))
                };
                Live::inc(&ctx.live.started);
                let ctx = Arc::clone(&ctx);
                let outcomes = Arc::clone(&outcomes);
                let all_done = Arc::clone(&all_done);
                let sem = Arc::clone(&sem);
                tokio::spawn(async move {
                    let o = match permit {
                        Some(p) => {
                            session::run_user(Arc::clone(&ctx), i, p, open.then_some(at)).await
                        }
                        // The cap was full at its scheduled start: it waits, and its latency still
                        // counts from the schedule.
                        None => match unless_stopped(&ctx.live, sem.acquire_owned()).await {
                            Some(p) => {
                                let waited = at.elapsed();
                                let p = p.expect("the semaphore is never closed");
                                let mut o =
                                    session::run_user(Arc::clone(&ctx), i, p, Some(at)).await;
                                o.cap_wait_us = Some(waited.as_micros() as u64);
                                o
                            }
                            None => UserOutcome::failed("interrupted"),
                        },
                    };
                    let failed = o.failure.is_some();
                    outcomes.lock().unwrap()[i] = Some(o);
                    if failed {
                        Live::inc(&ctx.live.failed);
                    }
                    let done = ctx.live.done.fetch_add(1, Ordering::AcqRel) + 1;
                    if done == n as u64 || ctx.live.plateau.stopped() {
                        all_done.notify_one();
                    }
                });
            }
        })
    };

    let mut tick = tokio::time::interval_at(t0 + Duration::from_secs(1), Duration::from_secs(1));
    let mut cpu = HoldCpu::default();
    let finished = |live: &Live| {
        let done = Live::get(&live.done);
        done >= n as u64 || (live.plateau.stopped() && done >= Live::get(&live.started))
    };
    loop {
        tokio::select! {
            _ = all_done.notified() => if finished(&ctx.live) { break },
            _ = tick.tick() => {
                cpu.tick(&ctx.live);
                if opts.progress {
                    progress.event(Event::Step(&progress_line(&ctx.live, opts, t0, n)));
                }
                if finished(&ctx.live) {
                    break;
                }
                let deadline = match ctx.live.plateau.window() {
                    Some(w) => w.end + after_hold(opts),
                    None => ramp_deadline,
                };
                if Instant::now() >= deadline {
                    progress.event(Event::Note("exectl load: hard deadline reached; reporting unfinished users as failed"));
                    break;
                }
            }
        }
    }
    spawner.abort();
    let duration_s = t0.elapsed().as_secs_f64();

    // login-burst: a last second of probing after the burst, to see the server recover.
    let probe = match probe_task {
        Some(task) => {
            tokio::time::sleep(Duration::from_secs(1)).await;
            stop_probe.notify_one();
            match task.await {
                Ok(p) => Some((p.samples, p.errors, p.hist)),
                Err(_) => Some((0, 0, Hist::default())),
            }
        }
        None => None,
    };

    let stopped = ctx.live.plateau.stopped();
    let outcomes: Vec<UserOutcome> = outcomes
        .lock()
        .unwrap()
        .iter()
        .map(|o| {
            o.clone().unwrap_or_else(|| match stopped {
                true => UserOutcome::failed("interrupted"),
                false => UserOutcome::failed("user_deadline"),
            })
        })
        .collect();
    let connect_span_s = outcomes
        .iter()
        .filter_map(|o| o.connected_at_us)
        .max()
        .map_or(0.0, |us| us as f64 / 1e6);
    let (peak_rss, _) = metrics::rss_bytes();
    let cpu_capacity = metrics::cpu_capacity();
    Summary::build(
        &ctx,
        &outcomes,
        RunFacts {
            duration_s,
            connect_span_s,
            peak_rss,
            cpu_s: metrics::cpu_seconds(),
            cpu_capacity,
            hold_cpu: cpu.shares(t0, cpu_capacity),
            probe,
            pings: Pings {
                sent: Live::get(&ctx.live.pings_sent),
                per_s_in_hold: cpu.pings_per_s(&ctx.live),
                server_every_s: ctx.server_every_ms().map(|ms| ms as f64 / 1000.0),
                ping_after_s: ctx.bounds().ping_after_ms as f64 / 1000.0,
            },
        },
    )
}

/// This process's CPU time (and its cgroup's throttling) read at the common hold's start and end, on
/// the second's tick: a slice that used most of its CPU, or was throttled most of the time, measured
/// itself (`slices::bound`).
#[derive(Default)]
struct HoldCpu {
    start: Option<CpuMark>,
    end: Option<CpuMark>,
}

#[derive(Clone, Copy)]
struct CpuMark {
    at: Instant,
    cpu_s: f64,
    throttling: Option<(u64, u64)>,
    /// Liveness pings sent so far.
    pings: u64,
}

impl CpuMark {
    fn now(live: &Live) -> CpuMark {
        CpuMark {
            at: Instant::now(),
            cpu_s: metrics::cpu_seconds(),
            throttling: metrics::cpu_throttling(),
            pings: Live::get(&live.pings_sent),
        }
    }
}

impl HoldCpu {
    fn tick(&mut self, live: &Live) {
        let Some(w) = live.plateau.window() else {
            return;
        };
        let now = Instant::now();
        if self.start.is_none() && now < w.end {
            self.start = Some(CpuMark::now(live));
        }
        if self.end.is_none() && self.start.is_some() && now >= w.end {
            self.end = Some(CpuMark::now(live));
        }
    }

    /// Liveness pings a second over the hold (None: no hold of a second was seen). The run may end
    /// before a tick past the hold's end: then up to its end (the last check's pings are not counted).
    fn pings_per_s(&self, live: &Live) -> Option<f64> {
        let a = self.start?;
        let (at, pings) = match (self.end, live.plateau.window()) {
            (Some(b), _) => (b.at, b.pings),
            (None, Some(w)) => (w.end.min(Instant::now()), Live::get(&live.pings_sent)),
            (None, None) => return None,
        };
        let s = at.saturating_duration_since(a.at).as_secs_f64();
        (s >= 1.0).then(|| ((pings - a.pings) as f64 / s * 10.0).round() / 10.0)
    }

    /// The hold's (share of the CPU, share of periods throttled); the whole run's when no hold was
    /// seen over a second.
    fn shares(&self, t0: Instant, capacity: f64) -> (Option<f64>, Option<f64>) {
        let begin = self.start.unwrap_or(CpuMark {
            at: t0,
            cpu_s: 0.0,
            throttling: None,
            pings: 0,
        });
        let end = self.end.unwrap_or_else(|| CpuMark {
            at: Instant::now(),
            cpu_s: metrics::cpu_seconds(),
            throttling: metrics::cpu_throttling(),
            pings: 0,
        });
        let round = |x: f64| (x * 1000.0).round() / 1000.0;
        let share = exectl_core::load::slices::cpu_share(
            end.cpu_s - begin.cpu_s,
            (end.at - begin.at).as_secs_f64(),
            capacity,
        );
        let throttled = match (begin.throttling, end.throttling) {
            (Some((p0, t0)), Some((p1, t1))) => exectl_core::load::slices::throttled_share(
                p1.saturating_sub(p0),
                t1.saturating_sub(t0),
            ),
            _ => None,
        };
        (share.map(round), throttled.map(round))
    }
}
