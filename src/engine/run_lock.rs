//! One process at a time runs a sweep or a campaign: an exclusive `flock` on `exectl.lock` in its
//! folder, taken before its results.json is first written (or, for `--resume`, before anything is
//! read from it as a plan) and held for the rest of the process's life. The kernel releases it when
//! the process ends, however it ends, so there is no stale lock to break, and a process id reused
//! since cannot pass for the holder (a pid and a start time compared could, and a resume's own start
//! is not its campaign's). The file names its holder (pid, host, since) for the refusal's message.

use std::fs::File;
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use anyhow::{Context, Result};

use crate::engine::lock::Holder;

/// The lock file in a run's folder.
pub const LOCK: &str = "exectl.lock";

/// The folders this process holds, each with its open lock file (closing it would release it).
static HELD: Mutex<Vec<(PathBuf, File)>> = Mutex::new(Vec::new());

/// Another process runs it (exit 4).
#[derive(Debug, thiserror::Error)]
#[error("{what} {run_id} is running: {} (pid {} on {}) holds it since {}; fix: wait for it to end, or stop it (Ctrl-C, or kill {}) and resume then", holder.command, holder.pid, holder.host, holder.since, holder.pid)]
pub struct RunLocked {
    pub what: String,
    pub run_id: String,
    pub holder: Holder,
}

/// Hold the run in `dir` (`what` "campaign" or "sweep", `run_id` its id) for the rest of this process:
/// refused (`RunLocked`, exit 4) while another process holds it. Holding it again is a no-op.
pub fn hold(dir: &Path, what: &str, run_id: &str) -> Result<()> {
    let key = std::fs::canonicalize(dir).with_context(|| format!("reading {}", dir.display()))?;
    let mut held = HELD.lock().unwrap_or_else(|e| e.into_inner());
    if held.iter().any(|(d, _)| *d == key) {
        return Ok(());
    }
    let path = key.join(LOCK);
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .with_context(|| format!("opening {}", path.display()))?;
    // std's lock is flock(2) on Linux: released by the kernel with the last descriptor.
    if let Err(e) = file.try_lock() {
        if let std::fs::TryLockError::Error(e) = e {
            return Err(e).with_context(|| format!("locking {}", path.display()));
        }
        let mut text = String::new();
        let _ = file.read_to_string(&mut text);
        let holder = serde_json::from_str(text.trim()).unwrap_or_else(|_| Holder {
            // Taken a moment ago, its holder not written yet.
            pid: 0,
            host: "this machine".into(),
            command: format!("another exectl {what}"),
            since: "now".into(),
            since_epoch: 0,
        });
        return Err(RunLocked {
            what: what.into(),
            run_id: run_id.into(),
            holder,
        }
        .into());
    }
    let me = Holder::me(&format!("exectl {what} {run_id}"));
    file.set_len(0)?;
    file.rewind()?;
    file.write_all(serde_json::to_string(&me)?.as_bytes())
        .with_context(|| format!("writing {}", path.display()))?;
    held.push((key, file));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Another open file description of the lock (as another process has) is refused while this
    /// process holds it; this process holds it again freely.
    #[test]
    fn a_held_run_is_exclusive_and_names_its_holder() {
        let dir = tempfile::tempdir().unwrap();
        hold(dir.path(), "campaign", "C-1").unwrap();
        hold(dir.path(), "campaign", "C-1").unwrap();
        let other = File::open(dir.path().join(LOCK)).unwrap();
        assert!(
            matches!(other.try_lock(), Err(std::fs::TryLockError::WouldBlock)),
            "the lock is exclusive"
        );
        let text = std::fs::read_to_string(dir.path().join(LOCK)).unwrap();
        let h: Holder = serde_json::from_str(&text).unwrap();
        assert_eq!(h.pid, std::process::id());
        assert_eq!(h.command, "exectl campaign C-1");
    }

    /// A run another holds (its lock taken on a description of its own, as another process would)
    /// is refused, exit 4, naming the holder and since when.
    #[test]
    fn a_run_held_by_another_is_refused_exit_4() {
        let dir = tempfile::tempdir().unwrap();
        let mut theirs = Holder::me("exectl sweep S-1");
        theirs.pid = 4242;
        std::fs::write(
            dir.path().join(LOCK),
            serde_json::to_string(&theirs).unwrap(),
        )
        .unwrap();
        let f = File::open(dir.path().join(LOCK)).unwrap();
        f.lock().unwrap();
        let e = hold(dir.path(), "sweep", "S-1").unwrap_err();
        assert_eq!(
            crate::error::exit_code(&e),
            exectl_core::error::exit::LOCKED
        );
        let said = format!("{e:#}");
        assert!(
            said.contains("sweep S-1 is running")
                && said.contains("pid 4242")
                && said.contains(&theirs.since),
            "{said}"
        );
        drop(f);
        hold(dir.path(), "sweep", "S-1").unwrap();
    }
}
