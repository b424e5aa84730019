//! doctor's facts about the host in one round trip: kernel limits, load, swap, mounts, and the
//! filesystem of Docker's data root.

use super::Script;

/// Prints one `key=value` per line (and `mount=POINT TYPE` per mount) in one round trip; $1 is Docker's
/// data root. Missing files print nothing, so their facts stay absent.
const HOST_FACTS_BODY: &str = r#"r() { [ -r "$2" ] && printf '%s=%s\n' "$1" "$(cat "$2" 2>/dev/null)"; }
r file_max /proc/sys/fs/file-max
r port_range /proc/sys/net/ipv4/ip_local_port_range
r somaxconn /proc/sys/net/core/somaxconn
r syn_backlog /proc/sys/net/ipv4/tcp_max_syn_backlog
r conntrack_count /proc/sys/net/netfilter/nf_conntrack_count
r conntrack_max /proc/sys/net/netfilter/nf_conntrack_max
r loadavg /proc/loadavg
printf 'nproc=%s\n' "$(getconf _NPROCESSORS_ONLN 2>/dev/null || nproc 2>/dev/null)"
while read -r k v _; do
  case "$k" in SwapTotal:) echo "swap_total_kb=$v" ;; SwapFree:) echo "swap_free_kb=$v" ;; esac
done < /proc/meminfo
if [ -n "$1" ]; then
  printf 'root_real=%s\n' "$(readlink -f "$1" 2>/dev/null || echo "$1")"
  printf 'root_statfs=%s\n' "$(stat -f -c %T "$1" 2>/dev/null)"
fi
while read -r _ mp fs _; do echo "mount=$mp $fs"; done < /proc/mounts
true
"#;

/// The facts script; `docker_root` is Docker's data root (empty: not known). Read with `doctor::facts::parse_host`.
pub fn host_facts(docker_root: &str) -> Script {
    Script::new(HOST_FACTS_BODY).arg(docker_root)
}

/// A swarm node's clock and link, for doctor: `now_ns=` first (read as soon as the script runs), then the
/// interface holding the node's swarm address ($1) and its MTU, both from `ip` (netlink answers for the
/// shell's own network namespace; /sys may be another's mount). Read with `parse_node_link`.
const NODE_LINK_BODY: &str = r#"printf 'now_ns=%s\n' "$(date +%s%N)"
dev=$(ip -o -4 addr show 2>/dev/null | awk -v a="$1" '{ split($4, p, "/"); if (p[1] == a) { print $2; exit } }')
if [ -n "$dev" ]; then
  printf 'dev=%s\n' "$dev"
  printf 'mtu=%s\n' "$(ip -o link show dev "$dev" 2>/dev/null | awk '{ for (i = 1; i < NF; i++) if ($i == "mtu") { print $(i + 1); exit } }')"
fi
true
"#;

/// The node-link script for the node whose swarm address is `addr`.
pub fn node_link(addr: &str) -> Script {
    Script::new(NODE_LINK_BODY).arg(addr)
}

/// The node-link script's output: its clock (ns since the epoch) and its link's MTU, or why each is
/// missing.
pub fn parse_node_link(out: &str, addr: &str) -> (Result<u128, String>, Result<u32, String>) {
    let value = |key: &str| {
        out.lines()
            .find_map(|l| l.strip_prefix(key)?.strip_prefix('='))
            .map(str::trim)
    };
    let now = match value("now_ns") {
        Some(v) => v
            .parse()
            .map_err(|_| format!("`date +%s%N` printed {v:?}, not nanoseconds")),
        None => Err("the script printed no time".to_string()),
    };
    let mtu = match (value("dev"), value("mtu")) {
        (None, _) => Err(format!("no interface holds {addr} (`ip -o -4 addr`)")),
        (Some(dev), Some(m)) => m.parse().map_err(|_| format!("{dev}'s MTU reads {m:?}")),
        (Some(dev), None) => Err(format!("{dev}'s MTU could not be read")),
    };
    (now, mtu)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_node_link_script_reads_the_clock_then_the_link_of_the_address() {
        let s = node_link("10.199.47.2");
        assert_eq!(s.args, ["10.199.47.2"]);
        assert!(s
            .body
            .starts_with("printf 'now_ns=%s\\n' \"$(date +%s%N)\""));
        let (now, mtu) = parse_node_link("now_ns=1796000000123456789\ndev=eth0\nmtu=1450\n", "a");
        assert_eq!((now, mtu), (Ok(1_796_000_000_123_456_789), Ok(1450)));
        let (now, mtu) = parse_node_link("now_ns=1796000000N\n", "10.0.0.9");
        assert!(now.unwrap_err().contains("not nanoseconds"));
        assert_eq!(
            mtu.unwrap_err(),
            "no interface holds 10.0.0.9 (`ip -o -4 addr`)"
        );
    }
    use crate::doctor::facts::{parse_host, Host};

    #[test]
    fn the_script_takes_the_data_root() {
        let s = host_facts("/var/lib/docker");
        assert_eq!(s.args, ["/var/lib/docker"]);
        assert!(s.body.starts_with("r() {"), "{}", s.body);
        assert!(
            s.body.ends_with("done < /proc/mounts\ntrue\n"),
            "{}",
            s.body
        );
    }

    const SAMPLE: &str = "file_max=2470938\n\
        port_range=32768\t60999\n\
        somaxconn=4096\n\
        syn_backlog=2048\n\
        loadavg=4.13 2.53 2.39 4/261 29192\n\
        nproc=2\n\
        swap_total_kb=0\n\
        swap_free_kb=0\n\
        root_real=/var/lib/docker\n\
        root_statfs=ext2/ext3\n\
        mount=/ ext4\n\
        mount=/var/lib/docker ext4\n\
        mount=/mnt/my\\040disk 9p\n";

    #[test]
    fn parses_the_host_script_output() {
        let h = parse_host(SAMPLE);
        assert_eq!(h.file_max, Some(2470938));
        assert_eq!(h.port_range, Some((32768, 60999)));
        assert_eq!(h.somaxconn, Some(4096));
        assert_eq!(h.syn_backlog, Some(2048));
        assert_eq!(h.conntrack_count, None);
        assert_eq!(h.conntrack_max, None);
        assert_eq!(h.load1, Some(4.13));
        assert_eq!(h.nproc, Some(2));
        assert_eq!(h.swap_total_kb, Some(0));
        assert_eq!(h.root_real.as_deref(), Some("/var/lib/docker"));
        assert_eq!(h.root_statfs.as_deref(), Some("ext2/ext3"));
        assert_eq!(h.mounts.len(), 3);
        assert_eq!(h.mounts[2], ("/mnt/my disk".to_string(), "9p".to_string()));
    }

    #[test]
    fn unreadable_values_stay_absent() {
        let h = parse_host("port_range=60999 32768\nsomaxconn=\nnproc=0\nroot_statfs=\ngarbage\n");
        assert_eq!(h, Host::default());
    }
}
