//! Carry out a plan, deciding nothing: network and volumes, then removals, then the plan's waves (each
//! waits for what it depends on, then converges its services), then the waits at the end (which include
//! every front door only waited for as started: the stack is ready when its front door routes).

use super::desired::{duration_ns, Desired, DesiredService, LABEL_HASH, LABEL_PARTS, LABEL_STACK};
use super::probe::Prober;
use super::wait::{wait_ready, Held, Readiness, RestartWatch, Wanted};
use crate::sut::Target;
use anyhow::{bail, Context, Result};
use bollard::models::{
    ContainerCreateBody, EndpointSettings, HealthConfig, HostConfig, NetworkCreateRequest,
    NetworkingConfig, PortBinding, ResourcesUlimits, RestartPolicy, RestartPolicyNameEnum,
    VolumeCreateRequest,
};
use bollard::query_parameters::{CreateContainerOptionsBuilder, RemoveContainerOptionsBuilder};
use bollard::Docker;
use exectl_core::plan::{Action, Plan};
use exectl_core::readiness::{Ready, ReadyBy, Restart, STABLE};
use std::collections::HashMap;
use std::time::Duration;

/// What happened to one service, for progress and the summary.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Event {
    pub service: String,
    pub what: String,
}

pub type Progress<'a> = &'a (dyn Fn(Event) + Sync);

/// The one label every object of a stack carries: observe and teardown find them by it.
pub fn stack_labels(stack: &str) -> HashMap<String, String> {
    HashMap::from([(LABEL_STACK.to_string(), stack.to_string())])
}

/// A compose healthcheck as the engine takes it (a container's, or a swarm task's).
pub fn health_config(h: &exectl_core::compose::Healthcheck) -> Result<HealthConfig> {
    Ok(HealthConfig {
        test: Some(h.test.clone()),
        interval: Some(duration_ns(&h.interval)?),
        timeout: Some(duration_ns(&h.timeout)?),
        retries: Some(h.retries as i64),
        start_period: h.start_period.as_deref().map(duration_ns).transpose()?,
        ..Default::default()
    })
}

/// Compose ulimits as the engine takes them (a container's, or a swarm task's).
pub fn ulimits(
    limits: &std::collections::BTreeMap<String, exectl_core::compose::Ulimit>,
) -> Vec<ResourcesUlimits> {
    limits
        .iter()
        .map(|(name, u)| ResourcesUlimits {
            name: Some(name.clone()),
            soft: Some(u.soft as i64),
            hard: Some(u.hard as i64),
        })
        .collect()
}

/// Build the engine's container definition from a resolved service.
pub fn container_body(s: &DesiredService, network: &str) -> Result<ContainerCreateBody> {
    let svc = &s.service;
    let mut labels: HashMap<String, String> = svc.labels.clone().into_iter().collect();
    labels.insert(LABEL_HASH.into(), s.hash.clone());
    labels.insert(LABEL_PARTS.into(), serde_json::to_string(&s.parts)?);
    let healthcheck = svc.healthcheck.as_ref().map(health_config).transpose()?;
    let mut port_bindings = HashMap::new();
    let mut exposed = Vec::new();
    for p in &svc.ports {
        let (host, container) = p
            .split_once(':')
            .with_context(|| format!("port {p:?} of {} is not HOST:CONTAINER", s.name))?;
        let key = format!("{container}/tcp");
        exposed.push(key.clone());
        port_bindings.insert(
            key,
            Some(vec![PortBinding {
                host_ip: None,
                host_port: Some(host.to_string()),
            }]),
        );
    }
    let limits = svc.deploy.as_ref().map(|d| &d.resources.limits);
    let nano_cpus = limits
        .map(|l| l.cpus.parse::<f64>().map(|c| (c * 1e9) as i64))
        .transpose()
        .with_context(|| format!("cpus of {}", s.name))?;
    let memory = limits
        .map(|l| memory_bytes(&l.memory))
        .transpose()
        .with_context(|| format!("memory of {}", s.name))?;
    Ok(ContainerCreateBody {
        image: Some(svc.image.clone()),
        hostname: Some(s.name.clone()),
        env: Some(
            svc.environment
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect(),
        ),
        cmd: svc.command.clone(),
        healthcheck,
        labels: Some(labels),
        exposed_ports: (!exposed.is_empty()).then_some(exposed),
        host_config: Some(HostConfig {
            binds: Some(svc.volumes.clone()),
            port_bindings: (!port_bindings.is_empty()).then_some(port_bindings),
            ulimits: Some(ulimits(&svc.ulimits)),
            nano_cpus,
            memory,
            restart_policy: Some(RestartPolicy {
                name: Some(match svc.restart.as_deref() {
                    Some("always") => RestartPolicyNameEnum::ALWAYS,
                    Some("no") | None => RestartPolicyNameEnum::NO,
                    Some("on-failure") => RestartPolicyNameEnum::ON_FAILURE,
                    _ => RestartPolicyNameEnum::UNLESS_STOPPED,
                }),
                maximum_retry_count: None,
            }),
            network_mode: Some(network.to_string()),
            ..Default::default()
        }),
        networking_config: Some(NetworkingConfig {
            endpoints_config: Some(HashMap::from([(
                network.to_string(),
                EndpointSettings {
                    aliases: Some(vec![s.name.clone()]),
                    ..Default::default()
                },
            )])),
        }),
        ..Default::default()
    })
}

