//! Read back the limits really in effect inside each container (nofile of PID 1, CPU quota, memory
//! limit), so a deploy never silently runs with other limits than asked.

use super::desired::DesiredService;
use crate::shell::scripts::limits::container_limits;
use crate::sut::Target;
use anyhow::{Context, Result};

pub use crate::shell::scripts::limits::{parse, split_pids, Effective};

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

/// The limits script's output for each PID, in order, from one host command.
pub async fn read_pids(target: &Target, pids: &[i64]) -> Result<Vec<String>> {
    if pids.is_empty() {
        return Ok(Vec::new());
    }
    let text = target.host_shell(&container_limits(pids)).await?;
    Ok(split_pids(&text, pids))
}
