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
echo {FILES}; files "$d/cgroup.procs" "$pid"
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
echo {FILES}; files "/sys/fs/cgroup/memory$m/cgroup.procs" "$pid"
"#;

/// Open files of the cgroup's process holding the most, and that process's own nofile (nginx's workers
/// have worker_rlimit_nofile): "OPEN LIMIT", "OPEN -" when it is the container's main process (its limit
/// is read above), nothing when no fd folder could be read (not root) — never a made-up 0. A glob counts
/// the descriptors (a builtin, no `ls` per process), and one process's limits are read, not every one's:
/// dash reads a file a byte per call, and a limits file per process per second doubled the sampler's cost.
const FILES_FN: &str = r#"files() {
procs=$1; main=$2; bn=; bq=
while read -r q; do
  set -- /proc/$q/fd/*
  [ -e "$1" ] || continue
  if [ -z "$bn" ] || [ $# -gt "$bn" ]; then bn=$#; bq=$q; fi
done < "$procs"
[ -n "$bn" ] || return 0
lim=-
if [ "$bq" != "$main" ]; then
  while read -r w1 w2 w3 soft rest; do [ "$w1 $w2 $w3" = "Max open files" ] && lim=$soft; done < /proc/$bq/limits
fi
echo "$bn $lim"
}
"#;

const LOAD: &str = "@@exectl-loadavg";
/// Opens a PID's open-files figure, after what `limits::parse` reads.
const FILES: &str = "--files";
const TIMES: &str = "@@exectl-times";

/// The sampler's script, kept running (`HostShell::open_loop`): each request line is the PIDs to read,
/// each answer every PID's figures, the load average and `times` — the shell's CPU so far, cumulative,
/// since one process serves every sample (a process and, over SSH, a session per sample cost the SUT
/// ten times the reading itself: BENCHMARKS.md "Bench sampler").
pub fn sample_loop() -> Script {
    Script::new(format!(
        "exec 2>/dev/null\n{FILES_FN}if [ -f /sys/fs/cgroup/cgroup.controllers ]; then\none() {{\n{v2}}}\nelse\none() {{\n{v1}}}\nfi\nwhile read -r req; do\nset -- $req\nfor p in \"$@\"; do echo \"{MARK}$p\"; one \"$p\"; done\necho {LOAD}; read -r l < /proc/loadavg; echo \"$l\"\necho {TIMES}; times\necho {END}\ndone\n",
        v2 = V2_BODY.replace("{FILES}", FILES),
        v1 = V1_BODY.replace("{FILES}", FILES),
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
    /// Per PID: the most open files of a process of its cgroup, and that process's nofile (None: the
    /// PID's own, which `limits::parse` reads).
    pub open_files: Vec<Option<(u64, Option<u64>)>>,
    pub load_avg: Option<f64>,
    /// CPU seconds the looping script and its children have used on the host so far (user + system).
    pub own_cpu_s: Option<f64>,
}

pub fn parse(text: &str, pids: &[i64]) -> Read {
    let (containers, rest) = text.split_once(LOAD).unwrap_or((text, ""));
    let (load, times) = rest.split_once(TIMES).unwrap_or((rest, ""));
    let (per_pid, open_files) = split_pids(containers, pids)
        .into_iter()
        .map(|t| match t.split_once(&format!("{FILES}\n")) {
            Some((limits, files)) => (limits.to_string(), open_files(files)),
            None => (t, None),
        })
        .unzip();
    Read {
        per_pid,
        open_files,
        load_avg: load.split_whitespace().next().and_then(|w| w.parse().ok()),
        own_cpu_s: parse_times(times),
    }
}

fn open_files(text: &str) -> Option<(u64, Option<u64>)> {
    let mut w = text.split_whitespace();
    let open = w.next()?.parse().ok()?;
    Some((open, w.next().and_then(|l| l.parse().ok())))
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
            "{MARK}11\nA\n{FILES}\n900 1024\n{MARK}22\nB\n{FILES}\n{MARK}33\nC\n{FILES}\n12 -\n{LOAD}\n0.42 0.30 0.20 1/300 999\n{TIMES}\n0m0.010s 0m0.004s\n0m1.500s 0m0.020s\n"
        );
        let r = parse(&out, &[22, 11, 33]);
        assert_eq!(r.per_pid, ["B\n", "A\n", "C\n"]);
        assert_eq!(
            r.open_files,
            vec![None, Some((900, Some(1024))), Some((12, None))],
            "none read is none, not 0; '-' is the main process's own limit"
        );
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
        // This process's cgroup: some process in it holds files, within its limit (root reads every
        // process's fd folder; CI runs as root).
        let (open, limit) = first.open_files[0].expect("open files read");
        let own = || {
            crate::shell::scripts::limits::parse("self", &first.per_pid[0])
                .nofile_soft
                .unwrap()
        };
        let limit = limit.unwrap_or_else(own);
        assert!(open >= 3 && open <= limit, "{open} of {limit}");
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