/// "2g", "512m", "1.5g" → bytes.
pub fn memory_bytes(text: &str) -> Result<i64> {
    exectl_core::spec::memory_size(text)
        .map(|b| b as i64)
        .ok_or_else(|| anyhow::anyhow!("cannot read memory size {text:?}"))
}

async fn remove_container(docker: &Docker, name: &str) -> Result<()> {
    match docker
        .remove_container(
            name,
            Some(RemoveContainerOptionsBuilder::default().force(true).build()),
        )
        .await
    {
        Ok(()) => Ok(()),
        Err(bollard::errors::Error::DockerResponseServerError {
            status_code: 404, ..
        }) => Ok(()),
        Err(e) => Err(e).with_context(|| format!("removing container {name}")),
    }
}

async fn create_and_start(docker: &Docker, s: &DesiredService, network: &str) -> Result<()> {
    let body = container_body(s, network)?;
    docker
        .create_container(
            Some(
                CreateContainerOptionsBuilder::default()
                    .name(&s.container_name)
                    .build(),
            ),
            body,
        )
        .await
        .with_context(|| format!("creating container {}", s.container_name))?;
    start(docker, s).await
}

async fn start(docker: &Docker, s: &DesiredService) -> Result<()> {
    docker
        .start_container(&s.container_name, None)
        .await
        .with_context(|| format!("starting container {}", s.container_name))
}

/// What a converged deploy saw.
pub struct Applied {
    /// How each waited-for service became ready.
    pub ready: Vec<Ready>,
    /// Services the engine restarted during this deploy: the stack is not ready, whatever they answer.
    pub restarts: Vec<Restart>,
}

/// Apply `plan`. Each service is started only once the services it depends on are ready, and at the end
/// every service is ready (its own probe answered, healthy, running, or a one-shot that exited 0), or the
/// error names the one that is not. A container that restarts during the deploy is waited for like any
/// other (a crash once at boot comes back) and then reported among `restarts`; one that crash-loops fails
/// its wait. Safe to interrupt: the next run observes what exists and converges.
pub async fn apply(
    target: &Target,
    desired: &Desired,
    plan: &Plan,
    timeout: Duration,
    progress: Progress<'_>,
    held: Held<'_>,
) -> Result<Applied> {
    let docker = &target.docker;
    let mut readied: Vec<Ready> = Vec::new();
    held()?;
    let names: Vec<&str> = desired
        .services
        .iter()
        .map(|s| s.container_name.as_str())
        .collect();
    let watch = RestartWatch::start(target, &desired.stack, &names).await?;
    if let Some(net) = &plan.create_network {
        docker
            .create_network(NetworkCreateRequest {
                name: net.clone(),
                driver: Some("bridge".into()),
                labels: Some(stack_labels(&desired.stack)),
                ..Default::default()
            })
            .await
            .with_context(|| format!("creating network {net}"))?;
        progress(Event {
            service: net.clone(),
            what: "network created".into(),
        });
    }
    for v in &plan.create_volumes {
        docker
            .create_volume(VolumeCreateRequest {
                name: Some(v.clone()),
                labels: Some(stack_labels(&desired.stack)),
                ..Default::default()
            })
            .await
            .with_context(|| format!("creating volume {v}"))?;
        progress(Event {
            service: v.clone(),
            what: "volume created".into(),
        });
    }
    for a in &plan.actions {
        if let Action::Remove { service, .. } = a {
            remove_container(
                docker,
                &exectl_core::naming::container(&desired.stack, service),
            )
            .await?;
            progress(Event {
                service: service.clone(),
                what: "removed".into(),
            });
        }
    }
    let waiter = Waiter {
        target,
        prober: Prober::default(),
        deadline: tokio::time::Instant::now() + timeout,
        progress,
        held,
        watch,
        changed: plan
            .actions
            .iter()
            .filter(|a| a.changes())
            .map(|a| a.service().to_string())
            .collect(),
        last_ready: Default::default(),
    };
    let service = |name: &str| {
        desired
            .services
            .iter()
            .find(|s| s.name == name)
            .expect("the plan's waves name desired services")
    };
    let action = |name: &str| plan.action(name);
    let probed: Vec<&str> = desired
        .services
        .iter()
        .filter(|s| s.probe.is_some())
        .map(|s| s.name.as_str())
        .collect();
    // The plan's waves, in order: wait (in parallel) for what a wave depends on, then converge its
    // services in parallel. A wave that changes nothing has nothing to hold back: its waits join those
    // of the next wave that changes something, or the waits at the end (a no-op waits once, for every
    // service at the same time).
    let mut deferred: Vec<(String, bool)> = Vec::new();
    for wave in &plan.waves {
        if !wave.services.iter().any(|name| action(name).changes()) {
            deferred.extend(wave.wait_for.iter().cloned());
            continue;
        }
        let waits = deferred
            .drain(..)
            .chain(wave.wait_for.iter().cloned())
            .collect::<Vec<_>>();
        let waits = waits
            .iter()
            .map(|(d, healthy)| waiter.wait(service(d), *healthy));
        for r in futures_util::future::join_all(waits).await {
            readied.push(r?);
        }
        let converge = wave.services.iter().map(|name| {
            converge_one(
                docker,
                service(name),
                action(name),
                &desired.network,
                progress,
                held,
            )
        });
        for r in futures_util::future::join_all(converge).await {
            r?;
        }
    }
    // The waits at the end, with the deferred ones. A deferred wait for a front door only as started
    // (which `final_waits` would ask again, ready) waits for it ready at once.
    let rest = exectl_core::readiness::final_waits(&plan.wait_at_end, &probed, &readied);
    readied.retain(|r| !rest.contains(&r.service));
    let last: Vec<(String, bool)> = deferred
        .into_iter()
        .filter(|(d, _)| !rest.contains(d))
        .map(|(d, healthy)| {
            let ready = healthy || probed.contains(&d.as_str());
            (d, ready)
        })
        .chain(rest.iter().map(|name| (name.clone(), true)))
        .collect();
    let last = last
        .iter()
        .map(|(d, ready)| waiter.wait(service(d), *ready));
    for r in futures_util::future::join_all(last).await {
        readied.push(r?);
    }
    let settled = *waiter.last_ready.lock().expect("not poisoned");
    if let Some(at) = settled {
        tokio::time::sleep_until(at + STABLE).await;
    }
    let restarts = waiter.watch.restarted(docker, &desired.services).await?;
    for r in &restarts {
        progress(Event {
            service: r.service.clone(),
            what: r.describe(),
        });
    }
    Ok(Applied {
        ready: readied,
        restarts,
    })
}

