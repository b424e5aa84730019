//! A bench's folder: results.json (written before level 1, after every level and at the end),
//! timeline.jsonl (appended by the sampler as each sample arrives, so a bench killed with -9 keeps every
//! sample taken) and report.html (rebuilt from those two). Checked and opened before any load, so a bad
//! `--out` is refused before a single connection.

use std::fs::File;
use std::io::{ErrorKind, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use exectl_core::bench::results::{REPORT, RESULTS, TIMELINE};
use exectl_core::bench::{report, Results, RunState, Sample};
use exectl_core::error::UsageError;

pub struct BenchDir {
    pub path: PathBuf,
}

impl BenchDir {
    /// The folder checked, and nothing made yet: refused (naming `field` and `value`, exit 2) when it is
    /// a file, already holds a bench, or could not be created and written (checked on it, or on the
    /// folder it would be made in).
    pub fn check(path: &Path, field: &str, value: &str) -> Result<BenchDir, UsageError> {
        if path.join(RESULTS).exists() || path.join(TIMELINE).exists() {
            return Err(UsageError::new(
                field,
                value,
                format!("a bench already wrote its results in {}", path.display()),
                "give another --run-id (or --out), or remove that folder",
            ));
        }
        let holds = "the bench's results.json, timeline.jsonl and report.html";
        nothing_in(path, field, value, holds)?;
        writable_folder(path, field, value, holds)?;
        Ok(BenchDir {
            path: path.to_path_buf(),
        })
    }

    /// The folder made, and timeline.jsonl in it, new, for the sampler to append to.
    pub fn open_timeline(&self) -> Result<File> {
        std::fs::create_dir_all(&self.path)
            .with_context(|| format!("creating {}", self.path.display()))?;
        let path = self.path.join(TIMELINE);
        std::fs::OpenOptions::new()
            .append(true)
            .create_new(true)
            .open(&path)
            .with_context(|| format!("creating {}", path.display()))
    }

    /// results.json and report.html, each written whole (the timeline is the sampler's to append).
    pub fn save(&self, r: &Results, samples: &[Sample]) -> Result<()> {
        let mut json = serde_json::to_string_pretty(r)?;
        json.push('\n');
        crate::shell::atomic::write(&self.path.join(RESULTS), json.as_bytes(), 0o644)?;
        let html = report::render(r, samples).map_err(|e| anyhow::anyhow!(e))?;
        crate::shell::atomic::write(&self.path.join(REPORT), html.as_bytes(), 0o644)
    }
}

/// A new run's folder (a sweep's or a campaign's, `kind`) for `holds`: refused (exit 2, naming `field`
/// and `value`) when a run of that kind already wrote its results.json there (go on with it by
/// `--resume`), when it holds anything else (see [`nothing_in`]), or as [`writable_folder`] refuses it.
pub fn fresh_run_folder(
    path: &Path,
    field: &str,
    value: &str,
    kind: &str,
    holds: &str,
) -> Result<(), UsageError> {
    if path.join(RESULTS).exists() {
        return Err(UsageError::new(
            field,
            value,
            format!("a {kind} already wrote its results in {}", path.display()),
            "give another --run-id (or --out), remove that folder, or go on with it: --resume RUN_ID",
        ));
    }
    nothing_in(path, field, value, holds)?;
    writable_folder(path, field, value, holds)
}

/// A new run's folder must hold nothing (an empty folder in it is nothing): a run writes its files
/// over the user's own (`campaign --out DIR` replaced a report.md there) and beside them, as if they
/// were its own. Refused naming a few of them; a run of its own is gone on with by `--resume`, which
/// does not come here.
pub fn nothing_in(path: &Path, field: &str, value: &str, holds: &str) -> Result<(), UsageError> {
    let bad = |problem: String| {
        UsageError::new(
            field,
            value,
            problem,
            format!("give a new or empty folder for {holds}, or move what it holds elsewhere"),
        )
    };
    let entries = match std::fs::read_dir(path) {
        Ok(entries) => entries,
        // None yet (made later), or a file (`writable_folder` says so).
        Err(e) if matches!(e.kind(), ErrorKind::NotFound | ErrorKind::NotADirectory) => {
            return Ok(())
        }
        Err(e) => return Err(bad(format!("cannot list {}: {e}", path.display()))),
    };
    let mut held: Vec<String> = entries
        .flatten()
        .filter(|e| !empty_folder(&e.path()))
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    if held.is_empty() {
        return Ok(());
    }
    held.sort();
    let n = held.len();
    let shown = match n {
        1..=3 => held.join(", "),
        _ => format!("{} and {} more", held[..3].join(", "), n - 3),
    };
    Err(bad(format!(
        "{} is not empty: it holds {shown}, which a new run would write over or beside",
        path.display()
    )))
}

/// A folder (not a link to one) with nothing in it.
fn empty_folder(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.is_dir())
        && std::fs::read_dir(path).is_ok_and(|mut e| e.next().is_none())
}

