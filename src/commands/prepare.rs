//! `exectl prepare`: flags → options (`cli::options::prepare`: exit 2 naming the flag, nothing
//! written), the operation (`ops::prepare`: seed, or reset), the summary printed. Exit 0 when every check
//! passed; 1 otherwise.

use crate::cli::options::prepare::Asked;
use crate::cli::PrepareArgs;
use crate::ops::prepare::PrepareOutcome;
use crate::ops::{Context, Event, Progress};
use crate::prepare::{ResetSummary, Summary, Via};
use anyhow::Result;
use exectl_core::manifest;
use std::io::IsTerminal;
use std::time::{Duration, Instant};

/// A bar of rows (or requests) on a terminal; notes on stderr; nothing else (stdout is the summary).
struct Bar {
    bar: Option<indicatif::ProgressBar>,
}

impl Bar {
    fn new(show: bool, via: Via) -> Bar {
        let bar = (show && std::io::stderr().is_terminal()).then(|| {
            let b = indicatif::ProgressBar::new(0);
            b.set_style(
                indicatif::ProgressStyle::with_template(if via == Via::Api {
                    "{spinner} seeding through the API {pos}/{len} requests [{bar:30}] {elapsed}"
                } else {
                    "{spinner} seeding {pos}/{len} rows [{bar:30}] {elapsed}"
                })
                .expect("template")
                .progress_chars("=> "),
            );
            b
        });
        Bar { bar }
    }
}

impl Progress for Bar {
    fn event(&self, e: Event<'_>) {
        match (e, &self.bar) {
            (Event::Count { done, total }, Some(b)) => {
                b.set_length(total);
                b.set_position(done);
            }
            (Event::Note(line) | Event::Step(line), Some(b)) => b.suspend(|| eprintln!("{line}")),
            (Event::Note(line) | Event::Step(line), None) => eprintln!("{line}"),
            _ => {}
        }
    }
}

impl Drop for Bar {
    fn drop(&mut self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}

pub async fn run(args: &PrepareArgs) -> Result<bool> {
    // Every flag is checked before anything is read or written.
    let (target, stack, asked) = crate::cli::options::prepare::prepare(args)?;
    let target = crate::sut::Target::connect(&target).await?;
    match asked {
        Asked::Reset(opts) => {
            let bar = Bar::new(false, Via::Sql);
            let r = crate::ops::prepare::reset(&Context::new(&target, &bar), &stack, &opts).await?;
            print_reset(&r, &opts.pattern.text(), args.json)
        }
        Asked::Seed(opts, note) => {
            if let Some(note) = note {
                eprintln!("{note}");
            }
            let started = Instant::now();
            let bar = Bar::new(!args.json, opts.seed.via);
            let result =
                crate::ops::prepare::prepare(&Context::new(&target, &bar), &stack, opts).await;
            drop(bar);
            print_seeded(&result?, started.elapsed(), args.json)
        }
    }?;
    Ok(true)
}

fn print_seeded(o: &PrepareOutcome, took: Duration, json: bool) -> Result<()> {
    if json {
        let mut v = serde_json::to_value(&o.summary)?;
        v["k6_env"] = o.k6.json();
        println!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        print_summary(&o.summary, took);
        println!("  k6 against this stack (upstream's test/load/k6 scripts, or your own):");
        for line in manifest::k6_env_lines(&o.k6) {
            println!("    {line}");
        }
    }
    Ok(())
}

fn print_reset(r: &ResetSummary, pattern: &str, json: bool) -> Result<()> {
    if json {
        println!("{}", serde_json::to_string_pretty(r)?);
        return Ok(());
    }
    println!(
        "stack {}: removed {} account(s) and {} project(s) (with {} Yjs document(s)) made by prepare ({pattern}); other accounts untouched",
        r.stack, r.accounts, r.projects, r.documents
    );
    for f in &r.files {
        println!("  removed {}", f.display());
    }
    for k in &r.kept {
        println!("  kept the manifest in {}: {}", k.dir.display(), k.reason);
    }
    Ok(())
}

fn print_summary(s: &Summary, took: Duration) {
    println!(
        "stack {} ({}, via {}): {} accounts, {} projects x {} users ({}), ready in {:.2} s",
        s.stack,
        s.db,
        s.via,
        s.accounts,
        s.projects,
        s.users_per_project,
        s.visibility,
        took.as_secs_f64()
    );
    println!(
        "  added {} accounts, {} projects, {} collaborator rows (already there: {}, {}, {})",
        s.added.accounts,
        s.added.projects,
        s.added.collaborators,
        s.before.accounts,
        s.before.projects,
        s.before.collaborators
    );
    if let (Some(added), Some(after)) = (s.added.documents, s.after.documents) {
        println!("  Yjs documents: {after} ({added} added), one per project, read back");
    }
    for e in &s.app_errors {
        println!(
            "  app error: {} answered {} x{} ({} adopted): {}",
            e.endpoint, e.status, e.count, e.adopted, e.action
        );
    }
    if s.via == Via::Api.name() {
        println!(
            "  time: admin login {} ms, API requests {} ms, read-back {} ms, verify {} ms",
            s.ms.schema, s.ms.write, s.ms.readback, s.ms.verify
        );
    } else {
        println!(
            "  time: hash {} ms, schema {} ms, write {} ms, read-back {} ms, verify {} ms",
            s.ms.hash, s.ms.schema, s.ms.write, s.ms.readback, s.ms.verify
        );
    }
    for c in &s.checks {
        println!(
            "  verified through {}: {} {} logged in ({} ms) and held its project's WebSocket",
            s.front_door, c.role, c.email, c.login_ms
        );
    }
    for f in &s.files {
        println!("  wrote {}", f.display());
    }
    println!(
        "  load --stack {} reads {} (the newest manifest; --pattern picks another)",
        s.stack,
        s.manifest.display()
    );
}
