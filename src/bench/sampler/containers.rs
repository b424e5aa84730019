//! The stack's containers as the sampler follows them: by id and cgroup, never by a process id found once.
//! Their state comes from the engine's event stream (start, die, pause, unpause, destroy, filtered on the
//! stack's label: cheap, immediate, and it rides the SSH tunnel like any API call); a start re-resolves
//! the container's cgroup from the PID the engine names then, and a container whose cgroup is gone has
//! no figures. Also followed: the docker-proxy processes of the stack's published ports (the engine's
//! userland proxy), found by a walk of the host's /proc when the front door starts.

use bollard::models::{ContainerInspectResponse, ContainerStateStatusEnum, EventMessage};
use bollard::Docker;

use crate::app::Endpoint;
use crate::shell::scripts::{limits, sample, sample::Item};
use exectl_core::bench::{ContainerSample, ContainerState, ProxySample};

/// The engine's events the sampler follows (healthchecks' exec events and the like are left out).
pub const EVENTS: [&str; 5] = ["start", "die", "pause", "unpause", "destroy"];

/// One container of the stack.
pub struct Followed {
    pub service: String,
    /// Its full id: what the engine's events name and what its cgroup path holds.
    pub id: String,
    pub cpu_limit: Option<f64>,
    pub app: bool,
    pub state: ContainerState,
    pub exit_code: Option<i64>,
    pub exits: u64,
    pub pauses: u64,
    pub restarts: Option<u64>,
    /// The PID the engine named at its last start, and whether its cgroup is still to be resolved.
    pid: Option<i64>,
    to_resolve: bool,
    /// Its cgroup folder, relative to the hierarchy's root (None: not resolved, or gone).
    cgroup: Option<String>,
    prev_cpu: Option<u64>,
    /// Where an app instance's port or nginx's status port answers from here: found when first needed,
    /// forgotten when a probe there fails and at every start (a new address, maybe).
    pub endpoint: Option<Endpoint>,
    /// Its published host ports and its address: the docker-proxy processes that carry them.
    published: Vec<u16>,
    ip: Option<String>,
}

/// One docker-proxy process of a published port.
struct Proxy {
    pid: i64,
    port: u16,
    host_ip: String,
    nofile: Option<u64>,
    alive: bool,
    open: Option<u64>,
}

/// Every followed container and proxy.
#[derive(Default)]
pub struct Fleet {
    pub list: Vec<Followed>,
    /// The swarm node they run on (None: one engine), in each of their samples.
    node: Option<String>,
    proxies: Vec<Proxy>,
    /// The front door (re)started: find its proxies in the next sample.
    scan: bool,
}

/// The state an inspected container is in.
fn state_of(info: &ContainerInspectResponse) -> ContainerState {
    use ContainerStateStatusEnum as S;
    match info.state.as_ref().and_then(|s| s.status) {
        Some(S::RUNNING) => ContainerState::Running,
        Some(S::PAUSED) => ContainerState::Paused,
        Some(S::RESTARTING) => ContainerState::Restarting,
        Some(S::REMOVING) => ContainerState::Gone,
        _ => ContainerState::Exited,
    }
}

impl Followed {
    /// A container as inspected. One already down is followed too (an instance that crashed before the
    /// bench fails its first level), except a one-shot that finished: exit code 0, no restart policy.
    pub fn new(service: &str, info: &ContainerInspectResponse) -> Option<Followed> {
        let state = state_of(info);
        let exit_code = info.state.as_ref().and_then(|s| s.exit_code);
        let policy = info
            .host_config
            .as_ref()
            .and_then(|h| h.restart_policy.as_ref())
            .and_then(|p| p.name)
            .map(|n| n.to_string())
            .unwrap_or_default();
        let down = !matches!(state, ContainerState::Running | ContainerState::Paused);
        if down && exit_code == Some(0) && matches!(policy.as_str(), "" | "no") {
            return None;
        }
        let mut f = Followed {
            service: service.to_string(),
            id: info.id.clone()?,
            cpu_limit: info
                .host_config
                .as_ref()
                .and_then(|h| h.nano_cpus)
                .filter(|n| *n > 0)
                .map(|n| n as f64 / 1e9),
            app: crate::status::report::is_app(service),
            state,
            exit_code: exit_code.filter(|_| down),
            exits: 0,
            pauses: 0,
            restarts: None,
            pid: None,
            to_resolve: false,
            cgroup: None,
            prev_cpu: None,
            endpoint: None,
            published: vec![],
            ip: None,
        };
        f.update(info);
        Some(f)
    }

    /// What an inspection says now: state, restarts, and a new PID to resolve the cgroup of.
    fn update(&mut self, info: &ContainerInspectResponse) {
        self.state = state_of(info);
        self.restarts = info.restart_count.map(|r| r.max(0) as u64);
        let pid = info.state.as_ref().and_then(|s| s.pid).filter(|p| *p > 0);
        if pid != self.pid {
            self.pid = pid;
            self.to_resolve = pid.is_some();
            self.cgroup = None;
            self.prev_cpu = None;
        }
        self.ip = crate::engine::observe::address_of(info);
        self.published = info
            .network_settings
            .as_ref()
            .and_then(|n| n.ports.as_ref())
            .into_iter()
            .flat_map(|ports| ports.values().flatten().flatten())
            .filter_map(|b| b.host_port.as_deref()?.parse().ok())
            .collect();
        self.published.sort_unstable();
        self.published.dedup();
    }

