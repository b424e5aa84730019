//! Desired vs observed → actions, with reasons. Pure: the engine reads the observed state, this decides.

use crate::desired::Desired;
use serde::Serialize;
use std::collections::BTreeMap;

/// One container of the stack as the engine reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ObservedContainer {
    pub name: String,
    pub service: String,
    pub hash: String,
    /// Part name → short hash, from the container's label (empty if absent).
    pub parts: BTreeMap<String, String>,
    /// Docker's state: created, running, exited, ...
    pub state: String,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Observed {
    pub containers: Vec<ObservedContainer>,
    pub networks: Vec<String>,
    pub volumes: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "action", rename_all = "lowercase")]
pub enum Action {
    Create {
        service: String,
    },
    Recreate {
        service: String,
        reason: String,
    },
    /// Same config; started if it is not running.
    Keep {
        service: String,
        start: bool,
    },
    Remove {
        service: String,
        reason: String,
    },
}

impl Action {
    pub fn service(&self) -> &str {
        match self {
            Action::Create { service }
            | Action::Recreate { service, .. }
            | Action::Keep { service, .. }
            | Action::Remove { service, .. } => service,
        }
    }

    /// Whether the action changes the engine.
    pub fn changes(&self) -> bool {
        !matches!(self, Action::Keep { start: false, .. })
    }

