//! The target: one Docker engine (the local one by default) and the folder on its host where a stack's
//! files live. Everything that talks to the engine goes through here or `engine`.

pub mod docker_host;
mod exec;
pub mod ssh;
pub mod swarm;
pub mod target_flags;

pub use exec::{exec, ExecOutput};

use crate::shell::{scripts, HostShell, Output};
use anyhow::{Context, Result};
use bollard::Docker;
use exectl_core::error::UsageError;
use exectl_core::scripts::Script;
use std::net::{IpAddr, Ipv4Addr, SocketAddr, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// Where stack folders live on a remote SUT (bind-mount sources must be paths there).
pub const REMOTE_STACKS_ROOT: &str = "/opt/exectl";
/// The oldest engine API exectl is tested against (Docker 20.10).
pub use exectl_core::doctor::assess::MIN_API;
pub const DEFAULT_DOCKER_SOCKET: &str = "/var/run/docker.sock";
/// The state key of the local engine (`TargetSpec::key`).
pub const LOCAL_KEY: &str = "local";

/// Which target, resolved from --target, EXECTL_TARGET or exectl.yaml's `target:`, not yet connected.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct TargetSpec {
    pub ssh: Option<ssh::ConnectOptions>,
    pub docker_socket: String,
    /// `swarm+ssh://`: the engine is a swarm manager, and the stack's services spread over its nodes.
    pub swarm: bool,
}

impl TargetSpec {
    pub fn local() -> TargetSpec {
        TargetSpec {
            ssh: None,
            docker_socket: DEFAULT_DOCKER_SOCKET.into(),
            swarm: false,
        }
    }

    /// Names the target in local state paths: `local`, `ssh-USER@HOST-PORT` or `swarm-ssh-…`.
    pub fn key(&self) -> String {
        match &self.ssh {
            None => LOCAL_KEY.to_string(),
            Some(o) if self.swarm => format!("swarm-{}", o.url.state_key()),
            Some(o) => o.url.state_key(),
        }
    }

    /// The local folder of a stack's state on this target (secrets, lock, bundle copy, manifest).
    pub fn stack_dir(&self, stack: &str) -> PathBuf {
        crate::state::stack_dir(&crate::state::root(), &self.key(), stack)
    }

    /// The local copy of a stack's rendered bundle on this target (what status, prepare, load read).
    pub fn bundle_dir(&self, stack: &str) -> PathBuf {
        crate::state::bundle_dir(&self.stack_dir(stack))
    }

    /// "the local engine" or the SSH URL, for messages.
    pub fn describe(&self) -> String {
        match &self.ssh {
            None => "the local engine".to_string(),
            Some(o) if self.swarm => format!("swarm+{}", o.url),
            Some(o) => o.url.to_string(),
        }
    }

    /// Commands that read one engine and its host (sweep, campaign, host tune and restore) refuse a swarm target
    /// before connecting: bad input, nothing touched.
    pub fn one_engine(&self, command: &str) -> Result<(), UsageError> {
        if !self.swarm {
            return Ok(());
        }
        Err(UsageError::new(
            "--target",
            self.describe(),
            format!("exectl {command} reads one engine and its host, and does not run on a swarm yet (deploy, plan, prepare, status, load, bench, doctor and teardown do)"),
            "give one node's engine (ssh://USER@NODE) to run it there",
        ))
    }

    /// Where the target's published ports answer: loopback, or the SUT's address (the first its name
    /// resolves to, which is also the first the SSH connection tries). The one definition: a connected
    /// `Target` keeps what this gave.
    pub fn address(&self) -> Result<IpAddr, UsageError> {
        let Some(o) = &self.ssh else {
            return Ok(IpAddr::V4(Ipv4Addr::LOCALHOST));
        };
        (o.url.host.as_str(), o.url.port)
            .to_socket_addrs()
            .ok()
            .and_then(|mut a| a.next())
            .map(|a| a.ip())
            .ok_or_else(|| {
                UsageError::new(
                    "--target",
                    o.url.to_string(),
                    "the host does not resolve",
                    "give the SUT's address or a resolvable name",
                )
            })
    }
}

