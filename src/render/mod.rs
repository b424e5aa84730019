//! The rendered bundle's side of the shell: reading user templates from a folder, writing a bundle to
//! disk, and reading back the record it leaves. Rendering itself is pure (`core::render`).

pub mod record;

pub use crate::core::render::*;
use crate::error::UsageError;
use anyhow::{Context, Result};
use std::path::Path;

impl Templates {
    /// The embedded templates, with any file of the same name under `dir` taking precedence. Refused
    /// (exit 2) when `dir` is not a folder, overrides nothing, holds a `.tera` file that matches no
    /// template (a typo would otherwise be ignored silently), a template that does not parse, or a
    /// symlink that leads out of it (a template is rendered into files other users may read).
    pub fn with_overrides(dir: &Path) -> Result<Templates, UsageError> {
        let bad = |value: &dyn std::fmt::Display, problem: String, fix: &str| {
            UsageError::new("--templates", value, problem, fix)
        };
        let root =
            match std::fs::metadata(dir) {
                Ok(m) if m.is_dir() => dir.canonicalize().map_err(|e| {
                    bad(
                        &dir.display(),
                        format!("cannot read it: {e}"),
                        "give a readable folder",
                    )
                })?,
                Ok(_) => return Err(bad(
                    &dir.display(),
                    "not a folder".into(),
                    "give the folder that holds the overrides, e.g. one with nginx/nginx.conf.tera",
                )),
                Err(e) => return Err(bad(
                    &dir.display(),
                    format!("cannot read it: {e}"),
                    "give the folder that holds the overrides, e.g. one with nginx/nginx.conf.tera",
                )),
            };
        let names = || {
            EMBEDDED
                .iter()
                .map(|(n, _)| *n)
                .collect::<Vec<_>>()
                .join(", ")
        };
        let mut t = Templates::embedded();
        let mut overridden = 0;
        for (name, slot) in t.sources.iter_mut() {
            let p = dir.join(name);
            if std::fs::symlink_metadata(&p).is_err() {
                continue;
            }
            let real = p.canonicalize().map_err(|e| {
                bad(
                    &p.display(),
                    format!("cannot read it: {e}"),
                    "point it at a readable file",
                )
            })?;
            if !real.starts_with(&root) {
                return Err(bad(
                    &p.display(),
                    format!(
                        "a symlink that leads out of the templates folder (to {})",
                        real.display()
                    ),
                    "copy the template into the folder instead of linking to it",
                ));
            }
            if !real.is_file() {
                return Err(bad(
                    &p.display(),
                    "not a regular file".into(),
                    "make it a template file",
                ));
            }
            let src = std::fs::read_to_string(&real).map_err(|e| {
                bad(
                    &p.display(),
                    format!("cannot read it: {e}"),
                    "give a readable UTF-8 text file",
                )
            })?;
            if let Err(e) = tera::Tera::default().add_raw_template(name, &src) {
                let (at, msg) = parse_error(&e);
                let at = at.map(|l| format!(":{l}")).unwrap_or_default();
                return Err(bad(
                    &format!("{}{at}", p.display()),
                    format!("the template does not parse: {msg}"),
                    "correct the template's syntax there (tera: https://keats.github.io/tera/docs/)",
                ));
            }
            *slot = (src, p.display().to_string());
            overridden += 1;
        }
        for sub in ["", "compose", "nginx", "traefik"] {
            let Ok(entries) = std::fs::read_dir(dir.join(sub)) else {
                continue;
            };
            for e in entries.flatten() {
                let file = e.file_name().to_string_lossy().to_string();
                let rel = if sub.is_empty() {
                    file
                } else {
                    format!("{sub}/{file}")
                };
                if rel.ends_with(".tera") && !t.sources.contains_key(rel.as_str()) {
                    return Err(bad(
                        &dir.join(&rel).display(),
                        "no template has that name".into(),
                        &format!("name it after one of: {}", names()),
                    ));
                }
            }
        }
        if overridden == 0 {
            return Err(bad(
                &dir.display(),
                "it overrides nothing: no file in it is named after a template".into(),
                &format!(
                    "put overrides at these paths inside it: {} (or drop --templates)",
                    names()
                ),
            ));
        }
        Ok(t)
    }
}

impl Bundle {
    /// Write every file into `dir` (each replaced atomically, with its mode) and remove bundle files a
    /// previous render left that this one no longer has (e.g. nginx.conf after switching ha → single).
    pub fn write_to(&self, dir: &Path) -> Result<()> {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        for f in &self.files {
            crate::shell::atomic::write(&dir.join(f.path), &f.bytes, f.mode)?;
        }
        for stale in ALL_PATHS.iter().filter(|p| self.get(p).is_none()) {
            let p = dir.join(stale);
            if p.exists() {
                std::fs::remove_file(&p).with_context(|| format!("removing {}", p.display()))?;
            }
        }
        Ok(())
    }
}
