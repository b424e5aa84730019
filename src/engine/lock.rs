//! One deploy or teardown of a stack at a time: a lock file in the stack's folder on the target, naming
//! its holder. A lock whose holder process is gone (same host) is stale and taken over with a notice;
//! any other can be broken explicitly with --break-lock.

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Holder {
    pub pid: u32,
    pub host: String,
    pub command: String,
    /// RFC 3339-ish UTC seconds since the epoch, as text for people.
    pub since: String,
    pub since_epoch: u64,
}

impl Holder {
    /// This process, running `command`, from now.
    pub fn me(command: &str) -> Holder {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_secs();
        Holder {
            pid: std::process::id(),
            host: hostname(),
            command: command.to_string(),
            since: format_epoch(now),
            since_epoch: now,
        }
    }
}

/// Pure: whether a held lock may be taken: unreadable, broken on request, or held by a process of this
/// machine that is gone (another machine's process cannot be checked from here).
pub fn takeover(
    holder: Option<&Holder>,
    me: &Holder,
    break_lock: bool,
    alive: impl Fn(u32) -> bool,
) -> bool {
    match holder {
        None => true,
        Some(h) => break_lock || (h.host == me.host && !alive(h.pid)),
    }
}

#[derive(Debug)]
pub struct StackLock {
    path: PathBuf,
    /// What this holder wrote: the lock is still ours while the file says exactly this.
    mine: String,
}

/// The lock was broken (`--break-lock`) by another command while this one held it.
#[derive(Debug, thiserror::Error)]
#[error("the lock of stack {stack} was taken over by {taken_by} while this command ran; it stopped before changing anything more (what it did is converged by the next deploy or teardown)")]
pub struct LockLost {
    pub stack: String,
    pub taken_by: String,
}

impl LockLost {
    /// From what the lock file holds now ("" when it is gone).
    pub fn from_file(stack: &str, now: &str) -> LockLost {
        let taken_by = match serde_json::from_str::<Holder>(now.trim()) {
            Ok(h) => format!(
                "{} (pid {} on {}) since {}",
                h.command, h.pid, h.host, h.since
            ),
            Err(_) if now.trim().is_empty() => {
                "another command, which has released it since".into()
            }
            Err(_) => "another command".into(),
        };
        LockLost {
            stack: stack.to_string(),
            taken_by,
        }
    }
}

#[derive(Debug, thiserror::Error)]
#[error("stack {stack} is locked by {} (pid {} on {}) since {}; fix: wait for it, or if it is dead pass --break-lock", holder.command, holder.pid, holder.host, holder.since)]
pub struct Locked {
    pub stack: String,
    pub holder: Holder,
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "unknown".into())
}

impl StackLock {
    pub fn acquire(dir: &Path, stack: &str, command: &str, break_lock: bool) -> Result<StackLock> {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        let path = crate::state::lock_file(dir);
        let me = Holder::me(command);
        let mine = serde_json::to_string(&me)?;
        for _ in 0..2 {
            match std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&path)
            {
                Ok(mut f) => {
                    f.write_all(mine.as_bytes())?;
                    return Ok(StackLock { path, mine });
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    let holder: Option<Holder> = std::fs::read_to_string(&path)
                        .ok()
                        .and_then(|t| serde_json::from_str(&t).ok());
                    let stale = takeover(holder.as_ref(), &me, false, crate::shell::alive);
                    if stale || break_lock {
                        if let Some(h) = &holder {
                            eprintln!(
                                "note: taking over the lock of stack {stack} held by {} (pid {} on {}) since {}{}",
                                h.command,
                                h.pid,
                                h.host,
                                h.since,
                                if stale { ": that process is gone" } else { " (--break-lock)" }
                            );
                        }
                        let _ = std::fs::remove_file(&path);
                        continue;
                    }
                    return Err(Locked {
                        stack: stack.to_string(),
                        holder: holder.expect("not stale"),
                    }
                    .into());
                }
                Err(e) => return Err(e).with_context(|| format!("creating {}", path.display())),
            }
        }
        anyhow::bail!("could not take the lock {} (raced twice)", path.display())
    }
}

