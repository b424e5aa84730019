//! `teardown`: remove what exectl made for a stack (its labelled containers and network; its volumes,
//! secrets and state too with `purge`), under the stack's lock.

use super::Context;
use crate::engine::teardown::{self, Removed};
use anyhow::Result;

#[derive(Debug, Clone, Default)]
pub struct TeardownOptions {
    /// Remove the volumes (the data) and the stack's local state too.
    pub purge: bool,
    /// Take the stack's lock even from another holder (`--break-lock`).
    pub break_lock: bool,
}

pub async fn teardown(cx: &Context<'_>, stack: &str, opts: &TeardownOptions) -> Result<Removed> {
    let target = cx.target;
    // Taking the lock makes the stack's folder; a teardown of a stack never deployed leaves none.
    let dir = target.stack_dir(stack);
    let had_state = dir.exists();
    let lock = cx.lock(stack, "exectl teardown", opts.break_lock).await?;
    let removed = match &target.swarm {
        Some(swarm) => {
            crate::engine::swarm::teardown(&target.docker, swarm, stack, opts.purge).await?
        }
        None => teardown::teardown(&target.docker, stack, opts.purge).await?,
    };
    // The files uploaded for the containers (the .env holds secrets) go with them; the local copy and
    // the secrets stay unless purged, so a re-deploy finds its data's passwords.
    if target.is_remote() {
        target
            .remove_host_dir(&target.host_bundle_dir(stack))
            .await?;
    }
    if opts.purge {
        // The data is gone, so its secrets and files are too; the lock goes last.
        drop(lock);
        if dir.exists() {
            std::fs::remove_dir_all(&dir)?;
        }
    } else if !had_state {
        drop(lock);
        // Only folders left empty (the target's too): never anything another command wrote meanwhile.
        let _ = std::fs::remove_dir(&dir);
        if let Some(parent) = dir.parent() {
            let _ = std::fs::remove_dir(parent);
        }
    }
    Ok(removed)
}
