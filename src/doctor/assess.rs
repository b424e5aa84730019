//! Facts in, checks out: every threshold of `exectl doctor` lives here, pure.

use super::facts::{fs_type_for, Engine, Facts, Host, Link, Stage};
use serde::Serialize;

/// Older engines than this are not what exectl is tested against.
pub const MIN_ENGINE: (u32, u32) = (20, 10);
pub const MIN_API: (u32, u32) = crate::target::MIN_API;
/// Below this accept queue (and SYN backlog), connection bursts overflow.
pub const MIN_SOMAXCONN: u64 = 4096;
pub const MIN_SYN_BACKLOG: u64 = 4096;
/// Warn when the connections take more than this share of the ephemeral port range.
pub const PORTS_HEADROOM: f64 = 0.8;
/// Warn when the conntrack table is fuller than this.
pub const CONNTRACK_FILL: f64 = 0.8;
/// Conntrack entries per benchmark connection (client → published port, nginx → app).
pub const CONNTRACK_PER_CONNECTION: u64 = 2;
/// Descriptors per proxied connection, system-wide (both sides of the load balancer).
pub const FILES_PER_CONNECTION: u64 = 2;
/// Warn when the 1-minute load is above this many runnable tasks per CPU.
pub const LOAD_PER_CPU: f64 = 0.5;
/// Names of foreign containers listed in the detail.
pub const FOREIGN_LISTED: usize = 5;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    Pass,
    Warn,
    Fail,
}

impl Level {
    pub fn name(self) -> &'static str {
        match self {
            Level::Pass => "pass",
            Level::Warn => "warn",
            Level::Fail => "fail",
        }
    }
}

/// One finding: what was checked, how it went, what was seen, and what to do (empty when nothing).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Check {
    pub name: String,
    pub level: Level,
    pub detail: String,
    pub fix: String,
}

impl Check {
    fn new(name: &str, level: Level, detail: impl Into<String>, fix: impl Into<String>) -> Check {
        Check {
            name: name.to_string(),
            level,
            detail: detail.into(),
            fix: fix.into(),
        }
    }
    fn pass(name: &str, detail: impl Into<String>) -> Check {
        Check::new(name, Level::Pass, detail, "")
    }
    fn warn(name: &str, detail: impl Into<String>, fix: impl Into<String>) -> Check {
        Check::new(name, Level::Warn, detail, fix)
    }
    fn fail(name: &str, detail: impl Into<String>, fix: impl Into<String>) -> Check {
        Check::new(name, Level::Fail, detail, fix)
    }
}

