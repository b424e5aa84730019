//! The bench's timeline: the SUT's samples and the generator's, on one clock (ms since the bench began),
//! and each level's span on it. Written as JSON Lines beside results.json; the report draws it.

use serde::{Deserialize, Serialize};

/// A container's state as the engine's events left it when it was sampled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ContainerState {
    Running,
    Paused,
    Exited,
    /// Exited, and the engine will start it again (its restart policy).
    Restarting,
    /// Removed from the engine.
    Gone,
}

impl ContainerState {
    pub fn name(self) -> &'static str {
        match self {
            ContainerState::Running => "running",
            ContainerState::Paused => "paused",
            ContainerState::Exited => "exited",
            ContainerState::Restarting => "restarting",
            ContainerState::Gone => "gone",
        }
    }
}

/// One container at one instant.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ContainerSample {
    /// The compose service (app-1, nginx, postgres, …).
    pub service: String,
    /// The swarm node that runs it (None on one engine).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    /// CPU used since the previous sample, percent of one CPU (200 = two CPUs busy).
    pub cpu_pct: Option<f64>,
    /// The container's CPU limit in CPUs (None: unlimited).
    pub cpu_limit: Option<f64>,
    pub rss_bytes: Option<u64>,
    pub mem_limit_bytes: Option<u64>,
    pub restarts: Option<u64>,
    /// Open files of the container's process holding the most, and that process's limit (nofile),
    /// when read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_files: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nofile: Option<u64>,
    /// Its state (from the engine's event stream), None in timelines older than it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<ContainerState>,
    /// The exit code of its last exit, kept after a restart.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i64>,
    /// Exits (and pauses) seen since the bench began: a rise between two samples is an exit even when a
    /// restart policy had it running again by the second.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exits: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pauses: Option<u64>,
}

/// One docker-proxy process: the engine's userland proxy of a published port (0.0.0.0 and :: have one
/// each), which carries the connections made to that port on the host's loopback.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ProxySample {
    pub port: u16,
    /// The address it listens on ("0.0.0.0", "::").
    pub host_ip: String,
    /// It stops for good on an error accepting a connection (EMFILE at its nofile): then false.
    pub alive: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_files: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nofile: Option<u64>,
}

impl ContainerSample {
    /// Open files as a share of nofile (1.0: at it), when both were read.
    pub fn open_files_share(&self) -> Option<f64> {
        Some(self.open_files? as f64 / self.nofile.filter(|n| *n > 0)? as f64)
    }
}

/// One app instance's own counts (`/api/websocket/info`), None when it did not answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InstanceSample {
    pub service: String,
    pub connections: Option<u64>,
    pub rooms: Option<u64>,
}

/// One swarm node's host at one instant: what `Sample::load_avg` and `Sample::host_cpu` say of the one
/// host of a single-engine stack.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct NodeHost {
    pub node: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load_avg: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_cpu: Option<HostCpu>,
}

/// The SUT host's CPU by its own count (/proc/stat's `cpu` line) since the previous sample, in percent
/// of all its CPUs: everything that ran there (containers, the kernel's network work, other tenants'
/// processes), which the containers' cgroups alone do not show.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct HostCpu {
    /// Not idle: user, system, interrupts and time stolen by the hypervisor.
    pub busy_pct: f64,
    /// Of which the kernel's (system, irq, softirq): a socket's packets are handled there.
    pub kernel_pct: f64,
    /// Of which stolen: the host's CPUs ran another machine's work.
    pub steal_pct: f64,
}

/// The jiffies of /proc/stat's `cpu` line: user nice system idle iowait irq softirq steal.
pub type Jiffies = [u64; 8];

impl HostCpu {
    /// The aggregate line, `cpu  user nice system idle iowait irq softirq steal …`.
    pub fn jiffies(line: &str) -> Option<Jiffies> {
        let mut w = line.split_whitespace();
        (w.next()? == "cpu").then_some(())?;
        let mut j = [0u64; 8];
        for v in &mut j {
            *v = w.next()?.parse().ok()?;
        }
        Some(j)
    }

    /// From one reading to the next (None when no time passed or the counters went back).
    pub fn between(prev: &Jiffies, now: &Jiffies) -> Option<HostCpu> {
        let d: Vec<u64> = (0..8)
            .map(|i| now[i].checked_sub(prev[i]))
            .collect::<Option<_>>()?;
        let total: u64 = d.iter().sum();
        (total > 0).then(|| {
            let pct = |x: u64| x as f64 * 100.0 / total as f64;
            HostCpu {
                busy_pct: pct(total - d[3] - d[4]),
                kernel_pct: pct(d[2] + d[5] + d[6]),
                steal_pct: pct(d[7]),
            }
        })
    }
}

