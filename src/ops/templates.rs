//! `--templates DIR`: the embedded templates with the user's overrides read from a folder (exit 2 for
//! any file that would be ignored or could not be used).

use exectl_core::error::UsageError;
use exectl_core::render::{parse_error, Templates};
use std::path::Path;

/// The embedded templates, with the overrides of `dir` when given (`--templates`, or a sweep's plan).
pub fn templates(dir: Option<&Path>) -> anyhow::Result<Templates> {
    match dir {
        Some(dir) => Ok(with_overrides(dir)?),
        None => Ok(Templates::embedded()),
    }
}

/// The embedded templates, with any file of the same name under `dir` taking precedence. Refused
/// (exit 2) when `dir` is not a folder, overrides nothing, holds a `.tera` file that matches no
/// template (a typo would otherwise be ignored silently), a template that does not parse, or a
/// symlink that leads out of it (a template is rendered into files other users may read).
pub fn with_overrides(dir: &Path) -> Result<Templates, UsageError> {
    let bad = |value: &dyn std::fmt::Display, problem: String, fix: &str| {
        UsageError::new("--templates", value, problem, fix)
    };
    let root = match std::fs::metadata(dir) {
        Ok(m) if m.is_dir() => dir.canonicalize().map_err(|e| {
            bad(
                &dir.display(),
                format!("cannot read it: {e}"),
                "give a readable folder",
            )
        })?,
        Ok(_) => {
            return Err(bad(
                &dir.display(),
                "not a folder".into(),
                "give the folder that holds the overrides, e.g. one with nginx/nginx.conf.tera",
            ))
        }
        Err(e) => {
            return Err(bad(
                &dir.display(),
                format!("cannot read it: {e}"),
                "give the folder that holds the overrides, e.g. one with nginx/nginx.conf.tera",
            ))
        }
    };
    let names = || Templates::names().join(", ");
    let mut t = Templates::embedded();
    let mut overridden = 0;
    for name in Templates::names() {
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
        let src = crate::shell::user_file::read_text(&real, crate::shell::user_file::WRITTEN)
            .map_err(|u| {
                bad(
                    &p.display(),
                    u.problem,
                    "make it a readable UTF-8 template file",
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
        t.set(name, src, p.display().to_string());
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
            if rel.ends_with(".tera") && !Templates::names().contains(&rel.as_str()) {
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
