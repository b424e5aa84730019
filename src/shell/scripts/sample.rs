//! bench's host command: one script kept running that answers every sample with each container's cgroup
//! figures, the docker-proxy processes of the stack's published ports, the host's load average and its
//! own CPU time (`times`), so the sampler's cost on the SUT is measured, not guessed.
//!
//! A container is read by its cgroup, never through a process id: after a kill or a restart a PID is
//! gone or someone else's, and /proc/PID/cgroup of a gone PID reads empty — which, joined to
//! /sys/fs/cgroup, is the host's root cgroup (a killed app-2 read as 253554 % CPU). The sampler resolves a
//! container's cgroup once per start (`Item::Resolve` on the PID the engine gives) and reads that folder;
//! when the folder is gone (the container exited) there are no figures, and an empty or root path is
//! never read.

use super::limits::{split_pids, MARK};
use crate::shell::END;
use exectl_core::scripts::Script;

/// One container's figures from its cgroup folder ($1, relative to the hierarchy's root), from shell
/// builtins only (no process per file: at 1 Hz over a stack's containers, `cat`/`sed` processes would be
/// most of the sampler's cost — measured 65 ms of CPU per sample of 5 containers with them, under 5 ms
/// without). Nothing when the folder is not there. cgroup v2.
const V2_BODY: &str = r#"cg=$1
case "$cg" in /?*) ;; *) return 0;; esac
d=/sys/fs/cgroup$cg
[ -d "$d" ] || return 0
echo --cpu; read -r l < "$d/cpu.max"; echo "$l"
echo --mem; read -r l < "$d/memory.max"; echo "$l"
u=; while read -r k v; do [ "$k" = usage_usec ] && u=$v; done < "$d/cpu.stat"
echo --usage; [ -n "$u" ] && echo $((u * 1000))
a=; i=; while read -r k v; do case $k in anon) a=$v;; inactive_file) i=$v;; esac; done < "$d/memory.stat"
echo --rss; echo "$a"
echo --used; read -r l < "$d/memory.current"; echo "$l"; echo "$i"
echo {FILES}; files "$d/cgroup.procs"
"#;

/// The same for cgroup v1: Docker gives a container the same path under every controller.
const V1_BODY: &str = r#"cg=$1
case "$cg" in /?*) ;; *) return 0;; esac
m=/sys/fs/cgroup/memory$cg
[ -d "$m" ] || return 0
read -r q < "/sys/fs/cgroup/cpu$cg/cpu.cfs_quota_us"; read -r p < "/sys/fs/cgroup/cpu$cg/cpu.cfs_period_us"
echo --cpu; echo "$q $p"
echo --mem; read -r l < "$m/memory.limit_in_bytes"; echo "$l"
echo --usage; read -r l < "/sys/fs/cgroup/cpuacct$cg/cpuacct.usage"; echo "$l"
r=; i=; while read -r k v; do case $k in rss) r=$v;; total_inactive_file) i=$v;; esac; done < "$m/memory.stat"
echo --rss; echo "$r"
echo --used; read -r l < "$m/memory.usage_in_bytes"; echo "$l"; echo "$i"
echo {FILES}; files "$m/cgroup.procs"
"#;

