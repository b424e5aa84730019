//! Converge a stack on a swarm: the overlay, the configs and one service per compose service, each
//! pinned to its node, through the manager's API; readiness and limits read on the node that runs each
//! task (a worker's engine answers for its own containers only). The plan is the single-host plan
//! (`exectl_core::plan`) over services instead of containers, with the swarm hash (definition + node).

use super::apply::{stack_labels, Event, Progress};
use super::desired::{Desired, DesiredService, LABEL_STACK};
use super::wait::Held;
use crate::sut::swarm::{running_tasks, Swarm};
use crate::sut::Target;
use anyhow::{bail, Context, Result};
use base64::Engine as _;
use bollard::models::{
    ConfigSpec, EndpointPortConfig, EndpointPortConfigProtocolEnum,
    EndpointPortConfigPublishModeEnum, EndpointSpec, EndpointSpecModeEnum, Limit, Mount, MountType,
    MountVolumeOptions, NetworkAttachmentConfig, NetworkCreateRequest, ServiceSpec,
    ServiceSpecMode, ServiceSpecModeReplicated, TaskSpec, TaskSpecContainerSpec,
    TaskSpecContainerSpecConfigs, TaskSpecContainerSpecFile1, TaskSpecPlacement, TaskSpecResources,
    TaskSpecRestartPolicy, TaskSpecRestartPolicyConditionEnum, TaskState,
};
use bollard::query_parameters::{
    ListConfigsOptionsBuilder, ListContainersOptionsBuilder, ListNetworksOptionsBuilder,
    ListServicesOptionsBuilder, ListTasksOptionsBuilder,
};
use bollard::Docker;
use exectl_core::plan::{Action, Observed, ObservedContainer, Plan};
use exectl_core::readiness::{Ready, ReadyBy};
use exectl_core::swarm::SwarmService;
use std::collections::HashMap;
use std::time::Duration;

fn stack_filter(stack: &str) -> HashMap<String, Vec<String>> {
    super::observe::label_filter(stack)
}

/// The services carrying the stack's label.
pub async fn stack_services(
    manager: &Docker,
    stack: &str,
) -> Result<Vec<bollard::models::Service>> {
    Ok(manager
        .list_services(Some(
            ListServicesOptionsBuilder::default()
                .filters(&stack_filter(stack))
                .build(),
        ))
        .await?)
}

/// The networks carrying the stack's label.
async fn stack_networks(manager: &Docker, stack: &str) -> Result<Vec<bollard::models::Network>> {
    Ok(manager
        .list_networks(Some(
            ListNetworksOptionsBuilder::default()
                .filters(&stack_filter(stack))
                .build(),
        ))
        .await?)
}

/// The stack's services on the swarm, as the plan reads containers; its overlay; its volumes are the
/// desired ones (each is made on its node by the task that mounts it, so there is nothing to plan).
pub async fn observe(manager: &Docker, stack: &str, desired: &Desired) -> Result<Observed> {
    let services = stack_services(manager, stack).await?;
    let tasks = running_tasks(manager, stack).await?;
    let networks = stack_networks(manager, stack).await?;
    let mut containers: Vec<ObservedContainer> = services
        .into_iter()
        .map(|s| {
            let id = s.id.clone().unwrap_or_default();
            let spec = s.spec.unwrap_or_default();
            let state = if tasks.iter().any(|t| t.service_id == id) {
                "running"
            } else {
                "starting"
            };
            super::observe::labelled(
                spec.name.unwrap_or_default(),
                &spec.labels.unwrap_or_default(),
                state.into(),
            )
        })
        .collect();
    containers.sort_by(|a, b| a.service.cmp(&b.service));
    Ok(Observed {
        containers,
        networks: networks.into_iter().filter_map(|n| n.name).collect(),
        volumes: desired.volumes.clone(),
    })
}

