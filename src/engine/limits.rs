//! Read back the limits really in effect inside each container (nofile of PID 1, CPU quota, memory
//! limit, and the LB's worker processes), so a deploy never silently runs with other limits than asked.

use super::desired::DesiredService;
use crate::shell::scripts::limits::{container_limits, nginx_workers as workers_script};
use crate::sut::Target;
use anyhow::{Context, Result};
use exectl_core::readiness::LABEL_ROLE;
use exectl_core::spec::WorkerProcesses;

pub use crate::shell::scripts::limits::{parse, parse_nginx_workers, split_pids, Effective};

/// The LB's worker processes against the spec's `worker_processes` (with `auto` any count is right: it
/// is one per CPU nginx sees).
pub fn compare_workers(mut e: Effective, workers: Option<WorkerProcesses>) -> Effective {
    if let Some(WorkerProcesses::Count(want)) = workers {
        if e.nginx_workers != Some(want) {
            e.mismatches.push(format!(
                "worker processes are {}, asked {want}",
                shown(e.nginx_workers, "uncounted")
            ));
        }
    }
    e
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

fn is_lb(s: &DesiredService) -> bool {
    s.service.labels.get(LABEL_ROLE).map(String::as_str) == Some("lb")
}

/// Read back every service that asks for limits (one host command for all of them, and one more for
/// the LB's worker processes, run at the same time; the containers' PIDs inspected concurrently).
pub async fn read_back(
    target: &Target,
    services: &[DesiredService],
    workers: Option<WorkerProcesses>,
) -> Result<Vec<Effective>> {
    let wanted: Vec<&DesiredService> = services
        .iter()
        .filter(|s| !(s.service.ulimits.is_empty() && s.service.deploy.is_none()))
        .collect();
    let pids = futures_util::future::try_join_all(
        wanted.iter().map(|s| pid_of(target, &s.container_name)),
    )
    .await?;
    let lb_pids: Vec<i64> = wanted
        .iter()
        .zip(&pids)
        .filter(|(s, _)| is_lb(s))
        .map(|(_, pid)| *pid)
        .collect();
    let counts =
        futures_util::future::try_join_all(lb_pids.iter().map(|pid| count_workers(target, *pid)));
    let (read, counts) = tokio::try_join!(read_pids(target, &pids), counts)?;
    let mut counts = counts.into_iter();
    let mut out = Vec::new();
    for (s, text) in wanted.into_iter().zip(read) {
        let mut e = compare(parse(&s.name, &text), s);
        if is_lb(s) {
            e.nginx_workers = counts.next().flatten();
            e = compare_workers(e, workers);
        }
        out.push(e);
    }
    Ok(out)
}

/// nginx's worker processes in `container` (its LB), counted on the host: None when they could not be
/// counted (the container is not running). With `worker_processes auto` this is the only way to know
/// the LB's capacity (worker_connections × workers / 2 sockets).
pub async fn nginx_workers(target: &Target, container: &str) -> Result<Option<u32>> {
    count_workers(target, pid_of(target, container).await?).await
}

async fn count_workers(target: &Target, pid: i64) -> Result<Option<u32>> {
    let out = target.host_shell(&workers_script(pid)).await?;
    Ok(parse_nginx_workers(&out))
}

/// PID 1 of a running container, as the host sees it.
pub async fn pid_of(target: &Target, container: &str) -> Result<i64> {
    let info = target.docker.inspect_container(container, None).await?;
    info.state
        .and_then(|s| s.pid)
        .filter(|p| *p > 0)
        .with_context(|| format!("{container} is not running"))
}

/// The limits script's output for each PID, in order: from one host command on a remote target (each
/// costs an SSH session), from one per CPU at once on the local one (the script starts a few processes
/// per PID, which the CPUs share out).
pub async fn read_pids(target: &Target, pids: &[i64]) -> Result<Vec<String>> {
    if pids.is_empty() {
        return Ok(Vec::new());
    }
    let shells = match target.is_remote() {
        true => 1,
        false => std::thread::available_parallelism().map_or(1, |n| n.get()),
    };
    let scripts: Vec<_> = pids
        .chunks(pids.len().div_ceil(shells))
        .map(container_limits)
        .collect();
    let texts =
        futures_util::future::try_join_all(scripts.iter().map(|s| target.host_shell(s))).await?;
    Ok(split_pids(&texts.concat(), pids))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_count_of_workers_is_checked_auto_is_not() {
        let read = |n: Option<u32>| Effective {
            nginx_workers: n,
            ..parse("nginx", "")
        };
        let count = Some(WorkerProcesses::Count(3));
        assert!(compare_workers(read(Some(3)), count).mismatches.is_empty());
        assert_eq!(
            compare_workers(read(Some(2)), count).mismatches,
            ["worker processes are 2, asked 3"]
        );
        assert_eq!(
            compare_workers(read(None), count).mismatches,
            ["worker processes are uncounted, asked 3"]
        );
        let auto = Some(WorkerProcesses::Auto);
        assert!(compare_workers(read(Some(7)), auto).mismatches.is_empty());
    }
}
