//! The readiness gate: poll one container until it is ready or the deadline passes, and on failure say
//! why (last health probe output, last answer of deploy's own probe, last log lines).

use super::desired::{DesiredService, LABEL_STACK};
use super::probe::{interval, Prober};
use crate::sut::Target;
use anyhow::Result;
use bollard::models::{ContainerStateStatusEnum, HealthStatusEnum};
use bollard::query_parameters::{EventsOptionsBuilder, LogsOptionsBuilder};
use bollard::Docker;
use exectl_core::readiness::{restarts_during, Probe, ReadyBy, Restart, CRASH_LOOP};
use futures_util::StreamExt;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::Instant;

/// Ok while the command still holds the stack's lock: checked before every change, so a
/// `--break-lock` from another command stops this one at its next step.
pub type Held<'a> = &'a (dyn Fn() -> Result<()> + Sync);

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
    /// Its container's (id, RestartCount) when the deploy began (`RestartWatch::before`).
    pub before: Option<(&'a str, i64)>,
}

/// Ready means: a one-shot that exited 0 (compose's `up --wait` wrongly calls that a failure); running
/// when only a start is wanted; else the first of Docker's `healthy` and the probe's answer, the probe
/// counting only while Docker does not call it unhealthy; running when it has neither a healthcheck
/// nor a probe. A probe is never skipped for Docker's word on a
/// service without a healthcheck: Traefik runs long before it routes.
pub async fn wait_ready(
    target: &Target,
    prober: &Prober,
    container: &str,
    wanted: &Wanted<'_>,
    held: Held<'_>,
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
        let id = info.id.as_deref().unwrap_or_default();
        let restarts = restarts_during(wanted.before, id, info.restart_count.unwrap_or(0));
        if restarts >= CRASH_LOOP {
            return Ok(Readiness::Failed(format!(
                "restarted {restarts} times during this deploy (a crash loop){}",
                logs_tail(docker, container).await
            )));
        }
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
                // Docker calls it unhealthy: whatever the probe answers, it is not ready until Docker's
                // own check passes again, as status and bench read Docker's word (after `docker pause`
                // Docker says unhealthy at once, and after the unpause until its next check, up to one
                // --health-interval: a deploy then called the app ready and the bench refused it).
                if health == Some(HealthStatusEnum::UNHEALTHY) {
                    last_probe = Some(
                        "Docker calls it unhealthy: waiting for Docker's own healthcheck to pass again"
                            .into(),
                    );
                } else {
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
    let lines = last_logs(docker, container).await;
    if lines.is_empty() {
        String::new()
    } else {
        format!("; last log lines:\n{lines}")
    }
}

/// The container's last 10 log lines (stdout and stderr), trimmed; empty when it has none.
pub async fn last_logs(docker: &Docker, container: &str) -> String {
    read_logs(docker, container, "10", false).await
}

async fn read_logs(docker: &Docker, container: &str, tail: &str, timestamps: bool) -> String {
    let mut stream = docker.logs(
        container,
        Some(
            LogsOptionsBuilder::default()
                .stdout(true)
                .stderr(true)
                .timestamps(timestamps)
                .tail(tail)
                .build(),
        ),
    );
    let mut lines = String::new();
    while let Some(Ok(chunk)) = stream.next().await {
        lines.push_str(&chunk.to_string());
    }
    // What a container logged may quote a user's JWT (nginx's error log quotes the request line): cut
    // before it reaches an error message or a bench's results.
    exectl_core::secrets::redact_credentials(lines.trim_end().trim_start_matches('\n'))
}

/// The last 10 log lines written up to `until_ns` (a die event's time): the words of the run that died,
/// not those of the run Docker started after it. Falls back to the last lines when none are dated.
async fn logs_before(docker: &Docker, container: &str, until_ns: i64) -> String {
    let text = read_logs(docker, container, "300", true).await;
    let before: Vec<&str> = text
        .lines()
        .filter_map(|l| {
            let (at, line) = l.split_once(' ')?;
            (timestamp_ns(at)? <= until_ns).then_some(line)
        })
        .collect();
    if before.is_empty() {
        return last_logs(docker, container).await;
    }
    before[before.len().saturating_sub(10)..].join("\n")
}

/// Nanoseconds since the epoch of a log line's `2026-12-01T22:05:00.331740123Z`.
fn timestamp_ns(at: &str) -> Option<i64> {
    let secs = i64::try_from(exectl_core::units::parse_rfc3339(at)?).ok()?;
    let digits: String = at
        .split_once('.')
        .map(|(_, f)| f.chars().take_while(char::is_ascii_digit).take(9).collect())
        .unwrap_or_default();
    let nanos: i64 = format!("{digits:0<9}").parse().ok()?;
    Some(secs * 1_000_000_000 + nanos)
}

/// Restarts of the stack's containers during one deploy: each container's RestartCount when the deploy
/// began, and the engine's die events since then (for the exit codes; the count comes from RestartCount,
/// which no event can be missed from).
pub struct RestartWatch {
    before: HashMap<String, (String, i64)>,
    /// (container id, exit code, time in ns) of every die event of the stack since the deploy began.
    dies: Arc<Mutex<Vec<Died>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for RestartWatch {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl RestartWatch {
    /// Call before anything changes. The events are asked from the engine's own clock (a remote SUT's
    /// may differ from ours), a second early: it replays what happened before the stream connected.
    pub async fn start(target: &Target, stack: &str, containers: &[&str]) -> Result<RestartWatch> {
        let docker = &target.docker;
        let inspected = futures_util::future::join_all(containers.iter().map(|name| async move {
            let info = docker.inspect_container(name, None).await.ok()?;
            let id = info.id.unwrap_or_default();
            Some((name.to_string(), (id, info.restart_count.unwrap_or(0))))
        }));
        let (inspected, info) = tokio::join!(inspected, docker.info());
        let before: HashMap<String, (String, i64)> = inspected.into_iter().flatten().collect();
        let now = info?.system_time;
        let since = now
            .as_deref()
            .and_then(exectl_core::units::parse_rfc3339)
            .map(|s| s.saturating_sub(1).to_string());
        let filters = HashMap::from([
            ("type", vec!["container".to_string()]),
            ("event", vec!["die".to_string()]),
            ("label", vec![format!("{LABEL_STACK}={stack}")]),
        ]);
        let mut options = EventsOptionsBuilder::default().filters(&filters);
        if let Some(s) = &since {
            options = options.since(s);
        }
        let mut events = docker.events(Some(options.build()));
        let dies: Arc<Mutex<Vec<Died>>> = Arc::default();
        let seen = dies.clone();
        let task = tokio::spawn(async move {
            while let Some(Ok(e)) = events.next().await {
                let Some(actor) = e.actor else { continue };
                let code = super::exit_code(&actor).unwrap_or(-1);
                if let Some(id) = actor.id {
                    let at = e.time_nano.unwrap_or(i64::MAX);
                    seen.lock()
                        .expect("not poisoned")
                        .push(Died { id, code, at });
                }
            }
        });
        Ok(RestartWatch { before, dies, task })
    }

    /// The container's (id, RestartCount) when the deploy began.
    pub fn before(&self, container: &str) -> Option<(&str, i64)> {
        self.before.get(container).map(|(id, n)| (id.as_str(), *n))
    }

    /// Every service whose container restarted during this deploy, with the exit codes and its last log
    /// lines. Read at the end, after every wait: a crash after a service answered counts too.
    pub async fn restarted(
        &self,
        docker: &Docker,
        services: &[DesiredService],
    ) -> Result<Vec<Restart>> {
        let inspected = futures_util::future::join_all(
            services
                .iter()
                .map(|s| docker.inspect_container(&s.container_name, None)),
        )
        .await;
        let mut out = Vec::new();
        for (s, info) in services.iter().zip(inspected) {
            let Ok(info) = info else { continue };
            let id = info.id.unwrap_or_default();
            let before = self.before(&s.container_name);
            let restarts = restarts_during(before, &id, info.restart_count.unwrap_or(0));
            if restarts == 0 {
                continue;
            }
            let died = self.deaths(&id, restarts).await;
            let last_logs = match died.last() {
                Some(d) => logs_before(docker, &s.container_name, d.at).await,
                None => last_logs(docker, &s.container_name).await,
            };
            out.push(Restart {
                service: s.name.clone(),
                restarts,
                exit_codes: died.iter().map(|d| d.code).collect(),
                last_logs,
            });
        }
        Ok(out)
    }

    /// The container's last `n` deaths; the events stream may lag the engine's count by a moment, so it
    /// is given up to a second to catch up.
    async fn deaths(&self, id: &str, n: i64) -> Vec<Died> {
        let deadline = Instant::now() + Duration::from_secs(1);
        loop {
            let died: Vec<Died> = self
                .dies
                .lock()
                .expect("not poisoned")
                .iter()
                .filter(|d| d.id == id)
                .cloned()
                .collect();
            if died.len() as i64 >= n || Instant::now() >= deadline {
                let skip = died.len().saturating_sub(n as usize);
                return died[skip..].to_vec();
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// One die event: the container, its exit code, when (ns since the epoch, the engine's clock).
#[derive(Debug, Clone)]
struct Died {
    id: String,
    code: i64,
    at: i64,
}

#[cfg(test)]
mod tests {
    #[test]
    fn log_timestamps_to_nanoseconds() {
        let t = |s| super::timestamp_ns(s);
        assert_eq!(t("1970-01-01T00:00:01.5Z"), Some(1_500_000_000));
        assert_eq!(
            t("2026-12-01T22:05:00.331740123Z"),
            Some(1_796_162_700_331_740_123)
        );
        assert_eq!(t("1970-01-01T00:00:02Z"), Some(2_000_000_000));
        assert_eq!(t("garbage"), None);
    }
}