/// The generator (this process) at one instant.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct GeneratorSample {
    /// Users the level is asking for right now (the ramp's target).
    pub target_users: u64,
    /// Sockets open right now.
    pub open_sockets: u64,
    /// Users failed so far in this level.
    pub failures: u64,
    /// CPU since the previous sample, percent of the CPUs it may use (100 = all of them busy).
    pub cpu_pct: Option<f64>,
    pub rss_bytes: Option<u64>,
}

/// Everything sampled at one instant.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Sample {
    /// ms since the bench began.
    pub t_ms: u64,
    /// The level running (its user count), None between levels.
    pub level: Option<u64>,
    pub containers: Vec<ContainerSample>,
    pub instances: Vec<InstanceSample>,
    /// nginx `stub_status` active connections (ha).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nginx_active: Option<u64>,
    /// The SUT's 1-minute load average.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load_avg: Option<f64>,
    /// The SUT host's CPU since the previous sample, by its own count.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_cpu: Option<HostCpu>,
    /// On a swarm, each node's host (and `load_avg`, `host_cpu` are None: there is no one host).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub nodes: Vec<NodeHost>,
    pub generator: GeneratorSample,
    /// What the SUT sample cost: the sampling command's own wall time, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sample_ms: Option<f64>,
    /// The docker-proxy processes of the stack's published ports (none with the userland proxy off).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub proxies: Vec<ProxySample>,
}

/// One level's place on the clock (ms since the bench began).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct LevelSpan {
    pub users: u64,
    pub start_ms: u64,
    /// Every user holds (the first sample after the generator saw every socket open; else the ramp's end).
    pub hold_ms: u64,
    /// The first users' holds end (start + hold): from `hold_ms` to here every user should be holding.
    #[serde(default)]
    pub hold_end_ms: u64,
    /// The load is over (every user closed).
    pub end_ms: u64,
    /// The leak check is over.
    pub settled_ms: u64,
}

impl LevelSpan {
    /// The samples of the level's load (start to end).
    pub fn during<'a>(&self, samples: &'a [Sample]) -> impl Iterator<Item = &'a Sample> + 'a {
        let (a, b) = (self.start_ms, self.end_ms);
        samples.iter().filter(move |s| s.t_ms >= a && s.t_ms <= b)
    }

    /// The samples of the level's full hold (every user should be holding): each read wholly inside
    /// it. A sample is stamped when it begins and its counts are read over its `sample_ms`: one begun
    /// just before the hold's end reads the first users already leaving.
    pub fn holding<'a>(&self, samples: &'a [Sample]) -> impl Iterator<Item = &'a Sample> + 'a {
        let span = *self;
        samples.iter().filter(move |s| span.holds(s))
    }

    /// `s` was read wholly inside the level's full hold.
    pub fn holds(&self, s: &Sample) -> bool {
        self.hold_end_ms > self.hold_ms && s.t_ms >= self.hold_ms && read_end(s) <= self.hold_end_ms
    }

    /// The samples whose CPU figures cover the level's full hold only (its whole load when it had
    /// none: a login burst).
    pub fn cpu_holding<'a>(&self, samples: &'a [Sample]) -> impl Iterator<Item = &'a Sample> + 'a {
        match self.hold_end_ms > self.hold_ms {
            true => cpu_within(samples, self.hold_ms, self.hold_end_ms),
            false => cpu_within(samples, self.start_ms, self.end_ms),
        }
    }
}

/// When `s`'s reads were over: it is stamped when it begins and read over its `sample_ms`.
fn read_end(s: &Sample) -> u64 {
    s.t_ms + s.sample_ms.map_or(0, |ms| ms.max(0.0).ceil() as u64)
}

/// The samples whose CPU figures cover time within `[from, to]` only. A CPU figure is what was used
/// since the sample before: the first sample stamped inside a hold covers the ramp's last second,
/// so it counts only when the one before it began inside too, and its own reads ended by `to`.
pub fn cpu_within(samples: &[Sample], from: u64, to: u64) -> impl Iterator<Item = &Sample> {
    samples
        .windows(2)
        .filter(move |w| w[0].t_ms >= from && read_end(&w[1]) <= to)
        .map(|w| &w[1])
}

