//! What happened to the stack during a level besides its load: a container that exited, restarted or was
//! paused, or the docker-proxy of a published port that exited or reached its nofile. Any of them fails
//! the level — it measured a broken stack, not a capacity — and is named before any resource
//! (`limiting`'s first rule). Pure: the samples in, the words out.

use super::timeline::{ContainerState, LevelSpan, ProxySample, Sample};

/// docker-proxy is at its nofile from this share of it: the accept that reaches it stops the proxy.
pub const PROXY_NEAR_NOFILE: f64 = 0.95;

/// What broke.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A container exited, restarted or was paused.
    Container,
    /// The engine's userland proxy of a published port exited or reached its nofile.
    DockerProxy,
}

/// One incident of a level, at the first sample that showed it.
#[derive(Debug, Clone, PartialEq)]
pub struct Incident {
    pub t_ms: u64,
    /// The service ("app-2"), or "docker-proxy".
    pub service: String,
    /// "app-2 exited (exit code 137)": the component as the verdict names it.
    pub what: String,
    pub kind: Kind,
    /// What it means, and the fix when there is one.
    pub more: String,
    /// A container's exits during the level, and whether it ran again after them (0 and false for a
    /// pause or a proxy): what tells a planned restart (`--fault`) from an incident.
    pub exits: u64,
    pub running_again: bool,
}

impl Incident {
    /// "app-2 exited (exit code 137) 4 s into the level: the level measured …".
    pub fn detail(&self, span: &LevelSpan) -> String {
        format!(
            "{} {}: {}",
            self.what,
            into_level(span, self.t_ms),
            self.more
        )
    }
}

/// The level's reasons to fail, one per incident, in the order they happened.
pub fn reasons(span: &LevelSpan, samples: &[Sample]) -> Vec<String> {
    reasons_besides(span, samples, &[])
}

/// The level's reasons to fail besides the restarts it planned (`--fault`: each service once per
/// time it is named in `restarted`): a planned container that exited no more often than it was
/// restarted, and runs again, is the fault itself; one that exited more, or stayed down, or paused,
/// is still an incident.
pub fn reasons_besides(span: &LevelSpan, samples: &[Sample], restarted: &[String]) -> Vec<String> {
    besides(span, samples, restarted)
        .iter()
        .map(|i| format!("{}, {}", i.what, into_level(span, i.t_ms)))
        .collect()
}

/// The level's first incident (None: nothing happened).
pub fn first(span: &LevelSpan, samples: &[Sample]) -> Option<Incident> {
    first_besides(span, samples, &[])
}

/// The level's first incident besides its planned restarts (`reasons_besides`).
pub fn first_besides(
    span: &LevelSpan,
    samples: &[Sample],
    restarted: &[String],
) -> Option<Incident> {
    besides(span, samples, restarted).into_iter().next()
}

fn besides(span: &LevelSpan, samples: &[Sample], restarted: &[String]) -> Vec<Incident> {
    incidents(span, samples)
        .into_iter()
        .filter(|i| {
            let planned = restarted.iter().filter(|s| **s == i.service).count() as u64;
            !(i.kind == Kind::Container && i.running_again && i.exits >= 1 && i.exits <= planned)
        })
        .collect()
}

/// One line for the progress: every container not running and every proxy gone in `sample` (None: all
/// well).
pub fn progress(sample: &Sample) -> Option<String> {
    let mut out: Vec<String> = sample
        .containers
        .iter()
        .filter_map(|c| match c.state? {
            ContainerState::Running => None,
            ContainerState::Exited | ContainerState::Restarting => Some(format!(
                "{} {}{}",
                c.service,
                c.state?.name(),
                c.exit_code
                    .map(|e| format!(" (exit code {e})"))
                    .unwrap_or_default()
            )),
            s => Some(format!("{} {}", c.service, s.name())),
        })
        .collect();
    out.extend(
        sample
            .proxies
            .iter()
            .filter(|p| !p.alive)
            .map(|p| format!("{} exited", proxy_name(p.port))),
    );
    (!out.is_empty()).then(|| out.join(", "))
}

