//! Read back the limits really in effect inside each container (nofile of PID 1, CPU quota, memory
//! limit), so a deploy never silently runs with other limits than asked.

use super::desired::DesiredService;
use crate::target::{parse_nofile, Target};
use anyhow::{Context, Result};
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
    /// Cumulative CPU time of the container's cgroup (for CPU % between two reads).
    #[serde(skip)]
    pub cpu_usage_ns: Option<u64>,
    /// Resident anonymous memory of the cgroup (what the app itself holds).
    #[serde(skip)]
    pub rss_bytes: Option<u64>,
    /// The cgroup's usage less its inactive file cache: the figure `docker stats` shows.
    #[serde(skip)]
    pub usage_bytes: Option<u64>,
    /// What differs from the spec, one message per limit.
    pub mismatches: Vec<String>,
}

/// Run on the target's host with the container's PID 1 as $1: its limits as the kernel applies them, and
/// its cgroup's CPU quota and memory limit (v2, else v1). Read from the host, so images without a shell
/// (Traefik is FROM scratch) are covered too.
const SCRIPT: &str = r#"pid=$1
cat /proc/$pid/limits
echo --cpu
if [ -f /sys/fs/cgroup/cgroup.controllers ]; then
  p=$(sed -n 's/^0:://p' /proc/$pid/cgroup)
  cat "/sys/fs/cgroup$p/cpu.max"; echo --mem; cat "/sys/fs/cgroup$p/memory.max"
  echo --usage; echo $(( $(sed -n 's/^usage_usec //p' "/sys/fs/cgroup$p/cpu.stat") * 1000 ))
  echo --rss; sed -n 's/^anon //p' "/sys/fs/cgroup$p/memory.stat"
  echo --used; cat "/sys/fs/cgroup$p/memory.current"; sed -n 's/^inactive_file //p' "/sys/fs/cgroup$p/memory.stat"
else
  c=$(sed -n 's/^[0-9]*:\(cpu,cpuacct\|cpu\):\(.*\)/\2/p' /proc/$pid/cgroup | head -n1)
  m=$(sed -n 's/^[0-9]*:memory:\(.*\)/\1/p' /proc/$pid/cgroup | head -n1)
  echo "$(cat /sys/fs/cgroup/cpu$c/cpu.cfs_quota_us) $(cat /sys/fs/cgroup/cpu$c/cpu.cfs_period_us)"
  echo --mem; cat /sys/fs/cgroup/memory$m/memory.limit_in_bytes
  a=$(sed -n 's/^[0-9]*:\(cpuacct,cpu\|cpu,cpuacct\|cpuacct\):\(.*\)/\2/p' /proc/$pid/cgroup | head -n1)
  echo --usage; cat /sys/fs/cgroup/cpuacct$a/cpuacct.usage
  echo --rss; sed -n 's/^rss //p' /sys/fs/cgroup/memory$m/memory.stat
  echo --used; cat /sys/fs/cgroup/memory$m/memory.usage_in_bytes; sed -n 's/^total_inactive_file //p' /sys/fs/cgroup/memory$m/memory.stat
fi
"#;

/// Parse the script's output (pure, for tests).
pub fn parse(service: &str, text: &str) -> Effective {
    let (limits, rest) = text.split_once("--cpu").unwrap_or((text, ""));
    let (cpu, rest) = rest.split_once("--mem").unwrap_or((rest, ""));
    let (mem, rest) = rest.split_once("--usage").unwrap_or((rest, ""));
    let (usage, rest) = rest.split_once("--rss").unwrap_or((rest, ""));
    let (rss, used) = rest.split_once("--used").unwrap_or((rest, ""));
    // usage, then inactive file pages: docker stats shows their difference.
    let mut used = used.split_whitespace().map(|w| w.parse::<u64>().ok());
    let usage_bytes = match (used.next().flatten(), used.next().flatten()) {
        (Some(u), Some(i)) => Some(u.saturating_sub(i)),
        (Some(u), None) => Some(u),
        _ => None,
    };
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
        cpu_usage_ns: usage.trim().parse().ok(),
        rss_bytes: rss.trim().parse().ok(),
        usage_bytes,
        mismatches: Vec::new(),
    }
}

