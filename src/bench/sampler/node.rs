//! One engine the sampler reads: the target's own (one engine), or each node of a swarm. A node has its
//! containers (`Fleet`), its host script, its event stream and its host's CPU counters; a sample asks
//! every node at once and puts their answers on the bench's one clock (`Inner::sample`).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use anyhow::Result;
use tokio::time::Instant;

use super::containers::{Fleet, Followed};
use super::{link, Facts, PROBE};
use crate::shell::scripts::sample;
use crate::shell::ShellLoop;
use crate::status::{self, Deployed};
use crate::sut::Target;
use exectl_core::bench::timeline::{HostCpu, Jiffies};
use exectl_core::bench::{ContainerSample, InstanceSample, ProxySample};

pub(super) struct Node {
    /// The swarm node's hostname (None: the one engine of a single-engine stack).
    pub name: Option<String>,
    pub target: Target,
    pub fleet: Fleet,
    /// Its event stream feeds the sampler's channel (false: subscribed again at the next tick).
    pub subscribed: bool,
    /// Bumped at each subscription: what an older stream still sends is dropped.
    pub generation: u64,
    /// The last event applied (a new subscription replays from its second; what came before is skipped).
    pub last_event: (i64, i64),
    /// When the last subscription was made: a stream that keeps ending is subscribed again (and every
    /// container inspected again) at most every `events::RESUBSCRIBE`.
    pub subscribed_at: Option<Instant>,
    /// The host script kept running (None until opened, and after it failed: opened again next tick).
    host: Option<Box<dyn ShellLoop>>,
    /// CPU seconds of host scripts that ended, and the running one's so far (its `times`).
    pub host_cpu_ended: f64,
    pub host_cpu_now: f64,
    pub host_scripts: u64,
    /// When the previous host command returned: the cgroup counters' clock.
    prev_read_at: Option<Instant>,
    /// The host's CPU counters at the previous sample.
    prev_jiffies: Option<Jiffies>,
}

/// What one node said at one sample.
pub(super) struct NodeRead {
    pub containers: Vec<ContainerSample>,
    pub proxies: Vec<ProxySample>,
    pub instances: Vec<InstanceSample>,
    pub nginx_active: Option<u64>,
    pub load_avg: Option<f64>,
    pub host_cpu: Option<HostCpu>,
    /// The host script's own run time so far (ns), where it reports it.
    pub own_run_ns: Option<u64>,
}

/// What a node's probes share: the HTTP client, what the stack's record says, the admin's token.
pub(super) struct Probes {
    pub client: crate::app::Client,
    pub deployed: Deployed,
    pub token: tokio::sync::OnceCell<Option<String>>,
}

impl Node {
    /// The stack's containers on `target` (on a swarm, only those of its running tasks: `tasks`), and
    /// its host's first reading, before the first sample. Images are added to `facts`.
    pub async fn open(
        name: Option<String>,
        target: Target,
        stack: &str,
        tasks: Option<&HashSet<String>>,
        facts: &mut Facts,
    ) -> Result<(Node, Option<u64>)> {
        let observed = crate::engine::observe::observe(&target.docker, stack).await?;
        let mut list = Vec::new();
        for c in &observed.containers {
            let info = target.docker.inspect_container(&c.name, None).await?;
            // A swarm keeps its tasks' old containers: only the running task's is the service's.
            if tasks.is_some_and(|t| !info.id.as_ref().is_some_and(|id| t.contains(id))) {
                continue;
            }
            let Some(f) = Followed::new(&c.service, &info) else {
                continue;
            };
            facts
                .images
                .insert(c.service.clone(), info.image.clone().unwrap_or_default());
            list.push(f);
        }
        list.sort_by(|a, b| a.service.cmp(&b.service));
        // Every container's cgroup, and the front door's proxies, before the first sample.
        let mut fleet = Fleet::new(list, name.clone());
        let items = fleet.items();
        let (host, answer) =
            Node::ask_host(target.shell.clone(), None, sample::request(&items)).await;
        let first = answer.as_ref().ok().map(|t| sample::parse(t, &items));
        fleet.absorb(&items, first.as_ref(), None);
        let node = Node {
            name,
            target,
            fleet,
            subscribed: false,
            generation: 0,
            last_event: (0, 0),
            subscribed_at: None,
            host_scripts: u64::from(host.is_some()),
            host,
            host_cpu_ended: 0.0,
            host_cpu_now: 0.0,
            prev_read_at: None,
            prev_jiffies: first.as_ref().and_then(|r| r.cpu_jiffies),
        };
        Ok((node, first.and_then(|r| r.own_run_ns)))
    }

