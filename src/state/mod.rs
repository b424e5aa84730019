//! The state folder, and the one place its layout is spelled out. The paths of its parts are built here
//! or by the typed store of each part; a bench's, sweep's or campaign's own files (timeline, reports,
//! rows, points) are joined by the operation that writes them (`ops::bench`, `ops::sweep`,
//! `ops::campaign`; a run's flock by `engine::run_lock`).
//!
//! ```text
//! <root>/                          $EXECTL_STATE_DIR, $XDG_STATE_HOME/exectl or ~/.local/state/exectl
//!   <target key>/<stack>/          one stack on one target (`local`, `ssh-USER@HOST-PORT`): stack_dir
//!     secrets.env                  its secrets, 0600 (secrets)
//!     exectl.lock                  who deploys, prepares or benches it now (engine::lock)
//!     exectl.readers/HOST-PID-N    each load running against it now (engine::lock::ReaderLock)
//!     bundle/                      the rendered files as deployed, exectl.lock.json the stack record (bundle, record)
//!     manifests/<pattern>/         accounts and projects for load and k6, pattern.json (manifests)
//!   runs/<RUN_ID>.json             run records of deploys (runs)
//!   benches/<RUN_ID>/              results.json, timeline.jsonl, report.html, or a link to --out (benches, bench_dir)
//!   sweeps/<RUN_ID>/               results.json, report.html, points/<bench run id>/ (each a bench folder), exectl.lock, or a link to --out (sweeps)
//!   campaigns/<RUN_ID>/            results.json, report.md, report.html, rows/NN-name/ (each a sweep folder), exectl.lock, or a link to --out (campaigns)
//! ```

pub mod bench_dir;
pub mod benches;
pub mod bundle;
pub mod campaigns;
pub mod manifests;
pub mod record;
pub mod runs;
pub mod secrets;
pub mod sweeps;

use std::path::{Path, PathBuf};

/// Where exectl keeps local state: $EXECTL_STATE_DIR, else $XDG_STATE_HOME/exectl, else ~/.local/state/exectl.
/// Commands call `checked_root` once first; this one is for paths derived after that check.
pub fn root() -> PathBuf {
    state_root_from(|n| std::env::var_os(n)).2
}

/// The state root, refused (exit 2) when relative (secrets would land wherever the command runs, e.g.
/// inside a git work tree), or when it is a file or lies under one (nothing could be kept there, and
/// nothing found: a list of runs there would say "none" about a folder that is not one).
pub fn checked_root() -> Result<PathBuf, exectl_core::error::UsageError> {
    let (var, value, root) = state_root_from(|n| std::env::var_os(n));
    let bad = |problem: String, fix: String| {
        exectl_core::error::UsageError::new(var, value.to_string_lossy(), problem, fix)
    };
    if root.is_relative() {
        return Err(bad(
            "a relative state folder would put the stacks' secrets below the current folder".into(),
            format!("set {var} to an absolute path (or unset it)"),
        ));
    }
    if let Some(file) = root.ancestors().find(|a| a.exists() && !a.is_dir()) {
        let problem = match file == root {
            true => format!("{} is a file, not a folder", root.display()),
            false => format!(
                "{} is a file: the state folder {} cannot be made under it",
                file.display(),
                root.display()
            ),
        };
        return Err(bad(
            problem,
            format!("set {var} to a folder (or to a path where one can be made)"),
        ));
    }
    Ok(root)
}

/// The variable that chose the state root, its value, and the root; pure over `var`.
fn state_root_from(
    var: impl Fn(&str) -> Option<std::ffi::OsString>,
) -> (&'static str, std::ffi::OsString, PathBuf) {
    let set = |n: &str| var(n).filter(|d| !d.is_empty());
    if let Some(d) = set("EXECTL_STATE_DIR") {
        return ("EXECTL_STATE_DIR", d.clone(), PathBuf::from(d));
    }
    if let Some(d) = set("XDG_STATE_HOME") {
        return ("XDG_STATE_HOME", d.clone(), PathBuf::from(d).join("exectl"));
    }
    let home = set("HOME").unwrap_or_else(|| "/root".into());
    (
        "HOME",
        home.clone(),
        PathBuf::from(home).join(".local/state/exectl"),
    )
}

/// The state folder of one stack on one target.
pub fn stack_dir(root: &Path, target_key: &str, stack: &str) -> PathBuf {
    root.join(target_key).join(stack)
}

/// The local copy of a stack's rendered bundle (what status, prepare, load and bench read).
pub fn bundle_dir(stack_dir: &Path) -> PathBuf {
    stack_dir.join("bundle")
}

/// The stack's secrets file (mode 0600).
pub fn secrets_file(stack_dir: &Path) -> PathBuf {
    stack_dir.join("secrets.env")
}

/// The stack's lock file.
pub fn lock_file(stack_dir: &Path) -> PathBuf {
    stack_dir.join("exectl.lock")
}

/// The stack's readers: one file per `load` running against it (a writer waits for none).
pub fn readers_dir(stack_dir: &Path) -> PathBuf {
    stack_dir.join("exectl.readers")
}

/// One reader's file in `readers_dir` (`n`: its number in its process).
pub fn reader_file(stack_dir: &Path, host: &str, pid: u32, n: u32) -> PathBuf {
    readers_dir(stack_dir).join(format!("{host}-{pid}-{n}"))
}

/// Deploys' run records.
pub fn runs_dir(root: &Path) -> PathBuf {
    root.join("runs")
}

/// Bench runs, one folder (or link) each.
pub fn benches_dir(root: &Path) -> PathBuf {
    root.join("benches")
}

/// Campaigns, one folder (or link) each.
pub fn campaigns_dir(root: &Path) -> PathBuf {
    root.join("campaigns")
}

/// Sweeps, one folder (or link) each.
pub fn sweeps_dir(root: &Path) -> PathBuf {
    root.join("sweeps")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_root_names_the_variable_that_chose_it() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |n: &str| {
                pairs
                    .iter()
                    .find(|(k, _)| *k == n)
                    .map(|(_, v)| std::ffi::OsString::from(v))
            }
        };
        let (var, _, root) =
            state_root_from(env(&[("EXECTL_STATE_DIR", "rel/dir"), ("HOME", "/h")]));
        assert_eq!((var, root), ("EXECTL_STATE_DIR", PathBuf::from("rel/dir")));
        let (var, value, root) =
            state_root_from(env(&[("EXECTL_STATE_DIR", ""), ("XDG_STATE_HOME", "x")]));
        assert_eq!((var, root), ("XDG_STATE_HOME", PathBuf::from("x/exectl")));
        assert_eq!(value, "x");
        let (var, _, root) = state_root_from(env(&[("HOME", "/h")]));
        assert_eq!(
            (var, root),
            ("HOME", PathBuf::from("/h/.local/state/exectl"))
        );
    }
}
