//! What gave out first: during a failed level, the measured resource nearest its limit — an app
//! instance's CPU at its quota, memory at its limit, nginx's connections at worker_connections ×
//! workers, open files at nofile, a database's CPU — or the generator itself, in which case the result is
//! generator-bound and says so instead of blaming the SUT. Only what was sampled can be named.

use serde::{Deserialize, Serialize};

use super::timeline::{LevelSpan, Sample};

/// The generator is the limit when its CPU stays above this share of what it may use.
pub const GENERATOR_BOUND_PCT: f64 = 85.0;
/// A resource is "at its limit" from this share of it.
pub const NEAR_LIMIT: f64 = 0.8;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Resource {
    Cpu,
    Memory,
    NginxConnections,
    OpenFiles,
    Generator,
    /// A container exited, restarted or was paused during the level (`incidents`).
    Incident,
    /// The engine's userland proxy of a published port exited or reached its nofile (`incidents`).
    DockerProxy,
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
    /// The SUT's CPUs, to judge containers without a CPU limit.
    pub host_cpus: Option<f64>,
}

/// One candidate: a service's resource at some share of its limit.
struct Candidate {
    resource: Resource,
    service: String,
    share: f64,
    what: String,
}

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

pub fn limiting_component(span: &LevelSpan, samples: &[Sample], known: &Known) -> Limiting {
    if let Some(l) = super::incidents::limiting(span, samples) {
        return l;
    }
    let during: Vec<&Sample> = span.during(samples).collect();
    if during.is_empty() {
        return Limiting::unknown();
    }
    let generator_cpu = p90(during.iter().filter_map(|s| s.generator.cpu_pct).collect());
    // nginx saying it ran out of worker_connections is the SUT's own word: a busy generator opens fewer
    // connections, never more, so it cannot be what made nginx run out. It comes before generator-bound.
    if known.nginx_not_enough > 0 {
        return Limiting {
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
                generator_cpu
                    .filter(|c| *c >= GENERATOR_BOUND_PCT)
                    .map(|c| format!("; the generator was busy too ({c:.0} % of its CPU, p90)"))
                    .unwrap_or_default()
            ),
            generator_bound: false,
        };
    }
    if let Some(cpu) = generator_cpu {
        if cpu >= GENERATOR_BOUND_PCT {
            return Limiting {
                resource: Resource::Generator,
                component: "the load generator's CPU".into(),
                services: vec!["generator".into()],
                share: cpu / 100.0,
                detail: format!(
                    "the generator used {cpu:.0} % of its CPU (p90; bound {GENERATOR_BOUND_PCT:.0} %): the result is generator-bound, not a limit of the SUT — give the generator more CPU or more hosts"
                ),
                generator_bound: true,
            };
        }
    }
    let mut candidates = Vec::new();
    let services: std::collections::BTreeSet<&str> = during
        .iter()
        .flat_map(|s| s.containers.iter().map(|c| c.service.as_str()))
        .collect();
    for service in services {
        let series = |f: &dyn Fn(&super::timeline::ContainerSample) -> Option<f64>| {
            p90(during
                .iter()
                .filter_map(|s| s.container(service).and_then(f))
                .collect())
        };
        let cpu = series(&|c| {
            let limit = c.cpu_limit.or(known.host_cpus)?;
            Some(c.cpu_pct? / (limit * 100.0))
        });
        if let Some(share) = cpu {
            candidates.push(Candidate {
                resource: Resource::Cpu,
                service: service.into(),
                share,
                what: "CPU".into(),
            });
        }
        let mem = series(&|c| Some(c.rss_bytes? as f64 / c.mem_limit_bytes? as f64));
        if let Some(share) = mem {
            candidates.push(Candidate {
                resource: Resource::Memory,
                service: service.into(),
                share,
                what: "memory".into(),
            });
        }
        let files = series(&|c| c.open_files_share());
        if let Some(share) = files {
            candidates.push(Candidate {
                resource: Resource::OpenFiles,
                service: service.into(),
                share,
                what: "open files".into(),
            });
        }
    }
    if let Some(cap) = known.nginx_capacity.filter(|c| *c > 0) {
        // Each proxied WebSocket holds two of nginx's connections: the client's and the upstream's.
        if let Some(share) = p90(during
            .iter()
            .filter_map(|s| Some(2.0 * s.nginx_active? as f64 / cap as f64))
            .collect())
        {
            candidates.push(Candidate {
                resource: Resource::NginxConnections,
                service: "nginx".into(),
                share,
                what: "worker_connections".into(),
            });
        }
    }
    let Some(top) = candidates.iter().max_by(|a, b| a.share.total_cmp(&b.share)) else {
        return Limiting {
            detail:
                "no container's CPU, memory or connections were sampled with a limit to compare"
                    .into(),
            ..Limiting::unknown()
        };
    };
    if top.share < NEAR_LIMIT {
        return Limiting {
            share: top.share,
            detail: format!(
                "no measured resource reached {:.0} % of its limit (highest: {} {} at {:.0} %): the failure is not a resource limit exectl sampled — see the level's reasons",
                NEAR_LIMIT * 100.0,
                top.service,
                top.what,
                top.share * 100.0
            ),
            ..Limiting::unknown()
        };
    }
    // The app instances share one limit kind: name them together when they are all near it.
    let mut services: Vec<String> = candidates
        .iter()
        .filter(|c| {
            c.resource == top.resource
                && c.share >= NEAR_LIMIT
                && group(&c.service) == group(&top.service)
        })
        .map(|c| c.service.clone())
        .collect();
    services.sort();
    let who = if group(&top.service) == "app" {
        "app instances'".to_string()
    } else {
        format!("{}'s", top.service)
    };
    let component = match top.resource {
        Resource::NginxConnections => "nginx worker_connections".to_string(),
        _ => format!("{who} {}", top.what),
    };
    let limit_word = match top.resource {
        Resource::Cpu => "CPU quota",
        Resource::Memory => "memory limit",
        Resource::OpenFiles => "nofile",
        _ => "limit",
    };
    Limiting {
        resource: top.resource,
        detail: format!(
            "{} at {:.0} % of {} (p90 over the level)",
            services.join(", "),
            top.share * 100.0,
            if top.resource == Resource::NginxConnections {
                "worker_connections × workers".to_string()
            } else {
                format!("its {limit_word}")
            }
        ),
        component,
        services,
        share: top.share,
        generator_bound: false,
    }
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
mod tests {
    use super::super::timeline::{ContainerSample, GeneratorSample};
    use super::*;

