//! Validation: raw input → Spec, or a UsageError naming the field, the value and the fix.

use super::input::{Raw, SpecInput};
use super::{Db, Images, LbAlgorithm, NginxSpec, NginxVariant, Spec, Topology, WorkerProcesses};
use crate::error::UsageError;
use crate::units::{self, Invalid};
use std::collections::BTreeMap;
use std::time::Duration;

/// App environment variables exectl sets itself: a `--set` may not change them, or the stack would break
/// silently (wrong DB, mismatched secrets). Each names the flag to use instead.
const MANAGED_ENV: &[(&str, &str)] = &[
    ("APP_PORT", "the app listens on 8080 inside its container"),
    ("PORT", "the app listens on 8080 inside its container"),
    ("APP_ENV", "use --app-env"),
    ("APP_DEBUG", "use --app-debug"),
    ("APP_SECRET", "secrets are generated per stack"),
    ("API_JWT_SECRET", "secrets are generated per stack"),
    ("JWT_SECRET", "secrets are generated per stack"),
    ("ADMIN_EMAIL", "exectl keeps its own admin for probes"),
    ("ADMIN_PASSWORD", "exectl keeps its own admin for probes"),
    ("DB_DRIVER", "use --db"),
    ("DB_HOST", "use --db"),
    ("DB_PORT", "use --db"),
    ("DB_NAME", "use --db"),
    ("DB_USER", "use --db"),
    ("DB_PASSWORD", "secrets are generated per stack"),
    ("DB_PATH", "use --db sqlite"),
    ("REDIS_HOST", "Redis is wired in for ha"),
    ("REDIS_PORT", "Redis is wired in for ha"),
    ("REDIS_PASSWORD", "Redis is wired in for ha"),
];

pub(super) const IMAGE_KEYS: [&str; 7] = [
    "app", "mariadb", "postgres", "redis", "nginx", "traefik", "sqlite",
];

