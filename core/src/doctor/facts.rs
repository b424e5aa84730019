//! What doctor observed on the target, as plain data, and the pure parsing of the host script's output.

use serde::Serialize;

/// The stages of reaching an engine, in order. A failure at one stage means the later ones were not tried.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub enum Stage {
    /// TCP connect to sshd.
    Tcp,
    Handshake,
    HostKey,
    Auth,
    /// The Docker socket forwarded over SSH.
    DockerSocket,
    /// The engine's API (over the forwarded socket, or the local engine).
    EngineApi,
}

impl Stage {
    /// The SSH stages a remote target goes through before its engine answers.
    pub const SSH: [Stage; 5] = [
        Stage::Tcp,
        Stage::Handshake,
        Stage::HostKey,
        Stage::Auth,
        Stage::DockerSocket,
    ];

    /// The check's name in the report.
    pub fn check_name(self) -> &'static str {
        match self {
            Stage::Tcp => "ssh-tcp",
            Stage::Handshake => "ssh-handshake",
            Stage::HostKey => "ssh-host-key",
            Stage::Auth => "ssh-auth",
            Stage::DockerSocket => "ssh-docker-socket",
            Stage::EngineApi => "engine-version",
        }
    }
}

/// How the target was reached.
#[derive(Debug, Clone, PartialEq)]
pub enum Link {
    /// The local engine answered.
    Local,
    /// Every SSH stage passed.
    Remote {
        /// ssh://user@host:port
        url: String,
        /// The address sshd answered on.
        peer: String,
        user: String,
        known_hosts: String,
        docker_socket: String,
    },
    /// The connection failed at `stage`; `message` is the error's text (with its "; fix: ..." part).
    Failed {
        remote: bool,
        stage: Stage,
        message: String,
    },
}

/// What the engine said about itself (`docker version` and `docker info`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Engine {
    pub version: String,
    pub api_version: String,
    pub ncpu: Option<u64>,
    pub mem_total: Option<u64>,
    pub docker_root_dir: Option<String>,
}

/// How the engine was started: its flags and daemon.json, as far as doctor needs them.
#[derive(Debug, Clone, PartialEq)]
pub struct EngineConfig {
    /// Published ports go through docker-proxy (on, the default) or only through iptables (off).
    pub userland_proxy: bool,
    /// What set it: "the default", "dockerd's --userland-proxy=false", "\"userland-proxy\": false in FILE".
    pub proxy_set_by: String,
    /// The containers' default nofile (hard), when the engine sets one.
    pub default_nofile: Option<u64>,
    /// Its configuration file (read or not).
    pub config_file: String,
}

/// A running container of the target's engine.
#[derive(Debug, Clone, PartialEq)]
pub struct Container {
    pub name: String,
    /// Its `exectl.stack` label, when exectl made it.
    pub stack: Option<String>,
}

/// Everything doctor knows about the target; `assess` turns it into checks.
#[derive(Debug, Clone, PartialEq)]
pub struct Facts {
    pub link: Link,
    /// The engine, or why it did not answer.
    pub engine: Result<Engine, String>,
    /// The hard open-files limit a container may ask for (engine's hard limit and fs.nr_open).
    pub max_nofile: Option<u64>,
    /// How the engine was started (None: its process could not be read).
    pub engine_config: Option<EngineConfig>,
    /// The host script's facts, or why it failed.
    pub host: Result<Host, String>,
    /// Running containers, newest first, or why they could not be listed.
    pub containers: Result<Vec<Container>, String>,
}

impl Facts {
    /// Facts of a target that could not be reached: only the link is known.
    pub fn unreachable(link: Link) -> Facts {
        Facts {
            link,
            engine: Err("not reached".into()),
            max_nofile: None,
            engine_config: None,
            host: Err("not reached".into()),
            containers: Err("not reached".into()),
        }
    }
}

