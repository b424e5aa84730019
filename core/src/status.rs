//! The status report and its verdict, pure: observed facts in, warnings, problems and a verdict out.

use serde::Serialize;

/// The words of an instance's "not idle" problem: bench waits on those (and refuses any other problem).
pub const NOT_IDLE: &str = "is not idle";

/// One container of the stack. JSON field names are part of the documented, stable shape.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ServiceStatus {
    pub name: String,
    pub container: String,
    pub state: String,
    /// healthy / unhealthy / starting, or "none" when the image has no healthcheck.
    pub health: String,
    pub image: String,
    pub digest: String,
    pub uptime_s: Option<u64>,
    pub restarts: i64,
    pub cpu_percent: Option<f64>,
    /// The cgroup's resident anonymous memory: what the processes themselves hold.
    pub mem_bytes: Option<u64>,
    /// The cgroup's usage less inactive file cache: the figure `docker stats` shows (page cache in use
    /// counts here, so it is the larger of the two).
    pub mem_usage_bytes: Option<u64>,
    pub mem_limit_bytes: Option<u64>,
    /// nofile soft limit of PID 1 as in effect inside the container.
    pub nofile: Option<u64>,
    /// The swarm node that runs it (a swarm target only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
}

/// One app instance's own WebSocket counts, queried directly on the stack network.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct InstanceStatus {
    pub name: String,
    #[serde(rename = "totalConnections")]
    pub total_connections: Option<u64>,
    #[serde(rename = "roomsCount")]
    pub rooms_count: Option<u64>,
    /// This instance's part of all connections, 0..1 (None when there are none).
    pub share: Option<f64>,
    pub error: Option<String>,
    /// The swarm node that runs it (a swarm target only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Report {
    pub stack: String,
    pub topology: String,
    pub lb_algorithm: Option<String>,
    /// The services the deploy rendered (its compose.yaml), compared with those found.
    pub expected: Vec<String>,
    pub services: Vec<ServiceStatus>,
    pub instances: Vec<InstanceStatus>,
    pub total_connections: u64,
    pub warnings: Vec<String>,
    pub problems: Vec<String>,
    /// "ok", "warn" or "fail".
    pub verdict: String,
}

/// A share above this, under ip_hash, is the seed's single-source pinning.
pub const PINNING_SHARE: f64 = 0.8;

/// Healthy enough for --expect-healthy: healthy, or running when the image has no healthcheck.
pub fn is_healthy(s: &ServiceStatus) -> bool {
    s.state == "running" && (s.health == "healthy" || s.health == "none")
}

/// The app's instances, by service name (`app` for single, `app-N` for ha).
pub fn is_app(service: &str) -> bool {
    service == "app" || service.starts_with("app-")
}

pub fn is_idle(i: &InstanceStatus) -> bool {
    i.total_connections == Some(0) && i.rooms_count == Some(0)
}

/// Fill shares, warnings, problems and the verdict.
pub fn assess(mut r: Report, expect_idle: bool, expect_healthy: bool) -> Report {
    r.total_connections = r.instances.iter().filter_map(|i| i.total_connections).sum();
    for i in r.instances.iter_mut() {
        i.share = (r.total_connections > 0)
            .then(|| i.total_connections.unwrap_or(0) as f64 / r.total_connections as f64);
    }
    let mut warnings = Vec::new();
    let mut problems = Vec::new();
    if r.lb_algorithm.as_deref() == Some("ip_hash") && r.instances.len() > 1 {
        if let Some(top) = r
            .instances
            .iter()
            .filter(|i| i.share.unwrap_or(0.0) > PINNING_SHARE)
            .max_by(|a, b| a.share.partial_cmp(&b.share).unwrap())
        {
            warnings.push(format!(
                "imbalance: {} holds {:.0}% of {} connections under ip_hash, which hashes the client's first three address octets, so one load source lands on one backend; fix: --nginx tuned-least-conn, or load from several source networks",
                top.name,
                top.share.unwrap_or(0.0) * 100.0,
                r.total_connections
            ));
        }
    }
    // Every rendered service is one the stack cannot work as deployed without (the database, Redis, the
    // front door, and each instance of the capacity being measured): missing or not running is a failure.
    for name in &r.expected {
        if !r.services.iter().any(|s| &s.name == name) {
            problems.push(format!(
                "{name} is missing: the deploy rendered it and no container of the stack runs it now; fix: exectl deploy again to converge"
            ));
        }
    }
    for s in &r.services {
        let expected = r.expected.contains(&s.name);
        if !expected {
            warnings.push(format!(
                "{} ({}) carries the stack's label but the deploy did not render it; fix: exectl deploy again to converge",
                s.name, s.container
            ));
        }
        if s.state != "running" && expected {
            problems.push(format!(
                "{} is {} (health {}): the stack cannot work without it",
                s.name, s.state, s.health
            ));
        } else if !is_healthy(s) {
            let msg = format!("{} is {} (health {})", s.name, s.state, s.health);
            if expect_healthy {
                problems.push(msg);
            } else {
                warnings.push(msg);
            }
        }
    }
    for i in &r.instances {
        if let Some(e) = &i.error {
            problems.push(format!("{}: /api/websocket/info failed: {e}", i.name));
        } else if expect_idle && !is_idle(i) {
            problems.push(format!(
                "{} {NOT_IDLE}: {} connections, {} rooms (a leak if no load is running)",
                i.name,
                i.total_connections.unwrap_or(0),
                i.rooms_count.unwrap_or(0)
            ));
        }
    }
    r.verdict = if !problems.is_empty() {
        "fail"
    } else if !warnings.is_empty() {
        "warn"
    } else {
        "ok"
    }
    .to_string();
    r.warnings = warnings;
    r.problems = problems;
    r
}