pub fn resolve(input: SpecInput) -> Result<Spec, UsageError> {
    let topology = match &input.topology {
        None => {
            return Err(UsageError::new(
                "topology",
                "",
                "no topology given",
                "name it: `single` or `ha` (or `topology:` in exectl.yaml)",
            ))
        }
        Some(r) => match r.value.as_str() {
            "single" => Topology::Single,
            "ha" => Topology::Ha,
            _ => return Err(r.error("unknown topology", "use `single` or `ha`")),
        },
    };
    let ha = topology == Topology::Ha;
    if !ha {
        refuse_ha_flags(&input)?;
    }

    let stack = match &input.stack {
        None => DEFAULT_STACK.to_string(),
        Some(r) => check_stack(r)?,
    };

    let instances = if ha {
        match &input.instances {
            None => 2,
            Some(r) => {
                let n = parse_in(r, 0, u64::MAX)?;
                // One instance is allowed: the HA path (nginx, PostgreSQL, Redis) with one app, the
                // baseline a sweep of `instances=1,2` compares two against.
                if n < 1 {
                    return Err(r.error(
                        "an HA stack needs at least 1 app instance",
                        "pass --instances 1 or more",
                    ));
                }
                if n > 64 {
                    return Err(r.error("more than 64 instances", "pass --instances 64 or fewer"));
                }
                n as u32
            }
        }
    } else {
        1
    };

    let db = match &input.db {
        None if ha => Db::Postgres,
        None => Db::Mariadb,
        Some(r) => match r.value.as_str() {
            "mariadb" => Db::Mariadb,
            "postgres" => Db::Postgres,
            "sqlite" if ha => {
                return Err(r.error(
                    "HA instances share one database and SQLite lives in one instance's volume",
                    "use --db postgres (default for ha) or --db mariadb",
                ))
            }
            "sqlite" => Db::Sqlite,
            _ => return Err(r.error("unknown database", "use mariadb, postgres or sqlite")),
        },
    };

    let nofile = match &input.nofile {
        None => super::fit::DEFAULT_NOFILE,
        Some(r) => parse_in(r, 1024, 1 << 20)?,
    };

    let nginx = if ha {
        Some(resolve_nginx(&input, nofile)?)
    } else {
        None
    };

    let cpus = match &input.cpus {
        None => format!("{}", super::fit::DEFAULT_CPUS),
        Some(r) => parse_cpus(r)?,
    };

    let (memory, memory_bytes) = match &input.memory {
        None => (
            units::show_size(super::fit::DEFAULT_MEMORY),
            super::fit::DEFAULT_MEMORY,
        ),
        Some(r) => parse_memory(r)?,
    };

    let host = match &input.host {
        None => format!("{stack}.localhost"),
        Some(r) => {
            let ok = !r.value.is_empty()
                && r.value.len() <= 253
                && r.value.split('.').all(|label| {
                    !label.is_empty()
                        && label.len() <= 63
                        && !label.starts_with('-')
                        && !label.ends_with('-')
                        && label.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
                });
            if !ok {
                return Err(r.error(
                    "not a DNS host name",
                    "pass a name such as benchmark.example.com",
                ));
            }
            r.value.to_ascii_lowercase()
        }
    };

    let http_port = port(&input.http_port, 8080)?;
    let lb_port = port(&input.lb_port, 8090)?;
    let traefik = match &input.traefik {
        None => false,
        Some(r) => parse_bool(r)?,
    };
    if ha && traefik && http_port == lb_port {
        let r = input.lb_port.as_ref().or(input.http_port.as_ref());
        return Err(UsageError::new(
            r.map(|r| r.origin.to_string())
                .unwrap_or_else(|| "--lb-port".into()),
            lb_port,
            "Traefik and the nginx LB would publish the same port",
            "give --lb-port and --http-port different values",
        ));
    }

    let app_env = match &input.app_env {
        None => "prod".to_string(),
        Some(r) if r.value == "dev" || r.value == "prod" => r.value.clone(),
        Some(r) => return Err(r.error("unknown app environment", "use dev or prod")),
    };
    let app_debug = match &input.app_debug {
        None => 0,
        Some(r) if r.value == "0" || r.value == "false" => 0,
        Some(r) if r.value == "1" || r.value == "true" => 1,
        Some(r) => return Err(r.error("APP_DEBUG is 0 or 1", "use 0 or 1")),
    };
    let health_interval_s = match &input.health_interval {
        None => 30,
        Some(r) => parse_duration_s(r)?,
    };

    let env = resolve_env(&input.env)?;
    let secret_env = resolve_secret_env(&input.secret_env, &env)?;
    let images = resolve_images(&input.images)?;
    let origin = |r: &Option<Raw>| r.as_ref().map(|r| r.origin.to_string());
    let given = super::Given {
        cpus: origin(&input.cpus),
        memory: origin(&input.memory),
        nofile: origin(&input.nofile),
        worker_connections: origin(&input.worker_connections),
        worker_rlimit_nofile: origin(&input.worker_rlimit_nofile),
    };

    Ok(Spec {
        topology,
        stack,
        instances,
        db,
        nginx,
        cpus,
        memory,
        memory_bytes,
        nofile,
        host,
        http_port,
        lb_port,
        traefik,
        app_env,
        app_debug,
        health_interval_s,
        env,
        secret_env,
        images,
        given,
    })
}

/// Flags that only mean something for ha are refused with single rather than silently ignored.
pub const DEFAULT_STACK: &str = "exe";

/// The longest stack name.
pub const MAX_STACK: usize = 32;

/// 1 to `max` characters of a-z, 0-9, '-' and '_', starting with a letter or digit.
fn stack_ok(name: &str, max: usize) -> bool {
    name.len() <= max
        && name.starts_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_')
}

fn stack_rule(max: usize) -> String {
    format!("use 1-{max} characters of a-z, 0-9, '-' and '_', starting with a letter or digit")
}

fn check_stack(r: &Raw) -> Result<String, UsageError> {
    if !stack_ok(&r.value, MAX_STACK) {
        return Err(r.error(
            "a stack name becomes part of container, network and volume names",
            stack_rule(MAX_STACK),
        ));
    }
    Ok(r.value.clone())
}

