//! Rendering: Spec + secrets + templates → Bundle (the files that define a stack). Pure: templates are
//! embedded in the binary (or given by the caller), and nothing here touches the disk but `Bundle::write_to`
//! and `Templates::with_overrides`.

mod filters;

pub use filters::yaml_quote;

use crate::record::StackRecord;
use crate::secrets::Secrets;
use crate::spec::{Db, Spec, Topology};
use anyhow::{Context, Result};
use serde_json::json;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

pub const APP_PORT: u16 = 8080;
/// nginx's stub_status inside the LB container (never published): bench samples active connections.
pub const NGINX_STATUS_PORT: u16 = 8081;
pub const DB_NAME: &str = "exelearning";
pub const DB_USER: &str = "exelearning";
/// The admin exectl keeps in every stack (ADMIN_EMAIL bootstrap), for probes that newer images guard.
pub const ADMIN_EMAIL: &str = "exectl-admin@exelearning.net";

/// Template name → embedded source. The name is also its path under a `--templates` override folder.
const EMBEDDED: [(&str, &str); 5] = [
    (
        "compose/compose.yaml.tera",
        include_str!("../../../compose/compose.yaml.tera"),
    ),
    (
        "compose/env.tera",
        include_str!("../../../compose/env.tera"),
    ),
    (
        "nginx/nginx.conf.tera",
        include_str!("../../../nginx/nginx.conf.tera"),
    ),
    (
        "traefik/traefik.yaml.tera",
        include_str!("../../../traefik/traefik.yaml.tera"),
    ),
    (
        "traefik/dynamic.yaml.tera",
        include_str!("../../../traefik/dynamic.yaml.tera"),
    ),
];

/// Bundle paths and the template each comes from.
pub const COMPOSE: &str = "compose.yaml";
pub const ENV: &str = ".env";
pub const NGINX: &str = "nginx/nginx.conf";
pub const TRAEFIK_STATIC: &str = "traefik/traefik.yaml";
pub const TRAEFIK_DYNAMIC: &str = "traefik/dynamic.yaml";
/// The stack's record (`core::record`): what was deployed, for status, prepare, load and doctor.
pub const RECORD: &str = crate::record::FILE;
pub const ALL_PATHS: [&str; 6] = [COMPOSE, ENV, NGINX, TRAEFIK_STATIC, TRAEFIK_DYNAMIC, RECORD];

#[derive(Debug, Clone)]
pub struct Templates {
    /// name → (source, where it came from)
    sources: BTreeMap<&'static str, (String, String)>,
}

impl Templates {
    /// Every template's name, which is also its path under a `--templates` override folder.
    pub fn names() -> Vec<&'static str> {
        EMBEDDED.iter().map(|(n, _)| *n).collect()
    }

    /// Use `src` (read from `origin`) for the template `name` instead of the embedded one.
    pub fn set(&mut self, name: &'static str, src: String, origin: String) {
        self.sources.insert(name, (src, origin));
    }

    pub fn embedded() -> Templates {
        Templates {
            sources: EMBEDDED
                .iter()
                .map(|(n, s)| (*n, (s.to_string(), "embedded".to_string())))
                .collect(),
        }
    }

    fn tera(&self) -> Result<tera::Tera> {
        let mut tera = tera::Tera::default();
        tera.autoescape_on(vec![]);
        for (name, (src, origin)) in &self.sources {
            tera.add_raw_template(name, src)
                .with_context(|| format!("template {name} ({origin}) does not parse"))?;
        }
        tera.register_filter("yaml_str", filters::yaml_str);
        tera.register_filter("compose_str", filters::compose_str);
        tera.register_filter("nginx_word", filters::nginx_word);
        tera.register_filter("env_value", filters::env_value);
        Ok(tera)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BundleFile {
    pub path: &'static str,
    pub bytes: Vec<u8>,
    pub mode: u32,
}

impl BundleFile {
    pub fn sha256(&self) -> String {
        hex::encode(Sha256::digest(&self.bytes))
    }

    pub fn text(&self) -> &str {
        std::str::from_utf8(&self.bytes).unwrap_or("")
    }
}

/// The rendered files of one stack.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bundle {
    pub files: Vec<BundleFile>,
}

impl Bundle {
    pub fn get(&self, path: &str) -> Option<&BundleFile> {
        self.files.iter().find(|f| f.path == path)
    }
}

