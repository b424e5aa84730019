//! `exectl load`: flags → a `LoadRequest` → `LoadOptions` (`ops::load_plan`: exit 2 on any bad input,
//! before a single dial), the client's limits (`ops::load::ready`, exit 2), the front door reached
//! (`load_plan::check_front_door`: exit 3 when it cannot be), the operation (`ops::load::run`), the
//! summary printed. Exit 0 when every user met the scenario's criterion, 1 when some did not.

use anyhow::{Context, Result};

use crate::cli::options::load::check_out;
use crate::cli::LoadArgs;
use crate::ops::load_plan::check_front_door;

pub fn run(args: &LoadArgs) -> Result<i32> {
    let request = crate::cli::options::load::request(args)?;
    let mut opts = crate::ops::load_plan::plan(&request)?;
    if let Some(out) = &args.out {
        check_out(out)?;
    }
    // Ctrl-C ends the hold now and prints what was measured, marked interrupted.
    let live = std::sync::Arc::new(crate::load::metrics::Live::default());
    opts.live = Some(live.clone());
    let progress = crate::ops::Human::lines(args.quiet);
    // Bad input first (the client's limits, the source addresses: exit 2), then the front door (3).
    let ready = crate::ops::load::ready(opts, &progress)?;
    check_front_door(&request, ready.opts())?;
    crate::interrupt::on_signal(move |_| live.stop())?;
    let crate::ops::load::LoadOutcome { summary, lock_lost } =
        crate::ops::load::run(ready, &progress)?;
    let json = serde_json::to_string_pretty(&summary).context("serialising the summary")?;
    if args.json {
        eprint!("{}", summary.render());
        println!("{json}");
    } else {
        print!("{}", summary.render());
    }
    if let Some(out) = &args.out {
        std::fs::write(out, format!("{json}\n"))
            .with_context(|| format!("writing {}", out.display()))?;
    }
    // What was measured is printed first; then the lock taken over is this run's end (exit 4).
    if let Some(lost) = lock_lost {
        return Err(anyhow::Error::new(lost).context("the load stopped its hold"));
    }
    Ok(summary.exit_code())
}
