//! `exectl report RUN_ID [--from DIR] [--out FILE]`: the HTML again, from results.json and the timeline
//! alone — after a bench that was killed too (its results.json still says running: the report says
//! interrupted, and draws every sample the timeline kept). A timeline that is missing or unreadable,
//! and an `--out` that is a folder or in none, are refused (exit 2), nothing written.

use std::path::Path;

use anyhow::Result;

use crate::state::bench_dir as files;
use exectl_core::bench::results::REPORT;
use exectl_core::bench::{report, RunState};
use exectl_core::error::{exit, UsageError};

pub fn run(run: &str, from: Option<&Path>, out: Option<&Path>) -> Result<i32> {
    crate::state::runs::check_id(run)?;
    if let Some(out) = out {
        files::check_report_out(out)?;
    }
    let dir = match from {
        Some(d) => d.to_path_buf(),
        None => crate::state::benches_dir(&crate::state::root()).join(run),
    };
    let (mut results, samples) = files::read(&dir, run)?;
    if results.run_id != run {
        return Err(UsageError::new(
            "--from",
            dir.display(),
            format!("that folder holds bench {}, not {run}", results.run_id),
            format!(
                "give the folder of bench {run}, or run `exectl report {} --from {}`",
                results.run_id,
                dir.display()
            ),
        )
        .into());
    }
    if crate::state::benches::Shown::now(&results) == crate::state::benches::Shown::Killed {
        // Killed (kill -9, a crash): what it wrote is all there is. Said as `runs list` says it.
        results.state = RunState::Interrupted;
    }
    let html = report::render(&results, &samples).map_err(|e| anyhow::anyhow!(e))?;
    let out = out
        .map(Path::to_path_buf)
        .unwrap_or_else(|| dir.join(REPORT));
    crate::shell::atomic::write(&out, html.as_bytes(), 0o644)?;
    println!("{}", out.display());
    Ok(exit::OK)
}
