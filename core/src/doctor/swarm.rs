//! doctor on a swarm: every node's own checks (the single-host `assess`, each named after its node, with
//! the app instances placed there), then what only a swarm has: clock skew between the nodes, the IPVS
//! trap of a VIP or the ingress mesh anywhere (moby#31208: a socket idle 900 s is dropped silently), and
//! each overlay's MTU against every node's link (VXLAN adds 50 bytes to every frame).

use super::assess::{assess, Options};
use super::check::{num, unread, Check};
use super::facts::Facts;

/// Clocks further apart than this between two nodes: a warning (logs and timelines disagree).
pub const SKEW_WARN_MS: f64 = 500.0;
/// Further apart than this: a failure (swarm TLS and raft stop agreeing; nothing lines up).
pub const SKEW_FAIL_MS: f64 = 10_000.0;
/// The MTU an overlay has when its network was made without one.
pub const DEFAULT_OVERLAY_MTU: u32 = 1500;
/// Services listed by name in a detail.
const LISTED: usize = 5;

/// A node's clock against this machine's: how far ahead it is, and the round trip it was read over
/// (the reading is this exact within half of it).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Clock {
    pub offset_ms: f64,
    pub rtt_ms: f64,
}

/// One node: its own facts (as doctor gathers them on one engine) and what the swarm checks read there.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeFacts {
    pub hostname: String,
    pub addr: String,
    pub facts: Facts,
    pub clock: Result<Clock, String>,
    /// The MTU of the interface holding the node's swarm address.
    pub link_mtu: Result<u32, String>,
    /// The stack's app instances placed on it (with --stack).
    pub instances: Option<u64>,
}

/// A service as the manager lists it: whether it has a virtual IP, and its ports on the ingress mesh.
#[derive(Debug, Clone, PartialEq)]
pub struct Service {
    pub name: String,
    pub vip: bool,
    pub ingress_ports: Vec<u32>,
}

