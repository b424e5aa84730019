//! The SUT sampler: a task on its own runtime (its own thread), so the load's runtime never waits for it.
//! Every `--sample` tick: one request to a host script kept running (`sample::sample_loop`) for every
//! container's cgroup figures and open files, the docker-proxy processes of the published ports, the
//! host's load average and the script's own CPU time; each app instance's `/api/websocket/info` and
//! nginx's stub_status on their own addresses, found once (locally on the bridge, remotely through the
//! SSH connection's forwards); the generator's own CPU and RSS — all stamped on the bench's one clock.
//! Containers are followed by id and cgroup, their state by the engine's event stream (`containers`).
//! Between levels it runs the leak check and reads nginx's log. On an SSH target, a link that fails
//! (the host script and the engine both) and cannot be made again is said as such (`link_lost`).

mod containers;
mod events;
mod link;
mod progress;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context, Result};
use bollard::models::EventMessage;
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

use crate::load::metrics::{self, Live};
use crate::shell::scripts::sample;
use crate::shell::ShellLoop;
use crate::status::{self, Deployed};
use crate::sut::{Target, TargetSpec};
use containers::{Fleet, Followed};
use exectl_core::bench::timeline::{stub_status_active, HostCpu};
use exectl_core::bench::{InstanceSample, LeakCheck, Sample};

