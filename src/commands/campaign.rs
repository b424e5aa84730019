//! `exectl campaign FILE`: the file and flags checked (`ops::campaign_plan`, from the flags by
//! `cli::options::campaign`; exit 2 before anything is connected to), then `--plan` said, or the operation run (`ops::campaign`) and its
//! table's rows, findings and reports said. SIGINT/SIGTERM stop the running row's bench; the rows
//! before it are kept and `--resume` goes on. Exit 0 when every row ran (a row whose levels fail is a
//! finding, not an error), 1 when one did not run or the campaign stopped early, 2 for bad input, 3
//! when the link to the SUT was lost, 4 for a held lock.

use std::sync::Arc;

use anyhow::Result;

use super::Connected;
use crate::cli::CampaignArgs;
use crate::ops::{Context, Human};
use exectl_core::error::exit;
use exectl_core::units::readable_s;

pub fn run(a: &CampaignArgs) -> Result<i32> {
    let (target, opts, plan) = crate::cli::options::campaign::campaign(a)?;
    if a.plan {
        if a.json {
            println!("{}", serde_json::to_string_pretty(&plan)?);
            return Ok(exit::OK);
        }
        println!(
            "campaign {} ({}): {} rows",
            plan.name,
            plan.file,
            plan.rows.len()
        );
        for r in &plan.rows {
            println!(
                "  {:>2}. {:<40} {:<6} stack {:<20} deploy {:<8} {} point{}, levels {:<28} about {}",
                r.index,
                r.name,
                r.topology,
                r.stack,
                format!("{:?}", r.deploy).to_lowercase(),
                r.points,
                if r.points == 1 { "" } else { "s" },
                r.levels,
                readable_s(r.estimate_s.round())
            );
        }
        println!(
            "about {} in all (an estimate: results.json says what it took)",
            readable_s(plan.estimate_s.round())
        );
        return Ok(exit::OK);
    }
    let connected = Connected::to(&target)?;
    let lines = Human::lines(a.json);
    let cx = Context::new(&connected.target, &lines);
    {
        let stop = Arc::clone(&cx.stop);
        crate::interrupt::on_signal(move |name| stop.stop(format!("{name} received")))?;
    }
    let o = crate::ops::campaign::campaign(&cx, opts)?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&o.results)?);
    } else {
        for f in &o.findings {
            println!("{}: {}", f.row, f.sentence);
        }
        println!("report: {}", o.report.display());
        println!("report (markdown): {}", o.report_md.display());
        let r = &o.results;
        if !r.torn_down.is_empty() {
            println!("torn down (their data kept): {}", r.torn_down.join(", "));
        }
        if !r.left_up.is_empty() {
            let names: Vec<&str> = r.left_up.iter().map(|x| x.stack.as_str()).collect();
            println!(
                "left running: {}; removed (their data kept) with:",
                names.join(", ")
            );
            for x in &r.left_up {
                println!("  {}", x.command);
            }
        }
    }
    Ok(if o.complete() { exit::OK } else { exit::FAILED })
}
