//! Writing a file on the SUT: by SFTP, or, when sshd has no sftp subsystem (hardened hosts drop the
//! `Subsystem sftp` line), by a plain exec of a POSIX shell reading the bytes from stdin, as Ansible
//! falls back from sftp. Both write beside the file and rename, and set the exact mode; the exec path
//! creates the file under umask 077, so a secret (.env, 0600) is never readable by others, not even
//! for its first bytes.

use super::shell_quote;
use anyhow::{bail, Context, Result};
use ssh2::{OpenFlags, OpenType, Session, Sftp};
use std::io::Write;
use std::path::{Path, PathBuf};

/// The file written beside `path` and renamed over it: a reader never sees half a file.
pub fn temp_beside(path: &Path) -> PathBuf {
    path.with_extension("exectl-tmp")
}

/// Upload without SFTP. $1 the file, $2 the temporary file beside it, $3 the mode (octal); the bytes on
/// stdin. Folders are made under the caller's umask (as SFTP's mkdir 0755 is); the file itself under
/// umask 077 and with noclobber (`set -C`), after removing a leftover of an interrupted run, so that it
/// is created here, private, and never an older file of wider mode reused. Then the exact mode, then
/// the rename.
pub const EXEC_UPLOAD: &str = r#"set -e
mkdir -p -- "$(dirname -- "$1")"
rm -f -- "$2"
umask 077
set -C
cat > "$2"
chmod "$3" "$2"
mv -f -- "$2" "$1""#;

/// The command line that runs `EXEC_UPLOAD` for `path` at `mode`.
pub fn exec_upload_command(path: &Path, mode: u32) -> String {
    format!(
        "sh -c {} sh {} {} {}",
        shell_quote(EXEC_UPLOAD),
        shell_quote(&path.display().to_string()),
        shell_quote(&temp_beside(path).display().to_string()),
        format_args!("{:o}", mode & 0o7777)
    )
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
    let tmp = temp_beside(path);
    let mut f = sftp
        .open_mode(
            &tmp,
            OpenFlags::WRITE | OpenFlags::CREATE | OpenFlags::TRUNCATE,
            mode as i32,
            OpenType::File,
        )
        .with_context(|| format!("creating {} on {on}", tmp.display()))?;
    f.write_all(bytes)
        .with_context(|| format!("writing {} on {on}", tmp.display()))?;
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
    let out = super::run(sess, &exec_upload_command(path, mode), Some(bytes))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_exec_upload_is_one_quoted_shell_with_path_temp_and_octal_mode() {
        let c = exec_upload_command(Path::new("/opt/exectl/s/.env"), 0o600);
        assert!(c.starts_with("sh -c 'set -e\n"), "{c}");
        assert!(
            c.ends_with(" sh '/opt/exectl/s/.env' '/opt/exectl/s/.env.exectl-tmp' 600"),
            "{c}"
        );
        let c = exec_upload_command(Path::new("/x/it's/run.sh"), 0o100755);
        assert!(
            c.ends_with(r" sh '/x/it'\''s/run.sh' '/x/it'\''s/run.exectl-tmp' 755"),
            "{c}"
        );
    }

    #[test]
    fn the_file_is_private_before_its_first_byte() {
        // umask 077 and noclobber come before cat writes; the mode is set before the rename.
        let at = |s: &str| EXEC_UPLOAD.find(s).unwrap_or_else(|| panic!("{s}"));
        assert!(at("rm -f") < at("umask 077"));
        assert!(at("umask 077") < at("cat >"));
        assert!(at("set -C") < at("cat >"));
        assert!(
            at("mkdir -p") < at("umask 077"),
            "folders keep the usual mode"
        );
        assert!(at("chmod") < at("mv -f"));
    }

    /// The script itself, run here with sh: modes exact, the temp file gone, a leftover replaced.
    #[test]
    fn the_exec_upload_script_writes_beside_and_renames() {
        use std::os::unix::fs::PermissionsExt;
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("a/b/.env");
        let tmp = temp_beside(&path);
        std::fs::create_dir_all(tmp.parent().unwrap()).unwrap();
        std::fs::write(&tmp, "leftover").unwrap();
        std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o644)).unwrap();
        for (mode, text) in [(0o600, "SECRET=1\n"), (0o755, "#!/bin/sh\n")] {
            let mut child = std::process::Command::new("sh")
                .arg("-c")
                .arg(EXEC_UPLOAD)
                .arg("sh")
                .arg(&path)
                .arg(&tmp)
                .arg(format!("{mode:o}"))
                .stdin(std::process::Stdio::piped())
                .spawn()
                .unwrap();
            child
                .stdin
                .take()
                .unwrap()
                .write_all(text.as_bytes())
                .unwrap();
            assert!(child.wait().unwrap().success());
            assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
            let m = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
            assert_eq!(m, mode);
            assert!(!tmp.exists());
        }
    }
}