/// Called once when the sampler cannot go on (the SSH link to the SUT is lost), with what happened.
pub type Fatal = Arc<dyn Fn(&str) + Send + Sync>;

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
    /// Wait until every instance is at 0 connections and 0 rooms (checked each tick), at most `settle`.
    /// Cut short when its flag is set (a stop asked).
    Leak(Duration, Arc<AtomicBool>, oneshot::Sender<LeakCheck>),
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
    /// `on_fatal` is called (from the sampler's thread) when it cannot go on: the SSH link is lost.
    pub fn start(
        spec: TargetSpec,
        stack: String,
        deployed: Deployed,
        every: Duration,
        timeline: Option<std::fs::File>,
        on_fatal: Option<Fatal>,
    ) -> Result<Sampler> {
        let lost = Arc::new(Mutex::new(None));
        let link = link::Link::new(lost.clone(), on_fatal);
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

    /// Wait up to `settle` for every instance at 0 connections and 0 rooms; cut short (not run) when
    /// `stop` is set.
    pub fn leak_check(&self, settle: Duration, stop: Arc<AtomicBool>) -> LeakCheck {
        let (tx, rx) = oneshot::channel();
        let _ = self.tx.send(Command::Leak(settle, stop, tx));
        rx.blocking_recv()
            .unwrap_or_else(|_| LeakCheck::judge(vec![], 0))
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
    target: Target,
    /// To connect again after a link failure.
    spec: TargetSpec,
    stack: String,
    deployed: Deployed,
    every: Duration,
    t0: Instant,
    facts: Facts,
    fleet: Fleet,
    /// The engine's events about the stack's containers (None: to subscribe at the next tick).
    events: Option<mpsc::UnboundedReceiver<EventMessage>>,
    /// The last event applied (a new subscription replays from its second; what came before is skipped).
    last_event: (i64, i64),
    /// When the last subscription was made: a stream that keeps ending is subscribed again (and every
    /// container inspected again) at most every `events::RESUBSCRIBE`.
    subscribed_at: Option<Instant>,
    link: link::Link,
    client: crate::app::Client,
    token: tokio::sync::OnceCell<Option<String>>,
    samples: Vec<Sample>,
    /// timeline.jsonl, appended to as samples arrive (None after a failed write: said once).
    timeline: Option<std::fs::File>,
    level: Option<LevelState>,
    prev_at: Option<Instant>,
    /// When the previous host command returned: the cgroup counters' clock.
    prev_read_at: Option<Instant>,
    prev_gen_cpu: f64,
    /// The host's CPU counters at the previous sample.
    prev_jiffies: Option<exectl_core::bench::timeline::Jiffies>,
    gen_cpus: f64,
    /// Locally: the host scripts' own CPU so far (seconds) and the running one's last reading (ns).
    local_script_cpu: (f64, u64),
    /// The host script kept running (None until opened, and after it failed: opened again next tick).
    host: Option<Box<dyn ShellLoop>>,
    /// CPU seconds of host scripts that ended, and the running one's so far (its `times`).
    host_cpu_ended: f64,
    host_cpu_now: f64,
    host_scripts: u64,
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
        let spec_is_remote = target.is_remote();
        let observed = crate::engine::observe::observe(&target.docker, &stack).await?;
        let mut list = Vec::new();
        let mut facts = Facts::default();
        for c in &observed.containers {
            let info = target.docker.inspect_container(&c.name, None).await?;
            let Some(f) = Followed::new(&c.service, &info) else {
                continue;
            };
            facts
                .images
                .insert(c.service.clone(), info.image.clone().unwrap_or_default());
            list.push(f);
        }
        anyhow::ensure!(
            !list.is_empty(),
            "stack {stack} has no running container to sample"
        );
        list.sort_by(|a, b| a.service.cmp(&b.service));
        facts.host_cpus = target
            .docker
            .info()
            .await
            .ok()
            .and_then(|i| i.ncpu)
            .map(|n| n as f64);
        let children_cpu0 = (!spec_is_remote).then(metrics::children_cpu_seconds);
        // Every container's cgroup, and the front door's proxies, before the first sample.
        let mut fleet = Fleet::new(list);
        let items = fleet.items();
        let (host, answer) =
            Self::ask_host(target.shell.clone(), None, sample::request(&items)).await;
        let first = answer.as_ref().ok().map(|t| sample::parse(t, &items));
        fleet.absorb(&items, first.as_ref(), None);
        Ok(Inner {
            target,
            spec: spec.clone(),
            stack,
            deployed,
            every,
            t0: Instant::now(),
            facts,
            fleet,
            events: None,
            last_event: (0, 0),
            subscribed_at: None,
            link,
            client: crate::app::Client::new(2, PROBE),
            token: tokio::sync::OnceCell::new(),
            samples: Vec::new(),
            timeline: None,
            level: None,
            prev_at: None,
            prev_read_at: None,
            prev_gen_cpu: metrics::cpu_seconds(),
            prev_jiffies: first.as_ref().and_then(|r| r.cpu_jiffies),
            gen_cpus: metrics::cpu_capacity(),
            // What the script used before the first sample (its walk of /proc) is not the generator's.
            local_script_cpu: (0.0, first.and_then(|r| r.own_run_ns).unwrap_or(0)),
            host_scripts: u64::from(host.is_some()),
            host,
            host_cpu_ended: 0.0,
            host_cpu_now: 0.0,
            children_cpu0,
            sample_ms_total: 0.0,
        })
    }

    /// Every container not running and every docker-proxy gone, for the progress line (None: all well).
    fn incidents_line(&self) -> Option<String> {
        self.fleet.incidents_line()
    }

    async fn run(mut self, mut rx: mpsc::UnboundedReceiver<Command>) {
        let mut tick = tokio::time::interval(self.every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        // A leak check waits over ticks (sampling goes on), judged on each tick's instance counts.
        let mut leak: Option<Leak> = None;
        loop {
            tokio::select! {
                _ = tick.tick() => {
                    let due = self
                        .subscribed_at
                        .is_none_or(|t| t.elapsed() >= events::RESUBSCRIBE);
                    if self.events.is_none() && due && !self.link.is_lost() {
                        self.subscribe().await;
                    }
                    self.sample().await;
                    if let Some(l) = &leak {
                        let last = self.samples.last().map(|s| s.instances.clone()).unwrap_or_default();
                        let zero = !last.is_empty()
                            && last.iter().all(|i| i.connections == Some(0) && i.rooms == Some(0));
                        let waited = l.start.elapsed();
                        if l.stop.load(Ordering::Acquire) {
                            let l = leak.take().expect("checked above");
                            let _ = l.reply.send(LeakCheck::not_run("the bench was stopped during it"));
                        // With the link lost nothing can answer: judged at once, as could-not-run.
                        } else if zero || waited >= l.settle || self.link.is_lost() {
                            let l = leak.take().expect("checked above");
                            let _ = l.reply.send(LeakCheck::judge(last, waited.as_millis() as u64));
                        }
                    }
                }
                ev = events::next_event(&mut self.events) => self.on_event(ev).await,
                c = rx.recv() => match c {
                    None => return,
                    Some(Command::Level(l)) => self.level = l,
                    Some(Command::Leak(settle, stop, reply)) => {
                        leak = Some(Leak { start: Instant::now(), settle, stop, reply })
                    }
                    Some(Command::NginxNotEnough(since, reply)) => {
                        let _ = reply.send(self.nginx_not_enough(since).await);
                    }
                    Some(Command::Snapshot(reply)) => {
                        let _ = reply.send(self.samples.clone());
                    }
                    Some(Command::Stop(reply)) => {
                        // Ended (and, locally, reaped) before its CPU is read.
                        if let Some(host) = self.host.take() {
                            let _ = tokio::task::spawn_blocking(move || drop(host)).await;
                        }
                        let sut_cpu_s = match self.children_cpu0 {
                            Some(c0) => metrics::children_cpu_seconds() - c0,
                            None => self.host_cpu_ended + self.host_cpu_now,
                        };
                        let _ = reply.send(Finished {
                            samples: std::mem::take(&mut self.samples),
                            sut_cpu_s,
                            sample_ms_total: self.sample_ms_total,
                            host_scripts: self.host_scripts,
                            link_lost: self.link.lost(),
                        });
                        return;
                    }
                },
            }
        }
    }

    /// Find the endpoints not known yet: each running app instance's port and nginx's status port.
    async fn resolve_endpoints(&mut self) {
        use exectl_core::bench::ContainerState;
        for p in self
            .fleet
            .list
            .iter_mut()
            .filter(|p| p.endpoint.is_none() && p.state == ContainerState::Running)
        {
            let port = if p.app {
                exectl_core::render::APP_PORT
            } else if p.service == "nginx" {
                exectl_core::render::NGINX_STATUS_PORT
            } else {
                continue;
            };
            p.endpoint = status::container_endpoint(&self.target, &p.id, port)
                .await
                .ok();
        }
    }

    /// Every app instance's counts, and which probes failed (their endpoints are found again).
    async fn instances(&self) -> (Vec<InstanceSample>, Vec<usize>) {
        let apps = self.fleet.list.iter().enumerate().filter(|(_, p)| p.app);
        let asked = futures_util::future::join_all(apps.map(|(i, p)| async move {
            let s = match &p.endpoint {
                Some(ep) => Some(
                    status::instance_info(
                        &self.client,
                        ep,
                        &p.service,
                        &self.deployed,
                        &self.token,
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

    async fn nginx_active(&self) -> Result<Option<u64>, usize> {
        let Some(i) = self.fleet.list.iter().position(|p| p.service == "nginx") else {
            return Ok(None);
        };
        let ep = self.fleet.list[i].endpoint.as_ref().ok_or(i)?;
        let a = self.client.nginx_status(ep).answer().await.map_err(|_| i)?;
        Ok(a.body.as_str().and_then(stub_status_active))
    }

    async fn sample(&mut self) {
        let started = Instant::now();
        let lost = self.link.is_lost();
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
                    Self::ask_host(shell, host, sample::request(&items)).await
                };
                (r, Instant::now())
            },
            self.instances(),
            self.nginx_active()
        );
        if host.is_none() {
            // The script ended (or never started): what it had used stays counted.
            self.host_cpu_ended += std::mem::take(&mut self.host_cpu_now);
        }
        self.host = host;
        for i in failed.into_iter().chain(nginx.err()) {
            self.fleet.list[i].endpoint = None;
        }
        let nginx = nginx.unwrap_or(None);
        if let (Err(e), false) = (&answer, lost) {
            if self.target.is_remote() {
                self.check_link(e).await;
            }
        }
        let read = answer.ok().map(|t| sample::parse(&t, &items));
        let now = Instant::now();
        let elapsed_ns = self.prev_at.map(|p| (now - p).as_nanos() as f64);
        self.prev_at = Some(now);
        let read_ns = self.prev_read_at.map(|p| (read_at - p).as_nanos() as f64);
        self.prev_read_at = Some(read_at);
        let (containers, proxies) = self.fleet.absorb(&items, read.as_ref(), read_ns);
        if let Some(own) = read.as_ref().and_then(|r| r.own_cpu_s) {
            self.host_cpu_now = own;
        }
        // Locally the host script runs on the generator's machine and in its cgroup, under its quota:
        // its CPU is the bench's there too (a new script starts from 0).
        if let (Some(ns), true) = (
            read.as_ref().and_then(|r| r.own_run_ns),
            !self.target.is_remote(),
        ) {
            let (total, last) = &mut self.local_script_cpu;
            *total += ns.checked_sub(*last).unwrap_or(ns) as f64 / 1e9;
            *last = ns;
        }
        let gen_cpu = metrics::cpu_seconds() + self.local_script_cpu.0;
        let gen_pct = elapsed_ns
            .filter(|ns| *ns > 0.0)
            .map(|ns| (gen_cpu - self.prev_gen_cpu) / (ns / 1e9) / self.gen_cpus * 100.0);
        self.prev_gen_cpu = gen_cpu;
        let generator = progress::generator(self.level.as_ref(), gen_pct);
        if let Some(l) = &self.level {
            if let Some(label) = &l.progress {
                let at = self.t0.elapsed().as_secs_f64();
                let incidents = self.incidents_line();
                eprintln!(
                    "{}",
                    progress::line(l, label, at, &containers, &generator, incidents)
                );
            }
        }
        let jiffies = read.as_ref().and_then(|r| r.cpu_jiffies);
        let host_cpu = self
            .prev_jiffies
            .zip(jiffies)
            .and_then(|(a, b)| HostCpu::between(&a, &b));
        self.prev_jiffies = jiffies.or(self.prev_jiffies);
        let took = started.elapsed().as_secs_f64() * 1000.0;
        self.sample_ms_total += took;
        let sample = Sample {
            t_ms: (started - self.t0).as_millis() as u64,
            level: self.level.as_ref().map(|l| l.users),
            containers,
            instances,
            nginx_active: nginx,
            load_avg: read.as_ref().and_then(|r| r.load_avg),
            host_cpu,
            generator,
            sample_ms: Some(took),
            proxies,
        };
        if let Some(t) = self.timeline.as_mut() {
            if let Err(e) = crate::state::bench_dir::append(t, &sample) {
                eprintln!(
                    "exectl bench: {e:#}; the timeline is kept in memory and written at the end"
                );
                self.timeline = None;
            }
        }
        self.samples.push(sample);
    }

    async fn nginx_not_enough(&self, since: i64) -> u64 {
        use bollard::query_parameters::LogsOptionsBuilder;
        use futures_util::StreamExt;
        let Some(p) = self.fleet.list.iter().find(|p| p.service == "nginx") else {
            return 0;
        };
        if self.link.is_lost() {
            return 0;
        }
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
        n
    }
}
