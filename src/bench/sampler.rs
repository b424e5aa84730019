//! The SUT sampler: a task on its own runtime (its own thread), so the load's runtime never waits for it.
//! Every `--sample` tick: one request to a host script kept running (`sample::sample_loop`) for every
//! container's cgroup figures and open files, the docker-proxy processes of the published ports, the
//! host's load average and the script's own CPU time; each app instance's `/api/websocket/info` and
//! nginx's stub_status on their own addresses, found once (locally on the bridge, remotely through the
//! SSH connection's forwards); the generator's own CPU and RSS — all stamped on the bench's one clock.
//! On a swarm all of that is asked of every node that runs the stack's tasks at once (`node`), each
//! container sampled with its node and each node's host on its own (`Sample::nodes`).
//! Containers are followed by id and cgroup, their state by the engine's event stream (`containers`).
//! Between levels it runs the leak check and reads nginx's log. On an SSH target, a link that fails
//! (the host script and the engine both) and cannot be made again is said as such (`link_lost`).

mod containers;
mod events;
mod link;
mod node;
mod progress;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context, Result};
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

use crate::load::metrics::{self, Live};
use crate::status::Deployed;
use crate::sut::{Target, TargetSpec};
use exectl_core::bench::timeline::NodeHost;
use exectl_core::bench::{InstanceSample, LeakCheck, Sample};
use node::{Node, Probes};

/// Called once when the sampler cannot go on (the SSH link to the SUT is lost), with what happened.
pub type Fatal = Arc<dyn Fn(&str) + Send + Sync>;

/// A line the sampler has for people: it runs on its own thread, so it hands lines to the bench, whose
/// progress says them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Said {
    /// A running level's line: each sample, each incident.
    Step(String),
    /// A warning: the timeline could not be appended, the SSH link failed or was made again.
    Note(String),
}

/// Where the sampler's lines go (called from its thread).
pub type Say = Arc<dyn Fn(Said) + Send + Sync>;

/// What the level running right now tells the sampler.
#[derive(Clone)]
pub struct LevelState {
    /// "level 2/3", for the progress line (None: no progress printed).
    pub progress: Option<String>,
    pub users: u64,
    pub live: Arc<Live>,
    /// When the level's ramp began and how long it is: the target users at an instant.
    pub started: Instant,
    pub ramp: Duration,
    /// Minted tokens: no logins to count.
    pub tokens: bool,
    /// The CPU scale the progress line shows.
    pub cpu: exectl_core::bench::CpuScale,
}

enum Command {
    Level(Option<LevelState>),
    /// Wait until every instance is back at its ghosts (0 connections and 0 rooms without any; checked
    /// each tick), at most `settle`. Cut short when its flag is set (a stop asked).
    Leak(
        Duration,
        Arc<AtomicBool>,
        Vec<InstanceSample>,
        oneshot::Sender<LeakCheck>,
    ),
    /// nginx's "worker_connections are not enough" lines since a unix time.
    NginxNotEnough(i64, oneshot::Sender<u64>),
    Snapshot(oneshot::Sender<Vec<Sample>>),
    Stop(oneshot::Sender<Finished>),
}

/// A leak check under way.
struct Leak {
    start: Instant,
    settle: Duration,
    stop: Arc<AtomicBool>,
    ghosts: Vec<InstanceSample>,
    reply: oneshot::Sender<LeakCheck>,
}

/// What the sampler hands back at the end.
pub struct Finished {
    pub samples: Vec<Sample>,
    /// CPU seconds its host script used on the SUT: locally the kernel's exact count of this process's
    /// reaped children (the script is its only child, reaped at the end); remotely the script's own
    /// cumulative `times` (clock-tick resolution), which also holds what sshd did for its session in
    /// that process before it became the shell.
    pub sut_cpu_s: f64,
    pub sample_ms_total: f64,
    /// Host scripts started (one, unless the running one failed and was started again).
    pub host_scripts: u64,
    /// The SSH link was lost (and could not be made again): what, when and why.
    pub link_lost: Option<String>,
}

/// The sampler's handle, used from the bench's (blocking) thread.
pub struct Sampler {
    tx: mpsc::UnboundedSender<Command>,
    thread: Option<std::thread::JoinHandle<()>>,
    pub t0: Instant,
    /// Facts read once at the start.
    pub facts: Facts,
    lost: Arc<Mutex<Option<String>>>,
}

/// What the sampler learnt of the stack when it started.
#[derive(Debug, Clone, Default)]
pub struct Facts {
    /// service → image digest.
    pub images: std::collections::BTreeMap<String, String>,
    pub host_cpus: Option<f64>,
}

