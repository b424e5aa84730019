//! The stack's lock on a remote SUT as well: operators on two machines must not deploy the same stack at
//! once. A file under /opt/exectl/.locks, created with the shell's noclobber (atomic), naming its holder
//! like the local lock; a holder from this machine whose process is gone is stale and taken over.

use super::lock::{takeover, Holder, LockLost, Locked, StackLock};
use crate::shell::alive;
use crate::shell::scripts::lock::{self, Acquire};
use crate::shell::{HostShell, ShellLoop};
use crate::sut::{Target, REMOTE_STACKS_ROOT};
use anyhow::{Context, Result};
use exectl_core::error::Unreachable;
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

/// How long a read of the SUT's lock, or its release, may take. A link that stalls answers nothing
/// and no error either (an SSH channel's read waits for ever): past this the link is taken as lost
/// (exit 3), and a bench or a deploy's wait goes no further with it.
const WITHIN: Duration = Duration::from_secs(10);

/// Both locks of a deploy, teardown or prepare: the local one, and the SUT's for a remote target.
pub struct StackGuard {
    stack: String,
    local: StackLock,
    remote: Option<RemoteLock>,
    /// The SUT's lock is read at most once a second.
    remote_checked: std::sync::Mutex<Option<std::time::Instant>>,
    /// What taking the locks took from others (`note:` lines), for the operation's progress.
    pub notes: Vec<String>,
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
    watch: Mutex<Option<Box<dyn ShellLoop>>>,
    /// A read or the release may take this long (`WITHIN`).
    within: Duration,
    /// A read did not answer in time: what was said then. The link stalls, and the read still waiting
    /// holds its session: nothing more is asked of it, the release included.
    stalled: Mutex<Option<String>>,
}

impl RemoteLock {
    fn new(shell: Arc<dyn HostShell>, path: String, mine: String) -> RemoteLock {
        RemoteLock {
            shell,
            path,
            mine,
            watch: Default::default(),
            within: WITHIN,
            stalled: Default::default(),
        }
    }

    /// The lock file's text now, read within `within` on a thread of its own: on a stalled link that
    /// read never returns and is left there; the link is then lost (`Unreachable`, exit 3).
    fn read(&self) -> Result<String> {
        let mut watch = self.watch.lock().expect("lock watch");
        if let Some(what) = self.stalled.lock().expect("stalled").clone() {
            return Err(self.lost(what));
        }
        let (shell, path, open) = (self.shell.clone(), self.path.clone(), watch.take());
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let asked = (|| -> Result<(Box<dyn ShellLoop>, String)> {
                let mut w = match open {
                    Some(w) => w,
                    None => shell.open_loop(&lock::watch(&path))?,
                };
                let answer = w.ask("read")?;
                Ok((w, answer))
            })();
            let _ = tx.send(asked);
        });
        match rx.recv_timeout(self.within) {
            Ok(Ok((w, answer))) => {
                *watch = Some(w);
                Ok(answer)
            }
            // The script is gone with the failed read (a blip of the link): opened again next time.
            Ok(Err(e)) => Err(e),
            Err(_) => {
                let what = format!(
                    "{}: the stack's lock {} was not read within {} s (the SSH link stalls)",
                    self.shell.describe(),
                    self.path,
                    self.within.as_secs_f64()
                );
                *self.stalled.lock().expect("stalled") = Some(what.clone());
                Err(self.lost(what))
            }
        }
    }

    fn lost(&self, what: String) -> anyhow::Error {
        Unreachable {
            what,
            fix: "check sshd and the network to the SUT, then run again".into(),
        }
        .into()
    }
}

/// Take the local lock, then the SUT's (remote targets).
pub async fn lock_stack(
    target: &Target,
    stack: &str,
    command: &str,
    break_lock: bool,
) -> Result<StackGuard> {
    let mut local = StackLock::acquire(&target.stack_dir(stack), stack, command, break_lock)?;
    let mut notes = std::mem::take(&mut local.notes);
    let remote = match &target.remote {
        None => None,
        Some(_) => Some(acquire_remote(target, stack, command, break_lock, &mut notes).await?),
    };
    Ok(StackGuard {
        stack: stack.to_string(),
        local,
        remote,
        remote_checked: Default::default(),
        notes,
    })
}

