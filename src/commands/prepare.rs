//! `exectl prepare`: check the flags (exit 2 naming the flag, nothing written), find the deployed stack,
//! seed it, print the summary. Exit 0 when every check passed; 1 otherwise.

use crate::cli::values::count_flag;
use crate::cli::PrepareArgs;
use crate::prepare::plan::{self, EmailPattern, Visibility};
use crate::prepare::{self, Options, Stack, Summary, Via};
use crate::state::manifests as store;
use crate::state::manifests::Migration;
use anyhow::{Context, Result};
use exectl_core::error::UsageError;
use exectl_core::manifest;
use std::io::IsTerminal;
use std::time::{Duration, Instant};

pub const DEFAULT_COST: u32 = 10;
pub const DEFAULT_BATCH: usize = 5000;
pub const DEFAULT_TOKEN_TTL: Duration = Duration::from_secs(7 * 86_400);
pub const DEFAULT_SCHEMA_TIMEOUT: Duration = Duration::from_secs(60);

/// Longest --token-ttl: ten years (a JWT's exp is seconds since 1970 in an i64).
const MAX_TOKEN_TTL: Duration = Duration::from_secs(3650 * 86_400);
/// Longest --schema-timeout.
const MAX_SCHEMA_TIMEOUT: Duration = Duration::from_secs(86_400);

/// A token's lifetime in whole seconds (its exp claim), at least 1s.
fn token_ttl(value: &str) -> Result<Duration, UsageError> {
    let ttl = exectl_core::units::whole_seconds_in(value, Duration::from_secs(1), MAX_TOKEN_TTL);
    crate::cli::values::checked("--token-ttl", value, ttl).map(Duration::from_secs)
}

fn schema_timeout(value: &Option<String>) -> Result<Duration, UsageError> {
    match value {
        None => Ok(DEFAULT_SCHEMA_TIMEOUT),
        Some(t) => crate::cli::values::duration_flag(
            "--schema-timeout",
            t,
            Duration::from_millis(1),
            MAX_SCHEMA_TIMEOUT,
        ),
    }
}

fn password(args: &PrepareArgs) -> Result<String, UsageError> {
    let pw = match (&args.password, &args.password_file) {
        (Some(p), _) => p.clone(),
        (None, Some(f)) => {
            let text = std::fs::read_to_string(f).map_err(|e| {
                UsageError::new(
                    "--password-file",
                    f.display(),
                    format!("cannot read: {e}"),
                    "give a readable file whose first line is the password",
                )
            })?;
            text.lines().next().unwrap_or_default().to_string()
        }
        (None, None) => plan::DEFAULT_PASSWORD.to_string(),
    };
    // The app's api/v1 asks for 4 characters at least; bcrypt reads 72 bytes at most.
    if pw.len() < 4 || pw.len() > 72 {
        return Err(UsageError::new(
            if args.password_file.is_some() {
                "--password-file"
            } else {
                "--password"
            },
            "(not shown)",
            format!("a password of {} bytes", pw.len()),
            "use a password of 4 to 72 bytes",
        ));
    }
    Ok(pw)
}

/// The flags as a seeding run, without touching anything. `stack_dir` is filled in once the stack is known.
pub fn options(args: &PrepareArgs) -> Result<Options, UsageError> {
    let pattern = EmailPattern::parse(&args.email_pattern)?;
    let Some(accounts) = &args.accounts else {
        return Err(UsageError::new(
            "--accounts",
            "",
            "how many accounts to make is not given",
            "pass --accounts N (or --reset to remove what prepare made)",
        ));
    };
    let accounts = count_flag("--accounts", accounts, 0, 10_000_000)?;
    let projects = args
        .projects
        .as_deref()
        .map(|v| count_flag("--projects", v, 0, 10_000_000))
        .transpose()?;
    let k = args
        .users_per_project
        .as_deref()
        .map(|v| count_flag("--users-per-project", v, 0, 10_000_000))
        .transpose()?;
    let shape = plan::shape(accounts, projects, k)?;
    pattern.check_length(shape.accounts)?;
    let visibility = Visibility::parse(&args.visibility)?;
    let bcrypt_cost = match &args.bcrypt_cost {
        Some(c) => count_flag("--bcrypt-cost", c, 4, 31)? as u32,
        None => DEFAULT_COST,
    };
    let batch = match &args.batch_size {
        Some(b) => count_flag("--batch-size", b, 1, 100_000)? as usize,
        None => DEFAULT_BATCH,
    };
    let token_ttl = match (args.mint_tokens, &args.token_ttl) {
        (false, _) => None,
        (true, None) => Some(DEFAULT_TOKEN_TTL),
        (true, Some(t)) => Some(token_ttl(t)?),
    };
    let schema_timeout = schema_timeout(&args.schema_timeout)?;
    Ok(Options {
        via: Via::parse(&args.via)?,
        plan: plan::plan(shape, &pattern, visibility),
        password: password(args)?,
        bcrypt_cost,
        stack_dir: Default::default(),
        out: args.out.clone(),
        token_ttl,
        batch,
        schema_timeout,
    })
}

