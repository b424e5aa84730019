//! Bench runs in the state folder, by run id: `<state>/benches/RUN_ID/` holds a bench's results.json,
//! timeline.jsonl and report.html, or, for `bench --out DIR`, is a symlink to DIR, so that `runs list`,
//! `show`, `diff` and `exectl report RUN_ID` find a run by its id wherever it wrote. And the state to
//! show for one: a results.json still `running` whose process is gone was killed.

use anyhow::{Context, Result};
use exectl_core::bench::results::RESULTS;
use exectl_core::bench::{Results, RunState};
use exectl_core::error::UsageError;
use std::path::{Path, PathBuf};

use super::benches_dir;

/// Record where bench `run_id` writes: nothing to do when `out_dir` is `<state>/benches/RUN_ID` itself,
/// else a symlink there to `out_dir` (made absolute). A run id already recorded for a bench that wrote
/// results is refused (exit 2); a record left by one that never did (it stopped before level 1) is
/// replaced.
pub fn record_out(state_root: &Path, run_id: &str, out_dir: &Path) -> Result<()> {
    record_out_in(&benches_dir(state_root), run_id, out_dir)
}

/// `record_out` in the folder of links `benches` (benches', or sweeps').
pub(super) fn record_out_in(benches: &Path, run_id: &str, out_dir: &Path) -> Result<()> {
    super::runs::check_id(run_id)?;
    let link = benches.join(run_id);
    let absolute = |p: &Path| std::path::absolute(p).with_context(|| format!("{}", p.display()));
    let out = absolute(out_dir)?;
    // Its own folder in the state folder needs no record; a folder that already holds results (or a
    // file) is not this run's to record, and bench refuses it.
    if out == absolute(&link)? || out.join(RESULTS).exists() || out.is_file() {
        return Ok(());
    }
    let taken = |r#where: &Path| -> anyhow::Error {
        UsageError::new(
            "--run-id",
            run_id,
            format!(
                "a run with this id is already recorded, its results in {}",
                r#where.display()
            ),
            "give another --run-id",
        )
        .into()
    };
    match std::fs::symlink_metadata(&link) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e).with_context(|| format!("reading {}", link.display())),
        Ok(m) if m.file_type().is_symlink() => {
            let to = std::fs::read_link(&link)?;
            if to == out {
                return Ok(());
            }
            if to.join(RESULTS).exists() {
                return Err(taken(&to));
            }
            std::fs::remove_file(&link).with_context(|| format!("replacing {}", link.display()))?;
        }
        Ok(_) => {
            if link.join(RESULTS).exists() {
                return Err(taken(&link));
            }
            // An empty folder: the bench that made it wrote nothing.
            std::fs::remove_dir(&link).map_err(|_| taken(&link))?;
        }
    }
    std::fs::create_dir_all(benches).with_context(|| format!("creating {}", benches.display()))?;
    match std::os::unix::fs::symlink(&out, &link) {
        Ok(()) => Ok(()),
        // Another bench took the id meanwhile.
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Err(taken(&link)),
        Err(e) => {
            Err(e).with_context(|| format!("recording {} at {}", out.display(), link.display()))
        }
    }
}

/// A bench found in the state folder.
#[derive(Debug, Clone)]
pub struct BenchRun {
    pub id: String,
    /// Where its files are (a recorded `--out DIR`, followed).
    pub dir: PathBuf,
    pub results: Results,
}

/// Bench `id`: None when the state folder has no bench of that id, or one that wrote no results yet.
/// Results that cannot be read, or are not a bench's, are bad input naming the file (exit 2): `runs
/// list` shows them as unreadable.
pub fn find(state_root: &Path, id: &str) -> Result<Option<BenchRun>, UsageError> {
    super::runs::check_id(id)?;
    let entry = benches_dir(state_root).join(id);
    let dir = std::fs::read_link(&entry).unwrap_or(entry);
    let path = dir.join(RESULTS);
    let unreadable = |problem: String| {
        UsageError::new(
            "run id",
            id,
            problem,
            "fix or remove that file (`exectl runs list` shows every unreadable bench)",
        )
    };
    let text = match crate::shell::user_file::read_text(&path, crate::shell::user_file::RECORD) {
        Ok(t) => t,
        Err(u) if u.missing => return Ok(None),
        Err(u) => return Err(unreadable(u.problem)),
    };
    let results = serde_json::from_str(&text)
        .map_err(|e| unreadable(format!("{} is not a bench's results: {e}", path.display())))?;
    Ok(Some(BenchRun {
        id: id.to_string(),
        dir,
        results,
    }))
}

