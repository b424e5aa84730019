//! `exectl load`: flags → `LoadOptions` (`cli::options::load`: exit 2 on any bad input, before a single
//! dial), the client's limits (`ops::load::ready`, exit 2), the front door reached (exit 3 when it
//! cannot be), the operation (`ops::load::run`), the summary printed. Exit 0 when every user met the
//! scenario's criterion, 1 when some did not.

use anyhow::{Context, Result};

use crate::cli::options::load::{check_out, LoadFlags};
use crate::cli::LoadArgs;
use crate::load::{endpoint, LoadOptions};

pub fn run(args: &LoadArgs) -> Result<i32> {
    let flags = LoadFlags::of(args)?;
    let mut opts = crate::cli::options::load::load(&flags)?;
    if let Some(out) = &args.out {
        check_out(out)?;
    }
    // Ctrl-C ends the hold now and prints what was measured, marked interrupted.
    let live = std::sync::Arc::new(crate::load::metrics::Live::default());
    opts.live = Some(live.clone());
    let progress = crate::ops::Human::lines(args.quiet);
    // Bad input first (the client's limits, the source addresses: exit 2), then the front door (3).
    let ready = crate::ops::load::ready(opts, &progress)?;
    check_front_door(&flags, ready.opts())?;
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

/// Before any load, the front door (`load::front_door`): unreachable is exit 3. A 404 from its
/// /healthcheck means no app behind that front door — every login would 404 — so refuse with a fix that
/// works (a Traefik not routing the Host sent is named as such when the front door is Traefik, a path
/// that no app answers under as such: `endpoint::not_routed`).
fn check_front_door(args: &LoadFlags, opts: &LoadOptions) -> Result<()> {
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(_) => return Ok(()),
    };
    let knocked = rt.block_on(crate::load::front_door::knock(
        &opts.endpoint,
        args.stack.as_deref(),
    ))?;
    let Some(body) = knocked else {
        return Ok(());
    };
    let (field, value) = match (&args.stack, &args.host_header, &args.url) {
        (Some(s), _, _) => ("--stack", s.clone()),
        (None, Some(h), _) => ("--host-header", h.clone()),
        (None, None, url) => ("--url", url.clone().unwrap_or_default()),
    };
    // This target's stacks: <state>/<target key>/<stack>/bundle/ with each one's record.
    let root = crate::cli::target::target_spec(&args.target)
        .ok()
        .map(|t| crate::state::root().join(t.key()));
    Err(endpoint::not_routed(
        field,
        &value,
        &opts.endpoint,
        &crate::cli::options::load::recorded_front_doors(root.as_deref()),
        &body,
    )
    .into())
}