pub async fn run(args: &PrepareArgs) -> Result<bool> {
    let stack_name = exectl_core::spec::resolve_stack_name(args.stack.as_deref())?;
    // Every flag is checked before anything is read or written.
    let via = Via::parse(&args.via)?;
    if args.reset && via == Via::Api {
        return Err(UsageError::new(
            "--via",
            "api",
            "--reset removes rows through SQL only",
            "run --reset without --via api (it removes only what the SQL path made; see prepare/README.md)",
        )
        .into());
    }
    let (opts, pattern) = if args.reset {
        let pattern = EmailPattern::parse(&args.email_pattern)?;
        let timeout = schema_timeout(&args.schema_timeout)?;
        (None, (pattern, timeout))
    } else {
        let o = options(args)?;
        let t = o.schema_timeout;
        let p = o.plan.pattern.clone();
        (Some(o), (p, t))
    };
    let target = super::connect(&args.target).await?;
    let stack = Stack::read(&target, &stack_name)?;
    let stack_dir = target.stack_dir(&stack_name);
    let _lock = crate::engine::remote_lock::lock_stack(
        &target,
        &stack_name,
        "exectl prepare",
        args.break_lock,
    )
    .await?;

    // A manifest of the layout before (one, in the stack's folder) moves into its pattern's folder.
    match store::migrate_legacy(&stack_dir, Some(&pattern.0))? {
        Migration::None => {}
        Migration::Moved(to) => eprintln!(
            "note: moved the manifest of {} into {}",
            stack_dir.display(),
            to.display()
        ),
        Migration::Left(why) => eprintln!("note: left the manifest in place: {why}"),
    }

    let Some(mut opts) = opts else {
        let r = prepare::reset(
            &target,
            &stack,
            &pattern.0,
            &stack_dir,
            args.out.as_deref(),
            pattern.1,
        )
        .await?;
        if args.json {
            println!("{}", serde_json::to_string_pretty(&r)?);
        } else {
            println!(
                "stack {}: removed {} account(s) and {} project(s) (with {} Yjs document(s)) made by prepare ({}); other accounts untouched",
                r.stack,
                r.accounts,
                r.projects,
                r.documents,
                args.email_pattern
            );
            for f in &r.files {
                println!("  removed {}", f.display());
            }
            for k in &r.kept {
                println!("  kept the manifest in {}: {}", k.dir.display(), k.reason);
            }
        }
        return Ok(true);
    };
    opts.stack_dir = stack_dir;

    let started = Instant::now();
    let bar = (!args.json && std::io::stderr().is_terminal()).then(|| {
        let b = indicatif::ProgressBar::new(0);
        b.set_style(
            indicatif::ProgressStyle::with_template(if opts.via == Via::Api {
                "{spinner} seeding through the API {pos}/{len} requests [{bar:30}] {elapsed}"
            } else {
                "{spinner} seeding {pos}/{len} rows [{bar:30}] {elapsed}"
            })
            .expect("template")
            .progress_chars("=> "),
        );
        b
    });
    let progress = |done: u64, total: u64| {
        if let Some(b) = &bar {
            b.set_length(total);
            b.set_position(done);
        }
    };
    if opts.via == Via::Api && args.bcrypt_cost.is_some() {
        eprintln!(
            "note: --bcrypt-cost is not used with --via api: the app hashes each password at its own cost"
        );
    }
    let result = match opts.via {
        Via::Sql => prepare::run(&target, &stack, &opts, &progress).await,
        Via::Api => prepare::run_api(&stack, &opts, &progress).await,
    };
    if let Some(b) = &bar {
        b.finish_and_clear();
    }
    let summary = result?;
    let k6 = k6_env(args, &stack, &summary)?;
    if args.json {
        let mut v = serde_json::to_value(&summary)?;
        v["k6_env"] = k6.json();
        println!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        print_summary(&summary, started.elapsed());
        println!("  k6 against this stack (upstream's test/load/k6 scripts, or your own):");
        for line in manifest::k6_env_lines(&k6) {
            println!("    {line}");
        }
    }
    Ok(true)
}

