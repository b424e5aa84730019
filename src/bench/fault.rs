//! `bench --fault`: the planned fault of a level, run from a thread of its own (its own runtime and
//! connection to the SUT, as the sampler's) at its moment of the common hold: `docker restart` of the
//! named service's container, or of every app instance in turn, each once the one before answers its
//! healthcheck again; or a rolling redeploy: each app instance's container replaced by one of its own
//! definition with the change, in turn, and nginx reloaded once the new one answers (nginx resolves
//! its upstreams' addresses when it loads its configuration, and a new container has a new address).
//! What it became (when, how long the engine took, why not) is returned for the level's figures; the
//! users' returns are the load's (`--reconnect`).

use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context};
use bollard::models::{ContainerCreateBody, EndpointSettings, NetworkingConfig};
use bollard::query_parameters::{
    CreateContainerOptionsBuilder, RemoveContainerOptionsBuilder, RestartContainerOptionsBuilder,
    StopContainerOptionsBuilder,
};
use tokio::time::Instant;

use crate::load::metrics::Live;
use crate::sut::{Target, TargetSpec};
use exectl_core::bench::fault::{Action, Change, Fault, FaultFigures};
use exectl_core::error::UsageError;

/// A level's fault as the bench plans it: checked against the stack's services before level 1.
#[derive(Debug, Clone)]
pub struct Planned {
    pub fault: Fault,
    /// The services it restarts, in order (`Fault::services`).
    pub services: Vec<String>,
    pub target: TargetSpec,
    pub stack: String,
    /// A redeploy reloads the stack's nginx after each instance (it runs one).
    pub reload_nginx: bool,
}

