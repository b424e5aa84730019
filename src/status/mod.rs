//! `status`: observe a deployed stack (containers, health, resources, limits in effect, and each app
//! instance's own WebSocket counts) into a `Report`. Effects here; the verdict is pure (`report`).

pub use exectl_core::status as report;

pub(crate) mod swarm;

use crate::engine::desired::parse_env;
use crate::engine::{limits, observe};
use crate::sut::Target;
use anyhow::{Context, Result};
use bollard::Docker;
use report::{InstanceStatus, Report, ServiceStatus};
use std::time::Duration;

/// What status needs from a deployment's recorded spec.
pub struct Deployed {
    pub topology: String,
    pub lb_algorithm: Option<String>,
    pub admin_password: Option<String>,
    /// Every service the deploy rendered (its compose.yaml): status compares what it sees with these.
    pub services: Vec<String>,
    /// The stack's record, as deployed.
    pub record: exectl_core::record::StackRecord,
}

pub fn read_deployed(target: &Target, stack: &str) -> Result<Deployed> {
    let bundle = target.bundle_dir(stack);
    let record = crate::state::record::require(
        &bundle,
        stack,
        "deploy it first (exectl deploy ...), or name a deployed stack",
    )?;
    let env = std::fs::read_to_string(bundle.join(exectl_core::render::ENV)).unwrap_or_default();
    let compose_path = bundle.join(exectl_core::render::COMPOSE);
    let compose = std::fs::read_to_string(&compose_path)
        .with_context(|| format!("reading {}", compose_path.display()))?;
    let compose = exectl_core::compose::parse(&compose)
        .map_err(|e| anyhow::anyhow!("{}: {}", compose_path.display(), e.message))?;
    Ok(Deployed {
        services: compose.services.into_keys().collect(),
        topology: record.topology.name().to_string(),
        lb_algorithm: record.lb_algorithm().map(String::from),
        admin_password: parse_env(&env).get("ADMIN_PASSWORD").cloned(),
        record,
    })
}

/// Every probe of an instance is quick or a problem: a stalled instance must not stall the report.
const PROBE_TIMEOUTS: crate::app::Timeouts = crate::app::Timeouts::all(Duration::from_secs(5));

/// One observation of the whole stack; services and instances are probed concurrently.
pub async fn observe_stack(target: &Target, stack: &str, deployed: &Deployed) -> Result<Report> {
    if let Some(nodes) = &target.swarm {
        return swarm::observe_swarm(target, nodes, stack, deployed).await;
    }
    let observed = observe::observe(&target.docker, stack).await?;
    let client = crate::app::Client::new(2, PROBE_TIMEOUTS);
    let token = tokio::sync::OnceCell::new();
    let services = async {
        let inspected = futures_util::future::join_all(
            observed
                .containers
                .iter()
                .map(|c| service_status(&target.docker, &c.name, &c.service)),
        )
        .await
        .into_iter()
        .collect::<Result<Vec<_>>>()?;
        Ok::<_, anyhow::Error>(with_cgroup_reads(target, inspected).await)
    };
    let instances = futures_util::future::join_all(
        observed
            .containers
            .iter()
            .filter(|c| report::is_app(&c.service))
            .map(|c| instance_status(target, &client, &c.name, &c.service, deployed, &token)),
    );
    let (services, instances) = tokio::join!(services, instances);
    Ok(Report {
        stack: stack.to_string(),
        topology: deployed.topology.clone(),
        lb_algorithm: deployed.lb_algorithm.clone(),
        expected: deployed.services.clone(),
        services: services?,
        instances,
        total_connections: 0,
        warnings: vec![],
        problems: vec![],
        verdict: String::new(),
    })
}

/// CPU %, memory and nofile of every running container from its cgroup and /proc on the host, read
/// twice 200 ms apart (the engine's own stats endpoint serialises concurrent requests on a one-second
/// tick), each read one host command for all containers.
async fn with_cgroup_reads(
    target: &Target,
    inspected: Vec<(ServiceStatus, Option<i64>)>,
) -> Vec<ServiceStatus> {
    let pids: Vec<i64> = inspected.iter().filter_map(|(_, p)| *p).collect();
    let first = limits::read_pids(target, &pids).await.ok();
    let t0 = std::time::Instant::now();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let second = limits::read_pids(target, &pids).await.ok();
    let elapsed = t0.elapsed().as_nanos() as f64;
    let mut at = 0;
    inspected
        .into_iter()
        .map(|(mut s, pid)| {
            if pid.is_none() {
                return s;
            }
            let read = |all: &Option<Vec<String>>| {
                all.as_ref()
                    .and_then(|v| v.get(at))
                    .map(|t| limits::parse(&s.name, t))
            };
            let (a, b) = (read(&first), read(&second));
            at += 1;
            s.cpu_percent = match (
                a.as_ref().and_then(|a| a.cpu_usage_ns),
                b.as_ref().and_then(|b| b.cpu_usage_ns),
            ) {
                (Some(x), Some(y)) => Some(y.saturating_sub(x) as f64 / elapsed * 100.0),
                _ => None,
            };
            s.nofile = b.as_ref().and_then(|e| e.nofile_soft);
            s.mem_bytes = b.as_ref().and_then(|e| e.rss_bytes);
            s.mem_usage_bytes = b.as_ref().and_then(|e| e.usage_bytes);
            s.mem_limit_bytes = b.as_ref().and_then(|e| e.memory);
            s
        })
        .collect()
}