/// What every template sees: the spec and derived names, never a secret value (`--set-secret` values
/// appear in `spec` as redactions).
fn context(spec: &Spec) -> tera::Context {
    let (db_driver, db_port) = match spec.db {
        Db::Mariadb => ("pdo_mysql", 3306),
        Db::Postgres => ("pdo_pgsql", 5432),
        Db::Sqlite => ("pdo_sqlite", 0),
    };
    let value = json!({
        "version": env!("CARGO_PKG_VERSION"),
        "spec": spec,
        "ha": spec.topology == Topology::Ha,
        "apps": spec.app_services(),
        // `--set-secret` names: compose.yaml refers to each as ${KEY}, resolved from .env.
        "secret_env_keys": spec.secret_env.keys().collect::<Vec<_>>(),
        "db_service": spec.db_service(),
        "db_driver": db_driver,
        "db_port": db_port,
        "db_name": DB_NAME,
        "db_user": DB_USER,
        "app_port": APP_PORT,
        "nginx_status_port": NGINX_STATUS_PORT,
        "admin_email": ADMIN_EMAIL,
        "has_traefik": spec.has_traefik(),
        "traefik_backend": if spec.topology == Topology::Ha {
            "http://nginx:80".to_string()
        } else {
            format!("http://app:{APP_PORT}")
        },
    });
    tera::Context::from_value(value).expect("context is an object")
}

/// The .env template's context: the common one plus the secrets (generated ones, then `--set-secret`).
fn env_context(spec: &Spec, secrets: &Secrets) -> tera::Context {
    let mut ctx = context(spec);
    let list: Vec<_> = secrets
        .iter()
        .map(|(k, v)| json!({"name": k, "value": v}))
        .chain(
            spec.secret_env
                .iter()
                .map(|(k, v)| json!({"name": k, "value": v.expose()})),
        )
        .collect();
    ctx.insert("secrets", &list);
    ctx
}

/// A tera parse error on one line: the template's line number and the parser's message.
pub fn parse_error(e: &tera::Error) -> (Option<usize>, String) {
    let mut text = e.to_string();
    let mut src = std::error::Error::source(e);
    while let Some(s) = src {
        text.push('\n');
        text.push_str(&s.to_string());
        src = s.source();
    }
    let line = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("--> "))
        .and_then(|at| at.split(':').next()?.parse().ok());
    let msg = text
        .lines()
        .filter_map(|l| l.trim().strip_prefix("= "))
        .collect::<Vec<_>>()
        .join("; ");
    let msg = if msg.is_empty() {
        text.lines().last().unwrap_or("").to_string()
    } else {
        msg
    };
    (line, msg)
}

/// Render every file of the stack. A template error names the template and what failed.
pub fn render(spec: &Spec, secrets: &Secrets, templates: &Templates) -> Result<Bundle> {
    let tera = templates.tera()?;
    let (ctx, env_ctx) = (context(spec), env_context(spec, secrets));
    let mut wanted: Vec<(&'static str, &str, u32)> = vec![
        (COMPOSE, "compose/compose.yaml.tera", 0o644),
        (ENV, "compose/env.tera", 0o600),
    ];
    if spec.topology == Topology::Ha {
        wanted.push((NGINX, "nginx/nginx.conf.tera", 0o644));
    }
    if spec.has_traefik() {
        wanted.push((TRAEFIK_STATIC, "traefik/traefik.yaml.tera", 0o644));
        wanted.push((TRAEFIK_DYNAMIC, "traefik/dynamic.yaml.tera", 0o644));
    }
    let mut files = Vec::new();
    for (path, template, mode) in wanted {
        // Only the .env file (mode 0600) is rendered with the secrets in reach.
        let ctx = if path == ENV { &env_ctx } else { &ctx };
        let text = tera.render(template, ctx).map_err(|e| {
            // tera keeps the useful part (which filter refused what) in the source chain.
            let mut msg = e.to_string();
            let mut src = std::error::Error::source(&e);
            while let Some(s) = src {
                msg.push_str(": ");
                msg.push_str(&s.to_string());
                src = s.source();
            }
            anyhow::anyhow!("rendering {path} from {template}: {msg}")
        })?;
        files.push(BundleFile {
            path,
            bytes: text.into_bytes(),
            mode,
        });
    }
    let record = StackRecord {
        exectl_version: env!("CARGO_PKG_VERSION").to_string(),
        stack: spec.stack.clone(),
        topology: spec.topology,
        spec,
        files: files
            .iter()
            .map(|f| (f.path.to_string(), f.sha256()))
            .collect(),
    };
    let mut text = serde_json::to_string_pretty(&record)?;
    text.push('\n');
    files.push(BundleFile {
        path: RECORD,
        bytes: text.into_bytes(),
        mode: 0o644,
    });
    Ok(Bundle { files })
}