/// The terminal table.
pub fn table(r: &Report) -> String {
    use comfy_table::{presets::UTF8_FULL_CONDENSED, Table};
    let mut t = Table::new();
    t.load_style(UTF8_FULL_CONDENSED);
    // A swarm's services each run on a node: a column for it.
    let nodes = r.services.iter().any(|s| s.node.is_some());
    let mut header = vec![
        "service", "state", "health", "image", "uptime", "cpu%", "rss", "used", "limit",
        "restarts", "nofile",
    ];
    if nodes {
        header.insert(1, "node");
    }
    t.set_header(header);
    let mib = |b: Option<u64>| {
        b.map(|b| format!("{}M", b >> 20))
            .unwrap_or_else(|| "-".into())
    };
    for s in &r.services {
        let mut row = vec![
            s.name.clone(),
            s.state.clone(),
            s.health.clone(),
            format!("{} ({})", s.image, short_digest(&s.digest)),
            s.uptime_s
                .map(|u| format!("{u}s"))
                .unwrap_or_else(|| "-".into()),
            s.cpu_percent
                .map(|c| format!("{c:.1}"))
                .unwrap_or_else(|| "-".into()),
            mib(s.mem_bytes),
            mib(s.mem_usage_bytes),
            mib(s.mem_limit_bytes),
            s.restarts.to_string(),
            s.nofile
                .map(|n| n.to_string())
                .unwrap_or_else(|| "-".into()),
        ];
        if nodes {
            row.insert(1, s.node.clone().unwrap_or_else(|| "-".into()));
        }
        t.add_row(row);
    }
    let mut out = t.to_string();
    out.push_str("\nrss: the cgroup's anonymous memory; used: usage less inactive file cache, as docker stats shows");
    if !r.instances.is_empty() {
        let mut w = Table::new();
        w.load_style(UTF8_FULL_CONDENSED);
        let mut header = vec!["instance", "connections", "rooms", "share"];
        if nodes {
            header.insert(1, "node");
        }
        w.set_header(header);
        for i in &r.instances {
            let mut row = vec![
                i.name.clone(),
                i.total_connections
                    .map(|c| c.to_string())
                    .unwrap_or_else(|| "?".into()),
                i.rooms_count
                    .map(|c| c.to_string())
                    .unwrap_or_else(|| "?".into()),
                i.share
                    .map(|s| format!("{:.0}%", s * 100.0))
                    .unwrap_or_else(|| "-".into()),
            ];
            if nodes {
                row.insert(1, i.node.clone().unwrap_or_else(|| "-".into()));
            }
            w.add_row(row);
        }
        out.push('\n');
        out.push_str(&w.to_string());
    }
    out
}

