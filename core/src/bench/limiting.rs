//! What gave out first: during a failed level, the measured resource nearest its limit — an app
//! instance's CPU at its quota, memory at its limit, nginx's connections at worker_connections ×
//! workers, open files at nofile, a database's CPU — or the generator itself, in which case the result is
//! generator-bound and says so instead of blaming the SUT. Only what was sampled can be named.
//!
//! The rules are small named functions of one `Evidence`, asked in `RULES`' order: the first that
//! answers names the limiting component. What a container is measured against is `MEASURES`.

use serde::{Deserialize, Serialize};

use super::cpu::{cpus, CpuScale};
use super::incidents::{self, Kind};
use super::timeline::{ContainerSample, LevelSpan, Sample};

/// The generator is the limit when its CPU stays above this share of what it may use.
pub const GENERATOR_BOUND_PCT: f64 = 85.0;
/// A resource is "at its limit" from this share of it.
pub const NEAR_LIMIT: f64 = 0.8;
/// The SUT host's CPU is saturated from this share of its CPUs busy (or its load average at its CPUs).
pub const HOST_SATURATED: f64 = 0.9;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Resource {
    Cpu,
    Memory,
    NginxConnections,
    OpenFiles,
    Generator,
    /// The level failed only its leak check: no resource ran out, the app kept what it should drop.
    Leak,
    /// A container exited, restarted or was paused during the level (`incidents`).
    Incident,
    /// The engine's userland proxy of a published port exited or reached its nofile (`incidents`).
    DockerProxy,
    /// The level failed on growth alone (`--churn`): a resource of an instance grew past its bound
    /// over the hold (`growth`), none ran out.
    Growth,
    /// Nothing measured was near its limit.
    Unknown,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Limiting {
    pub resource: Resource,
    /// "app instances' CPU", "nginx worker_connections", "the load generator's CPU", …
    pub component: String,
    /// The services at (or nearest) the limit.
    pub services: Vec<String>,
    /// Their use as a share of the limit, at the level's 90th percentile sample (1.0 = at it).
    pub share: f64,
    pub detail: String,
    /// The generator, not the SUT, was the limit: the level says nothing about the SUT's capacity.
    pub generator_bound: bool,
}

impl Limiting {
    /// What failed a level whose objectives all held: connections or rooms left after it.
    pub fn leak(detail: &str) -> Limiting {
        Limiting {
            resource: Resource::Leak,
            component: "leak".into(),
            services: vec![],
            share: 0.0,
            detail: format!("every objective held; the leak check failed: {detail}"),
            generator_bound: false,
        }
    }

    /// What failed a level on growth alone: the instance's resource that grew the most.
    pub fn growth(grew: &super::growth::SeriesTrend) -> Limiting {
        Limiting {
            resource: Resource::Growth,
            component: format!("{}'s {}", grew.service, grew.resource),
            services: vec![grew.service.clone()],
            share: 0.0,
            detail: format!("no resource ran out; unbounded growth: {}", grew.describe()),
            generator_bound: false,
        }
    }

    pub fn unknown() -> Limiting {
        Limiting {
            resource: Resource::Unknown,
            component: "none identified".into(),
            services: vec![],
            share: 0.0,
            detail: "nothing was sampled during the level".into(),
            generator_bound: false,
        }
    }
}

/// What the runner knows besides the samples.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Known {
    /// nginx: worker_connections × worker processes (each proxied socket takes two of them).
    pub nginx_capacity: Option<u64>,
    /// nginx error-log lines "worker_connections are not enough" during the level.
    pub nginx_not_enough: u64,
    /// What each container's CPU is a share of (`cpu::CpuScale`), the SUT's CPUs among it.
    pub cpu: CpuScale,
    /// The generator runs on the SUT host (a local target): its CPU is the host's too.
    pub generator_local: bool,
    /// The generator's CPUs (what its CPU % is a share of).
    pub generator_cpus: f64,
    /// The restarts a planned fault made (`--fault`): the fault itself, no incident.
    pub restarted: Vec<String>,
}

/// A rule: the limiting component when the evidence shows its case, else None (the next rule is asked).
type Rule = fn(&Evidence) -> Option<Limiting>;

