//! Per-stack secrets: generated once, kept in a local state folder (mode 0600), reused on every render so
//! that re-rendering gives identical bytes and a redeploy keeps the database reachable. Never printed.

use anyhow::{Context, Result};
pub use exectl_core::secrets::{Secrets, NAMES};
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

/// Load the stack's secrets, generating missing ones. With `persist`, new secrets are saved (0600) so the
/// next render reuses them; without it (validate), nothing is written.
pub fn load_or_generate(dir: &Path, persist: bool) -> Result<Secrets> {
    let path = super::secrets_file(dir);
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
    let path = super::secrets_file(dir);
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
    fn debug_hides_values() {
        let s = Secrets::generate();
        assert!(!format!("{s:?}").contains(s.get("APP_SECRET")));
    }
}
