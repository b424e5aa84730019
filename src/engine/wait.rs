//! The health gate: poll one container until it is ready or the deadline passes, and on failure say why
//! (last health probe output, last log lines).

use anyhow::Result;
use bollard::models::{ContainerStateStatusEnum, HealthStatusEnum};
use bollard::query_parameters::LogsOptionsBuilder;
use bollard::Docker;
use futures_util::StreamExt;
use std::time::Duration;
use tokio::time::Instant;

pub enum Readiness {
    /// "healthy", "running" or "completed".
    Ready(&'static str),
    Failed(String),
}

/// Ready means: healthy (when it has a healthcheck and `healthy` is wanted), else running; a one-shot
/// that exited 0 is ready too (compose's `up --wait` wrongly calls that a failure).
pub async fn wait_ready(
    docker: &Docker,
    container: &str,
    healthy: bool,
    deadline: Instant,
    held: super::apply::Held<'_>,
) -> Result<Readiness> {
    loop {
        // A broken lock stops the wait before it misreads a teardown's removals as a failure.
        held()?;
        let info = docker.inspect_container(container, None).await?;
        let state = info.state.unwrap_or_default();
        let has_health = state.health.is_some();
        let health = state.health.as_ref().and_then(|h| h.status);
        match state.status {
            Some(ContainerStateStatusEnum::EXITED) if state.exit_code == Some(0) => {
                return Ok(Readiness::Ready("completed"))
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
                if !healthy || !has_health {
                    return Ok(Readiness::Ready("running"));
                }
                if health == Some(HealthStatusEnum::HEALTHY) {
                    return Ok(Readiness::Ready("healthy"));
                }
            }
            _ => {}
        }
        if Instant::now() >= deadline {
            let probe = state
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
                .unwrap_or_else(|| "; no health probe has run yet".into());
            let report = format!(
                "not ready before --wait-timeout (state {}, health {}){probe}{}",
                state.status.map(|s| s.to_string()).unwrap_or_default(),
                health
                    .map(|h| h.to_string())
                    .unwrap_or_else(|| "none".into()),
                logs_tail(docker, container).await
            );
            return Ok(Readiness::Failed(report));
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
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