/// The app instances' limits the target must carry (from a deployed stack's record or flags).
#[derive(Debug, Clone, PartialEq)]
pub struct Limits {
    pub instances: u64,
    pub cpus: f64,
    pub memory_bytes: u64,
    /// Where they came from, for the detail ("stack exe", "flags").
    pub source: String,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Options {
    /// Connections the benchmark will hold.
    pub connections: Option<u64>,
    pub limits: Option<Limits>,
}

/// Every check, in a fixed order. A failed connection yields only the link's checks.
pub fn assess(f: &Facts, o: &Options) -> Vec<Check> {
    let mut out = link(&f.link);
    if matches!(f.link, Link::Failed { .. }) {
        return out;
    }
    out.push(engine_version(&f.engine));
    let (host, why) = match &f.host {
        Ok(h) => (h.clone(), None),
        Err(e) => (Host::default(), Some(e.as_str())),
    };
    let engine = f.engine.as_ref().ok();
    let ncpu = engine.and_then(|e| e.ncpu).or(host.nproc);
    let n = o.connections;
    out.push(cpu_memory(
        ncpu,
        engine.and_then(|e| e.mem_total),
        o.limits.as_ref(),
    ));
    out.push(nofile(f.max_nofile, n));
    out.push(file_max(host.file_max, n, why));
    out.push(ephemeral_ports(host.port_range, n, why));
    out.push(somaxconn(host.somaxconn, why));
    out.push(syn_backlog(host.syn_backlog, why));
    out.push(conntrack(&host, n, why));
    out.push(foreign_containers(&f.containers));
    out.push(load_average(host.load1, ncpu, why));
    out.push(data_root_fs(
        engine.and_then(|e| e.docker_root_dir.as_deref()),
        &host,
        why,
    ));
    out.push(swap(host.swap_total_kb, host.swap_free_kb, why));
    out
}

/// "a; fix: b" → ("a", "b"): the errors of the target layer carry their fix that way.
pub fn split_fix(message: &str) -> (String, String) {
    match message.split_once("; fix: ") {
        Some((a, b)) => (a.trim().to_string(), b.trim().to_string()),
        None => (message.trim().to_string(), String::new()),
    }
}

fn link(l: &Link) -> Vec<Check> {
    match l {
        Link::Local => vec![Check::pass(
            "local-engine",
            "the local engine answers (DOCKER_HOST, else /var/run/docker.sock)",
        )],
        Link::Remote {
            url,
            peer,
            user,
            known_hosts,
            docker_socket,
        } => vec![
            Check::pass("ssh-tcp", format!("{url}: connected to {peer}")),
            Check::pass("ssh-handshake", "SSH handshake done"),
            Check::pass(
                "ssh-host-key",
                format!("the host key matches {known_hosts}"),
            ),
            Check::pass("ssh-auth", format!("authenticated as {user}")),
            Check::pass(
                "ssh-docker-socket",
                format!("{docker_socket} forwarded over SSH"),
            ),
        ],
        Link::Failed {
            remote,
            stage,
            message,
        } => {
            let (detail, mut fix) = split_fix(message);
            let detail = format!("{detail} (the other checks need the connection: skipped)");
            if fix.is_empty() {
                fix = if *remote {
                    "check sshd's log on the SUT (journalctl -u ssh) and `docker version` there"
                } else {
                    "start the engine (dockerd, or `bash scripts/dockerd.sh`), or set DOCKER_HOST to its socket"
                }
                .to_string();
            }
            if !remote {
                return vec![Check::fail("local-engine", detail, fix)];
            }
            let mut out: Vec<Check> = Stage::SSH
                .iter()
                .filter(|s| *s < stage)
                .map(|s| Check::pass(s.check_name(), "passed"))
                .collect();
            out.push(Check::fail(stage.check_name(), detail, fix));
            out
        }
    }
}

/// "20.10.24+dfsg1" → (20, 10); "1.41" → (1, 41).
pub fn major_minor(v: &str) -> Option<(u32, u32)> {
    let mut it = v.trim().trim_start_matches('v').split(['.', '-', '+']);
    let major = it.next()?.parse().ok()?;
    let minor = it.next()?.parse().ok()?;
    Some((major, minor))
}

fn engine_version(e: &Result<Engine, String>) -> Check {
    const NAME: &str = "engine-version";
    let e = match e {
        Ok(e) => e,
        Err(why) => {
            return Check::fail(
                NAME,
                format!("the engine does not answer: {why}"),
                "start the engine on the target (dockerd), or check --docker-socket",
            )
        }
    };
    let what = format!("Docker {} (API {})", e.version, e.api_version);
    match (major_minor(&e.version), major_minor(&e.api_version)) {
        (Some(v), Some(a)) if v >= MIN_ENGINE && a >= MIN_API => Check::pass(NAME, what),
        (Some(_), Some(_)) => Check::warn(
            NAME,
            format!(
                "{what} is older than Docker {}.{} (API {}.{}), the oldest exectl is tested with",
                MIN_ENGINE.0, MIN_ENGINE.1, MIN_API.0, MIN_API.1
            ),
            "upgrade Docker on the target to 20.10 or newer",
        ),
        _ => Check::warn(
            NAME,
            format!("{what}: cannot read the version"),
            "check `docker version` on the target",
        ),
    }
}

fn mib(bytes: u64) -> String {
    format!("{} MiB", bytes >> 20)
}

fn num(x: f64) -> String {
    let s = format!("{x:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

fn cpu_memory(ncpu: Option<u64>, mem: Option<u64>, limits: Option<&Limits>) -> Check {
    const NAME: &str = "cpu-memory";
    let (Some(ncpu), Some(mem)) = (ncpu, mem) else {
        return Check::warn(
            NAME,
            "the engine did not report its CPUs and memory (docker info NCPU, MemTotal)",
            "check `docker info` on the target",
        );
    };
    let offers = format!("the engine offers {ncpu} CPUs and {}", mib(mem));
    let Some(l) = limits else {
        return Check::pass(
            NAME,
            format!(
                "{offers}; no limits to compare (give --stack, or --instances/--cpus/--memory)"
            ),
        );
    };
    let total_cpus = l.cpus * l.instances as f64;
    let total_mem = l.memory_bytes.saturating_mul(l.instances);
    let mut fails = Vec::new();
    if l.cpus > ncpu as f64 {
        fails.push(format!(
            "one app instance's --cpus {} exceeds the engine's {ncpu} CPUs",
            num(l.cpus)
        ));
    }
    if l.memory_bytes > mem {
        fails.push(format!(
            "one app instance's --memory {} exceeds the engine's {}",
            mib(l.memory_bytes),
            mib(mem)
        ));
    }
    if !fails.is_empty() {
        return Check::fail(
            NAME,
            format!("{} ({}): deploy refuses it", fails.join("; "), l.source),
            format!(
                "pass --cpus {ncpu} and --memory {}m or less, or use a larger SUT",
                mem >> 20
            ),
        );
    }
    let mut warns = Vec::new();
    if total_cpus > ncpu as f64 {
        warns.push(format!(
            "{} app instances × {} CPUs = {} CPUs, more than the engine's {ncpu}",
            l.instances,
            num(l.cpus),
            num(total_cpus)
        ));
    }
    if total_mem > mem {
        warns.push(format!(
            "{} app instances × {} = {}, more than the engine's {}",
            l.instances,
            mib(l.memory_bytes),
            mib(total_mem),
            mib(mem)
        ));
    }
    if !warns.is_empty() {
        return Check::warn(
            NAME,
            format!(
                "{} ({}): the instances compete for the host, and the figures measure it instead of the app",
                warns.join("; "),
                l.source
            ),
            "lower --instances, --cpus or --memory so that instances × limit fits the engine (leave room for nginx, the database and a local load generator), or use a larger SUT",
        );
    }
    Check::pass(
        NAME,
        format!(
            "{} app instances × {} CPUs and {} fit ({}); {offers}",
            l.instances,
            num(l.cpus),
            mib(l.memory_bytes),
            l.source
        ),
    )
}

fn unread(name: &str, what: &str, why: Option<&str>, fix: &str) -> Check {
    let detail = match why {
        Some(w) => format!("could not read {what}: {w}"),
        None => format!("could not read {what}"),
    };
    Check::warn(name, detail, fix)
}

const READ_FIX: &str = "run doctor as a user that may read /proc on the target (root)";

fn nofile(max: Option<u64>, n: Option<u64>) -> Check {
    const NAME: &str = "nofile";
    let Some(max) = max else {
        return unread(
            NAME,
            "the engine's open-files limit (/proc/PID/limits of dockerd, fs.nr_open)",
            None,
            READ_FIX,
        );
    };
    let what =
        format!("a container may hold {max} open files (dockerd's hard limit and fs.nr_open)");
    match n {
        Some(n) if max < n => Check::fail(
            NAME,
            format!("{what}, fewer than the {n} connections: every socket is a descriptor"),
            "raise LimitNOFILE of docker.service and fs.nr_open (exectl host tune --role sut), then restart dockerd",
        ),
        Some(n) => Check::pass(NAME, format!("{what}, enough for {n} connections")),
        None => Check::pass(NAME, what),
    }
}

fn file_max(v: Option<u64>, n: Option<u64>, why: Option<&str>) -> Check {
    const NAME: &str = "file-max";
    const FIX: &str = "raise fs.file-max: exectl host tune --role sut (2097152)";
    let Some(v) = v else {
        return unread(NAME, "fs.file-max", why, READ_FIX);
    };
    match n {
        Some(n) if v < n => Check::fail(
            NAME,
            format!("fs.file-max {v} is below the {n} connections: the whole host runs out of descriptors"),
            FIX,
        ),
        Some(n) if v < n.saturating_mul(FILES_PER_CONNECTION) => Check::warn(
            NAME,
            format!(
                "fs.file-max {v} is below {} ({FILES_PER_CONNECTION} per connection: a proxied connection holds a descriptor on each side of the load balancer)",
                n * FILES_PER_CONNECTION
            ),
            FIX,
        ),
        Some(n) => Check::pass(NAME, format!("fs.file-max {v}, enough for {n} connections")),
        None => Check::pass(NAME, format!("fs.file-max {v}")),
    }
}

fn ephemeral_ports(range: Option<(u64, u64)>, n: Option<u64>, why: Option<&str>) -> Check {
    const NAME: &str = "ephemeral-ports";
    let Some((lo, hi)) = range else {
        return unread(NAME, "net.ipv4.ip_local_port_range", why, READ_FIX);
    };
    let size = hi - lo + 1;
    let what = format!("ip_local_port_range {lo}-{hi} gives {size} ephemeral ports");
    let fix = format!(
        "widen net.ipv4.ip_local_port_range on the load generator with `exectl host tune --role client` (1024-65535: 64512 ports), or spread the load over several source addresses (one per {size} connections)"
    );
    match n {
        Some(n) if n > size => Check::fail(
            NAME,
            format!(
                "{n} connections exceed the {size} ephemeral ports of ip_local_port_range {lo}-{hi}: a single client address can hold at most {size} connections to one server ip:port (the seed's load stalled at 16,384 this way)"
            ),
            fix,
        ),
        Some(n) if n as f64 > size as f64 * PORTS_HEADROOM => Check::warn(
            NAME,
            format!(
                "{n} connections take more than {}% of the {size} ephemeral ports ({lo}-{hi}): sockets in TIME_WAIT from earlier runs hold ports too",
                (PORTS_HEADROOM * 100.0) as u32
            ),
            fix,
        ),
        Some(n) => Check::pass(
            NAME,
            format!("{what}, enough for {n} connections from one source address"),
        ),
        None => Check::pass(
            NAME,
            format!("{what}: the most connections one client address holds to one server ip:port"),
        ),
    }
}

fn somaxconn(v: Option<u64>, why: Option<&str>) -> Check {
    const NAME: &str = "somaxconn";
    let Some(v) = v else {
        return unread(NAME, "net.core.somaxconn", why, READ_FIX);
    };
    if v < MIN_SOMAXCONN {
        Check::warn(
            NAME,
            format!("net.core.somaxconn {v} (below {MIN_SOMAXCONN}): the accept queue overflows on connection bursts, SYNs are dropped and clients retry a second or more later"),
            "exectl host tune --role sut (net.core.somaxconn = 65535)",
        )
    } else {
        Check::pass(NAME, format!("net.core.somaxconn {v}"))
    }
}

fn syn_backlog(v: Option<u64>, why: Option<&str>) -> Check {
    const NAME: &str = "syn-backlog";
    let Some(v) = v else {
        return unread(NAME, "net.ipv4.tcp_max_syn_backlog", why, READ_FIX);
    };
    if v < MIN_SYN_BACKLOG {
        Check::warn(
            NAME,
            format!("net.ipv4.tcp_max_syn_backlog {v} (below {MIN_SYN_BACKLOG}): half-open connections of a burst are dropped"),
            "exectl host tune --role sut (net.ipv4.tcp_max_syn_backlog = 65535)",
        )
    } else {
        Check::pass(NAME, format!("net.ipv4.tcp_max_syn_backlog {v}"))
    }
}

fn conntrack(h: &Host, n: Option<u64>, why: Option<&str>) -> Check {
    const NAME: &str = "conntrack";
    const FIX: &str = "exectl host tune --role sut (net.netfilter.nf_conntrack_max = 1048576)";
    let (count, max) = match (h.conntrack_count, h.conntrack_max) {
        (None, None) if why.is_none() => {
            return Check::pass(
                NAME,
                "conntrack not loaded: no connection-tracking table to fill",
            )
        }
        (Some(c), Some(m)) if m > 0 => (c, m),
        _ => {
            return unread(
                NAME,
                "nf_conntrack_count and nf_conntrack_max",
                why,
                READ_FIX,
            )
        }
    };
    let pct = count as f64 * 100.0 / max as f64;
    if count as f64 > max as f64 * CONNTRACK_FILL {
        return Check::warn(
            NAME,
            format!("the conntrack table is {pct:.0}% full ({count} of {max}): when it fills, new connections are dropped (\"nf_conntrack: table full\" in dmesg)"),
            FIX,
        );
    }
    match n {
        Some(n) if max < n.saturating_mul(CONNTRACK_PER_CONNECTION) => Check::warn(
            NAME,
            format!(
                "nf_conntrack_max {max} is below {} ({CONNTRACK_PER_CONNECTION} entries per connection: the published port's NAT and nginx → app are both tracked)",
                n * CONNTRACK_PER_CONNECTION
            ),
            FIX,
        ),
        _ => Check::pass(NAME, format!("{count} of {max} conntrack entries in use")),
    }
}

fn foreign_containers(cs: &Result<Vec<super::facts::Container>, String>) -> Check {
    const NAME: &str = "foreign-containers";
    let cs = match cs {
        Ok(cs) => cs,
        Err(e) => {
            return Check::warn(
                NAME,
                format!("could not list the engine's containers: {e}"),
                "check `docker ps` on the target",
            )
        }
    };
    let foreign: Vec<&str> = cs
        .iter()
        .filter(|c| c.stack.is_none())
        .map(|c| c.name.as_str())
        .collect();
    let ours = cs.len() - foreign.len();
    if foreign.is_empty() {
        return Check::pass(
            NAME,
            format!("no running container without the exectl.stack label ({ours} of exectl's)"),
        );
    }
    let mut names = foreign
        .iter()
        .take(FOREIGN_LISTED)
        .copied()
        .collect::<Vec<_>>()
        .join(", ");
    if foreign.len() > FOREIGN_LISTED {
        names.push_str(&format!(" and {} more", foreign.len() - FOREIGN_LISTED));
    }
    Check::warn(
        NAME,
        format!(
            "{} running container(s) not made by exectl (no exectl.stack label), newest first: {names}",
            foreign.len()
        ),
        "stop them (docker stop NAME) or benchmark on a dedicated SUT: the seed's benchmarks shared the SUT with 29 foreign containers, and their load went into the figures",
    )
}

fn load_average(load1: Option<f64>, ncpu: Option<u64>, why: Option<&str>) -> Check {
    const NAME: &str = "load-average";
    let (Some(l), Some(n)) = (load1, ncpu) else {
        return unread(NAME, "/proc/loadavg and the CPU count", why, READ_FIX);
    };
    let limit = n as f64 * LOAD_PER_CPU;
    if l > limit {
        Check::warn(
            NAME,
            format!("1-minute load {} on {n} CPUs (above {}): something else keeps the SUT busy", num(l), num(limit)),
            "find it (top, docker stats) and stop it or wait for it: a benchmark on a busy host measures the neighbour too",
        )
    } else {
        Check::pass(NAME, format!("1-minute load {} on {n} CPUs", num(l)))
    }
}

/// Filesystems that lose, delay or hold in memory what containers write.
pub fn risky_fs(fs: &str) -> Option<&'static str> {
    let fs = fs.to_ascii_lowercase();
    match fs.as_str() {
        "tmpfs" | "ramfs" => Some("memory: volumes vanish on reboot and count against the host's RAM"),
        "9p" | "v9fs" | "virtiofs" => Some("a host-shared filesystem: the WebSpace seed lost 586 of 1,000 writes on 9p"),
        "nfs" | "nfs4" | "cifs" | "smb2" | "smb3" | "smbfs" | "ceph" | "glusterfs" => {
            Some("a network filesystem: writes wait on the network, and fsync semantics differ (the WebSpace seed lost 586 of 1,000 writes on 9p)")
        }
        f if f == "fuse" || f == "fuseblk" || f.starts_with("fuse.") => {
            Some("a FUSE filesystem: slow and with weak write guarantees (the WebSpace seed lost 586 of 1,000 writes on 9p)")
        }
        _ => None,
    }
}

fn data_root_fs(root: Option<&str>, h: &Host, why: Option<&str>) -> Check {
    const NAME: &str = "data-root-fs";
    let Some(root) = root else {
        return Check::warn(
            NAME,
            "the engine did not report its data root (docker info DockerRootDir)",
            "check `docker info` on the target",
        );
    };
    let real = h.root_real.as_deref().unwrap_or(root);
    let fs = fs_type_for(real, &h.mounts).or(h.root_statfs.as_deref());
    let Some(fs) = fs else {
        return unread(
            NAME,
            &format!("the filesystem of {root} (/proc/mounts, stat -f)"),
            why,
            READ_FIX,
        );
    };
    match risky_fs(fs) {
        Some(what) => Check::warn(
            NAME,
            format!("Docker's data root {root} is on {fs}, {what}"),
            "move Docker's data root to a local disk (ext4, xfs, btrfs): \"data-root\" in /etc/docker/daemon.json, then restart dockerd",
        ),
        None => Check::pass(NAME, format!("Docker's data root {root} is on {fs}")),
    }
}

fn swap(total_kb: Option<u64>, free_kb: Option<u64>, why: Option<&str>) -> Check {
    const NAME: &str = "swap";
    let Some(total) = total_kb else {
        return unread(NAME, "SwapTotal of /proc/meminfo", why, READ_FIX);
    };
    if total == 0 {
        return Check::pass(NAME, "no swap");
    }
    let used = total.saturating_sub(free_kb.unwrap_or(total));
    Check::warn(
        NAME,
        format!(
            "swap is enabled ({} MiB, {} MiB in use): swap can hide memory limits — a container over its limit pages out instead of being killed, and the latency figures absorb it",
            total >> 10,
            used >> 10
        ),
        "swapoff -a on the SUT for the benchmark (and drop it from /etc/fstab)",
    )
}

#[cfg(test)]
mod tests {
    use super::super::facts::Container;
    use super::*;

    fn host() -> Host {
        Host {
            file_max: Some(2_097_152),
            port_range: Some((1024, 65535)),
            somaxconn: Some(65535),
            syn_backlog: Some(65535),
            conntrack_count: None,
            conntrack_max: None,
            load1: Some(0.1),
            nproc: Some(8),
            swap_total_kb: Some(0),
            swap_free_kb: Some(0),
            root_statfs: Some("ext2/ext3".into()),
            root_real: Some("/var/lib/docker".into()),
            mounts: vec![("/".into(), "ext4".into())],
        }
    }

    fn facts() -> Facts {
        Facts {
            link: Link::Local,
            engine: Ok(Engine {
                version: "24.0.7".into(),
                api_version: "1.43".into(),
                ncpu: Some(8),
                mem_total: Some(16 << 30),
                docker_root_dir: Some("/var/lib/docker".into()),
            }),
            max_nofile: Some(1 << 20),
            host: Ok(host()),
            containers: Ok(vec![Container {
                name: "exectl-exe-nginx".into(),
                stack: Some("exe".into()),
            }]),
        }
    }

    fn opts(n: Option<u64>) -> Options {
        Options {
            connections: n,
            limits: None,
        }
    }

    fn check(f: &Facts, o: &Options, name: &str) -> Check {
        assess(f, o)
            .into_iter()
            .find(|c| c.name == name)
            .unwrap_or_else(|| panic!("no check {name}"))
    }

    fn level(f: &Facts, o: &Options, name: &str) -> Level {
        check(f, o, name).level
    }

    fn with_host(edit: impl FnOnce(&mut Host)) -> Facts {
        let mut f = facts();
        if let Ok(h) = &mut f.host {
            edit(h);
        }
        f
    }

    #[test]
    fn a_tuned_host_passes_everything_in_a_fixed_order() {
        let checks = assess(&facts(), &opts(Some(10_000)));
        let names: Vec<&str> = checks.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "local-engine",
                "engine-version",
                "cpu-memory",
                "nofile",
                "file-max",
                "ephemeral-ports",
                "somaxconn",
                "syn-backlog",
                "conntrack",
                "foreign-containers",
                "load-average",
                "data-root-fs",
                "swap"
            ]
        );
        for c in &checks {
            assert_eq!(c.level, Level::Pass, "{c:?}");
            assert!(c.fix.is_empty(), "{c:?}");
        }
    }

