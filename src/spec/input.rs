//! Raw spec input from exectl.yaml and flags, before validation. Every value remembers where it came from,
//! so that an error can name the flag or the file field.

use super::yaml_tree::{self, Kind, Node};
use crate::error::UsageError;
use serde::de::{self, Deserializer};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    Flag(&'static str),
    File { path: PathBuf, field: &'static str },
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Origin::Flag(flag) => write!(f, "{flag}"),
            Origin::File { path, field } => write!(f, "{field} (in {})", path.display()),
        }
    }
}

/// One raw value and its origin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Raw {
    pub value: String,
    pub origin: Origin,
}

impl Raw {
    pub fn flag(flag: &'static str, value: impl Into<String>) -> Self {
        Raw {
            value: value.into(),
            origin: Origin::Flag(flag),
        }
    }

    pub fn error(&self, problem: impl Into<String>, fix: impl Into<String>) -> UsageError {
        UsageError::new(self.origin.to_string(), &self.value, problem, fix)
    }
}

/// Everything a user can say about a stack; `None` means "not said here".
#[derive(Debug, Clone, Default)]
pub struct SpecInput {
    pub topology: Option<Raw>,
    pub stack: Option<Raw>,
    pub instances: Option<Raw>,
    pub nginx: Option<Raw>,
    pub lb_algorithm: Option<Raw>,
    pub worker_connections: Option<Raw>,
    pub worker_rlimit_nofile: Option<Raw>,
    pub db: Option<Raw>,
    pub cpus: Option<Raw>,
    pub memory: Option<Raw>,
    pub nofile: Option<Raw>,
    pub host: Option<Raw>,
    pub lb_port: Option<Raw>,
    pub http_port: Option<Raw>,
    pub traefik: Option<Raw>,
    pub app_env: Option<Raw>,
    pub app_debug: Option<Raw>,
    pub health_interval: Option<Raw>,
    /// Where the stack runs (`target:`): read by the target options, not part of the spec.
    pub target: Option<Raw>,
    /// `--set KEY=VALUE` pairs and `env:` entries, in order; later wins.
    pub env: Vec<Raw>,
    /// `--set-secret KEY=VALUE` pairs (flags only: a spec file is often committed).
    pub secret_env: Vec<Raw>,
    /// Image overrides, key → reference; later wins.
    pub images: Vec<(String, Raw)>,
}

impl SpecInput {
    /// `self` overridden by `top` (flags over file).
    pub fn overridden_by(self, top: SpecInput) -> SpecInput {
        macro_rules! pick {
            ($($f:ident),*) => { SpecInput { $($f: top.$f.or(self.$f),)*
                env: self.env.into_iter().chain(top.env).collect(),
                secret_env: self.secret_env.into_iter().chain(top.secret_env).collect(),
                images: self.images.into_iter().chain(top.images).collect() } };
        }
        pick!(
            topology,
            stack,
            instances,
            nginx,
            lb_algorithm,
            worker_connections,
            worker_rlimit_nofile,
            db,
            cpus,
            memory,
            nofile,
            host,
            lb_port,
            http_port,
            traefik,
            app_env,
            app_debug,
            health_interval,
            target
        )
    }
}

/// A YAML scalar of any type, kept as its text.
#[derive(Debug, Clone)]
struct Scalar(String);

impl<'de> Deserialize<'de> for Scalar {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match serde_norway::Value::deserialize(d)? {
            serde_norway::Value::String(s) => Ok(Scalar(s)),
            serde_norway::Value::Number(n) => Ok(Scalar(n.to_string())),
            serde_norway::Value::Bool(b) => Ok(Scalar(b.to_string())),
            other => Err(de::Error::custom(format!(
                "expected a single value, found {}",
                kind(&other)
            ))),
        }
    }
}

fn kind(v: &serde_norway::Value) -> &'static str {
    match v {
        serde_norway::Value::Null => "nothing",
        serde_norway::Value::Sequence(_) => "a list",
        serde_norway::Value::Mapping(_) => "a mapping",
        _ => "a tagged value",
    }
}

#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct SpecFile {
    topology: Option<Scalar>,
    stack: Option<Scalar>,
    instances: Option<Scalar>,
    nginx: Option<Scalar>,
    lb_algorithm: Option<Scalar>,
    worker_connections: Option<Scalar>,
    worker_rlimit_nofile: Option<Scalar>,
    db: Option<Scalar>,
    cpus: Option<Scalar>,
    memory: Option<Scalar>,
    nofile: Option<Scalar>,
    host: Option<Scalar>,
    lb_port: Option<Scalar>,
    http_port: Option<Scalar>,
    traefik: Option<Scalar>,
    app_env: Option<Scalar>,
    app_debug: Option<Scalar>,
    health_interval: Option<Scalar>,
    target: Option<Scalar>,
    #[serde(default)]
    env: BTreeMap<String, Scalar>,
    #[serde(default)]
    images: BTreeMap<String, Scalar>,
}

