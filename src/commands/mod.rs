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
pub mod sweep;
pub mod teardown;
pub mod validate;

use crate::cli::spec::SpecArgs;
use crate::cli::target::TargetArgs;
use anyhow::Result;
use exectl_core::spec;

/// Target key for the local engine's state.
pub const LOCAL_TARGET: &str = crate::sut::LOCAL_KEY;

/// A spec-driven command's spec (exectl.yaml read once, the flags over it) and its target, connected:
/// flags, EXECTL_TARGET, then the file's `target:`.
pub async fn connect_with_spec(
    args: &TargetArgs,
    spec_args: &SpecArgs,
) -> Result<(spec::Spec, crate::sut::Target)> {
    crate::state::checked_root()?;
    let file = crate::cli::spec::read_spec_file(spec_args.config.as_deref())?;
    let target = crate::cli::target::resolve(args, file.target.as_ref())?;
    // Every bad value is refused before the connection (exit 2, the engine untouched).
    let spec = crate::cli::spec::spec_from(file, spec_args)?;
    Ok((spec, crate::sut::Target::connect(&target).await?))
}

/// Connect to the target named by the flags (see `target_spec`).
pub async fn connect(args: &TargetArgs) -> Result<crate::sut::Target> {
    crate::sut::Target::connect(&crate::cli::target::target_spec(args)?).await
}
