//! The host's checks of `doctor`: open files, ports, accept queues, conntrack, load, the data root's
//! filesystem and swap. Pure: host facts in, checks out.

use super::check::{num, unread, Check, READ_FIX};
use super::facts::{fs_type_for, Host};

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

pub(super) fn nofile(max: Option<u64>, n: Option<u64>) -> Check {
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

pub(super) fn file_max(v: Option<u64>, n: Option<u64>, why: Option<&str>) -> Check {
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

pub(super) fn ephemeral_ports(
    range: Option<(u64, u64)>,
    n: Option<u64>,
    why: Option<&str>,
) -> Check {
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

pub(super) fn somaxconn(v: Option<u64>, why: Option<&str>) -> Check {
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

pub(super) fn syn_backlog(v: Option<u64>, why: Option<&str>) -> Check {
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

pub(super) fn conntrack(h: &Host, n: Option<u64>, why: Option<&str>) -> Check {
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

pub(super) fn load_average(load1: Option<f64>, ncpu: Option<u64>, why: Option<&str>) -> Check {
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

pub(super) fn data_root_fs(root: Option<&str>, h: &Host, why: Option<&str>) -> Check {
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

pub(super) fn swap(total_kb: Option<u64>, free_kb: Option<u64>, why: Option<&str>) -> Check {
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