/// An overlay network and the MTU it was made with (None: the default).
#[derive(Debug, Clone, PartialEq)]
pub struct Overlay {
    pub name: String,
    pub mtu: Option<u32>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct SwarmFacts {
    pub nodes: Vec<NodeFacts>,
    pub services: Result<Vec<Service>, String>,
    pub overlays: Result<Vec<Overlay>, String>,
}

/// Every node's checks (named "NODE: check"), then the swarm's.
pub fn assess_swarm(f: &SwarmFacts, o: &Options) -> Vec<Check> {
    let mut out = Vec::new();
    for n in &f.nodes {
        let mut own = o.clone();
        // The instances this node carries, not the stack's all: a node with none needs no room for them.
        own.limits = match (&o.limits, n.instances) {
            (Some(l), Some(k)) if k > 0 => Some(super::Limits {
                instances: k,
                source: format!("{}, {k} on this node", l.source),
                ..l.clone()
            }),
            (Some(_), Some(_)) => None,
            (l, _) => l.clone(),
        };
        out.extend(assess(&n.facts, &own).into_iter().map(|mut c| {
            c.name = format!("{}: {}", n.hostname, c.name);
            c
        }));
    }
    out.push(clock_skew(&f.nodes));
    out.push(vip(&f.services));
    out.push(overlay_mtu(&f.overlays, &f.nodes));
    out
}

/// The nodes' clocks, each read against this machine's: the spread between them, less what the
/// readings cannot tell apart.
fn clock_skew(nodes: &[NodeFacts]) -> Check {
    const NAME: &str = "swarm-clock-skew";
    let fix = "run chrony or systemd-timesyncd against the same NTP servers on every node";
    let unread_nodes: Vec<&str> = nodes
        .iter()
        .filter(|n| n.clock.is_err())
        .map(|n| n.hostname.as_str())
        .collect();
    let read: Vec<(&str, Clock)> = nodes
        .iter()
        .filter_map(|n| Some((n.hostname.as_str(), *n.clock.as_ref().ok()?)))
        .collect();
    if read.len() < 2 || !unread_nodes.is_empty() {
        let why = match unread_nodes.as_slice() {
            [] => "fewer than two nodes answered".to_string(),
            names => format!("not read on {}", names.join(", ")),
        };
        return unread(NAME, "every node's clock", Some(&why), READ_FIX);
    }
    let ahead = |a: &&(&str, Clock), b: &&(&str, Clock)| a.1.offset_ms.total_cmp(&b.1.offset_ms);
    let first = read.iter().min_by(ahead).expect("two or more");
    let last = read.iter().max_by(ahead).expect("two or more");
    let spread = last.1.offset_ms - first.1.offset_ms;
    // Each reading is exact within half its round trip.
    let within = (first.1.rtt_ms + last.1.rtt_ms) / 2.0;
    let at_least = (spread - within).max(0.0);
    let detail = format!(
        "{} is {} ms ahead of {} (± {} ms: each clock read over SSH against this machine's)",
        last.0,
        num(spread),
        first.0,
        num(within)
    );
    if at_least > SKEW_FAIL_MS {
        Check::fail(NAME, detail, fix)
    } else if at_least > SKEW_WARN_MS {
        Check::warn(NAME, detail, fix)
    } else {
        Check::pass(NAME, detail)
    }
}

/// A VIP or an ingress port anywhere: IPVS carries those connections, and drops one idle for 900 s.
fn vip(services: &Result<Vec<Service>, String>) -> Check {
    const NAME: &str = "swarm-ipvs";
    let services = match services {
        Ok(s) => s,
        Err(e) => return unread(NAME, "the swarm's services", Some(e), MANAGER_FIX),
    };
    let through: Vec<String> = services
        .iter()
        .filter(|s| s.vip || !s.ingress_ports.is_empty())
        .map(|s| match (s.vip, s.ingress_ports.as_slice()) {
            (true, []) => format!("{} (VIP)", s.name),
            (vip, ports) => format!(
                "{} ({}ingress {})",
                s.name,
                if vip { "VIP, " } else { "" },
                ports
                    .iter()
                    .map(u32::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        })
        .collect();
    if through.is_empty() {
        return Check::pass(
            NAME,
            format!(
                "none of the {} services has a VIP or an ingress port: every connection goes to a task's own address",
                services.len()
            ),
        );
    }
    let mut listed = through[..through.len().min(LISTED)].join(", ");
    if through.len() > LISTED {
        listed.push_str(&format!(" and {} more", through.len() - LISTED));
    }
    Check::warn(
        NAME,
        format!(
            "{} service(s) route through IPVS, which drops a connection idle for 900 s without a word (moby#31208) and adds a hop a benchmark measures: {listed}",
            through.len()
        ),
        "give them endpoint mode dnsrr and publish ports in mode host (as exectl deploys), or keep idle sockets under 900 s (net.ipv4.tcp_keepalive_time on the nodes)",
    )
}

/// Every overlay's frames (its MTU: VXLAN's 50 bytes are taken from it inside) must fit every node's link.
fn overlay_mtu(overlays: &Result<Vec<Overlay>, String>, nodes: &[NodeFacts]) -> Check {
    const NAME: &str = "swarm-overlay-mtu";
    let overlays = match overlays {
        Ok(o) => o,
        Err(e) => return unread(NAME, "the overlay networks", Some(e), MANAGER_FIX),
    };
    let unread_nodes: Vec<String> = nodes
        .iter()
        .filter_map(|n| match &n.link_mtu {
            Err(e) => Some(format!("{} ({e})", n.hostname)),
            Ok(_) => None,
        })
        .collect();
    if !unread_nodes.is_empty() {
        return unread(
            NAME,
            "every node's link MTU",
            Some(&format!("not read on {}", unread_nodes.join(", "))),
            "install iproute2 (`ip`) on the nodes",
        );
    }
    let mut too_big = Vec::new();
    for o in overlays {
        let frames = o.mtu.unwrap_or(DEFAULT_OVERLAY_MTU);
        for n in nodes {
            let link = *n.link_mtu.as_ref().expect("checked above");
            if frames > link {
                too_big.push(format!(
                    "{} ({frames}) over {}'s link ({link})",
                    o.name, n.hostname
                ));
            }
        }
    }
    let smallest = nodes
        .iter()
        .filter_map(|n| n.link_mtu.as_ref().ok())
        .min()
        .copied();
    if too_big.is_empty() {
        return Check::pass(
            NAME,
            format!(
                "{} overlay(s) fit every node's link (the smallest: {})",
                overlays.len(),
                smallest.map_or("none read".into(), |m| m.to_string())
            ),
        );
    }
    Check::warn(
        NAME,
        format!(
            "encapsulated frames larger than a node's link are fragmented or dropped (large WebSocket frames stall): {}",
            too_big.join(", ")
        ),
        format!(
            "make the overlay with --opt com.docker.network.driver.mtu={} (the smallest link), or raise the nodes' MTU",
            smallest.unwrap_or(DEFAULT_OVERLAY_MTU)
        ),
    )
}

const READ_FIX: &str =
    "check that every node answers over SSH (exectl status names the ones that do not)";
const MANAGER_FIX: &str = "give a manager of the swarm in --target swarm+ssh://USER@MANAGER";

#[cfg(test)]
mod tests {
    use super::super::check::Level;
    use super::super::facts::{Facts, Link};
    use super::*;

    fn node(name: &str, offset_ms: f64, mtu: u32) -> NodeFacts {
        NodeFacts {
            hostname: name.into(),
            addr: "10.0.0.1".into(),
            facts: Facts::unreachable(Link::Local),
            clock: Ok(Clock {
                offset_ms,
                rtt_ms: 20.0,
            }),
            link_mtu: Ok(mtu),
            instances: None,
        }
    }

    fn swarm(nodes: Vec<NodeFacts>, services: Vec<Service>, overlays: Vec<Overlay>) -> SwarmFacts {
        SwarmFacts {
            nodes,
            services: Ok(services),
            overlays: Ok(overlays),
        }
    }

    fn find<'a>(checks: &'a [Check], name: &str) -> &'a Check {
        checks.iter().find(|c| c.name == name).unwrap()
    }

    fn dnsrr(name: &str) -> Service {
        Service {
            name: name.into(),
            vip: false,
            ingress_ports: vec![],
        }
    }

    #[test]
    fn each_nodes_checks_are_named_after_it_and_the_swarms_follow() {
        let f = swarm(
            vec![node("n1", 0.0, 1500), node("n2", 3.0, 1500)],
            vec![],
            vec![],
        );
        let checks = assess_swarm(&f, &Options::default());
        let names: Vec<&str> = checks.iter().map(|c| c.name.as_str()).collect();
        assert!(names.iter().any(|n| n.starts_with("n1: ")), "{names:?}");
        assert!(names.iter().any(|n| n.starts_with("n2: ")), "{names:?}");
        assert_eq!(
            names[names.len() - 3..],
            ["swarm-clock-skew", "swarm-ipvs", "swarm-overlay-mtu"]
        );
    }

    #[test]
    fn clocks_apart_warn_then_fail_and_an_unread_one_is_not_called_in_step() {
        let skew = |ms: f64| {
            let f = swarm(
                vec![node("n1", 0.0, 1500), node("n2", ms, 1500)],
                vec![],
                vec![],
            );
            find(&assess_swarm(&f, &Options::default()), "swarm-clock-skew").clone()
        };
        let ok = skew(120.0);
        assert_eq!(ok.level, Level::Pass, "{ok:?}");
        assert_eq!(
            ok.detail,
            "n2 is 120 ms ahead of n1 (± 20 ms: each clock read over SSH against this machine's)"
        );
        // 510 ms apart, read within ± 20 ms: it cannot be told from 490, so it passes.
        assert_eq!(skew(510.0).level, Level::Pass);
        assert_eq!(skew(900.0).level, Level::Warn);
        assert_eq!(skew(-20_000.0).level, Level::Fail);
        let mut f = swarm(
            vec![node("n1", 0.0, 1500), node("n2", 0.0, 1500)],
            vec![],
            vec![],
        );
        f.nodes[1].clock = Err("no answer".into());
        let c = find(&assess_swarm(&f, &Options::default()), "swarm-clock-skew").clone();
        assert_eq!(c.level, Level::Warn);
        assert!(c.detail.contains("not read on n2"), "{c:?}");
    }

    #[test]
    fn a_vip_or_an_ingress_port_anywhere_is_named() {
        let check = |services| {
            let f = swarm(vec![node("n1", 0.0, 1500)], services, vec![]);
            find(&assess_swarm(&f, &Options::default()), "swarm-ipvs").clone()
        };
        assert_eq!(check(vec![dnsrr("a"), dnsrr("b")]).level, Level::Pass);
        let c = check(vec![
            dnsrr("a"),
            Service {
                name: "web".into(),
                vip: true,
                ingress_ports: vec![8080],
            },
            Service {
                name: "cache".into(),
                vip: true,
                ingress_ports: vec![],
            },
        ]);
        assert_eq!(c.level, Level::Warn);
        assert!(
            c.detail
                .ends_with("(moby#31208) and adds a hop a benchmark measures: web (VIP, ingress 8080), cache (VIP)"),
            "{c:?}"
        );
    }

    #[test]
    fn an_overlay_larger_than_a_nodes_link_is_named_with_the_mtu_that_fits() {
        let overlays = vec![
            Overlay {
                name: "exectl-sw".into(),
                mtu: None,
            },
            Overlay {
                name: "small".into(),
                mtu: Some(1400),
            },
        ];
        let f = swarm(
            vec![node("n1", 0.0, 1500), node("n2", 0.0, 1450)],
            vec![],
            overlays.clone(),
        );
        let c = find(&assess_swarm(&f, &Options::default()), "swarm-overlay-mtu").clone();
        assert_eq!(c.level, Level::Warn);
        assert!(
            c.detail
                .ends_with(": exectl-sw (1500) over n2's link (1450)"),
            "{c:?}"
        );
        assert!(c.fix.contains("mtu=1450"), "{c:?}");
        let f = swarm(
            vec![node("n1", 0.0, 1500), node("n2", 0.0, 1500)],
            vec![],
            overlays,
        );
        let c = find(&assess_swarm(&f, &Options::default()), "swarm-overlay-mtu").clone();
        assert_eq!(c.level, Level::Pass, "{c:?}");
    }

    /// 12 instances of 1 CPU would not fit one 8-CPU engine; 6 on each of two workers do.
    #[test]
    fn a_node_is_judged_on_the_instances_placed_on_it() {
        let limits = super::super::Limits {
            instances: 12,
            cpus: 1.0,
            memory_bytes: 1 << 30,
            idle_mib: None,
            source: "stack sw".into(),
            defaulted: Default::default(),
        };
        let o = Options {
            connections: None,
            limits: Some(limits),
        };
        let on = |name: &str, instances: u64| NodeFacts {
            facts: super::super::assess::tests::facts(),
            instances: Some(instances),
            ..node(name, 0.0, 1500)
        };
        let f = swarm(vec![on("n1", 0), on("n2", 6), on("n3", 6)], vec![], vec![]);
        let checks = assess_swarm(&f, &o);
        let cpu = |n: &str| find(&checks, &format!("{n}: cpu-memory")).clone();
        let n2 = cpu("n2");
        assert_eq!(n2.level, Level::Pass, "{n2:?}");
        assert!(
            n2.detail.starts_with(
                "6 app instances × 1 CPUs and 1024 MiB fit (stack sw, 6 on this node)"
            ),
            "{n2:?}"
        );
        assert!(
            cpu("n1").detail.contains("no limits to compare"),
            "{:?}",
            cpu("n1")
        );
        // The whole stack on one of them would not fit.
        let one = assess(&super::super::assess::tests::facts(), &o);
        assert_eq!(
            one.iter().find(|c| c.name == "cpu-memory").unwrap().level,
            Level::Warn
        );
    }
}