/// What the engine says of one container, and its PID 1 when running.
async fn service_status(
    docker: &Docker,
    container: &str,
    service: &str,
) -> Result<(ServiceStatus, Option<i64>)> {
    let info = docker
        .inspect_container(container, None)
        .await
        .with_context(|| format!("inspecting {container}"))?;
    let state = info.state.clone().unwrap_or_default();
    let running = state.running == Some(true);
    let pid = state.pid.filter(|p| running && *p > 0);
    let image = info
        .config
        .as_ref()
        .and_then(|c| c.image.clone())
        .unwrap_or_default();
    let digest = match docker.inspect_image(&image).await {
        Ok(i) => i
            .repo_digests
            .and_then(|d| d.first().cloned())
            .or(i.id)
            .unwrap_or_default(),
        Err(_) => info.image.clone().unwrap_or_default(),
    };
    let uptime_s = state
        .started_at
        .as_deref()
        .filter(|_| running)
        .and_then(exectl_core::units::parse_rfc3339)
        .map(|started| now_s().saturating_sub(started));
    let status = ServiceStatus {
        name: service.to_string(),
        container: container.to_string(),
        state: state
            .status
            .map(|s| s.to_string())
            .unwrap_or_else(|| "unknown".into()),
        health: state
            .health
            .and_then(|h| h.status)
            .map(|h| h.to_string())
            .unwrap_or_else(|| "none".into()),
        image,
        digest,
        uptime_s,
        restarts: info.restart_count.unwrap_or(0),
        cpu_percent: None,
        mem_bytes: None,
        mem_usage_bytes: None,
        mem_limit_bytes: None,
        nofile: None,
        node: None,
    };
    Ok((status, pid))
}

/// `/api/websocket/info` on the instance's own address (never through the LB); with the stack's admin token when the image
/// guards it (newer images answer 401/403 to anonymous callers).
pub async fn instance_status(
    target: &Target,
    client: &crate::app::Client,
    container: &str,
    service: &str,
    deployed: &Deployed,
    token: &tokio::sync::OnceCell<Option<String>>,
) -> InstanceStatus {
    match container_endpoint(target, container, exectl_core::render::APP_PORT).await {
        Ok(ep) => instance_info(client, &ep, service, deployed, token).await,
        Err(e) => InstanceStatus {
            error: Some(format!("{e:#}")),
            ..unanswered(service)
        },
    }
}

/// Where a container's `port` answers from here: its own address, directly here, through an SSH forward
/// on a remote target. Found once by a caller that asks every second (bench's sampler).
pub async fn container_endpoint(
    target: &Target,
    container: &str,
    port: u16,
) -> Result<crate::app::Endpoint> {
    let ip = container_ip(&target.docker, container).await?;
    let addr = target.reach(&ip, port).await?;
    Ok(crate::app::Endpoint::at(addr, None))
}

/// One instance's `/api/websocket/info` at `ep` (the admin's token asked for once, when the image
/// wants one).
pub async fn instance_info(
    client: &crate::app::Client,
    ep: &crate::app::Endpoint,
    service: &str,
    deployed: &Deployed,
    token: &tokio::sync::OnceCell<Option<String>>,
) -> InstanceStatus {
    let result: Result<serde_json::Value> = async {
        let answer = client.websocket_info(ep, None).answer().await?;
        let answer = if answer.status == 401 || answer.status == 403 {
            let t = token
                .get_or_init(|| admin_token(client, ep, deployed.admin_password.as_deref()))
                .await
                .clone()
                .context("the image requires an admin token and the admin login failed")?;
            client.websocket_info(ep, Some(&t)).answer().await?
        } else {
            answer
        };
        anyhow::ensure!(answer.status.is_success(), "HTTP {}", answer.status);
        Ok(answer.body)
    }
    .await;
    let mut out = unanswered(service);
    match result {
        Ok(v) => {
            out.total_connections = v["totalConnections"].as_u64();
            out.rooms_count = v["roomsCount"].as_u64();
            if out.total_connections.is_none() {
                out.error = Some(format!("unexpected answer {v}"));
            }
        }
        Err(e) => out.error = Some(format!("{e:#}")),
    }
    out
}

fn unanswered(service: &str) -> InstanceStatus {
    InstanceStatus {
        name: service.to_string(),
        total_connections: None,
        rooms_count: None,
        share: None,
        error: None,
        node: None,
    }
}

async fn admin_token(
    client: &crate::app::Client,
    ep: &crate::app::Endpoint,
    password: Option<&str>,
) -> Option<String> {
    let login = client
        .login(ep, exectl_core::render::ADMIN_EMAIL, password?)
        .await;
    login.ok().map(|l| l.token)
}

/// The container's address on its stack network: probes go there directly, never through the LB.
pub async fn container_ip(docker: &Docker, container: &str) -> Result<String> {
    let info = docker.inspect_container(container, None).await?;
    observe::address_of(&info).with_context(|| format!("{container} has no address on its network"))
}

fn now_s() -> u64 {
    crate::clock::unix_s()
}