/// The single-value fields of exectl.yaml (as `SpecFile` names them).
const SCALAR_FIELDS: [&str; 19] = [
    "topology",
    "stack",
    "instances",
    "nginx",
    "lb_algorithm",
    "worker_connections",
    "worker_rlimit_nofile",
    "db",
    "cpus",
    "memory",
    "nofile",
    "host",
    "lb_port",
    "http_port",
    "traefik",
    "app_env",
    "app_debug",
    "health_interval",
    "target",
];

/// An error at one line of a YAML file.
fn at_line(field: &str, path: &Path, line: usize, problem: String, fix: &str) -> UsageError {
    UsageError::new(field, format!("{}:{line}", path.display()), problem, fix)
}

/// A key given twice in one mapping is refused at its second line (serde would keep the last silently).
fn unique_keys(
    field: &str,
    path: &Path,
    prefix: &str,
    pairs: &[(Node, Node)],
) -> Result<(), UsageError> {
    let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
    for (k, _) in pairs {
        let Some(name) = k.text() else { continue };
        if let Some(first) = seen.insert(name, k.line) {
            return Err(at_line(
                field,
                path,
                k.line,
                format!("{prefix}{name} is given twice (first on line {first})"),
                "keep one of them",
            ));
        }
    }
    Ok(())
}

/// The entries of a `name: value` mapping (env:, images:, the --images file): unique keys, each with one
/// value; image keys known.
fn check_entries(
    field: &str,
    path: &Path,
    prefix: &str,
    pairs: &[(Node, Node)],
    images: bool,
) -> Result<(), UsageError> {
    unique_keys(field, path, prefix, pairs)?;
    for (k, v) in pairs {
        let name = k.text().unwrap_or("?");
        if v.is_null() {
            return Err(at_line(
                field,
                path,
                k.line,
                format!("{prefix}{name} has no value"),
                "give it a value, or remove the line",
            ));
        }
        if matches!(v.kind, Kind::Map(_) | Kind::Seq(_)) {
            return Err(at_line(
                field,
                path,
                v.line,
                format!(
                    "{prefix}{name}: expected a single value, found {}",
                    v.describe()
                ),
                "give one value",
            ));
        }
        if images && !super::resolve::IMAGE_KEYS.contains(&name) {
            return Err(at_line(
                field,
                path,
                k.line,
                format!("unknown image key {name:?}"),
                &format!("use one of {}", super::resolve::IMAGE_KEYS.join(", ")),
            ));
        }
    }
    Ok(())
}

/// exectl.yaml's shape, checked on the node tree so that each fault names its own line.
fn check_spec_shape(path: &Path, text: &str) -> Result<(), UsageError> {
    let Some(Node {
        kind: Kind::Map(pairs),
        ..
    }) = yaml_tree::parse(text)
    else {
        return Ok(()); // syntax errors and a top level that is not a mapping: serde_norway says so
    };
    let field = "spec file";
    unique_keys(field, path, "", &pairs)?;
    for (k, v) in &pairs {
        let Some(name) = k.text() else { continue };
        if name == "env" || name == "images" {
            match &v.kind {
                _ if v.is_null() => {}
                Kind::Map(entries) => {
                    check_entries(field, path, &format!("{name}."), entries, name == "images")?
                }
                _ => {
                    return Err(at_line(
                        field,
                        path,
                        v.line,
                        format!(
                            "{name}: expected a mapping of NAME: value, found {}",
                            v.describe()
                        ),
                        "write one `NAME: value` per line below it, indented",
                    ))
                }
            }
        } else if SCALAR_FIELDS.contains(&name) {
            if v.is_null() {
                return Err(at_line(
                    field,
                    path,
                    k.line,
                    format!("{name} has no value"),
                    "give it a value, or remove the line to take the default",
                ));
            }
            if matches!(v.kind, Kind::Map(_) | Kind::Seq(_)) {
                return Err(at_line(
                    field,
                    path,
                    v.line,
                    format!("{name}: expected a single value, found {}", v.describe()),
                    "give one value (fields are documented in README.md)",
                ));
            }
        }
    }
    Ok(())
}