    fn container(
        service: &str,
        cpu_pct: f64,
        cpu_limit: f64,
        rss_mib: u64,
        limit_mib: u64,
    ) -> ContainerSample {
        ContainerSample {
            service: service.into(),
            cpu_pct: Some(cpu_pct),
            cpu_limit: Some(cpu_limit),
            rss_bytes: Some(rss_mib << 20),
            mem_limit_bytes: Some(limit_mib << 20),
            restarts: Some(0),
            ..ContainerSample::default()
        }
    }

    fn samples(f: impl Fn(u64) -> (Vec<ContainerSample>, Option<u64>, f64)) -> Vec<Sample> {
        (0..10)
            .map(|t| {
                let (containers, nginx_active, gen_cpu) = f(t);
                Sample {
                    t_ms: t * 1000,
                    level: Some(500),
                    containers,
                    nginx_active,
                    generator: GeneratorSample {
                        cpu_pct: Some(gen_cpu),
                        ..GeneratorSample::default()
                    },
                    ..Sample::default()
                }
            })
            .collect()
    }

    const SPAN: LevelSpan = LevelSpan {
        users: 500,
        start_ms: 0,
        hold_ms: 2000,
        hold_end_ms: 8000,
        end_ms: 9000,
        settled_ms: 10_000,
    };

    #[test]
    fn instances_at_their_cpu_quota_are_named_together() {
        let s = samples(|_| {
            (
                vec![
                    container("app-1", 49.0, 0.5, 40, 512),
                    container("app-2", 48.0, 0.5, 40, 512),
                    container("postgres", 5.0, 2.0, 80, 1024),
                ],
                Some(100),
                30.0,
            )
        });
        let l = limiting_component(
            &SPAN,
            &s,
            &Known {
                nginx_capacity: Some(2048),
                ..Known::default()
            },
        );
        assert_eq!(l.resource, Resource::Cpu);
        assert_eq!(l.component, "app instances' CPU");
        assert_eq!(l.services, vec!["app-1", "app-2"]);
        assert!(
            l.detail.contains("at 98 % of its CPU quota"),
            "{}",
            l.detail
        );
        assert!(!l.generator_bound);
    }

