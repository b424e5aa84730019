//! Which engine: the target's settings as a user gives them (`TargetFlags`: what the flags every
//! command that touches a target shares say, as text; `cli::target` is their clap side), and the one
//! reading of them (flag over EXECTL_TARGET over exectl.yaml's `target:`; local when none) into a
//! `TargetSpec`, checked before any connection.

use super::{ssh, TargetSpec};
use exectl_core::error::UsageError;
use std::path::PathBuf;

/// Which engine: the local one, or a SUT over SSH (shared by every command that touches a target).
#[derive(Debug, Clone)]
pub struct TargetFlags {
    /// Where the stack runs: `local` (this machine's engine), ssh://USER@HOST[:PORT], or
    /// swarm+ssh://USER@MANAGER[:PORT] (a swarm: each node reached with the same user, port and key)
    /// [default: $EXECTL_TARGET, else exectl.yaml's `target:`, else local].
    pub target: Option<String>,
    /// SSH private key; only this one is tried [default: ssh-agent, then ~/.ssh/id_ed25519, id_ecdsa, id_rsa].
    pub identity: Option<PathBuf>,
    /// known_hosts file the SUT's host key is checked against [default: ~/.ssh/known_hosts].
    pub known_hosts: Option<PathBuf>,
    /// Trust an unknown SSH host key and record it (a changed key is always refused).
    pub accept_new_host_key: bool,
    /// The Docker engine's socket on the SUT (rootless or second engines).
    pub docker_socket: String,
    /// Give up an SSH connection attempt after this long.
    pub connect_timeout: String,
}

impl Default for TargetFlags {
    fn default() -> Self {
        TargetFlags {
            target: None,
            identity: None,
            known_hosts: None,
            accept_new_host_key: false,
            docker_socket: crate::sut::DEFAULT_DOCKER_SOCKET.to_string(),
            connect_timeout: "10s".to_string(),
        }
    }
}

/// The target flags, checked: flag over EXECTL_TARGET over exectl.yaml's `target:`; local when none.
pub fn resolve(
    args: &TargetFlags,
    file_target: Option<&exectl_core::spec::Raw>,
) -> Result<TargetSpec, UsageError> {
    let env = std::env::var("EXECTL_TARGET")
        .ok()
        .filter(|v| !v.is_empty());
    let (field, value) = match (&args.target, env, file_target) {
        (Some(v), _, _) => ("--target".to_string(), v.clone()),
        (None, Some(v), _) => ("EXECTL_TARGET".to_string(), v),
        (None, None, Some(raw)) => (raw.origin.to_string(), raw.value.clone()),
        (None, None, None) => ("--target".to_string(), "local".to_string()),
    };
    // `swarm+ssh://`: a swarm manager, reached as any SSH target.
    let (swarm, value) = match value.trim().strip_prefix("swarm+") {
        Some(rest) => (true, rest.to_string()),
        None => (false, value),
    };
    let url = ssh::url::parse(&field, &value)?;
    if swarm && url.is_none() {
        return Err(UsageError::new(
            field,
            format!("swarm+{value}"),
            "a swarm is reached over SSH",
            "write swarm+ssh://USER@MANAGER[:PORT]",
        ));
    }
    let timeout = connect_timeout(args)?;
    if !args.docker_socket.starts_with('/') {
        return Err(UsageError::new(
            "--docker-socket",
            &args.docker_socket,
            "not an absolute path on the SUT",
            "give e.g. /var/run/docker.sock or /run/user/1000/docker.sock",
        ));
    }
    if let Some(id) = &args.identity {
        if !id.is_file() {
            return Err(UsageError::new(
                "--identity",
                id.display(),
                "no such file",
                "give the path of a private key (e.g. ~/.ssh/id_ed25519)",
            ));
        }
    }
    Ok(TargetSpec {
        ssh: url.map(|url| connect_options(args, url, timeout)),
        docker_socket: args.docker_socket.clone(),
        swarm,
    })
}

/// `--connect-timeout`: ssh2 takes whole milliseconds in a u32 (0 is "no timeout"), so 1ms..=1h.
pub(crate) fn connect_timeout(args: &TargetFlags) -> Result<std::time::Duration, UsageError> {
    let text = &args.connect_timeout;
    exectl_core::units::duration_in(
        text,
        std::time::Duration::from_millis(1),
        std::time::Duration::from_secs(3600),
    )
    .map_err(|i| UsageError::new("--connect-timeout", text, i.problem, i.fix))
}

/// How to reach `url`: the key, known_hosts and timeout the target flags say (the SUT and every
/// generator host alike).
pub(crate) fn connect_options(
    args: &TargetFlags,
    url: ssh::SshUrl,
    timeout: std::time::Duration,
) -> ssh::ConnectOptions {
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_default();
    ssh::ConnectOptions {
        url,
        identity: args.identity.clone(),
        known_hosts: args
            .known_hosts
            .clone()
            .unwrap_or_else(|| home.join(".ssh/known_hosts")),
        accept_new_host_key: args.accept_new_host_key,
        timeout,
    }
}
