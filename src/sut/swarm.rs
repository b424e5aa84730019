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
        let nodes = list_nodes(manager, &spec.describe()).await?;
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

/// The swarm's nodes, from the manager `target` names (`TargetSpec::describe`). An engine that answers
/// it is no swarm manager (a worker, or no swarm at all) is bad input (exit 2); one that does not answer
/// keeps the engine's error (exit 3).
pub async fn list_nodes(manager: &Docker, target: &str) -> Result<Vec<Node>> {
    let nodes = manager
        .list_nodes(None)
        .await
        .map_err(|e| not_a_manager(e, target))?;
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

/// The engine's refusal to list nodes as what it means: its 503 "This node is not a swarm manager"
/// says the target is no manager, which the user must change (exit 2); a manager's own 503s (a swarm
/// that lost its quorum: "The swarm does not have a leader") are the swarm failing, said as such;
/// anything else stays the engine's error.
fn not_a_manager(e: bollard::errors::Error, target: &str) -> anyhow::Error {
    match e {
        bollard::errors::Error::DockerResponseServerError {
            status_code: 503,
            message,
        } if message.contains("not a swarm manager") => exectl_core::error::UsageError::new(
            "--target",
            target,
            format!("that engine is not a swarm manager: it answers \"{}\"", message.trim()),
            "give a manager of the swarm (docker node ls there lists the nodes): --target swarm+ssh://USER@MANAGER, or ssh://USER@HOST for one engine",
        )
        .into(),
        bollard::errors::Error::DockerResponseServerError {
            status_code: 503,
            message,
        } if message.contains("does not have a leader") => anyhow::anyhow!(
            "listing the swarm's nodes on {target}: the swarm has no leader (too few of its managers are reachable to hold a quorum): it answers \"{}\"; fix: bring its managers back (docker node ls on each), or on one of them `docker swarm init --force-new-cluster`",
            message.trim()
        ),
        e => anyhow::Error::new(e).context(format!("listing the swarm's nodes on {target}")),
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_engine_that_is_no_manager_is_bad_input_a_leaderless_swarm_fails_and_one_that_does_not_answer_unreachable(
    ) {
        let target = "swarm+ssh://root@10.0.0.2:22";
        // The engine's 503 with `message`, as not_a_manager reads it.
        let answered = |message: &str| {
            not_a_manager(
                bollard::errors::Error::DockerResponseServerError {
                    status_code: 503,
                    message: message.into(),
                },
                target,
            )
        };
        // A worker's answer (moby's errNoManager), and an engine in no swarm at all.
        for message in [
            "This node is not a swarm manager. Worker nodes can't be used to view or modify cluster state. Please run this command on a manager node or promote the current node to a manager.",
            "This node is not a swarm manager. Use \"docker swarm init\" or \"docker swarm join\" to connect this node to swarm and try again.",
        ] {
            let e = answered(message);
            assert_eq!(crate::error::exit_code(&e), 2, "{e:#}");
            let text = format!("{e:#}");
            assert!(
                text.starts_with(&format!("invalid --target \"{target}\": that engine is not a swarm manager"))
                    && text.contains(message),
                "{text}"
            );
        }
        // A manager of a swarm that lost its quorum answers 503 too: no bad input, the swarm failing.
        let leaderless = answered("rpc error: code = Unknown desc = The swarm does not have a leader. It's possible that too few managers are online. Make sure more than half of the managers are online.");
        assert_eq!(crate::error::exit_code(&leaderless), 1, "{leaderless:#}");
        let text = format!("{leaderless:#}");
        assert!(
            !text.contains("not a swarm manager")
                && text.contains("the swarm has no leader")
                && text.contains("does not have a leader")
                && text.contains("fix: bring its managers back"),
            "{text}"
        );
        // Another 503 stays the engine's.
        let other = answered("something else");
        assert_eq!(crate::error::exit_code(&other), 1, "{other:#}");
        let down = not_a_manager(
            bollard::errors::Error::IOError {
                err: std::io::Error::from(std::io::ErrorKind::ConnectionReset),
            },
            target,
        );
        assert_eq!(crate::error::exit_code(&down), 3, "{down:#}");
    }
}
