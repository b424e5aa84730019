//! Remove what carries the stack's label, and only that: containers and network; volumes with --purge.
//! Converges: another command (a deploy whose lock was broken) may still be creating objects, and the
//! network may still be in use for a while (a container outside the stack leaving it), so it observes
//! again after each pass and stops when a pass finds nothing left to remove (or after PATIENCE).

use super::observe::observe;
use anyhow::{Context, Result};
use bollard::errors::Error as DockerError;
use bollard::query_parameters::{RemoveContainerOptionsBuilder, RemoveVolumeOptionsBuilder};
use bollard::Docker;
use serde::Serialize;
use std::time::Duration;

#[derive(Debug, Default, Serialize)]
pub struct Removed {
    pub containers: Vec<String>,
    pub networks: Vec<String>,
    pub volumes: Vec<String>,
    /// Volumes kept because --purge was not given.
    pub kept_volumes: Vec<String>,
}

/// How long teardown keeps observing and removing while something is still there: a time, not a
/// number of passes (ten passes of 300 ms gave up on a network after 3 s, whoever held it).
const PATIENCE: Duration = Duration::from_secs(60);

/// Remove container `name`, stopping it first if it runs; never its volumes (teardown removes those
/// itself, with --purge only).
pub(crate) async fn force_remove(docker: &Docker, name: &str) -> Result<(), DockerError> {
    let options = RemoveContainerOptionsBuilder::default()
        .force(true)
        .v(false)
        .build();
    docker.remove_container(name, Some(options)).await
}

/// What a removal's error means for teardown.
fn settled(e: &DockerError) -> Option<bool> {
    match e {
        // Already gone (removed by someone else): done.
        DockerError::DockerResponseServerError {
            status_code: 404, ..
        } => Some(true),
        // Removal already in progress, network with endpoints still attached, volume still in use:
        // the next pass sees it again.
        DockerError::DockerResponseServerError {
            status_code: 403 | 409 | 500,
            ..
        } => Some(false),
        _ => None,
    }
}

/// Ok(true) removed or already gone, Ok(false) to retry on the next pass.
fn outcome(r: Result<(), DockerError>, what: &str) -> Result<bool> {
    match r {
        Ok(()) => Ok(true),
        Err(e) => match settled(&e) {
            Some(done) => Ok(done),
            None => Err(e).with_context(|| format!("removing {what}")),
        },
    }
}

pub async fn teardown(docker: &Docker, stack: &str, purge: bool) -> Result<Removed> {
    let mut removed = Removed::default();
    let mut last_error = String::new();
    let mut stuck_network = None;
    let started = std::time::Instant::now();
    for pass in 0.. {
        let found = observe(docker, stack).await?;
        let volumes: Vec<&String> = if purge {
            found.volumes.iter().collect()
        } else {
            Vec::new()
        };
        if found.containers.is_empty() && found.networks.is_empty() && volumes.is_empty() {
            removed.kept_volumes = if purge { Vec::new() } else { found.volumes };
            return Ok(removed);
        }
        if started.elapsed() > PATIENCE {
            break;
        }
        if pass > 0 {
            // Quick while a deploy may be racing it, then once a second.
            let pause = if pass < 10 { 300 } else { 1000 };
            tokio::time::sleep(Duration::from_millis(pause)).await;
        }
        // In parallel: each force-remove stops its container first.
        let removals = found.containers.iter().map(|c| async move {
            let r = force_remove(docker, &c.name).await;
            (c.name.clone(), outcome(r, &format!("container {}", c.name)))
        });
        for (name, r) in futures_util::future::join_all(removals).await {
            match r? {
                true => push_once(&mut removed.containers, name),
                false => last_error = format!("container {name} could not be removed yet"),
            }
        }
        // The last pass's: a network that failed once and went since is not named at the end.
        stuck_network = None;
        for name in &found.networks {
            match outcome(
                docker.remove_network(name).await,
                &format!("network {name}"),
            )? {
                true => push_once(&mut removed.networks, name.clone()),
                false => {
                    last_error = format!("network {name} still has containers attached");
                    stuck_network = Some(name.clone());
                }
            }
        }
        for v in volumes {
            let r = docker
                .remove_volume(v, Some(RemoveVolumeOptionsBuilder::default().build()))
                .await;
            match outcome(r, &format!("volume {v}"))? {
                true => push_once(&mut removed.volumes, v.clone()),
                false => last_error = format!("volume {v} is still in use"),
            }
        }
    }
    if let Some(network) = stuck_network {
        last_error = attached(docker, &network).await;
    }
    anyhow::bail!(
        "stack {stack}: objects were still appearing or in use after {} s ({last_error}); is another command still deploying it, or a container outside the stack attached to its network? Run teardown again once it is done",
        PATIENCE.as_secs()
    )
}

/// Who holds a network the engine will not remove. None at all is the engine's own stale endpoint
/// (moby/moby#17217: seen once in a clean-clone run of the suite under load, the network's Containers
/// empty): only a restart of the engine clears it, which exectl leaves to the user.
async fn attached(docker: &Docker, network: &str) -> String {
    let inspected = docker
        .inspect_network(
            network,
            None::<bollard::query_parameters::InspectNetworkOptions>,
        )
        .await;
    let names: Vec<String> = match &inspected {
        Ok(n) => n
            .containers
            .iter()
            .flatten()
            .map(|(id, c)| c.name.clone().unwrap_or_else(|| id.clone()))
            .collect(),
        Err(e) => return format!("network {network} still in use; inspecting it failed: {e}"),
    };
    if names.is_empty() {
        format!(
            "network {network} has no container attached, yet the engine counts an endpoint on it: \
             a stale endpoint (moby/moby#17217) that only a restart of the Docker engine clears"
        )
    } else {
        format!(
            "network {network} still has containers attached: {}",
            names.join(", ")
        )
    }
}

fn push_once(list: &mut Vec<String>, name: String) {
    if !list.contains(&name) {
        list.push(name);
    }
}
