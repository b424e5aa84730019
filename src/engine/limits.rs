//! Read back the limits really in effect inside each container (nofile of PID 1, CPU quota, memory
//! limit), so a deploy never silently runs with other limits than asked.

use super::desired::DesiredService;
use crate::target::{exec, parse_nofile};
use anyhow::Result;
use bollard::Docker;
use serde::Serialize;

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Effective {
    pub service: String,
    pub nofile_soft: Option<u64>,
    pub nofile_hard: Option<u64>,
    /// CPUs from the cgroup quota/period; None = unlimited.
    pub cpus: Option<f64>,
    /// Bytes; None = unlimited.
    pub memory: Option<u64>,
    /// What differs from the spec, one message per limit.
    pub mismatches: Vec<String>,
}

/// cgroup v1 and v2 paths, read in one exec.
const SCRIPT: &str = "cat /proc/1/limits; echo '--cpu'; \
    cat /sys/fs/cgroup/cpu.max 2>/dev/null || echo \"$(cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us) $(cat /sys/fs/cgroup/cpu/cpu.cfs_period_us)\"; \
    echo '--mem'; cat /sys/fs/cgroup/memory.max 2>/dev/null || cat /sys/fs/cgroup/memory/memory.limit_in_bytes";

/// Parse the script's output (pure, for tests).
pub fn parse(service: &str, text: &str) -> Effective {
    let (limits, rest) = text.split_once("--cpu").unwrap_or((text, ""));
    let (cpu, mem) = rest.split_once("--mem").unwrap_or((rest, ""));
    let nofile = parse_nofile(limits);
    let mut cpu_words = cpu.split_whitespace();
    let cpus = match (cpu_words.next(), cpu_words.next()) {
        (Some(q), Some(p)) => match (q.parse::<f64>(), p.parse::<f64>()) {
            (Ok(q), Ok(p)) if q > 0.0 && p > 0.0 => Some(q / p),
            _ => None,
        },
        _ => None,
    };
    // cgroup v1 reports "no limit" as a huge number.
    let memory = mem.trim().parse::<u64>().ok().filter(|m| *m < (1u64 << 62));
    Effective {
        service: service.to_string(),
        nofile_soft: nofile.map(|n| n.0),
        nofile_hard: nofile.map(|n| n.1),
        cpus,
        memory,
        mismatches: Vec::new(),
    }
}

/// Compare with what the service asked for.
pub fn compare(mut e: Effective, s: &DesiredService) -> Effective {
    let svc = &s.service;
    if let Some(want) = svc.ulimits.get("nofile") {
        if e.nofile_soft != Some(want.soft) || e.nofile_hard != Some(want.hard) {
            e.mismatches.push(format!(
                "nofile is {:?}/{:?}, asked {}/{}",
                e.nofile_soft, e.nofile_hard, want.soft, want.hard
            ));
        }
    }
    if let Some(l) = svc.deploy.as_ref().map(|d| &d.resources.limits) {
        let want_cpus: f64 = l.cpus.parse().unwrap_or(0.0);
        if e.cpus.map(|c| (c - want_cpus).abs() > 0.01).unwrap_or(true) {
            e.mismatches
                .push(format!("cpus is {:?}, asked {}", e.cpus, l.cpus));
        }
        let want_mem = super::apply::memory_bytes(&l.memory).unwrap_or(0) as u64;
        if e.memory != Some(want_mem) {
            e.mismatches
                .push(format!("memory is {:?}, asked {want_mem}", e.memory));
        }
    }
    e
}

/// Read back every service that asks for limits.
pub async fn read_back(docker: &Docker, services: &[DesiredService]) -> Result<Vec<Effective>> {
    let mut out = Vec::new();
    for s in services {
        if s.service.ulimits.is_empty() && s.service.deploy.is_none() {
            continue;
        }
        let o = exec(docker, &s.container_name, &["sh", "-c", SCRIPT], None).await?;
        out.push(compare(parse(&s.name, &o.stdout), s));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_cgroup_v1_and_v2() {
        let v1 = "Max open files            20000                20000                files\n--cpu\n200000 100000\n--mem\n2147483648\n";
        let e = parse("app-1", v1);
        assert_eq!((e.nofile_soft, e.nofile_hard), (Some(20000), Some(20000)));
        assert_eq!(e.cpus, Some(2.0));
        assert_eq!(e.memory, Some(2 << 30));
        let v2 = "Max open files 1024 4096 files\n--cpu\nmax 100000\n--mem\nmax\n";
        let e = parse("x", v2);
        assert_eq!((e.cpus, e.memory), (None, None));
    }
}
