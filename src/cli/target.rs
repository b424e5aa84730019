//! Which engine: the target flags, and the one reading of them (flag over EXECTL_TARGET over
//! exectl.yaml's `target:`; local when none) into a `sut::TargetSpec`, checked before any connection.

use crate::sut::{ssh, TargetSpec};
use clap::Args;
use exectl_core::error::UsageError;
use std::path::PathBuf;

/// Which engine: the local one, or a SUT over SSH (shared by every command that touches a target).
#[derive(Debug, Args, Clone)]
pub struct TargetArgs {
    /// Where the stack runs: `local` (this machine's engine), ssh://USER@HOST[:PORT], or
    /// swarm+ssh://USER@MANAGER[:PORT] (a swarm: each node reached with the same user, port and key)
    /// [default: $EXECTL_TARGET, else exectl.yaml's `target:`, else local].
    #[arg(long, value_name = "URL")]
    pub target: Option<String>,
    /// SSH private key; only this one is tried [default: ssh-agent, then ~/.ssh/id_ed25519, id_ecdsa, id_rsa].
    #[arg(long, value_name = "FILE")]
    pub identity: Option<PathBuf>,
    /// known_hosts file the SUT's host key is checked against [default: ~/.ssh/known_hosts].
    #[arg(long, value_name = "FILE")]
    pub known_hosts: Option<PathBuf>,
    /// Trust an unknown SSH host key and record it (a changed key is always refused).
    #[arg(long)]
    pub accept_new_host_key: bool,
    /// The Docker engine's socket on the SUT (rootless or second engines).
    #[arg(long, value_name = "PATH", default_value = "/var/run/docker.sock")]
    pub docker_socket: String,
    /// Give up an SSH connection attempt after this long.
    #[arg(
        long,
        default_value = "10s",
        value_name = "DURATION",
        allow_hyphen_values = true
    )]
    pub connect_timeout: String,
}

impl Default for TargetArgs {
    fn default() -> Self {
        TargetArgs {
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
    args: &crate::cli::target::TargetArgs,
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
fn connect_timeout(
    args: &crate::cli::target::TargetArgs,
) -> Result<std::time::Duration, UsageError> {
    crate::ops::values::duration_flag(
        "--connect-timeout",
        &args.connect_timeout,
        std::time::Duration::from_millis(1),
        std::time::Duration::from_secs(3600),
    )
}

/// How to reach `url`: the key, known_hosts and timeout the target flags say (the SUT and every
/// generator host alike).
fn connect_options(
    args: &crate::cli::target::TargetArgs,
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

/// `--generators local,ssh://USER@HOST[:PORT],…`: the generator hosts, reached with the target flags'
/// key and known_hosts, and whether this host runs slices too (`local` listed).
pub fn generators(
    args: &crate::cli::target::TargetArgs,
    value: &str,
) -> Result<crate::load::Generators, UsageError> {
    let timeout = connect_timeout(args)?;
    let mut g = crate::load::Generators {
        local: false,
        hosts: Vec::new(),
    };
    for item in value.split(',').map(str::trim) {
        match ssh::url::parse("--generators", item)? {
            None if item == "local" => g.local = true,
            None => {
                return Err(UsageError::new(
                    "--generators",
                    value,
                    "an empty entry",
                    "list local and ssh://USER@HOST[:PORT] entries separated by commas",
                ))
            }
            Some(url) => {
                if g.hosts.iter().any(|h| h.url == url) {
                    return Err(UsageError::new(
                        "--generators",
                        value,
                        format!("{url} is listed twice"),
                        "list each generator host once (--processes sets this host's slices)",
                    ));
                }
                g.hosts.push(connect_options(args, url, timeout));
            }
        }
    }
    Ok(g)
}

/// The target named by the flags, EXECTL_TARGET or ./exectl.yaml's `target:` (commands without a spec).
pub fn target_spec(
    args: &crate::cli::target::TargetArgs,
) -> Result<crate::sut::TargetSpec, exectl_core::error::UsageError> {
    crate::state::checked_root()?;
    let file = super::spec::read_spec_file(None)?;
    crate::cli::target::resolve(args, file.target.as_ref())
}
