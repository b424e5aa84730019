//! Open-file, CPU and memory limits as the host's kernel applies them: the engine's own (what a container
//! may ask for) and each container's (read back after a deploy, and by status).

use exectl_core::scripts::Script;
use serde::Serialize;

/// fs.nr_open, then the "Max open files" line of the engine's process ($1 = the socket).
const ENGINE_LIMITS_BODY: &str = r#"[ -n "$pid" ] && grep '^Max open files' "/proc/$pid/limits"
true
"#;

/// The engine's limits; `socket` picks the dockerd among several. Read with `parse_max_nofile`.
pub fn engine_limits(socket: &str) -> Script {
    Script::new(format!(
        "cat /proc/sys/fs/nr_open\n{}{ENGINE_LIMITS_BODY}",
        exectl_core::scripts::dockerd::FIND_DOCKERD
    ))
    .arg(socket)
}

/// The hard open-files limit a container may ask for: the engine's own hard limit (a container's rlimit
/// is set by a child of dockerd, which cannot raise it without CAP_SYS_RESOURCE) and the kernel's
/// fs.nr_open, the lower of the two. None when neither could be read.
pub fn parse_max_nofile(out: &str) -> Option<u64> {
    let nr_open = out
        .lines()
        .next()
        .and_then(|l| l.trim().parse::<u64>().ok());
    let engine = parse_nofile(out).map(|(_, hard)| hard);
    match (engine, nr_open) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// (soft, hard) of "Max open files" in a /proc/PID/limits text.
pub fn parse_nofile(limits: &str) -> Option<(u64, u64)> {
    let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
    let mut nums = line["Max open files".len()..].split_whitespace().map(|w| {
        if w == "unlimited" {
            Some(u64::MAX)
        } else {
            w.parse().ok()
        }
    });
    Some((nums.next()??, nums.next()??))
}

/// Counts nginx's worker processes: the processes of the container's cgroup (that of its PID 1, $1) whose
/// command line starts with `nginx: worker process`, the title nginx gives its workers. cgroup v2, else
/// v1's memory controller. An empty or root cgroup path (the container is gone) prints nothing: read
/// there, it would count the host's and every other stack's nginx workers.
const NGINX_WORKERS_BODY: &str = r#"pid=$1
if [ -f /sys/fs/cgroup/cgroup.controllers ]; then
  p=$(sed -n 's/^0:://p' /proc/$pid/cgroup 2>/dev/null)
  d=/sys/fs/cgroup$p
else
  p=$(sed -n 's/^[0-9]*:memory:\(.*\)/\1/p' /proc/$pid/cgroup 2>/dev/null | head -n1)
  d=/sys/fs/cgroup/memory$p
fi
case "$p" in ""|/) exit 0;; esac
n=0
while read -r q; do
  case "$(tr '\0' ' ' < /proc/$q/cmdline 2>/dev/null)" in "nginx: worker process"*) n=$((n + 1));; esac
done < "$d/cgroup.procs"
echo "workers $n"
"#;

/// nginx's worker processes in the container whose PID 1 is `pid` (as the host sees it). Read with
/// `parse_nginx_workers`. With `worker_processes auto` this is the real count (one per CPU nginx sees),
/// so nginx's capacity is worker_connections × this / 2 proxied sockets.
pub fn nginx_workers(pid: i64) -> Script {
    Script::new(NGINX_WORKERS_BODY).arg(pid.to_string())
}

/// The count `nginx_workers` printed; None when it could not count (the container is gone).
pub fn parse_nginx_workers(out: &str) -> Option<u32> {
    out.lines()
        .find_map(|l| l.trim().strip_prefix("workers "))
        .and_then(|n| n.trim().parse().ok())
}

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
    /// nginx's worker processes, counted (the LB only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nginx_workers: Option<u32>,
    /// What differs from the spec, one message per limit.
    pub mismatches: Vec<String>,
}

/// Run on the target's host with the container's PID 1 as $1: its limits as the kernel applies them, and
/// its cgroup's CPU quota and memory limit (v2, else v1). Read from the host, so images without a shell
/// (Traefik is FROM scratch) are covered too.
const CONTAINER_BODY: &str = r#"pid=$1
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

/// One host command for every PID (read with `split_pids`, then `parse`): over SSH every command costs a
/// session round trip and a process on the SUT, so a stack's containers are read together.
pub fn container_limits(pids: &[i64]) -> Script {
    Script::new(format!(
        "one() {{\n{CONTAINER_BODY}}}\nfor p in \"$@\"; do echo \"{MARK}$p\"; one \"$p\" 2>/dev/null; done\n"
    ))
    .args(pids.iter().map(|p| p.to_string()))
}

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
        nginx_workers: None,
        mismatches: Vec::new(),
    }
}

pub(super) const MARK: &str = "@@exectl-pid ";

/// Each PID's part of the batched output (empty when missing); any key a script marks its parts with.
pub fn split_pids<K: ToString>(text: &str, pids: &[K]) -> Vec<String> {
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
    fn reads_nofile_from_proc_limits() {
        let text = "Limit                     Soft Limit           Hard Limit           Units\n\
                    Max open files            1024                 20000                files\n";
        assert_eq!(parse_nofile(text), Some((1024, 20000)));
        assert_eq!(
            parse_nofile("Max open files unlimited unlimited files\n"),
            Some((u64::MAX, u64::MAX))
        );
    }

    #[test]
    fn the_engine_limit_is_the_lower_of_dockerd_and_nr_open() {
        assert_eq!(engine_limits("/run/d.sock").args, ["/run/d.sock"]);
        let out =
            "1048576\nMax open files            1048576              524288               files\n";
        assert_eq!(parse_max_nofile(out), Some(524288));
        assert_eq!(parse_max_nofile("65536\n"), Some(65536));
        assert_eq!(parse_max_nofile("Max open files 10 20 files\n"), Some(20));
        assert_eq!(parse_max_nofile(""), None);
    }

    #[test]
    fn the_batched_read_names_each_pid() {
        let s = container_limits(&[7, 9]);
        assert_eq!(s.args, ["7", "9"]);
        assert!(s.body.starts_with("one() {\npid=$1\n"), "{}", s.body);
        assert!(
            s.body.ends_with(
                "for p in \"$@\"; do echo \"@@exectl-pid $p\"; one \"$p\" 2>/dev/null; done\n"
            ),
            "{}",
            s.body
        );
    }

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
    fn nginx_workers_are_counted_in_the_containers_own_cgroup() {
        let s = nginx_workers(4242);
        assert_eq!(s.args, ["4242"]);
        assert!(s.body.contains("\"nginx: worker process\"*)"), "{}", s.body);
        assert!(
            s.body.contains("case \"$p\" in \"\"|/) exit 0;; esac"),
            "{}",
            s.body
        );
        assert_eq!(parse_nginx_workers("workers 3\n"), Some(3));
        assert_eq!(parse_nginx_workers(""), None);
        assert_eq!(parse_nginx_workers("workers ?\n"), None);
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
