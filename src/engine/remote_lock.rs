//! The stack's lock on a remote SUT as well: operators on two machines must not deploy the same stack at
//! once. A file under /opt/exectl/.locks, created with the shell's noclobber (atomic), naming its holder
//! like the local lock; a holder from this machine whose process is gone is stale and taken over.

use super::lock::{takeover, Holder, LockLost, Locked, StackLock};
use crate::shell::alive;
use crate::shell::scripts::lock::{self, Acquire};
use crate::shell::{HostShell, ShellLoop};
use crate::sut::{Target, REMOTE_STACKS_ROOT};
use anyhow::{Context, Result};
use std::sync::Arc;

/// Both locks of a deploy, teardown or prepare: the local one, and the SUT's for a remote target.
pub struct StackGuard {
    stack: String,
    local: StackLock,
    remote: Option<RemoteLock>,
    /// The SUT's lock is read at most once a second.
    remote_checked: std::sync::Mutex<Option<std::time::Instant>>,
}

impl StackGuard {
    /// Ok while both locks still name this holder. The SUT's is read by one script kept running
    /// (`lock::watch`): a check is a line on its channel, not an exec session per check.
    pub fn still_held(&self) -> Result<()> {
        self.local.still_held(&self.stack)?;
        if let Some(r) = &self.remote {
            let mut checked = self.remote_checked.lock().expect("lock check time");
            if checked.is_some_and(|t| t.elapsed() < std::time::Duration::from_secs(1)) {
                return Ok(());
            }
            *checked = Some(std::time::Instant::now());
            // A failed read is that failure, not a lost lock.
            let now = r
                .read()
                .with_context(|| format!("reading the lock {} on the SUT", r.path))?;
            if now.trim() != r.mine {
                return Err(LockLost::from_file(&self.stack, &now).into());
            }
        }
        Ok(())
    }
}

pub struct RemoteLock {
    shell: Arc<dyn HostShell>,
    path: String,
    mine: String,
    /// The running `lock::watch` script, opened at the first read; dropped when a read fails (a blip of
    /// the link), so the next read opens it again.
    watch: std::sync::Mutex<Option<Box<dyn ShellLoop>>>,
}

impl RemoteLock {
    /// The lock file's text now.
    fn read(&self) -> Result<String> {
        let mut watch = self.watch.lock().expect("lock watch");
        if watch.is_none() {
            *watch = Some(self.shell.open_loop(&lock::watch(&self.path))?);
        }
        let answer = watch.as_mut().expect("opened").ask("read");
        if answer.is_err() {
            *watch = None;
        }
        answer
    }
}

/// Take the local lock, then the SUT's (remote targets).
pub async fn lock_stack(
    target: &Target,
    stack: &str,
    command: &str,
    break_lock: bool,
) -> Result<StackGuard> {
    let local = StackLock::acquire(&target.stack_dir(stack), stack, command, break_lock)?;
    let remote = match &target.remote {
        None => None,
        Some(_) => Some(acquire_remote(target, stack, command, break_lock).await?),
    };
    Ok(StackGuard {
        stack: stack.to_string(),
        local,
        remote,
        remote_checked: Default::default(),
    })
}

async fn acquire_remote(
    target: &Target,
    stack: &str,
    command: &str,
    break_lock: bool,
) -> Result<RemoteLock> {
    let path = format!("{REMOTE_STACKS_ROOT}/.locks/{stack}.lock");
    let me = Holder::me(command);
    let mine = serde_json::to_string(&me)?;
    for _ in 0..2 {
        let out = target
            .host_shell(&lock::acquire(&path, &mine))
            .await
            .with_context(|| format!("taking the lock {path} on {}", target.describe()))?;
        let held = match lock::parse_acquire(&out) {
            Acquire::Acquired => {
                return Ok(RemoteLock {
                    shell: target.shell.clone(),
                    path,
                    mine,
                    watch: Default::default(),
                })
            }
            Acquire::Held(text) => text,
        };
        let holder: Option<Holder> = serde_json::from_str(&held).ok();
        if takeover(holder.as_ref(), &me, break_lock, alive) {
            if let Some(h) = &holder {
                eprintln!(
                    "note: taking over the lock of stack {stack} on {} held by {} (pid {} on {}) since {}",
                    target.describe(),
                    h.command,
                    h.pid,
                    h.host,
                    h.since
                );
            }
            target.host_shell(&lock::remove(&path)).await?;
            continue;
        }
        return Err(Locked {
            stack: format!("{stack} on {}", target.describe()),
            holder: holder.expect("a holder that is not taken over"),
        }
        .into());
    }
    anyhow::bail!(
        "could not take the lock {path} on {} (raced twice)",
        target.describe()
    )
}

impl Drop for RemoteLock {
    fn drop(&mut self) {
        // The watch ends first (its stdin closed), then the release: one exec on the SUT, blocking but
        // brief. Only our own lock is removed.
        self.watch.get_mut().map(Option::take).ok();
        let _ = self.shell.run(&lock::release(&self.path, &self.mine), None);
    }
}