impl Sampler {
    /// Connect (on the sampler's own runtime), find the stack's containers, and start sampling.
    /// `timeline`: where each sample is appended as a JSON line as soon as it is taken.
    /// `on_fatal` is called (from the sampler's thread) when it cannot go on: the SSH link is lost;
    /// `say` with each line for people.
    pub fn start(
        spec: TargetSpec,
        stack: String,
        deployed: Deployed,
        every: Duration,
        timeline: Option<std::fs::File>,
        on_fatal: Option<Fatal>,
        say: Say,
    ) -> Result<Sampler> {
        let lost = Arc::new(Mutex::new(None));
        let link = link::Link::new(lost.clone(), on_fatal, say);
        let (tx, rx) = mpsc::unbounded_channel();
        let (ready_tx, ready_rx) = std::sync::mpsc::channel::<Result<(Instant, Facts)>>();
        let thread = std::thread::Builder::new()
            .name("bench-sampler".into())
            .spawn(move || {
                let rt = match tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                {
                    Ok(rt) => rt,
                    Err(e) => {
                        let _ = ready_tx.send(Err(e.into()));
                        return;
                    }
                };
                rt.block_on(async move {
                    match Inner::new(&spec, stack, deployed, every, link).await {
                        Ok(mut inner) => {
                            inner.timeline = timeline;
                            let _ = ready_tx.send(Ok((inner.t0, inner.facts.clone())));
                            inner.run(rx).await;
                        }
                        Err(e) => {
                            let _ = ready_tx.send(Err(e));
                        }
                    }
                });
                // Not waiting for its blocking threads: a host script's read on a stalled SSH link
                // never returns (its deadline left it there), and would hold the bench's end.
                rt.shutdown_background();
            })
            .context("starting the sampler thread")?;
        let (t0, facts) = ready_rx
            .recv()
            .context("the sampler thread ended before it started")??;
        Ok(Sampler {
            tx,
            thread: Some(thread),
            t0,
            facts,
            lost,
        })
    }

    /// The SSH link to the SUT was lost and could not be made again: what, when and why (None: it
    /// holds, or the target is local).
    pub fn link_lost(&self) -> Option<String> {
        self.lost.lock().ok()?.clone()
    }

    pub fn level(&self, state: Option<LevelState>) {
        let _ = self.tx.send(Command::Level(state));
    }

    /// Wait up to `settle` for every instance back at its `ghosts` (0 connections and 0 rooms without
    /// any); cut short (not run) when `stop` is set.
    pub fn leak_check(
        &self,
        settle: Duration,
        stop: Arc<AtomicBool>,
        ghosts: Vec<InstanceSample>,
    ) -> LeakCheck {
        let (tx, rx) = oneshot::channel();
        let _ = self.tx.send(Command::Leak(settle, stop, ghosts, tx));
        rx.blocking_recv()
            .unwrap_or_else(|_| LeakCheck::judge(vec![], 0, &[]))
    }

    pub fn nginx_not_enough(&self, since_unix_s: i64) -> u64 {
        let (tx, rx) = oneshot::channel();
        let _ = self.tx.send(Command::NginxNotEnough(since_unix_s, tx));
        rx.blocking_recv().unwrap_or(0)
    }

    pub fn snapshot(&self) -> Vec<Sample> {
        let (tx, rx) = oneshot::channel();
        let _ = self.tx.send(Command::Snapshot(tx));
        rx.blocking_recv().unwrap_or_default()
    }

    pub fn stop(mut self) -> Finished {
        let (tx, rx) = oneshot::channel();
        let _ = self.tx.send(Command::Stop(tx));
        let out = rx.blocking_recv().unwrap_or(Finished {
            samples: vec![],
            sut_cpu_s: 0.0,
            sample_ms_total: 0.0,
            host_scripts: 0,
            link_lost: self.link_lost(),
        });
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        out
    }

    /// ms on the bench's clock.
    pub fn now_ms(&self) -> u64 {
        self.t0.elapsed().as_millis() as u64
    }

    /// An instant on the bench's clock, ms.
    pub fn ms_at(&self, t: Instant) -> u64 {
        t.saturating_duration_since(self.t0).as_millis() as u64
    }
}

struct Inner {
    /// The engines read: the target's, or each swarm node's that runs the stack's tasks.
    nodes: Vec<Node>,
    /// Each node's event stream forwards here (`events`); the sender is cloned into each subscription.
    events_tx: mpsc::UnboundedSender<events::NodeEvent>,
    events_rx: mpsc::UnboundedReceiver<events::NodeEvent>,
    stack: String,
    every: Duration,
    t0: Instant,
    facts: Facts,
    link: link::Link,
    probes: Probes,
    samples: Vec<Sample>,
    /// timeline.jsonl, appended to as samples arrive (None after a failed write: said once).
    timeline: Option<std::fs::File>,
    level: Option<LevelState>,
    prev_at: Option<Instant>,
    prev_gen_cpu: f64,
    gen_cpus: f64,
    /// A local target: its host script runs on the generator's machine and in its cgroup, so its CPU
    /// is the bench's too — the scripts' own CPU so far (seconds) and the running one's last reading
    /// (ns). None on a remote target or a swarm.
    local_script_cpu: Option<(f64, u64)>,
    /// Local targets: this process's children's CPU when sampling began.
    children_cpu0: Option<f64>,
    sample_ms_total: f64,
}