fn into_level(span: &LevelSpan, t_ms: u64) -> String {
    format!(
        "{:.0} s into the level",
        t_ms.saturating_sub(span.start_ms) as f64 / 1000.0
    )
}

pub fn proxy_name(port: u16) -> String {
    format!("docker-proxy (the engine's userland proxy of port {port})")
}

/// The samples of the level and its leak check, and the one before them (what the counters rose from).
fn window<'a>(span: &LevelSpan, samples: &'a [Sample]) -> (Option<&'a Sample>, Vec<&'a Sample>) {
    let end = span.settled_ms.max(span.end_ms);
    let before = samples.iter().rfind(|s| s.t_ms < span.start_ms);
    let during = samples
        .iter()
        .filter(|s| s.t_ms >= span.start_ms && s.t_ms <= end)
        .collect();
    (before, during)
}

fn incidents(span: &LevelSpan, samples: &[Sample]) -> Vec<Incident> {
    let (before, during) = window(span, samples);
    let mut services: Vec<&str> = Vec::new();
    for s in &during {
        for c in &s.containers {
            if !services.contains(&c.service.as_str()) {
                services.push(&c.service);
            }
        }
    }
    let mut out: Vec<Incident> = services
        .iter()
        .flat_map(|service| container(service, before, &during))
        .collect();
    let mut ports: Vec<u16> = during
        .iter()
        .flat_map(|s| s.proxies.iter().map(|p| p.port))
        .collect();
    ports.sort_unstable();
    ports.dedup();
    out.extend(ports.into_iter().filter_map(|p| proxy(p, &during)));
    out.sort_by_key(|i| i.t_ms);
    out
}

/// A container's exits (with their restart) and pauses during the level.
fn container(service: &str, before: Option<&Sample>, during: &[&Sample]) -> Vec<Incident> {
    let series: Vec<(u64, &super::timeline::ContainerSample)> = during
        .iter()
        .filter_map(|s| Some((s.t_ms, s.container(service)?)))
        .collect();
    // The counters run from the bench's start: 0 when no sample came before the level.
    let base = |f: fn(&super::timeline::ContainerSample) -> Option<u64>| {
        before
            .and_then(|b| b.container(service))
            .and_then(f)
            .unwrap_or(0)
    };
    let (exits0, pauses0) = (base(|c| c.exits), base(|c| c.pauses));
    let mut out = Vec::new();
    let down = |c: &super::timeline::ContainerSample| {
        matches!(
            c.state,
            Some(ContainerState::Exited | ContainerState::Restarting | ContainerState::Gone)
        )
    };
    if let Some(i) = series
        .iter()
        .position(|(_, c)| down(c) || c.exits.unwrap_or(0) > exits0)
    {
        let (t_ms, c) = series[i];
        let exits = series
            .iter()
            .filter_map(|(_, c)| c.exits)
            .max()
            .unwrap_or(0)
            .saturating_sub(exits0);
        let code = c
            .exit_code
            .map(|e| format!(" (exit code {e})"))
            .unwrap_or_default();
        let times = if exits > 1 {
            format!(" {exits} times")
        } else {
            String::new()
        };
        let after = &series[i..];
        let running_again = after
            .iter()
            .any(|(_, c)| c.state == Some(ContainerState::Running))
            && after
                .last()
                .is_some_and(|(_, c)| c.state == Some(ContainerState::Running));
        let what = if after
            .iter()
            .any(|(_, c)| c.state == Some(ContainerState::Gone))
        {
            format!("{service} was removed")
        } else if after
            .iter()
            .any(|(_, c)| c.state == Some(ContainerState::Running))
        {
            format!("{service} exited{times}{code} and restarted")
        } else {
            format!("{service} exited{times}{code}")
        };
        out.push(Incident {
            t_ms,
            service: service.to_string(),
            what,
            kind: Kind::Container,
            more: "the level measured the stack with it down, not its capacity".into(),
            exits,
            running_again,
        });
    }
    if let Some((t_ms, _)) = series
        .iter()
        .find(|(_, c)| c.state == Some(ContainerState::Paused) || c.pauses.unwrap_or(0) > pauses0)
    {
        out.push(Incident {
            t_ms: *t_ms,
            service: service.to_string(),
            what: format!("{service} paused"),
            kind: Kind::Container,
            more: "a paused container keeps its sockets open and answers nothing: the level measured a frozen instance".into(),
            exits: 0,
            running_again: false,
        });
    }
    out
}

