//! The one way exectl reads a file a user names or could have replaced (a campaign or sweep file,
//! exectl.yaml, an images file, a manifest, a run's results, record or timeline): opened without
//! waiting for a writer (a FIFO would hang the command for ever), refused unless the opened handle is a
//! regular file (`/dev/zero` would be read until the kernel kills exectl), and read to a limit no real
//! file of its kind reaches. Checked on the handle, not by a stat before the open: a file swapped in
//! between is checked all the same.

use std::fs::File;
use std::io::Read;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

use exectl_core::error::UsageError;

/// How large a file of a kind may be, and the kind's name for the error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limit {
    pub bytes: u64,
    pub kind: &'static str,
}

const MIB: u64 = 1 << 20;

/// A file a person writes: a campaign or sweep file, exectl.yaml, an images file, a template, a
/// sysctl.d file, a password file. The shipped ones are under 10 KiB.
pub const WRITTEN: Limit = Limit {
    bytes: MIB,
    kind: "a file written by hand",
};

/// A run's results.json or a deploy's run record: a 40-level bench's results are ~100 KiB, a
/// campaign's with its rows' findings well under 1 MiB.
pub const RECORD: Limit = Limit {
    bytes: 256 * MIB,
    kind: "a run's results or record",
};

/// A bench's timeline.jsonl: a sample of a 32-instance stack is ~10 KiB, so a day at 1 Hz is under
/// 1 GiB (the 2-instance samples of tests/fixtures are 1.4 KiB).
pub const TIMELINE: Limit = Limit {
    bytes: 4096 * MIB,
    kind: "a bench's timeline",
};

/// A manifest's accounts, projects or tokens file (read as it is parsed, never held whole): 50,000
/// accounts with their tokens are 30 MB, so 10 million are 6 GB.
pub const MANIFEST: Limit = Limit {
    bytes: 16_384 * MIB,
    kind: "a manifest file",
};

/// Why a file was not read: `missing` when it (or a folder on its path) does not exist, which some
/// callers take as "none yet"; `problem` says what was found, naming the path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unreadable {
    pub missing: bool,
    pub problem: String,
}

impl std::fmt::Display for Unreadable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.problem)
    }
}

/// "11 bytes", "1 MiB", "4.5 GiB".
fn size(bytes: u64) -> String {
    let (value, unit) = match bytes {
        b if b >= 1024 * MIB => (b as f64 / (1024 * MIB) as f64, "GiB"),
        b if b >= MIB => (b as f64 / MIB as f64, "MiB"),
        b if b >= 1024 => (b as f64 / 1024.0, "KiB"),
        b => return format!("{b} bytes"),
    };
    format!("{value:.1} {unit}").replace(".0 ", " ")
}

/// What a file that is not a regular one is.
fn what(t: std::fs::FileType) -> &'static str {
    if t.is_dir() {
        "a folder"
    } else if t.is_fifo() {
        "a FIFO (a named pipe)"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_socket() {
        "a socket"
    } else {
        "not a regular file"
    }
}

/// `path` opened for reading, checked: a regular file of at most `limit`.
pub fn open(path: &Path, limit: Limit) -> Result<File, Unreadable> {
    let shown = path.display();
    let failed = |e: std::io::Error| Unreadable {
        missing: matches!(
            e.kind(),
            std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
        ),
        problem: format!("cannot read {shown}: {e}"),
    };
    let refused = |problem: String| Unreadable {
        missing: false,
        problem,
    };
    // O_NONBLOCK: opening a FIFO does not wait for a writer (and changes nothing for a regular file).
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(failed)?;
    let meta = file.metadata().map_err(failed)?;
    if !meta.file_type().is_file() {
        return Err(refused(format!(
            "{shown} is {}: exectl reads only regular files",
            what(meta.file_type())
        )));
    }
    if meta.len() > limit.bytes {
        return Err(refused(too_large(path, meta.len(), limit)));
    }
    Ok(file)
}

fn too_large(path: &Path, len: u64, limit: Limit) -> String {
    format!(
        "{} is {len} bytes, more than {} may be (at most {})",
        path.display(),
        limit.kind,
        size(limit.bytes)
    )
}

/// The bytes of `path`, a regular file of at most `limit` (one that grows past it while read is
/// refused too).
pub fn read(path: &Path, limit: Limit) -> Result<Vec<u8>, Unreadable> {
    let file = open(path, limit)?;
    let mut bytes = Vec::new();
    file.take(limit.bytes + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| Unreadable {
            missing: false,
            problem: format!("cannot read {}: {e}", path.display()),
        })?;
    if bytes.len() as u64 > limit.bytes {
        return Err(Unreadable {
            missing: false,
            problem: too_large(path, bytes.len() as u64, limit),
        });
    }
    Ok(bytes)
}

/// The text of `path`, as [`read`]; bytes that are not UTF-8 are refused, named by their offset.
pub fn read_text(path: &Path, limit: Limit) -> Result<String, Unreadable> {
    String::from_utf8(read(path, limit)?).map_err(|e| Unreadable {
        missing: false,
        problem: format!(
            "{} is not text (byte {} is not UTF-8)",
            path.display(),
            e.utf8_error().valid_up_to()
        ),
    })
}

/// The text of a file the user named by `field` (its value: the path), else its UsageError (exit 2)
/// with `fix`.
pub fn read_named(path: &Path, field: &str, limit: Limit, fix: &str) -> Result<String, UsageError> {
    read_text(path, limit).map_err(|u| UsageError::new(field, path.display(), u.problem, fix))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMALL: Limit = Limit {
        bytes: 10,
        kind: "a test file",
    };

    #[test]
    fn a_regular_file_within_its_limit_is_read() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("f");
        std::fs::write(&p, "0123456789").unwrap();
        assert_eq!(read_text(&p, SMALL).unwrap(), "0123456789");
    }

    #[test]
    fn devices_fifos_folders_and_large_files_are_refused_at_once() {
        let d = tempfile::tempdir().unwrap();
        let fifo = d.path().join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let big = d.path().join("big");
        std::fs::write(&big, "01234567890").unwrap();
        for (path, says) in [
            (Path::new("/dev/zero"), "/dev/zero is a character device"),
            (fifo.as_path(), "is a FIFO (a named pipe)"),
            (d.path(), "is a folder"),
            (
                big.as_path(),
                "is 11 bytes, more than a test file may be (at most 10 bytes)",
            ),
        ] {
            let e = read_text(path, SMALL).unwrap_err();
            assert!(!e.missing && e.problem.contains(says), "{path:?}: {e}");
        }
        let gone = read_text(&d.path().join("nope"), SMALL).unwrap_err();
        assert!(gone.missing, "{gone}");
        let e = read_named(&big, "--config", SMALL, "give a smaller one").unwrap_err();
        assert_eq!(
            (e.field.as_str(), e.fix.as_str()),
            ("--config", "give a smaller one")
        );
        assert_eq!(size(MIB), "1 MiB");
        assert_eq!(size(4096 * MIB), "4 GiB");
        assert_eq!(size(3 * MIB / 2), "1.5 MiB");
    }
}