/// The rules, in the order they are asked; the last two together answer whatever the first ones left.
const RULES: [(&str, Rule); 9] = [
    ("an incident", incident),
    ("nothing sampled", nothing_sampled),
    ("nginx said so", nginx_said_so),
    ("generator-bound", generator_bound),
    ("the SUT host saturated", saturated_host),
    ("nothing with a limit", nothing_with_a_limit),
    ("nothing near its limit", nothing_near_its_limit),
    ("nginx at worker_connections", nginx_at_worker_connections),
    ("a container at its limit", container_at_its_limit),
];

/// What gave out first during the level `span` of `samples`: the answer of the first rule that answers.
pub fn limiting_component(span: &LevelSpan, samples: &[Sample], known: &Known) -> Limiting {
    let e = Evidence::of(span, samples, known);
    RULES
        .iter()
        .find_map(|(_, rule)| rule(&e))
        .unwrap_or_else(Limiting::unknown)
}

/// What the rules look at: the level, its samples and what the runner knows, with the figures the
/// rules share worked out once.
struct Evidence<'a> {
    span: &'a LevelSpan,
    samples: &'a [Sample],
    known: &'a Known,
    /// The samples of the level's load.
    during: Vec<&'a Sample>,
    /// The generator's CPU, p90 over the level.
    generator_cpu: Option<f64>,
    /// Every sampled resource with a limit: each container's `MEASURES`, then nginx's connections.
    candidates: Vec<Candidate>,
    host: Option<HostCpu>,
}

