//! Desired vs observed → actions, with reasons. Pure: the engine reads the observed state, this decides.

use crate::core::desired::Desired;
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
}

impl Plan {
    pub fn is_noop(&self) -> bool {
        self.create_network.is_none()
            && self.create_volumes.is_empty()
            && self.actions.iter().all(|a| !a.changes())
    }
}

pub fn plan(desired: &Desired, observed: &Observed) -> Plan {
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
    Plan {
        create_network: (!observed.networks.contains(&desired.network))
            .then(|| desired.network.clone()),
        create_volumes: desired
            .volumes
            .iter()
            .filter(|v| !observed.volumes.contains(v))
            .cloned()
            .collect(),
        actions,
    }
}