/// A stack name that each of `suffixes` is appended to (a campaign's STACK, whose rows run on
/// STACK-single and STACK-ha), checked for the room its longest suffix leaves: a 27-character --stack
/// was refused as "use 1-32 characters", of a name the user never wrote. `field` is where it was given.
pub fn check_stack_prefix(field: &str, name: &str, suffixes: &[&str]) -> Result<(), UsageError> {
    let longest = suffixes
        .iter()
        .copied()
        .max_by_key(|s| s.len())
        .unwrap_or("");
    let max = MAX_STACK.saturating_sub(longest.len());
    match stack_ok(name, max) {
        true => Ok(()),
        false => Err(UsageError::new(
            field,
            name,
            format!(
                "a stack name becomes part of container, network and volume names, and this one is \
                 followed by {longest:?} (a stack name is at most {MAX_STACK} characters in all)"
            ),
            stack_rule(max),
        )),
    }
}

/// A `--stack` given alone (teardown, status): validated like the spec's, defaulting to `exe`.
pub fn resolve_stack_name(flag: Option<&str>) -> Result<String, UsageError> {
    match flag {
        None => Ok(DEFAULT_STACK.to_string()),
        Some(v) => check_stack(&Raw::flag("--stack", v)),
    }
}

fn refuse_ha_flags(input: &SpecInput) -> Result<(), UsageError> {
    let ha_only = [
        &input.instances,
        &input.nginx,
        &input.lb_algorithm,
        &input.worker_connections,
        &input.worker_rlimit_nofile,
        &input.worker_processes,
        &input.lb_port,
        &input.traefik,
    ];
    for r in ha_only.into_iter().flatten() {
        if matches!(r.origin, super::Origin::Flag(_)) {
            let allowed = r.origin == super::Origin::Flag("--instances") && r.value == "1";
            if !allowed {
                return Err(r.error(
                    "this applies to the ha topology only",
                    "drop it, or deploy `ha`",
                ));
            }
        }
    }
    Ok(())
}

fn resolve_nginx(input: &SpecInput, nofile: u64) -> Result<NginxSpec, UsageError> {
    let variant = match &input.nginx {
        None => NginxVariant::TunedLeastConn,
        Some(r) => NginxVariant::ALL
            .iter()
            .find(|(n, _)| *n == r.value)
            .map(|(_, v)| *v)
            .ok_or_else(|| {
                r.error(
                    "unknown nginx variant",
                    "use baseline-default, tuned-ip-hash or tuned-least-conn",
                )
            })?,
    };
    let (mut algo, mut wc, mut rlimit) = variant.defaults_for(nofile);
    if let Some(r) = &input.lb_algorithm {
        algo = match r.value.as_str() {
            "least_conn" => LbAlgorithm::LeastConn,
            "ip_hash" => LbAlgorithm::IpHash,
            _ => return Err(r.error("unknown LB algorithm", "use least_conn or ip_hash")),
        };
    }
    if let Some(r) = &input.worker_connections {
        wc = parse_in(r, 1, 1 << 20)?;
    }
    if let Some(r) = &input.worker_rlimit_nofile {
        rlimit = Some(parse_in(r, 1, 1 << 20)?);
    }
    if let Some(limit) = rlimit {
        // Each proxied socket holds two descriptors (client side and upstream side).
        if limit < 2 * wc {
            let r = input
                .worker_rlimit_nofile
                .as_ref()
                .or(input.worker_connections.as_ref());
            return Err(UsageError::new(
                r.map(|r| r.origin.to_string())
                    .unwrap_or_else(|| "--worker-rlimit-nofile".into()),
                limit,
                format!(
                    "worker_rlimit_nofile must be at least 2 x worker_connections ({}): each proxied socket uses two descriptors",
                    2 * wc
                ),
                format!("pass --worker-rlimit-nofile {} or more", 2 * wc),
            ));
        }
        if limit > nofile {
            return Err(UsageError::new(
                input
                    .nofile
                    .as_ref()
                    .map(|r| r.origin.to_string())
                    .unwrap_or_else(|| "--nofile".into()),
                nofile,
                format!(
                    "the containers' nofile ulimit is below nginx's worker_rlimit_nofile {limit}"
                ),
                format!("pass --nofile {limit} or more, or a lower --worker-rlimit-nofile"),
            ));
        }
    }
    let worker_processes = match &input.worker_processes {
        None => WorkerProcesses::Auto,
        Some(r) if r.value == "auto" => WorkerProcesses::Auto,
        Some(r) => {
            let n = parse_in(r, 1, WorkerProcesses::MAX as u64).map_err(|mut e| {
                e.fix = format!(
                    "pass auto (one per CPU nginx sees) or a count from 1 to {}",
                    WorkerProcesses::MAX
                );
                e
            })?;
            WorkerProcesses::Count(n as u32)
        }
    };
    Ok(NginxSpec {
        variant,
        lb_algorithm: algo,
        worker_connections: wc,
        worker_rlimit_nofile: rlimit,
        worker_processes,
    })
}