/// A folder for `holds` (what will be written there): refused (naming `field` and `value`, exit 2)
/// when it is a file, or could not be created and written (checked on it, or on the folder it would be
/// made in). Nothing is made.
pub fn writable_folder(
    path: &Path,
    field: &str,
    value: &str,
    holds: &str,
) -> Result<(), UsageError> {
    let bad = |problem: String, fix: &str| UsageError::new(field, value, problem, fix);
    if path.exists() && !path.is_dir() {
        return Err(bad(
            format!("{} is a file, not a folder", path.display()),
            &format!("give a folder for {holds}"),
        ));
    }
    let existing = path
        .ancestors()
        .find(|a| a.exists())
        .unwrap_or(Path::new("/"));
    if !existing.is_dir() {
        return Err(bad(
            format!(
                "{} is a file: no folder can be made under it",
                existing.display()
            ),
            "give a folder path",
        ));
    }
    writable(existing, bad, "give a folder you can write")
}

/// `exectl report --out FILE`, checked before anything is read or written: a file path (not a folder)
/// in a folder that exists and can be written. No folder is made for it: a typo in a path must not
/// leave folders the user never named (`/nonexistent/x.html` made `/nonexistent/`).
pub fn check_report_out(path: &Path) -> Result<(), UsageError> {
    let bad = |problem: String, fix: &str| UsageError::new("--out", path.display(), problem, fix);
    if path.is_dir() {
        return Err(bad(
            format!("{} is a folder; --out is the report's file", path.display()),
            "give a file path, e.g. --out DIR/report.html",
        ));
    }
    let folder = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    if !folder.is_dir() {
        let what = match folder.exists() {
            true => "is not a folder",
            false => "does not exist (exectl makes no folder for --out)",
        };
        return Err(bad(
            format!("{} {what}", folder.display()),
            "give a file in an existing folder, or create the folder first",
        ));
    }
    writable(folder, bad, "give a file in a folder you can write")
}

/// `folder` takes a new file (a temporary one, gone at once), else `bad`'s refusal with `fix`.
fn writable(
    folder: &Path,
    bad: impl Fn(String, &str) -> UsageError,
    fix: &str,
) -> Result<(), UsageError> {
    tempfile::tempfile_in(folder)
        .map(drop)
        .map_err(|e| bad(format!("cannot write in {}: {e}", folder.display()), fix))
}

/// Append one sample as a line of the timeline (written at once: a process killed later keeps it).
pub fn append(timeline: &mut File, s: &Sample) -> Result<()> {
    let mut line = serde_json::to_string(s)?;
    line.push('\n');
    timeline
        .write_all(line.as_bytes())
        .context("appending to timeline.jsonl")
}

