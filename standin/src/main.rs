//! exe-standin: a small server that honours the eXeLearning app's contract (HTTP API, Yjs WebSocket relay,
//! Redis cross-instance relay, DB schema), so that exectl can be tested end to end without the real image.

mod app;
mod auth;
mod config;
mod crash;
mod db;
mod memory;
mod relay;
mod routes;
mod state;
mod ws;

use std::process::ExitCode;

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_ansi(false)
        .init();

    let cfg = match config::Config::from_env() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("exe-standin: configuration error: {e:#}");
            return ExitCode::from(2);
        }
    };

    // Few workers on purpose, and with STANDIN_FAULT=blocking-bcrypt one, as Bun runs its JavaScript on
    // one thread: a login burst stalls every other request, as bcryptjs stalled Bun's event loop.
    let workers = if cfg.fault.has(config::Fault::BlockingBcrypt) {
        1
    } else {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
            .min(2)
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("exe-standin: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(app::run(cfg)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("exe-standin: {e:#}");
            ExitCode::FAILURE
        }
    }
}
