//! Sweeps in the state folder, by run id: `<state>/sweeps/RUN_ID/` holds a sweep's results.json, its
//! report.html and `points/<bench run id>/` (each point's bench folder), or, for `sweep --out DIR`, is a
//! symlink to DIR, so that `sweep --resume RUN_ID` finds it wherever it wrote.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use exectl_core::error::UsageError;
use exectl_core::sweep::report;
use exectl_core::sweep::results::{SweepResults, POINTS, REPORT, RESULTS, SCHEMA};

use super::benches::Shown;
use super::sweeps_dir;

/// A sweep's folder.
#[derive(Debug, Clone)]
pub struct SweepDir {
    pub path: PathBuf,
}

impl SweepDir {
    /// A new sweep's folder, checked: not a file, no sweep in it yet, writable (exit 2 naming `field`).
    pub fn check(path: &Path, field: &str, value: &str) -> Result<SweepDir, UsageError> {
        super::bench_dir::fresh_run_folder(
            path,
            field,
            value,
            "sweep",
            "the sweep's results.json, report.html and points/",
        )?;
        Ok(SweepDir {
            path: path.to_path_buf(),
        })
    }

    /// Made, and recorded under its run id when it is an `--out` folder.
    pub fn create(&self, run_id: &str) -> Result<()> {
        std::fs::create_dir_all(self.path.join(POINTS))
            .with_context(|| format!("creating {}", self.path.display()))?;
        super::benches::record_out_in(&sweeps_dir(&super::root()), run_id, &self.path)
    }

    /// Its results.json.
    pub fn results(&self) -> PathBuf {
        self.path.join(RESULTS)
    }

    /// Its results were written (the sweep got past its first deploy).
    pub fn begun(&self) -> bool {
        self.results().exists()
    }

    /// The folder of a point's bench `bench_id`.
    pub fn point_dir(&self, bench_id: &str) -> PathBuf {
        self.path.join(POINTS).join(bench_id)
    }

    /// results.json and report.html, each written whole.
    pub fn save(&self, r: &SweepResults) -> Result<()> {
        let json = r.to_json()?;
        crate::shell::atomic::write(&self.path.join(RESULTS), json.as_bytes(), 0o644)?;
        let html = report::render(r).map_err(|e| anyhow::anyhow!(e))?;
        crate::shell::atomic::write(&self.path.join(REPORT), html.as_bytes(), 0o644)
    }

    pub fn report(&self) -> PathBuf {
        self.path.join(REPORT)
    }
}

/// The folder of sweep `run_id` in the state folder `root` (its `--out` folder when it was given one),
/// if it has one.
pub fn folder(root: &Path, run_id: &str) -> Option<PathBuf> {
    super::runs::check_id(run_id).ok()?;
    let entry = sweeps_dir(root).join(run_id);
    let path = std::fs::read_link(&entry).unwrap_or(entry);
    path.is_dir().then_some(path)
}

/// What to show for a sweep's state, on this machine, where it ran: a results.json still `running` whose
/// process is gone, or is another that took its pid (one started after the sweep's process began it, or
/// its resume), was killed. The one rule for `runs` and for `--resume`'s "still running".
pub fn shown(r: &SweepResults) -> Shown {
    Shown::now_of(
        r.state,
        r.pid,
        r.pid_since_unix_s.unwrap_or(r.started_unix_s),
    )
}

/// A sweep of the state folder, as `runs` lists and shows it.
#[derive(Debug, Clone)]
pub struct SweepRun {
    pub id: String,
    pub dir: PathBuf,
    pub results: SweepResults,
}

/// Sweep `id` of the state folder `root`: None when there is none; an error naming its results.json
/// when that cannot be read as a sweep's.
pub fn load(root: &Path, id: &str) -> Result<Option<SweepRun>> {
    let Some(dir) = folder(root, id) else {
        return Ok(None);
    };
    let file = dir.join(RESULTS);
    if !file.exists() {
        return Ok(None);
    }
    let text = crate::shell::user_file::read_text(&file, crate::shell::user_file::RECORD).map_err(
        |u| {
            UsageError::new(
                "run id",
                id,
                u.problem,
                "fix or remove that file (`exectl runs list` shows every unreadable sweep)",
            )
        },
    )?;
    if let Some(problem) = other_layout(&file, &text) {
        return Err(UsageError::new(
            "run id",
            id,
            problem,
            "read it with the exectl that wrote it",
        )
        .into());
    }
    let results = serde_json::from_str(&text).map_err(|e| {
        UsageError::new(
            "run id",
            id,
            format!(
                "{} is not a sweep's results of this exectl: {e}",
                file.display()
            ),
            "read it with the exectl that wrote it, or remove that folder",
        )
    })?;
    Ok(Some(SweepRun {
        id: id.to_string(),
        dir,
        results,
    }))
}

/// Every sweep with results, oldest first; those whose results cannot be read, as (id, why).
pub fn list(root: &Path) -> (Vec<SweepRun>, Vec<(String, String)>) {
    let (mut found, mut broken) = (Vec::new(), Vec::new());
    for e in std::fs::read_dir(sweeps_dir(root))
        .into_iter()
        .flatten()
        .flatten()
    {
        let id = e.file_name().to_string_lossy().into_owned();
        match load(root, &id) {
            Ok(Some(s)) => found.push(s),
            Ok(None) => {}
            Err(e) => broken.push((id, format!("{e:#}"))),
        }
    }
    found.sort_by(|a, b| (a.results.started_unix_s, &a.id).cmp(&(b.results.started_unix_s, &b.id)));
    broken.sort();
    (found, broken)
}

/// A sweep's results.json `file` of a layout (`schema`) not this exectl's, said: read before its fields,
/// which another layout lacks or holds otherwise (a schema-1 file has no `started_in`).
fn other_layout(file: &Path, text: &str) -> Option<String> {
    let schema = serde_json::from_str::<serde_json::Value>(text)
        .ok()
        .and_then(|v| v["schema"].as_u64())
        .filter(|s| *s != SCHEMA as u64)?;
    Some(format!(
        "{} has layout {schema} and this exectl reads {SCHEMA}",
        file.display()
    ))
}

/// The sweep `run_id` of the state folder, to go on with (`--resume`): its folder and its results.
pub fn find(run_id: &str) -> Result<(SweepDir, SweepResults), UsageError> {
    super::runs::check_id(run_id).map_err(|_| not_found(run_id, "not a run id"))?;
    let entry = sweeps_dir(&super::root()).join(run_id);
    let path = std::fs::read_link(&entry).unwrap_or(entry);
    let file = path.join(RESULTS);
    let text = crate::shell::user_file::read_text(&file, crate::shell::user_file::RECORD)
        .map_err(|u| not_found(run_id, &u.problem))?;
    if let Some(problem) = other_layout(&file, &text) {
        return Err(UsageError::new(
            "--resume",
            run_id,
            problem,
            "resume it with the exectl that began it",
        ));
    }
    let r: SweepResults = serde_json::from_str(&text).map_err(|e| {
        not_found(
            run_id,
            &format!("{} is not a sweep's results: {e}", file.display()),
        )
    })?;
    Ok((SweepDir { path }, r))
}

fn not_found(run_id: &str, problem: &str) -> UsageError {
    UsageError::new(
        "--resume",
        run_id,
        problem,
        "give the run id of a sweep this machine ran (its folder is under STATE/sweeps)",
    )
}
