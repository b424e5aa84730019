//! The stack's lock file on a remote SUT: taken with the shell's noclobber (atomic), read back, removed.

use exectl_core::scripts::Script;

/// Take the lock at $1 naming holder $2: read with `parse_acquire`. Exit 3 when its folder cannot be made.
pub fn acquire(path: &str, holder: &str) -> Script {
    Script::new(
        r#"mkdir -p "$(dirname "$1")" || exit 3
if ( set -C; printf '%s\n' "$2" > "$1" ) 2>/dev/null; then echo acquired; else echo held; cat "$1"; fi"#,
    )
    .arg(path)
    .arg(holder)
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Acquire {
    Acquired,
    /// Someone holds it: what the file says (the holder's JSON, or whatever is there).
    Held(String),
}

pub fn parse_acquire(out: &str) -> Acquire {
    let (verdict, rest) = out.split_once('\n').unwrap_or((out, ""));
    if verdict.trim() == "acquired" {
        Acquire::Acquired
    } else {
        Acquire::Held(rest.trim().to_string())
    }
}

/// The lock file's text (empty when absent).
pub fn read(path: &str) -> Script {
    Script::new(r#"cat -- "$1" 2>/dev/null; true"#).arg(path)
}

/// Read the lock file at $1 on every request line, each answer ended by the `END` line: kept running for
/// a holder that checks its lock all along (a bench's level, a deploy's waits), so a check over SSH is
/// a line on one channel, not an exec session each time.
pub fn watch(path: &str) -> Script {
    Script::new(format!(
        r#"while read -r _; do cat -- "$1" 2>/dev/null; echo '{}'; done"#,
        crate::shell::END
    ))
    .arg(path)
}

/// Remove the lock whoever holds it (a stale or broken lock being taken over).
pub fn remove(path: &str) -> Script {
    Script::new(r#"rm -f -- "$1""#).arg(path)
}

/// Remove the lock only if it still names `holder`, and the folders it leaves empty: nothing of exectl
/// stays on a SUT after the last teardown.
pub fn release(path: &str, holder: &str) -> Script {
    Script::new(
        r#"[ "$(cat "$1" 2>/dev/null)" = "$2" ] && rm -f -- "$1"
d=$(dirname -- "$1"); rmdir -- "$d" "$(dirname -- "$d")" 2>/dev/null; true"#,
    )
    .arg(path)
    .arg(holder)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shell::{HostShell, Local};

    #[test]
    fn the_scripts_take_path_then_holder() {
        let a = acquire("/opt/exectl/.locks/s.lock", r#"{"pid":1}"#);
        assert_eq!(a.args, ["/opt/exectl/.locks/s.lock", r#"{"pid":1}"#]);
        assert!(a.body.contains("set -C"), "noclobber makes the take atomic");
        assert_eq!(
            read("/l").command_line(),
            r#"sh -c 'cat -- "$1" 2>/dev/null; true' sh '/l'"#
        );
        assert_eq!(remove("/l").body, r#"rm -f -- "$1""#);
        assert_eq!(release("/l", "me").args, ["/l", "me"]);
    }

    /// One running script answers every read, and sees the file change between two.
    #[test]
    fn a_watch_reads_the_lock_anew_on_each_request() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.lock");
        let p = path.to_str().unwrap();
        let mut w = Local.open_loop(&watch(p)).unwrap();
        assert_eq!(w.ask("read").unwrap().trim(), "", "absent: empty");
        std::fs::write(&path, "{\"pid\":7}\n").unwrap();
        assert_eq!(w.ask("read").unwrap().trim(), "{\"pid\":7}");
        std::fs::write(&path, "{\"pid\":8}\n").unwrap();
        assert_eq!(w.ask("read").unwrap().trim(), "{\"pid\":8}");
    }

    #[test]
    fn reads_the_verdict() {
        assert_eq!(parse_acquire("acquired\n"), Acquire::Acquired);
        assert_eq!(
            parse_acquire("held\n{\"pid\":7}\n"),
            Acquire::Held("{\"pid\":7}".into())
        );
        assert_eq!(parse_acquire("held"), Acquire::Held(String::new()));
    }

    /// The whole cycle, run here: take, refused while held, released only by its holder, folders gone.
    #[test]
    fn the_lock_cycle_on_a_real_shell() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("root/.locks/s.lock").display().to_string();
        let run = |s: Script| Local.run(&s, None).unwrap().stdout;
        assert_eq!(parse_acquire(&run(acquire(&path, "me"))), Acquire::Acquired);
        assert_eq!(
            parse_acquire(&run(acquire(&path, "you"))),
            Acquire::Held("me".into())
        );
        assert_eq!(run(read(&path)).trim(), "me");
        run(release(&path, "you"));
        assert_eq!(run(read(&path)).trim(), "me", "only the holder releases");
        run(release(&path, "me"));
        assert_eq!(run(read(&path)), "");
        assert!(!d.path().join("root").exists(), "empty folders go too");
    }
}