    #[test]
    fn remote_link_lists_every_ssh_stage() {
        let mut f = facts();
        f.link = Link::Remote {
            url: "ssh://root@10.0.0.2:22".into(),
            peer: "10.0.0.2:22".into(),
            user: "root".into(),
            known_hosts: "/root/.ssh/known_hosts".into(),
            docker_socket: "/var/run/docker.sock".into(),
        };
        let checks = assess(&f, &opts(None));
        let names: Vec<&str> = checks.iter().take(5).map(|c| c.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "ssh-tcp",
                "ssh-handshake",
                "ssh-host-key",
                "ssh-auth",
                "ssh-docker-socket"
            ]
        );
        assert!(checks.iter().all(|c| c.level == Level::Pass));
    }

    #[test]
    fn a_failed_ssh_stage_fails_and_skips_the_rest() {
        let f = Facts::unreachable(Link::Failed {
            remote: true,
            stage: Stage::Auth,
            message: "ssh stage auth: root@h refused every key tried (a); fix: add your key".into(),
        });
        let checks = assess(&f, &opts(Some(10)));
        let got: Vec<(&str, Level)> = checks.iter().map(|c| (c.name.as_str(), c.level)).collect();
        assert_eq!(
            got,
            [
                ("ssh-tcp", Level::Pass),
                ("ssh-handshake", Level::Pass),
                ("ssh-host-key", Level::Pass),
                ("ssh-auth", Level::Fail)
            ]
        );
        assert!(checks[3]
            .detail
            .starts_with("ssh stage auth: root@h refused"));
        assert!(checks[3].detail.contains("skipped"));
        assert_eq!(checks[3].fix, "add your key");
    }

    #[test]
    fn a_failed_tcp_connect_is_the_only_check() {
        let f = Facts::unreachable(Link::Failed {
            remote: true,
            stage: Stage::Tcp,
            message: "ssh stage tcp: cannot connect".into(),
        });
        let checks = assess(&f, &opts(None));
        assert_eq!(checks.len(), 1);
        assert_eq!(
            (checks[0].name.as_str(), checks[0].level),
            ("ssh-tcp", Level::Fail)
        );
    }

    #[test]
    fn an_engine_api_failure_passes_the_ssh_stages() {
        let f = Facts::unreachable(Link::Failed {
            remote: true,
            stage: Stage::EngineApi,
            message: "ssh stage engine api: old; fix: upgrade".into(),
        });
        let checks = assess(&f, &opts(None));
        assert_eq!(checks.len(), 6);
        assert!(checks[..5].iter().all(|c| c.level == Level::Pass));
        assert_eq!(
            (checks[5].name.as_str(), checks[5].level),
            ("engine-version", Level::Fail)
        );
    }

    #[test]
    fn a_local_engine_that_does_not_answer_fails() {
        let f = Facts::unreachable(Link::Failed {
            remote: false,
            stage: Stage::EngineApi,
            message: "the Docker engine does not answer; fix: start it".into(),
        });
        let checks = assess(&f, &opts(None));
        assert_eq!(checks.len(), 1);
        assert_eq!(
            (checks[0].name.as_str(), checks[0].level),
            ("local-engine", Level::Fail)
        );
        assert_eq!(checks[0].fix, "start it");
        // An error without its own fix still gets one.
        let f = Facts::unreachable(Link::Failed {
            remote: false,
            stage: Stage::EngineApi,
            message: "Socket not found: /x.sock".into(),
        });
        assert!(assess(&f, &opts(None))[0].fix.contains("start the engine"));
    }

    #[test]
    fn engine_version_thresholds() {
        let at = |v: &str, api: &str| {
            let mut f = facts();
            if let Ok(e) = &mut f.engine {
                e.version = v.into();
                e.api_version = api.into();
            }
            level(&f, &opts(None), "engine-version")
        };
        assert_eq!(at("20.10.24+dfsg1", "1.41"), Level::Pass);
        assert_eq!(at("20.10.0", "1.40"), Level::Warn);
        assert_eq!(at("19.03.15", "1.41"), Level::Warn);
        assert_eq!(at("29.0.1", "1.52"), Level::Pass);
        assert_eq!(at("dev", "1.41"), Level::Warn);
        let mut f = facts();
        f.engine = Err("connection refused".into());
        assert_eq!(level(&f, &opts(None), "engine-version"), Level::Fail);
    }

    fn limits(instances: u64, cpus: f64, memory_bytes: u64) -> Options {
        Options {
            connections: None,
            limits: Some(Limits {
                instances,
                cpus,
                memory_bytes,
                source: "flags".into(),
            }),
        }
    }

    #[test]
    fn cpu_and_memory_limits_versus_the_engine() {
        let f = facts(); // 8 CPUs, 16 GiB
        assert_eq!(level(&f, &opts(None), "cpu-memory"), Level::Pass);
        assert_eq!(
            level(&f, &limits(4, 2.0, 4 << 30), "cpu-memory"),
            Level::Pass
        );
        let c = check(&f, &limits(5, 2.0, 1 << 30), "cpu-memory");
        assert_eq!(c.level, Level::Warn);
        assert!(
            c.detail.contains("5 app instances × 2 CPUs = 10 CPUs"),
            "{}",
            c.detail
        );
        assert_eq!(
            level(&f, &limits(4, 1.0, 5 << 30), "cpu-memory"),
            Level::Warn
        );
        assert_eq!(
            level(&f, &limits(1, 8.5, 1 << 30), "cpu-memory"),
            Level::Fail
        );
        assert_eq!(
            level(&f, &limits(1, 1.0, 17 << 30), "cpu-memory"),
            Level::Fail
        );
        let mut f = facts();
        if let Ok(e) = &mut f.engine {
            e.mem_total = None;
        }
        assert_eq!(level(&f, &opts(None), "cpu-memory"), Level::Warn);
    }

    #[test]
    fn nofile_versus_connections() {
        let mut f = facts();
        f.max_nofile = Some(20_000);
        assert_eq!(level(&f, &opts(Some(20_000)), "nofile"), Level::Pass);
        assert_eq!(level(&f, &opts(Some(20_001)), "nofile"), Level::Fail);
        assert_eq!(level(&f, &opts(None), "nofile"), Level::Pass);
        f.max_nofile = None;
        assert_eq!(level(&f, &opts(None), "nofile"), Level::Warn);
    }

    #[test]
    fn file_max_versus_connections() {
        let f = with_host(|h| h.file_max = Some(20_000));
        assert_eq!(level(&f, &opts(Some(10_000)), "file-max"), Level::Pass);
        assert_eq!(level(&f, &opts(Some(10_001)), "file-max"), Level::Warn);
        assert_eq!(level(&f, &opts(Some(20_000)), "file-max"), Level::Warn);
        assert_eq!(level(&f, &opts(Some(20_001)), "file-max"), Level::Fail);
    }

    #[test]
    fn ephemeral_ports_versus_connections() {
        // The default range: 28232 ports.
        let f = with_host(|h| h.port_range = Some((32768, 60999)));
        assert_eq!(level(&f, &opts(None), "ephemeral-ports"), Level::Pass);
        assert_eq!(level(&f, &opts(Some(100)), "ephemeral-ports"), Level::Pass);
        assert_eq!(
            level(&f, &opts(Some(22_585)), "ephemeral-ports"),
            Level::Pass
        );
        assert_eq!(
            level(&f, &opts(Some(22_586)), "ephemeral-ports"),
            Level::Warn
        );
        assert_eq!(
            level(&f, &opts(Some(28_232)), "ephemeral-ports"),
            Level::Warn
        );
        let c = check(&f, &opts(Some(28_233)), "ephemeral-ports");
        assert_eq!(c.level, Level::Fail);
        assert!(c.detail.contains("a single client address"), "{}", c.detail);
        assert!(
            c.fix.contains("exectl host tune --role client"),
            "{}",
            c.fix
        );
        assert!(c.fix.contains("several source addresses"), "{}", c.fix);
        let f = with_host(|h| h.port_range = None);
        assert_eq!(level(&f, &opts(Some(1)), "ephemeral-ports"), Level::Warn);
    }

    #[test]
    fn accept_queue_and_syn_backlog() {
        let f = with_host(|h| {
            h.somaxconn = Some(4096);
            h.syn_backlog = Some(4096)
        });
        assert_eq!(level(&f, &opts(None), "somaxconn"), Level::Pass);
        assert_eq!(level(&f, &opts(None), "syn-backlog"), Level::Pass);
        let f = with_host(|h| {
            h.somaxconn = Some(4095);
            h.syn_backlog = Some(2048)
        });
        let c = check(&f, &opts(None), "somaxconn");
        assert_eq!(c.level, Level::Warn);
        assert!(c.fix.contains("exectl host tune --role sut"));
        assert_eq!(level(&f, &opts(None), "syn-backlog"), Level::Warn);
    }

    #[test]
    fn conntrack_headroom() {
        let ct = |count, max| {
            with_host(|h| {
                h.conntrack_count = count;
                h.conntrack_max = max
            })
        };
        let c = check(&ct(None, None), &opts(Some(10)), "conntrack");
        assert_eq!(c.level, Level::Pass);
        assert!(c.detail.contains("conntrack not loaded"));
        assert_eq!(
            level(&ct(Some(800), Some(1000)), &opts(None), "conntrack"),
            Level::Pass
        );
        assert_eq!(
            level(&ct(Some(801), Some(1000)), &opts(None), "conntrack"),
            Level::Warn
        );
        let f = ct(Some(0), Some(20_000));
        assert_eq!(level(&f, &opts(Some(10_000)), "conntrack"), Level::Pass);
        assert_eq!(level(&f, &opts(Some(10_001)), "conntrack"), Level::Warn);
        assert_eq!(
            level(&ct(Some(1), None), &opts(None), "conntrack"),
            Level::Warn
        );
    }

    #[test]
    fn foreign_containers_are_named() {
        let mut f = facts();
        assert_eq!(level(&f, &opts(None), "foreign-containers"), Level::Pass);
        let mut cs: Vec<Container> = (1..=7)
            .map(|i| Container {
                name: format!("other-{i}"),
                stack: None,
            })
            .collect();
        cs.push(Container {
            name: "exectl-exe-app-1".into(),
            stack: Some("exe".into()),
        });
        f.containers = Ok(cs);
        let c = check(&f, &opts(None), "foreign-containers");
        assert_eq!(c.level, Level::Warn);
        assert!(
            c.detail.starts_with("7 running container(s)"),
            "{}",
            c.detail
        );
        assert!(c
            .detail
            .contains("other-1, other-2, other-3, other-4, other-5 and 2 more"));
        assert!(!c.detail.contains("exectl-exe-app-1"));
        assert!(c.fix.contains("29 foreign containers"));
        f.containers = Err("denied".into());
        assert_eq!(level(&f, &opts(None), "foreign-containers"), Level::Warn);
    }

    #[test]
    fn load_average_versus_cpus() {
        // 8 CPUs from the engine: the limit is 4.
        assert_eq!(
            level(
                &with_host(|h| h.load1 = Some(4.0)),
                &opts(None),
                "load-average"
            ),
            Level::Pass
        );
        assert_eq!(
            level(
                &with_host(|h| h.load1 = Some(4.01)),
                &opts(None),
                "load-average"
            ),
            Level::Warn
        );
        // Without the engine's count, the host's.
        let mut f = with_host(|h| {
            h.load1 = Some(1.5);
            h.nproc = Some(2)
        });
        if let Ok(e) = &mut f.engine {
            e.ncpu = None;
        }
        assert_eq!(level(&f, &opts(None), "load-average"), Level::Warn);
    }

    #[test]
    fn data_root_filesystem() {
        let on = |fs: &str| {
            with_host(|h| {
                h.mounts = vec![
                    ("/".into(), "ext4".into()),
                    ("/var/lib/docker".into(), fs.into()),
                ]
            })
        };
        for fs in ["ext4", "xfs", "btrfs", "overlay", "zfs"] {
            assert_eq!(
                level(&on(fs), &opts(None), "data-root-fs"),
                Level::Pass,
                "{fs}"
            );
        }
        for fs in [
            "tmpfs",
            "9p",
            "nfs",
            "nfs4",
            "cifs",
            "fuse.sshfs",
            "fuseblk",
            "virtiofs",
        ] {
            assert_eq!(
                level(&on(fs), &opts(None), "data-root-fs"),
                Level::Warn,
                "{fs}"
            );
        }
        assert!(check(&on("9p"), &opts(None), "data-root-fs")
            .detail
            .contains("586 of 1,000 writes"));
        // A symlinked data root is judged where it really lives.
        let f = with_host(|h| {
            h.root_real = Some("/mnt/share/docker".into());
            h.mounts = vec![
                ("/".into(), "ext4".into()),
                ("/mnt/share".into(), "9p".into()),
            ]
        });
        assert_eq!(level(&f, &opts(None), "data-root-fs"), Level::Warn);
        // No mount table: stat -f's answer.
        let f = with_host(|h| {
            h.mounts.clear();
            h.root_statfs = Some("tmpfs".into())
        });
        assert_eq!(level(&f, &opts(None), "data-root-fs"), Level::Warn);
    }

    #[test]
    fn swap_enabled_warns() {
        assert_eq!(level(&facts(), &opts(None), "swap"), Level::Pass);
        let f = with_host(|h| {
            h.swap_total_kb = Some(2 << 20);
            h.swap_free_kb = Some(1 << 20)
        });
        let c = check(&f, &opts(None), "swap");
        assert_eq!(c.level, Level::Warn);
        assert!(
            c.detail.contains("2048 MiB, 1024 MiB in use"),
            "{}",
            c.detail
        );
        assert!(c.detail.contains("swap can hide memory limits"));
    }

    #[test]
    fn an_unreadable_host_warns_on_each_host_check() {
        let mut f = facts();
        f.host = Err("host script failed".into());
        let checks = assess(&f, &opts(Some(10)));
        for name in [
            "file-max",
            "ephemeral-ports",
            "somaxconn",
            "syn-backlog",
            "conntrack",
            "swap",
        ] {
            let c = checks.iter().find(|c| c.name == name).unwrap();
            assert_eq!(c.level, Level::Warn, "{name}");
            assert!(
                c.detail.contains("host script failed"),
                "{name}: {}",
                c.detail
            );
        }
    }

    #[test]
    fn splits_fix_and_reads_versions() {
        assert_eq!(
            split_fix("a b; fix: c"),
            ("a b".to_string(), "c".to_string())
        );
        assert_eq!(split_fix("a b"), ("a b".to_string(), String::new()));
        assert_eq!(major_minor("20.10.24+dfsg1"), Some((20, 10)));
        assert_eq!(major_minor("1.41"), Some((1, 41)));
        assert_eq!(major_minor("v25.0"), Some((25, 0)));
        assert_eq!(major_minor("dev"), None);
    }
}
