//! The run: a two-worker runtime, one spawner loop that starts users evenly over the ramp (never more than
//! `--dial-concurrency` dials in flight), login-burst's probe, a per-second progress line, and the bounded
//! wait for every user to finish.

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

/// Run the scenario to its end and return the summary.
pub fn run(opts: LoadOptions) -> Result<Summary> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("starting the load runtime")?;
    let summary = rt.block_on(run_async(opts));
    rt.shutdown_timeout(Duration::from_secs(1));
    Ok(summary)
}

/// Upper bound of one user's life after it is spawned (the hold's last liveness check included).
fn user_budget(opts: &LoadOptions) -> Duration {
    let last_ping = Duration::from_millis(opts.liveness.answer_within_ms as u64 + 1000);
    LOGIN_TIMEOUT
        + CONNECT_TIMEOUT
        + opts.hold
        + last_ping
        + 3 * CLOSE_GRACE
        + Duration::from_secs(35)
}

struct Probe {
    hist: Hist,
    samples: u64,
    errors: u64,
}

/// GET /healthcheck every 200 ms, one request at a time (a stalled server shows as few, slow samples),
/// on its own connection, until `stop`.
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
        let r = tokio::select! {
            _ = &mut stopped => break,
            r = http.healthcheck(&ctx.opts.endpoint).timeout(PROBE_TIMEOUT).timed() => r,
        };
        p.samples += 1;
        p.hist.record(r.took);
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

fn progress_line(ctx: &Ctx, n: usize) -> String {
    let l = &ctx.live;
    let g = Live::get;
    let (_, rss) = metrics::rss_bytes();
    let mut s = format!(
        "[{:>5.0}s] {} started {}/{} dialing {}",
        ctx.t0.elapsed().as_secs_f64(),
        ctx.opts.scenario,
        g(&l.started),
        n,
        g(&l.dialing)
    );
    if ctx.opts.scenario.uses_socket() {
        s += &format!(
            " connected {} open {} held {} stalled {}",
            g(&l.connected),
            g(&l.open),
            g(&l.held),
            g(&l.stalled)
        );
    } else {
        s += &format!(" logins ok {}", g(&l.logins_ok));
    }
    s += &format!(" done {} failed {}", g(&l.done), g(&l.failed));
    if matches!(ctx.opts.scenario, Scenario::Collab | Scenario::Editing) {
        s += &format!(
            " frames {}→{} http {}",
            g(&l.frames_sent),
            g(&l.frames_received),
            g(&l.http_requests)
        );
    }
    s + &format!(" rss {:.1} MiB", rss as f64 / (1 << 20) as f64)
}

async fn run_async(opts: LoadOptions) -> Summary {
    let n = opts.users;
    let c = opts.dial_concurrency.max(1);
    let http = app::Client::new(c, super::TIMEOUTS);
    let ctx = Arc::new(Ctx::new(opts, http));
    let opts = &ctx.opts;
    let t0 = ctx.t0;
    let outcomes: Arc<Mutex<Vec<Option<UserOutcome>>>> = Arc::new(Mutex::new(vec![None; n]));
    let all_done = Arc::new(Notify::new());

    // Safety net only: every user's own deadline ends it long before.
    let waves = n.div_ceil(c) as u32;
    let hard_deadline = t0
        + opts.ramp
        + (LOGIN_TIMEOUT + CONNECT_TIMEOUT) * waves
        + user_budget(opts)
        + Duration::from_secs(10);

    let stop_probe = Arc::new(Notify::new());
    let probe_task = (opts.scenario == Scenario::LoginBurst).then(|| {
        tokio::spawn(probe(
            Arc::clone(&ctx),
            Arc::clone(&stop_probe),
            hard_deadline,
        ))
    });

    let spawner = {
        let ctx = Arc::clone(&ctx);
        let outcomes = Arc::clone(&outcomes);
        let all_done = Arc::clone(&all_done);
        tokio::spawn(async move {
            let sem = Arc::new(Semaphore::new(c));
            for i in 0..n {
                let at = t0 + ctx.opts.ramp.mul_f64(i as f64 / n as f64);
                sleep_until(at).await;
                let permit = Arc::clone(&sem)
                    .acquire_owned()
                    .await
                    .expect("the semaphore is never closed");
                Live::inc(&ctx.live.started);
                let ctx = Arc::clone(&ctx);
                let outcomes = Arc::clone(&outcomes);
                let all_done = Arc::clone(&all_done);
                let deadline = Instant::now() + user_budget(&ctx.opts);
                tokio::spawn(async move {
                    let o = tokio::time::timeout_at(
                        deadline,
                        session::run_user(Arc::clone(&ctx), i, permit),
                    )
                    .await
                    .unwrap_or_else(|_| UserOutcome::deadline());
                    let failed = o.failure.is_some();
                    outcomes.lock().unwrap()[i] = Some(o);
                    if failed {
                        Live::inc(&ctx.live.failed);
                    }
                    if ctx.live.done.fetch_add(1, Ordering::AcqRel) + 1 == n as u64 {
                        all_done.notify_one();
                    }
                });
            }
        })
    };

    let mut tick = tokio::time::interval_at(t0 + Duration::from_secs(1), Duration::from_secs(1));
    loop {
        tokio::select! {
            _ = all_done.notified() => break,
            _ = tick.tick() => {
                if opts.progress {
                    eprintln!("{}", progress_line(&ctx, n));
                }
                if Live::get(&ctx.live.done) >= n as u64 {
                    break;
                }
                if Instant::now() >= hard_deadline {
                    eprintln!("exectl load: hard deadline reached; reporting unfinished users as failed");
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
                Ok(p) => Some((p.samples, p.errors, p.hist.percentiles())),
                Err(_) => Some((0, 0, Default::default())),
            }
        }
        None => None,
    };

    let outcomes: Vec<UserOutcome> = outcomes
        .lock()
        .unwrap()
        .iter()
        .map(|o| o.clone().unwrap_or_else(UserOutcome::deadline))
        .collect();
    let connect_span_s = outcomes
        .iter()
        .filter_map(|o| o.connected_at_us)
        .max()
        .map_or(0.0, |us| us as f64 / 1e6);
    let (peak_rss, _) = metrics::rss_bytes();
    Summary::build(
        &ctx,
        &outcomes,
        RunFacts {
            duration_s,
            connect_span_s,
            peak_rss,
            cpu_s: metrics::cpu_seconds(),
            probe,
        },
    )
}