/// A redeploy is checked before level 1: on one engine (a swarm's services are updated, not
/// replaced container by container), and its image, if it names one, on the target.
pub async fn check_redeploy(target: &Target, fault: &Fault) -> anyhow::Result<()> {
    let Action::Redeploy(change) = &fault.action else {
        return Ok(());
    };
    if target.swarm.is_some() {
        bail!(UsageError::new(
            "--fault",
            fault.text(),
            "the target is a swarm: its instances are tasks of one service, not containers replaced one by one",
            "give restart:SERVICE@WHEN or roll@WHEN on a swarm",
        ));
    }
    if let Change::Image(image) = change {
        if target.docker.inspect_image(image).await.is_err() {
            bail!(UsageError::new(
                "--fault",
                fault.text(),
                format!("the image {image} is not on {}", target.describe()),
                "build or load it there first (docker images lists what it has)",
            ));
        }
    }
    Ok(())
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
    let change = match &planned.fault.action {
        Action::Redeploy(c) => Some(c),
        _ => None,
    };
    for (i, service) in planned.services.iter().enumerate() {
        let done = match change {
            Some(c) => replace(&target, &planned.stack, service, c).await,
            None => restart(&target, &planned.stack, service).await,
        };
        if let Err(e) = done {
            figures.error = Some(format!("{service}: {e:#}"));
            return;
        }
        // A roll: the next instance goes down once this one answers again, within the hold (a stop
        // or the hold's end leaves the rest of the roll undone, said so). A redeploy waits for the
        // last one too: nginx is reloaded once its new container answers.
        let next = planned.services.get(i + 1);
        if next.is_some() || change.is_some() {
            let next = next.map_or("nginx's reload".to_string(), |n| format!("{n}'s turn"));
            let end = live.plateau.window().map_or(w.end, |w| w.end);
            let why = tokio::select! {
                r = back(&target, &planned.stack, service) => r.err().map(|e| format!("{service}: {e:#}")),
                () = tokio::time::sleep_until(end) => Some(format!(
                    "the common hold ended before {next} ({service} had not answered its healthcheck again)"
                )),
                () = live.plateau.until_stopped() => Some(format!("the level was stopped before {next}")),
            };
            if let Some(why) = why {
                figures.error = Some(why);
                return;
            }
        }
        if change.is_some() && planned.reload_nginx {
            if let Err(e) = reload_nginx(&target, &planned.stack).await {
                figures.error = Some(format!("nginx after {service}: {e:#}"));
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

/// `service`'s container replaced by one of its own definition (as the engine reports it) with
/// `change`: stopped within `STOP_GRACE_S`, removed, created under its name on its network with its
/// aliases, started. Its config-hash label is marked, so that the next `deploy` of the recorded
/// spec sees a container it did not make and replaces it (the stack converges back).
async fn replace(
    target: &Target,
    stack: &str,
    service: &str,
    change: &Change,
) -> anyhow::Result<()> {
    let docker = &target.docker;
    let container = exectl_core::naming::container(stack, service);
    let info = docker
        .inspect_container(&container, None)
        .await
        .with_context(|| format!("inspecting {container}"))?;
    let body = redeployed(&info, change)?;
    docker
        .stop_container(
            &container,
            Some(
                StopContainerOptionsBuilder::default()
                    .t(STOP_GRACE_S)
                    .build(),
            ),
        )
        .await
        .map_err(|e| anyhow::anyhow!("the engine refused the stop: {e}"))?;
    docker
        .remove_container(
            &container,
            Some(RemoveContainerOptionsBuilder::default().force(true).build()),
        )
        .await
        .map_err(|e| anyhow::anyhow!("the engine refused the removal: {e}"))?;
    docker
        .create_container(
            Some(
                CreateContainerOptionsBuilder::default()
                    .name(&container)
                    .build(),
            ),
            body,
        )
        .await
        .map_err(|e| anyhow::anyhow!("the engine refused the new container: {e}"))?;
    docker
        .start_container(&container, None)
        .await
        .map_err(|e| anyhow::anyhow!("the engine refused to start the new container: {e}"))
}

/// The definition of a new container from `info` (an inspected one) with `change`: its config and
/// host config as they are, the one change made, its networks with their aliases only (the engine
/// gives the new container its own address).
fn redeployed(
    info: &bollard::models::ContainerInspectResponse,
    change: &Change,
) -> anyhow::Result<ContainerCreateBody> {
    use exectl_core::desired::LABEL_HASH;
    let config = info
        .config
        .clone()
        .context("the engine reported no config")?;
    // The engine's container config and its create body share their fields (the API's schema).
    let mut body: ContainerCreateBody = serde_json::from_value(serde_json::to_value(config)?)?;
    let mut env = body.env.take().unwrap_or_default();
    change.apply_env(&mut env);
    body.env = Some(env);
    if let Change::Image(image) = change {
        body.image = Some(image.clone());
    }
    if let Some(labels) = body.labels.as_mut() {
        if let Some(hash) = labels.get_mut(LABEL_HASH) {
            *hash = format!("{hash}+redeployed:{}", change.text());
        }
    }
    body.host_config = info.host_config.clone();
    let networks = info
        .network_settings
        .as_ref()
        .and_then(|n| n.networks.clone())
        .unwrap_or_default();
    body.networking_config = Some(NetworkingConfig {
        endpoints_config: Some(
            networks
                .into_iter()
                .map(|(name, e)| {
                    let aliases = e.aliases.filter(|a| !a.is_empty());
                    (
                        name,
                        EndpointSettings {
                            aliases,
                            ..Default::default()
                        },
                    )
                })
                .collect(),
        ),
    });
    Ok(body)
}

/// `nginx -s reload` in the stack's nginx: new workers resolve the upstreams again (the sockets the
/// old ones carry stay until they close).
async fn reload_nginx(target: &Target, stack: &str) -> anyhow::Result<()> {
    let container = exectl_core::naming::container(stack, "nginx");
    let out =
        crate::sut::exec(&target.docker, &container, &["nginx", "-s", "reload"], None).await?;
    if out.exit_code != 0 {
        bail!(
            "nginx -s reload exited {}: {}",
            out.exit_code,
            out.stderr.trim()
        );
    }
    Ok(())
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
