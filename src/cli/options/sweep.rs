//! `exectl sweep`'s flags (and its sweep file) as `SweepOptions`: the variable and its values, each
//! point's spec resolved, the repeats, the levels or the capacity search, each point's bench flags, and
//! the sweep's folder, all checked before the first deploy (exit 2). `--resume RUN_ID` reads the
//! command line the sweep was begun with from its results.json and goes on with it.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Result;
use clap::Parser;

use crate::bench::Stop;
use crate::cli::values::{count_flag, duration_flag};
use crate::cli::{BenchArgs, Cli, Command, PrepareArgs, SweepArgs};
use crate::ops::deploy::DeployOptions;
use crate::ops::prepare::PrepareOptions;
use crate::ops::sweep::{BenchAsk, Mode, SweepOptions};
use crate::shell::alive;
use crate::state::sweeps::SweepDir;
use crate::sut::TargetSpec;
use exectl_core::bench::{parse_levels, RunState};
use exectl_core::error::UsageError;
use exectl_core::spec::SpecInput;
use exectl_core::sweep::file::SweepFile;
use exectl_core::sweep::search::{Bounds, DEFAULT_PRECISION};
use exectl_core::sweep::vary::points;
use exectl_core::sweep::vary::{self, Vary};

/// Most runs of one value.
const MAX_REPEAT: u64 = 50;
/// The search's first level when --from is not given.
const DEFAULT_FROM: u64 = 100;

/// The target and the sweep's options, every flag checked; nothing connected to or made. `asked` is
/// the command line after `sweep` (kept for `--resume`).
pub fn sweep(a: &SweepArgs, asked: Vec<String>) -> Result<(TargetSpec, SweepOptions)> {
    crate::state::checked_root()?;
    let Some(id) = &a.resume else {
        return fresh(a, asked, None);
    };
    let (dir, results) = crate::state::sweeps::find(id)?;
    if let (RunState::Running, Some(pid)) = (results.state, results.pid) {
        if alive(pid) {
            return Err(UsageError::new(
                "--resume",
                id,
                format!("the sweep is still running (process {pid})"),
                "wait for it, or stop it (Ctrl-C, kill) and resume then",
            )
            .into());
        }
    }
    let again = match Cli::try_parse_from(
        ["exectl".to_string(), "sweep".to_string()]
            .into_iter()
            .chain(results.asked.iter().cloned()),
    ) {
        Ok(Cli {
            command: Command::Sweep(s),
        }) => *s,
        _ => {
            return Err(UsageError::new(
                "--resume",
                id,
                "its results.json does not hold the sweep's command line",
                "start the sweep again",
            )
            .into())
        }
    };
    let asked = results.asked.clone();
    fresh(&again, asked, Some((dir, results)))
}

