//! `exectl host tune|restore`: flags → options (`cli::options::host_tune`: nothing reaches the host
//! before every one is checked), connect (one engine: a swarm's nodes are tuned one by one), the
//! operation (`ops::host`), its report printed. Exit 0 when every setting holds, 1 otherwise.

use crate::cli::host::{HostArgs, HostCommand};
use crate::host::report::Report;
use crate::ops::{self, Context, Human};
use crate::sut::target_flags::TargetFlags;
use crate::sut::Target;
use anyhow::Result;

pub async fn run(args: &HostArgs) -> Result<i32> {
    let (json, report) = match &args.command {
        HostCommand::Tune(a) => {
            let opts = crate::cli::options::host_tune(a)?;
            let target = one_host(&a.target.flags(), "host tune").await?;
            let lines = Human::lines(a.json);
            (
                a.json,
                ops::host::tune(&Context::new(&target, &lines), &opts).await?,
            )
        }
        HostCommand::Restore(a) => {
            let opts = crate::ops::host::RestoreOptions {
                root: crate::host::check_root(a.root.as_deref())?,
            };
            let target = one_host(&a.target.flags(), "host restore").await?;
            let lines = Human::lines(a.json);
            (
                a.json,
                ops::host::restore(&Context::new(&target, &lines), &opts).await?,
            )
        }
    };
    print(&report, json)?;
    Ok(report.exit_code())
}

/// The target, connected, when it is one engine (a swarm's hosts are tuned one by one).
async fn one_host(args: &TargetFlags, command: &str) -> Result<Target> {
    let spec = crate::ops::spec_source::target_spec(args)?;
    spec.one_engine(command)?;
    Target::connect(&spec).await
}

fn print(r: &Report, json: bool) -> Result<()> {
    if json {
        println!("{}", serde_json::to_string_pretty(r)?);
    } else {
        print!("{}", r.render());
    }
    Ok(())
}