pub struct Target {
    pub docker: Docker,
    pub spec: TargetSpec,
    /// Names the target in local state paths ("local", "ssh-root@10.0.0.2-22").
    pub key: String,
    /// The SSH link of a remote target.
    pub remote: Option<Arc<ssh::Link>>,
    /// Runs scripts and puts files on the target's host: this machine, or the SSH link.
    pub shell: Arc<dyn HostShell>,
    /// Where the target's published ports answer (`TargetSpec::address`).
    address: IpAddr,
    /// The engine's unix socket on its host (None: reached over TCP), to find its dockerd.
    engine_socket: Option<String>,
    /// A swarm target's nodes, each connected (`swarm+ssh://`).
    pub swarm: Option<Arc<swarm::Swarm>>,
}

impl Target {
    /// The local engine: DOCKER_HOST if set and not empty, else the unix socket; API version negotiated so that old
    /// engines (20.10 / API 1.41) work.
    pub async fn local() -> Result<Target> {
        Target::connect(&TargetSpec::local()).await
    }

    /// Connect to the target: the local engine, or the SUT over SSH with its engine's socket forwarded;
    /// on a swarm, every node too.
    pub async fn connect(spec: &TargetSpec) -> Result<Target> {
        let mut target = Target::connect_engine(spec).await?;
        if spec.swarm {
            let nodes = swarm::Swarm::connect(&target.docker, spec).await?;
            target.swarm = Some(Arc::new(nodes));
        }
        Ok(target)
    }

    /// Connect to one engine (a swarm's nodes are not looked for).
    pub(crate) async fn connect_engine(spec: &TargetSpec) -> Result<Target> {
        let Some(o) = spec.ssh.clone() else {
            let (docker, at) = local_engine()?;
            let docker =
                docker
                    .negotiate_version()
                    .await
                    .map_err(|e| exectl_core::error::Unreachable {
                        what: format!("the Docker engine at {at} does not answer ({e})"),
                        fix: "start it (dockerd, or `bash scripts/dockerd.sh`) or set DOCKER_HOST"
                            .into(),
                    })?;
            return Ok(Target {
                docker,
                key: spec.key(),
                spec: spec.clone(),
                remote: None,
                shell: Arc::new(crate::shell::Local),
                address: spec.address()?,
                engine_socket: at.socket().map(str::to_string),
                swarm: None,
            });
        };
        let socket = spec.docker_socket.clone();
        let link = tokio::task::spawn_blocking(move || ssh::Link::connect(&o, &socket))
            .await
            .context("the SSH connect task")??;
        let link = Arc::new(link);
        let docker = remote_engine(&link).await?;
        Ok(Target {
            docker,
            key: spec.key(),
            spec: spec.clone(),
            shell: link.clone(),
            engine_socket: Some(link.docker_socket.clone()),
            remote: Some(link),
            address: spec.address()?,
            swarm: None,
        })
    }

    /// Where a service of the stack runs: the engine that holds its container, and the container's name
    /// there. On one engine, this target and `exectl-STACK-SERVICE`; on a swarm, the node that runs its
    /// task and the task's container (an error naming the service when none runs).
    pub async fn locate(&self, stack: &str, service: &str) -> Result<(&Target, String)> {
        let Some(nodes) = &self.swarm else {
            return Ok((self, exectl_core::naming::container(stack, service)));
        };
        let tasks = swarm::running_tasks(&self.docker, stack).await?;
        let Some(task) = tasks.iter().find(|t| t.service == service) else {
            anyhow::bail!(UsageError::new(
                "--stack",
                stack,
                format!("its service {service} has no running task on the swarm"),
                "deploy the stack first (exectl deploy …), or look at its tasks: docker service ps",
            ));
        };
        let node = nodes.by_id(&task.node_id).with_context(|| {
            format!(
                "{service} runs on node {}, which the swarm does not list",
                task.node_id
            )
        })?;
        Ok((
            nodes.target(&node.node.hostname)?,
            task.container_id.clone(),
        ))
    }

    pub fn is_remote(&self) -> bool {
        self.remote.is_some()
    }

    /// "the local engine" or the SSH URL, for messages.
    pub fn describe(&self) -> String {
        self.spec.describe()
    }

    /// The stack's local state folder (secrets, lock, the bundle's copy, manifest).
    pub fn stack_dir(&self, stack: &str) -> PathBuf {
        self.spec.stack_dir(stack)
    }

