//! `exectl load-slice`: one slice of a run over several processes. Its spec arrives as the first line of
//! stdin; it raises its own open-file limit, waits for the agreed instant, runs its users with the hold
//! gated on the parent's "hold", and writes its counters and at the end its report on stdout. A "stop"
//! or the end of stdin (the parent is gone) ends the hold at once, so no slice outlives its run.

use std::io::{BufRead, BufReader, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use anyhow::Result;
use serde::Deserialize;

use super::{Counters, FromSlice, SliceReport, SliceSpec, HOLD, STOP, TICK};
use crate::load::metrics::{self, Live};
use crate::load::{preflight, runner};

/// One line on stdout (whole lines only: the counters and the report come from two threads).
fn say(out: &Mutex<std::io::Stdout>, msg: &FromSlice) {
    let line = serde_json::to_string(msg).expect("a slice's words serialise");
    let mut o = out.lock().unwrap();
    let _ = writeln!(o, "{line}");
    let _ = o.flush();
}

pub fn main() -> Result<i32> {
    let mut input = BufReader::new(std::io::stdin());
    let out = Arc::new(Mutex::new(std::io::stdout()));
    let refuse = |why: String| {
        say(&out, &FromSlice::Refused(why));
        Ok(2)
    };
    // Parsed as it arrives (no copy of the line: a slice of 16,667 users with tokens is 8 MB of it),
    // up to the object's end; the rest of stdin is the parent's words.
    let spec = SliceSpec::deserialize(&mut serde_json::Deserializer::from_reader(&mut input));
    let spec = match spec {
        Ok(s) => s,
        Err(e) => return refuse(format!("not a slice spec: {e}")),
    };
    let (slice, start_at_unix_ms) = (spec.slice, spec.start_at_unix_ms);
    let mut opts = match spec.into_options() {
        Ok(o) => o,
        Err(e) => return refuse(e),
    };
    if let Err(e) = preflight::ensure(preflight::Needs::of(&opts), &opts.sources) {
        return refuse(e.to_string());
    }
    let live = Arc::new(Live::default());
    live.plateau.gate();
    opts.live = Some(live.clone());
    // Ctrl-C reaches the whole process group: the slice ends its hold and still reports.
    {
        let live = live.clone();
        crate::interrupt::on_signal(move |_| live.stop())?;
    }

    // Every slice begins its ramp at one wall-clock instant; how late this one woke is its skew.
    let wait = start_at_unix_ms.saturating_sub(super::unix_ms());
    std::thread::sleep(std::time::Duration::from_millis(wait));
    let skew_ms = super::unix_ms_f64() - start_at_unix_ms as f64;
    say(
        &out,
        &FromSlice::Started {
            skew_ms: (skew_ms * 10.0).round() / 10.0,
            pid: std::process::id(),
            host: metrics::host_name(),
        },
    );

    {
        let live = live.clone();
        std::thread::spawn(move || {
            for line in input.lines() {
                match line.as_deref().map(str::trim) {
                    Ok(HOLD) => live.release(),
                    Ok(STOP) | Err(_) => break,
                    Ok(_) => {}
                }
            }
            // A stop, or the parent went away: end now.
            live.stop();
        });
    }
    let done = Arc::new(AtomicBool::new(false));
    let ticker = {
        let (live, out, done) = (live.clone(), out.clone(), done.clone());
        std::thread::spawn(move || {
            while !done.load(Ordering::Acquire) {
                say(&out, &FromSlice::Tick(Counters::of(&live)));
                std::thread::sleep(TICK);
            }
        })
    };
    let summary = runner::run(opts, &crate::progress::Human::lines(false));
    done.store(true, Ordering::Release);
    let _ = ticker.join();
    let mut summary = summary?;
    for u in &mut summary.generator.slices {
        u.slice = slice;
        u.start_skew_ms = Some((skew_ms * 10.0).round() / 10.0);
    }
    let parts = std::mem::take(&mut summary.parts);
    say(
        &out,
        &FromSlice::Report(Box::new(SliceReport { summary, parts })),
    );
    Ok(0)
}
