//! Writing a file on the SUT: by SFTP, or, when sshd has no sftp subsystem (hardened hosts drop the
//! `Subsystem sftp` line), by a plain exec of a POSIX shell reading the bytes from stdin, as Ansible
//! falls back from sftp. Both follow the policy of `shell::atomic`: the file beside is created private
//! (SFTP: mode 0600; exec: umask 077), gets its exact mode before the rename, and is renamed over the
//! target, so a secret (.env, 0600) is never readable by others, not even for its first bytes.

use anyhow::{bail, Context, Result};
use exectl_core::scripts::files::{upload, upload_temp};
use ssh2::{OpenFlags, OpenType, Session, Sftp};
use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

/// Write by SFTP, or by exec when the host's sshd has no sftp subsystem (remembered in `no_sftp`).
pub fn put(
    sess: &Session,
    on: &str,
    path: &Path,
    bytes: &[u8],
    mode: u32,
    no_sftp: &AtomicBool,
) -> Result<()> {
    if !no_sftp.load(Ordering::Relaxed) {
        match sess.sftp() {
            Ok(sftp) => return by_sftp(&sftp, on, path, bytes, mode),
            // e.g. "Unable to request SFTP subsystem": a hardened sshd without `Subsystem sftp`.
            Err(_) => no_sftp.store(true, Ordering::Relaxed),
        }
    }
    by_exec(sess, on, path, bytes, mode)
}

/// Write by SFTP, creating the missing folders.
pub fn by_sftp(sftp: &Sftp, on: &str, path: &Path, bytes: &[u8], mode: u32) -> Result<()> {
    let mut missing = Vec::new();
    let mut dir = path.parent();
    while let Some(d) = dir {
        if d.as_os_str().is_empty() || sftp.stat(d).is_ok() {
            break;
        }
        missing.push(d.to_path_buf());
        dir = d.parent();
    }
    for d in missing.iter().rev() {
        sftp.mkdir(d, 0o755)
            .with_context(|| format!("creating {} on {on}", d.display()))?;
    }
    let tmp = upload_temp(path);
    // A leftover of an interrupted upload may have a wider mode: never write into it.
    let _ = sftp.unlink(&tmp);
    let mut f = sftp
        .open_mode(
            &tmp,
            OpenFlags::WRITE | OpenFlags::CREATE | OpenFlags::EXCLUSIVE,
            0o600,
            OpenType::File,
        )
        .with_context(|| format!("creating {} on {on}", tmp.display()))?;
    f.write_all(bytes)
        .with_context(|| format!("writing {} on {on}", tmp.display()))?;
    // fsync@openssh.com where the server has it; an older sshd without it still gets the rename.
    let _ = f.fsync();
    drop(f);
    // The mode given at creation is masked by the server's umask; set it exactly.
    sftp.setstat(
        &tmp,
        ssh2::FileStat {
            size: None,
            uid: None,
            gid: None,
            perm: Some(mode),
            atime: None,
            mtime: None,
        },
    )
    .with_context(|| format!("setting the mode of {} on {on}", tmp.display()))?;
    let _ = sftp.unlink(path);
    sftp.rename(&tmp, path, None)
        .with_context(|| format!("renaming {} on {on}", tmp.display()))?;
    Ok(())
}

/// Write by exec (`EXEC_UPLOAD`), the bytes on stdin.
pub fn by_exec(sess: &Session, on: &str, path: &Path, bytes: &[u8], mode: u32) -> Result<()> {
    let out = super::run(sess, &upload(path, mode).command_line(), Some(bytes))
        .with_context(|| format!("uploading {} to {on} by exec", path.display()))?;
    if out.code != 0 {
        bail!(
            "uploading {} to {on} by exec (no SFTP there) failed (exit {}): {}",
            path.display(),
            out.code,
            out.stderr.trim()
        );
    }
    Ok(())
}