    /// The local copy of the rendered bundle (what status, prepare and load read).
    pub fn bundle_dir(&self, stack: &str) -> PathBuf {
        self.spec.bundle_dir(stack)
    }

    /// The bundle's folder on the target's host: bind-mount sources point there.
    pub fn host_bundle_dir(&self, stack: &str) -> PathBuf {
        match &self.remote {
            None => self.bundle_dir(stack),
            Some(_) => Path::new(REMOTE_STACKS_ROOT).join(stack),
        }
    }

    /// Where the target's published ports answer.
    pub fn address(&self) -> IpAddr {
        self.address
    }

    /// An address from which `ip:port` on the target's host is reachable from here (a container's own
    /// address: directly when local, through an SSH direct-tcpip forward when remote).
    pub async fn reach(&self, ip: &str, port: u16) -> Result<SocketAddr> {
        match &self.remote {
            None => Ok(SocketAddr::new(
                ip.parse()
                    .with_context(|| format!("{ip} is not an address"))?,
                port,
            )),
            Some(l) => {
                let (l, ip) = (l.clone(), ip.to_string());
                tokio::task::spawn_blocking(move || l.forward_tcp(&ip, port)).await?
            }
        }
    }

    /// Run a script on the target's host: exit code and output.
    pub async fn host_run(&self, script: &Script) -> Result<Output> {
        let (shell, script) = (self.shell.clone(), script.clone());
        tokio::task::spawn_blocking(move || shell.run(&script, None)).await?
    }

    /// Run a script on the target's host and return its stdout; an error when it fails.
    pub async fn host_shell(&self, script: &Script) -> Result<String> {
        let (shell, script) = (self.shell.clone(), script.clone());
        tokio::task::spawn_blocking(move || crate::shell::stdout_of(&*shell, &script)).await?
    }

    /// Write a file on the target's host (folders made), replacing it whole, with `mode`.
    pub async fn put_file(&self, path: &Path, bytes: &[u8], mode: u32) -> Result<()> {
        let (shell, path, bytes) = (self.shell.clone(), path.to_path_buf(), bytes.to_vec());
        tokio::task::spawn_blocking(move || shell.put_file(&path, &bytes, mode)).await?
    }

    /// Remove a folder on the target's host (nothing if absent).
    pub async fn remove_host_dir(&self, path: &Path) -> Result<()> {
        self.host_shell(&exectl_core::scripts::files::remove_dir(path))
            .await
            .map(|_| ())
    }

    /// Send the rendered bundle to the target's host (remote targets; a local one reads the local copy).
    /// `.env` holds secrets: mode 0600.
    pub async fn upload_bundle(
        &self,
        stack: &str,
        bundle: &exectl_core::render::Bundle,
    ) -> Result<()> {
        if !self.is_remote() {
            return Ok(());
        }
        let root = self.host_bundle_dir(stack);
        for f in &bundle.files {
            self.put_file(&root.join(f.path), &f.bytes, f.mode).await?;
        }
        Ok(())
    }

    /// The hard open-files limit a container may ask for: the engine's own hard limit (a container's
    /// rlimit is set by a child of dockerd, which cannot raise it without CAP_SYS_RESOURCE) and the
    /// kernel's fs.nr_open. None when it cannot be read.
    pub async fn max_nofile(&self) -> Option<u64> {
        let socket = self.engine_socket.as_deref()?;
        let out = self
            .host_shell(&scripts::limits::engine_limits(socket))
            .await
            .ok()?;
        scripts::limits::parse_max_nofile(&out)
    }

    /// How the engine's dockerd was started (its flags and daemon.json). None when it cannot be read.
    pub async fn engine_config(&self) -> Option<exectl_core::doctor::facts::EngineConfig> {
        let socket = self.engine_socket.as_deref()?;
        let out = self
            .host_shell(&exectl_core::scripts::dockerd::engine_config(socket))
            .await
            .ok()?;
        exectl_core::scripts::dockerd::parse_engine_config(&out)
    }
}

