use clap::Parser;
use exectl::cli::{Cli, Command};
use exectl::commands;

fn main() {
    let cli = Cli::parse();
    let result = match &cli.command {
        Command::Render(a) => commands::render::run(a).map(|_| 0),
        Command::Validate(a) => commands::validate::run(a).map(|ok| if ok { 0 } else { 1 }),
    };
    match result {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::exit(exectl::error::exit_code(&e));
        }
    }
}
