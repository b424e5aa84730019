//! Files and folders on the host: read one, make a temporary folder, remove one, and the upload by exec
//! used when the SUT's sshd has no SFTP.

use super::Script;
use std::path::{Path, PathBuf};

fn path_arg(p: &Path) -> String {
    p.display().to_string()
}

/// Remove a folder (nothing if absent).
pub fn remove_dir(path: &Path) -> Script {
    Script::new(r#"rm -rf -- "$1""#).arg(path_arg(path))
}

/// `present` then the file, or `absent`: read with `parse_read`.
pub fn read(path: &Path) -> Script {
    Script::new(r#"if [ -e "$1" ]; then echo present; cat -- "$1"; else echo absent; fi"#)
        .arg(path_arg(path))
}

/// The file's text, or None when it does not exist.
pub fn parse_read(out: &str) -> Option<String> {
    match out.split_once('\n') {
        Some(("present", text)) => Some(text.to_string()),
        _ if out.trim() == "present" => Some(String::new()),
        _ => None,
    }
}

/// A fresh folder for a run that must leave nothing behind: read with `parse_temp_dir`.
pub fn make_temp_dir() -> Script {
    Script::new(r#"mktemp -d "${TMPDIR:-/tmp}/exectl-host.XXXXXX""#)
}

pub fn parse_temp_dir(out: &str) -> PathBuf {
    PathBuf::from(out.trim())
}

/// The file an upload writes beside `path` and renames over it: a reader never sees half a file.
pub fn upload_temp(path: &Path) -> PathBuf {
    path.with_extension("exectl-tmp")
}

/// Upload without SFTP, the bytes on stdin. $1 the file, $2 the temporary file beside it, $3 the mode
/// (octal). Folders are made under the caller's umask (as SFTP's mkdir 0755 is); the file itself under
/// umask 077 and with noclobber (`set -C`), after removing a leftover of an interrupted run, so that it
/// is created here, private, and never an older file of wider mode reused. Then the exact mode, then
/// the rename (the atomic write's policy, see the shell's `shell::atomic`).
pub const UPLOAD_BODY: &str = r#"set -e
mkdir -p -- "$(dirname -- "$1")"
rm -f -- "$2"
umask 077
set -C
cat > "$2"
chmod "$3" "$2"
mv -f -- "$2" "$1""#;

pub fn upload(path: &Path, mode: u32) -> Script {
    Script::new(UPLOAD_BODY)
        .arg(path_arg(path))
        .arg(path_arg(&upload_temp(path)))
        .arg(format!("{:o}", mode & 0o7777))
}

/// Why the Docker socket could not be forwarded, as the host sees it ($1 the socket).
pub fn socket_probe(socket: &str) -> Script {
    Script::new(
        r#"if [ ! -S "$1" ]; then echo missing; elif [ -r "$1" ] && [ -w "$1" ]; then echo ok; else echo denied; fi"#,
    )
    .arg(socket)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Socket {
    Missing,
    Denied,
    /// There and usable: sshd itself refused to forward it.
    Usable,
    /// The probe did not answer.
    Unknown,
}

pub fn parse_socket_probe(out: &str) -> Socket {
    match out.trim() {
        "missing" => Socket::Missing,
        "denied" => Socket::Denied,
        "ok" => Socket::Usable,
        _ => Socket::Unknown,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_scripts_are_exact() {
        assert_eq!(
            remove_dir(Path::new("/opt/exectl/s")).command_line(),
            r#"sh -c 'rm -rf -- "$1"' sh '/opt/exectl/s'"#
        );
        assert_eq!(
            read(Path::new("/etc/docker/daemon.json")).args,
            ["/etc/docker/daemon.json"]
        );
        assert_eq!(
            make_temp_dir().command_line(),
            r#"sh -c 'mktemp -d "${TMPDIR:-/tmp}/exectl-host.XXXXXX"' sh"#
        );
        assert_eq!(socket_probe("/run/d.sock").args, ["/run/d.sock"]);
    }

    #[test]
    fn reads_recorded_outputs() {
        assert_eq!(
            parse_read("present\n{\"a\":1}\n").as_deref(),
            Some("{\"a\":1}\n")
        );
        assert_eq!(parse_read("present\n").as_deref(), Some(""));
        assert_eq!(parse_read("present").as_deref(), Some(""));
        assert_eq!(parse_read("absent\n"), None);
        assert_eq!(
            parse_temp_dir("/tmp/exectl-host.Ab12\n"),
            PathBuf::from("/tmp/exectl-host.Ab12")
        );
        assert_eq!(parse_socket_probe("missing\n"), Socket::Missing);
        assert_eq!(parse_socket_probe("denied"), Socket::Denied);
        assert_eq!(parse_socket_probe("ok"), Socket::Usable);
        assert_eq!(parse_socket_probe(""), Socket::Unknown);
    }

    #[test]
    fn the_upload_is_one_quoted_shell_with_path_temp_and_octal_mode() {
        let c = upload(Path::new("/opt/exectl/s/.env"), 0o600).command_line();
        assert!(c.starts_with("sh -c 'set -e\n"), "{c}");
        assert!(
            c.ends_with(" sh '/opt/exectl/s/.env' '/opt/exectl/s/.env.exectl-tmp' '600'"),
            "{c}"
        );
        let c = upload(Path::new("/x/it's/run.sh"), 0o100755).command_line();
        assert!(
            c.ends_with(r" sh '/x/it'\''s/run.sh' '/x/it'\''s/run.exectl-tmp' '755'"),
            "{c}"
        );
    }

    #[test]
    fn the_file_is_private_before_its_first_byte() {
        // umask 077 and noclobber come before cat writes; the mode is set before the rename.
        let at = |s: &str| UPLOAD_BODY.find(s).unwrap_or_else(|| panic!("{s}"));
        assert!(at("rm -f") < at("umask 077"));
        assert!(at("umask 077") < at("cat >"));
        assert!(at("set -C") < at("cat >"));
        assert!(
            at("mkdir -p") < at("umask 077"),
            "folders keep the usual mode"
        );
        assert!(at("chmod") < at("mv -f"));
    }
}