    /// What to call it in messages: "node n2" on a swarm, the target otherwise.
    pub fn describe(&self) -> String {
        match &self.name {
            Some(n) => format!("swarm node {n} ({})", self.target.describe()),
            None => self.target.describe(),
        }
    }

    /// The host script's CPU seconds so far (remote: its own `times`).
    pub fn host_cpu_s(&self) -> f64 {
        self.host_cpu_ended + self.host_cpu_now
    }

    /// Ends the host script (and, locally, reaps it); over SSH, waits for its channel to close at most
    /// 5 s (a stalled link never closes it: the drop is left on its blocking thread).
    pub async fn close(&mut self) {
        if let Some(host) = self.host.take() {
            let closing = tokio::task::spawn_blocking(move || drop(host));
            let _ = tokio::time::timeout(std::time::Duration::from_secs(5), closing).await;
        }
    }

    /// One sample of this node: the host script's answer (its containers' cgroups, proxies, the host's
    /// CPU and load), and each app instance's and nginx's own figures, asked together.
    pub async fn sample(
        &mut self,
        probes: &Probes,
        link: &link::Link,
        context: &link::Context<'_>,
    ) -> NodeRead {
        let lost = link.is_lost();
        if !lost {
            self.resolve_endpoints().await;
        }
        let items = self.fleet.items();
        let (shell, host) = (self.target.shell.clone(), self.host.take());
        if host.is_none() && !lost {
            self.host_scripts += 1;
        }
        let (((host, answer), read_at), (instances, failed), nginx) = tokio::join!(
            // Stamped when the cgroup counters come back, not after the probes: a stalled instance
            // holds its probe up to PROBE's 800 ms, and dividing by that wait mis-states the CPU
            // share (seen: 540 % of a 0.2-CPU quota with STANDIN_FAULT=blocking-bcrypt).
            async {
                let r = if lost {
                    (None, Err(anyhow::anyhow!("the SSH link is lost")))
                } else {
                    Node::ask_host(shell, host, sample::request(&items)).await
                };
                (r, Instant::now())
            },
            self.instances(probes),
            self.nginx_active(&probes.client)
        );
        if host.is_none() {
            // The script ended (or never started): what it had used stays counted.
            self.host_cpu_ended += std::mem::take(&mut self.host_cpu_now);
        }
        self.host = host;
        for i in failed.into_iter().chain(nginx.err()) {
            self.fleet.list[i].endpoint = None;
        }
        if let (Err(e), false) = (&answer, lost) {
            if self.target.is_remote() {
                self.check_link(e, link, context).await;
            }
        }
        let read = answer.ok().map(|t| sample::parse(&t, &items));
        let read_ns = self.prev_read_at.map(|p| (read_at - p).as_nanos() as f64);
        self.prev_read_at = Some(read_at);
        let (containers, proxies) = self.fleet.absorb(&items, read.as_ref(), read_ns);
        if let Some(own) = read.as_ref().and_then(|r| r.own_cpu_s) {
            self.host_cpu_now = own;
        }
        let jiffies = read.as_ref().and_then(|r| r.cpu_jiffies);
        let host_cpu = self
            .prev_jiffies
            .zip(jiffies)
            .and_then(|(a, b)| HostCpu::between(&a, &b));
        self.prev_jiffies = jiffies.or(self.prev_jiffies);
        NodeRead {
            containers,
            proxies,
            instances,
            nginx_active: nginx.unwrap_or(None),
            load_avg: read.as_ref().and_then(|r| r.load_avg),
            host_cpu,
            own_run_ns: read.as_ref().and_then(|r| r.own_run_ns),
        }
    }

    /// Find the endpoints not known yet: each running app instance's port and nginx's status port. On
    /// a swarm node, at the task's address on the node's gateway bridge (its overlay address is not
    /// reachable from the node's host).
    async fn resolve_endpoints(&mut self) {
        use exectl_core::bench::ContainerState;
        // The port to probe of a running container without an endpoint yet.
        let wanted = |p: &Followed| {
            if p.endpoint.is_some() || p.state != ContainerState::Running {
                None
            } else if p.app {
                Some(exectl_core::render::APP_PORT)
            } else if p.service == "nginx" {
                Some(exectl_core::render::NGINX_STATUS_PORT)
            } else {
                None
            }
        };
        if !self.fleet.list.iter().any(|p| wanted(p).is_some()) {
            return;
        }
        let bridge: Option<HashMap<String, String>> = match self.name {
            Some(_) => status::swarm::gateway_addresses(&self.target).await.ok(),
            None => None,
        };
        for p in &mut self.fleet.list {
            let Some(port) = wanted(p) else {
                continue;
            };
            p.endpoint = match (&self.name, &bridge) {
                (None, _) => status::container_endpoint(&self.target, &p.id, port)
                    .await
                    .ok(),
                (Some(_), Some(bridge)) => match bridge.get(&p.id) {
                    Some(ip) => self
                        .target
                        .reach(ip, port)
                        .await
                        .ok()
                        .map(|a| crate::app::Endpoint::at(a, None)),
                    None => None,
                },
                (Some(_), None) => None,
            };
        }
    }

