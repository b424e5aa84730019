//! bench's one host command per sample: every container's cgroup figures (the limits script's body),
//! the host's load average, and the command's own CPU time (`times`), so the sampler's cost on the SUT
//! is measured, not guessed.

use super::limits::{split_pids, MARK};
use crate::shell::Script;

/// The limits script's output for one PID from shell builtins only (no process per file): at 1 Hz over a
/// stack's containers, the `cat`/`sed` processes of the limits script would be most of the sampler's
/// cost (measured: 65 ms of CPU per sample of 5 containers with them, under 5 ms without). cgroup v2.
const V2_BODY: &str = r#"pid=$1
while IFS= read -r l; do case "$l" in "Max open files"*) echo "$l";; esac; done < /proc/$pid/limits
cg=
while IFS= read -r l; do case "$l" in 0::*) cg=${l#0::};; esac; done < /proc/$pid/cgroup
d=/sys/fs/cgroup$cg
echo --cpu; read -r l < "$d/cpu.max"; echo "$l"
echo --mem; read -r l < "$d/memory.max"; echo "$l"
u=; while read -r k v; do [ "$k" = usage_usec ] && u=$v; done < "$d/cpu.stat"
echo --usage; [ -n "$u" ] && echo $((u * 1000))
a=; i=; while read -r k v; do case $k in anon) a=$v;; inactive_file) i=$v;; esac; done < "$d/memory.stat"
echo --rss; echo "$a"
echo --used; read -r l < "$d/memory.current"; echo "$l"; echo "$i"
"#;

/// The same for cgroup v1 (one folder per controller).
const V1_BODY: &str = r#"pid=$1
while IFS= read -r l; do case "$l" in "Max open files"*) echo "$l";; esac; done < /proc/$pid/limits
c=; a=; m=
while IFS=: read -r n ctl path; do
  case "$ctl" in
    cpu,cpuacct|cpuacct,cpu) c=$path; a=$path;;
    cpu) c=$path;;
    cpuacct) a=$path;;
    memory) m=$path;;
  esac
done < /proc/$pid/cgroup
read -r q < "/sys/fs/cgroup/cpu$c/cpu.cfs_quota_us"; read -r p < "/sys/fs/cgroup/cpu$c/cpu.cfs_period_us"
echo --cpu; echo "$q $p"
echo --mem; read -r l < "/sys/fs/cgroup/memory$m/memory.limit_in_bytes"; echo "$l"
echo --usage; read -r l < "/sys/fs/cgroup/cpuacct$a/cpuacct.usage"; echo "$l"
r=; i=; while read -r k v; do case $k in rss) r=$v;; total_inactive_file) i=$v;; esac; done < "/sys/fs/cgroup/memory$m/memory.stat"
echo --rss; echo "$r"
echo --used; read -r l < "/sys/fs/cgroup/memory$m/memory.usage_in_bytes"; echo "$l"; echo "$i"
"#;

const LOAD: &str = "@@exectl-loadavg";
const TIMES: &str = "@@exectl-times";

pub fn sample(pids: &[i64]) -> Script {
    Script::new(format!(
        "if [ -f /sys/fs/cgroup/cgroup.controllers ]; then\none() {{\n{V2_BODY}}}\nelse\none() {{\n{V1_BODY}}}\nfi\nfor p in \"$@\"; do echo \"{MARK}$p\"; one \"$p\" 2>/dev/null; done\necho {LOAD}; read -r l < /proc/loadavg; echo \"$l\"\necho {TIMES}; times\n"
    ))
    .args(pids.iter().map(|p| p.to_string()))
}

/// One sample's output, split.
#[derive(Debug, Clone, PartialEq)]
pub struct Read {
    /// The limits script's text per PID, in the order given (parse each with `limits::parse`).
    pub per_pid: Vec<String>,
    pub load_avg: Option<f64>,
    /// CPU seconds the command and its children used on the host (user + system).
    pub own_cpu_s: Option<f64>,
}

pub fn parse(text: &str, pids: &[i64]) -> Read {
    let (containers, rest) = text.split_once(LOAD).unwrap_or((text, ""));
    let (load, times) = rest.split_once(TIMES).unwrap_or((rest, ""));
    Read {
        per_pid: split_pids(containers, pids),
        load_avg: load.split_whitespace().next().and_then(|w| w.parse().ok()),
        own_cpu_s: parse_times(times),
    }
}

/// `times` prints the shell's user and system time, then its children's: "0m0.010s 0m0.004s".
fn parse_times(text: &str) -> Option<f64> {
    let words: Vec<f64> = text
        .split_whitespace()
        .map(minutes_seconds)
        .collect::<Option<_>>()?;
    (!words.is_empty()).then(|| words.iter().sum())
}

fn minutes_seconds(w: &str) -> Option<f64> {
    let (m, s) = w.strip_suffix('s')?.split_once('m')?;
    Some(m.parse::<f64>().ok()? * 60.0 + s.parse::<f64>().ok()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_containers_load_and_its_own_cost() {
        let out = format!(
            "{MARK}11\nA\n{MARK}22\nB\n{LOAD}\n0.42 0.30 0.20 1/300 999\n{TIMES}\n0m0.010s 0m0.004s\n0m1.500s 0m0.020s\n"
        );
        let r = parse(&out, &[22, 11]);
        assert_eq!(r.per_pid, vec!["B\n".to_string(), "A\n".to_string()]);
        assert_eq!(r.load_avg, Some(0.42));
        assert!((r.own_cpu_s.unwrap() - 1.534).abs() < 1e-9);
        assert_eq!(parse("", &[1]).load_avg, None);
        assert_eq!(parse_times("garbage"), None);
    }

    #[test]
    fn the_script_reads_every_pid_then_the_host() {
        let s = sample(&[5, 6]);
        assert_eq!(s.args, vec!["5", "6"]);
        assert!(
            s.body.contains("/proc/loadavg") && s.body.contains("; times\n"),
            "{}",
            s.body
        );
    }

    /// The builtins-only body reads what the limits script reads, here on this host's own process.
    #[test]
    fn builtins_read_the_same_figures_as_the_limits_script() {
        use crate::shell::scripts::limits;
        let pid = std::process::id() as i64;
        let run = |script: &Script| {
            let out = std::process::Command::new("sh")
                .arg("-c")
                .arg(&script.body)
                .arg("sh")
                .args(&script.args)
                .output()
                .unwrap();
            String::from_utf8(out.stdout).unwrap()
        };
        let fast = parse(&run(&sample(&[pid])), &[pid]);
        let slow = limits::split_pids(&run(&limits::container_limits(&[pid])), &[pid]);
        let (a, b) = (
            limits::parse("self", &fast.per_pid[0]),
            limits::parse("self", &slow[0]),
        );
        assert_eq!(
            (a.nofile_soft, a.nofile_hard, a.cpus, a.memory),
            (b.nofile_soft, b.nofile_hard, b.cpus, b.memory)
        );
        assert!(
            a.nofile_soft.is_some() && a.rss_bytes.is_some() && a.cpu_usage_ns.is_some(),
            "{a:?}"
        );
        assert!(fast.load_avg.is_some() && fast.own_cpu_s.is_some());
        assert!(!fast.per_pid[0].is_empty());
    }
}
