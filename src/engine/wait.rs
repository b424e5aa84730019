//! The readiness gate: poll one container until it is ready or the deadline passes, and on failure say
//! why (last health probe output, last answer of deploy's own probe, last log lines).

use super::probe::{interval, Prober};
use crate::core::readiness::{Probe, ReadyBy};
use crate::sut::Target;
use anyhow::Result;
use bollard::models::{ContainerStateStatusEnum, HealthStatusEnum};
use bollard::query_parameters::LogsOptionsBuilder;
use bollard::Docker;
use futures_util::StreamExt;
use std::time::Duration;
use tokio::time::Instant;

pub enum Readiness {
    /// What made it ready, and Docker's health then ("none" without a healthcheck).
    Ready(ReadyBy, String),
    Failed(String),
}

/// How long to wait for a service and what counts.
pub struct Wanted<'a> {
    /// Ready, not only started (compose's `service_healthy`, and the waits at the end).
    pub ready: bool,
    /// The service's own answer that makes it ready (`core::readiness`), probed at its interval.
    pub probe: Option<&'a Probe>,
    pub deadline: Instant,
}

/// Ready means: a one-shot that exited 0 (compose's `up --wait` wrongly calls that a failure); running
/// when only a start is wanted; else the first of Docker's `healthy` and the probe's answer; running
/// when it has neither a healthcheck nor a probe. A probe is never skipped for Docker's word on a
/// service without a healthcheck: Traefik runs long before it routes.
pub async fn wait_ready(
    target: &Target,
    prober: &Prober,
    container: &str,
    wanted: &Wanted<'_>,
    held: super::apply::Held<'_>,
) -> Result<Readiness> {
    let docker = &target.docker;
    let mut last_probe: Option<String> = None;
    loop {
        // A broken lock stops the wait before it misreads a teardown's removals as a failure.
        held()?;
        let info = docker.inspect_container(container, None).await?;
        let state = info.state.clone().unwrap_or_default();
        let has_health = state.health.is_some();
        let health = state.health.as_ref().and_then(|h| h.status);
        let docker_health = health
            .map(|h| h.to_string())
            .unwrap_or_else(|| "none".into());
        match state.status {
            Some(ContainerStateStatusEnum::EXITED) if state.exit_code == Some(0) => {
                return Ok(Readiness::Ready(ReadyBy::Completed, docker_health))
            }
            Some(ContainerStateStatusEnum::EXITED) | Some(ContainerStateStatusEnum::DEAD) => {
                let report = format!(
                    "exited with code {}{}",
                    state.exit_code.unwrap_or(-1),
                    logs_tail(docker, container).await
                );
                return Ok(Readiness::Failed(report));
            }
            Some(ContainerStateStatusEnum::RUNNING) => {
                if !wanted.ready {
                    return Ok(Readiness::Ready(ReadyBy::Running, docker_health));
                }
                if health == Some(HealthStatusEnum::HEALTHY) {
                    return Ok(Readiness::Ready(ReadyBy::Healthy, docker_health));
                }
                match wanted.probe {
                    Some(probe) => match prober.once(target, container, &info, probe).await {
                        Ok(()) => return Ok(Readiness::Ready(ReadyBy::Probe, docker_health)),
                        Err(why) => last_probe = Some(format!("{}: {why}", probe.describe())),
                    },
                    None if !has_health => {
                        return Ok(Readiness::Ready(ReadyBy::Running, docker_health))
                    }
                    None => {}
                }
            }
            _ => {}
        }
        if Instant::now() >= wanted.deadline {
            let docker_probe = state
                .health
                .and_then(|h| h.log)
                .and_then(|l| l.last().cloned())
                .map(|r| {
                    format!(
                        "; last health probe: exit {} {:?}",
                        r.exit_code.unwrap_or(-1),
                        r.output.unwrap_or_default().trim()
                    )
                })
                .unwrap_or_else(|| {
                    if has_health {
                        "; no health probe has run yet".into()
                    } else {
                        String::new()
                    }
                });
            let own_probe = match (wanted.probe, last_probe) {
                (_, Some(last)) => format!("; last readiness probe: {last}"),
                (Some(p), None) => format!("; readiness probe {} never ran", p.describe()),
                (None, None) => String::new(),
            };
            let report = format!(
                "not ready before --wait-timeout (state {}, health {docker_health}){docker_probe}{own_probe}{}",
                state.status.map(|s| s.to_string()).unwrap_or_default(),
                logs_tail(docker, container).await
            );
            return Ok(Readiness::Failed(report));
        }
        let pause = wanted
            .probe
            .map(interval)
            .unwrap_or(Duration::from_millis(250));
        tokio::time::sleep(pause).await;
    }
}

/// The container's last log lines, for error reports.
pub async fn logs_tail(docker: &Docker, container: &str) -> String {
    let mut stream = docker.logs(
        container,
        Some(
            LogsOptionsBuilder::default()
                .stdout(true)
                .stderr(true)
                .tail("10")
                .build(),
        ),
    );
    let mut lines = String::new();
    while let Some(Ok(chunk)) = stream.next().await {
        lines.push_str(&chunk.to_string());
    }
    if lines.trim().is_empty() {
        String::new()
    } else {
        format!("; last log lines:\n{}", lines.trim_end())
    }
}