/// The engine's definition of one swarm service. `network` is the stack's overlay; `configs` the ids of
/// the stack's configs by name (a task's config reference needs both).
pub fn service_spec(
    s: &SwarmService,
    network: &str,
    configs: &HashMap<String, String>,
) -> Result<ServiceSpec> {
    let config_id = |name: &str| {
        configs
            .get(name)
            .cloned()
            .with_context(|| format!("config {name} of {} was not created", s.service))
    };
    let labels: HashMap<String, String> = s.labels.clone().into_iter().collect();
    let healthcheck = s
        .healthcheck
        .as_ref()
        .map(super::apply::health_config)
        .transpose()?;
    let stack_label = stack_labels(&s.labels[LABEL_STACK]);
    let mut mounts: Vec<Mount> = s
        .volumes
        .iter()
        .map(|(source, target, ro)| Mount {
            typ: Some(MountType::VOLUME),
            source: Some(source.clone()),
            target: Some(target.clone()),
            read_only: Some(*ro),
            volume_options: Some(MountVolumeOptions {
                labels: Some(stack_label.clone()),
                ..Default::default()
            }),
            ..Default::default()
        })
        .collect();
    mounts.sort_by(|a, b| a.target.cmp(&b.target));
    let limits = match &s.limits {
        None => None,
        Some(l) => Some(Limit {
            nano_cpus: Some(
                (l.cpus
                    .parse::<f64>()
                    .with_context(|| format!("cpus of {}", s.service))?
                    * 1e9) as i64,
            ),
            memory_bytes: Some(super::apply::memory_bytes(&l.memory)?),
            ..Default::default()
        }),
    };
    Ok(ServiceSpec {
        name: Some(s.name.clone()),
        labels: Some(labels.clone()),
        task_template: Some(TaskSpec {
            container_spec: Some(TaskSpecContainerSpec {
                image: Some(s.image.clone()),
                labels: Some(labels),
                command: None,
                args: s.command.clone(),
                hostname: Some(s.name.clone()),
                env: Some(
                    s.environment
                        .iter()
                        .map(|(k, v)| format!("{k}={v}"))
                        .collect(),
                ),
                mounts: Some(mounts),
                health_check: healthcheck,
                // A stop in well under a second, not the 10 s grace of a PID 1 that ignores TERM.
                init: Some(true),
                configs: Some(
                    s.configs
                        .iter()
                        .map(|c| {
                            Ok(TaskSpecContainerSpecConfigs {
                                file: Some(TaskSpecContainerSpecFile1 {
                                    name: Some(c.target.clone()),
                                    uid: Some("0".into()),
                                    gid: Some("0".into()),
                                    mode: Some(0o444),
                                }),
                                config_id: Some(config_id(&c.name)?),
                                config_name: Some(c.name.clone()),
                                ..Default::default()
                            })
                        })
                        .collect::<Result<_>>()?,
                ),
                ulimits: Some(super::apply::ulimits(&s.ulimits)),
                ..Default::default()
            }),
            resources: Some(TaskSpecResources {
                limits,
                ..Default::default()
            }),
            restart_policy: Some(TaskSpecRestartPolicy {
                condition: Some(TaskSpecRestartPolicyConditionEnum::ANY),
                delay: Some(1_000_000_000),
                ..Default::default()
            }),
            placement: Some(TaskSpecPlacement {
                constraints: Some(vec![exectl_core::swarm::service::constraint(&s.node)]),
                ..Default::default()
            }),
            networks: Some(vec![NetworkAttachmentConfig {
                target: Some(network.to_string()),
                aliases: Some(vec![s.service.clone()]),
                ..Default::default()
            }]),
            ..Default::default()
        }),
        mode: Some(ServiceSpecMode {
            replicated: Some(ServiceSpecModeReplicated { replicas: Some(1) }),
            ..Default::default()
        }),
        endpoint_spec: Some(EndpointSpec {
            mode: Some(EndpointSpecModeEnum::DNSRR),
            ports: Some(
                s.ports
                    .iter()
                    .map(|(published, target)| EndpointPortConfig {
                        protocol: Some(EndpointPortConfigProtocolEnum::TCP),
                        published_port: Some(*published as i64),
                        target_port: Some(*target as i64),
                        publish_mode: Some(EndpointPortConfigPublishModeEnum::HOST),
                        ..Default::default()
                    })
                    .collect(),
            ),
        }),
        ..Default::default()
    })
}

/// What a swarm apply did.
pub struct Applied {
    pub ready: Vec<Ready>,
}