/// Every bench with results, oldest first; those whose results cannot be read, as (id, why).
pub fn list(state_root: &Path) -> (Vec<BenchRun>, Vec<(String, String)>) {
    let mut found = Vec::new();
    let mut broken = Vec::new();
    let entries = std::fs::read_dir(benches_dir(state_root))
        .into_iter()
        .flatten();
    for e in entries.flatten() {
        let id = e.file_name().to_string_lossy().into_owned();
        match find(state_root, &id) {
            Ok(Some(b)) => found.push(b),
            Ok(None) => {}
            Err(e) => broken.push((id, e.problem)),
        }
    }
    found.sort_by(|a, b| (a.results.started_unix_s, &a.id).cmp(&(b.results.started_unix_s, &b.id)));
    broken.sort();
    (found, broken)
}

/// What to show for a bench's state. `Killed`: results.json says running, but its process is gone
/// (kill -9, a crash): interrupted, by a kill.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shown {
    Running,
    Complete,
    Interrupted,
    Killed,
}

impl Shown {
    /// Pure: from the file and whether its pid is alive.
    pub fn of(r: &Results, alive: impl Fn(u32) -> bool) -> Shown {
        Shown::of_state(r.state, r.pid, alive)
    }

    /// Pure: from a run's state, its pid and whether that is alive (a bench's, a sweep's).
    pub fn of_state(state: RunState, pid: Option<u32>, alive: impl Fn(u32) -> bool) -> Shown {
        match state {
            RunState::Complete => Shown::Complete,
            RunState::Interrupted => Shown::Interrupted,
            RunState::Running if pid.is_some_and(alive) => Shown::Running,
            RunState::Running => Shown::Killed,
        }
    }

    /// On this machine, where the bench ran.
    pub fn now(r: &Results) -> Shown {
        Shown::now_of(r.state, r.pid, r.started_unix_s)
    }

    /// A run (a bench, a sweep) begun at `started_unix_s`, on this machine, where it ran.
    pub fn now_of(state: RunState, pid: Option<u32>, started_unix_s: u64) -> Shown {
        Shown::of_state(state, pid, |p| bench_alive(p, started_unix_s))
    }

    pub fn text(self) -> &'static str {
        match self {
            Shown::Running => "running",
            Shown::Complete => "complete",
            Shown::Interrupted => "interrupted",
            Shown::Killed => "interrupted (killed)",
        }
    }
}

/// Process `pid` exists and started no later than the bench did: a pid the kernel gave to another
/// process after the bench died is not the bench.
fn bench_alive(pid: u32, bench_started_s: u64) -> bool {
    crate::shell::alive(pid) && process_started_s(pid).is_none_or(|t| t <= bench_started_s + 1)
}

