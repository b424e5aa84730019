//! Which node each service of a stack runs on, on a swarm: `--place SERVICE=NODE[,NODE…]` (the one parser
//! of that value) over the nodes the manager lists. Explicit and reproducible: each service is pinned to
//! one node by the deploy (a constraint on the node's hostname), never left to the scheduler's spread,
//! which is soft and does not move a task back after a node returns.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::error::UsageError;

/// The node label that marks where app instances go by default.
pub const ROLE_LABEL: &str = "exectl.role";
pub const ROLE_APP: &str = "app";
/// The services whose published port is the stack's front door.
const FRONT_DOORS: [&str; 2] = ["nginx", "traefik"];
/// What a rule's key names: every app instance (`app-1` … `app-N`), round-robin over its nodes.
pub const APP_GROUP: &str = "app";

/// A swarm node as the manager lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Node {
    pub id: String,
    pub hostname: String,
    /// The address the node's swarm traffic comes from (`Status.Addr`): where its SSH and its host-mode
    /// ports answer.
    pub addr: String,
    pub manager: bool,
    pub leader: bool,
    /// `Status.State` is `ready` and `Spec.Availability` is `active`.
    pub ready: bool,
    pub labels: BTreeMap<String, String>,
}

/// One `--place` value: a service (or `app`, every instance) and the nodes it may go to, in order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlaceRule {
    pub service: String,
    pub nodes: Vec<String>,
}

const FIELD: &str = "--place";
const FORM: &str = "write SERVICE=NODE[,NODE...], e.g. app=node1,node2 or postgres=node3";

impl std::str::FromStr for PlaceRule {
    type Err = UsageError;

    fn from_str(text: &str) -> Result<PlaceRule, UsageError> {
        let bad = |problem: &str| UsageError::new(FIELD, text, problem, FORM);
        let (service, nodes) = text.split_once('=').ok_or_else(|| bad("no '='"))?;
        let service = service.trim();
        if service.is_empty() {
            return Err(bad("no service before '='"));
        }
        let nodes: Vec<String> = nodes.split(',').map(|n| n.trim().to_string()).collect();
        if nodes.iter().any(String::is_empty) {
            return Err(bad("an empty node name"));
        }
        if service != APP_GROUP && nodes.len() > 1 {
            return Err(UsageError::new(
                FIELD,
                text,
                format!("{service} is one container: it runs on one node"),
                format!(
                    "name one node ({service}={}); only app takes several, round-robin",
                    nodes[0]
                ),
            ));
        }
        Ok(PlaceRule {
            service: service.to_string(),
            nodes,
        })
    }
}

/// Each service's node (its hostname), for every service of the stack.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Placement(pub BTreeMap<String, String>);

impl Placement {
    pub fn node_of(&self, service: &str) -> Option<&str> {
        self.0.get(service).map(String::as_str)
    }

    /// The services on one node, in name order.
    pub fn on(&self, hostname: &str) -> Vec<&str> {
        self.0
            .iter()
            .filter(|(_, n)| n.as_str() == hostname)
            .map(|(s, _)| s.as_str())
            .collect()
    }
}

fn is_app(service: &str) -> bool {
    service
        .strip_prefix("app-")
        .is_some_and(|n| n.parse::<u32>().is_ok())
}

/// Place `services` (the stack's, e.g. app-1..app-N, postgres, redis, nginx) on `nodes`. Rules first (a
/// rule for one instance, `app-3=n1`, beats the `app` rule); then app instances round-robin over the
/// nodes labelled `exectl.role=app` (hostname order), the rest on `home`, the manager the target names
/// (where load and prepare find the front door). A node is named by its hostname or its id; one that is
/// not ready cannot take a service (its task would never start).
pub fn place(
    services: &[String],
    rules: &[PlaceRule],
    nodes: &[Node],
    home: &str,
) -> Result<Placement, UsageError> {
    let hostnames = || {
        nodes
            .iter()
            .map(|n| n.hostname.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let find = |rule: &PlaceRule, name: &str| -> Result<String, UsageError> {
        let node = nodes
            .iter()
            .find(|n| n.hostname == name || n.id == name)
            .ok_or_else(|| {
                UsageError::new(
                    FIELD,
                    format!("{}={}", rule.service, rule.nodes.join(",")),
                    format!("the swarm has no node {name}"),
                    format!("name one of its nodes: {}", hostnames()),
                )
            })?;
        if !node.ready {
            return Err(UsageError::new(
                FIELD,
                format!("{}={}", rule.service, rule.nodes.join(",")),
                format!("node {} is not ready and active", node.hostname),
                "bring it back (docker node ls), or place the service elsewhere",
            ));
        }
        Ok(node.hostname.clone())
    };

    let mut seen = std::collections::BTreeSet::new();
    for rule in rules {
        if !seen.insert(rule.service.as_str()) {
            return Err(UsageError::new(
                FIELD,
                &rule.service,
                "placed twice",
                "give each service one --place",
            ));
        }
        let known = rule.service == APP_GROUP || services.contains(&rule.service);
        if !known {
            return Err(UsageError::new(
                FIELD,
                format!("{}={}", rule.service, rule.nodes.join(",")),
                format!("the stack has no service {}", rule.service),
                format!("place app or one of: {}", services.join(", ")),
            ));
        }
    }

    let app_nodes: Vec<String> = match rules.iter().find(|r| r.service == APP_GROUP) {
        Some(rule) => rule
            .nodes
            .iter()
            .map(|n| find(rule, n))
            .collect::<Result<_, _>>()?,
        None => {
            let mut labelled: Vec<&Node> = nodes
                .iter()
                .filter(|n| n.labels.get(ROLE_LABEL).map(String::as_str) == Some(ROLE_APP))
                .filter(|n| n.ready)
                .collect();
            labelled.sort_by(|a, b| a.hostname.cmp(&b.hostname));
            labelled.into_iter().map(|n| n.hostname.clone()).collect()
        }
    };
    let home_node = nodes.iter().find(|n| n.hostname == home && n.ready);

    let mut placed = BTreeMap::new();
    let mut app_index = 0usize;
    for service in services {
        let node = if let Some(rule) = rules.iter().find(|r| &r.service == service) {
            find(rule, &rule.nodes[0])?
        } else if is_app(service) {
            let Some(node) = app_nodes.get(app_index % app_nodes.len().max(1)) else {
                return Err(UsageError::new(
                    FIELD,
                    "(none)",
                    format!("no ready node is labelled {ROLE_LABEL}={ROLE_APP} for the app instances"),
                    format!(
                        "label some (docker node update --label-add {ROLE_LABEL}={ROLE_APP} NODE) or give --place app=NODE[,NODE...]; nodes: {}",
                        hostnames()
                    ),
                ));
            };
            app_index += 1;
            node.clone()
        } else {
            match home_node {
                Some(h) => h.hostname.clone(),
                None => {
                    return Err(UsageError::new(
                        FIELD,
                        "(none)",
                        format!("{service} goes to the target's node ({home}) by default, and it is not ready"),
                        format!("place it: --place {service}=NODE; nodes: {}", hostnames()),
                    ))
                }
            }
        };
        if FRONT_DOORS.contains(&service.as_str()) && node != home {
            return Err(UsageError::new(
                FIELD,
                format!("{service}={node}"),
                format!("the front door ({service}) must run on the node the target names ({home}): load and prepare reach it at the target's address"),
                format!("leave {service} where it is, or give --target swarm+ssh://USER@ADDRESS-OF-{node}"),
            ));
        }
        placed.insert(service.clone(), node);
    }
    Ok(Placement(placed))
}
