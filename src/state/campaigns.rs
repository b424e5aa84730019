//! Campaigns in the state folder, by run id: `<state>/campaigns/RUN_ID/` holds a campaign's
//! results.json, report.html, report.md and `rows/NN-name/` (each row's sweep folder, its benches in
//! its `points/`), or, for `campaign --out DIR`, is a symlink to DIR, so that `--resume RUN_ID` finds it
//! wherever it wrote.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use exectl_core::campaign::results::{CampaignResults, SCHEMA};
use exectl_core::error::UsageError;

use super::campaigns_dir;

pub const RESULTS: &str = "results.json";
pub const REPORT: &str = "report.html";
pub const REPORT_MD: &str = "report.md";

/// A campaign's folder.
#[derive(Debug, Clone)]
pub struct CampaignDir {
    pub path: PathBuf,
}

impl CampaignDir {
    /// A new campaign's folder, checked: not a file, no campaign in it yet, writable (exit 2 naming
    /// `field`).
    pub fn check(path: &Path, field: &str, value: &str) -> Result<CampaignDir, UsageError> {
        super::bench_dir::fresh_run_folder(
            path,
            field,
            value,
            "campaign",
            "the campaign's results.json, reports and rows/",
        )?;
        Ok(CampaignDir {
            path: path.to_path_buf(),
        })
    }

    /// Made, and recorded under its run id when it is an `--out` folder.
    pub fn create(&self, run_id: &str) -> Result<()> {
        std::fs::create_dir_all(self.path.join("rows"))
            .with_context(|| format!("creating {}", self.path.display()))?;
        super::benches::record_out_in(&campaigns_dir(&super::root()), run_id, &self.path)
    }

    pub fn results(&self) -> PathBuf {
        self.path.join(RESULTS)
    }

    /// results.json, written whole and sealed.
    pub fn save(&self, r: &CampaignResults) -> Result<()> {
        let json = r.to_json()?;
        crate::shell::atomic::write(&self.results(), json.as_bytes(), 0o644)
    }

    /// results.json, then report.md and report.html, each written whole; results.json is written
    /// even when the HTML could not be made (that error is returned after it).
    pub fn save_files(&self, f: &exectl_core::campaign::row::Files) -> Result<()> {
        crate::shell::atomic::write(&self.results(), f.results_json.as_bytes(), 0o644)?;
        let html = f.report_html.as_ref().map_err(|e| anyhow::anyhow!("{e}"))?;
        crate::shell::atomic::write(&self.path.join(REPORT_MD), f.report_md.as_bytes(), 0o644)?;
        crate::shell::atomic::write(&self.path.join(REPORT), html.as_bytes(), 0o644)
    }
}

/// The campaign `run_id` of the state folder, to go on with (`--resume`): its folder and results.
pub fn find(run_id: &str) -> Result<(CampaignDir, CampaignResults), UsageError> {
    let not_found = |problem: &str| {
        UsageError::new(
            "--resume",
            run_id,
            problem,
            "give the run id of a campaign this machine ran (its folder is under STATE/campaigns)",
        )
    };
    super::runs::check_id(run_id).map_err(|_| not_found("not a run id"))?;
    let entry = campaigns_dir(&super::root()).join(run_id);
    let path = std::fs::read_link(&entry).unwrap_or(entry);
    let file = path.join(RESULTS);
    let text = crate::shell::user_file::read_text(&file, crate::shell::user_file::RECORD)
        .map_err(|u| not_found(&u.problem))?;
    let r: CampaignResults = serde_json::from_str(&text).map_err(|e| {
        not_found(&format!(
            "{} is not a campaign's results: {e}",
            file.display()
        ))
    })?;
    if r.schema != SCHEMA {
        return Err(UsageError::new(
            "--resume",
            run_id,
            format!(
                "{} is of schema {} (exectl {}); this exectl reads {SCHEMA}, sealed, with each setting's \
                 digest: it cannot tell whether that file's figures or the campaign's inputs changed since",
                file.display(),
                r.schema,
                r.exectl_version
            ),
            format!(
                "resume it with exectl {}, or run the campaign again: exectl campaign {}",
                r.exectl_version, r.file
            ),
        ));
    }
    Ok((CampaignDir { path }, r))
}

/// What a resume of `r` (read from `dir`) refuses before anything runs (exit 2, naming the file):
/// results.json changed since the campaign wrote it (a figure typed in would be reported as
/// measured), or a folder its report cites gone (its figures would cite nothing). Either is the
/// user's to put back: exectl cannot tell which figures are still true.
pub fn resumable(dir: &CampaignDir, r: &CampaignResults) -> Result<(), UsageError> {
    use exectl_core::seal::Sealed;
    let edited = r.edited();
    if !edited.is_empty() {
        return Err(UsageError::new(
            "--resume",
            &r.run_id,
            format!(
                "{} was changed after the campaign wrote it: {} differ{} from what it recorded",
                dir.results().display(),
                edited.join(", "),
                if edited.len() == 1 { "s" } else { "" }
            ),
            "put the file back as the campaign wrote it, or start a new campaign (an edited campaign is not resumed)",
        ));
    }
    if let Some((row, cited)) = r
        .cited()
        .into_iter()
        .find(|(_, d)| !dir.path.join(d).is_dir())
    {
        return Err(UsageError::new(
            "--resume",
            &r.run_id,
            format!(
                "{} is gone: row {} ({}) cites it as its evidence",
                dir.path.join(cited).display(),
                row.index,
                row.name
            ),
            "put the folder back, or start a new campaign (its report would link evidence that is not there)",
        ));
    }
    Ok(())
}
