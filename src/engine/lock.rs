//! One writer of a stack at a time (deploy, prepare and its reset, bench, teardown): a lock file in the
//! stack's local state folder, naming its holder (`remote_lock` holds the SUT's side of a remote target). A lock whose holder process is gone (same host) is stale and taken over with a notice;
//! any other can be broken explicitly with --break-lock.
//!
//! `load` takes the stack as a reader (`ReaderLock`): any number of loads at once, each a file of its
//! own in `exectl.readers/`, and no writer (deploy, prepare and its reset, bench, teardown) while one
//! runs. Each side publishes itself before it looks for the other, so of a writer and a reader that
//! start together at least one sees the other and stands back (exit 4, naming it).

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
        let now = crate::clock::unix_s();
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
    /// What taking it took from others (a lock whose process is gone, holds ended by --break-lock):
    /// `note:` lines, for the operation's progress.
    pub notes: Vec<String>,
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
        let mut notes = Vec::new();
        for _ in 0..2 {
            match std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&path)
            {
                Ok(mut f) => {
                    f.write_all(mine.as_bytes())?;
                    let mut lock = StackLock { path, mine, notes };
                    // Published first, then the readers looked for: a load that starts meanwhile sees
                    // this lock. Refused, the lock goes with `lock`'s drop.
                    no_readers(dir, stack, &me, break_lock, &mut lock.notes)?;
                    return Ok(lock);
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    let holder: Option<Holder> = std::fs::read_to_string(&path)
                        .ok()
                        .and_then(|t| serde_json::from_str(&t).ok());
                    let stale = takeover(holder.as_ref(), &me, false, crate::shell::alive);
                    if stale || break_lock {
                        if let Some(h) = &holder {
                            notes.push(format!(
                                "note: taking over the lock of stack {stack} held by {} (pid {} on {}) since {}{}",
                                h.command,
                                h.pid,
                                h.host,
                                h.since,
                                if stale { ": that process is gone" } else { " (--break-lock)" }
                            ));
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

/// A writer's check of the stack's readers (loads running against it): a live one refuses the writer
/// (exit 4, naming it) unless `break_lock`, which ends its hold (the load notices and stops); the file
/// of a reader of this host whose process is gone is removed.
fn no_readers(
    dir: &Path,
    stack: &str,
    me: &Holder,
    break_lock: bool,
    notes: &mut Vec<String>,
) -> Result<()> {
    let Ok(entries) = std::fs::read_dir(crate::state::readers_dir(dir)) else {
        return Ok(());
    };
    for path in entries.filter_map(|e| e.ok().map(|e| e.path())) {
        // A reader's file arrives whole (renamed into place): one that does not parse is no reader.
        let holder: Option<Holder> = std::fs::read_to_string(&path)
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok());
        match holder {
            Some(h) if !takeover(Some(&h), me, false, crate::shell::alive) && !break_lock => {
                return Err(Locked {
                    stack: stack.to_string(),
                    holder: h,
                }
                .into())
            }
            Some(h) if break_lock && (h.host != me.host || crate::shell::alive(h.pid)) => {
                notes.push(format!(
                    "note: ending the hold of {} (pid {} on {}) on stack {stack} since {} (--break-lock)",
                    h.command, h.pid, h.host, h.since
                ));
                let _ = std::fs::remove_file(&path);
            }
            _ => drop(std::fs::remove_file(&path)),
        }
    }
    Ok(())
}

/// A `load`'s hold on the stack: writers are refused while it lasts. Released on drop.
#[derive(Debug)]
pub struct ReaderLock {
    path: PathBuf,
    lock: PathBuf,
    stack: String,
    mine: String,
}

impl ReaderLock {
    /// Hold `stack` (its folder `dir`) as a reader, for `command`: refused (exit 4, naming the holder)
    /// while a writer holds its lock, unless that writer's process is gone.
    pub fn acquire(dir: &Path, stack: &str, command: &str) -> Result<ReaderLock> {
        let me = Holder::me(command);
        let mine = serde_json::to_string(&me)?;
        let readers = crate::state::readers_dir(dir);
        static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let path = crate::state::reader_file(dir, &me.host, me.pid, n);
        // Whole or not at all: written beside the folder, then renamed into it. The last reader to
        // leave removes the folder: one that goes between this one's mkdir and rename is met by making
        // it again.
        let part = dir.join(format!(".exectl.reader-{}-{}-{n}", me.host, me.pid));
        std::fs::write(&part, &mine).with_context(|| format!("writing {}", part.display()))?;
        let mut tries = 0;
        loop {
            // Its error is the rename's to tell: the folder may be removed and made again meanwhile.
            let made = std::fs::create_dir_all(&readers);
            match std::fs::rename(&part, &path) {
                Ok(()) => break,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound && tries < 100 => tries += 1,
                Err(e) => {
                    let _ = std::fs::remove_file(&part);
                    return match made {
                        Err(m) => Err(m).with_context(|| format!("creating {}", readers.display())),
                        Ok(()) => Err(e).with_context(|| format!("writing {}", path.display())),
                    };
                }
            }
        }
        let reader = ReaderLock {
            path,
            lock: crate::state::lock_file(dir),
            stack: stack.to_string(),
            mine,
        };
        // Published first, then the writer looked for: a writer that starts meanwhile sees this one.
        let writer: Option<Holder> = std::fs::read_to_string(&reader.lock)
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok());
        if let Some(h) = writer {
            if !takeover(Some(&h), &me, false, crate::shell::alive) {
                return Err(Locked {
                    stack: stack.to_string(),
                    holder: h,
                }
                .into());
            }
        }
        Ok(reader)
    }

    /// Ok while its file is still there: a writer's `--break-lock` removes it (the load then stops),
    /// and names the writer that holds the stack now.
    pub fn still_held(&self) -> Result<(), LockLost> {
        match std::fs::read_to_string(&self.path) {
            Ok(now) if now == self.mine => Ok(()),
            _ => Err(LockLost::from_file(
                &self.stack,
                &std::fs::read_to_string(&self.lock).unwrap_or_default(),
            )),
        }
    }
}

impl Drop for ReaderLock {
    fn drop(&mut self) {
        if std::fs::read_to_string(&self.path).is_ok_and(|t| t == self.mine) {
            let _ = std::fs::remove_file(&self.path);
        }
        // The folder goes with its last reader (a writer's files are never in it).
        if let Some(d) = self.path.parent() {
            let _ = std::fs::remove_dir(d);
        }
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
    fn readers_share_the_stack_and_keep_writers_out() {
        let dir = tempfile::tempdir().unwrap();
        let a = ReaderLock::acquire(dir.path(), "exe", "exectl load idle").unwrap();
        // A second reader at once: readers share the stack.
        let b = ReaderLock::acquire(dir.path(), "exe", "exectl load collab").unwrap();
        a.still_held().unwrap();
        drop(b);
        a.still_held().unwrap();
        // A writer is refused while a reader holds the stack, naming it; its own lock is not left.
        let e = StackLock::acquire(dir.path(), "exe", "exectl prepare", false).unwrap_err();
        assert!(e.to_string().contains("locked by exectl load idle"), "{e}");
        assert!(!crate::state::lock_file(dir.path()).exists());
        drop(a);
        assert!(
            !crate::state::readers_dir(dir.path()).exists(),
            "the folder goes too"
        );
        // A writer holding the stack refuses a reader, which leaves no file behind.
        let w = StackLock::acquire(dir.path(), "exe", "exectl prepare", false).unwrap();
        let e = ReaderLock::acquire(dir.path(), "exe", "exectl load idle").unwrap_err();
        assert!(e.to_string().contains("locked by exectl prepare"), "{e}");
        assert!(std::fs::read_dir(crate::state::readers_dir(dir.path()))
            .map_or(true, |mut d| d.next().is_none()));
        drop(w);
    }

    /// Readers coming and going at once: the last to leave removes the folder, which another is just
    /// publishing into; none fails for it.
    #[test]
    fn readers_coming_and_going_at_once_all_get_the_stack() {
        let dir = tempfile::tempdir().unwrap();
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for _ in 0..300 {
                        let r = ReaderLock::acquire(dir.path(), "exe", "exectl load idle").unwrap();
                        r.still_held().unwrap();
                    }
                });
            }
        });
        assert!(!crate::state::readers_dir(dir.path()).exists());
    }

    #[test]
    fn a_dead_reader_is_stale_and_a_broken_reader_knows_who_took_the_stack() {
        let dir = tempfile::tempdir().unwrap();
        let stale = Holder {
            pid: u32::MAX - 1,
            host: hostname(),
            command: "exectl load idle".into(),
            since: "then".into(),
            since_epoch: 0,
        };
        let readers = crate::state::readers_dir(dir.path());
        std::fs::create_dir_all(&readers).unwrap();
        let dead = readers.join("gone");
        std::fs::write(&dead, serde_json::to_string(&stale).unwrap()).unwrap();
        drop(StackLock::acquire(dir.path(), "exe", "exectl prepare", false).unwrap());
        assert!(!dead.exists(), "a reader whose process is gone is removed");

        let r = ReaderLock::acquire(dir.path(), "exe", "exectl load idle").unwrap();
        let w = StackLock::acquire(dir.path(), "exe", "exectl prepare", true).unwrap();
        let lost = r.still_held().unwrap_err();
        assert!(
            lost.to_string().contains("taken over by exectl prepare"),
            "{lost}"
        );
        drop(r);
        w.still_held("exe").unwrap();
    }

    #[test]
    fn epoch_formatting() {
        assert_eq!(format_epoch(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(format_epoch(1_795_000_000), "2026-11-18 11:06:40 UTC");
    }
}