async fn acquire_remote(
    target: &Target,
    stack: &str,
    command: &str,
    break_lock: bool,
    notes: &mut Vec<String>,
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
            Acquire::Acquired => return Ok(RemoteLock::new(target.shell.clone(), path, mine)),
            Acquire::Held(text) => text,
        };
        let holder: Option<Holder> = serde_json::from_str(&held).ok();
        if takeover(holder.as_ref(), &me, break_lock, alive) {
            if let Some(h) = &holder {
                notes.push(format!(
                    "note: taking over the lock of stack {stack} on {} held by {} (pid {} on {}) since {}",
                    target.describe(),
                    h.command,
                    h.pid,
                    h.host,
                    h.since
                ));
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
    /// The watch ends first (its stdin closed), then the release: one exec on the SUT, waited for up to
    /// `within`. Only our own lock is removed. On a stalled link the lock is left, said: the next
    /// command from this machine takes it over (its holder is gone), another machine's needs
    /// --break-lock.
    fn drop(&mut self) {
        let left = |why: &str| {
            eprintln!(
                "note: the stack's lock {} on the SUT is left in place ({why}); the next exectl command from this machine takes it over, one from another machine needs --break-lock",
                self.path
            )
        };
        if let Some(what) = self.stalled.get_mut().ok().and_then(|s| s.take()) {
            return left(&what);
        }
        let watch = self.watch.get_mut().ok().and_then(Option::take);
        let (shell, release) = (self.shell.clone(), lock::release(&self.path, &self.mine));
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            drop(watch);
            let _ = tx.send(shell.run(&release, None).map(|_| ()));
        });
        match rx.recv_timeout(self.within) {
            Ok(_) => {}
            Err(_) => left(&format!(
                "it was not released within {} s: the SSH link stalls",
                self.within.as_secs_f64()
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shell::Output;
    use exectl_core::scripts::Script;

    /// A host whose SSH link stalls: every read waits for ever, no error, no answer.
    struct Stalled;

    fn forever<T>() -> T {
        loop {
            std::thread::park();
        }
    }

    impl HostShell for Stalled {
        fn run(&self, _: &Script, _: Option<&[u8]>) -> Result<Output> {
            forever()
        }
        fn put_file(&self, _: &std::path::Path, _: &[u8], _: u32) -> Result<()> {
            forever()
        }
        fn describe(&self) -> String {
            "ssh://root@10.0.0.9:22".into()
        }
        fn open_loop(&self, _: &Script) -> Result<Box<dyn ShellLoop>> {
            Ok(Box::new(Stalled))
        }
    }

    impl ShellLoop for Stalled {
        fn ask(&mut self, _: &str) -> Result<String> {
            forever()
        }
    }

    /// Review of #36, M4: the SUT's lock was read with no deadline (an SSH session with no timeout),
    /// and the bench joins the thread that reads it: on a stalled link the bench hung at the end of a
    /// level instead of exiting 3. A read past its deadline is the link lost, and so is every read
    /// after it; the lock's release does not wait on the link either.
    #[test]
    fn a_stalled_link_is_lost_within_the_deadline_not_waited_for() {
        let dir = tempfile::tempdir().unwrap();
        let mut remote = RemoteLock::new(
            Arc::new(Stalled),
            "/opt/exectl/.locks/s.lock".into(),
            "me".into(),
        );
        remote.within = Duration::from_millis(300);
        let guard = StackGuard {
            stack: "s".into(),
            local: StackLock::acquire(dir.path(), "s", "exectl bench", false).unwrap(),
            remote: Some(remote),
            remote_checked: Default::default(),
            notes: vec![],
        };
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let first = guard
                .still_held()
                .map_err(|e| (crate::error::exit_code(&e), format!("{e:#}")));
            *guard.remote_checked.lock().unwrap() = None;
            let again = guard.still_held().map_err(|e| crate::error::exit_code(&e));
            drop(guard);
            let _ = tx.send((first, again));
        });
        let (first, again) = rx
            .recv_timeout(Duration::from_secs(10))
            .expect("the lock's read, or its release, waited on a stalled link");
        let (code, text) = first.unwrap_err();
        assert_eq!(code, 3, "{text}");
        assert!(
            text.contains("ssh://root@10.0.0.9:22: the stack's lock /opt/exectl/.locks/s.lock was not read within 0.3 s (the SSH link stalls); fix: check sshd"),
            "{text}"
        );
        assert_eq!(again, Err(3));
        assert!(
            !dir.path().join("exectl.lock").exists(),
            "the local lock is released"
        );
        // A lock never read, released on a link that stalls: left, not waited for.
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut never = RemoteLock::new(Arc::new(Stalled), "/l".into(), "me".into());
            never.within = Duration::from_millis(300);
            drop(never);
            let _ = tx.send(());
        });
        rx.recv_timeout(Duration::from_secs(10))
            .expect("the release waited on a stalled link");
    }
}
