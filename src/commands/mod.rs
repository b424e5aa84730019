//! One module per subcommand: each loads what it needs, calls the pure core and prints.

pub mod bench;
pub mod deploy;
pub mod doctor;
pub mod host;
pub mod load;
pub mod prepare;
pub mod render;
pub mod report;
pub mod runs;
pub mod status;
pub mod teardown;
pub mod validate;

use crate::cli::SpecArgs;
use anyhow::Result;
use exectl_core::error::UsageError;
use exectl_core::render::Templates;
use exectl_core::spec::{self, Spec};
use std::path::{Path, PathBuf};

/// exectl.yaml, then flags, then the images file: the validated spec.
pub fn load_spec(args: &SpecArgs) -> Result<Spec> {
    spec_from(read_spec_file(args.config.as_deref())?, args)
}

/// The validated spec from an exectl.yaml already read, overridden by the flags and the images file.
pub fn spec_from(file: spec::SpecInput, args: &SpecArgs) -> Result<Spec> {
    let mut flags = args.to_input();
    if let Some(path) = &args.images {
        flags.images = read_images_file(path)?;
    }
    Ok(spec::resolve(file.overridden_by(flags))?)
}

/// Read exectl.yaml: the given path (must exist), else ./exectl.yaml if present, else nothing.
pub fn read_spec_file(explicit: Option<&Path>) -> Result<spec::SpecInput, UsageError> {
    let path = match explicit {
        Some(p) => p.to_path_buf(),
        None => {
            let p = PathBuf::from("exectl.yaml");
            if !p.exists() {
                return Ok(spec::SpecInput::default());
            }
            p
        }
    };
    let text = std::fs::read_to_string(&path).map_err(|e| {
        UsageError::new(
            "--config",
            path.display(),
            format!("cannot read it: {e}"),
            "give the path of a readable exectl.yaml",
        )
    })?;
    spec::parse_spec_file(&path, &text)
}

/// Read the images file of `--images FILE`.
fn read_images_file(path: &Path) -> Result<Vec<(String, spec::Raw)>, UsageError> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        UsageError::new(
            "--images",
            path.display(),
            format!("cannot read it: {e}"),
            "give the path of a readable images file",
        )
    })?;
    spec::parse_images_file(path, &text)
}

pub fn load_templates(args: &SpecArgs) -> Result<Templates> {
    match &args.templates {
        Some(dir) => Ok(crate::cli::templates::with_overrides(dir)?),
        None => Ok(Templates::embedded()),
    }
}

/// Target key for the local engine's state.
pub const LOCAL_TARGET: &str = crate::sut::LOCAL_KEY;

/// The target named by the flags, EXECTL_TARGET or ./exectl.yaml's `target:` (commands without a spec).
pub fn target_spec(
    args: &crate::cli::TargetArgs,
) -> Result<crate::sut::TargetSpec, exectl_core::error::UsageError> {
    crate::state::checked_root()?;
    let file = read_spec_file(None)?;
    crate::sut::resolve(args, file.target.as_ref())
}

/// A spec-driven command's exectl.yaml (read once) and its target, connected: flags, EXECTL_TARGET,
/// then the file's `target:`.
pub async fn connect_with_spec(
    args: &crate::cli::TargetArgs,
    spec_args: &SpecArgs,
) -> Result<(spec::SpecInput, crate::sut::Target)> {
    crate::state::checked_root()?;
    let file = read_spec_file(spec_args.config.as_deref())?;
    let target = crate::sut::resolve(args, file.target.as_ref())?;
    // Every bad value is refused before the connection (exit 2, the engine untouched).
    spec_from(file.clone(), spec_args)?;
    Ok((file, crate::sut::Target::connect(&target).await?))
}

/// Connect to the target named by the flags (see `target_spec`).
pub async fn connect(args: &crate::cli::TargetArgs) -> Result<crate::sut::Target> {
    crate::sut::Target::connect(&target_spec(args)?).await
}

/// `--run-id` checked (a run id names a folder or a record: letters, digits, '.', '_' and '-', at most
/// 100, not starting with '.'), or `default` of the current unix time when none was given.
pub fn run_id(
    given: Option<&str>,
    example: &str,
    default: impl FnOnce(u64) -> String,
) -> Result<String, UsageError> {
    let Some(id) = given else {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        return Ok(default(now));
    };
    let ok = !id.is_empty()
        && id.len() <= 100
        && !id.starts_with('.')
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c));
    if !ok {
        return Err(UsageError::new(
            "--run-id",
            id,
            "only letters, digits, '.', '_' and '-' (at most 100, not starting with '.')",
            format!("e.g. --run-id {example}"),
        ));
    }
    Ok(id.to_string())
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_run_id_is_a_safe_folder_name_or_the_default() {
        let default = |now: u64| format!("X-{now}");
        assert_eq!(
            super::run_id(Some("E7-idle_1.a"), "E", default).unwrap(),
            "E7-idle_1.a"
        );
        let id = super::run_id(None, "E", default).unwrap();
        let now: u64 = id.strip_prefix("X-").unwrap().parse().unwrap();
        assert!(now > 1_700_000_000, "{id}");
        for bad in ["", ".hidden", "..", "a b", "a/b", &"x".repeat(101)] {
            let e = super::run_id(Some(bad), "B-1", default).unwrap_err();
            assert_eq!(e.field, "--run-id", "{bad:?}");
            assert!(e.to_string().contains("e.g. --run-id B-1"), "{e}");
        }
    }
}
