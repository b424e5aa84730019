//! `exectl bench`: the seed's method end to end. For each level in order: run the scenario at that many
//! users (the load engine, `load::run`, in this process or over slice processes and generator hosts:
//! users ramp in, then all of them are held at once for the hold)
//! while the sampler reads the SUT on the same clock; then the leak check; then the level's verdict
//! (`core::bench`). Stops after the first level that did not hold its users (one that held them and
//! leaked goes on, measured from what it left) unless asked to go on, and at once when asked from
//! outside (`Stop`: a signal, a lost SUT link). The caller writes the results after every level, so a
//! bench cut short keeps what it measured.

pub mod clients;
pub mod fault;
pub mod figures;
pub mod sampler;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Result;

use crate::load::metrics::Live;
use crate::load::LoadOptions;
use exectl_core::bench::limiting::{self, Known};
use exectl_core::bench::timeline::at_once;
use exectl_core::bench::{
    Besides, CpuScale, InstanceSample, LeakCheck, LevelResult, LevelSpan, Sample, Slos,
};
use sampler::{LevelState, Sampler};

/// The levels of a bench and what each needs besides its user count (not a deploy's `plan::Plan`).
pub struct Levels {
    /// The load of each level, in order (users set per level).
    pub levels: Vec<LoadOptions>,
    pub slos: Slos,
    pub settle: Duration,
    /// The app drops an empty room this long after its last client left: rooms a shorter leak check
    /// leaves are no leak shown.
    pub room_cleanup: Duration,
    pub continue_after_fail: bool,
    /// nginx: worker_connections × worker processes, when the stack has an LB.
    pub nginx_capacity: Option<u64>,
    /// Print a progress line every sample while a level runs.
    pub progress: bool,
    pub stop: Arc<Stop>,
    /// What each container's CPU is a share of.
    pub cpu: CpuScale,
    /// The generator runs on the SUT host (a local target).
    pub generator_local: bool,
    /// `--browser-probe`: one more user, in headless Chromium, during each level's plateau.
    pub browser: Option<crate::browser::Probe>,
    /// What the instances counted before level 1 with no client socket open (ghosts an earlier client
    /// left: the app's leak): level 1 is measured from them.
    pub ghosts: Vec<InstanceSample>,
    /// `--fault`: run in each level's common hold (`fault::in_plateau`).
    pub fault: Option<fault::Planned>,
}

/// A stop asked from outside the levels (SIGINT/SIGTERM, a lost link to the SUT): the running level's
/// common hold ends now, its users close, it is judged interrupted, and no level runs after it.
#[derive(Default)]
pub struct Stop {
    why: Mutex<Option<String>>,
    running: Mutex<Option<Arc<Live>>>,
    /// Set with `why`: the sampler's leak check polls it (it runs on the sampler's thread).
    asked: Arc<AtomicBool>,
}

impl Stop {
    pub fn stop(&self, why: impl Into<String>) {
        self.why.lock().unwrap().get_or_insert_with(|| why.into());
        self.asked.store(true, Ordering::Release);
        if let Some(live) = self.running.lock().unwrap().as_ref() {
            live.stop();
        }
    }

    pub fn why(&self) -> Option<String> {
        self.why.lock().unwrap().clone()
    }

    /// The level running now (None between levels); one that starts after a stop stops at once.
    fn running(&self, live: Option<Arc<Live>>) {
        let mut running = self.running.lock().unwrap();
        *running = live;
        if let (Some(l), true) = (running.as_ref(), self.why().is_some()) {
            l.stop();
        }
    }
}

/// A level as it finished, for the caller's progress and its files.
pub struct Done<'a> {
    pub index: usize,
    pub of: usize,
    pub result: &'a LevelResult,
    pub samples: &'a [Sample],
}

/// What ran: the levels judged, and the error that ended the bench early, if one did (the caller still
/// saves what was measured before saying it).
pub struct Ran {
    pub levels: Vec<LevelResult>,
    pub failed: Option<anyhow::Error>,
}