/// Parse exectl.yaml text. A syntax or shape error names the file, line and field.
pub fn parse_spec_file(path: &Path, text: &str) -> Result<SpecInput, UsageError> {
    check_spec_shape(path, text)?;
    let file: SpecFile = if text.trim().is_empty() {
        SpecFile::default()
    } else {
        serde_norway::from_str(text).map_err(|e| {
            let at = e
                .location()
                .map(|l| format!("{}:{}", path.display(), l.line()))
                .unwrap_or_else(|| path.display().to_string());
            UsageError::new(
                "spec file",
                at,
                e.to_string(),
                "correct that line of the file (fields are documented in README.md)",
            )
        })?
    };
    let raw = |field: &'static str, s: Option<Scalar>| {
        s.map(|Scalar(value)| Raw {
            value,
            origin: Origin::File {
                path: path.to_path_buf(),
                field,
            },
        })
    };
    Ok(SpecInput {
        topology: raw("topology", file.topology),
        stack: raw("stack", file.stack),
        instances: raw("instances", file.instances),
        nginx: raw("nginx", file.nginx),
        lb_algorithm: raw("lb_algorithm", file.lb_algorithm),
        worker_connections: raw("worker_connections", file.worker_connections),
        worker_rlimit_nofile: raw("worker_rlimit_nofile", file.worker_rlimit_nofile),
        db: raw("db", file.db),
        cpus: raw("cpus", file.cpus),
        memory: raw("memory", file.memory),
        nofile: raw("nofile", file.nofile),
        host: raw("host", file.host),
        lb_port: raw("lb_port", file.lb_port),
        http_port: raw("http_port", file.http_port),
        traefik: raw("traefik", file.traefik),
        app_env: raw("app_env", file.app_env),
        app_debug: raw("app_debug", file.app_debug),
        health_interval: raw("health_interval", file.health_interval),
        target: raw("target", file.target),
        secret_env: Vec::new(),
        env: file
            .env
            .into_iter()
            .map(|(k, Scalar(v))| Raw {
                value: format!("{k}={v}"),
                origin: Origin::File {
                    path: path.to_path_buf(),
                    field: "env",
                },
            })
            .collect(),
        images: file
            .images
            .into_iter()
            .map(|(k, Scalar(v))| {
                (
                    k,
                    Raw {
                        value: v,
                        origin: Origin::File {
                            path: path.to_path_buf(),
                            field: "images",
                        },
                    },
                )
            })
            .collect(),
    })
}

/// Read exectl.yaml: the given path (must exist), else ./exectl.yaml if present, else nothing.
pub fn load_spec_file(explicit: Option<&Path>) -> Result<SpecInput, UsageError> {
    let path = match explicit {
        Some(p) => p.to_path_buf(),
        None => {
            let p = PathBuf::from("exectl.yaml");
            if !p.exists() {
                return Ok(SpecInput::default());
            }
            p
        }
    };
    let text = std::fs::read_to_string(&path).map_err(|e| {
        UsageError::new(
            "--config",
            path.display(),
            format!("cannot read it: {e}"),
            "give the path of a readable exectl.yaml",
        )
    })?;
    parse_spec_file(&path, &text)
}

/// Read an images file (`--images FILE`): a mapping of app/mariadb/postgres/redis/nginx/traefik to refs.
pub fn load_images_file(path: &Path) -> Result<Vec<(String, Raw)>, UsageError> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        UsageError::new(
            "--images",
            path.display(),
            format!("cannot read it: {e}"),
            "give the path of a readable images file",
        )
    })?;
    if let Some(Node {
        kind: Kind::Map(pairs),
        ..
    }) = yaml_tree::parse(&text)
    {
        check_entries("--images", path, "", &pairs, true)?;
    }
    let map: BTreeMap<String, Scalar> = serde_norway::from_str(&text).map_err(|e| {
        let at = e
            .location()
            .map(|l| format!("{}:{}", path.display(), l.line()))
            .unwrap_or_else(|| path.display().to_string());
        UsageError::new(
            "--images",
            at,
            e.to_string(),
            "write a mapping such as `app: exectl-fixture/standin:latest`",
        )
    })?;
    Ok(map
        .into_iter()
        .map(|(k, Scalar(v))| (k, Raw::flag("--images", v)))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn malformed_yaml_names_line() {
        let err =
            parse_spec_file(Path::new("exectl.yaml"), "stack: a\ninstances: [1\n").unwrap_err();
        assert!(err.value.starts_with("exectl.yaml:"), "{err}");
    }

    #[test]
    fn unknown_field_is_named() {
        let err = parse_spec_file(Path::new("x.yaml"), "stack: a\ninstancs: 3\n").unwrap_err();
        assert!(err.problem.contains("instancs"), "{err}");
        assert_eq!(err.value, "x.yaml:2");
    }

    #[test]
    fn flags_override_file() {
        let file = parse_spec_file(Path::new("x.yaml"), "stack: a\ninstances: 3\n").unwrap();
        let flags = SpecInput {
            instances: Some(Raw::flag("--instances", "4")),
            ..Default::default()
        };
        let merged = file.overridden_by(flags);
        assert_eq!(merged.instances.unwrap().value, "4");
        assert_eq!(merged.stack.unwrap().value, "a");
    }
}