/// A bench folder read back: its results and its timeline. A line of the timeline that is not a sample
/// is named by its number; a last line cut short (the process was killed while writing it) is left out.
/// A timeline that is missing, cannot be read, is not text, or holds fewer samples than the finished
/// bench counted is refused naming the file and why: a report drawn from it would say "not sampled"
/// about a bench that was. (A bench writes its timeline before level 1: one that has sampled nothing
/// yet, or was killed before its first sample, has an empty one, and its charts say so.)
pub fn read(dir: &Path, run: &str) -> Result<(Results, Vec<Sample>), UsageError> {
    let results_path = dir.join(RESULTS);
    let text = crate::shell::user_file::read_text(&results_path, crate::shell::user_file::RECORD)
        .map_err(|u| {
        UsageError::new(
            "RUN_ID",
            run,
            u.problem,
            "give a bench run id from `exectl runs list`",
        )
    })?;
    let results: Results = serde_json::from_str(&text).map_err(|e| {
        UsageError::new(
            "RUN_ID",
            run,
            format!("{} is not a bench's results: {e}", results_path.display()),
            "re-run the bench",
        )
    })?;
    let path = dir.join(TIMELINE);
    let samples = parse_timeline(&read_timeline(&path, run)?, &path, run)?;
    let counted = results.sampler.samples;
    // Counted once the bench is over (complete or interrupted); a running (or killed) one counts 0.
    if results.state != RunState::Running && (samples.len() as u64) < counted {
        return Err(timeline_error(
            &path,
            run,
            format!(
                "holds {} samples where results.json counts {counted}: it was cut short or replaced",
                samples.len()
            ),
        ));
    }
    Ok((results, samples))
}

fn timeline_error(path: &Path, run: &str, why: String) -> UsageError {
    UsageError::new(
        "RUN_ID",
        run,
        format!("timeline unreadable: {} {why}", path.display()),
        format!("restore it from a copy (the report's charts are drawn from it); the verdict alone is in `exectl runs show {run}`"),
    )
}

/// The timeline's text; missing, unreadable, not a regular file, too large or not text are refused,
/// named.
fn read_timeline(path: &Path, run: &str) -> Result<String, UsageError> {
    let bytes =
        crate::shell::user_file::read(path, crate::shell::user_file::TIMELINE).map_err(|u| {
            let why = match u.missing {
                true => "is missing (a bench writes it before its first level)".to_string(),
                false => format!("cannot be read: {u}"),
            };
            timeline_error(path, run, why)
        })?;
    String::from_utf8(bytes).map_err(|e| {
        timeline_error(
            path,
            run,
            format!(
                "is not text (byte {} is not UTF-8): not a timeline of samples",
                e.utf8_error().valid_up_to()
            ),
        )
    })
}

