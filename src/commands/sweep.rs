//! `exectl sweep`: every flag checked (`cli::options::sweep`, exit 2 before the first deploy), the
//! operation run (`ops::sweep`), its headline and comparison printed. SIGINT/SIGTERM stop the running
//! point's bench; the points before it are kept and `--resume` goes on. Exit 0 when every point ran
//! (a value whose levels fail is a finding, not an error), 1 when the sweep stopped early (another
//! variable moved, a signal), 2 for bad flags, 3 when the link to the SUT was lost, 4 for a held lock.

use std::sync::Arc;

use anyhow::Result;

use super::Connected;
use crate::cli::SweepArgs;
use crate::ops::{Context, Human};
use exectl_core::error::exit;
use exectl_core::sweep::summary::summarize;

pub fn run(a: &SweepArgs) -> Result<i32> {
    let (target, opts) = crate::cli::options::sweep::sweep(a)?;
    let connected = Connected::to(&target)?;
    // Steps and notes on stderr (stdout is the results with --json); levels' sample lines are the bench's.
    let lines = Human::lines(a.json);
    let cx = Context::new(&connected.target, &lines);
    {
        let stop = Arc::clone(&cx.stop);
        crate::interrupt::on_signal(move |name| stop.stop(format!("{name} received")))?;
    }
    let o = crate::ops::sweep::sweep(&cx, opts)?;
    let s = summarize(&o.results);
    if a.json {
        print!("{}", o.results.to_json()?);
    } else {
        println!("{}", s.headline);
        for d in &s.differences {
            println!("  {}", d.sentence);
        }
        if let Some(sc) = &s.scaling {
            println!("{}", sc.sentence);
        }
    }
    if let Some(why) = &o.results.stopped {
        eprintln!("sweep stopped: {why}");
    }
    if !a.json {
        println!("report: {}", o.report.display());
    }
    Ok(if o.complete() { exit::OK } else { exit::FAILED })
}
