//! The topology spec: what a benchmark stack is, fully resolved and validated. Pure: no I/O here except
//! reading the optional spec and images files in `input`.

pub mod fit;
pub(crate) mod input;
mod resolve;
pub(crate) mod yaml_tree;

pub use fit::{Fitted, Given, Offers};

pub use input::{parse_images_file, parse_spec_file, Origin, Raw, SpecInput};
pub(crate) use resolve::is_env_key;
pub use resolve::{
    check_stack_prefix, memory_size, resolve, resolve_stack_name, DEFAULT_STACK, MAX_CPUS,
    MAX_STACK, MIN_CPUS, MIN_MEMORY,
};

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Topology {
    Single,
    Ha,
}

impl Topology {
    pub fn name(self) -> &'static str {
        match self {
            Topology::Single => "single",
            Topology::Ha => "ha",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Db {
    Mariadb,
    Postgres,
    Sqlite,
}

impl Db {
    pub fn name(self) -> &'static str {
        match self {
            Db::Mariadb => "mariadb",
            Db::Postgres => "postgres",
            Db::Sqlite => "sqlite",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum NginxVariant {
    BaselineDefault,
    TunedIpHash,
    TunedLeastConn,
}

impl NginxVariant {
    pub const ALL: [(&'static str, NginxVariant); 3] = [
        ("baseline-default", NginxVariant::BaselineDefault),
        ("tuned-ip-hash", NginxVariant::TunedIpHash),
        ("tuned-least-conn", NginxVariant::TunedLeastConn),
    ];

    pub fn name(self) -> &'static str {
        Self::ALL
            .iter()
            .find(|(_, v)| *v == self)
            .map(|(n, _)| *n)
            .unwrap_or("?")
    }

    /// The seed's three nginx files: (algorithm, worker_connections, worker_rlimit_nofile).
    /// The variant's settings for containers whose nofile ulimit is `nofile`: a tuned variant's
    /// worker_rlimit_nofile is at most that ulimit (nginx cannot raise its own past it), and its
    /// worker_connections half of it (each proxied socket holds two descriptors). Tuned is as tuned as
    /// the host allows: the seed's 200000 where it may, 20000 on a host whose hard limit is 20000.
    pub fn defaults_for(self, nofile: u64) -> (LbAlgorithm, u64, Option<u64>) {
        match self.defaults() {
            (alg, wc, Some(rl)) if rl > nofile => (alg, wc.min(nofile / 2).max(1), Some(nofile)),
            d => d,
        }
    }

    pub fn defaults(self) -> (LbAlgorithm, u64, Option<u64>) {
        match self {
            NginxVariant::BaselineDefault => (LbAlgorithm::IpHash, 1024, None),
            NginxVariant::TunedIpHash => (LbAlgorithm::IpHash, 32768, Some(200_000)),
            NginxVariant::TunedLeastConn => (LbAlgorithm::LeastConn, 32768, Some(200_000)),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LbAlgorithm {
    LeastConn,
    IpHash,
}

impl LbAlgorithm {
    /// The nginx directive, as written in an upstream block.
    pub fn directive(self) -> &'static str {
        match self {
            LbAlgorithm::LeastConn => "least_conn",
            LbAlgorithm::IpHash => "ip_hash",
        }
    }
}

/// nginx's `worker_processes`. Each proxied socket takes two of a worker's `worker_connections`, so the
/// LB carries at most worker_connections × workers / 2 sockets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorkerProcesses {
    /// One worker per CPU nginx sees: in a container without a cpuset, every CPU of the host (a CPU
    /// quota does not change it).
    Auto,
    Count(u32),
}

impl WorkerProcesses {
    /// More would only add processes contending for the same cores.
    pub const MAX: u32 = 64;

    /// The directive's value: `auto` or the count.
    pub fn directive(self) -> String {
        match self {
            WorkerProcesses::Auto => "auto".into(),
            WorkerProcesses::Count(n) => n.to_string(),
        }
    }
}

/// `auto` as a string, a count as a number (exectl.yaml says either).
impl Serialize for WorkerProcesses {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            WorkerProcesses::Auto => s.serialize_str("auto"),
            WorkerProcesses::Count(n) => s.serialize_u32(*n),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NginxSpec {
    pub variant: NginxVariant,
    pub lb_algorithm: LbAlgorithm,
    pub worker_connections: u64,
    /// None keeps nginx's default (the process limit), as the seed's baseline file did.
    pub worker_rlimit_nofile: Option<u64>,
    pub worker_processes: WorkerProcesses,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Images {
    pub app: String,
    pub mariadb: String,
    pub postgres: String,
    pub redis: String,
    pub nginx: String,
    pub traefik: String,
    /// A one-shot with sqlite3 that `exectl prepare` runs on the app's data volume (SQLite stacks).
    pub sqlite: String,
}

impl Default for Images {
    fn default() -> Self {
        Images {
            app: "ghcr.io/exelearning/exelearning:latest".into(),
            mariadb: "mariadb:11.4".into(),
            postgres: "postgres:18-alpine".into(),
            redis: "redis:7-alpine".into(),
            nginx: "nginx:1.27-alpine".into(),
            traefik: "traefik:v3.3".into(),
            sqlite: "keinos/sqlite3:latest".into(),
        }
    }
}

/// A `--set-secret` value. Whatever serialises or prints a spec (lock file, run records, `runs diff`,
/// --json) sees `redacted` instead: a fingerprint that tells two values apart, never the value.
#[derive(Clone, PartialEq, Eq)]
pub struct SecretValue {
    value: String,
    redacted: String,
}

impl SecretValue {
    pub fn new(key: &str, value: &str) -> SecretValue {
        use sha2::{Digest, Sha256};
        // Keyed by the variable name so one value under two names gives two fingerprints.
        let digest = Sha256::digest(format!("exectl --set-secret\0{key}\0{value}"));
        SecretValue {
            value: value.to_string(),
            redacted: format!("<secret sha256:{}>", &hex::encode(digest)[..16]),
        }
    }

    /// The value itself: for the .env file only.
    pub fn expose(&self) -> &str {
        &self.value
    }

    pub fn redacted(&self) -> &str {
        &self.redacted
    }
}

impl std::fmt::Debug for SecretValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.redacted)
    }
}

impl Serialize for SecretValue {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.redacted)
    }
}

/// A validated spec: every knob has its effective value.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Spec {
    pub topology: Topology,
    pub stack: String,
    /// App instances: 1 for single.
    pub instances: u32,
    pub db: Db,
    /// Load balancer settings (ha only).
    pub nginx: Option<NginxSpec>,
    /// CPU limit per app instance, as given (e.g. "2", "1.5").
    pub cpus: String,
    /// Memory limit per app instance, normalised (e.g. "2g").
    pub memory: String,
    pub memory_bytes: u64,
    /// nofile soft = hard limit for app, nginx and traefik containers.
    pub nofile: u64,
    pub host: String,
    /// Traefik's published port (single, or ha with traefik).
    pub http_port: u16,
    /// nginx's published port (ha).
    pub lb_port: u16,
    /// ha: also put Traefik in front of the LB, routing the Host rule to it.
    pub traefik: bool,
    pub app_env: String,
    pub app_debug: u8,
    /// Docker healthcheck interval of the app, seconds (the real image uses 30).
    pub health_interval_s: u32,
    /// Extra app environment from --set / env:.
    pub env: BTreeMap<String, String>,
    /// App environment from --set-secret: the values go to the 0600 .env only (compose.yaml says `${KEY}`).
    /// Left out of serialisations when empty, so specs without it serialise as before.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub secret_env: BTreeMap<String, SecretValue>,
    pub images: Images,
    /// Which of the settings a target may not take were given, and where: the others are defaults,
    /// fitted to the target at deploy (`fit`). Not part of what is deployed or recorded.
    #[serde(skip)]
    pub given: Given,
}

impl Spec {
    /// One line that names the knobs that matter most.
    pub fn describe(&self) -> String {
        let spec = self;
        match &spec.nginx {
            Some(n) => format!(
                "ha, {} instances, {}, nginx {} ({}, worker_connections {})",
                spec.instances,
                spec.db.name(),
                n.variant.name(),
                n.lb_algorithm.directive(),
                n.worker_connections
            ),
            None => format!("single, {}, Traefik Host {}", spec.db.name(), spec.host),
        }
    }
}

impl Spec {
    /// App service names: `app` for single, `app-1..app-N` for ha.
    pub fn app_services(&self) -> Vec<String> {
        match self.topology {
            Topology::Single => vec!["app".to_string()],
            Topology::Ha => (1..=self.instances).map(|i| format!("app-{i}")).collect(),
        }
    }

    /// The database service name, if the stack has one.
    pub fn db_service(&self) -> Option<&'static str> {
        match self.db {
            Db::Sqlite => None,
            other => Some(other.name()),
        }
    }

    pub fn has_traefik(&self) -> bool {
        self.topology == Topology::Single || self.traefik
    }
}

/// A test's spec input: ha with the flags given (what a test names beyond them panics, to be added
/// here). One fixture for the core's own tests and the shell's (feature `fixtures`).
#[cfg(any(test, feature = "fixtures"))]
pub fn ha_input(flags: &[(&'static str, &str)]) -> SpecInput {
    let mut i = SpecInput {
        topology: Some(Raw::flag("topology", "ha")),
        ..Default::default()
    };
    for (f, v) in flags {
        let raw = Some(Raw::flag(f, *v));
        match *f {
            "--instances" => i.instances = raw,
            "--nginx" => i.nginx = raw,
            "--cpus" => i.cpus = raw,
            "--memory" => i.memory = raw,
            "--db" => i.db = raw,
            "--set" => i.env.push(Raw::flag(f, *v)),
            other => panic!("add {other} to spec::ha_input"),
        }
    }
    i
}