/// Instances and nginx are probed with a short bound: a stalled one must not stall the sampling.
const PROBE: crate::app::Timeouts = crate::app::Timeouts::all(Duration::from_millis(800));

impl Inner {
    async fn new(
        spec: &TargetSpec,
        stack: String,
        deployed: Deployed,
        every: Duration,
        link: link::Link,
    ) -> Result<Inner> {
        let target = Target::connect(spec).await?;
        let local = !target.is_remote();
        let mut facts = Facts::default();
        let mut nodes = Vec::new();
        let mut own_run_ns = None;
        for (name, target, tasks) in node::engines(target, &stack).await? {
            let cpus = target.docker.info().await.ok().and_then(|i| i.ncpu);
            // A swarm's nodes may differ: the smallest is each one's scale (a share is never low).
            facts.host_cpus = match (facts.host_cpus, cpus) {
                (Some(a), Some(b)) => Some(a.min(b as f64)),
                (a, b) => a.or(b.map(|n| n as f64)),
            };
            let (node, ns) = Node::open(name, target, &stack, tasks.as_ref(), &mut facts).await?;
            own_run_ns = own_run_ns.or(ns);
            nodes.push(node);
        }
        anyhow::ensure!(
            nodes.iter().any(|n| !n.fleet.list.is_empty()),
            "stack {stack} has no running container to sample"
        );
        let (events_tx, events_rx) = mpsc::unbounded_channel();
        Ok(Inner {
            nodes,
            events_tx,
            events_rx,
            stack,
            every,
            t0: Instant::now(),
            facts,
            link,
            probes: node::probes(deployed),
            samples: Vec::new(),
            timeline: None,
            level: None,
            prev_at: None,
            prev_gen_cpu: metrics::cpu_seconds(),
            gen_cpus: metrics::cpu_capacity(),
            // What the script used before the first sample (its walk of /proc) is not the generator's.
            local_script_cpu: local.then(|| (0.0, own_run_ns.unwrap_or(0))),
            children_cpu0: local.then(metrics::children_cpu_seconds),
            sample_ms_total: 0.0,
        })
    }

    /// Every container not running and every docker-proxy gone, for the progress line (None: all well).
    fn incidents_line(&self) -> Option<String> {
        containers::incidents_line(self.nodes.iter().map(|n| &n.fleet))
    }

