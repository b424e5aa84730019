//! `exectl bench`: every flag and the bench's folder checked (`cli::options::bench`, exit 2 before any
//! connection), the operation run (`ops::bench`), its verdict printed. SIGINT/SIGTERM stop it (what was
//! measured is kept). Exit 0 when every level passed, 1 when one failed or the bench was interrupted,
//! 2 for bad flags, 3 when the link to the SUT was lost, 4 when the stack's lock is held or was taken over.

use std::sync::Arc;

use anyhow::Result;

use super::Connected;
use crate::cli::BenchArgs;
use crate::ops::{Context, Human};
use exectl_core::error::exit;

pub fn run(a: &BenchArgs) -> Result<i32> {
    let (target, opts) = crate::cli::options::bench::bench(a)?;
    let connected = Connected::to(&target)?;
    let lines = Human::lines(a.json);
    let cx = Context::new(&connected.target, &lines);
    {
        let stop = Arc::clone(&cx.stop);
        crate::interrupt::on_signal(move |name| stop.stop(format!("{name} received")))?;
    }
    let o = crate::ops::bench::bench(&cx, opts)?;
    let passed = o.passed();
    if a.json {
        println!("{}", serde_json::to_string_pretty(&o.results)?);
        // A failing bench says why on stderr too: exit 1 with nothing there reads as a crash.
        if !passed {
            eprintln!("{}", o.results.verdict.headline);
        }
    } else {
        println!("{}", o.results.verdict.headline);
        println!("report: {}", o.report.display());
    }
    Ok(if passed { exit::OK } else { exit::FAILED })
}