fn parse_timeline(text: &str, path: &Path, run: &str) -> Result<Vec<Sample>, UsageError> {
    let complete = text.ends_with('\n');
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::with_capacity(lines.len());
    for (i, line) in lines.iter().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str(line) {
            Ok(s) => out.push(s),
            Err(_) if i + 1 == lines.len() && !complete => break,
            Err(e) => {
                return Err(UsageError::new(
                    "RUN_ID",
                    run,
                    format!("{} line {}: not a sample ({e})", path.display(), i + 1),
                    "fix or remove that line (each line is one JSON sample), then run exectl report again",
                ))
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_folder_that_holds_a_run_is_refused_naming_its_kind_and_the_resume() {
        let d = tempfile::tempdir().unwrap();
        let fresh = d.path().join("S-1");
        fresh_run_folder(&fresh, "--run-id", "S-1", "sweep", "its files").unwrap();
        std::fs::create_dir_all(&fresh).unwrap();
        std::fs::write(fresh.join(RESULTS), "{}").unwrap();
        let e = fresh_run_folder(&fresh, "--run-id", "S-1", "campaign", "its files").unwrap_err();
        assert_eq!((e.field.as_str(), e.value.as_str()), ("--run-id", "S-1"));
        assert!(
            e.problem
                .starts_with("a campaign already wrote its results in "),
            "{e:?}"
        );
        assert!(e.fix.contains("--resume RUN_ID"), "{e:?}");
        let file = d.path().join("f");
        std::fs::write(&file, "").unwrap();
        let e = fresh_run_folder(&file, "--out", "f", "sweep", "its files").unwrap_err();
        assert!(e.problem.contains("is a file"), "{e:?}");
    }

    /// Issue #50, item 1: a folder holding the user's own files is no new run's, whatever its kind;
    /// one holding only empty folders is.
    #[test]
    fn a_folder_holding_anything_but_empty_folders_is_no_new_runs() {
        let d = tempfile::tempdir().unwrap();
        let out = d.path().join("study");
        std::fs::create_dir_all(out.join("rows")).unwrap();
        fresh_run_folder(&out, "--out", "study", "campaign", "its files").unwrap();
        BenchDir::check(&out, "--out", "study").unwrap();
        for f in ["report.md", "b", "c", "d"] {
            std::fs::write(out.join(f), "mine").unwrap();
        }
        let e = fresh_run_folder(&out, "--out", "study", "campaign", "its files").unwrap_err();
        assert_eq!((e.field.as_str(), e.value.as_str()), ("--out", "study"));
        assert!(
            e.problem.ends_with("is not empty: it holds b, c, d and 1 more, which a new run would write over or beside"),
            "{e}"
        );
        assert!(
            e.fix
                .starts_with("give a new or empty folder for its files"),
            "{e}"
        );
        let e = BenchDir::check(&out, "--out", "study").err().unwrap();
        assert!(e.problem.contains("is not empty"), "{e}");
        assert_eq!(
            std::fs::read_to_string(out.join("report.md")).unwrap(),
            "mine"
        );
    }

    /// Issue #50, item 14: `exectl report` reads a bench's results and timeline as files a user could
    /// have replaced: a FIFO in place of the timeline is refused at once, not waited on.
    #[test]
    fn a_timeline_that_is_no_regular_file_is_refused_at_once() {
        let d = tempfile::tempdir().unwrap();
        let timeline = d.path().join(TIMELINE);
        let c = std::ffi::CString::new(timeline.to_str().unwrap()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let e = read_timeline(&timeline, "B").unwrap_err();
        assert_eq!(e.field, "RUN_ID");
        assert!(e.problem.contains("is a FIFO (a named pipe)"), "{e}");
    }

    #[test]
    fn a_bad_line_is_named_and_a_cut_last_line_is_left_out() {
        let good = serde_json::to_string(&Sample::default()).unwrap();
        let p = Path::new("/b/timeline.jsonl");
        let ok = parse_timeline(&format!("{good}\n{good}\n"), p, "B").unwrap();
        assert_eq!(ok.len(), 2);
        let killed = parse_timeline(&format!("{good}\n{{\"t_ms\": 12"), p, "B").unwrap();
        assert_eq!(killed.len(), 1, "a kill -9 mid-line loses that line only");
        let e = parse_timeline(&format!("{good}\nnot json\n{good}\n"), p, "B").unwrap_err();
        assert_eq!(e.field, "RUN_ID");
        assert!(
            e.problem
                .starts_with("/b/timeline.jsonl line 2: not a sample"),
            "{e}"
        );
    }

    #[test]
    fn a_file_or_a_used_folder_is_refused_before_anything_is_written() {
        let d = tempfile::tempdir().unwrap();
        let file = d.path().join("passwd");
        std::fs::write(&file, "root:x:0:0\n").unwrap();
        let e = BenchDir::check(&file, "--out", "passwd").err().unwrap();
        assert!(e.problem.contains("is a file, not a folder"), "{e}");
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "root:x:0:0\n");
        let under = BenchDir::check(&file.join("b1"), "--out", "passwd/b1")
            .err()
            .unwrap();
        assert!(
            under.problem.contains("no folder can be made under it"),
            "{under}"
        );
        let dir = d.path().join("b1");
        let b = BenchDir::check(&dir, "--out", "b1").unwrap();
        assert!(!dir.exists(), "checked, nothing made");
        let mut t = b.open_timeline().unwrap();
        append(&mut t, &Sample::default()).unwrap();
        let again = BenchDir::check(&dir, "--out", "b1").err().unwrap();
        assert!(again.problem.contains("already wrote"), "{again}");
    }
}