    /// Every app instance's counts, and which probes failed (their endpoints are found again).
    async fn instances(&self, probes: &Probes) -> (Vec<InstanceSample>, Vec<usize>) {
        let apps = self.fleet.list.iter().enumerate().filter(|(_, p)| p.app);
        let asked = futures_util::future::join_all(apps.map(|(i, p)| async move {
            let s = match &p.endpoint {
                Some(ep) => Some(
                    status::instance_info(
                        &probes.client,
                        ep,
                        &p.service,
                        &probes.deployed,
                        &probes.token,
                    )
                    .await,
                ),
                None => None,
            };
            let sample = InstanceSample {
                service: p.service.clone(),
                connections: s.as_ref().and_then(|s| s.total_connections),
                rooms: s.as_ref().and_then(|s| s.rooms_count),
            };
            (sample, i)
        }))
        .await;
        let failed = asked
            .iter()
            .filter(|(s, _)| s.connections.is_none())
            .map(|(_, i)| *i)
            .collect();
        (asked.into_iter().map(|(s, _)| s).collect(), failed)
    }

    async fn nginx_active(&self, client: &crate::app::Client) -> Result<Option<u64>, usize> {
        let Some(i) = self.fleet.list.iter().position(|p| p.service == "nginx") else {
            return Ok(None);
        };
        let ep = self.fleet.list[i].endpoint.as_ref().ok_or(i)?;
        let a = client.nginx_status(ep).answer().await.map_err(|_| i)?;
        Ok(a.body
            .as_str()
            .and_then(exectl_core::bench::timeline::stub_status_active))
    }

    /// nginx's "worker_connections are not enough" lines since a unix time (0 when nginx is not here).
    pub async fn nginx_not_enough(&self, since: i64) -> Option<u64> {
        use bollard::query_parameters::LogsOptionsBuilder;
        use futures_util::StreamExt;
        let p = self.fleet.list.iter().find(|p| p.service == "nginx")?;
        let opts = LogsOptionsBuilder::default()
            .stderr(true)
            .stdout(true)
            .since(since as i32)
            .build();
        let mut logs = self.target.docker.logs(&p.id, Some(opts));
        let mut n = 0;
        while let Some(Ok(line)) = logs.next().await {
            n += line
                .to_string()
                .matches("worker_connections are not enough")
                .count() as u64;
        }
        Some(n)
    }
}

/// The engines to sample: the target's own, or each swarm node's (every node must answer: a bench
/// does not start on a swarm it cannot read whole), with the running tasks' containers of each.
pub(super) async fn engines(
    mut target: Target,
    stack: &str,
) -> Result<Vec<(Option<String>, Target, Option<HashSet<String>>)>> {
    let Some(swarm) = target.swarm.take() else {
        return Ok(vec![(None, target, None)]);
    };
    let tasks = crate::sut::swarm::running_tasks(&target.docker, stack).await?;
    let swarm = Arc::try_unwrap(swarm)
        .map_err(|_| anyhow::anyhow!("the swarm's nodes are shared elsewhere"))?;
    let mut out = Vec::new();
    for n in swarm.nodes {
        let here: HashSet<String> = tasks
            .iter()
            .filter(|t| t.node_id == n.node.id)
            .map(|t| t.container_id.clone())
            .collect();
        // A node that runs none of the stack's tasks is not the stack's.
        if here.is_empty() {
            continue;
        }
        let node = match n.target {
            Ok(t) => t,
            Err(why) => {
                return Err(exectl_core::error::Unreachable {
                    what: format!(
                        "swarm node {} ({}) does not answer: {why}",
                        n.node.hostname, n.node.addr
                    ),
                    fix: "bring the node back (its sshd and engine), check `exectl status`, then bench again".into(),
                }
                .into())
            }
        };
        out.push((Some(n.node.hostname), node, Some(here)));
    }
    Ok(out)
}

/// How long each probe may take (`PROBE`), shared.
pub(super) fn probes(deployed: Deployed) -> Probes {
    Probes {
        client: crate::app::Client::new(2, PROBE),
        deployed,
        token: tokio::sync::OnceCell::new(),
    }
}