fn fresh(
    a: &SweepArgs,
    asked: Vec<String>,
    resumed: Option<(SweepDir, exectl_core::sweep::results::SweepResults)>,
) -> Result<(TargetSpec, SweepOptions)> {
    let file = match &a.sweep_file {
        Some(p) => {
            let body = std::fs::read_to_string(p).map_err(|e| {
                UsageError::new(
                    "--sweep-file",
                    p.display(),
                    format!("cannot read it: {e}"),
                    "give the path of a readable sweep file",
                )
            })?;
            exectl_core::sweep::file::parse(&p.display().to_string(), &body)?
        }
        None => SweepFile::default(),
    };
    let vary = variables(a, &file)?;
    let repeat = match a.repeat.as_ref().or(file.repeat.as_ref()) {
        Some(k) => count_flag("--repeat", k, 1, MAX_REPEAT)? as u32,
        None => 1,
    };
    let mode = mode(a, &file)?;
    crate::cli::options::bench::check_flags(&a.bench, &a.target)?;

    // The stack before its variable, read as each point will read it; every point's spec resolved now.
    let target = crate::cli::target::target_spec(&a.target)?;
    target.one_engine("sweep")?;
    let spec_args = a.spec.clone();
    let input = move || -> Result<SpecInput> {
        let file = crate::cli::spec::read_spec_file(spec_args.config.as_deref())?;
        Ok(crate::cli::spec::input_from(file, &spec_args)?)
    };
    let now = input()?;
    let mut stack = None;
    for (values, _) in points(&vary, 1) {
        let mut i = now.clone();
        for (v, value) in vary.iter().zip(&values) {
            v.var.apply(&mut i, value);
        }
        stack = Some(exectl_core::spec::resolve(i)?.stack);
    }
    let stack = stack.expect("at least one point");

    let (run_id, dir, resumed) = match resumed {
        Some((dir, r)) => (r.run_id.clone(), dir, Some(r)),
        None => {
            let name = vary
                .iter()
                .map(|v| v.var.name().replace('.', "_"))
                .collect::<Vec<_>>()
                .join("-");
            let run_id = crate::cli::values::run_id(a.run_id.as_deref(), "S-NGINX-001", |now| {
                format!("S-{name}-{now}")
            })?;
            let (field, value, path) = match &a.out {
                Some(d) => ("--out", d.display().to_string(), d.clone()),
                None => (
                    "--run-id",
                    run_id.clone(),
                    crate::state::sweeps_dir(&crate::state::root()).join(&run_id),
                ),
            };
            (run_id, SweepDir::check(&path, field, &value)?, None)
        }
    };

    let deploy = DeployOptions {
        wait_timeout: duration_flag(
            "--wait-timeout",
            &a.wait_timeout,
            Duration::from_millis(1),
            Duration::from_secs(86_400),
        )?,
        load_images: a.load_images,
        break_lock: false,
        templates: crate::cli::spec::load_templates(&a.spec)?,
        place: Vec::new(),
    };
    // Checked now, as prepare checks it: a bad cost is refused before the first deploy.
    crate::cli::options::prepare::options(&prepare_args(
        &a.target,
        &stack,
        mode.top() + 1,
        a.bcrypt_cost.as_deref(),
    ))?;
    let prepare = {
        let target = a.target.clone();
        let stack = stack.clone();
        let cost = a.bcrypt_cost.clone();
        move |accounts: u64| -> Result<PrepareOptions> {
            let args = prepare_args(&target, &stack, accounts, cost.as_deref());
            Ok(PrepareOptions {
                seed: crate::cli::options::prepare::options(&args)?,
                break_lock: false,
            })
        }
    };
    let bench = {
        let (target, stack, flags, json) =
            (a.target.clone(), stack.clone(), a.bench.clone(), a.json);
        move |ask: BenchAsk<'_>| -> Result<crate::ops::bench::BenchOptions> {
            let levels: Vec<String> = ask.levels.iter().map(u64::to_string).collect();
            Ok(crate::cli::options::bench::bench(&BenchArgs {
                target: target.clone(),
                stack: Some(stack.clone()),
                levels: levels.join(","),
                flags: flags.clone(),
                run_id: Some(ask.run_id.to_string()),
                json,
                out: Some(ask.out.to_path_buf()),
            })?)
        }
    };
    Ok((
        target,
        SweepOptions {
            run_id,
            dir,
            input: Box::new(input),
            vary,
            repeat,
            mode,
            scenario: a.bench.scenario.clone(),
            deploy,
            prepare: Box::new(prepare),
            bench: Box::new(bench),
            browser_probe: a.bench.browser_probe,
            teardown: a.teardown,
            stop: Arc::new(Stop::default()),
            resumed,
            asked,
        },
    ))
}

/// `prepare`'s flags for a point: `accounts`, the rest its defaults.
fn prepare_args(
    target: &crate::cli::target::TargetArgs,
    stack: &str,
    accounts: u64,
    bcrypt_cost: Option<&str>,
) -> PrepareArgs {
    let mut argv = vec![
        "exectl".to_string(),
        "prepare".into(),
        "--stack".into(),
        stack.into(),
        "--accounts".into(),
        accounts.to_string(),
    ];
    if let Some(c) = bcrypt_cost {
        argv.extend(["--bcrypt-cost".into(), c.into()]);
    }
    match Cli::parse_from(argv).command {
        Command::Prepare(mut p) => {
            p.target = target.clone();
            p
        }
        _ => unreachable!("parsed as prepare"),
    }
}

/// The variables of `--vary` (or the file's): one, or two with `--matrix`.
fn variables(a: &SweepArgs, file: &SweepFile) -> Result<Vec<Vary>, UsageError> {
    let given = if a.vary.is_empty() {
        &file.vary
    } else {
        &a.vary
    };
    let vary: Vec<Vary> = given
        .iter()
        .map(|v| vary::parse("--vary", v))
        .collect::<Result<_, _>>()?;
    let matrix = a.matrix || file.matrix;
    match (vary.len(), matrix) {
        (0, _) => Err(UsageError::new(
            "--vary",
            "",
            "no variable",
            "give --vary VAR=V1,V2,... (e.g. --vary nginx=baseline-default,tuned-least-conn), or a --sweep-file",
        )),
        (1, false) => Ok(vary),
        (2, true) => {
            if vary[0].var == vary[1].var {
                return Err(UsageError::new(
                    "--vary",
                    given.join(" "),
                    "the same variable twice",
                    "give two different variables to --matrix",
                ));
            }
            Ok(vary)
        }
        (1, true) => Err(UsageError::new(
            "--matrix",
            "true",
            "one variable: a matrix needs two",
            "give a second --vary, or drop --matrix",
        )),
        (n, _) => Err(UsageError::new(
            "--vary",
            given.join(" "),
            format!("{n} variables: a sweep changes one thing at a time"),
            if n == 2 {
                "give one --vary, or add --matrix to sweep every pair of two variables"
            } else {
                "give one --vary (or two with --matrix)"
            },
        )),
    }
}

