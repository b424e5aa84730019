//! Per-stack secrets: generated once, kept in a local state folder (mode 0600), reused on every render so
//! that re-rendering gives identical bytes and a redeploy keeps the database reachable. Never printed.

pub use crate::core::secrets::{Secrets, NAMES};
use anyhow::{Context, Result};
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// Where exectl keeps local state: $EXECTL_STATE_DIR, else $XDG_STATE_HOME/exectl, else ~/.local/state/exectl.
/// Commands call `checked_state_root` once first; this one is for paths derived after that check.
pub fn state_root() -> PathBuf {
    state_root_from(|n| std::env::var_os(n)).2
}

/// The state root, refused (exit 2) when relative: secrets would land wherever the command runs, e.g.
/// inside a git work tree.
pub fn checked_state_root() -> Result<PathBuf, crate::error::UsageError> {
    let (var, value, root) = state_root_from(|n| std::env::var_os(n));
    if root.is_relative() {
        return Err(crate::error::UsageError::new(
            var,
            value.to_string_lossy(),
            "a relative state folder would put the stacks' secrets below the current folder",
            format!("set {var} to an absolute path (or unset it)"),
        ));
    }
    Ok(root)
}

/// The variable that chose the state root, its value, and the root; pure over `var`.
fn state_root_from(
    var: impl Fn(&str) -> Option<std::ffi::OsString>,
) -> (&'static str, std::ffi::OsString, PathBuf) {
    let set = |n: &str| var(n).filter(|d| !d.is_empty());
    if let Some(d) = set("EXECTL_STATE_DIR") {
        return ("EXECTL_STATE_DIR", d.clone(), PathBuf::from(d));
    }
    if let Some(d) = set("XDG_STATE_HOME") {
        return ("XDG_STATE_HOME", d.clone(), PathBuf::from(d).join("exectl"));
    }
    let home = set("HOME").unwrap_or_else(|| "/root".into());
    (
        "HOME",
        home.clone(),
        PathBuf::from(home).join(".local/state/exectl"),
    )
}

/// The state folder of one stack on one target.
pub fn stack_dir(root: &Path, target_key: &str, stack: &str) -> PathBuf {
    root.join(target_key).join(stack)
}

/// Load the stack's secrets, generating missing ones. With `persist`, new secrets are saved (0600) so the
/// next render reuses them; without it (validate), nothing is written.
pub fn load_or_generate(dir: &Path, persist: bool) -> Result<Secrets> {
    let path = dir.join("secrets.env");
    let mut secrets = match fs::read_to_string(&path) {
        Ok(text) => Secrets::parse(&text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Secrets::parse(""),
        Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
    };
    if secrets.complete() && persist {
        fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        fs::set_permissions(dir, fs::Permissions::from_mode(0o700))?;
        crate::shell::atomic::write(&path, secrets.to_env_text().as_bytes(), 0o600)?;
    }
    Ok(secrets)
}

/// Save secrets (0600) unless the stack already has a secrets file: used once a deploy's preflight has
/// passed, so that bad input leaves no state behind.
pub fn save_if_absent(dir: &Path, secrets: &Secrets) -> Result<()> {
    let path = dir.join("secrets.env");
    if path.exists() {
        return Ok(());
    }
    fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    fs::set_permissions(dir, fs::Permissions::from_mode(0o700))?;
    crate::shell::atomic::write(&path, secrets.to_env_text().as_bytes(), 0o600)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_stable_once_persisted() {
        let dir = tempfile::tempdir().unwrap();
        let a = load_or_generate(dir.path(), true).unwrap();
        let b = load_or_generate(dir.path(), true).unwrap();
        assert_eq!(a, b);
        let mode = fs::metadata(dir.path().join("secrets.env"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        assert_eq!(a.get("API_JWT_SECRET").len(), 48);
    }

    /// A temporary file left by an interrupted write (once `secrets.tmp`, 0644) is never reused: the
    /// secrets file ends private whatever lies beside it.
    #[test]
    fn a_leftover_temp_file_never_widens_the_secrets_file() {
        let dir = tempfile::tempdir().unwrap();
        for leftover in ["secrets.tmp", "secrets.env.exectl-tmp"] {
            let p = dir.path().join(leftover);
            fs::write(&p, "OLD=1\n").unwrap();
            fs::set_permissions(&p, fs::Permissions::from_mode(0o644)).unwrap();
        }
        let s = load_or_generate(dir.path(), true).unwrap();
        save_if_absent(dir.path(), &s).unwrap();
        let mode = fs::metadata(dir.path().join("secrets.env"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    #[test]
    fn validate_does_not_persist() {
        let dir = tempfile::tempdir().unwrap();
        load_or_generate(&dir.path().join("s"), false).unwrap();
        assert!(!dir.path().join("s").exists());
    }

    #[test]
    fn state_root_names_the_variable_that_chose_it() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |n: &str| {
                pairs
                    .iter()
                    .find(|(k, _)| *k == n)
                    .map(|(_, v)| std::ffi::OsString::from(v))
            }
        };
        let (var, _, root) =
            state_root_from(env(&[("EXECTL_STATE_DIR", "rel/dir"), ("HOME", "/h")]));
        assert_eq!((var, root), ("EXECTL_STATE_DIR", PathBuf::from("rel/dir")));
        let (var, value, root) =
            state_root_from(env(&[("EXECTL_STATE_DIR", ""), ("XDG_STATE_HOME", "x")]));
        assert_eq!((var, root), ("XDG_STATE_HOME", PathBuf::from("x/exectl")));
        assert_eq!(value, "x");
        let (var, _, root) = state_root_from(env(&[("HOME", "/h")]));
        assert_eq!(
            (var, root),
            ("HOME", PathBuf::from("/h/.local/state/exectl"))
        );
    }

    #[test]
    fn debug_hides_values() {
        let s = Secrets::generate();
        assert!(!format!("{s:?}").contains(s.get("APP_SECRET")));
    }
}