async fn converge_one(
    docker: &Docker,
    s: &DesiredService,
    action: &Action,
    network: &str,
    progress: Progress<'_>,
    held: Held<'_>,
) -> Result<()> {
    if action.changes() {
        held()?;
    }
    let what = match action {
        Action::Create { .. } => {
            create_and_start(docker, s, network).await?;
            "created".to_string()
        }
        Action::Recreate { reason, .. } => {
            remove_container(docker, &s.container_name).await?;
            create_and_start(docker, s, network).await?;
            format!("recreated ({reason})")
        }
        Action::Keep { start: true, .. } => {
            start(docker, s).await?;
            "started".to_string()
        }
        Action::Keep { .. } | Action::Remove { .. } => return Ok(()),
    };
    progress(Event {
        service: s.name.clone(),
        what,
    });
    Ok(())
}

/// What every wait of one deploy shares.
struct Waiter<'a> {
    target: &'a Target,
    prober: Prober,
    deadline: tokio::time::Instant,
    progress: Progress<'a>,
    held: Held<'a>,
    watch: RestartWatch,
    /// Services whose container this deploy creates or starts.
    changed: Vec<String>,
    /// When the last of them answered: deploy reads restarts `STABLE` after it.
    last_ready: std::sync::Mutex<Option<tokio::time::Instant>>,
}

impl Waiter<'_> {
    async fn wait(&self, s: &DesiredService, ready: bool) -> Result<Ready> {
        let started = tokio::time::Instant::now();
        let wanted = Wanted {
            ready,
            probe: s.probe.as_ref(),
            deadline: self.deadline,
            before: self.watch.before(&s.container_name),
        };
        match wait_ready(
            self.target,
            &self.prober,
            &s.container_name,
            &wanted,
            self.held,
        )
        .await?
        {
            Readiness::Ready(by, docker_health) => {
                let r = Ready {
                    service: s.name.clone(),
                    by,
                    seconds: started.elapsed().as_secs_f64(),
                    docker_health,
                    probe: (by == ReadyBy::Probe)
                        .then(|| s.probe.as_ref().map(|p| p.describe()))
                        .flatten(),
                };
                if self.changed.contains(&s.name) {
                    let mut last = self.last_ready.lock().expect("not poisoned");
                    *last = Some(tokio::time::Instant::now());
                }
                (self.progress)(Event {
                    service: s.name.clone(),
                    what: r.describe(),
                });
                Ok(r)
            }
            Readiness::Failed(report) => bail!("service {} is not ready: {report}", s.name),
        }
    }
}
