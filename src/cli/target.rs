//! The target flags every command that touches a target shares: clap's side of
//! `sut::target_flags::TargetFlags`, where what they mean and how they are read live.

use crate::sut::target_flags::TargetFlags;
use clap::Args;
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

impl TargetArgs {
    /// The flags as the library reads them.
    pub fn flags(&self) -> TargetFlags {
        TargetFlags {
            target: self.target.clone(),
            identity: self.identity.clone(),
            known_hosts: self.known_hosts.clone(),
            accept_new_host_key: self.accept_new_host_key,
            docker_socket: self.docker_socket.clone(),
            connect_timeout: self.connect_timeout.clone(),
        }
    }
}