impl InstanceSample {
    /// "app-1 6 connections / 2 rooms" (an unanswered count as 0).
    pub fn counts(&self) -> String {
        format!(
            "{} {} connections / {} rooms",
            self.service,
            self.connections.unwrap_or(0),
            self.rooms.unwrap_or(0)
        )
    }
}

impl Sample {
    /// Connections the app instances counted, summed (None when any instance did not answer).
    pub fn instance_connections(&self) -> Option<u64> {
        self.instances.iter().map(|i| i.connections).sum()
    }

    pub fn container(&self, service: &str) -> Option<&ContainerSample> {
        self.containers.iter().find(|c| c.service == service)
    }
}

/// The app instances' own counts of connections over one level, summed sample by sample: what the SUT
/// says it held at once, beside the generator's own count.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct AtOnce {
    /// The most during the level (start to end).
    pub peak: Option<u64>,
    /// The fewest during its common hold.
    pub min_in_hold: Option<u64>,
    /// Samples of the common hold in which the instances counted more connections than the generator
    /// had open, and the largest excess: another client on the stack.
    pub foreign_samples: u64,
    pub foreign_max: u64,
    /// Samples of the common hold in which they counted fewer than the generator had open, and the
    /// largest shortfall: sockets open at the generator that no instance held (a proxy between).
    pub unseen_samples: u64,
    pub unseen_max: u64,
}

/// The instances' counts over the level, less what they counted before it with no socket open
/// (`ghosts`: an earlier client's leaked connections, which no socket of this level holds).
pub fn at_once(span: &LevelSpan, samples: &[Sample], ghosts: &[InstanceSample]) -> AtOnce {
    let before: u64 = ghosts.iter().filter_map(|g| g.connections).sum();
    let mut a = AtOnce::default();
    for s in span.during(samples) {
        let Some(sum) = s.instance_connections() else {
            continue;
        };
        let sum = sum.saturating_sub(before);
        a.peak = a.peak.max(Some(sum));
        if span.holds(s) {
            a.min_in_hold = Some(a.min_in_hold.map_or(sum, |m| m.min(sum)));
            let excess = sum.saturating_sub(s.generator.open_sockets);
            if excess > 0 {
                a.foreign_samples += 1;
                a.foreign_max = a.foreign_max.max(excess);
            }
            let short = s.generator.open_sockets.saturating_sub(sum);
            if short > 0 {
                a.unseen_samples += 1;
                a.unseen_max = a.unseen_max.max(short);
            }
        }
    }
    a
}

impl AtOnce {
    /// Why the level fails when the app held fewer sockets than the generator had open during its hold
    /// (two samples at least, as for `foreign`): the users were not all at the app at once.
    pub fn unseen(&self) -> Option<String> {
        (self.unseen_samples >= 2).then(|| {
            format!(
                "the app instances counted up to {} fewer connections than the generator had open, in {} samples of the hold (as few as {} in all): sockets open at the generator that no instance held",
                self.unseen_max,
                self.unseen_samples,
                self.min_in_hold.map_or("?".into(), crate::plateau::group)
            )
        })
    }

    /// Why the level cannot count when another client held connections on the stack during its hold
    /// (two samples at least: one can be a socket closing between the two counts).
    pub fn foreign(&self) -> Option<String> {
        (self.foreign_samples >= 2).then(|| {
            format!(
                "invalid: the instances counted up to {} more connections than this bench had open, in {} samples of the hold: another client is connected to the stack",
                self.foreign_max, self.foreign_samples
            )
        })
    }
}

/// nginx stub_status's "Active connections: 291" (the other lines are totals since start).
pub fn stub_status_active(text: &str) -> Option<u64> {
    text.lines()
        .find_map(|l| l.trim().strip_prefix("Active connections:"))
        .and_then(|n| n.trim().parse().ok())
}

#[cfg(test)]
mod tests {
    use super::HostCpu;

    #[test]
    fn the_hosts_cpu_is_read_from_two_lines_of_proc_stat() {
        let a = HostCpu::jiffies("cpu  100 0 50 800 10 0 20 20 0 0").unwrap();
        let b = HostCpu::jiffies("cpu  160 0 90 860 10 0 40 40 0 0").unwrap();
        // 200 jiffies: 60 idle, 140 busy of which 60 in the kernel (40 + 20) and 20 stolen.
        let h = HostCpu::between(&a, &b).unwrap();
        assert_eq!((h.busy_pct, h.kernel_pct, h.steal_pct), (70.0, 30.0, 10.0));
        assert_eq!(HostCpu::between(&b, &a), None, "counters never go back");
        assert_eq!(HostCpu::between(&a, &a), None, "no time passed");
        assert_eq!(
            HostCpu::jiffies("cpu0 1 2 3 4 5 6 7 8"),
            None,
            "the aggregate line only"
        );
        assert_eq!(HostCpu::jiffies("cpu 1 2 3"), None);
    }