    #[test]
    fn nginx_is_named_by_its_log_or_its_connections() {
        let s = samples(|_| {
            (
                vec![
                    container("app-1", 10.0, 1.0, 40, 512),
                    container("nginx", 20.0, 1.0, 10, 256),
                ],
                Some(1000),
                30.0,
            )
        });
        let by_log = limiting_component(
            &SPAN,
            &s,
            &Known {
                nginx_capacity: Some(2048),
                nginx_not_enough: 12,
                ..Known::default()
            },
        );
        assert_eq!(
            (by_log.resource, by_log.component.as_str()),
            (Resource::NginxConnections, "nginx worker_connections")
        );
        assert!(by_log.detail.contains("12 times"), "{}", by_log.detail);
        // 1000 active sockets take 2000 of 2048 connections.
        let by_count = limiting_component(
            &SPAN,
            &s,
            &Known {
                nginx_capacity: Some(2048),
                ..Known::default()
            },
        );
        assert_eq!(
            by_count.resource,
            Resource::NginxConnections,
            "{}",
            by_count.detail
        );
    }

    #[test]
    fn a_busy_generator_makes_the_level_generator_bound() {
        let s = samples(|_| (vec![container("app-1", 99.0, 1.0, 40, 512)], None, 97.0));
        let l = limiting_component(&SPAN, &s, &Known::default());
        assert!(
            l.generator_bound && l.resource == Resource::Generator,
            "{l:?}"
        );
        assert!(l.detail.contains("generator-bound"), "{}", l.detail);
    }

    #[test]
    fn memory_near_its_limit_and_nothing_near_any() {
        let s = samples(|_| (vec![container("app-1", 10.0, 1.0, 500, 512)], None, 20.0));
        let l = limiting_component(&SPAN, &s, &Known::default());
        assert_eq!(
            (l.resource, l.component.as_str()),
            (Resource::Memory, "app instances' memory")
        );
        let idle = samples(|_| (vec![container("app-1", 10.0, 1.0, 40, 512)], None, 20.0));
        let l = limiting_component(&SPAN, &idle, &Known::default());
        assert_eq!(l.resource, Resource::Unknown);
        assert!(
            l.detail.contains("highest: app-1 CPU at 10 %"),
            "{}",
            l.detail
        );
        // One spike of one sample does not decide it (p90 of 10 samples is the 9th).
        let spike = samples(|t| {
            (
                vec![container(
                    "app-1",
                    if t == 3 { 100.0 } else { 10.0 },
                    1.0,
                    40,
                    512,
                )],
                None,
                20.0,
            )
        });
        assert_eq!(
            limiting_component(&SPAN, &spike, &Known::default()).resource,
            Resource::Unknown
        );
        assert_eq!(
            limiting_component(&SPAN, &[], &Known::default()).resource,
            Resource::Unknown
        );
    }

    #[test]
    fn nginx_out_of_connections_is_named_even_with_a_busy_generator() {
        let s = samples(|_| {
            (
                vec![container("nginx", 20.0, 1.0, 10, 256)],
                Some(900),
                97.0,
            )
        });
        let known = Known {
            nginx_capacity: Some(2048),
            nginx_not_enough: 40,
            ..Known::default()
        };
        let l = limiting_component(&SPAN, &s, &known);
        assert_eq!(l.resource, Resource::NginxConnections, "{l:?}");
        assert!(!l.generator_bound, "{l:?}");
        assert!(l.detail.contains("40 times"), "{}", l.detail);
        assert!(
            l.detail.contains("generator was busy too (97 %"),
            "{}",
            l.detail
        );
        // Without nginx's word, the same busy generator makes the level generator-bound.
        let l = limiting_component(
            &SPAN,
            &s,
            &Known {
                nginx_not_enough: 0,
                ..known
            },
        );
        assert!(l.generator_bound, "{l:?}");
    }
}