impl StackLock {
    /// Ok while the lock file still names this holder; a long command checks before each change, so a
    /// `--break-lock` stops it instead of racing the command that broke it.
    pub fn still_held(&self, stack: &str) -> Result<(), LockLost> {
        match self.now() {
            now if now == self.mine => Ok(()),
            now => Err(LockLost::from_file(stack, &now)),
        }
    }

    /// What the lock file says now ("" when it is gone).
    fn now(&self) -> String {
        std::fs::read_to_string(&self.path).unwrap_or_default()
    }
}

impl Drop for StackLock {
    fn drop(&mut self) {
        // Only our own: a holder whose lock was broken must not release the new holder's.
        if self.now() == self.mine {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// Seconds since the epoch as `YYYY-MM-DD HH:MM:SS UTC`.
pub fn format_epoch(secs: u64) -> String {
    exectl_core::units::show_utc(secs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn second_holder_is_refused_and_named() {
        let dir = tempfile::tempdir().unwrap();
        let _a = StackLock::acquire(dir.path(), "exe", "deploy", false).unwrap();
        let err = StackLock::acquire(dir.path(), "exe", "teardown", false).unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.contains("locked by deploy") && msg.contains("--break-lock"),
            "{msg}"
        );
    }

    #[test]
    fn dead_holder_is_stale_and_lock_is_released_on_drop() {
        let dir = tempfile::tempdir().unwrap();
        let stale = Holder {
            pid: u32::MAX - 1,
            host: hostname(),
            command: "deploy".into(),
            since: "then".into(),
            since_epoch: 0,
        };
        std::fs::write(
            dir.path().join("exectl.lock"),
            serde_json::to_string(&stale).unwrap(),
        )
        .unwrap();
        {
            let _l = StackLock::acquire(dir.path(), "exe", "deploy", false).unwrap();
        }
        assert!(!dir.path().join("exectl.lock").exists());
    }

    #[test]
    fn a_broken_lock_is_noticed_and_the_old_holder_does_not_release_the_new_one() {
        let dir = tempfile::tempdir().unwrap();
        let first = StackLock::acquire(dir.path(), "exe", "exectl deploy", false).unwrap();
        first.still_held("exe").unwrap();
        let second = StackLock::acquire(dir.path(), "exe", "exectl teardown", true).unwrap();
        let lost = first.still_held("exe").unwrap_err();
        assert!(
            lost.to_string().contains("taken over by exectl teardown"),
            "{lost}"
        );
        drop(first);
        second.still_held("exe").unwrap();
        drop(second);
        assert!(!dir.path().join("exectl.lock").exists());
    }

    fn holder(host: &str, pid: u32) -> Holder {
        Holder {
            pid,
            host: host.into(),
            command: "exectl deploy".into(),
            since: "then".into(),
            since_epoch: 0,
        }
    }

    #[test]
    fn only_dead_holders_of_this_machine_or_broken_locks_are_taken() {
        let me = holder("bench-a", 1);
        let dead = |_| false;
        let live = |_| true;
        assert!(takeover(None, &me, false, live));
        assert!(takeover(Some(&holder("bench-a", 7)), &me, false, dead));
        assert!(!takeover(Some(&holder("bench-a", 7)), &me, false, live));
        // Another machine's process cannot be checked from here: refused unless --break-lock.
        assert!(!takeover(Some(&holder("bench-b", 7)), &me, false, dead));
        assert!(takeover(Some(&holder("bench-b", 7)), &me, true, live));
    }

    #[test]
    fn epoch_formatting() {
        assert_eq!(format_epoch(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(format_epoch(1_795_000_000), "2026-11-18 11:06:40 UTC");
    }
}