    async fn run(mut self, mut rx: mpsc::UnboundedReceiver<Command>) {
        let mut tick = tokio::time::interval(self.every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        // A leak check waits over ticks (sampling goes on), judged on each tick's instance counts.
        let mut leak: Option<Leak> = None;
        loop {
            tokio::select! {
                _ = tick.tick() => {
                    for (i, node) in self.nodes.iter_mut().enumerate() {
                        let due = node
                            .subscribed_at
                            .is_none_or(|t| t.elapsed() >= events::RESUBSCRIBE);
                        if !node.subscribed && due && !self.link.is_lost() {
                            node.subscribe(i, &self.stack, self.events_tx.clone()).await;
                        }
                    }
                    self.sample().await;
                    if let Some(l) = &leak {
                        let last = self.samples.last().map(|s| s.instances.clone()).unwrap_or_default();
                        let zero = LeakCheck::settled(&last, &l.ghosts);
                        let waited = l.start.elapsed();
                        if l.stop.load(Ordering::Acquire) {
                            let l = leak.take().expect("checked above");
                            let _ = l.reply.send(LeakCheck::not_run("the bench was stopped during it"));
                        // With the link lost nothing can answer: judged at once, as could-not-run.
                        } else if zero || waited >= l.settle || self.link.is_lost() {
                            let l = leak.take().expect("checked above");
                            let _ = l.reply.send(LeakCheck::judge(last, waited.as_millis() as u64, &l.ghosts));
                        }
                    }
                }
                Some(ev) = self.events_rx.recv() => self.on_event(ev).await,
                c = rx.recv() => match c {
                    None => return,
                    Some(Command::Level(l)) => self.level = l,
                    Some(Command::Leak(settle, stop, ghosts, reply)) => {
                        leak = Some(Leak { start: Instant::now(), settle, stop, ghosts, reply })
                    }
                    Some(Command::NginxNotEnough(since, reply)) => {
                        let _ = reply.send(self.nginx_not_enough(since).await);
                    }
                    Some(Command::Snapshot(reply)) => {
                        let _ = reply.send(self.samples.clone());
                    }
                    Some(Command::Stop(reply)) => {
                        // Ended (and, locally, reaped) before its CPU is read.
                        for node in &mut self.nodes {
                            node.close().await;
                        }
                        let sut_cpu_s = match self.children_cpu0 {
                            Some(c0) => metrics::children_cpu_seconds() - c0,
                            None => self.nodes.iter().map(Node::host_cpu_s).sum(),
                        };
                        let _ = reply.send(Finished {
                            samples: std::mem::take(&mut self.samples),
                            sut_cpu_s,
                            sample_ms_total: self.sample_ms_total,
                            host_scripts: self.nodes.iter().map(|n| n.host_scripts).sum(),
                            link_lost: self.link.lost(),
                        });
                        return;
                    }
                },
            }
        }
    }

    async fn sample(&mut self) {
        let started = Instant::now();
        let context = link::Context {
            t0: self.t0,
            stack: &self.stack,
        };
        let (probes, link) = (&self.probes, &self.link);
        let reads = futures_util::future::join_all(
            self.nodes
                .iter_mut()
                .map(|n| n.sample(probes, link, &context)),
        )
        .await;
        // One engine: its host is the SUT's (on a swarm each node's host is in `nodes`).
        let one = match (reads.as_slice(), self.nodes.first()) {
            ([r], Some(n)) if n.name.is_none() => Some((r.load_avg, r.host_cpu, r.own_run_ns)),
            _ => None,
        };
        let mut containers = Vec::new();
        let mut instances = Vec::new();
        let mut proxies = Vec::new();
        let mut nodes = Vec::new();
        let mut nginx = None;
        for (node, read) in self.nodes.iter().zip(reads) {
            containers.extend(read.containers);
            instances.extend(read.instances);
            proxies.extend(read.proxies);
            nginx = nginx.or(read.nginx_active);
            if let Some(name) = &node.name {
                nodes.push(NodeHost {
                    node: name.clone(),
                    load_avg: read.load_avg,
                    host_cpu: read.host_cpu,
                });
            }
        }
        containers.sort_by(|a, b| a.service.cmp(&b.service));
        instances.sort_by(|a, b| a.service.cmp(&b.service));
        let now = Instant::now();
        let elapsed_ns = self.prev_at.map(|p| (now - p).as_nanos() as f64);
        self.prev_at = Some(now);
        // Locally the host script runs on the generator's machine and in its cgroup, under its quota:
        // its CPU is the bench's there too (a new script starts from 0).
        if let (Some(ns), Some((total, last))) = (
            one.and_then(|(_, _, ns)| ns),
            self.local_script_cpu.as_mut(),
        ) {
            *total += ns.checked_sub(*last).unwrap_or(ns) as f64 / 1e9;
            *last = ns;
        }
        let gen_cpu = metrics::cpu_seconds() + self.local_script_cpu.map_or(0.0, |c| c.0);
        let gen_pct = elapsed_ns
            .filter(|ns| *ns > 0.0)
            .map(|ns| (gen_cpu - self.prev_gen_cpu) / (ns / 1e9) / self.gen_cpus * 100.0);
        self.prev_gen_cpu = gen_cpu;
        let generator = progress::generator(self.level.as_ref(), gen_pct);
        if let Some(l) = &self.level {
            if let Some(label) = &l.progress {
                let at = self.t0.elapsed().as_secs_f64();
                let incidents = self.incidents_line();
                self.link.say(Said::Step(progress::line(
                    l,
                    label,
                    at,
                    &containers,
                    &generator,
                    incidents,
                )));
            }
        }
        let took = started.elapsed().as_secs_f64() * 1000.0;
        self.sample_ms_total += took;
        let sample = Sample {
            t_ms: (started - self.t0).as_millis() as u64,
            level: self.level.as_ref().map(|l| l.users),
            containers,
            instances,
            nginx_active: nginx,
            load_avg: one.and_then(|(load, _, _)| load),
            host_cpu: one.and_then(|(_, cpu, _)| cpu),
            nodes,
            generator,
            sample_ms: Some(took),
            proxies,
        };
        if let Some(t) = self.timeline.as_mut() {
            if let Err(e) = crate::state::bench_dir::append(t, &sample) {
                self.link.say(Said::Note(format!(
                    "exectl bench: {e:#}; the timeline is kept in memory and written at the end"
                )));
                self.timeline = None;
            }
        }
        self.samples.push(sample);
    }

    /// nginx's "worker_connections are not enough" lines since a unix time, on the node that runs it.
    async fn nginx_not_enough(&self, since: i64) -> u64 {
        if self.link.is_lost() {
            return 0;
        }
        for node in &self.nodes {
            if let Some(n) = node.nginx_not_enough(since).await {
                return n;
            }
        }
        0
    }
}
