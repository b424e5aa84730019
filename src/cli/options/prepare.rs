//! `exectl prepare`'s flags as the seeding run's `Options` (or a reset's): every value checked (exit 2
//! naming the flag, the password never shown), nothing read from the target or written.

use crate::cli::PrepareArgs;
use crate::ops::prepare::{PrepareOptions, ResetOptions};
use crate::ops::values::count_flag;
use crate::prepare::plan::{self, EmailPattern, Visibility};
use crate::prepare::{
    Options, Via, DEFAULT_BATCH, DEFAULT_COST, DEFAULT_SCHEMA_TIMEOUT, DEFAULT_TOKEN_TTL,
};
use crate::sut::TargetSpec;
use exectl_core::error::UsageError;
use exectl_core::manifest::PasswordFrom;
use std::time::Duration;

/// Most --accounts, --projects and --users-per-project.
const MAX_COUNT: u64 = 10_000_000;

/// Longest --token-ttl: ten years (a JWT's exp is seconds since 1970 in an i64).
const MAX_TOKEN_TTL: Duration = Duration::from_secs(3650 * 86_400);
/// Longest --schema-timeout.
const MAX_SCHEMA_TIMEOUT: Duration = Duration::from_secs(86_400);

/// A token's lifetime in whole seconds (its exp claim), at least 1s.
fn token_ttl(value: &str) -> Result<Duration, UsageError> {
    let ttl = exectl_core::units::whole_seconds_in(value, Duration::from_secs(1), MAX_TOKEN_TTL);
    crate::ops::values::checked("--token-ttl", value, ttl).map(Duration::from_secs)
}

fn schema_timeout(value: &Option<String>) -> Result<Duration, UsageError> {
    match value {
        None => Ok(DEFAULT_SCHEMA_TIMEOUT),
        Some(t) => crate::ops::values::duration_flag(
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
            let text = crate::shell::user_file::read_named(
                f,
                "--password-file",
                crate::shell::user_file::WRITTEN,
                "give a readable file whose first line is the password",
            )?;
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

use crate::ops::values::bcrypt_cost;

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
    // Each from 1: the range an error states is the range the check takes (0 accounts, projects or
    // members make nothing).
    let accounts = count_flag("--accounts", accounts, 1, MAX_COUNT)?;
    let projects = args
        .projects
        .as_deref()
        .map(|v| count_flag("--projects", v, 1, MAX_COUNT))
        .transpose()?;
    let k = args
        .users_per_project
        .as_deref()
        .map(|v| count_flag("--users-per-project", v, 1, MAX_COUNT))
        .transpose()?;
    let shape = plan::shape(accounts, projects, k)?;
    pattern.check_length(shape.accounts)?;
    let visibility = Visibility::parse(&args.visibility)?;
    let bcrypt_cost = match &args.bcrypt_cost {
        Some(c) => bcrypt_cost(c)?,
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
        password_from: match (&args.password, &args.password_file) {
            (Some(_), _) => PasswordFrom::Flag,
            (None, Some(_)) => PasswordFrom::File,
            (None, None) => PasswordFrom::Default,
        },
        bcrypt_cost,
        stack_dir: Default::default(),
        out: args.out.clone(),
        token_ttl,
        batch,
        schema_timeout,
        sweep_room: None,
    })
}

/// What `exectl prepare` is asked: seed (the options, and a note on a flag that will not be used), or
/// remove what it made (`--reset`).
pub enum Asked {
    Seed(PrepareOptions, Option<&'static str>),
    Reset(ResetOptions),
}

/// The flags, checked: the target, the stack, and a seeding run or a reset.
pub fn prepare(args: &PrepareArgs) -> Result<(TargetSpec, String, Asked), UsageError> {
    let target = crate::ops::spec_source::target_spec(&args.target.flags())?;
    let (stack, asked) = asked(args)?;
    Ok((target, stack, asked))
}

/// The stack, and a seeding run or a reset.
fn asked(args: &PrepareArgs) -> Result<(String, Asked), UsageError> {
    let stack = exectl_core::spec::resolve_stack_name(args.stack.as_deref())?;
    let via = Via::parse(&args.via)?;
    if !args.reset {
        let seed = options(args)?;
        let note = (seed.via == Via::Api && args.bcrypt_cost.is_some()).then_some(
            "note: --bcrypt-cost is not used with --via api: the app hashes each password at its own cost",
        );
        let opts = PrepareOptions {
            seed,
            break_lock: args.break_lock,
        };
        return Ok((stack, Asked::Seed(opts, note)));
    }
    if via == Via::Api {
        return Err(UsageError::new(
            "--via",
            "api",
            "--reset removes rows through SQL only",
            "run --reset without --via api (it removes only what the SQL path made; see prepare/README.md)",
        ));
    }
    let reset = ResetOptions {
        pattern: EmailPattern::parse(&args.email_pattern)?,
        schema_timeout: schema_timeout(&args.schema_timeout)?,
        out: args.out.clone(),
        break_lock: args.break_lock,
    };
    Ok((stack, Asked::Reset(reset)))
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

    /// Each count flag's stated range is the one its check takes: the lowest value an out-of-range
    /// error offers is accepted, and the one below it is refused with the same range.
    #[test]
    fn each_count_flags_range_is_the_one_it_checks() {
        let base = |flag: &str, v: &str| -> Vec<String> {
            let mut a = vec![];
            if flag != "--accounts" {
                a.extend(["--accounts".to_string(), "100".to_string()]);
            }
            a.extend([flag.to_string(), v.to_string()]);
            a
        };
        let run = |a: Vec<String>| {
            let a: Vec<&str> = a.iter().map(String::as_str).collect();
            options(&args(&a))
        };
        for flag in [
            "--accounts",
            "--projects",
            "--users-per-project",
            "--bcrypt-cost",
            "--batch-size",
        ] {
            let e = run(base(flag, "99999999999")).unwrap_err();
            assert_eq!(e.field, flag, "{e}");
            let (from, to) = e
                .fix
                .strip_prefix("pass a whole number from ")
                .and_then(|r| r.split_once(" to "))
                .unwrap_or_else(|| panic!("{flag}: {e}"));
            assert!(
                e.problem.contains(&format!("out of range {from}..={to}")),
                "{flag}: {e}"
            );
            let low: u64 = from.parse().unwrap();
            let ok = run(base(flag, from));
            assert!(
                ok.is_ok(),
                "{flag} {from}, the range's lowest: {:?}",
                ok.err()
            );
            if low > 0 {
                let e = run(base(flag, &(low - 1).to_string())).unwrap_err();
                assert!(
                    e.problem.contains(&format!("out of range {from}..")),
                    "{flag}: {e}"
                );
            }
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