/// Why `key` cannot be an app variable exectl sets from --set or --set-secret: (problem, fix).
/// An app variable's name as exectl takes one: upper-case letters, digits and '_', not a digit first.
pub(crate) fn is_env_key(key: &str) -> bool {
    key.starts_with(|c: char| c.is_ascii_uppercase() || c == '_')
        && key
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
}

fn env_key_problem(key: &str) -> Option<(String, String)> {
    if !is_env_key(key) {
        return Some((
            format!("{key:?} is not an environment variable name"),
            "use upper-case letters, digits and '_', such as DB_POOL_MAX".into(),
        ));
    }
    MANAGED_ENV
        .iter()
        .find(|(k, _)| *k == key)
        .map(|(_, why)| (format!("{key} is set by exectl"), why.to_string()))
}

/// `--set KEY=VALUE` pairs over exectl.yaml's `env:`: a flag wins over the file (and a sweep's `--vary
/// env.KEY` over both), but one key given twice by `--set` is refused, as a key twice in `env:` is: which
/// one was meant cannot be told.
fn resolve_env(pairs: &[Raw]) -> Result<BTreeMap<String, String>, UsageError> {
    let mut env = BTreeMap::new();
    let mut flagged = std::collections::BTreeSet::new();
    for r in pairs {
        let Some((key, value)) = r.value.split_once('=') else {
            return Err(r.error("expected KEY=VALUE", "write it as --set DB_POOL_MAX=50"));
        };
        if let Some((problem, fix)) = env_key_problem(key) {
            return Err(r.error(problem, fix));
        }
        if r.origin == super::Origin::Flag("--set") && !flagged.insert(key) {
            return Err(r.error(
                format!("{key} is given twice with --set"),
                format!("give {key} once"),
            ));
        }
        if value.contains('\0') {
            return Err(r.error("the value contains a NUL byte", "remove it"));
        }
        env.insert(key.to_string(), value.to_string());
    }
    Ok(env)
}

/// `--set-secret KEY=VALUE`: the --set key rules, plus no clash with --set or a generated secret. An
/// error names the key and never echoes the value.
fn resolve_secret_env(
    pairs: &[Raw],
    env: &BTreeMap<String, String>,
) -> Result<BTreeMap<String, super::SecretValue>, UsageError> {
    let mut out: BTreeMap<String, super::SecretValue> = BTreeMap::new();
    for r in pairs {
        let field = r.origin.to_string();
        let Some((key, value)) = r.value.split_once('=') else {
            return Err(UsageError::new(
                field,
                "<redacted>",
                "expected KEY=VALUE",
                "write it as --set-secret SMTP_PASSWORD=VALUE",
            ));
        };
        let shown = format!("{key}=<redacted>");
        let problem = env_key_problem(key)
            .or_else(|| {
                crate::secrets::NAMES.contains(&key).then(|| {
                    (
                        format!("{key} is a secret exectl generates"),
                        "pick another name".to_string(),
                    )
                })
            })
            .or_else(|| {
                out.contains_key(key).then(|| {
                    (
                        format!("{key} is given twice with --set-secret"),
                        format!("give {key} once"),
                    )
                })
            })
            .or_else(|| {
                env.contains_key(key).then(|| {
                    (
                        format!("{key} is also given with --set or env:"),
                        "give it once, with --set-secret".to_string(),
                    )
                })
            })
            .or_else(|| {
                let safe = !value.is_empty()
                    && value
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || "._-@:/+=".contains(c));
                (!safe).then(|| {
                    (
                        format!(
                            "the value ({} characters) is empty or cannot be written into .env unquoted",
                            value.chars().count()
                        ),
                        "use letters, digits and . _ - @ : / + = only (e.g. a hex or base64 value)"
                            .to_string(),
                    )
                })
            });
        if let Some((problem, fix)) = problem {
            return Err(UsageError::new(field, shown, problem, fix));
        }
        out.insert(key.to_string(), super::SecretValue::new(key, value));
    }
    Ok(out)
}