/// The filesystem type holding `path`: the longest mount point that contains it (the last such mount
/// wins, as later mounts hide earlier ones on the same point).
pub fn fs_type_for<'a>(path: &str, mounts: &'a [(String, String)]) -> Option<&'a str> {
    let mut best: Option<(usize, &str)> = None;
    for (mp, fs) in mounts {
        let inside = path == mp
            || mp == "/"
            || (path.starts_with(mp.as_str()) && path.as_bytes().get(mp.len()) == Some(&b'/'));
        if inside && best.is_none_or(|(len, _)| mp.len() >= len) {
            best = Some((mp.len(), fs.as_str()));
        }
    }
    best.map(|(_, fs)| fs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn longest_mount_prefix_wins() {
        let m = |v: &[(&str, &str)]| {
            v.iter()
                .map(|(a, b)| (a.to_string(), b.to_string()))
                .collect::<Vec<_>>()
        };
        let mounts = m(&[
            ("/", "ext4"),
            ("/var", "xfs"),
            ("/var/lib/docker", "9p"),
            ("/var/lib/dockerd", "tmpfs"),
        ]);
        assert_eq!(fs_type_for("/var/lib/docker", &mounts), Some("9p"));
        assert_eq!(fs_type_for("/var/lib/docker/x", &mounts), Some("9p"));
        assert_eq!(fs_type_for("/var/lib/docker2", &mounts), Some("xfs"));
        assert_eq!(fs_type_for("/srv", &mounts), Some("ext4"));
        // A later mount on the same point hides the earlier one.
        let over = m(&[("/", "ext4"), ("/data", "ext4"), ("/data", "nfs4")]);
        assert_eq!(fs_type_for("/data/docker", &over), Some("nfs4"));
        assert_eq!(fs_type_for("/x", &[]), None);
    }
}

/// What the host script reported (each fact absent when it could not be read).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Host {
    pub file_max: Option<u64>,
    /// net.ipv4.ip_local_port_range: (low, high).
    pub port_range: Option<(u64, u64)>,
    pub somaxconn: Option<u64>,
    pub syn_backlog: Option<u64>,
    /// Both absent when the conntrack module is not loaded.
    pub conntrack_count: Option<u64>,
    pub conntrack_max: Option<u64>,
    pub load1: Option<f64>,
    pub nproc: Option<u64>,
    pub swap_total_kb: Option<u64>,
    pub swap_free_kb: Option<u64>,
    /// `stat -f -c %T` of the Docker data root.
    pub root_statfs: Option<String>,
    /// The data root with symlinks resolved.
    pub root_real: Option<String>,
    /// (mount point, filesystem type) of /proc/mounts, in order.
    pub mounts: Vec<(String, String)>,
}

/// Parse the host script's output. Unknown keys and unreadable values are ignored.
pub fn parse_host(text: &str) -> Host {
    let mut h = Host::default();
    for line in text.lines() {
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        let v = value.trim();
        let num = || v.parse::<u64>().ok();
        match key {
            "file_max" => h.file_max = num(),
            "port_range" => {
                let mut it = v.split_whitespace().map(|w| w.parse::<u64>().ok());
                h.port_range = match (it.next().flatten(), it.next().flatten()) {
                    (Some(lo), Some(hi)) if hi >= lo => Some((lo, hi)),
                    _ => None,
                };
            }
            "somaxconn" => h.somaxconn = num(),
            "syn_backlog" => h.syn_backlog = num(),
            "conntrack_count" => h.conntrack_count = num(),
            "conntrack_max" => h.conntrack_max = num(),
            "loadavg" => {
                h.load1 = v
                    .split_whitespace()
                    .next()
                    .and_then(|w| w.parse::<f64>().ok())
            }
            "nproc" => h.nproc = num().filter(|n| *n > 0),
            "swap_total_kb" => h.swap_total_kb = num(),
            "swap_free_kb" => h.swap_free_kb = num(),
            "root_statfs" if !v.is_empty() => h.root_statfs = Some(v.to_string()),
            "root_real" if !v.is_empty() => h.root_real = Some(v.to_string()),
            "mount" => {
                if let Some((mp, fs)) = value.rsplit_once(' ') {
                    h.mounts.push((unescape_mount(mp), fs.trim().to_string()));
                }
            }
            _ => {}
        }
    }
    h
}

/// /proc/mounts writes space, tab, newline and backslash in paths as octal escapes (`\040`).
fn unescape_mount(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let octal = b
            .get(i + 1..i + 4)
            .filter(|d| d.iter().all(|c| (b'0'..=b'7').contains(c)));
        match octal {
            Some(d) if b[i] == b'\\' => {
                let n = d.iter().fold(0u32, |n, c| n * 8 + u32::from(c - b'0'));
                out.push(n as u8);
                i += 4;
            }
            _ => {
                out.push(b[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}