/// When process `pid` started, in seconds since the epoch: its start time in clock ticks since boot
/// (`/proc/PID/stat`, field 22) plus the boot time (`/proc/stat` btime).
fn process_started_s(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The fields after the command name, which may hold spaces and parentheses: state is field 3.
    let after = stat.get(stat.rfind(')')? + 2..)?;
    let ticks: u64 = after.split(' ').nth(22 - 3)?.parse().ok()?;
    let boot: u64 = std::fs::read_to_string("/proc/stat")
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("btime "))?
        .trim()
        .parse()
        .ok()?;
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    (hz > 0).then(|| boot + ticks / hz as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn results(id: &str, state: RunState, pid: Option<u32>) -> Results {
        let (mut r, _) = exectl_core::bench::report::tests::example();
        r.run_id = id.into();
        r.state = state;
        r.pid = pid;
        r
    }

    fn write(dir: &Path, r: &Results) {
        std::fs::create_dir_all(dir).unwrap();
        std::fs::write(dir.join(RESULTS), serde_json::to_vec(r).unwrap()).unwrap();
    }

    #[test]
    fn a_running_file_whose_process_is_gone_was_killed() {
        let r = |s, pid| Shown::of(&results("b", s, pid), |p| p == 7);
        assert_eq!(r(RunState::Running, Some(7)), Shown::Running);
        assert_eq!(r(RunState::Running, Some(8)), Shown::Killed);
        assert_eq!(r(RunState::Running, None), Shown::Killed);
        assert_eq!(r(RunState::Interrupted, None), Shown::Interrupted);
        assert_eq!(r(RunState::Complete, None).text(), "complete");
        assert_eq!(Shown::Killed.text(), "interrupted (killed)");
        // This test's own process is alive and started before a bench started now; a bench started
        // before it was something else under the same pid.
        let mut me = results("b", RunState::Running, Some(std::process::id()));
        me.started_unix_s = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs();
        assert_eq!(Shown::now(&me), Shown::Running);
        me.started_unix_s = 1_000_000_000;
        assert_eq!(Shown::now(&me), Shown::Killed, "the pid was reused");
    }

    #[test]
    fn an_out_dir_is_found_by_its_run_id() {
        let state = tempfile::tempdir().unwrap();
        let out = tempfile::tempdir().unwrap();
        let (root, dir) = (state.path(), out.path().join("mine"));
        record_out(root, "B-1", &dir).unwrap();
        // Before it writes results, there is nothing to list.
        assert!(find(root, "B-1").unwrap().is_none());
        write(&dir, &results("B-1", RunState::Complete, None));
        let b = find(root, "B-1").unwrap().unwrap();
        assert_eq!((b.id.as_str(), b.dir.as_path()), ("B-1", dir.as_path()));
        // In the state folder itself: nothing to record.
        let own = benches_dir(root).join("B-2");
        record_out(root, "B-2", &own).unwrap();
        assert!(!own.exists());
        write(&own, &results("B-2", RunState::Running, Some(u32::MAX)));
        let (found, broken) = list(root);
        let ids: Vec<&str> = found.iter().map(|b| b.id.as_str()).collect();
        assert_eq!(ids, ["B-1", "B-2"]);
        assert!(broken.is_empty());
        // Again into the same folder is fine; another folder under a taken id is refused.
        record_out(root, "B-1", &dir).unwrap();
        let e = record_out(root, "B-1", &out.path().join("other")).unwrap_err();
        let u = e.downcast_ref::<UsageError>().unwrap();
        assert_eq!((u.field.as_str(), u.value.as_str()), ("--run-id", "B-1"));
        assert!(u.problem.contains(&dir.display().to_string()), "{u}");
        let e = record_out(root, "B-2", &out.path().join("other")).unwrap_err();
        assert!(e.to_string().contains("already recorded"), "{e}");
        // A corrupt results.json is listed as such, not skipped.
        std::fs::write(dir.join(RESULTS), "{").unwrap();
        let (found, broken) = list(root);
        assert_eq!(found.len(), 1);
        assert_eq!(broken[0].0, "B-1");
        assert!(
            broken[0].1.contains("is not a bench's results"),
            "{broken:?}"
        );
        assert!(record_out(root, "../x", &dir).is_err());
        // A folder holding another run's results, or a file, is not recorded (bench refuses both).
        record_out(root, "B-3", &dir).unwrap();
        let file = out.path().join("f");
        std::fs::write(&file, "").unwrap();
        record_out(root, "B-4", &file).unwrap();
        assert!(!benches_dir(root).join("B-3").exists());
        assert!(std::fs::symlink_metadata(benches_dir(root).join("B-4")).is_err());
    }
}