impl<'a> Evidence<'a> {
    fn of(span: &'a LevelSpan, samples: &'a [Sample], known: &'a Known) -> Evidence<'a> {
        let during: Vec<&Sample> = span.during(samples).collect();
        let mut candidates = containers(&during, known);
        candidates.extend(nginx_connections(&during, known));
        Evidence {
            generator_cpu: p90(during.iter().filter_map(|s| s.generator.cpu_pct).collect()),
            host: host_cpu(&during, known),
            candidates,
            during,
            span,
            samples,
            known,
        }
    }

    /// The resource nearest its limit.
    fn top(&self) -> Option<&Candidate> {
        self.candidates
            .iter()
            .max_by(|a, b| a.share.total_cmp(&b.share))
    }

    /// The resource nearest its limit when it is near it.
    fn at_limit(&self) -> Option<&Candidate> {
        self.top().filter(|t| t.share >= NEAR_LIMIT)
    }

    /// The SUT host's CPU, when saturated.
    fn saturated(&self) -> Option<&HostCpu> {
        self.host.as_ref().filter(|h| h.share >= HOST_SATURATED)
    }

    fn host_text(&self, h: &HostCpu) -> String {
        let parts = match (h.kernel_cpus, h.steal_cpus) {
            (Some(k), Some(st)) if st >= 0.05 => format!(
                "; its own count: {k:.1} in the kernel (network, interrupts), {st:.1} stolen by the hypervisor"
            ),
            (Some(k), _) => format!("; its own count: {k:.1} in the kernel (network, interrupts)"),
            _ => String::new(),
        };
        let generator = if self.known.generator_local {
            format!(
                "; the generator shares the host (local target) and used {:.1} of them",
                h.generator_cpus
            )
        } else {
            String::new()
        };
        let load = h
            .load
            .map(|l| format!("; load average {l:.1}"))
            .unwrap_or_default();
        let whose = match &h.node {
            None => "the host's".to_string(),
            Some(n) => format!("node {n}'s"),
        };
        format!(
            "{:.1} of {whose} {} busy (p90){parts}{generator}{load}",
            h.busy_cpus,
            cpus(self.known.cpu.host_cpus.unwrap_or(0.0)),
        )
    }
}

/// A container exited, restarted or was paused, or a docker-proxy exited or reached its nofile: the
/// level measured a broken stack, whatever else it shows.
fn incident(e: &Evidence) -> Option<Limiting> {
    let i = incidents::first_besides(e.span, e.samples, &e.known.restarted)?;
    Some(Limiting {
        resource: match i.kind {
            Kind::Container => Resource::Incident,
            Kind::DockerProxy => Resource::DockerProxy,
        },
        detail: i.detail(e.span),
        component: i.what,
        services: vec![i.service],
        share: 1.0,
        generator_bound: false,
    })
}

fn nothing_sampled(e: &Evidence) -> Option<Limiting> {
    e.during.is_empty().then(Limiting::unknown)
}

/// nginx saying it ran out of worker_connections is the SUT's own word: a busy generator opens fewer
/// connections, never more, so it cannot be what made nginx run out. It comes before generator-bound.
fn nginx_said_so(e: &Evidence) -> Option<Limiting> {
    let known = e.known;
    (known.nginx_not_enough > 0).then(|| Limiting {
        resource: Resource::NginxConnections,
        component: "nginx worker_connections".into(),
        services: vec!["nginx".into()],
        share: 1.0,
        detail: format!(
            "nginx logged \"worker_connections are not enough\" {} times{}{}",
            known.nginx_not_enough,
            known
                .nginx_capacity
                .map(|c| format!(
                    " (worker_connections × workers = {c}; each proxied socket uses two)"
                ))
                .unwrap_or_default(),
            e.generator_cpu
                .filter(|c| *c >= GENERATOR_BOUND_PCT)
                .map(|c| format!("; the generator was busy too ({c:.0} % of its CPU, p90)"))
                .unwrap_or_default()
        ),
        generator_bound: false,
    })
}

fn generator_bound(e: &Evidence) -> Option<Limiting> {
    let cpu = e.generator_cpu.filter(|c| *c >= GENERATOR_BOUND_PCT)?;
    Some(Limiting {
        resource: Resource::Generator,
        component: "the load generator's CPU".into(),
        services: vec!["generator".into()],
        share: cpu / 100.0,
        detail: format!(
            "the generator used {cpu:.0} % of its CPU (p90; bound {GENERATOR_BOUND_PCT:.0} %): the result is generator-bound, not a limit of the SUT — give the generator more CPU or more hosts"
        ),
        generator_bound: true,
    })
}

/// The SUT host's CPU saturated while no container was at its own limit: the host held them back. (A
/// container at its own limit explains itself: it got all it may use, however busy the host.)
fn saturated_host(e: &Evidence) -> Option<Limiting> {
    let h = e.saturated().filter(|_| e.at_limit().is_none())?;
    Some(Limiting {
        resource: Resource::Cpu,
        component: match &h.node {
            None => "the SUT host's CPU".into(),
            Some(n) => format!("swarm node {n}'s CPU"),
        },
        services: vec![h.node.clone().unwrap_or_else(|| "host".into())],
        share: h.share,
        detail: e.host_text(h),
        generator_bound: false,
    })
}

fn nothing_with_a_limit(e: &Evidence) -> Option<Limiting> {
    e.top().is_none().then(|| Limiting {
        detail: "no container's CPU, memory or connections were sampled with a limit to compare"
            .into(),
        ..Limiting::unknown()
    })
}

fn nothing_near_its_limit(e: &Evidence) -> Option<Limiting> {
    let top = e.top().filter(|t| t.share < NEAR_LIMIT)?;
    Some(Limiting {
        share: top.share,
        detail: format!(
            "no measured resource reached {:.0} % of its limit (highest: {} {} at {:.0} %{}): the failure is not a resource limit exectl sampled — see the level's reasons",
            NEAR_LIMIT * 100.0,
            top.service,
            top.what,
            top.share * 100.0,
            e.host
                .as_ref()
                .map(|h| format!(
                    "; {} CPU at {:.0} %",
                    h.node
                        .as_ref()
                        .map_or("the host's".to_string(), |n| format!("node {n}'s")),
                    h.share * 100.0
                ))
                .unwrap_or_default()
        ),
        ..Limiting::unknown()
    })
}

/// nginx's connections (two per proxied socket) at worker_connections × its workers.
fn nginx_at_worker_connections(e: &Evidence) -> Option<Limiting> {
    let top = e
        .at_limit()
        .filter(|t| t.resource == Resource::NginxConnections)?;
    Some(at_its_limit(e, top, "nginx worker_connections".into()))
}

/// A container's CPU (its quota, the host's CPUs or its app's threads), memory or open files at its
/// limit; the app instances are named together ("app instances' CPU").
fn container_at_its_limit(e: &Evidence) -> Option<Limiting> {
    let top = e
        .at_limit()
        .filter(|t| t.resource != Resource::NginxConnections)?;
    let who = match top.service.as_str() {
        "app" => "the app's".to_string(),
        s if group(s) == "app" => "app instances'".to_string(),
        s => format!("{s}'s"),
    };
    Some(at_its_limit(e, top, format!("{who} {}", top.what)))
}

/// `top` named as `component`, with every service of its group at the same limit, and the host beside
/// it when saturated too.
fn at_its_limit(e: &Evidence, top: &Candidate, component: String) -> Limiting {
    let mut services: Vec<String> = e
        .candidates
        .iter()
        .filter(|c| {
            c.resource == top.resource
                && c.share >= NEAR_LIMIT
                && group(&c.service) == group(&top.service)
        })
        .map(|c| c.service.clone())
        .collect();
    services.sort();
    Limiting {
        resource: top.resource,
        detail: format!(
            "{} at {:.0} % of {} (p90 over the level){}",
            services.join(", "),
            top.share * 100.0,
            top.limit,
            e.saturated()
                .map(|h| format!("; the SUT host was saturated too: {}", e.host_text(h)))
                .unwrap_or_default()
        ),
        component,
        services,
        share: top.share,
        generator_bound: false,
    }
}

/// One candidate: a service's resource at some share of its limit, p90 over the level.
struct Candidate {
    resource: Resource,
    service: String,
    share: f64,
    what: String,
    /// The limit it is a share of, in words ("its quota, 0.5 CPU", "its nofile", …).
    limit: String,
}

/// What a container is measured against, sample by sample.
struct Measure {
    resource: Resource,
    /// "CPU", "memory", "open files": how the component is named.
    what: &'static str,
    /// The limit, in words, from the container's first sample of the level.
    limit: fn(&Known, &ContainerSample) -> String,
    /// One sample's use as a share of the limit (1.0 = at it).
    share: fn(&Known, &ContainerSample) -> Option<f64>,
}

/// Each container's CPU on the bench's one scale, its memory and its open files, in this order.
const MEASURES: [Measure; 3] = [
    Measure {
        resource: Resource::Cpu,
        what: "CPU",
        limit: |k, c| format!("the CPU it can use ({})", k.cpu.reason(c)),
        share: |k, c| k.cpu.share(c),
    },
    Measure {
        resource: Resource::Memory,
        what: "memory",
        limit: |_, _| "its memory limit".into(),
        share: |_, c| Some(c.rss_bytes? as f64 / c.mem_limit_bytes? as f64),
    },
    Measure {
        resource: Resource::OpenFiles,
        what: "open files",
        limit: |_, _| "its nofile".into(),
        share: |_, c| c.open_files_share(),
    },
];

/// The 90th percentile of `values` (None when empty): high enough to see a saturated level, low enough
/// that one spike does not decide it.
fn p90(mut values: Vec<f64>) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let i = ((values.len() as f64 * 0.9).ceil() as usize).clamp(1, values.len()) - 1;
    Some(values[i])
}