    pub fn describe(&self) -> String {
        match self {
            Action::Create { service } => format!("create   {service}"),
            Action::Recreate { service, reason } => format!("recreate {service} ({reason})"),
            Action::Keep {
                service,
                start: false,
            } => format!("keep     {service}"),
            Action::Keep {
                service,
                start: true,
            } => format!("start    {service} (config unchanged, not running)"),
            Action::Remove { service, reason } => format!("remove   {service} ({reason})"),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Plan {
    pub create_network: Option<String>,
    pub create_volumes: Vec<String>,
    /// Removals first, then one action per desired service in start order.
    pub actions: Vec<Action>,
    /// The order of start, as compose does it: each wave waits for what its services depend on, then
    /// converges them in parallel.
    pub waves: Vec<Wave>,
    /// Services no wave waited for (nothing depends on them): waited for, healthy, at the end.
    pub wait_at_end: Vec<String>,
}

/// One step of the start order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Wave {
    /// Services to wait for first, with `true` when they must be healthy (not only running).
    pub wait_for: Vec<(String, bool)>,
    /// Services converged together once those are ready.
    pub services: Vec<String>,
}

/// The waves of the start order: each holds every service whose dependencies are in earlier waves.
/// A dependency cycle (or one on a service that is not there) is an error naming the services left.
pub fn waves(desired: &Desired) -> Result<(Vec<Wave>, Vec<String>), String> {
    let mut placed: Vec<&str> = Vec::new();
    let mut ready: Vec<String> = Vec::new();
    let mut out = Vec::new();
    while placed.len() < desired.services.len() {
        let wave: Vec<&crate::desired::DesiredService> = desired
            .services
            .iter()
            .filter(|s| !placed.contains(&s.name.as_str()))
            .filter(|s| {
                s.depends_on
                    .iter()
                    .all(|(d, _)| placed.contains(&d.as_str()))
            })
            .collect();
        if wave.is_empty() {
            let left: Vec<&str> = desired
                .services
                .iter()
                .map(|s| s.name.as_str())
                .filter(|n| !placed.contains(n))
                .collect();
            return Err(format!(
                "services depend on each other in a cycle: {}",
                left.join(", ")
            ));
        }
        let mut wait_for: Vec<(String, bool)> = Vec::new();
        for s in &wave {
            for (dep, healthy) in &s.depends_on {
                if !ready.contains(dep) && !wait_for.iter().any(|(d, _)| d == dep) {
                    wait_for.push((dep.clone(), *healthy));
                }
            }
        }
        ready.extend(wait_for.iter().map(|(d, _)| d.clone()));
        placed.extend(wave.iter().map(|s| s.name.as_str()));
        out.push(Wave {
            wait_for,
            services: wave.iter().map(|s| s.name.clone()).collect(),
        });
    }
    let rest = desired
        .services
        .iter()
        .map(|s| s.name.clone())
        .filter(|n| !ready.contains(n))
        .collect();
    Ok((out, rest))
}

impl Plan {
    /// The action for a service the plan was made for (every desired service has one).
    pub fn action(&self, service: &str) -> &Action {
        self.actions
            .iter()
            .find(|a| a.service() == service)
            .expect("plan has an action per service")
    }

    pub fn is_noop(&self) -> bool {
        self.create_network.is_none()
            && self.create_volumes.is_empty()
            && self.actions.iter().all(|a| !a.changes())
    }
}

/// A kept service that read the addresses of dependencies this plan creates or recreates is recreated
/// after them (in its later wave): kept, it would go on using the old addresses (nginx's upstreams).
/// Services come in start order, so a renewal renews what depends on it in turn.
fn renew_dependents(desired: &Desired, actions: &mut [Action]) {
    let mut renewed: Vec<String> = actions
        .iter()
        .filter(|a| matches!(a, Action::Create { .. } | Action::Recreate { .. }))
        .map(|a| a.service().to_string())
        .collect();
    for s in &desired.services {
        let deps: Vec<&str> = s
            .service
            .renew_with
            .iter()
            .filter(|d| renewed.contains(d))
            .map(String::as_str)
            .collect();
        let Some(a) = actions.iter_mut().find(|a| a.service() == s.name) else {
            continue;
        };
        if deps.is_empty() || !matches!(a, Action::Keep { start: false, .. }) {
            continue;
        }
        *a = Action::Recreate {
            service: s.name.clone(),
            reason: format!(
                "{} recreated: {} reads {} only when it starts",
                deps.join(", "),
                s.name,
                if deps.len() == 1 {
                    "its address"
                } else {
                    "their addresses"
                }
            ),
        };
        renewed.push(s.name.clone());
    }
}

pub fn plan(desired: &Desired, observed: &Observed) -> Result<Plan, String> {
    let (waves, wait_at_end) = waves(desired)?;
    let mut actions = Vec::new();
    for c in &observed.containers {
        if !desired.services.iter().any(|s| s.name == c.service) {
            actions.push(Action::Remove {
                service: c.service.clone(),
                reason: "no longer in the spec".into(),
            });
        }
    }
    for s in &desired.services {
        let found: Vec<&ObservedContainer> = observed
            .containers
            .iter()
            .filter(|c| c.service == s.name)
            .collect();
        let action = match found.as_slice() {
            [] => Action::Create {
                service: s.name.clone(),
            },
            [c] if c.hash == s.hash => Action::Keep {
                service: s.name.clone(),
                start: c.state != "running",
            },
            [c] => {
                let changed: Vec<&str> = s
                    .parts
                    .iter()
                    .filter(|(k, v)| c.parts.get(*k) != Some(v))
                    .map(|(k, _)| k.as_str())
                    .collect();
                Action::Recreate {
                    service: s.name.clone(),
                    reason: if changed.is_empty() || c.parts.is_empty() {
                        "config changed".into()
                    } else {
                        format!("{} changed", changed.join(", "))
                    },
                }
            }
            _ => Action::Recreate {
                service: s.name.clone(),
                reason: format!("{} containers for one service", found.len()),
            },
        };
        actions.push(action);
    }
    renew_dependents(desired, &mut actions);
    Ok(Plan {
        create_network: (!observed.networks.contains(&desired.network))
            .then(|| desired.network.clone()),
        create_volumes: desired
            .volumes
            .iter()
            .filter(|v| !observed.volumes.contains(v))
            .cloned()
            .collect(),
        actions,
        waves,
        wait_at_end,
    })
}
