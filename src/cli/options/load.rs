//! `exectl load`'s flags as the library's `LoadRequest` (`ops::load_plan` plans the run from it).

use crate::cli::LoadArgs;
use crate::ops::load_plan::LoadRequest;
use crate::ops::values::count_flag;
use exectl_core::bench::settings::{BenchInput, MAX_USERS};
use exectl_core::error::UsageError;
use std::path::Path;

/// `exectl load`'s flags, each workload value read by its bench setting (exit 2 naming the flag).
pub fn request(a: &LoadArgs) -> Result<LoadRequest, UsageError> {
    // --users first, as before: every numeric flag is read before anything else is.
    if let Some(u) = &a.users {
        count_flag("--users", u, 1, MAX_USERS)?;
    }
    // The scenario is load's positional argument, not a flag.
    let mut input = BenchInput::default();
    input
        .set("scenario", &a.scenario)
        .map_err(|i| UsageError::new("scenario", &a.scenario, i.problem, i.fix))?;
    let input = input.over(&a.workload.0.input()?);
    Ok(LoadRequest {
        target: a.target.flags(),
        input,
        stack: a.stack.clone(),
        url: a.url.clone(),
        host_header: a.host_header.clone(),
        manifest: a.manifest.clone(),
        users: a.users.clone(),
        reconnect: a.reconnect,
        run_id: a.run_id.clone(),
        quiet: a.quiet,
    })
}

pub fn check_out(path: &Path) -> Result<(), UsageError> {
    std::fs::File::create(path).map(drop).map_err(|e| {
        UsageError::new(
            "--out",
            path.display(),
            format!("cannot write: {e}"),
            "give a writable file path",
        )
    })
}