/// Compare with what the service asked for.
pub fn compare(mut e: Effective, s: &DesiredService) -> Effective {
    let svc = &s.service;
    if let Some(want) = svc.ulimits.get("nofile") {
        if e.nofile_soft != Some(want.soft) || e.nofile_hard != Some(want.hard) {
            e.mismatches.push(format!(
                "nofile is {}/{}, asked {}/{}",
                shown(e.nofile_soft, "unknown"),
                shown(e.nofile_hard, "unknown"),
                want.soft,
                want.hard
            ));
        }
    }
    if let Some(l) = svc.deploy.as_ref().map(|d| &d.resources.limits) {
        let want_cpus: f64 = l.cpus.parse().unwrap_or(0.0);
        if e.cpus.map(|c| (c - want_cpus).abs() > 0.01).unwrap_or(true) {
            e.mismatches.push(format!(
                "cpus is {}, asked {}",
                shown(e.cpus, "unlimited"),
                l.cpus
            ));
        }
        let want_mem = super::apply::memory_bytes(&l.memory).unwrap_or(0) as u64;
        if e.memory != Some(want_mem) {
            e.mismatches.push(format!(
                "memory is {}, asked {want_mem}",
                shown(e.memory, "unlimited")
            ));
        }
    }
    e
}

/// A read-back value for people: the number, or what its absence means (never Rust's `None`).
fn shown<T: std::fmt::Display>(v: Option<T>, absent: &str) -> String {
    v.map(|v| v.to_string())
        .unwrap_or_else(|| absent.to_string())
}

/// Read back every service that asks for limits (one host command for all of them).
pub async fn read_back(target: &Target, services: &[DesiredService]) -> Result<Vec<Effective>> {
    let wanted: Vec<&DesiredService> = services
        .iter()
        .filter(|s| !(s.service.ulimits.is_empty() && s.service.deploy.is_none()))
        .collect();
    let mut pids = Vec::new();
    for s in &wanted {
        pids.push(pid_of(target, &s.container_name).await?);
    }
    let read = read_pids(target, &pids).await?;
    Ok(wanted
        .into_iter()
        .zip(read)
        .map(|(s, text)| compare(parse(&s.name, &text), s))
        .collect())
}

/// PID 1 of a running container, as the host sees it.
pub async fn pid_of(target: &Target, container: &str) -> Result<i64> {
    let info = target.docker.inspect_container(container, None).await?;
    info.state
        .and_then(|s| s.pid)
        .filter(|p| *p > 0)
        .with_context(|| format!("{container} is not running"))
}

/// The script's output for each PID, in order, from one host command: over SSH every command costs a
/// session round trip and a process on the SUT, so a stack's containers are read together.
pub async fn read_pids(target: &Target, pids: &[i64]) -> Result<Vec<String>> {
    if pids.is_empty() {
        return Ok(Vec::new());
    }
    let script = format!(
        "one() {{\n{SCRIPT}}}\nfor p in \"$@\"; do echo \"{MARK}$p\"; one \"$p\" 2>/dev/null; done\n"
    );
    let args: Vec<String> = pids.iter().map(|p| p.to_string()).collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let text = target.host_shell(&script, &args).await?;
    Ok(split_pids(&text, pids))
}

const MARK: &str = "@@exectl-pid ";

/// Each PID's part of the batched output (empty when missing).
pub fn split_pids(text: &str, pids: &[i64]) -> Vec<String> {
    let mut parts: std::collections::HashMap<String, String> = Default::default();
    for chunk in text.split(MARK).skip(1) {
        let (pid, body) = chunk.split_once('\n').unwrap_or((chunk, ""));
        parts.insert(pid.trim().to_string(), body.to_string());
    }
    pids.iter()
        .map(|p| parts.remove(&p.to_string()).unwrap_or_default())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_cgroup_v1_and_v2() {
        let v1 = "Max open files            20000                20000                files\n--cpu\n200000 100000\n--mem\n2147483648\n--usage\n123456789\n--rss\n4096\n--used\n10000\n3000\n";
        let e = parse("app-1", v1);
        assert_eq!(
            (e.cpu_usage_ns, e.rss_bytes, e.usage_bytes),
            (Some(123_456_789), Some(4096), Some(7000))
        );
        assert_eq!((e.nofile_soft, e.nofile_hard), (Some(20000), Some(20000)));
        assert_eq!(e.cpus, Some(2.0));
        assert_eq!(e.memory, Some(2 << 30));
        let v2 = "Max open files 1024 4096 files\n--cpu\nmax 100000\n--mem\nmax\n";
        let e = parse("x", v2);
        assert_eq!((e.cpus, e.memory), (None, None));
    }

    #[test]
    fn splits_a_batched_read_by_pid() {
        let text = "@@exectl-pid 7\nMax open files 1 2 files\n--cpu\n@@exectl-pid 9\nMax open files 3 4 files\n";
        let parts = split_pids(text, &[9, 7, 11]);
        assert_eq!(parse("a", &parts[0]).nofile_hard, Some(4));
        assert_eq!(parse("b", &parts[1]).nofile_hard, Some(2));
        assert_eq!(parts[2], "");
    }
}
