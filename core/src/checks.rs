//! The bundle's checks that need no tool: every file re-parsed into its typed model, references
//! resolved, record hashes matching. Pure; the checks with real tools are `crate::validate`.

use crate::render::{self, Bundle};
use crate::{compose, traefik};
use serde::Serialize;

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    Pass,
    Fail,
    Skip,
}

#[derive(Debug, Clone, Serialize)]
pub struct Check {
    /// Bundle path, with `:line` when a fault has one.
    pub file: String,
    pub what: &'static str,
    pub outcome: Outcome,
    pub detail: String,
}

impl Check {
    pub fn new(
        file: &str,
        what: &'static str,
        outcome: Outcome,
        detail: impl Into<String>,
    ) -> Self {
        Check {
            file: file.to_string(),
            what,
            outcome,
            detail: detail.into(),
        }
    }
}

pub fn at(path: &str, line: Option<usize>) -> String {
    match line {
        Some(l) => format!("{path}:{l}"),
        None => path.to_string(),
    }
}

/// Checks that need no tool: every file re-parsed, references resolved, lock hashes matching.
pub fn pure_checks(bundle: &Bundle) -> Vec<Check> {
    let mut out = Vec::new();
    if let Some(f) = bundle.get(render::COMPOSE) {
        out.push(match compose::parse(f.text()) {
            Err(e) => Check::new(
                &at(f.path, e.line),
                "compose typed model",
                Outcome::Fail,
                e.message,
            ),
            Ok(file) => {
                let faults = compose::check_references(&file);
                if faults.is_empty() {
                    Check::new(
                        f.path,
                        "compose typed model",
                        Outcome::Pass,
                        format!("{} services, references resolved", file.services.len()),
                    )
                } else {
                    Check::new(
                        f.path,
                        "compose typed model",
                        Outcome::Fail,
                        faults.join("; "),
                    )
                }
            }
        });
    }
    if let (Some(s), Some(d)) = (
        bundle.get(render::TRAEFIK_STATIC),
        bundle.get(render::TRAEFIK_DYNAMIC),
    ) {
        let stat = serde_norway::from_str::<traefik::StaticConfig>(s.text());
        let dynamic = serde_norway::from_str::<traefik::DynamicConfig>(d.text());
        out.push(match (stat, dynamic) {
            (Err(e), _) => Check::new(
                &at(s.path, e.location().map(|l| l.line())),
                "traefik static config",
                Outcome::Fail,
                e.to_string(),
            ),
            (_, Err(e)) => Check::new(
                &at(d.path, e.location().map(|l| l.line())),
                "traefik dynamic config",
                Outcome::Fail,
                e.to_string(),
            ),
            (Ok(stat), Ok(dynamic)) => {
                let faults = traefik::check(&stat, &dynamic);
                if faults.is_empty() {
                    Check::new(
                        d.path,
                        "traefik config",
                        Outcome::Pass,
                        format!(
                            "{} router(s), references resolved",
                            dynamic.http.routers.len()
                        ),
                    )
                } else {
                    Check::new(d.path, "traefik config", Outcome::Fail, faults.join("; "))
                }
            }
        });
    }
    if let Some(f) = bundle.get(render::ENV) {
        let text = f.text();
        let missing: Vec<&str> = crate::secrets::NAMES
            .iter()
            .copied()
            .filter(|n| {
                !text.lines().any(|l| {
                    l.split_once('=')
                        .is_some_and(|(k, v)| k == *n && !v.is_empty())
                })
            })
            .collect();
        out.push(if missing.is_empty() && f.mode == 0o600 {
            Check::new(
                f.path,
                "secrets file",
                Outcome::Pass,
                "all secrets set, mode 0600",
            )
        } else {
            Check::new(
                f.path,
                "secrets file",
                Outcome::Fail,
                format!("missing: {missing:?}, mode {:o}", f.mode),
            )
        });
    }
    out
}