/// The env of a k6 run against the stack just prepared; BENCH_PROJECTS_FILE is the projects.json written
/// (in --out DIR when given, else the stack's copy), as an absolute path.
fn k6_env(args: &PrepareArgs, stack: &Stack, s: &Summary) -> Result<manifest::K6Env> {
    let dir = args.out.as_deref().unwrap_or(&s.manifest);
    let projects = dir.join(manifest::PROJECTS);
    let projects = std::fs::canonicalize(&projects)
        .with_context(|| format!("the projects.json just written: {}", projects.display()))?;
    let door = stack.front_door();
    let password_from = match (&args.password, &args.password_file) {
        (Some(_), _) => manifest::PasswordFrom::Flag,
        (None, Some(_)) => manifest::PasswordFrom::File,
        (None, None) => manifest::PasswordFrom::Default,
    };
    Ok(manifest::k6_env(&manifest::K6Input {
        base_url: door.base.as_str(),
        host_header: door.host_header.as_deref(),
        accounts: s.accounts,
        users_per_project: s.users_per_project,
        password: plan::DEFAULT_PASSWORD,
        password_from,
        projects_file: &projects.to_string_lossy(),
        pattern: &args.email_pattern,
        default_pattern: args.email_pattern == plan::DEFAULT_PATTERN,
    }))
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

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn args(extra: &[&str]) -> PrepareArgs {
        let mut v = vec!["exectl", "prepare"];
        v.extend(extra);
        match crate::cli::Cli::parse_from(v).command {
            crate::cli::Command::Prepare(a) => a,
            _ => unreachable!(),
        }
    }

    #[test]
    fn bad_flags_name_the_field() {
        for (flags, field) in [
            (vec!["--accounts", "0"], "--accounts"),
            (vec!["--accounts", "-3"], "--accounts"),
            (
                vec!["--accounts", "10", "--users-per-project", "0"],
                "--users-per-project",
            ),
            (
                vec!["--accounts", "3", "--users-per-project", "4"],
                "--users-per-project",
            ),
            (
                vec!["--accounts", "10", "--bcrypt-cost", "3"],
                "--bcrypt-cost",
            ),
            (
                vec!["--accounts", "10", "--visibility", "open"],
                "--visibility",
            ),
            (vec!["--accounts", "10", "--password", "abc"], "--password"),
            (
                vec!["--accounts", "10", "--mint-tokens", "--token-ttl", "soon"],
                "--token-ttl",
            ),
            (vec![], "--accounts"),
            (vec!["--accounts", "10", "--via", "http"], "--via"),
        ] {
            let e = options(&args(&flags)).unwrap_err();
            assert_eq!(e.field, field, "{flags:?}: {e}");
            assert!(!e.to_string().contains("Bench"), "never the password");
        }
    }

    #[test]
    fn defaults() {
        let o = options(&args(&["--accounts", "1000", "--projects", "250"])).unwrap();
        assert_eq!(o.plan.shape.users_per_project, 4);
        assert_eq!(o.bcrypt_cost, 10);
        assert_eq!(o.password, "Bench1234!");
        assert_eq!(o.token_ttl, None);
        assert_eq!(o.via, Via::Sql);
        let a = options(&args(&["--accounts", "4", "--via", "api"])).unwrap();
        assert_eq!(a.via, Via::Api);
        let t = options(&args(&[
            "--accounts",
            "2",
            "--mint-tokens",
            "--token-ttl",
            "2d",
        ]))
        .unwrap();
        assert_eq!(t.token_ttl, Some(Duration::from_secs(172_800)));
    }
}