/// Apply `plan` (made over the swarm services' hashes) with `services` (start order).
pub async fn apply(
    target: &Target,
    desired: &Desired,
    services: &[SwarmService],
    plan: &Plan,
    timeout: Duration,
    progress: Progress<'_>,
    held: Held<'_>,
) -> Result<Applied> {
    let manager = &target.docker;
    let swarm = target
        .swarm
        .as_deref()
        .context("a swarm apply on a target that is not a swarm")?;
    held()?;
    if let Some(net) = &plan.create_network {
        manager
            .create_network(NetworkCreateRequest {
                name: net.clone(),
                driver: Some("overlay".into()),
                attachable: Some(true),
                labels: Some(stack_labels(&desired.stack)),
                ..Default::default()
            })
            .await
            .with_context(|| format!("creating overlay network {net}"))?;
        progress(Event {
            service: net.clone(),
            what: "overlay network created".into(),
        });
    }
    let configs = ensure_configs(manager, &desired.stack, services).await?;
    for a in &plan.actions {
        if let Action::Remove { service, .. } = a {
            held()?;
            remove_service(
                manager,
                swarm,
                &exectl_core::naming::container(&desired.stack, service),
            )
            .await?;
            progress(Event {
                service: service.clone(),
                what: "removed".into(),
            });
        }
    }
    let by_name = |name: &str| {
        services
            .iter()
            .find(|s| s.service == name)
            .expect("the plan's waves name desired services")
    };
    let action = |name: &str| plan.action(name);
    let deadline = tokio::time::Instant::now() + timeout;
    let mut ready: Vec<Ready> = Vec::new();
    let started = tokio::time::Instant::now();
    for wave in &plan.waves {
        for (dep, healthy) in &wave.wait_for {
            if ready.iter().any(|r| &r.service == dep) {
                continue;
            }
            let r = wait(manager, swarm, by_name(dep), *healthy, deadline, started).await?;
            progress(Event {
                service: dep.clone(),
                what: r.describe(),
            });
            ready.push(r);
        }
        for name in &wave.services {
            let s = by_name(name);
            let what = match action(name) {
                Action::Create { .. } => {
                    held()?;
                    manager
                        .create_service(service_spec(s, &desired.network, &configs)?, None)
                        .await
                        .with_context(|| format!("creating service {}", s.name))?;
                    format!("created on {}", s.node)
                }
                Action::Recreate { reason, .. } => {
                    held()?;
                    remove_service(manager, swarm, &s.name).await?;
                    manager
                        .create_service(service_spec(s, &desired.network, &configs)?, None)
                        .await
                        .with_context(|| format!("creating service {}", s.name))?;
                    format!("recreated on {} ({reason})", s.node)
                }
                Action::Keep { .. } | Action::Remove { .. } => continue,
            };
            progress(Event {
                service: name.clone(),
                what,
            });
        }
    }
    for s in services {
        if ready.iter().any(|r| r.service == s.service) {
            continue;
        }
        let r = wait(manager, swarm, s, true, deadline, started).await?;
        progress(Event {
            service: s.service.clone(),
            what: r.describe(),
        });
        ready.push(r);
    }
    remove_unused_configs(manager, &desired.stack, services).await?;
    Ok(Applied { ready })
}

/// Each config the services mount, created when missing (a config's name carries its content's hash):
/// the stack's configs' ids by name.
async fn ensure_configs(
    manager: &Docker,
    stack: &str,
    services: &[SwarmService],
) -> Result<HashMap<String, String>> {
    let mut ids: HashMap<String, String> = stack_configs(manager, stack)
        .await?
        .into_iter()
        .map(|(id, name)| (name, id))
        .collect();
    for c in services.iter().flat_map(|s| &s.configs) {
        if ids.contains_key(&c.name) {
            continue;
        }
        let created = manager
            .create_config(ConfigSpec {
                name: Some(c.name.clone()),
                labels: Some(stack_labels(stack)),
                data: Some(base64::engine::general_purpose::STANDARD.encode(&c.data)),
                ..Default::default()
            })
            .await
            .with_context(|| format!("creating config {}", c.name))?;
        ids.insert(c.name.clone(), created.id);
    }
    Ok(ids)
}

/// The stack's configs: (id, name).
pub async fn stack_configs(manager: &Docker, stack: &str) -> Result<Vec<(String, String)>> {
    let configs = manager
        .list_configs(Some(
            ListConfigsOptionsBuilder::default()
                .filters(&stack_filter(stack))
                .build(),
        ))
        .await?;
    Ok(configs
        .into_iter()
        .filter_map(|c| Some((c.id?, c.spec?.name?)))
        .collect())
}

