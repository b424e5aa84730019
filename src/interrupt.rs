//! SIGINT and SIGTERM during a long run (load, bench): the first asks the work to stop cleanly — the
//! running level's hold ends at once, its users close, and what was measured is written, marked
//! interrupted — and a second one exits at once (130), for a stop that hangs.

use anyhow::{Context, Result};
use tokio::signal::unix::{signal, SignalKind};

/// Call `stop` with the signal's name on the first SIGINT or SIGTERM (on a thread of its own, so it
/// runs whatever the caller's runtimes are doing); exit 130 on the second.
pub fn on_signal(stop: impl Fn(&'static str) + Send + 'static) -> Result<()> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .build()
        .context("starting the signal thread's runtime")?;
    // Registered here, before the thread runs: a signal from now on is ours, not the default's.
    let (mut int, mut term) = rt.block_on(async {
        Ok::<_, std::io::Error>((
            signal(SignalKind::interrupt())?,
            signal(SignalKind::terminate())?,
        ))
    })?;
    std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || {
            rt.block_on(async move {
                let mut first = true;
                loop {
                    let name = tokio::select! {
                        _ = int.recv() => "SIGINT",
                        _ = term.recv() => "SIGTERM",
                    };
                    if !first {
                        eprintln!("exectl: {name} again: exiting now");
                        std::process::exit(130);
                    }
                    first = false;
                    eprintln!(
                        "exectl: {name}: stopping the running level and saving what was measured (again to exit at once)"
                    );
                    stop(name);
                }
            })
        })
        .context("starting the signal thread")?;
    Ok(())
}
