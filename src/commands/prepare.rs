//! `exectl prepare`: flags → options (`cli::options::prepare`: exit 2 naming the flag, nothing
//! written), the operation (`ops::prepare`: seed, or reset), the summary printed (`ops::prepare_text`).
//! Exit 0 when every check passed; 1 otherwise.

use crate::cli::options::prepare::Asked;
use crate::cli::PrepareArgs;
use crate::ops::{prepare_text, Context, Human};
use anyhow::Result;
use std::time::Instant;

pub async fn run(args: &PrepareArgs) -> Result<bool> {
    // Every flag is checked before anything is read or written.
    let (target, stack, asked) = crate::cli::options::prepare::prepare(args)?;
    let target = crate::sut::Target::connect(&target).await?;
    match asked {
        Asked::Reset(opts) => {
            let progress = Human::lines(false);
            let r = crate::ops::prepare::reset(&Context::new(&target, &progress), &stack, &opts)
                .await?;
            if args.json {
                println!("{}", serde_json::to_string_pretty(&r)?);
            } else {
                for line in r.lines(&opts.pattern) {
                    println!("{line}");
                }
            }
        }
        Asked::Seed(opts, note) => {
            if let Some(note) = note {
                eprintln!("{note}");
            }
            let started = Instant::now();
            // A bar on a terminal; notes and steps on stderr (stdout is the summary).
            let progress = prepare_text::progress(opts.seed.via, !args.json);
            let result =
                crate::ops::prepare::prepare(&Context::new(&target, &progress), &stack, opts).await;
            drop(progress);
            let o = result?;
            if args.json {
                println!("{}", serde_json::to_string_pretty(&o.json()?)?);
            } else {
                for line in o.lines(started.elapsed()) {
                    println!("{line}");
                }
            }
        }
    }
    Ok(true)
}
