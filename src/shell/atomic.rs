//! The one atomic file write. Every local file exectl writes whole (secrets, the bundle, manifests, run
//! records, files a local target's host is given) goes through here, with one policy:
//!
//! 1. a temporary file beside the target (same folder, so the rename cannot cross filesystems), created
//!    new (O_EXCL) with mode 0600 whatever the umask: a secret is never readable by others, not even for
//!    its first bytes;
//! 2. the bytes written and fsynced;
//! 3. the exact mode set (umask ignored) before the file gets its name;
//! 4. renamed over the target (or, for `write_new`, linked to it only if the name is free), so a reader
//!    sees the old file or the new one, never half of one;
//! 5. the folder fsynced, so the rename survives a crash.
//!
//! Remote uploads (SFTP, or the exec fallback in `target::ssh::upload`) keep their own transport but
//! follow the same steps: private until complete, exact mode before the rename.

use anyhow::{Context, Result};
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

/// Replace `path` with `bytes` at `mode`, atomically (folders made as needed).
pub fn write(path: &Path, bytes: &[u8], mode: u32) -> Result<()> {
    let tmp = staged(path, bytes, mode)?;
    tmp.persist(path)
        .map_err(|e| e.error)
        .with_context(|| format!("writing {}", path.display()))?;
    sync_parent(path)
}

/// Create `path` with `bytes` at `mode`, atomically, only if no file has that name: Ok(false) when one
/// does (it is left as it was). For records that must never overwrite another's.
pub fn write_new(path: &Path, bytes: &[u8], mode: u32) -> Result<bool> {
    let tmp = staged(path, bytes, mode)?;
    match tmp.persist_noclobber(path) {
        Ok(_) => {}
        Err(e) if e.error.kind() == std::io::ErrorKind::AlreadyExists => return Ok(false),
        Err(e) => return Err(e.error).with_context(|| format!("writing {}", path.display())),
    }
    sync_parent(path)?;
    Ok(true)
}

/// Steps 1–3: the complete, synced temporary file beside `path`, already at `mode`.
fn staged(path: &Path, bytes: &[u8], mode: u32) -> Result<tempfile::NamedTempFile> {
    let dir = parent_of(path);
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    // tempfile creates with O_EXCL and mode 0600, under a random name: two writers never share it.
    let mut tmp = tempfile::Builder::new()
        .prefix(&format!(".{name}."))
        .suffix(".exectl-tmp")
        .tempfile_in(dir)
        .with_context(|| format!("creating a temporary file beside {}", path.display()))?;
    let f = tmp.as_file_mut();
    f.write_all(bytes)
        .and_then(|_| f.sync_all())
        .and_then(|_| f.set_permissions(std::fs::Permissions::from_mode(mode & 0o7777)))
        .with_context(|| format!("writing {}", tmp.path().display()))?;
    Ok(tmp)
}

fn parent_of(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// Step 5: the folder's entry for the new name reaches the disk.
fn sync_parent(path: &Path) -> Result<()> {
    let dir = parent_of(path);
    std::fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .with_context(|| format!("syncing {}", dir.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mode_of(p: &Path) -> u32 {
        std::fs::metadata(p).unwrap().permissions().mode() & 0o7777
    }

    fn leftovers(dir: &Path) -> Vec<String> {
        std::fs::read_dir(dir)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".exectl-tmp"))
            .collect()
    }

    #[test]
    fn replaces_whole_with_the_exact_mode_and_leaves_no_temp() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("a/b/.env");
        write(&p, b"SECRET=1\n", 0o600).unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"SECRET=1\n");
        assert_eq!(mode_of(&p), 0o600);
        // A wider mode than the umask allows is set exactly, and a replaced file takes the new mode.
        write(&p, b"#!/bin/sh\n", 0o775).unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"#!/bin/sh\n");
        assert_eq!(mode_of(&p), 0o775);
        assert!(leftovers(p.parent().unwrap()).is_empty());
    }

    #[test]
    fn a_file_of_wider_mode_is_replaced_not_reused() {
        // The old inode (0644, maybe open elsewhere) is never written into: a new private file replaces it.
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("secrets.env");
        std::fs::write(&p, "old").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
        let old = std::fs::File::open(&p).unwrap();
        write(&p, b"new", 0o600).unwrap();
        assert_eq!(mode_of(&p), 0o600);
        let mut text = String::new();
        std::io::Read::read_to_string(&mut &old, &mut text).unwrap();
        assert_eq!(text, "old", "the old file was rewritten in place");
    }

    #[test]
    fn write_new_never_overwrites() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("run-1.json");
        assert!(write_new(&p, b"first", 0o644).unwrap());
        assert!(!write_new(&p, b"second", 0o644).unwrap());
        assert_eq!(std::fs::read(&p).unwrap(), b"first");
        assert_eq!(mode_of(&p), 0o644);
        assert!(leftovers(d.path()).is_empty());
    }

    #[test]
    fn a_missing_folder_that_cannot_be_made_is_an_error_naming_it() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("file"), "").unwrap();
        let e = write(&d.path().join("file/x"), b"", 0o600).unwrap_err();
        assert!(format!("{e:#}").contains("file"), "{e:#}");
    }
}