    fn gone(&mut self) {
        self.cgroup = None;
        self.prev_cpu = None;
        self.pid = None;
        self.to_resolve = false;
    }
}

impl Fleet {
    pub fn new(list: Vec<Followed>, node: Option<String>) -> Fleet {
        Fleet {
            list,
            node,
            proxies: vec![],
            scan: true,
        }
    }

    /// Inspect every container again (after a gap in the events: a new subscription, a reconnect).
    pub async fn resync(&mut self, docker: &Docker) {
        for f in &mut self.list {
            match docker.inspect_container(&f.id, None).await {
                Ok(info) => {
                    let was = f.state;
                    f.update(&info);
                    if f.state != was && !f.published.is_empty() {
                        self.scan = true;
                    }
                }
                Err(bollard::errors::Error::DockerResponseServerError {
                    status_code: 404, ..
                }) => {
                    f.state = ContainerState::Gone;
                    f.gone();
                }
                Err(_) => {}
            }
        }
    }

    /// Apply one engine event; Some(service) when it changed that container's state.
    pub async fn on_event(&mut self, docker: &Docker, ev: &EventMessage) -> Option<String> {
        let id = ev.actor.as_ref()?.id.clone()?;
        let action = ev.action.as_deref()?;
        let i = match self.list.iter().position(|f| f.id == id) {
            Some(i) => i,
            // Recreated under the same service (a new id): followed from its start on.
            None if action == "start" => {
                let info = docker.inspect_container(&id, None).await.ok()?;
                let service = info
                    .config
                    .as_ref()
                    .and_then(|c| c.labels.as_ref())
                    .and_then(|l| l.get(crate::engine::desired::LABEL_SERVICE))?
                    .clone();
                let i = self.list.iter().position(|f| {
                    f.service == service
                        && matches!(f.state, ContainerState::Gone | ContainerState::Exited)
                })?;
                let old = &self.list[i];
                let (exits, pauses) = (old.exits, old.pauses);
                self.list[i] = Followed::new(&service, &info)?;
                self.list[i].exits = exits;
                self.list[i].pauses = pauses;
                i
            }
            None => return None,
        };
        let f = &mut self.list[i];
        let was = f.state;
        match action {
            "start" => {
                if let Ok(info) = docker.inspect_container(&id, None).await {
                    f.update(&info);
                }
                f.state = ContainerState::Running;
                f.endpoint = None;
                if !f.published.is_empty() {
                    self.scan = true;
                }
            }
            "die" => {
                f.exits += 1;
                f.exit_code = ev.actor.as_ref().and_then(crate::engine::exit_code);
                f.gone();
                f.state = ContainerState::Exited;
                // Its restart policy may start it again: the engine says so at once.
                if let Ok(info) = docker.inspect_container(&id, None).await {
                    if state_of(&info) == ContainerState::Restarting {
                        f.state = ContainerState::Restarting;
                    }
                    f.restarts = info.restart_count.map(|r| r.max(0) as u64);
                }
            }
            "pause" => {
                f.pauses += 1;
                f.state = ContainerState::Paused;
            }
            "unpause" => f.state = ContainerState::Running,
            "destroy" => {
                f.gone();
                f.state = ContainerState::Gone;
            }
            _ => {}
        }
        (f.state != was || action == "die").then(|| f.service.clone())
    }

    /// What the next sample asks the host for, in order: each container's cgroup (or its PID to resolve
    /// first), each live proxy, and a scan of the front door's ports when it (re)started.
    pub fn items(&self) -> Vec<Item> {
        let mut items: Vec<Item> = self
            .list
            .iter()
            .map(|f| match (&f.cgroup, f.pid) {
                (Some(cg), _) => Item::Cgroup(cg.clone()),
                (None, Some(pid)) if f.to_resolve => Item::Resolve(pid),
                _ => Item::Cgroup(String::new()),
            })
            .collect();
        items.extend(
            self.proxies
                .iter()
                .filter(|p| p.alive)
                .map(|p| Item::Proxy(p.pid)),
        );
        if self.scan {
            for f in &self.list {
                items.extend(f.published.iter().map(|p| Item::Scan(*p)));
            }
        }
        items
    }

