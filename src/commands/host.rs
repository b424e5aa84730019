//! `exectl host tune|restore`: flags → options (`cli::options::host_tune`: nothing reaches the host
//! before every one is checked), connect (one engine: a swarm's nodes are tuned one by one), the
//! operation (`ops::host`), its report printed. Exit 0 when every setting holds, 1 otherwise.

use super::Lines;
use crate::cli::host::{HostArgs, HostCommand};
use crate::host::report::Report;
use crate::ops::Context;
use anyhow::Result;

pub async fn run(args: &HostArgs) -> Result<i32> {
    let (json, report) = match &args.command {
        HostCommand::Tune(a) => {
            let opts = crate::cli::options::host_tune(a)?;
            let spec = crate::cli::target::target_spec(&a.target)?;
            spec.one_engine("host tune")?;
            let target = crate::sut::Target::connect(&spec).await?;
            let lines = Lines { quiet: a.json };
            let cx = Context::new(&target, &lines);
            (a.json, crate::ops::host::tune(&cx, &opts).await?)
        }
        HostCommand::Restore(a) => {
            let opts = crate::ops::host::RestoreOptions {
                root: crate::host::check_root(a.root.as_deref())?,
            };
            let spec = crate::cli::target::target_spec(&a.target)?;
            spec.one_engine("host restore")?;
            let target = crate::sut::Target::connect(&spec).await?;
            let lines = Lines { quiet: a.json };
            let cx = Context::new(&target, &lines);
            (a.json, crate::ops::host::restore(&cx, &opts).await?)
        }
    };
    print(&report, json)?;
    Ok(report.exit_code())
}

fn print(r: &Report, json: bool) -> Result<()> {
    if json {
        println!("{}", serde_json::to_string_pretty(r)?);
    } else {
        print!("{}", r.render());
    }
    Ok(())
}