/// Run every level (the caller saves after each: `after_level`). `clients` reads the client sockets
/// open to the stack (`clients::count`; Err, why, when they could not be read): after a failed leak
/// check, none open means the instances count connections no socket holds — the app leaked them — and
/// the next level is measured from them.
pub fn run(
    plan: Levels,
    sampler: &Sampler,
    clients: &dyn Fn() -> Result<u64, String>,
    after_level: impl FnMut(Done) -> Result<()>,
    progress: &dyn crate::progress::Progress,
) -> Ran {
    let mut levels = Vec::new();
    let failed = run_levels(plan, sampler, clients, after_level, &mut levels, progress).err();
    Ran { levels, failed }
}

fn run_levels(
    plan: Levels,
    sampler: &Sampler,
    clients: &dyn Fn() -> Result<u64, String>,
    mut after_level: impl FnMut(Done) -> Result<()>,
    out: &mut Vec<LevelResult>,
    progress: &dyn crate::progress::Progress,
) -> Result<()> {
    let of = plan.levels.len();
    let mut ghosts = plan.ghosts.clone();
    for (index, mut opts) in plan.levels.into_iter().enumerate() {
        if plan.stop.why().is_some() {
            break;
        }
        let users = opts.users as u64;
        let live = Arc::new(Live::default());
        opts.live = Some(live.clone());
        let (ramp, tokens, churn) = (opts.ramp, opts.tokens, opts.churn);
        let start_ms = sampler.now_ms();
        let start_unix = unix_now();
        sampler.level(Some(LevelState {
            progress: plan.progress.then(|| format!("level {}/{of}", index + 1)),
            users,
            live: live.clone(),
            started: tokio::time::Instant::now(),
            ramp,
            tokens,
            cpu: plan.cpu.clone(),
        }));
        plan.stop.running(Some(live.clone()));
        let browsing = plan
            .browser
            .clone()
            .map(|p| browse_in_plateau(p, live.clone(), ramp));
        let faulting = plan
            .fault
            .clone()
            .map(|p| fault::in_plateau(p, live.clone(), ramp));
        let summary = crate::load::run(opts, progress);
        plan.stop.running(None);
        let browsed = browsing.map(|b| {
            b.join().unwrap_or_else(|_| {
                exectl_core::bench::browser::BrowserProbe::failure(
                    "launch",
                    "the probe's thread panicked",
                )
            })
        });
        let faulted = faulting.zip(plan.fault.as_ref()).map(|(f, p)| {
            f.join()
                .unwrap_or_else(|_| exectl_core::bench::fault::FaultFigures {
                    planned: p.fault.text(),
                    services: p.services.clone(),
                    error: Some("its thread panicked".into()),
                    ..Default::default()
                })
        });
        let summary = summary?;
        let end_ms = sampler.now_ms();
        sampler.level(None);
        let leak = match plan.stop.why() {
            Some(_) => LeakCheck::not_run("the bench was stopped"),
            None => sampler.leak_check(plan.settle, plan.stop.asked.clone(), ghosts.clone()),
        };
        // Rooms only, within the app's cleanup: no leak shown. Else what is left is held by a socket,
        // or by none (the app's leak).
        let leak = leak.within_room_cleanup(&ghosts, plan.room_cleanup.as_millis() as u64);
        let leak = match leak.ok {
            Some(false) => {
                let open = clients();
                leak.with_sockets(open, &ghosts)
            }
            _ => leak,
        };
        // Read after the leak check: a stop during it leaves the level unjudged too.
        let interrupted = plan.stop.why();
        let settled_ms = sampler.now_ms();
        let samples = sampler.snapshot();
        // The common hold, on the bench's clock: the generator's own instants (none: an empty hold).
        let on_clock = |t: tokio::time::Instant| sampler.ms_at(t);
        let (hold_ms, hold_end_ms) = live
            .plateau
            .window()
            .map_or((end_ms, end_ms), |w| (on_clock(w.start), on_clock(w.end)));
        let span = LevelSpan {
            users,
            start_ms,
            hold_ms,
            hold_end_ms,
            end_ms,
            settled_ms,
        };
        // The restarts the planned fault made: no incident, nor the limiting component.
        let restarted = match &faulted {
            Some(f) if f.at_s.is_some() => f.services.clone(),
            _ => Vec::new(),
        };
        let known = Known {
            nginx_capacity: plan.nginx_capacity,
            nginx_not_enough: sampler.nginx_not_enough(start_unix),
            cpu: plan.cpu.clone(),
            generator_local: plan.generator_local,
            generator_cpus: crate::load::metrics::cpu_capacity(),
            restarted: restarted.clone(),
        };
        let mut figures = figures::of(&summary);
        // The client's own browser failing (it could not start) says nothing of the SUT: the probe is
        // not measured, and the level cannot count.
        let browser_failed = browsed
            .as_ref()
            .and_then(exectl_core::bench::browser::BrowserProbe::client_failure);
        figures.browser = browsed;
        // The fault, and the users' returns: those back and held to the end are served.
        let fault_invalid = faulted.as_ref().and_then(|f| f.invalid());
        let recovery = summary.recovery.clone().unwrap_or_default();
        figures.held += recovery.users_back;
        figures.fault = faulted.map(|mut f| {
            f.recovery = recovery.clone();
            f.updates_lost = summary
                .fanout
                .as_ref()
                .map(|x| x.deliveries.lost.unwrap_or(0));
            f
        });
        // Users that came and went (`--churn`): each instance's trends over the hold.
        figures.growth = churn.map(|mean| {
            exectl_core::bench::growth::Growth::of(
                &span,
                &samples,
                users,
                mean.as_secs_f64(),
                recovery.clone(),
            )
        });
        let instances = at_once(&span, &samples, &ghosts);
        figures.instances_peak = instances.peak;
        figures.instances_min_in_hold = instances.min_in_hold;
        let checks = plan.slos.check(&figures);
        // Users that leave and come back (`--churn`, `--fault`) are between the generator's count and
        // the instances' at any sample: the two are not compared (`back` and `growth` judge those
        // levels, and a leak's ghosts grow the instances' count as another client's would).
        let (unseen, foreign) = match summary.recovery {
            Some(_) => (None, None),
            None => (instances.unseen(), instances.foreign()),
        };
        let besides = Besides {
            incidents: exectl_core::bench::incidents::reasons_besides(&span, &samples, &restarted)
                .into_iter()
                .chain(unseen)
                .collect(),
            invalid: foreign
                .into_iter()
                .chain(browser_failed)
                .chain(fault_invalid)
                .collect(),
            interrupted,
        };
        let result = LevelResult::judge(span, figures, checks, leak, besides, || {
            limiting::limiting_component(&span, &samples, &known)
        })
        .with_ghosts(ghosts.clone());
        // Left with no client socket open: what the instances count now is the app's leak, and the
        // next level is measured from it.
        if result.leak.ok == Some(false) && result.leak.sockets == Some(0) {
            ghosts = result.leak.instances.clone();
        }
        let stops = result.stops_the_bench();
        out.push(result);
        after_level(Done {
            index,
            of,
            result: out.last().expect("just pushed"),
            samples: &samples,
        })?;
        if stops && !plan.continue_after_fail {
            break;
        }
    }
    Ok(())
}

/// Longest a ramp may take past `--ramp` before the browser goes in anyway: a level that never gets
/// all its users at once is still one a browser user meets.
const PLATEAU_WAIT: Duration = Duration::from_secs(15);

/// The browser's session on its own thread and runtime: it waits for the level's common hold to begin
/// (every user open), then logs in, opens its project and syncs, timed.
fn browse_in_plateau(
    probe: crate::browser::Probe,
    live: Arc<Live>,
    ramp: Duration,
) -> std::thread::JoinHandle<exectl_core::bench::browser::BrowserProbe> {
    std::thread::spawn(move || {
        let rt = match tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
        {
            Ok(rt) => rt,
            Err(e) => return exectl_core::bench::browser::BrowserProbe::failure("launch", e),
        };
        rt.block_on(async {
            let mut window = live.plateau.subscribe();
            let _ =
                tokio::time::timeout(ramp + PLATEAU_WAIT, window.wait_for(|w| w.is_some())).await;
            crate::browser::run(&probe).await
        })
    })
}

fn unix_now() -> i64 {
    crate::clock::unix_s() as i64
}