use super::super::doctor::{PROXY_FILES_PER_CONNECTION as PER, PROXY_FIX};

/// A port's docker-proxy that exited or reached its nofile during the level.
fn proxy(port: u16, during: &[&Sample]) -> Option<Incident> {
    let of_port = |s: &'_ Sample| -> Vec<ProxySample> {
        s.proxies
            .iter()
            .filter(|p| p.port == port)
            .cloned()
            .collect()
    };
    let files = |p: &ProxySample| match (p.open_files, p.nofile) {
        (Some(o), Some(n)) => format!("{o} of its {n} open files"),
        _ => "its open files unread".into(),
    };
    // Each listening address (0.0.0.0, ::) has its own proxy: the last sample of each alive.
    let mut last_alive: Vec<ProxySample> = Vec::new();
    for s in during {
        for p in of_port(s) {
            if !p.alive {
                let seen = last_alive
                    .iter()
                    .find(|l| l.host_ip == p.host_ip)
                    .map(|l| format!(" (the sample before: {})", files(l)))
                    .unwrap_or_default();
                return Some(Incident {
                    t_ms: s.t_ms,
                    service: "docker-proxy".into(),
                    what: format!("{} exited", proxy_name(port)),
                    kind: Kind::DockerProxy,
                    more: format!(
                        "the docker-proxy of {}:{port} is gone{seen}: it holds {PER} descriptors per proxied connection (its 2 sockets and a pipe pair each way) and stops for good when an accept fails at its nofile, and the port refuses connections until its container restarts; fix: {PROXY_FIX}",
                        p.host_ip
                    ),
                    exits: 0,
                    running_again: false,
                });
            }
            last_alive.retain(|l| l.host_ip != p.host_ip);
            last_alive.push(p);
        }
    }
    for s in during {
        for p in of_port(s) {
            let share = match (p.open_files, p.nofile.filter(|n| *n > 0)) {
                (Some(o), Some(n)) => o as f64 / n as f64,
                _ => continue,
            };
            if share >= PROXY_NEAR_NOFILE {
                return Some(Incident {
                    t_ms: s.t_ms,
                    service: "docker-proxy".into(),
                    what: format!("{} at its nofile", proxy_name(port)),
                    kind: Kind::DockerProxy,
                    more: format!(
                        "the docker-proxy of {}:{port} held {} ({PER} per proxied connection): at its nofile an accept fails and it stops for good; fix: {PROXY_FIX}",
                        p.host_ip,
                        files(&p)
                    ),
                    exits: 0,
                    running_again: false,
                });
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::super::timeline::{ContainerSample, ProxySample};
    use super::*;

    const SPAN: LevelSpan = LevelSpan {
        users: 100,
        start_ms: 1000,
        hold_ms: 3000,
        hold_end_ms: 8000,
        end_ms: 9000,
        settled_ms: 11_000,
    };

    fn app(state: ContainerState, exits: u64, pauses: u64, code: Option<i64>) -> ContainerSample {
        ContainerSample {
            service: "app-2".into(),
            state: Some(state),
            exits: Some(exits),
            pauses: Some(pauses),
            exit_code: code,
            ..ContainerSample::default()
        }
    }

    fn at(t_ms: u64, c: ContainerSample) -> Sample {
        Sample {
            t_ms,
            containers: vec![
                ContainerSample {
                    service: "app-1".into(),
                    state: Some(ContainerState::Running),
                    exits: Some(0),
                    pauses: Some(0),
                    ..ContainerSample::default()
                },
                c,
            ],
            ..Sample::default()
        }
    }

    use ContainerState::*;

    #[test]
    fn a_killed_instance_is_named_exited_with_its_code_and_fails_first() {
        let s = vec![
            at(0, app(Running, 0, 0, None)),
            at(2000, app(Running, 0, 0, None)),
            at(5000, app(Exited, 1, 0, Some(137))),
            at(6000, app(Exited, 1, 0, Some(137))),
        ];
        assert_eq!(
            reasons(&SPAN, &s),
            ["app-2 exited (exit code 137), 4 s into the level"]
        );
        let i = first(&SPAN, &s).unwrap();
        assert_eq!(i.what, "app-2 exited (exit code 137)");
        assert_eq!((i.kind, i.service.as_str()), (Kind::Container, "app-2"));
        let detail = i.detail(&SPAN);
        assert!(detail.contains("4 s into the level"), "{detail}");
        // The same exit in an earlier level's window is not this level's... unless it is still down.
        let later = LevelSpan {
            start_ms: 20_000,
            end_ms: 25_000,
            settled_ms: 26_000,
            ..SPAN
        };
        assert!(reasons(&later, &s).is_empty());
        let mut still = s.clone();
        still.push(at(21_000, app(Exited, 1, 0, Some(137))));
        assert_eq!(
            reasons(&later, &still),
            ["app-2 exited (exit code 137), 1 s into the level"]
        );
    }

    #[test]
    fn an_exit_between_two_samples_counts_and_a_restart_is_said() {
        // A restart policy had it running again by the next sample: only the counter shows the exit.
        let s = vec![
            at(0, app(Running, 0, 0, None)),
            at(3000, app(Running, 1, 0, Some(1))),
            at(4000, app(Running, 1, 0, Some(1))),
        ];
        assert_eq!(
            reasons(&SPAN, &s),
            ["app-2 exited (exit code 1) and restarted, 2 s into the level"]
        );
        let s = vec![
            at(2000, app(Restarting, 1, 0, Some(2))),
            at(3000, app(Running, 3, 0, Some(2))),
        ];
        assert_eq!(
            reasons(&SPAN, &s),
            ["app-2 exited 3 times (exit code 2) and restarted, 1 s into the level"]
        );
        let s = vec![at(2000, app(Gone, 1, 0, Some(0)))];
        assert_eq!(
            reasons(&SPAN, &s),
            ["app-2 was removed, 1 s into the level"]
        );
    }

    #[test]
    fn a_planned_restart_is_no_incident_but_a_second_exit_or_staying_down_is() {
        let restarted = |exits_then: u64, last: ContainerState| {
            vec![
                at(0, app(Running, 0, 0, None)),
                at(3000, app(Running, 1, 0, Some(0))),
                at(5000, app(last, exits_then, 0, Some(0))),
            ]
        };
        let planned = ["app-2".to_string()];
        // Restarted once as planned, running again: the fault itself.
        assert!(reasons_besides(&SPAN, &restarted(1, Running), &planned).is_empty());
        // Unplanned, the same restart is an incident.
        assert_eq!(reasons(&SPAN, &restarted(1, Running)).len(), 1);
        // Another service restarted: still an incident.
        let other = ["app-1".to_string()];
        assert_eq!(
            reasons_besides(&SPAN, &restarted(1, Running), &other).len(),
            1
        );
        // Exited twice for one planned restart, or down at the end: an incident.
        assert_eq!(
            reasons_besides(&SPAN, &restarted(2, Running), &planned).len(),
            1
        );
        assert_eq!(
            reasons_besides(&SPAN, &restarted(1, Exited), &planned).len(),
            1
        );
        // Nor is it the limiting component.
        assert!(first_besides(&SPAN, &restarted(1, Running), &planned).is_none());
        assert!(first(&SPAN, &restarted(1, Running)).is_some());
        // A pause is never a planned restart.
        let paused = vec![
            at(1000, app(Running, 0, 0, None)),
            at(4000, app(Paused, 0, 1, None)),
        ];
        assert_eq!(reasons_besides(&SPAN, &paused, &planned).len(), 1);
    }

    #[test]
    fn a_paused_instance_is_named_paused() {
        let s = vec![
            at(1000, app(Running, 0, 0, None)),
            at(4000, app(Paused, 0, 1, None)),
            at(7000, app(Running, 0, 1, None)),
        ];
        assert_eq!(reasons(&SPAN, &s), ["app-2 paused, 3 s into the level"]);
        assert_eq!(first(&SPAN, &s).unwrap().what, "app-2 paused");
        assert_eq!(progress(&s[1]).as_deref(), Some("app-2 paused"));
        assert_eq!(progress(&s[2]), None);
        // Paused and back between two samples: the counter says so.
        let s = vec![
            at(1000, app(Running, 0, 0, None)),
            at(2000, app(Running, 0, 1, None)),
        ];
        assert_eq!(reasons(&SPAN, &s), ["app-2 paused, 1 s into the level"]);
    }

    #[test]
    fn old_timelines_and_healthy_levels_have_no_incident() {
        let old = Sample {
            t_ms: 2000,
            containers: vec![ContainerSample {
                service: "app-1".into(),
                ..ContainerSample::default()
            }],
            ..Sample::default()
        };
        let old = [old];
        assert!(reasons(&SPAN, &old).is_empty());
        assert!(first(&SPAN, &old).is_none());
        let fine = vec![at(2000, app(Running, 0, 0, None))];
        assert!(reasons(&SPAN, &fine).is_empty());
    }

    fn proxies(t_ms: u64, v4: Option<(u64, bool)>) -> Sample {
        let mut s = at(t_ms, app(Running, 0, 0, None));
        s.proxies = [("0.0.0.0", v4), ("::", Some((9, true)))]
            .into_iter()
            .filter_map(|(ip, p)| {
                let (open, alive) = p?;
                Some(ProxySample {
                    port: 18471,
                    host_ip: ip.into(),
                    alive,
                    open_files: alive.then_some(open),
                    nofile: Some(20_000),
                })
            })
            .collect();
        s
    }

    #[test]
    fn docker_proxy_dead_or_at_its_nofile_is_named_with_its_port() {
        let s = vec![
            proxies(2000, Some((9_000, true))),
            proxies(3000, Some((19_997, true))),
            proxies(4000, Some((0, false))),
        ];
        let l = first(&SPAN, &s).unwrap();
        assert_eq!(
            l.what,
            "docker-proxy (the engine's userland proxy of port 18471) exited"
        );
        assert_eq!(l.kind, Kind::DockerProxy);
        let detail = l.detail(&SPAN);
        assert!(
            detail.contains("19997 of its 20000 open files") && detail.contains("userland-proxy"),
            "{detail}"
        );
        assert_eq!(
            progress(&s[2]).as_deref(),
            Some("docker-proxy (the engine's userland proxy of port 18471) exited")
        );
        let near = vec![proxies(2000, Some((19_500, true)))];
        assert_eq!(
            reasons(&SPAN, &near),
            ["docker-proxy (the engine's userland proxy of port 18471) at its nofile, 1 s into the level"]
        );
        assert!(reasons(&SPAN, &[proxies(2000, Some((4_000, true)))]).is_empty());
    }
}