fn short_digest(d: &str) -> &str {
    let hex = d.rsplit(':').next().unwrap_or(d);
    &hex[..hex.len().min(12)]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(alg: &str, counts: &[u64]) -> Report {
        Report {
            stack: "s".into(),
            topology: "ha".into(),
            lb_algorithm: Some(alg.into()),
            expected: vec![],
            services: vec![],
            instances: counts
                .iter()
                .enumerate()
                .map(|(n, c)| InstanceStatus {
                    name: format!("app-{}", n + 1),
                    total_connections: Some(*c),
                    rooms_count: Some(u64::from(*c > 0)),
                    share: None,
                    error: None,
                    node: None,
                })
                .collect(),
            total_connections: 0,
            warnings: vec![],
            problems: vec![],
            verdict: String::new(),
        }
    }

    #[test]
    fn ip_hash_pinning_warns_least_conn_does_not() {
        let r = assess(report("ip_hash", &[40, 0]), false, false);
        assert_eq!(r.verdict, "warn");
        assert!(
            r.warnings[0].contains("app-1 holds 100%"),
            "{:?}",
            r.warnings
        );
        assert!(assess(report("ip_hash", &[20, 20]), false, false)
            .warnings
            .is_empty());
        assert!(assess(report("least_conn", &[40, 0]), false, false)
            .warnings
            .is_empty());
    }

    #[test]
    fn expect_idle_names_busy_instances() {
        let r = assess(report("least_conn", &[0, 3]), true, false);
        assert_eq!(r.verdict, "fail");
        assert_eq!(r.problems.len(), 1);
        assert!(r.problems[0].starts_with("app-2 is not idle: 3 connections"));
        assert_eq!(
            assess(report("least_conn", &[0, 0]), true, false).verdict,
            "ok"
        );
    }

    fn service(name: &str, state: &str, health: &str) -> ServiceStatus {
        ServiceStatus {
            name: name.into(),
            container: format!("exectl-s-{name}"),
            state: state.into(),
            health: health.into(),
            image: "i".into(),
            digest: "d".into(),
            uptime_s: None,
            restarts: 0,
            cpu_percent: None,
            mem_bytes: None,
            mem_usage_bytes: None,
            mem_limit_bytes: None,
            nofile: None,
            node: None,
        }
    }

    fn ha_stack(services: Vec<ServiceStatus>) -> Report {
        let mut r = report("least_conn", &[0]);
        r.expected = ["app-1", "app-2", "nginx", "postgres", "redis"]
            .map(String::from)
            .to_vec();
        r.instances
            .truncate(services.iter().filter(|s| is_app(&s.name)).count());
        r.services = services;
        r
    }

    #[test]
    fn a_missing_service_fails_and_is_named() {
        let r = assess(
            ha_stack(vec![
                service("app-2", "running", "healthy"),
                service("postgres", "running", "healthy"),
                service("redis", "running", "healthy"),
            ]),
            false,
            false,
        );
        assert_eq!(r.verdict, "fail");
        let missing: Vec<_> = r
            .problems
            .iter()
            .filter(|p| p.contains("is missing"))
            .collect();
        assert_eq!(missing.len(), 2, "{:?}", r.problems);
        assert!(missing[0].starts_with("app-1 is missing"), "{missing:?}");
        assert!(missing[1].starts_with("nginx is missing"), "{missing:?}");
    }

    #[test]
    fn a_stopped_or_created_service_fails_without_expect_flags() {
        for state in ["exited", "created", "paused", "restarting"] {
            let r = assess(
                ha_stack(vec![
                    service("app-1", "running", "healthy"),
                    service("app-2", "running", "healthy"),
                    service("nginx", "running", "none"),
                    service("postgres", state, "unhealthy"),
                    service("redis", "running", "healthy"),
                ]),
                false,
                false,
            );
            assert_eq!(r.verdict, "fail", "{state}");
            assert!(
                r.problems[0].starts_with(&format!("postgres is {state}")),
                "{:?}",
                r.problems
            );
        }
    }

    #[test]
    fn running_but_starting_warns_unless_health_is_expected() {
        let all = || {
            vec![
                service("app-1", "running", "starting"),
                service("app-2", "running", "healthy"),
                service("nginx", "running", "none"),
                service("postgres", "running", "healthy"),
                service("redis", "running", "healthy"),
            ]
        };
        let r = assess(ha_stack(all()), false, false);
        assert_eq!((r.verdict.as_str(), r.problems.len()), ("warn", 0));
        assert_eq!(assess(ha_stack(all()), false, true).verdict, "fail");
        let mut extra = all();
        extra.push(service("app-3", "running", "healthy"));
        let r = assess(ha_stack(extra), false, false);
        assert!(
            r.warnings
                .iter()
                .any(|w| w.starts_with("app-3 (exectl-s-app-3) carries")),
            "{:?}",
            r.warnings
        );
    }
}