/// Each container's `MEASURES`, service by service.
fn containers(during: &[&Sample], known: &Known) -> Vec<Candidate> {
    let services: std::collections::BTreeSet<&str> = during
        .iter()
        .flat_map(|s| s.containers.iter().map(|c| c.service.as_str()))
        .collect();
    let mut out = Vec::new();
    for service in services {
        let Some(first) = during.iter().find_map(|s| s.container(service)) else {
            continue;
        };
        for m in &MEASURES {
            let share = p90(during
                .iter()
                .filter_map(|s| (m.share)(known, s.container(service)?))
                .collect());
            if let Some(share) = share {
                out.push(Candidate {
                    resource: m.resource,
                    service: service.into(),
                    share,
                    what: m.what.into(),
                    limit: (m.limit)(known, first),
                });
            }
        }
    }
    out
}

/// Each proxied WebSocket holds two of nginx's connections: the client's and the upstream's.
fn nginx_connections(during: &[&Sample], known: &Known) -> Option<Candidate> {
    let cap = known.nginx_capacity.filter(|c| *c > 0)?;
    let share = p90(during
        .iter()
        .filter_map(|s| Some(2.0 * s.nginx_active? as f64 / cap as f64))
        .collect())?;
    Some(Candidate {
        resource: Resource::NginxConnections,
        service: "nginx".into(),
        share,
        what: "worker_connections".into(),
        limit: "worker_connections × workers".into(),
    })
}