/// Fixed levels, or the capacity search.
fn mode(a: &SweepArgs, file: &SweepFile) -> Result<Mode, UsageError> {
    let search = a.find_capacity || (file.find_capacity && a.levels.is_none());
    if !search {
        let levels = a.levels.as_ref().or(file.levels.as_ref()).ok_or_else(|| {
            UsageError::new(
                "--levels",
                "",
                "no levels and no --find-capacity",
                "give --levels N,N,... for each point's bench, or --find-capacity --to N",
            )
        })?;
        return Ok(Mode::Levels(parse_levels(levels)?));
    }
    let users =
        |flag: &str, v: &String| count_flag(flag, v, 1, exectl_core::bench::levels::MAX_USERS);
    let from = match a.from.as_ref().or(file.from.as_ref()) {
        Some(v) => users("--from", v)?,
        None => DEFAULT_FROM,
    };
    let to = a.to.as_ref().or(file.to.as_ref()).ok_or_else(|| {
        UsageError::new(
            "--to",
            "",
            "the search needs its last level",
            "give --to N (its accounts are prepared), e.g. --find-capacity --to 20000",
        )
    })?;
    let to = users("--to", to)?;
    let precision = match a.precision.as_ref().or(file.precision.as_ref()) {
        Some(p) => percent(p)?,
        None => DEFAULT_PRECISION,
    };
    Ok(Mode::Search(Bounds::new(from, to, precision)?))
}

/// A percent with its sign, `10%` or `0.5%`, from 0.1 % to 100 %. A bare number is refused: `0.1`
/// could mean 10 % or 0.1 %.
fn percent(text: &str) -> Result<f64, UsageError> {
    let bad = |problem: &str| {
        UsageError::new(
            "--precision",
            text,
            problem,
            "give a percent from 0.1% to 100% with its %, e.g. --precision 10%",
        )
    };
    let t = text.trim();
    let Some(p) = t.strip_suffix('%') else {
        return Err(bad(if t.parse::<f64>().is_ok() {
            "a number without %, which could be a share or a percent"
        } else {
            "not a percent"
        }));
    };
    match p.trim().parse::<f64>().map(|x| x / 100.0) {
        Ok(x) if exectl_core::sweep::search::PRECISION.contains(&x) => Ok(x),
        Ok(_) => Err(bad("not between 0.1 % and 100 %")),
        Err(_) => Err(bad("not a percent")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(extra: &[&str]) -> SweepArgs {
        let mut v = vec!["exectl", "sweep", "ha"];
        v.extend(extra);
        match Cli::parse_from(v).command {
            Command::Sweep(a) => *a,
            _ => unreachable!(),
        }
    }

    #[test]
    fn one_variable_or_two_with_matrix() {
        let f = SweepFile::default();
        let one = variables(
            &args(&["--vary", "nginx=tuned-ip-hash,tuned-least-conn"]),
            &f,
        )
        .unwrap();
        assert_eq!(one.len(), 1);
        for (flags, field, says) in [
            (vec![], "--vary", "no variable"),
            (
                vec!["--vary", "instances=1,2", "--vary", "cpus=1,2"],
                "--vary",
                "one thing at a time",
            ),
            (
                vec!["--vary", "instances=1,2", "--matrix"],
                "--matrix",
                "needs two",
            ),
            (
                vec!["--vary", "cpus=1,2", "--vary", "cpus=3", "--matrix"],
                "--vary",
                "same variable",
            ),
        ] {
            let e = variables(&args(&flags), &f).unwrap_err();
            assert_eq!(e.field, field, "{flags:?}");
            assert!(e.problem.contains(says), "{flags:?}: {e}");
        }
        let two = variables(
            &args(&[
                "--vary",
                "instances=1,2",
                "--vary",
                "cpus=0.5,1",
                "--matrix",
            ]),
            &f,
        )
        .unwrap();
        assert_eq!(points(&two, 1).len(), 4);
        assert_eq!(points(&two, 3).len(), 12);
    }

    #[test]
    fn levels_or_a_search_with_its_bounds() {
        let f = SweepFile::default();
        assert_eq!(
            mode(&args(&["--levels", "100,200"]), &f).unwrap(),
            Mode::Levels(vec![100, 200])
        );
        let Mode::Search(b) = mode(&args(&["--find-capacity", "--to", "800"]), &f).unwrap() else {
            panic!("a search")
        };
        assert_eq!((b.from, b.to, b.precision), (100, 800, 0.10));
        let Mode::Search(b) = mode(
            &args(&[
                "--find-capacity",
                "--from",
                "50",
                "--to",
                "800",
                "--precision",
                "5%",
            ]),
            &f,
        )
        .unwrap() else {
            panic!("a search")
        };
        assert_eq!((b.from, b.precision), (50, 0.05));
        for (flags, field) in [
            (vec![], "--levels"),
            (vec!["--find-capacity"], "--to"),
            (vec!["--find-capacity", "--to", "50"], "--from"),
            (
                vec!["--find-capacity", "--to", "800", "--precision", "lots"],
                "--precision",
            ),
            (vec!["--levels", "200,100"], "--levels"),
        ] {
            assert_eq!(
                mode(&args(&flags), &f).unwrap_err().field,
                field,
                "{flags:?}"
            );
        }
    }
}
