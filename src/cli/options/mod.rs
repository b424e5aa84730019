//! Flags → options: each operation's options struct made from its command's flags, checked (exit 2
//! naming the flag) before any connection. The one place a command's flags are read as a whole.

use super::spec::load_templates;
use super::values::duration_flag;
pub mod bench;
pub mod load;
pub mod prepare;
pub mod sweep;

use super::DeployArgs;
use crate::ops::deploy::DeployOptions;
use anyhow::Result;
use std::time::Duration;

/// `exectl deploy`'s flags besides the spec and the target.
pub fn deploy(args: &DeployArgs) -> Result<DeployOptions> {
    Ok(DeployOptions {
        // More than zero, at most a day.
        wait_timeout: duration_flag(
            "--wait-timeout",
            &args.wait_timeout,
            Duration::from_millis(1),
            Duration::from_secs(86_400),
        )?,
        load_images: args.load_images,
        break_lock: args.break_lock,
        templates: load_templates(&args.spec)?,
        place: place(&args.place)?,
    })
}

/// `--place` values (deploy, plan), each checked.
pub fn place(values: &[String]) -> Result<Vec<exectl_core::swarm::PlaceRule>> {
    Ok(values
        .iter()
        .map(|p| p.parse())
        .collect::<Result<_, exectl_core::error::UsageError>>()?)
}
