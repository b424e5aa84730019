//! `exectl teardown`: remove the stack's containers and network (and volumes with --purge): the
//! operation is `ops::teardown`; this prints what it removed.

use crate::cli::TeardownArgs;
use anyhow::Result;

pub async fn run(args: &TeardownArgs) -> Result<()> {
    let (stack, opts) = crate::cli::options::teardown(args)?;
    let target = super::connect(&args.target.flags()).await?;
    let removed = crate::ops::teardown::teardown(
        &crate::ops::Context::new(&target, &crate::ops::Human::lines(args.json)),
        &stack,
        &opts,
    )
    .await?;
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