    use super::*;

    #[test]
    fn stub_status_active_connections() {
        let text = "Active connections: 291 \nserver accepts handled requests\n 16630948 16630948 31070465 \nReading: 6 Writing: 179 Waiting: 106 \n";
        assert_eq!(stub_status_active(text), Some(291));
        assert_eq!(stub_status_active("<html>404</html>"), None);
    }

    #[test]
    fn a_spans_samples_and_the_instances_sum() {
        let at = |t_ms, conns: [Option<u64>; 2]| Sample {
            t_ms,
            instances: conns
                .iter()
                .enumerate()
                .map(|(i, c)| InstanceSample {
                    service: format!("app-{}", i + 1),
                    connections: *c,
                    rooms: Some(1),
                })
                .collect(),
            ..Sample::default()
        };
        let samples = vec![
            at(0, [Some(0), Some(0)]),
            at(1000, [Some(40), Some(60)]),
            at(2000, [Some(50), None]),
        ];
        let span = LevelSpan {
            users: 100,
            start_ms: 500,
            hold_ms: 1000,
            hold_end_ms: 1500,
            end_ms: 2000,
            settled_ms: 2500,
        };
        assert_eq!(span.during(&samples).count(), 2);
        assert_eq!(
            span.holding(&samples)
                .next()
                .unwrap()
                .instance_connections(),
            Some(100)
        );
        // A sample begun in the hold whose read ends after it is not the hold's (it may read the
        // first users leaving); one read wholly inside is.
        let mut late = at(1400, [Some(40), Some(52)]);
        late.sample_ms = Some(183.1);
        assert!(!span.holds(&late));
        late.sample_ms = Some(99.0);
        assert!(span.holds(&late));
        assert_eq!(
            samples[2].instance_connections(),
            None,
            "an instance that did not answer is no zero"
        );
    }

    #[test]
    fn the_instances_holding_fewer_or_more_than_the_generator_is_said() {
        // (t, the instances' sum, the generator's open sockets) over a hold from 1 s to 5 s.
        let at = |t_ms, app: u64, open: u64| Sample {
            t_ms,
            instances: vec![InstanceSample {
                service: "app-1".into(),
                connections: Some(app),
                rooms: Some(1),
            }],
            generator: GeneratorSample {
                open_sockets: open,
                ..GeneratorSample::default()
            },
            ..Sample::default()
        };
        let span = LevelSpan {
            users: 100,
            start_ms: 0,
            hold_ms: 1000,
            hold_end_ms: 5000,
            end_ms: 6000,
            settled_ms: 7000,
        };
        let matched: Vec<Sample> = (1..=5).map(|s| at(s * 1000, 100, 100)).collect();
        let a = at_once(&span, &matched, &[]);
        assert_eq!((a.peak, a.min_in_hold), (Some(100), Some(100)));
        assert_eq!((a.unseen(), a.foreign()), (None, None));
        // One sample short (a socket closing between the two counts) is no finding; two are.
        let mut short = matched.clone();
        short[1] = at(2000, 99, 100);
        assert_eq!(at_once(&span, &short, &[]).unseen(), None);
        short[2] = at(3000, 60, 100);
        let a = at_once(&span, &short, &[]);
        assert_eq!(
            a.unseen().unwrap(),
            "the app instances counted up to 40 fewer connections than the generator had open, in 2 samples of the hold (as few as 60 in all): sockets open at the generator that no instance held"
        );
        assert_eq!(a.foreign(), None);
        // Ghosts an earlier client left (connections no socket holds) are no other client: the level's
        // counts are measured from them (issue #36, 18).
        let ghost = [InstanceSample {
            service: "app-1".into(),
            connections: Some(3),
            rooms: Some(3),
        }];
        let haunted: Vec<Sample> = (1..=5).map(|s| at(s * 1000, 103, 100)).collect();
        assert!(at_once(&span, &haunted, &[]).foreign().is_some());
        let a = at_once(&span, &haunted, &ghost);
        assert_eq!((a.foreign(), a.unseen(), a.peak), (None, None, Some(100)));
        // Outside the hold (the ramp, the close) the counts may differ.
        let ramping = vec![at(500, 10, 50), at(5500, 0, 100), at(5800, 0, 100)];
        assert_eq!(at_once(&span, &ramping, &[]).unseen(), None);
    }
}
