use clap::Parser;
use exectl::cli::{Cli, Command};
use exectl::commands;
use exectl_core::error::exit;

fn main() {
    let cli = Cli::parse();
    let result = match &cli.command {
        Command::Render(a) => commands::render::run(a).map(|_| exit::OK),
        Command::Validate(a) => commands::validate::run(a).map(code),
        Command::Deploy(a) => runtime().block_on(commands::deploy::deploy(a)).map(code),
        Command::Plan(a) => runtime()
            .block_on(commands::deploy::plan_cmd(a))
            .map(|_| exit::OK),
        Command::Teardown(a) => runtime()
            .block_on(commands::teardown::run(a))
            .map(|_| exit::OK),
        Command::Status(a) => runtime().block_on(commands::status::run(a)),
        Command::Runs(a) => commands::runs::run(a).map(|_| exit::OK),
        Command::Load(a) => commands::load::run(a),
        Command::Bench(a) => commands::bench::run(a),
        Command::Sweep(a) => commands::sweep::run(a),
        Command::Report(a) => commands::report::run(&a.run_id, a.from.as_deref(), a.out.as_deref()),
        Command::Prepare(a) => runtime().block_on(commands::prepare::run(a)).map(code),
        Command::Host(a) => runtime().block_on(commands::host::run(a)),
        Command::Doctor(a) => runtime().block_on(commands::doctor::run(a)),
        Command::LoadSlice => exectl::load::slice::child::main(),
    };
    match result {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::exit(exectl::error::exit_code(&e));
        }
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime")
}

fn code(ok: bool) -> i32 {
    if ok {
        exit::OK
    } else {
        exit::FAILED
    }
}
