//! A swarm target: the manager's engine (the `Target` itself) and each node the manager lists, reached
//! over its own SSH connection with the target's user, port, key and known_hosts (a worker's engine
//! answers only for its own containers, so limits, health and counts are read on the node that runs
//! each task). A node that cannot be reached is kept with the reason: status names it.

use super::{Target, TargetSpec};
use anyhow::{Context, Result};
use bollard::models::{NodeSpecAvailabilityEnum, NodeState, TaskState};
use bollard::query_parameters::ListTasksOptionsBuilder;
use bollard::Docker;
use exectl_core::swarm::Node;
use std::collections::{BTreeMap, HashMap};

pub struct SwarmNode {
    pub node: Node,
    /// Its engine and host, or why they could not be reached.
    pub target: Result<Target, String>,
}

pub struct Swarm {
    pub nodes: Vec<SwarmNode>,
    /// The hostname of the manager the target names: where the front door goes.
    pub home: String,
}

impl Swarm {
    /// The nodes as the manager lists them, each connected. `spec` is the manager's target spec.
    pub async fn connect(manager: &Docker, spec: &TargetSpec) -> Result<Swarm> {
        let nodes = list_nodes(manager).await?;
        let home_id = manager
            .info()
            .await?
            .swarm
            .and_then(|s| s.node_id)
            .unwrap_or_default();
        let home = nodes
            .iter()
            .find(|n| n.id == home_id)
            .map(|n| n.hostname.clone())
            .with_context(|| {
                format!("the target's engine is node {home_id:?}, which its own node list lacks")
            })?;
        let connects = nodes.into_iter().map(|node| async move {
            let target = match node_spec(spec, &node.addr) {
                None => Err("the target is not reached over SSH".to_string()),
                Some(s) => Target::connect_engine(&s)
                    .await
                    .map_err(|e| format!("{e:#}")),
            };
            SwarmNode { node, target }
        });
        Ok(Swarm {
            nodes: futures_util::future::join_all(connects).await,
            home,
        })
    }

    pub fn core_nodes(&self) -> Vec<Node> {
        self.nodes.iter().map(|n| n.node.clone()).collect()
    }

    /// The node of this hostname, connected; an error naming it when it is not.
    pub fn target(&self, hostname: &str) -> Result<&Target> {
        let n = self
            .nodes
            .iter()
            .find(|n| n.node.hostname == hostname)
            .with_context(|| format!("the swarm has no node {hostname}"))?;
        n.target.as_ref().map_err(|why| {
            exectl_core::error::Unreachable {
                what: format!("swarm node {hostname} ({}): {why}", n.node.addr),
                fix: "check that the node is up and its sshd and engine answer".into(),
            }
            .into()
        })
    }

    /// The node of this id (as tasks name it).
    pub fn by_id(&self, id: &str) -> Option<&SwarmNode> {
        self.nodes.iter().find(|n| n.node.id == id)
    }
}

/// The node's own target: the manager's URL with the node's address.
pub(crate) fn node_spec(spec: &TargetSpec, addr: &str) -> Option<TargetSpec> {
    let mut s = spec.clone();
    let o = s.ssh.as_mut()?;
    o.url.host = addr.to_string();
    s.swarm = false;
    Some(s)
}

/// The swarm's nodes, from the manager.
pub async fn list_nodes(manager: &Docker) -> Result<Vec<Node>> {
    let nodes = manager.list_nodes(None).await.map_err(|e| {
        anyhow::anyhow!(
            "the target's engine does not list swarm nodes ({e}); fix: give a swarm manager in --target swarm+ssh://USER@MANAGER"
        )
    })?;
    let mut out: Vec<Node> = nodes
        .into_iter()
        .map(|n| {
            let spec = n.spec.unwrap_or_default();
            let status = n.status.unwrap_or_default();
            let manager = n.manager_status.as_ref();
            Node {
                id: n.id.unwrap_or_default(),
                hostname: n.description.and_then(|d| d.hostname).unwrap_or_default(),
                addr: status.addr.clone().unwrap_or_default(),
                manager: manager.is_some(),
                leader: manager.and_then(|m| m.leader).unwrap_or(false),
                ready: status.state == Some(NodeState::READY)
                    && spec.availability == Some(NodeSpecAvailabilityEnum::ACTIVE),
                labels: spec
                    .labels
                    .unwrap_or_default()
                    .into_iter()
                    .collect::<BTreeMap<_, _>>(),
            }
        })
        .collect();
    out.sort_by(|a, b| a.hostname.cmp(&b.hostname));
    Ok(out)
}

/// A running task: its service, node and container.
#[derive(Debug, Clone)]
pub struct RunningTask {
    pub service_id: String,
    pub service: String,
    pub node_id: String,
    pub container_id: String,
}

/// The stack's tasks that are running now.
pub async fn running_tasks(manager: &Docker, stack: &str) -> Result<Vec<RunningTask>> {
    let mut filters = HashMap::from([(
        "label".to_string(),
        vec![format!("{}={stack}", exectl_core::desired::LABEL_STACK)],
    )]);
    filters.insert("desired-state".into(), vec!["running".into()]);
    let tasks = manager
        .list_tasks(Some(
            ListTasksOptionsBuilder::default().filters(&filters).build(),
        ))
        .await?;
    Ok(tasks
        .into_iter()
        .filter_map(|t| {
            let status = t.status?;
            if status.state != Some(TaskState::RUNNING) {
                return None;
            }
            let labels = t
                .spec
                .as_ref()
                .and_then(|s| s.container_spec.as_ref())
                .and_then(|c| c.labels.clone())
                .unwrap_or_default();
            Some(RunningTask {
                service_id: t.service_id?,
                service: labels
                    .get(exectl_core::desired::LABEL_SERVICE)
                    .cloned()
                    .unwrap_or_default(),
                node_id: t.node_id?,
                container_id: status.container_status?.container_id?,
            })
        })
        .collect())
}