    /// The host's answer to `items` (None: no answer): each container's sample and each proxy's.
    /// `read_ns` is the time since the previous answer, for CPU shares.
    pub fn absorb(
        &mut self,
        items: &[Item],
        read: Option<&sample::Read>,
        read_ns: Option<f64>,
    ) -> (Vec<ContainerSample>, Vec<ProxySample>) {
        let part = |i: usize| read.and_then(|r| r.items.get(i)).map(String::as_str);
        let mut containers = Vec::with_capacity(self.list.len());
        for (i, f) in self.list.iter_mut().enumerate() {
            let mut figures = None;
            match (&items[i], part(i)) {
                (Item::Resolve(_), Some(text)) => {
                    // Resolved for the next sample; a PID that names another cgroup is dropped.
                    f.cgroup = sample::parse_resolved(text, &f.id);
                    f.to_resolve = false;
                }
                (Item::Cgroup(p), Some(text)) if !p.is_empty() => {
                    figures = sample::parse_cgroup(text);
                    if figures.is_none() {
                        // Its cgroup is gone (it exited, or was removed): resolved again from the PID,
                        // which names it only while that process lives in it (else the next start).
                        f.cgroup = None;
                        f.prev_cpu = None;
                        f.to_resolve = f.pid.is_some() && f.state == ContainerState::Running;
                    }
                }
                _ => {}
            }
            let e = figures.as_ref().map(|(t, _)| limits::parse(&f.service, t));
            let files = figures.and_then(|(_, files)| files);
            let usage = e.as_ref().and_then(|e| e.cpu_usage_ns);
            let cpu_pct = match (f.prev_cpu, usage, read_ns) {
                (Some(a), Some(b), Some(ns)) if ns > 0.0 => {
                    Some(b.saturating_sub(a) as f64 / ns * 100.0)
                }
                _ => None,
            };
            f.prev_cpu = usage;
            containers.push(ContainerSample {
                service: f.service.clone(),
                node: self.node.clone(),
                cpu_pct,
                cpu_limit: e.as_ref().and_then(|e| e.cpus).or(f.cpu_limit),
                rss_bytes: e.as_ref().and_then(|e| e.rss_bytes),
                mem_limit_bytes: e.as_ref().and_then(|e| e.memory),
                restarts: f.restarts,
                // The limit of the process those files are counted in (nginx's workers have their own).
                open_files: files.map(|f| f.0),
                nofile: files.and_then(|f| f.1),
                state: Some(f.state),
                exit_code: f.exit_code,
                exits: Some(f.exits),
                pauses: Some(f.pauses),
            });
        }
        if read.is_some() {
            self.absorb_proxies(items, &part);
        }
        let proxies = self
            .proxies
            .iter()
            .map(|p| ProxySample {
                port: p.port,
                host_ip: p.host_ip.clone(),
                alive: p.alive,
                open_files: p.open,
                nofile: p.nofile,
            })
            .collect();
        (containers, proxies)
    }

    fn absorb_proxies<'a>(&mut self, items: &[Item], part: &dyn Fn(usize) -> Option<&'a str>) {
        for (i, item) in items.iter().enumerate() {
            match item {
                Item::Proxy(pid) => {
                    if let Some(p) = self.proxies.iter_mut().find(|p| p.pid == *pid) {
                        p.open = part(i).and_then(sample::parse_proxy);
                        p.alive = p.open.is_some();
                    }
                }
                Item::Scan(port) => {
                    let ips: Vec<&str> = self
                        .list
                        .iter()
                        .filter(|f| f.published.contains(port))
                        .filter_map(|f| f.ip.as_deref())
                        .collect();
                    // Another engine's proxy of the same port (a second dockerd on the host) is not ours.
                    let found: Vec<Proxy> = sample::parse_scan(part(i).unwrap_or(""))
                        .into_iter()
                        .filter(|p| p.host_port == *port && ips.contains(&p.container_ip.as_str()))
                        .map(|p| Proxy {
                            pid: p.pid,
                            port: *port,
                            host_ip: p.host_ip,
                            nofile: p.nofile,
                            alive: true,
                            open: None,
                        })
                        .collect();
                    if !found.is_empty() {
                        self.proxies.retain(|p| p.port != *port);
                        self.proxies.extend(found);
                    }
                    self.scan = false;
                }
                _ => {}
            }
        }
    }

    /// Its containers' states and its proxies, for a progress line's incidents.
    fn incident_parts(&self) -> (Vec<ContainerSample>, Vec<ProxySample>) {
        let containers = self
            .list
            .iter()
            .map(|f| ContainerSample {
                service: f.service.clone(),
                state: Some(f.state),
                exit_code: f.exit_code,
                ..ContainerSample::default()
            })
            .collect();
        let proxies = self
            .proxies
            .iter()
            .map(|p| ProxySample {
                port: p.port,
                alive: p.alive,
                ..ProxySample::default()
            })
            .collect();
        (containers, proxies)
    }
}

/// Every container not running and every proxy gone on any of `fleets`, for a progress line (None: all
/// well).
pub fn incidents_line<'a>(fleets: impl Iterator<Item = &'a Fleet>) -> Option<String> {
    let mut sample = exectl_core::bench::Sample::default();
    for f in fleets {
        let (c, p) = f.incident_parts();
        sample.containers.extend(c);
        sample.proxies.extend(p);
    }
    sample.containers.sort_by(|a, b| a.service.cmp(&b.service));
    exectl_core::bench::incidents::progress(&sample)
}