/// Configs of the stack no desired service mounts any more (an older nginx.conf).
async fn remove_unused_configs(
    manager: &Docker,
    stack: &str,
    services: &[SwarmService],
) -> Result<()> {
    for (id, name) in stack_configs(manager, stack).await? {
        if !services
            .iter()
            .flat_map(|s| &s.configs)
            .any(|c| c.name == name)
        {
            manager
                .delete_config(&id)
                .await
                .with_context(|| format!("removing config {name}"))?;
        }
    }
    Ok(())
}

/// Remove a service and wait until its task's container is gone from every node that answers (its
/// host-mode port is free again, its volume unused).
pub async fn remove_service(manager: &Docker, swarm: &Swarm, name: &str) -> Result<()> {
    remove_services(manager, swarm, &[name.to_string()]).await
}

/// Remove services `names` (those already gone are no error), then wait until none of their containers
/// is left on any node: all removed first, so that their containers stop side by side (a stack's one
/// by one took a minute in teardown).
pub async fn remove_services(manager: &Docker, swarm: &Swarm, names: &[String]) -> Result<()> {
    for name in names {
        match manager.delete_service(name).await {
            Ok(()) => {}
            Err(bollard::errors::Error::DockerResponseServerError {
                status_code: 404, ..
            }) => {}
            Err(e) => return Err(e).with_context(|| format!("removing service {name}")),
        }
    }
    const LABEL: &str = "com.docker.swarm.service.name";
    let filters = HashMap::from([("label".to_string(), vec![LABEL.to_string()])]);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    for n in &swarm.nodes {
        let Ok(node) = &n.target else { continue };
        loop {
            let left: Vec<String> = node
                .docker
                .list_containers(Some(
                    ListContainersOptionsBuilder::default()
                        .all(true)
                        .filters(&filters)
                        .build(),
                ))
                .await?
                .into_iter()
                .filter_map(|c| c.labels?.get(LABEL).cloned())
                .filter(|s| names.contains(s))
                .collect();
            let Some(name) = left.first() else { break };
            if tokio::time::Instant::now() > deadline {
                bail!(
                    "service {name} was removed, but its container is still on {} after 60 s",
                    n.node.hostname
                );
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
    Ok(())
}

/// Wait until `s` has a running task on its node, healthy when it has a healthcheck and `healthy` is
/// asked. Task errors (rejected, failed) are kept for the message: the swarm retries them itself.
async fn wait(
    manager: &Docker,
    swarm: &Swarm,
    s: &SwarmService,
    healthy: bool,
    deadline: tokio::time::Instant,
    started: tokio::time::Instant,
) -> Result<Ready> {
    let node = swarm.target(&s.node)?;
    let node_id = swarm
        .nodes
        .iter()
        .find(|n| n.node.hostname == s.node)
        .map(|n| n.node.id.clone())
        .unwrap_or_default();
    let filters = HashMap::from([("service".to_string(), vec![s.name.clone()])]);
    let mut last = String::from("no task yet");
    loop {
        let tasks = manager
            .list_tasks(Some(
                ListTasksOptionsBuilder::default().filters(&filters).build(),
            ))
            .await?;
        for t in &tasks {
            let Some(status) = &t.status else { continue };
            if let Some(err) = status.err.as_ref().filter(|e| !e.is_empty()) {
                last = format!("task {:?}: {err}", status.state);
            }
            if status.state != Some(TaskState::RUNNING) || t.node_id.as_deref() != Some(&node_id) {
                continue;
            }
            let Some(id) = status
                .container_status
                .as_ref()
                .and_then(|c| c.container_id.clone())
            else {
                continue;
            };
            let info = node.docker.inspect_container(&id, None).await?;
            let health = info
                .state
                .as_ref()
                .and_then(|st| st.health.as_ref())
                .and_then(|h| h.status)
                .map(|h| h.to_string())
                .unwrap_or_else(|| "none".into());
            let by = match (s.healthcheck.is_some() && healthy, health.as_str()) {
                (false, _) => Some(ReadyBy::Running),
                (true, "healthy") => Some(ReadyBy::Healthy),
                _ => {
                    last = format!("running on {}, docker health {health}", s.node);
                    None
                }
            };
            if let Some(by) = by {
                return Ok(Ready {
                    service: s.service.clone(),
                    by,
                    seconds: started.elapsed().as_secs_f64(),
                    docker_health: health,
                    probe: None,
                });
            }
        }
        if tokio::time::Instant::now() > deadline {
            bail!("service {} is not ready on {}: {last}", s.service, s.node);
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// The limits in effect, read on each task's node: every service that asks for limits.
pub async fn read_back(
    target: &Target,
    swarm: &Swarm,
    desired: &Desired,
    services: &[SwarmService],
    workers: Option<exectl_core::spec::WorkerProcesses>,
) -> Result<Vec<crate::shell::scripts::limits::Effective>> {
    let tasks = running_tasks(&target.docker, &desired.stack).await?;
    let mut out = Vec::new();
    for n in &swarm.nodes {
        let here: Vec<DesiredService> = services
            .iter()
            .filter(|s| s.node == n.node.hostname)
            .filter_map(|s| {
                let d = desired.services.iter().find(|d| d.name == s.service)?;
                let task = tasks
                    .iter()
                    .find(|t| t.service == s.service && t.node_id == n.node.id)?;
                let mut d = d.clone();
                d.container_name = task.container_id.clone();
                Some(d)
            })
            .collect();
        if here.is_empty() {
            continue;
        }
        let node = swarm.target(&n.node.hostname)?;
        out.extend(super::limits::read_back(node, &here, workers).await?);
    }
    out.sort_by(|a, b| a.service.cmp(&b.service));
    Ok(out)
}

/// Remove what carries the stack's label on the swarm: its services (each waited out of its node), its
/// configs and overlay; with `purge`, its volumes on every node that answers. A node that does not
/// answer is an error naming it (its volumes could not be checked), after the rest is removed.
pub async fn teardown(
    manager: &Docker,
    swarm: &Swarm,
    stack: &str,
    purge: bool,
) -> Result<super::teardown::Removed> {
    let mut removed = super::teardown::Removed::default();
    let filters = stack_filter(stack);
    let services: Vec<String> = stack_services(manager, stack)
        .await?
        .into_iter()
        .filter_map(|s| s.spec?.name)
        .collect();
    remove_services(manager, swarm, &services).await?;
    removed.containers.extend(services);
    for (id, name) in stack_configs(manager, stack).await? {
        manager
            .delete_config(&id)
            .await
            .with_context(|| format!("removing config {name}"))?;
    }
    let networks = stack_networks(manager, stack).await?;
    for n in networks.into_iter().filter_map(|n| n.name) {
        // A task's endpoint lingers a moment after its container: retry for a few seconds.
        let mut tries = 0;
        loop {
            match manager.remove_network(&n).await {
                Ok(()) => break,
                Err(bollard::errors::Error::DockerResponseServerError {
                    status_code: 404, ..
                }) => break,
                Err(_) if tries < 40 => {
                    tries += 1;
                    tokio::time::sleep(Duration::from_millis(250)).await;
                }
                Err(e) => return Err(e).with_context(|| format!("removing network {n}")),
            }
        }
        removed.networks.push(n);
    }
    let mut unreachable = Vec::new();
    for n in &swarm.nodes {
        let Ok(node) = &n.target else {
            unreachable.push(n.node.hostname.clone());
            continue;
        };
        let volumes = node
            .docker
            .list_volumes(Some(
                bollard::query_parameters::ListVolumesOptionsBuilder::default()
                    .filters(&filters)
                    .build(),
            ))
            .await?
            .volumes
            .unwrap_or_default();
        for v in volumes {
            let on = format!("{} on {}", v.name, n.node.hostname);
            if !purge {
                removed.kept_volumes.push(on);
                continue;
            }
            node.docker
                .remove_volume(
                    &v.name,
                    None::<bollard::query_parameters::RemoveVolumeOptions>,
                )
                .await
                .with_context(|| format!("removing volume {on}"))?;
            removed.volumes.push(on);
        }
    }
    if !unreachable.is_empty() {
        bail!(exectl_core::error::Unreachable {
            what: format!(
                "stack {stack}: its services, configs and overlay are removed, but node(s) {} did not answer, so their volumes were not checked",
                unreachable.join(", ")
            ),
            fix: "run teardown again once they are back".into(),
        });
    }
    Ok(removed)
}