/// A client of the local engine named by DOCKER_HOST (empty is unset, as for docker), not yet
/// negotiated. A DOCKER_HOST exectl cannot use is an error naming it.
fn local_engine() -> Result<(Docker, docker_host::LocalEngine)> {
    let value = std::env::var("DOCKER_HOST").ok();
    let engine = docker_host::parse(value.as_deref())?;
    let docker = match &engine {
        docker_host::LocalEngine::Unix(path) => {
            Docker::connect_with_unix(path, 120, bollard::API_DEFAULT_VERSION)
        }
        docker_host::LocalEngine::Http(url) => {
            Docker::connect_with_http(url, 120, bollard::API_DEFAULT_VERSION)
        }
    };
    let docker = docker.map_err(|e| exectl_core::error::Unreachable {
        what: format!("the Docker engine at {engine} does not answer ({e})"),
        fix: "start it (dockerd, or `bash scripts/dockerd.sh`) or set DOCKER_HOST".into(),
    })?;
    Ok((docker, engine))
}

/// Pure: the engine's API version against `MIN_API`; the problem, worded, when too old or unreadable.
pub fn api_is_supported(api: &str, engine: &str) -> Result<(), String> {
    let parsed = api
        .split_once('.')
        .and_then(|(a, b)| Some((a.parse::<u32>().ok()?, b.parse::<u32>().ok()?)));
    match parsed {
        Some(v) if v >= MIN_API => Ok(()),
        _ => Err(format!(
            "speaks API {api:?} (engine {engine}), older than the {}.{} exectl needs",
            MIN_API.0, MIN_API.1
        )),
    }
}

/// bollard over the forwarded socket, with the API version checked: a too-old engine is named.
async fn remote_engine(link: &ssh::Link) -> Result<Docker> {
    let name = link.url.known_hosts_name();
    let socket = link.docker_socket.clone();
    let api_err = |problem: String, fix: &str| ssh::SshError::EngineApi {
        name: name.clone(),
        socket: socket.clone(),
        problem,
        fix: fix.to_string(),
    };
    let path = link.local_docker_socket.display().to_string();
    let docker = Docker::connect_with_unix(&path, 120, bollard::API_DEFAULT_VERSION)
        .map_err(|e| api_err(format!("cannot be used: {e}"), "check --docker-socket"))?;
    let version = tokio::time::timeout(Duration::from_secs(30), docker.version())
        .await
        .map_err(|_| {
            api_err(
                "did not answer within 30 s".into(),
                "check that the engine is running on the SUT",
            )
        })?
        .map_err(|e| {
            let why = link.tunnel_error().unwrap_or_else(|| e.to_string());
            api_err(
                format!("did not answer: {why}"),
                "check that the engine is running on the SUT (docker version there)",
            )
        })?;
    let api = version.api_version.clone().unwrap_or_default();
    if let Err(problem) = api_is_supported(&api, version.version.as_deref().unwrap_or("?")) {
        return Err(api_err(problem, "upgrade Docker on the SUT to 20.10 or newer").into());
    }
    Ok(docker.negotiate_version().await?)
}

/// A transport failure of the engine API (no answer, connection refused or reset, timeout), as
/// opposed to an answer of the engine refusing a request (which is the command failing: exit 1).
fn engine_unreachable(e: &bollard::errors::Error) -> bool {
    use bollard::errors::Error as E;
    matches!(
        e,
        E::IOError { .. }
            | E::HyperResponseError { .. }
            | E::HyperLegacyError { .. }
            | E::RequestTimeoutError
            | E::SocketNotFoundError(_)
    )
}

/// Whether the chain holds a transport failure of the engine API (`engine_unreachable`).
pub fn transport_failure(err: &anyhow::Error) -> bool {
    err.chain().any(|e| {
        e.downcast_ref::<bollard::errors::Error>()
            .is_some_and(engine_unreachable)
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn engine_api_versions() {
        assert!(super::api_is_supported("1.41", "20.10.24").is_ok());
        assert!(super::api_is_supported("1.47", "27.3").is_ok());
        assert!(super::api_is_supported("2.0", "x").is_ok());
        let e = super::api_is_supported("1.40", "19.03.15").unwrap_err();
        assert!(
            e.contains("\"1.40\" (engine 19.03.15)") && e.contains("1.41"),
            "{e}"
        );
        assert!(super::api_is_supported("", "?").is_err());
    }
}
