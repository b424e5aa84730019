//! bench's host command: one script kept running that answers every sample with every container's
//! cgroup figures (the limits script's body), the host's load average and its own CPU time (`times`), so
//! the sampler's cost on the SUT is measured, not guessed.

use super::limits::{split_pids, MARK};
use crate::shell::{Script, END};

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

/// The sampler's script, kept running (`HostShell::open_loop`): each request line is the PIDs to read,
/// each answer every PID's figures, the load average and `times` — the shell's CPU so far, cumulative,
/// since one process serves every sample (a process and, over SSH, a session per sample cost the SUT
/// ten times the reading itself: BENCHMARKS.md "Bench sampler").
pub fn sample_loop() -> Script {
    Script::new(format!(
        "exec 2>/dev/null\nif [ -f /sys/fs/cgroup/cgroup.controllers ]; then\none() {{\n{V2_BODY}}}\nelse\none() {{\n{V1_BODY}}}\nfi\nwhile read -r req; do\nset -- $req\nfor p in \"$@\"; do echo \"{MARK}$p\"; one \"$p\"; done\necho {LOAD}; read -r l < /proc/loadavg; echo \"$l\"\necho {TIMES}; times\necho {END}\ndone\n"
    ))
}

/// The request for one sample: the PIDs, space-separated.
pub fn request(pids: &[i64]) -> String {
    pids.iter()
        .map(i64::to_string)
        .collect::<Vec<_>>()
        .join(" ")
}

/// One sample's output, split.
#[derive(Debug, Clone, PartialEq)]
pub struct Read {
    /// The limits script's text per PID, in the order given (parse each with `limits::parse`).
    pub per_pid: Vec<String>,
    pub load_avg: Option<f64>,
    /// CPU seconds the looping script and its children have used on the host so far (user + system).
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
    use crate::shell::HostShell;

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

    /// One process answers every sample and its `times` only grows.
    #[test]
    fn the_loop_reads_every_pid_then_the_host_in_one_process() {
        use crate::shell::{HostShell, Local};
        let pid = std::process::id() as i64;
        let mut lp = Local.open_loop(&sample_loop()).unwrap();
        let first = parse(&lp.ask(&request(&[pid, 1])).unwrap(), &[pid, 1]);
        assert_eq!(first.per_pid.len(), 2);
        assert!(first.per_pid[0].contains("Max open files"), "{first:?}");
        assert!(first.load_avg.is_some(), "{first:?}");
        let mut last = first.own_cpu_s.unwrap();
        for _ in 0..20 {
            let r = parse(&lp.ask(&request(&[pid])).unwrap(), &[pid]);
            let now = r.own_cpu_s.unwrap();
            assert!(now >= last, "cumulative: {now} after {last}");
            last = now;
        }
        assert_eq!(request(&[5, 6]), "5 6");
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
        let mut lp = crate::shell::Local.open_loop(&sample_loop()).unwrap();
        let fast = parse(&lp.ask(&request(&[pid])).unwrap(), &[pid]);
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
