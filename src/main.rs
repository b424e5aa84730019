use clap::Parser;
use exectl::cli::{Cli, Command};
use exectl::commands;
use exectl_core::error::exit;

fn main() {
    let cli = Cli::parse();
    let result = match &cli.command {
        Command::Render(a) => commands::render::run(a).map(|_| exit::OK),
        Command::Validate(a) => commands::validate::run(a).map(code),
        Command::Deploy(a) => block_on(commands::deploy::deploy(a)).map(code),
        Command::Plan(a) => block_on(commands::deploy::plan_cmd(a)).map(|_| exit::OK),
        Command::Teardown(a) => block_on(commands::teardown::run(a)).map(|_| exit::OK),
        Command::Status(a) => block_on(commands::status::run(a)),
        Command::Runs(a) => commands::runs::run(a).map(|_| exit::OK),
        Command::Load(a) => commands::load::run(a),
        Command::Bench(a) => commands::bench::run(a),
        Command::Sweep(a) => commands::sweep::run(a),
        Command::Campaign(a) => commands::campaign::run(a),
        Command::Report(a) => commands::report::run(&a.run_id, a.from.as_deref(), a.out.as_deref()),
        Command::Prepare(a) => block_on(commands::prepare::run(a)).map(code),
        Command::Host(a) => block_on(commands::host::run(a)),
        Command::Doctor(a) => block_on(commands::doctor::run(a)),
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

/// Run a command on a runtime of its own, then drop it without waiting for its blocking tasks: a read
/// on a stalled SSH link never returns (its deadline left it there), and would hold the exit for ever.
fn block_on<T>(f: impl std::future::Future<Output = T>) -> T {
    let rt = commands::runtime().expect("tokio runtime");
    let out = rt.block_on(f);
    rt.shutdown_background();
    out
}

fn code(ok: bool) -> i32 {
    if ok {
        exit::OK
    } else {
        exit::FAILED
    }
}
