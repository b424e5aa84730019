//! `exectl status`: the stack's state in one command with an exit code (the seed's manual checks); the
//! operation is `ops::status`, this prints it (once, or every --interval with --watch).

use crate::cli::StatusArgs;
use crate::status::report;
use anyhow::Result;
use exectl_core::error::exit;
use std::io::IsTerminal;

/// Returns the exit code: 0 when the verdict is ok or warn, 1 when it is fail (a service missing or
/// not running, an instance that does not answer, or an --expect-* check that does not hold).
pub async fn run(args: &StatusArgs) -> Result<i32> {
    let (stack, opts, interval) = crate::cli::options::status(args)?;
    let target = super::connect(&args.target.flags()).await?;
    let lines = crate::ops::Human::lines(args.json);
    let cx = crate::ops::Context::new(&target, &lines);
    loop {
        let r = crate::ops::status::status(&cx, &stack, &opts).await?;
        print(&r, args.json)?;
        if !args.watch {
            return Ok(if r.verdict == "fail" {
                exit::FAILED
            } else {
                exit::OK
            });
        }
        tokio::select! {
            _ = tokio::time::sleep(interval) => {}
            _ = tokio::signal::ctrl_c() => return Ok(exit::OK),
        }
    }
}

fn print(r: &report::Report, json: bool) -> Result<()> {
    if json {
        println!("{}", serde_json::to_string_pretty(r)?);
        return Ok(());
    }
    if std::io::stdout().is_terminal() {
        print!("\x1b[2J\x1b[H");
    }
    println!(
        "stack {} ({}{})",
        r.stack,
        r.topology,
        r.lb_algorithm
            .as_deref()
            .map(|a| format!(", {a}"))
            .unwrap_or_default()
    );
    println!("{}", report::table(r));
    for w in &r.warnings {
        println!("warning: {w}");
    }
    for p in &r.problems {
        println!("problem: {p}");
    }
    println!("verdict: {}", r.verdict);
    Ok(())
}
