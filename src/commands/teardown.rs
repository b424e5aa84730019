//! `exectl teardown`: remove the stack's containers and network (and volumes with --purge).

use crate::cli::TeardownArgs;
use crate::engine::teardown;
use anyhow::Result;

pub async fn run(args: &TeardownArgs) -> Result<()> {
    let stack = exectl_core::spec::resolve_stack_name(args.stack.as_deref())?;
    let target = super::connect(&args.target).await?;
    // Taking the lock makes the stack's folder; a teardown of a stack never deployed leaves none.
    let dir = target.stack_dir(&stack);
    let had_state = dir.exists();
    let lock =
        crate::engine::remote_lock::lock_stack(&target, &stack, "exectl teardown", args.break_lock)
            .await?;
    let removed = teardown::teardown(&target.docker, &stack, args.purge).await?;
    // The files uploaded for the containers (the .env holds secrets) go with them; the local copy and
    // the secrets stay unless --purge, so a re-deploy finds its data's passwords.
    if target.is_remote() {
        target
            .remove_host_dir(&target.host_bundle_dir(&stack))
            .await?;
    }
    if args.purge {
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
    if args.json {
        println!("{}", serde_json::to_string_pretty(&removed)?);
    } else if removed.containers.is_empty()
        && removed.networks.is_empty()
        && removed.volumes.is_empty()
    {
        println!("stack {stack}: nothing to remove");
    } else {
        println!(
            "stack {stack}: removed {} container(s), {} network(s), {} volume(s)",
            removed.containers.len(),
            removed.networks.len(),
            removed.volumes.len()
        );
    }
    if !removed.kept_volumes.is_empty() && !args.json {
        println!(
            "  kept volumes (data): {} — pass --purge to remove them",
            removed.kept_volumes.join(", ")
        );
    }
    Ok(())
}