/// Open files of the cgroup's process holding the most, and that process's own nofile (nginx's workers
/// have worker_rlimit_nofile): "OPEN LIMIT", nothing when no fd folder could be read (not root) — never
/// a made-up 0. A glob counts the descriptors (a builtin, no `ls` per process), and one process's limits
/// are read, not every one's: dash reads a file a byte per call, and a limits file per process per
/// second doubled the sampler's cost.
const FILES_FN: &str = r#"files() {
bn=; bq=
while read -r q; do
  set -- /proc/$q/fd/*
  [ -e "$1" ] || continue
  if [ -z "$bn" ] || [ $# -gt "$bn" ]; then bn=$#; bq=$q; fi
done < "$1"
[ -n "$bn" ] || return 0
lim=-
while read -r w1 w2 w3 soft rest; do [ "$w1 $w2 $w3" = "Max open files" ] && lim=$soft; done < /proc/$bq/limits
echo "$bn $lim"
}
"#;

/// A PID's cgroup lines; a docker-proxy's state ("alive OPEN": its comm is docker-proxy and it holds
/// descriptors — a zombie holds none — else "gone"); and the docker-proxy processes publishing a port
/// ("PID NOFILE ARGS…", found by a walk of /proc: only when asked, not every sample).
const OTHER_FNS: &str = r#"resolve() {
case "$1" in ''|*[!0-9]*) return 0;; esac
while IFS= read -r l; do echo "$l"; done < /proc/$1/cgroup
}
proxy() {
pid=$1; c=
read -r c < /proc/$pid/comm || c=
if [ "$c" = docker-proxy ]; then set -- /proc/$pid/fd/*; [ -e "$1" ] && { echo "alive $#"; return 0; }; fi
echo gone
}
scan() {
for d in /proc/[0-9]*; do
  c=; read -r c < "$d/comm" || continue
  [ "$c" = docker-proxy ] || continue
  a=$(tr '\0' ' ' < "$d/cmdline")
  case " $a " in *" -host-port $1 "*) ;; *) continue;; esac
  lim=-; while read -r w1 w2 w3 soft rest; do [ "$w1 $w2 $w3" = "Max open files" ] && lim=$soft; done < "$d/limits"
  echo "${d#/proc/} $lim $a"
done
}
"#;

const LOAD: &str = "@@exectl-loadavg";
/// /proc/stat's first line: the host's CPU by its own count.
const STAT: &str = "@@exectl-stat";
/// Opens a container's open-files figure, after what `limits::parse` reads.
const FILES: &str = "--files";
const TIMES: &str = "@@exectl-times";
/// The shell's own time on a CPU so far, ns (/proc/$$/schedstat): `times` counts clock ticks (10 ms), too
/// coarse for a second's share of a small quota.
const RUN: &str = "@@exectl-run";

/// One thing a sample asks the host for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Item {
    /// A container's figures, by its cgroup path (relative to the hierarchy's root, "/docker/ID").
    Cgroup(String),
    /// The cgroup of a process (a container's, as the engine names it at a start).
    Resolve(i64),
    /// Is this docker-proxy still running, and how many files does it hold?
    Proxy(i64),
    /// The docker-proxy processes of a published port.
    Scan(u16),
}

impl Item {
    /// The request's word: a cgroup path holds no space (Docker's never do; others are not asked).
    fn word(&self) -> Option<String> {
        match self {
            Item::Cgroup(p) if !p.is_empty() && !p.contains(char::is_whitespace) => {
                Some(format!("c={p}"))
            }
            Item::Cgroup(_) => None,
            Item::Resolve(pid) => Some(format!("r={pid}")),
            Item::Proxy(pid) => Some(format!("p={pid}")),
            Item::Scan(port) => Some(format!("s={port}")),
        }
    }
}

/// The sampler's script, kept running (`HostShell::open_loop`): each request line is the items to read
/// (split without globbing: a word is never a pattern),
/// each answer every item's part, the load average and `times` — the shell's CPU so far, cumulative,
/// since one process serves every sample (a process and, over SSH, a session per sample cost the SUT
/// ten times the reading itself: BENCHMARKS.md "Bench sampler").
pub fn sample_loop() -> Script {
    Script::new(format!(
        "exec 2>/dev/null\n{FILES_FN}{OTHER_FNS}if [ -f /sys/fs/cgroup/cgroup.controllers ]; then\none() {{\n{v2}}}\nelse\none() {{\n{v1}}}\nfi\nwhile read -r req; do\nset -f\nfor w in $req; do\nset +f\necho \"{MARK}$w\"\ncase \"$w\" in c=*) one \"${{w#c=}}\";; r=*) resolve \"${{w#r=}}\";; p=*) proxy \"${{w#p=}}\";; s=*) scan \"${{w#s=}}\";; esac\ndone\nset +f\necho {LOAD}; read -r l < /proc/loadavg; echo \"$l\"\necho {STAT}; read -r l < /proc/stat; echo \"$l\"\necho {TIMES}; times\necho {RUN}; read -r r x < /proc/$$/schedstat && echo \"$r\"\necho {END}\ndone\n",
        v2 = V2_BODY.replace("{FILES}", FILES),
        v1 = V1_BODY.replace("{FILES}", FILES),
    ))
}

/// The request for one sample: the items' words (an item that cannot be asked is left out, and its part
/// of the answer is empty).
pub fn request(items: &[Item]) -> String {
    items
        .iter()
        .filter_map(Item::word)
        .collect::<Vec<_>>()
        .join(" ")
}

/// One sample's output, split.
#[derive(Debug, Clone, PartialEq)]
pub struct Read {
    /// Each item's text, in the order asked (empty when the host said nothing of it).
    pub items: Vec<String>,
    pub load_avg: Option<f64>,
    /// The host's CPU counters so far (`HostCpu::jiffies`).
    pub cpu_jiffies: Option<exectl_core::bench::timeline::Jiffies>,
    /// CPU seconds the looping script and its children have used on the host so far (user + system).
    pub own_cpu_s: Option<f64>,
    /// The looping shell's own time on a CPU so far, ns (exact; its children not counted).
    pub own_run_ns: Option<u64>,
}

pub fn parse(text: &str, items: &[Item]) -> Read {
    let (parts, rest) = text.split_once(LOAD).unwrap_or((text, ""));
    let (load, rest) = rest.split_once(TIMES).unwrap_or((rest, ""));
    let (load, stat) = load.split_once(STAT).unwrap_or((load, ""));
    let (times, run) = rest.split_once(RUN).unwrap_or((rest, ""));
    let words: Vec<String> = items.iter().map(|i| i.word().unwrap_or_default()).collect();
    Read {
        items: split_pids(parts, &words),
        load_avg: load.split_whitespace().next().and_then(|w| w.parse().ok()),
        cpu_jiffies: exectl_core::bench::timeline::HostCpu::jiffies(stat.trim()),
        own_cpu_s: parse_times(times),
        own_run_ns: run.trim().parse().ok(),
    }
}

/// The most open files of one of a container's processes, and that process's nofile.
pub type OpenFiles = (u64, Option<u64>);

/// A container's part: the limits script's figures (`limits::parse`), and its open files. None when its
/// cgroup was not there (it exited).
pub fn parse_cgroup(text: &str) -> Option<(String, Option<OpenFiles>)> {
    if text.trim().is_empty() {
        return None;
    }
    Some(match text.split_once(&format!("{FILES}\n")) {
        Some((figures, files)) => (figures.to_string(), open_files(files)),
        None => (text.to_string(), None),
    })
}

/// A process's cgroup path from its /proc/PID/cgroup lines: the memory controller's on cgroup v1 (the
/// script reads v1 whenever the unified hierarchy is not at /sys/fs/cgroup), else the unified "0::" one.
/// Only a path naming the container (`id`: Docker puts it in every container's cgroup) is taken: a PID
/// reused by another process, or one in the root cgroup, resolves to nothing.
pub fn parse_resolved(text: &str, id: &str) -> Option<String> {
    let path = |l: &str| l.splitn(3, ':').nth(2).map(str::to_string);
    let v1 = text.lines().find(|l| {
        l.split(':')
            .nth(1)
            .is_some_and(|c| c.split(',').any(|c| c == "memory"))
    });
    let p = match v1 {
        Some(l) => path(l),
        None => text.lines().find(|l| l.starts_with("0::")).and_then(path),
    }?;
    (!id.is_empty() && p.contains(id) && p.len() > 1).then_some(p)
}

/// A docker-proxy's part: Some(open files) while it runs, None when it is gone.
pub fn parse_proxy(text: &str) -> Option<u64> {
    text.trim().strip_prefix("alive ")?.trim().parse().ok()
}

/// A docker-proxy process found by a scan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    pub pid: i64,
    pub nofile: Option<u64>,
    pub host_ip: String,
    pub host_port: u16,
    pub container_ip: String,
}

/// A scan's part: "PID NOFILE docker-proxy -proto tcp -host-ip IP -host-port N -container-ip IP …".
pub fn parse_scan(text: &str) -> Vec<Found> {
    text.lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            let pid = w.next()?.parse().ok()?;
            let nofile = w.next()?.parse().ok();
            let args: Vec<&str> = w.collect();
            let flag = |f: &str| {
                args.iter()
                    .position(|a| *a == f)
                    .and_then(|i| args.get(i + 1))
                    .map(|v| v.to_string())
            };
            Some(Found {
                pid,
                nofile,
                host_ip: flag("-host-ip")?,
                host_port: flag("-host-port")?.parse().ok()?,
                container_ip: flag("-container-ip")?,
            })
        })
        .collect()
}

fn open_files(text: &str) -> Option<OpenFiles> {
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
    use crate::shell::{HostShell, Local, ShellLoop};

    #[test]
    fn splits_items_load_and_its_own_cost() {
        let out = format!(
            "{MARK}c=/docker/a\nA\n{FILES}\n900 1024\n{MARK}c=/docker/b\n{MARK}p=7\nalive 12\n{LOAD}\n0.42 0.30 0.20 1/300 999\n{STAT}\ncpu  10 1 5 80 2 0 3 1 0 0\n{TIMES}\n0m0.010s 0m0.004s\n0m1.500s 0m0.020s\n{RUN}\n14000000\n"
        );
        let items = [
            Item::Cgroup("/docker/b".into()),
            Item::Cgroup("/docker/a".into()),
            Item::Proxy(7),
            Item::Cgroup(String::new()),
        ];
        let r = parse(&out, &items);
        assert_eq!(
            parse_cgroup(&r.items[0]),
            None,
            "a gone cgroup has no figures"
        );
        assert_eq!(
            parse_cgroup(&r.items[1]),
            Some(("A\n".to_string(), Some((900, Some(1024)))))
        );
        assert_eq!(parse_proxy(&r.items[2]), Some(12));
        assert_eq!(r.items[3], "");
        assert_eq!(r.load_avg, Some(0.42));
        assert_eq!(r.cpu_jiffies, Some([10, 1, 5, 80, 2, 0, 3, 1]));
        assert!((r.own_cpu_s.unwrap() - 1.534).abs() < 1e-9);
        assert_eq!(r.own_run_ns, Some(14_000_000));
        assert_eq!(parse("", &items).load_avg, None);
        assert_eq!(parse_times("garbage"), None);
        assert_eq!(parse_proxy("gone\n"), None);
        assert_eq!(
            request(&items),
            "c=/docker/b c=/docker/a p=7",
            "an empty path is never asked"
        );
        assert_eq!(
            request(&[Item::Cgroup("/a b".into()), Item::Scan(80)]),
            "s=80"
        );
    }

    #[test]
    fn a_cgroup_is_taken_only_when_it_names_the_container() {
        let id = "0123abcd";
        let v1 = "12:pids:/docker/0123abcd\n4:memory:/docker/0123abcd\n3:cpu,cpuacct:/docker/0123abcd\n0::/system.slice/containerd.service\n";
        assert_eq!(parse_resolved(v1, id).as_deref(), Some("/docker/0123abcd"));
        let v2 = "0::/system.slice/docker-0123abcd.scope\n";
        assert_eq!(
            parse_resolved(v2, id).as_deref(),
            Some("/system.slice/docker-0123abcd.scope")
        );
        assert_eq!(parse_resolved("0::/\n", id), None, "the root cgroup");
        assert_eq!(
            parse_resolved("0::/user.slice/x\n", id),
            None,
            "someone else's"
        );
        assert_eq!(parse_resolved("", id), None, "a gone PID");
        assert_eq!(parse_resolved(v2, ""), None);
    }

    #[test]
    fn a_scan_finds_the_proxies_of_a_port() {
        let text = "11927 20000 /usr/sbin/docker-proxy -proto tcp -host-ip 0.0.0.0 -host-port 28411 -container-ip 172.18.0.4 -container-port 80 \n11934 - /usr/sbin/docker-proxy -proto tcp -host-ip :: -host-port 28411 -container-ip 172.18.0.4 -container-port 80\njunk\n";
        let f = parse_scan(text);
        assert_eq!(f.len(), 2);
        assert_eq!(
            f[0],
            Found {
                pid: 11927,
                nofile: Some(20000),
                host_ip: "0.0.0.0".into(),
                host_port: 28411,
                container_ip: "172.18.0.4".into()
            }
        );
        assert_eq!((f[1].host_ip.as_str(), f[1].nofile), ("::", None));
    }

    /// This process's own cgroup, resolved and read by the loop; never the root's for a gone PID.
    fn own(lp: &mut Box<dyn ShellLoop>) -> String {
        let pid = std::process::id() as i64;
        let items = [Item::Resolve(pid)];
        let r = parse(&lp.ask(&request(&items)).unwrap(), &items);
        // Outside a container the cgroup names no container id: take the path as it is.
        let text = &r.items[0];
        let path = text
            .lines()
            .find(|l| l.contains(":memory:"))
            .or(text.lines().find(|l| l.starts_with("0::")))
            .and_then(|l| l.splitn(3, ':').nth(2))
            .unwrap()
            .to_string();
        assert_eq!(parse_resolved(text, &path).as_deref(), Some(path.as_str()));
        path
    }

    /// One process answers every sample and its `times` only grows.
    #[test]
    fn the_loop_reads_cgroups_then_the_host_in_one_process() {
        let mut lp = Local.open_loop(&sample_loop()).unwrap();
        let path = own(&mut lp);
        let items = [
            Item::Cgroup(path.clone()),
            Item::Cgroup("/".into()),
            Item::Cgroup("/docker/no-such-container".into()),
            Item::Resolve(i32::MAX as i64),
            Item::Proxy(std::process::id() as i64),
            Item::Scan(1),
        ];
        let first = parse(&lp.ask(&request(&items)).unwrap(), &items);
        let (figures, files) = parse_cgroup(&first.items[0]).expect("read");
        let e = crate::shell::scripts::limits::parse("self", &figures);
        assert!(e.rss_bytes.is_some() && e.cpu_usage_ns.is_some(), "{e:?}");
        // Some process in it holds files, within its limit (root reads every fd folder; CI runs as root).
        let (open, limit) = files.expect("open files read");
        assert!(open >= 3 && open <= limit.unwrap(), "{open} of {limit:?}");
        assert_eq!(
            parse_cgroup(&first.items[1]),
            None,
            "the root is never read"
        );
        assert_eq!(
            parse_cgroup(&first.items[2]),
            None,
            "a gone cgroup: nothing"
        );
        assert_eq!(first.items[3], "", "a gone PID resolves to nothing");
        assert_eq!(parse_proxy(&first.items[4]), None, "not a docker-proxy");
        assert!(parse_scan(&first.items[5]).is_empty());
        assert!(first.load_avg.is_some(), "{first:?}");
        assert!(first.cpu_jiffies.is_some(), "{first:?}");
        let mut last = (first.own_cpu_s.unwrap(), first.own_run_ns.unwrap());
        for _ in 0..20 {
            let r = parse(&lp.ask(&request(&items[..1])).unwrap(), &items[..1]);
            let now = (r.own_cpu_s.unwrap(), r.own_run_ns.unwrap());
            assert!(
                now.0 >= last.0 && now.1 > last.1,
                "cumulative: {now:?} after {last:?}"
            );
            last = now;
        }
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
        let mut lp = Local.open_loop(&sample_loop()).unwrap();
        let items = [Item::Cgroup(own(&mut lp))];
        let fast = parse(&lp.ask(&request(&items)).unwrap(), &items);
        let slow = limits::split_pids(&run(&limits::container_limits(&[pid])), &[pid]);
        let (figures, _) = parse_cgroup(&fast.items[0]).unwrap();
        let (a, b) = (
            limits::parse("self", &figures),
            limits::parse("self", &slow[0]),
        );
        assert_eq!((a.cpus, a.memory), (b.cpus, b.memory));
        assert!(a.rss_bytes.is_some() && a.cpu_usage_ns.is_some(), "{a:?}");
        assert!(fast.load_avg.is_some() && fast.own_cpu_s.is_some());
    }
}
