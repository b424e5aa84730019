//! Host tuning for C10k benchmarks (`exectl host tune|restore`): the pure part. The files of
//! `ansible-free/` are embedded here; the command uploads them to the host and runs `tune.sh` there, then
//! this module reads its report lines back into a typed report and renders it. Nothing here talks to a
//! host: see `ops::host` for the effects.

pub mod daemon_json;
pub mod report;
pub mod sysctl;

use exectl_core::error::UsageError;
use std::path::{Path, PathBuf};

/// The host's folder for exectl's host state (recorded previous values) under `root`.
pub const STATE_DIR: &str = "var/lib/exectl/host";
/// The Docker daemon's configuration file under `root`.
pub const DAEMON_JSON: &str = "etc/docker/daemon.json";

/// One file of ansible-free/, as uploaded next to tune.sh.
pub struct Embedded {
    pub path: &'static str,
    pub text: &'static str,
    pub mode: u32,
}

/// The file `path` of ansible-free/, embedded, uploaded with `mode`: its path said once, for both.
macro_rules! embedded {
    ($path:literal, $mode:literal) => {
        Embedded {
            path: $path,
            text: include_str!(concat!("../../ansible-free/", $path)),
            mode: $mode,
        }
    };
}

/// ansible-free/, embedded so that exectl works without the repository.
pub const ANSIBLE_FREE: [Embedded; 6] = [
    embedded!("tune.sh", 0o755),
    embedded!("README.md", 0o644),
    embedded!("sysctl/99-exectl-sut.conf", 0o644),
    embedded!("sysctl/99-exectl-client.conf", 0o644),
    LIMITS,
    DAEMON,
];

// Two entries whose path or text is used on its own, below.
const LIMITS: Embedded = embedded!("limits/99-exectl.conf", 0o644);
const DAEMON: Embedded = embedded!("docker/daemon.json", 0o644);
/// The open-file limits file, relative to the ansible-free folder.
pub const LIMITS_FILE: &str = LIMITS.path;
/// The daemon.json keys exectl wants (merged into the host's own file).
pub const WANTED_DAEMON_JSON: &str = DAEMON.text;

/// Which machine of the benchmark is tuned: its sysctl file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Sut,
    Client,
}

impl Role {
    pub fn parse(value: &str) -> Result<Role, UsageError> {
        match value {
            "sut" => Ok(Role::Sut),
            "client" => Ok(Role::Client),
            _ => Err(UsageError::new(
                "--role",
                value,
                "not a role",
                "give --role sut (the system under test) or --role client (a load generator)",
            )),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Role::Sut => "sut",
            Role::Client => "client",
        }
    }

    /// The role's sysctl file, relative to the ansible-free folder.
    pub fn sysctl_file(self) -> String {
        format!("sysctl/99-exectl-{}.conf", self.name())
    }

    pub fn sysctl_text(self) -> &'static str {
        let path = self.sysctl_file();
        ANSIBLE_FREE
            .iter()
            .find(|f| f.path == path)
            .map(|f| f.text)
            .expect("both roles' files are embedded")
    }
}

/// `--root`: the prefix of every path written on the host; "/" (the host itself) by default.
pub fn check_root(root: Option<&Path>) -> Result<PathBuf, UsageError> {
    match root {
        None => Ok(PathBuf::from("/")),
        Some(r) if r.is_absolute() => Ok(r.to_path_buf()),
        Some(r) => Err(UsageError::new(
            "--root",
            r.display(),
            "not an absolute path on the host",
            "give an absolute folder (e.g. /tmp/exectl-root), or leave --root out to tune the host itself",
        )),
    }
}

/// Where tune.sh reads and sets the sysctls under `root`: the live kernel's /proc/sys for "/", else the
/// files under ROOT/proc/sys (never the live kernel, unless a /proc is mounted there).
pub fn sysctl_dir(root: &Path) -> String {
    format!("{}/proc/sys", root_arg(root))
}

/// `root` as tune.sh's `--root` argument: empty for "/".
pub fn root_arg(root: &Path) -> String {
    let s = root.display().to_string();
    s.trim_end_matches('/').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_role_files_parse() {
        for role in [Role::Sut, Role::Client] {
            let s = sysctl::parse(role.sysctl_text()).unwrap();
            assert!(s.iter().any(|(k, _)| k == "net.ipv4.ip_local_port_range"));
            assert!(s.iter().any(|(k, _)| k == "fs.nr_open"));
        }
        let sut = sysctl::parse(Role::Sut.sysctl_text()).unwrap();
        for key in [
            "net.core.somaxconn",
            "net.ipv4.tcp_max_syn_backlog",
            "net.ipv4.tcp_tw_reuse",
            "fs.file-max",
            "net.netfilter.nf_conntrack_max",
        ] {
            assert!(sut.iter().any(|(k, _)| k == key), "{key}");
        }
        serde_json::from_str::<serde_json::Value>(WANTED_DAEMON_JSON).unwrap();
    }

    #[test]
    fn unknown_role_names_the_flag_and_the_fix() {
        let e = Role::parse("db").unwrap_err();
        assert_eq!(e.field, "--role");
        assert_eq!(e.value, "db");
        assert!(e.fix.contains("--role sut"));
        assert_eq!(Role::parse("client").unwrap(), Role::Client);
    }

    #[test]
    fn root_must_be_absolute() {
        assert_eq!(check_root(None).unwrap(), PathBuf::from("/"));
        assert_eq!(root_arg(Path::new("/")), "");
        assert_eq!(root_arg(Path::new("/tmp/r/")), "/tmp/r");
        assert_eq!(sysctl_dir(Path::new("/")), report::LIVE_SYSCTLS);
        assert_eq!(sysctl_dir(Path::new("/tmp/r/")), "/tmp/r/proc/sys");
        assert_eq!(
            check_root(Some(Path::new("rel"))).unwrap_err().field,
            "--root"
        );
    }
}
