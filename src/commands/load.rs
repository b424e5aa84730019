//! `exectl load`: flags → `LoadOptions` (`cli::options::load`: exit 2 on any bad input, before a single
//! dial), the operation (`ops::load`), the summary printed. Exit 0 when every user met the scenario's
//! criterion, 1 when some did not.

use anyhow::{Context, Result};

use crate::cli::options::load::{check_out, LoadFlags};
use crate::cli::LoadArgs;
use crate::load::{endpoint, LoadOptions};
use exectl_core::error::UsageError;
use std::path::Path;
use std::time::Duration;

pub fn run(args: &LoadArgs) -> Result<i32> {
    let flags = LoadFlags::of(args);
    let mut opts = crate::cli::options::load::load(&flags)?;
    if let Some(out) = &args.out {
        check_out(out)?;
    }
    check_routed(&flags, &opts)?;
    // Ctrl-C ends the hold now and prints what was measured, marked interrupted.
    let live = std::sync::Arc::new(crate::load::metrics::Live::default());
    opts.live = Some(live.clone());
    crate::interrupt::on_signal(move |_| live.stop())?;
    let progress = Lines { quiet: args.quiet };
    let summary = crate::ops::load::load(opts, &progress)?;
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
    Ok(summary.exit_code())
}

/// The operation's warnings on stderr; its steps too, unless --quiet.
struct Lines {
    quiet: bool,
}

impl crate::ops::Progress for Lines {
    fn event(&self, e: crate::ops::Event<'_>) {
        match e {
            crate::ops::Event::Note(line) => eprintln!("{line}"),
            crate::ops::Event::Step(line) if !self.quiet => eprintln!("{line}"),
            _ => {}
        }
    }
}

/// The front doors recorded for this target's stacks (for a fix that names the right one).
fn recorded_front_doors(stacks_root: Option<&Path>) -> Vec<endpoint::FrontDoor> {
    let Some(Ok(entries)) = stacks_root.map(std::fs::read_dir) else {
        return Vec::new();
    };
    let mut doors: Vec<endpoint::FrontDoor> = entries
        .filter_map(Result::ok)
        .filter_map(|e| {
            let stack = e.file_name().to_string_lossy().into_owned();
            // A hint: a stack whose record cannot be read is left out of it.
            let record =
                crate::state::record::read(&crate::state::bundle_dir(&e.path()), &stack).ok()??;
            Some(endpoint::FrontDoor::from_record(&record))
        })
        .collect();
    doors.sort_by(|a, b| a.stack.cmp(&b.stack));
    doors
}

/// One GET /healthcheck before any load: a 404 means no app behind that front door — every login would
/// 404 — so refuse with a fix that works (a Traefik not routing the Host sent is named as such when the
/// front door is Traefik: `endpoint::not_routed`). Anything else (a slow or down server included) is the
/// run's to measure.
pub fn check_routed(args: &LoadFlags, opts: &LoadOptions) -> Result<(), UsageError> {
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(_) => return Ok(()),
    };
    let http = crate::app::Client::new(1, crate::load::TIMEOUTS);
    let answer = rt.block_on(
        http.healthcheck(&opts.endpoint)
            .timeout(Duration::from_secs(5))
            .answer(),
    );
    let body = match answer {
        Ok(a) if a.status == reqwest::StatusCode::NOT_FOUND => match a.body {
            serde_json::Value::String(text) => text,
            other => other.to_string(),
        },
        _ => return Ok(()),
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
        &recorded_front_doors(root.as_deref()),
        &body,
    ))
}
