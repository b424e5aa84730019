//! `bench --fault`: the planned fault of a level, run from a thread of its own (its own runtime and
//! connection to the SUT, as the sampler's) at its moment of the common hold: `docker restart` of the
//! named service's container, or of every app instance in turn, each once the one before answers its
//! healthcheck again. What it became (when, how long the engine took, why not) is returned for the
//! level's figures; the users' returns are the load's (`--reconnect`).

use std::sync::Arc;
use std::time::Duration;

use bollard::query_parameters::RestartContainerOptionsBuilder;
use tokio::time::Instant;

use crate::load::metrics::Live;
use crate::sut::{Target, TargetSpec};
use exectl_core::bench::fault::{Fault, FaultFigures};

/// A level's fault as the bench plans it: checked against the stack's services before level 1.
#[derive(Debug, Clone)]
pub struct Planned {
    pub fault: Fault,
    /// The services it restarts, in order (`Fault::services`).
    pub services: Vec<String>,
    pub target: TargetSpec,
    pub stack: String,
}

/// The longest a ramp may take past `--ramp` before the fault is given up (the level never held its
/// users at once: there is no hold to run it in).
const PLATEAU_WAIT: Duration = Duration::from_secs(60);

/// Seconds a container is given to stop before the engine kills it (docker's own default).
const STOP_GRACE_S: i32 = 10;

/// The longest a rolled instance may take to run (and answer its healthcheck) again before the next.
const BACK_WAIT: Duration = Duration::from_secs(120);

/// Run `planned` in the common hold of the level `live` counts, on a thread of its own.
pub fn in_plateau(
    planned: Planned,
    live: Arc<Live>,
    ramp: Duration,
) -> std::thread::JoinHandle<FaultFigures> {
    std::thread::spawn(move || {
        let mut figures = FaultFigures {
            planned: planned.fault.text(),
            services: planned.services.clone(),
            ..FaultFigures::default()
        };
        let rt = match tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
        {
            Ok(rt) => rt,
            Err(e) => {
                figures.error = Some(format!("no runtime for it: {e}"));
                return figures;
            }
        };
        rt.block_on(run(&planned, &live, ramp, &mut figures));
        figures
    })
}

async fn run(planned: &Planned, live: &Live, ramp: Duration, figures: &mut FaultFigures) {
    // Connected before the hold: the fault starts on time, not after a handshake.
    let target = match Target::connect(&planned.target).await {
        Ok(t) => t,
        Err(e) => {
            figures.error = Some(format!("the SUT could not be reached: {e:#}"));
            return;
        }
    };
    let mut window = live.plateau.subscribe();
    let began = tokio::time::timeout(ramp + PLATEAU_WAIT, window.wait_for(|w| w.is_some())).await;
    let Some(w) = began.ok().and_then(|r| r.ok().and_then(|w| *w)) else {
        figures.error = Some("the level's common hold never began".into());
        return;
    };
    let at = w.start + planned.fault.at;
    // The hold may end before its moment (a stop, a short hold): the fault then did not run.
    let ended = async {
        let _ = window.wait_for(|w| w.is_some_and(|w| w.end <= at)).await;
    };
    tokio::select! {
        () = tokio::time::sleep_until(at) => {}
        () = ended => {
            figures.error = Some("the common hold ended before its moment".into());
            return;
        }
    }
    let asked = Instant::now();
    figures.at_s = Some((asked - w.start).as_secs_f64());
    for (i, service) in planned.services.iter().enumerate() {
        if let Err(e) = restart(&target, &planned.stack, service).await {
            figures.error = Some(format!("{service}: {e:#}"));
            return;
        }
        // A roll: the next instance goes down once this one answers again, within the hold (a stop
        // or the hold's end leaves the rest of the roll undone, said so).
        if let Some(next) = planned.services.get(i + 1) {
            let end = live.plateau.window().map_or(w.end, |w| w.end);
            let why = tokio::select! {
                r = back(&target, &planned.stack, service) => r.err().map(|e| format!("{service}: {e:#}")),
                () = tokio::time::sleep_until(end) => Some(format!(
                    "the common hold ended before {next}'s turn ({service} had not answered its healthcheck again)"
                )),
                () = live.plateau.until_stopped() => Some(format!("the level was stopped before {next}'s turn")),
            };
            if let Some(why) = why {
                figures.error = Some(why);
                return;
            }
        }
    }
    figures.took_s = Some(asked.elapsed().as_secs_f64());
}

/// `docker restart` of `service`'s container (stop within `STOP_GRACE_S`, then start).
async fn restart(target: &Target, stack: &str, service: &str) -> anyhow::Result<()> {
    let (engine, container) = target.locate(stack, service).await?;
    let options = RestartContainerOptionsBuilder::default()
        .t(STOP_GRACE_S)
        .build();
    engine
        .docker
        .restart_container(&container, Some(options))
        .await
        .map_err(|e| anyhow::anyhow!("the engine refused the restart: {e}"))
}

/// Until `service`'s container runs and its healthcheck (when it has one) passes, up to `BACK_WAIT`.
async fn back(target: &Target, stack: &str, service: &str) -> anyhow::Result<()> {
    let deadline = Instant::now() + BACK_WAIT;
    loop {
        let (engine, container) = target.locate(stack, service).await?;
        let state = engine
            .docker
            .inspect_container(&container, None)
            .await?
            .state
            .unwrap_or_default();
        let health = state.health.and_then(|h| h.status).map(|s| s.to_string());
        let running = state.running == Some(true);
        if running
            && health
                .as_deref()
                .is_none_or(|h| h == "healthy" || h == "none")
        {
            return Ok(());
        }
        if Instant::now() >= deadline {
            anyhow::bail!(
                "not running and healthy {} after its restart (health: {})",
                exectl_core::units::readable(BACK_WAIT),
                health.unwrap_or_else(|| "none".into())
            );
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}