fn resolve_images(overrides: &[(String, Raw)]) -> Result<Images, UsageError> {
    let mut images = Images::default();
    for (key, r) in overrides {
        let ok = r.value.starts_with(|c: char| c.is_ascii_alphanumeric())
            && r.value
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "._/:@-".contains(c));
        if !ok {
            return Err(r.error(
                format!("not an image reference for {key}"),
                "use a reference such as registry/name:tag",
            ));
        }
        let slot = match key.as_str() {
            "app" => &mut images.app,
            "mariadb" => &mut images.mariadb,
            "postgres" => &mut images.postgres,
            "redis" => &mut images.redis,
            "nginx" => &mut images.nginx,
            "traefik" => &mut images.traefik,
            "sqlite" => &mut images.sqlite,
            _ => {
                return Err(r.error(
                    format!("unknown image key {key:?}"),
                    format!("use one of {}", IMAGE_KEYS.join(", ")),
                ))
            }
        };
        *slot = r.value.clone();
    }
    Ok(images)
}

/// A field's value as read by `core::units`, or the field's UsageError.
fn checked<T>(r: &Raw, parsed: Result<T, Invalid>) -> Result<T, UsageError> {
    parsed.map_err(|i| r.error(i.problem, i.fix))
}

fn parse_in(r: &Raw, min: u64, max: u64) -> Result<u64, UsageError> {
    checked(r, units::count_in(&r.value, min, max))
}

fn port(r: &Option<Raw>, default: u16) -> Result<u16, UsageError> {
    match r {
        None => Ok(default),
        Some(r) => Ok(parse_in(r, 1, 65535)? as u16),
    }
}

fn parse_bool(r: &Raw) -> Result<bool, UsageError> {
    match r.value.as_str() {
        "true" | "1" | "yes" => Ok(true),
        "false" | "0" | "no" => Ok(false),
        _ => Err(r.error("expected true or false", "use true or false")),
    }
}

/// A healthcheck interval, rendered as whole seconds: 1s..=60m.
fn parse_duration_s(r: &Raw) -> Result<u32, UsageError> {
    let secs = units::whole_seconds_in(&r.value, Duration::from_secs(1), Duration::from_secs(3600));
    checked(r, secs).map(|s| s as u32)
}

/// The engine's smallest CPU limit (NanoCpus of 10^7): below it the limit rounds to none at all.
pub const MIN_CPUS: f64 = 0.01;
pub const MAX_CPUS: f64 = 1024.0;

/// A CPU limit, normalised (`+2` → `2`, `1.50` → `1.5`) so that the rendered file and the run record
/// say one thing for one value.
fn parse_cpus(r: &Raw) -> Result<String, UsageError> {
    let fix = "pass a number of CPUs from 0.01 to 1024, such as 2 or 1.5";
    let v = checked(r, units::decimal_in(&r.value, MIN_CPUS, MAX_CPUS)).map_err(|mut e| {
        if e.problem.starts_with("out of range") {
            e.problem = "out of range 0.01..=1024 (the engine's smallest CPU limit is 0.01; below it no limit is applied)".into();
        }
        e.fix = fix.into();
        e
    })?;
    // Whole NanoCpus, as the engine stores them: what is rendered is what is applied.
    let nano = (v * 1e9).round() / 1e9;
    Ok(format!("{nano}"))
}

/// Bytes of a memory size such as `512m`, `1.5g`, `64k`, `100b` or a plain number (see
/// `core::units::size`, the one reader of sizes).
pub fn memory_size(text: &str) -> Option<u64> {
    units::size(text).ok()
}

/// Docker refuses memory limits below 6 MiB.
pub const MIN_MEMORY: u64 = 6 << 20;

fn parse_memory(r: &Raw) -> Result<(String, u64), UsageError> {
    let b = checked(r, units::size_at_least(&r.value, MIN_MEMORY, "6m"))?;
    // Shown in one form, so `512m` and `536870912` render (and hash) the same.
    Ok((units::show_size(b), b))
}

#[cfg(test)]
#[path = "resolve_tests.rs"]
mod tests;