/// The SUT host's CPU. By the host's own count (/proc/stat: the kernel's network work and other tenants
/// included) where the samples have it; else what its containers (and, on a local target, the
/// generator) used of its CPUs, or its load average against them, whichever is higher. The load
/// average alone never decides where the count was read: it lags a minute behind, and counts tasks
/// waiting on anything, not CPUs busy. On a swarm each node is judged on its own (its count, its
/// containers), and the busiest node is the one named.
struct HostCpu {
    share: f64,
    busy_cpus: f64,
    /// Of `busy_cpus`, the kernel's and the hypervisor's (p90 each), by the host's own count.
    kernel_cpus: Option<f64>,
    steal_cpus: Option<f64>,
    generator_cpus: f64,
    load: Option<f64>,
    /// The swarm node (None: the one host of a single-engine stack).
    node: Option<String>,
}

/// One host at one sample: its own count and load, and its containers' CPU (CPUs).
struct HostView {
    load: Option<f64>,
    counted: Option<super::timeline::HostCpu>,
    containers: f64,
    generator: f64,
}

fn host_cpu(during: &[&Sample], known: &Known) -> Option<HostCpu> {
    let host = known.cpu.host_cpus.filter(|h| *h > 0.0)?;
    let generator = |s: &Sample| match known.generator_local {
        true => s.generator.cpu_pct.unwrap_or(0.0) / 100.0 * known.generator_cpus,
        false => 0.0,
    };
    let containers = |s: &Sample, node: Option<&str>| {
        s.containers
            .iter()
            .filter(|c| node.is_none() || c.node.as_deref() == node)
            .filter_map(|c| c.cpu_pct)
            .sum::<f64>()
            / 100.0
    };
    let mut nodes: Vec<&str> = during
        .iter()
        .flat_map(|s| s.nodes.iter().map(|n| n.node.as_str()))
        .collect();
    nodes.sort_unstable();
    nodes.dedup();
    if nodes.is_empty() {
        let views: Vec<HostView> = during
            .iter()
            .map(|s| HostView {
                load: s.load_avg,
                counted: s.host_cpu,
                containers: containers(s, None),
                generator: generator(s),
            })
            .collect();
        return one_host(&views, host, None);
    }
    nodes
        .into_iter()
        .filter_map(|node| {
            let views: Vec<HostView> = during
                .iter()
                .map(|s| {
                    let n = s.nodes.iter().find(|n| n.node == node);
                    HostView {
                        load: n.and_then(|n| n.load_avg),
                        counted: n.and_then(|n| n.host_cpu),
                        containers: containers(s, Some(node)),
                        generator: 0.0,
                    }
                })
                .collect();
            one_host(&views, host, Some(node.to_string()))
        })
        .max_by(|a, b| a.share.total_cmp(&b.share))
}

/// One host's CPU over the level's samples, of its `host` CPUs.
fn one_host(views: &[HostView], host: f64, node: Option<String>) -> Option<HostCpu> {
    let load = p90(views.iter().filter_map(|v| v.load).collect());
    let generator_cpus = p90(views.iter().map(|v| v.generator).collect()).unwrap_or(0.0);
    let counted: Vec<_> = views.iter().filter_map(|v| v.counted).collect();
    if !counted.is_empty() {
        let of = |f: fn(&super::timeline::HostCpu) -> f64| {
            p90(counted.iter().map(|h| f(h) / 100.0 * host).collect())
        };
        let busy_cpus = of(|h| h.busy_pct)?;
        return Some(HostCpu {
            share: busy_cpus / host,
            busy_cpus,
            kernel_cpus: of(|h| h.kernel_pct),
            steal_cpus: of(|h| h.steal_pct),
            generator_cpus,
            load,
            node,
        });
    }
    let busy = |v: &HostView| v.containers + v.generator;
    let share = p90(views
        .iter()
        .map(|v| (busy(v) / host).max(v.load.unwrap_or(0.0) / host))
        .collect())?;
    Some(HostCpu {
        share,
        busy_cpus: p90(views.iter().map(busy).collect())?,
        kernel_cpus: None,
        steal_cpus: None,
        generator_cpus,
        load,
        node,
    })
}

/// app-1, app-2 → "app"; anything else is its own group.
fn group(service: &str) -> &str {
    match service.strip_prefix("app-") {
        Some(n) if n.chars().all(|c| c.is_ascii_digit()) => "app",
        _ if service == "app" => "app",
        _ => service,
    }
}

#[cfg(test)]
#[path = "limiting_tests.rs"]
mod tests;
