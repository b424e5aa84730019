//! `doctor`: gather facts from the target (one connection, one host script, a few engine calls), then
//! the pure `doctor::assess` and its report. On a swarm, the same on every node the manager lists (each
//! over its own connection, at once), with each node's clock and link, and the manager's services and
//! overlays, into `doctor::swarm::assess_swarm`.

use crate::sut::ssh::SshError;
use crate::sut::{Target, TargetSpec};
use anyhow::Result;
use bollard::query_parameters::ListContainersOptionsBuilder;
use bollard::Docker;
use exectl_core::doctor::facts::{self, Container, Engine, Facts, Link, Stage};
use exectl_core::doctor::{assess, Report};
use std::future::Future;
use std::time::Duration;

mod swarm;

/// How long one engine or host call may take before doctor reports it as not answering.
const CALL_TIMEOUT: Duration = Duration::from_secs(30);

/// What doctor checks: the thresholds (`core::doctor::options`, from flags or a deployed stack's record),
/// and on a swarm the stack whose services and overlays are read too.
pub struct DoctorOptions {
    pub checks: exectl_core::doctor::Options,
    pub stack: Option<String>,
}

impl DoctorOptions {
    /// The thresholds as given (`given`'s texts), else the deployed `stack`'s, read from its record in
    /// local state (no connection): `given.record` is that record's, whatever it held.
    pub fn given(
        given: &exectl_core::doctor::options::Given,
        stack: Option<&str>,
        target: &TargetSpec,
    ) -> Result<DoctorOptions> {
        let stack = stack
            .map(|s| exectl_core::spec::resolve_stack_name(Some(s)))
            .transpose()?;
        let record = match &stack {
            None => None,
            Some(s) => Some(crate::state::record::require(
                &target.bundle_dir(s),
                s,
                "deploy it first, name a deployed stack, or give --instances, --cpus and --memory",
            )?),
        };
        let checks = exectl_core::doctor::options::options(&exectl_core::doctor::options::Given {
            record: record.as_ref(),
            ..*given
        })?;
        Ok(DoctorOptions { checks, stack })
    }
}

/// Doctor's report on `spec`'s target. It takes the target unconnected: a connection that fails is one
/// of its findings (the stage it failed at, and why), not an error.
pub async fn doctor(spec: &TargetSpec, o: &DoctorOptions) -> Result<Report> {
    let checks = match spec.swarm {
        false => assess(&gather(spec).await, &o.checks),
        true => match swarm::gather(spec, o.stack.as_deref()).await? {
            Ok(swarm) => exectl_core::doctor::swarm::assess_swarm(&swarm, &o.checks),
            // The manager did not answer: its link's checks say where it failed.
            Err(manager) => assess(&manager, &o.checks),
        },
    };
    Ok(Report::new(spec.describe(), checks))
}

/// Every fact doctor needs. Never fails: what cannot be read is recorded as such.
pub async fn gather(spec: &TargetSpec) -> Facts {
    match Target::connect(spec).await {
        Ok(t) => facts_of(&t, spec).await,
        Err(e) => Facts::unreachable(failed_link(spec.ssh.is_some(), &e)),
    }
}

/// What doctor reads of one connected engine and its host.
async fn facts_of(target: &Target, spec: &TargetSpec) -> Facts {
    let link = match (&target.remote, &spec.ssh) {
        (Some(l), Some(o)) => Link::Remote {
            url: l.url.to_string(),
            peer: l.peer.to_string(),
            user: l.url.user.clone(),
            known_hosts: o.known_hosts.display().to_string(),
            docker_socket: l.docker_socket.clone(),
        },
        _ => Link::Local,
    };
    let engine = engine(&target.docker).await;
    let root = engine
        .as_ref()
        .ok()
        .and_then(|e| e.docker_root_dir.clone())
        .unwrap_or_default();
    let host_facts = exectl_core::scripts::facts::host_facts(&root);
    let (max_nofile, engine_config, host, containers) = tokio::join!(
        within(target.max_nofile()),
        within(target.engine_config()),
        within(target.host_shell(&host_facts)),
        containers(&target.docker),
    );
    Facts {
        link,
        engine,
        max_nofile: max_nofile.ok().flatten(),
        engine_config: engine_config.ok().flatten(),
        host: host
            .and_then(|r| r.map_err(|e| format!("{e:#}")))
            .map(|out| facts::parse_host(&out)),
        containers,
    }
}

async fn within<T>(f: impl Future<Output = T>) -> Result<T, String> {
    tokio::time::timeout(CALL_TIMEOUT, f)
        .await
        .map_err(|_| format!("no answer within {} s", CALL_TIMEOUT.as_secs()))
}

/// Which stage a connection error belongs to, and its text with the cause before the fix.
fn failed_link(remote: bool, e: &anyhow::Error) -> Link {
    let stage = match e.chain().find_map(|c| c.downcast_ref::<SshError>()) {
        Some(SshError::Tcp { .. }) => Stage::Tcp,
        Some(SshError::Handshake { .. }) => Stage::Handshake,
        Some(SshError::UnknownHostKey { .. } | SshError::ChangedHostKey { .. }) => Stage::HostKey,
        Some(SshError::Auth { .. } | SshError::Identity { .. }) => Stage::Auth,
        Some(
            SshError::ForwardingRefused { .. }
            | SshError::NoSocket { .. }
            | SshError::SocketPermission { .. }
            | SshError::Forwarding { .. },
        ) => Stage::DockerSocket,
        // The engine's API, or the local engine.
        Some(SshError::EngineApi { .. }) | None => Stage::EngineApi,
    };
    let (detail, fix) = exectl_core::doctor::assess::split_fix(&e.to_string());
    let causes: Vec<String> = e.chain().skip(1).map(|c| c.to_string()).collect();
    let mut message = detail;
    if !causes.is_empty() {
        message = format!("{message}: {}", causes.join(": "));
    }
    if !fix.is_empty() {
        message = format!("{message}; fix: {fix}");
    }
    Link::Failed {
        remote,
        stage,
        message,
    }
}

async fn engine(docker: &Docker) -> Result<Engine, String> {
    let version = within(docker.version()).await?.map_err(|e| e.to_string())?;
    let info = within(docker.info()).await?.map_err(|e| e.to_string())?;
    let positive = |n: Option<i64>| n.and_then(|n| u64::try_from(n).ok()).filter(|n| *n > 0);
    Ok(Engine {
        version: version.version.unwrap_or_default(),
        api_version: version.api_version.unwrap_or_default(),
        ncpu: positive(info.ncpu),
        mem_total: positive(info.mem_total),
        docker_root_dir: info.docker_root_dir.filter(|d| !d.is_empty()),
    })
}

/// Running containers, newest first (the engine's order), with their exectl.stack label.
async fn containers(docker: &Docker) -> Result<Vec<Container>, String> {
    let list =
        within(docker.list_containers(Some(ListContainersOptionsBuilder::default().build())))
            .await?
            .map_err(|e| e.to_string())?;
    Ok(list
        .into_iter()
        .map(|c| Container {
            name: crate::engine::observe::summary_name(c.names)
                .or(c.id.map(|id| id.chars().take(12).collect()))
                .unwrap_or_default(),
            stack: c
                .labels
                .and_then(|l| l.get(crate::engine::desired::LABEL_STACK).cloned()),
        })
        .collect())
}
