//! Facts in, checks out: every check of `exectl doctor` in a fixed order, pure. The engine's and the
//! host's checks are `engine_checks` and `host_checks` (the host's thresholds there, re-exported here);
//! what they share is `check`.

use super::check::num;
pub use super::check::{Check, Level};
use super::facts::{Engine, Facts, Host, Link, Stage};
use super::host_checks::*;
pub use super::host_checks::{
    CONNTRACK_FILL, CONNTRACK_PER_CONNECTION, FILES_PER_CONNECTION, LOAD_PER_CPU, MIN_SOMAXCONN,
    MIN_SYN_BACKLOG, PORTS_HEADROOM,
};

/// Older engines than this are not what exectl is tested against.
pub const MIN_ENGINE: (u32, u32) = (20, 10);
/// The oldest engine API exectl speaks (Docker 20.10).
pub const MIN_API: (u32, u32) = (1, 41);
/// Names of foreign containers listed in the detail.
pub const FOREIGN_LISTED: usize = 5;

/// The app instances' limits the target must carry (from a deployed stack's record or flags).
#[derive(Debug, Clone, PartialEq)]
pub struct Limits {
    pub instances: u64,
    pub cpus: f64,
    pub memory_bytes: u64,
    /// The app image's idle footprint when known (`core::footprint`: the real image's 200–260 MiB).
    pub idle_mib: Option<(u64, u64)>,
    /// Where they came from, for the detail ("stack exe", "flags").
    pub source: String,
    /// `cpus` and `memory` are deploy's defaults (no flag, no stack gave them): fitted to the engine as
    /// deploy fits them (`spec::fit`) before they are compared with it.
    pub defaulted: Defaulted,
}

/// Which of the limits are deploy's defaults.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Defaulted {
    pub cpus: bool,
    pub memory: bool,
}

impl Limits {
    /// The limits deploy would apply on an engine of `ncpu` CPUs and `mem` bytes: its defaults fitted
    /// to them, each said in `source`.
    pub fn fitted(&self, ncpu: u64, mem: u64) -> Limits {
        let mut l = self.clone();
        let mut said = Vec::new();
        if l.defaulted.cpus {
            let cpus = crate::spec::fit::default_cpus(i64::try_from(ncpu).ok());
            if cpus < l.cpus {
                said.push(format!("--cpus {}", num(cpus)));
                l.cpus = cpus;
            }
        }
        if l.defaulted.memory {
            let memory = crate::spec::fit::default_memory(i64::try_from(mem).ok());
            if memory < l.memory_bytes {
                said.push(format!("--memory {}", crate::units::show_size(memory)));
                l.memory_bytes = memory;
            }
        }
        if !said.is_empty() {
            l.source = format!(
                "{}; deploy's defaults fitted to the engine: {}",
                l.source,
                said.join(", ")
            );
        }
        l
    }
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
    let local = matches!(f.link, Link::Local);
    let cfg = f.engine_config.as_ref();
    out.push(super::engine_checks::userland_proxy(
        cfg,
        f.max_nofile,
        n,
        local,
    ));
    out.push(super::engine_checks::default_ulimits(cfg, f.max_nofile));
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

pub(super) fn mib(bytes: u64) -> String {
    format!("{} MiB", bytes >> 20)
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
    let fitted = limits.map(|l| l.fitted(ncpu, mem));
    let Some(l) = fitted.as_ref() else {
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
    let mut fix_idle = None;
    if let Some(idle) = l.idle_mib {
        let (about, high) = (crate::footprint::describe(idle), idle.1 << 20);
        if l.memory_bytes < high {
            fails.push(format!(
                "{about}, so --memory {} would have it killed before any load",
                mib(l.memory_bytes)
            ));
            fix_idle = Some(format!(
                "pass --memory {}m or more",
                (idle.1 * 2).next_multiple_of(128)
            ));
        } else if high.saturating_mul(l.instances) > mem {
            fails.push(format!(
                "{about}, so {} instances need about {} idle, more than the engine's {}",
                l.instances,
                mib(high.saturating_mul(l.instances)),
                mib(mem)
            ));
            fix_idle = Some(format!(
                "pass --instances {} or fewer, or use a larger SUT",
                (mem / high).max(1)
            ));
        }
    }
    if !fails.is_empty() {
        return Check::fail(
            NAME,
            format!("{} ({}): deploy refuses it", fails.join("; "), l.source),
            fix_idle.unwrap_or_else(|| {
                format!(
                    "pass --cpus {ncpu} and --memory {}m or less, or use a larger SUT",
                    mem >> 20
                )
            }),
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
    let idle = l
        .idle_mib
        .map(|i| format!("; {}", crate::footprint::describe(i)))
        .unwrap_or_default();
    Check::pass(
        NAME,
        format!(
            "{} app instances × {} CPUs and {} fit ({}){idle}; {offers}",
            l.instances,
            num(l.cpus),
            mib(l.memory_bytes),
            l.source
        ),
    )
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

#[cfg(test)]
#[path = "assess_tests.rs"]
pub(crate) mod tests;
