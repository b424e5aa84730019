//! `exectl sweep`'s flags (and its sweep file) as `SweepOptions`: the variable and its values, each
//! point's spec resolved, the repeats, the levels or the capacity search, each point's bench flags, and
//! the sweep's folder, all checked before the first deploy (exit 2). `--resume RUN_ID` reads the
//! command line the sweep was begun with from its results.json (refused when the file was changed
//! since), in the folder it was begun in, its `--set-secret` values from where they legitimately live,
//! and goes on with it.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result};

use crate::cli::values::{count_flag, duration_flag};
use crate::cli::SweepArgs;
use crate::ops::bench_settings::BenchSettings;
use crate::ops::deploy::DeployOptions;
use crate::ops::spec_source::SpecSource;
use crate::ops::sweep::{Mode, SweepOptions};
use crate::ops::sweep_plan::{FromFile, SweepPlan};
use crate::state::sweeps::SweepDir;
use crate::sut::TargetSpec;
use exectl_core::bench::fault::Fault;
use exectl_core::bench::parse_levels;
use exectl_core::error::UsageError;
use exectl_core::spec::{Raw, SecretValue};
use exectl_core::sweep::file::SweepFile;
use exectl_core::sweep::results::SweepResults;
use exectl_core::sweep::search::{Bounds, DEFAULT_PRECISION};
use exectl_core::sweep::vary::points;
use exectl_core::sweep::vary::{self, Vary, Workload};

/// Most runs of one value.
const MAX_REPEAT: u64 = 50;
/// The search's first level when --from is not given.
const DEFAULT_FROM: u64 = 100;
/// The room-size search's first room when --from is not given: two collaborators.
const DEFAULT_ROOM_FROM: u64 = 2;

/// The target and the sweep's options, every flag checked; nothing connected to or made. With
/// `--resume`, the options are the sweep's plan as its results.json keeps them.
pub fn sweep(a: &SweepArgs) -> Result<(TargetSpec, SweepOptions)> {
    crate::state::checked_root()?;
    let Some(id) = &a.resume else {
        let here = std::env::current_dir().context("reading the current folder")?;
        return fresh(a, here);
    };
    let (dir, results) = crate::state::sweeps::find(id)?;
    // Held from here on: a sweep another process runs (begun or resumed) is refused (exit 4).
    crate::engine::run_lock::hold(&dir.path, "sweep", id)?;
    let edited = results.edited();
    if !edited.is_empty() {
        return Err(UsageError::new(
            "--resume",
            id,
            format!(
                "{} was changed after the sweep wrote it: {} differ{} from what the sweep recorded",
                dir.results().display(),
                edited.join(", "),
                if edited.len() == 1 { "s" } else { "" }
            ),
            "put the file back as the sweep wrote it, or start a new sweep (an edited sweep is not resumed)",
        )
        .into());
    }
    let plan: SweepPlan = serde_json::from_value(results.plan.clone()).map_err(|e| {
        UsageError::new(
            "--resume",
            id,
            format!("its results.json's plan cannot be read: {e}"),
            "start the sweep again",
        )
    })?;
    // exectl.yaml and every relative path of the plan, as where the sweep began.
    std::env::set_current_dir(&results.started_in).map_err(|e| {
        UsageError::new(
            "--resume",
            id,
            format!(
                "the sweep began in {}, where its exectl.yaml and relative paths are read, and that folder cannot be entered: {e}",
                results.started_in.display()
            ),
            "put that folder back, or start a new sweep",
        )
    })?;
    // The variables, values, repeats and levels as recorded; a sweep file they came from, unchanged.
    let vary = results
        .variables
        .iter()
        .zip(&results.values)
        .map(|(name, values)| {
            Ok(Vary {
                var: vary::Var::parse("--resume", name)?,
                values: values.clone(),
            })
        })
        .collect::<Result<Vec<_>, UsageError>>()?;
    let mode = match (results.search, results.room_users) {
        (Some(bounds), Some(users)) => Mode::Room { bounds, users },
        (Some(b), None) => Mode::Search(b),
        (None, _) => Mode::Levels(results.levels.clone()),
    };
    if let Some(f) = &plan.sweep_file {
        let file = read_sweep_file(&f.path)?;
        let (v, repeat, m) = shape(&f.flags, &file)?;
        not_changed(&results, Some(&f.path), &v, repeat, &m)?;
    }
    let env = plan
        .target
        .bundle_dir(&results.stack)
        .join(exectl_core::render::ENV);
    let mut spec = plan.spec.clone();
    let recorded: Vec<String> = spec
        .flags
        .secret_env
        .iter()
        .map(|r| r.value.clone())
        .collect();
    spec.flags.secret_env = resumed_secrets(
        id,
        &recorded,
        &crate::cli::spec::secret_pairs(&a.spec.set_secret, |k| std::env::var(k).ok())?,
        (&env, std::fs::read_to_string(&env).ok().as_deref()),
    )?
    .into_iter()
    .map(|kv| Raw::flag("--set-secret", kv))
    .collect();
    let templates = crate::cli::spec::templates(spec.templates.as_deref())?;
    let opts = SweepOptions {
        run_id: results.run_id.clone(),
        dir,
        spec,
        vary,
        repeat: results.repeat,
        mode,
        deploy: DeployOptions {
            wait_timeout: plan.wait_timeout,
            load_images: plan.load_images,
            ..DeployOptions::new(templates)
        },
        seed: plan.seed.options()?,
        bench: BenchSettings {
            sample_lines: !a.json,
            ..plan.bench
        },
        teardown: plan.teardown,
        sweep_file: plan.sweep_file,
        started_in: results.started_in.clone(),
        resumed: Some(results),
    };
    points_checked(&opts.spec, &opts.vary, opts.bench.fault.as_ref())?;
    Ok((plan.target, opts))
}

/// A resumed sweep's `--set-secret KEY=VALUE`s: each recorded one (`KEY=<secret sha256:…>`) with its
/// value from the resume's own `--set-secret` (`given`), else from the stack's .env (`env`: its path
/// and text, 0600, where the deploy of the sweep put it), whichever has the value whose fingerprint was
/// recorded. A value given that is not the recorded one, or a key the sweep was not begun with, or a
/// value found nowhere, is refused naming the key (never the value).
fn resumed_secrets(
    id: &str,
    recorded: &[String],
    given: &[String],
    env: (&Path, Option<&str>),
) -> Result<Vec<String>, UsageError> {
    let split = |p: &str| -> (String, String) {
        let (k, v) = p.split_once('=').unwrap_or((p, ""));
        (k.to_string(), v.to_string())
    };
    let recorded: Vec<(String, String)> = recorded.iter().map(|p| split(p)).collect();
    for (k, v) in given.iter().map(|p| split(p)) {
        let shown = format!("{k}=<redacted>");
        match recorded.iter().find(|(rk, _)| *rk == k) {
            None => {
                return Err(UsageError::new(
                    "--set-secret",
                    shown,
                    format!("sweep {id} was not begun with --set-secret {k}, and a resume runs it as it was begun"),
                    "drop it, or start a new sweep with it",
                ))
            }
            Some((_, print)) if SecretValue::new(&k, &v).redacted() != print => {
                return Err(UsageError::new(
                    "--set-secret",
                    shown,
                    format!("not the value sweep {id} was begun with (its fingerprint is not the recorded {print})"),
                    "give the value the sweep was begun with, or start a new sweep",
                ))
            }
            Some(_) => {}
        }
    }
    let in_env = |k: &str| -> Option<String> {
        env.1?.lines().find_map(|l| {
            let (lk, lv) = l.split_once('=')?;
            (lk.trim() == k).then(|| lv.trim().to_string())
        })
    };
    recorded
        .iter()
        .map(|(k, print)| {
            if !print.starts_with("<secret sha256:") {
                return Ok(format!("{k}={print}"));
            }
            let from_line = given.iter().map(|p| split(p)).find(|(gk, _)| gk == k);
            if let Some((_, v)) = from_line {
                return Ok(format!("{k}={v}"));
            }
            match in_env(k) {
                Some(v) if SecretValue::new(k, &v).redacted() == print => Ok(format!("{k}={v}")),
                found => Err(UsageError::new(
                    "--resume",
                    id,
                    format!(
                        "the sweep was begun with --set-secret {k}, whose value exectl keeps only in the stack's {}, and {}",
                        env.0.display(),
                        match (env.1, found) {
                            (None, _) => "that file cannot be read",
                            (Some(_), None) => "that file has none",
                            (Some(_), Some(_)) => "that file has another (the stack was deployed since with another value)",
                        }
                    ),
                    format!("give it again: exectl sweep --resume {id} --set-secret {k} with {k} exported (out of `ps`), or --set-secret {k}=VALUE"),
                )),
            }
        })
        .collect()
}

fn fresh(a: &SweepArgs, started_in: PathBuf) -> Result<(TargetSpec, SweepOptions)> {
    plain_settings(&a.spec.set)?;
    let flags = shape_flags(a);
    let (file, sweep_file) = match &a.sweep_file {
        Some(path) => {
            let from = FromFile {
                path: path.clone(),
                flags: flags.clone(),
            };
            (read_sweep_file(path)?, Some(from))
        }
        None => (SweepFile::default(), None),
    };
    let (vary, repeat, mode) = shape(&flags, &file)?;
    // Each point's bench: the objectives, the sampling, the levels' load, checked before the first deploy.
    let bench = crate::cli::options::bench::settings(&a.bench, &a.target, a.json)?;
    room_checks(&vary, &bench, &mode)?;
    let target = crate::cli::target::target_spec(&a.target)?;
    target.one_engine("sweep")?;
    let source = crate::cli::spec::source(&a.spec)?;
    points_checked(&source, &vary, bench.fault.as_ref())?;

    let name = vary
        .iter()
        .map(|v| v.var.name().replace('.', "_"))
        .collect::<Vec<_>>()
        .join("-");
    let run_id = crate::cli::values::run_id_from_name(
        a.run_id.as_deref(),
        "S-NGINX-001",
        ("--vary", &name),
        |now| format!("S-{name}-{now}"),
    )?;
    let sweeps = crate::state::sweeps_dir(&crate::state::root());
    let (field, value, path) = crate::cli::values::run_folder(a.out.as_deref(), &run_id, &sweeps);
    let dir = SweepDir::check(&path, field, &value)?;
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
    let mut seed = crate::prepare::Options::seeding(mode.top() + 1, None)?;
    if let Some(c) = &a.bcrypt_cost {
        seed.bcrypt_cost = crate::cli::options::prepare::bcrypt_cost(c)?;
    }
    if a.bench.tokens {
        seed.token_ttl = Some(crate::prepare::DEFAULT_TOKEN_TTL);
    }
    Ok((
        target,
        SweepOptions {
            run_id,
            dir,
            spec: source,
            vary,
            repeat,
            mode,
            deploy,
            seed,
            bench,
            teardown: a.teardown,
            resumed: None,
            sweep_file,
            started_in,
        },
    ))
}

/// `--set`s none a credential (`secrets::credential`): a sweep writes them into its results.json and
/// every point's run record. Refused naming the key, with `--set-secret`, which keeps the value out.
fn plain_settings(set: &[String]) -> Result<(), UsageError> {
    for kv in set {
        let (k, v) = kv.split_once('=').unwrap_or((kv.as_str(), ""));
        exectl_core::secrets::refuse_credential(
            "--set",
            k,
            v,
            &format!("give it with --set-secret {k}, {k} exported before exectl (out of `ps`): its value then goes only to the stack's 0600 .env, never into the sweep's records"),
        )?;
    }
    Ok(())
}

/// Every point's spec resolved now, read as each point will read it (exit 2 before the first deploy),
/// the points' database engines: one, on the stack's one volume, and the fault's service among those
/// each point's stack runs.
pub(crate) fn points_checked(
    source: &SpecSource,
    vary: &[Vary],
    fault: Option<&Fault>,
) -> Result<()> {
    let now = source.read()?;
    let templates = match fault {
        Some(_) => Some(crate::cli::spec::templates(source.templates.as_deref())?),
        None => None,
    };
    let mut stack = None;
    let mut engines: Vec<&str> = Vec::new();
    for (values, _) in points(vary, 1) {
        let spec = vary::spec_at(now.clone(), vary, &values)?;
        engines.extend(spec.db_service().filter(|e| !engines.contains(e)));
        if let (Some(f), Some(t)) = (fault, &templates) {
            f.check_services(
                &spec.stack,
                &exectl_core::pipeline::service_names(&spec, t)?,
            )?;
        }
        stack = Some(spec.stack);
    }
    let stack = stack.expect("at least one point");
    let given: Vec<String> = vary
        .iter()
        .map(|v| format!("{}={}", v.var.name(), v.values.join(",")))
        .collect();
    Ok(one_database_engine(&engines, &given, &stack)?)
}

/// The shape of the sweep the command line gives (`--vary`, `--levels`, …), as a sweep file would.
fn shape_flags(a: &SweepArgs) -> SweepFile {
    SweepFile {
        vary: a.vary.clone(),
        matrix: a.matrix,
        repeat: a.repeat.clone(),
        levels: a.levels.clone(),
        from: a.from.clone(),
        to: a.to.clone(),
        precision: a.precision.clone(),
        find_capacity: a.find_capacity,
        find_room: a.find_room,
        users: a.users.clone(),
    }
}

/// The variables, the repeats and the levels or search: the flags', else the sweep file's.
fn shape(flags: &SweepFile, file: &SweepFile) -> Result<(Vec<Vary>, u32, Mode), UsageError> {
    let vary = variables(flags, file)?;
    shaped(vary, flags, file)
}

/// A campaign row's sweep, as its file gives it: its variable (none: its levels, or its search, on
/// the row's stack as it is), repeats and levels or search, checked as a sweep file's.
pub(crate) fn row_shape(file: &SweepFile) -> Result<(Vec<Vary>, u32, Mode), UsageError> {
    let none = SweepFile::default();
    let vary = match file.vary.is_empty() {
        true => Vec::new(),
        false => variables(&none, file)?,
    };
    shaped(vary, &none, file)
}

fn shaped(
    vary: Vec<Vary>,
    flags: &SweepFile,
    file: &SweepFile,
) -> Result<(Vec<Vary>, u32, Mode), UsageError> {
    let repeat = match flags.repeat.as_ref().or(file.repeat.as_ref()) {
        Some(k) => count_flag("--repeat", k, 1, MAX_REPEAT)? as u32,
        None => 1,
    };
    Ok((vary, repeat, mode(flags, file)?))
}

fn read_sweep_file(path: &Path) -> Result<SweepFile, UsageError> {
    let body = crate::shell::user_file::read_named(
        path,
        "--sweep-file",
        crate::shell::user_file::WRITTEN,
        "give the path of a readable sweep file",
    )?;
    exectl_core::sweep::file::parse(&path.display().to_string(), &body)
}

/// A resumed sweep is the one recorded: what its command line and sweep file give now (the file read
/// again, where the sweep began) must be the variables, values, repeats and levels or search that
/// results.json recorded, else the points to come would not be the sweep's (an edited sweep file,
/// c,d,e -> c,X,Y, ran X and Y as its points 2 and 3). Refused naming each field that differs.
fn not_changed(
    r: &SweepResults,
    sweep_file: Option<&Path>,
    vary: &[Vary],
    repeat: u32,
    mode: &Mode,
) -> Result<(), UsageError> {
    let list = |v: &[String]| v.join(",");
    let values = |vs: &[Vec<String>]| vs.iter().map(|v| list(v)).collect::<Vec<_>>().join(" × ");
    let (names, now_values): (Vec<String>, Vec<Vec<String>>) = vary
        .iter()
        .map(|v| (v.var.name(), v.values.clone()))
        .unzip();
    let (levels, search, room_users) = match mode {
        Mode::Levels(l) => (l.clone(), None, None),
        Mode::Search(b) => (vec![], Some(*b), None),
        Mode::Room { bounds, users } => (vec![], Some(*bounds), Some(*users)),
    };
    let shown_search = |b: &Option<Bounds>, room: Option<u64>| match (b, room) {
        (Some(b), room) => format!(
            "{} --from {} --to {} --precision {}%",
            match room {
                Some(u) => format!("--find-room --users {u}"),
                None => "--find-capacity".into(),
            },
            b.from,
            b.to,
            exectl_core::bench::decimal::show(b.precision * 100.0)
        ),
        (None, _) => "none".into(),
    };
    let shown_levels = |l: &[u64]| match l.is_empty() {
        true => "none".to_string(),
        false => l.iter().map(u64::to_string).collect::<Vec<_>>().join(","),
    };
    let mut differ: Vec<String> = Vec::new();
    if names != r.variables {
        differ.push(format!(
            "variables {} (recorded {})",
            list(&names),
            list(&r.variables)
        ));
    } else if now_values != r.values {
        differ.push(format!(
            "values {} (recorded {})",
            values(&now_values),
            values(&r.values)
        ));
    }
    if repeat != r.repeat {
        differ.push(format!("repeat {repeat} (recorded {})", r.repeat));
    }
    if levels != r.levels {
        differ.push(format!(
            "levels {} (recorded {})",
            shown_levels(&levels),
            shown_levels(&r.levels)
        ));
    }
    if search != r.search || room_users != r.room_users {
        differ.push(format!(
            "search {} (recorded {})",
            shown_search(&search, room_users),
            shown_search(&r.search, r.room_users)
        ));
    }
    if differ.is_empty() {
        return Ok(());
    }
    let from = match sweep_file {
        Some(f) => format!("its sweep file {} now gives", f.display()),
        None => "its command line now gives".to_string(),
    };
    Err(UsageError::new(
        "--resume",
        &r.run_id,
        format!(
            "{from} {}, not what the sweep began with",
            differ.join("; ")
        ),
        match sweep_file {
            Some(_) => "put the sweep file back as it was when the sweep began, or start a new sweep with it",
            None => "start a new sweep",
        },
    ))
}

/// The stack has one database volume, and neither PostgreSQL nor MariaDB reads the other's data (the
/// deploy refuses it): points that would put both on it are refused before anything is deployed.
fn one_database_engine(engines: &[&str], vary: &[String], stack: &str) -> Result<(), UsageError> {
    if engines.len() < 2 {
        return Ok(());
    }
    Err(UsageError::new(
        "--vary",
        vary.join(" "),
        format!(
            "its points would run {} on the stack's one database volume, and a deploy never starts one engine on another's data",
            engines.join(" and ")
        ),
        format!("compare database engines in two sweeps on two --stack names (or remove the data between them: exectl teardown --stack {stack} --purge)"),
    ))
}

/// The variables of `--vary` (or the file's): one, or two with `--matrix`.
fn variables(a: &SweepFile, file: &SweepFile) -> Result<Vec<Vary>, UsageError> {
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

/// Fixed levels, the capacity search or the room-size search: the flags' when they give one, else
/// the sweep file's.
fn mode(a: &SweepFile, file: &SweepFile) -> Result<Mode, UsageError> {
    let chosen = match a.levels.is_some() || a.find_capacity || a.find_room {
        true => a,
        false => file,
    };
    // The file's from, to and precision are its find_capacity's or its find_room's: a search reads
    // them only when they are its own (rooms of 2..64 are no capacity search's levels).
    let none = SweepFile::default();
    let file_of = |room: bool| match (room, file.find_room, file.find_capacity) {
        (true, true, _) | (false, _, true) => file,
        _ => &none,
    };
    if chosen.find_room {
        return room_mode(a, file_of(true));
    }
    // The file's `users` is its find_room's, which flags choosing another mode set aside.
    if let Some(users) = &a.users {
        return Err(UsageError::new(
            "--users",
            users,
            "--users is the room-size search's: the users at once of each room it probes",
            "add --find-room (with --to, the largest room), or drop --users",
        ));
    }
    let search = chosen.find_capacity;
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
    let file = file_of(false);
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

/// `--find-room --users N [--from K] --to K [--precision P]`: the largest room of N users at once.
fn room_mode(a: &SweepFile, file: &SweepFile) -> Result<Mode, UsageError> {
    let given = |f: fn(&SweepFile) -> &Option<String>| f(a).as_ref().or(f(file).as_ref());
    let users = given(|f| &f.users).ok_or_else(|| {
        UsageError::new(
            "--users",
            "",
            "the room-size search needs the users at once of its levels",
            "give --users N (its accounts are prepared), e.g. --find-room --users 1000 --to 500",
        )
    })?;
    let users = count_flag("--users", users, 2, exectl_core::bench::levels::MAX_USERS)?;
    let room = |flag: &str, v: &String| count_flag(flag, v, 1, Workload::MAX_ROOM);
    let from = match given(|f| &f.from) {
        Some(v) => room("--from", v)?,
        None => DEFAULT_ROOM_FROM,
    };
    let to = given(|f| &f.to).ok_or_else(|| {
        UsageError::new(
            "--to",
            "",
            "the room-size search needs its largest room",
            format!("give --to K (at most --users, {users}), e.g. --find-room --users {users} --to {users}"),
        )
    })?;
    let to = room("--to", to)?;
    if to > users {
        return Err(UsageError::new(
            "--to",
            to,
            format!("a room of {to} needs more users than the level's {users}"),
            format!("give --to {users} or less, or more --users"),
        ));
    }
    if from >= to {
        return Err(UsageError::new(
            "--from",
            from,
            format!("the room-size search needs --from below --to (--to is {to})"),
            format!("give e.g. --find-room --users {users} --from 2 --to {to}"),
        ));
    }
    let precision = match given(|f| &f.precision) {
        Some(p) => percent(p)?,
        None => DEFAULT_PRECISION,
    };
    Ok(Mode::Room {
        bounds: Bounds::new(from, to, precision)?,
        users,
    })
}

/// What a room-size search needs of the rest of the sweep, checked before the first deploy: rooms
/// whose deliveries are measured (collab, editing), each room size's own manifest (no `--pattern`),
/// and no other variable setting the room size.
pub(crate) fn room_checks(
    vary: &[Vary],
    bench: &BenchSettings,
    mode: &Mode,
) -> Result<(), UsageError> {
    let Mode::Room { .. } = mode else {
        return Ok(());
    };
    let scenario = bench.load.scenario;
    if !matches!(
        scenario,
        crate::load::Scenario::Collab | crate::load::Scenario::Editing
    ) {
        return Err(UsageError::new(
            "--scenario",
            scenario.name(),
            "a room-size search judges what the room's members relay to each other, and this scenario relays nothing",
            "give --scenario collab (or editing)",
        ));
    }
    if let Some(p) = &bench.load.pattern {
        return Err(UsageError::new(
            "--pattern",
            p,
            "a room-size search benches the manifest each room size seeds",
            "drop --pattern (--email-pattern names the accounts)",
        ));
    }
    if let Some(v) = vary
        .iter()
        .find(|v| v.var.workload() == Some(Workload::UsersPerProject))
    {
        return Err(UsageError::new(
            "--vary",
            format!("{}={}", v.var.name(), v.values.join(",")),
            "the room-size search sets the room size itself",
            "vary something else (the deployment, the scenario's interval), or drop --find-room",
        ));
    }
    Ok(())
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
    use crate::cli::{Cli, Command};
    use clap::Parser;

    fn args(extra: &[&str]) -> SweepArgs {
        let mut v = vec!["exectl", "sweep", "ha"];
        v.extend(extra);
        match Cli::parse_from(v).command {
            Command::Sweep(a) => *a,
            _ => unreachable!(),
        }
    }

    /// The sweep's shape as its flags give it.
    fn shaped(extra: &[&str]) -> SweepFile {
        shape_flags(&args(extra))
    }

    #[test]
    fn one_variable_or_two_with_matrix() {
        let f = SweepFile::default();
        let one = variables(
            &shaped(&["--vary", "nginx=tuned-ip-hash,tuned-least-conn"]),
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
            let e = variables(&shaped(&flags), &f).unwrap_err();
            assert_eq!(e.field, field, "{flags:?}");
            assert!(e.problem.contains(says), "{flags:?}: {e}");
        }
        let two = variables(
            &shaped(&[
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
            mode(&shaped(&["--levels", "100,200"]), &f).unwrap(),
            Mode::Levels(vec![100, 200])
        );
        let Mode::Search(b) = mode(&shaped(&["--find-capacity", "--to", "800"]), &f).unwrap()
        else {
            panic!("a search")
        };
        assert_eq!((b.from, b.to, b.precision), (100, 800, 0.10));
        let Mode::Search(b) = mode(
            &shaped(&[
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
                mode(&shaped(&flags), &f).unwrap_err().field,
                field,
                "{flags:?}"
            );
        }
    }

    #[test]
    fn a_room_size_search_with_its_users_and_bounds() {
        let f = SweepFile::default();
        let m = mode(
            &shaped(&["--find-room", "--users", "400", "--to", "200"]),
            &f,
        )
        .unwrap();
        let Mode::Room { bounds, users } = m else {
            panic!("a room search: {m:?}")
        };
        assert_eq!((bounds.from, bounds.to, users), (2, 200, 400));
        assert_eq!(m.top(), 400, "the accounts a probe needs are its users");
        // From the sweep file, unless a flag chooses another mode.
        let file = exectl_core::sweep::file::parse(
            "s.yaml",
            "vary: {cpus: [1, 2]}\nfind_room: {users: 40, from: 4, to: 32}\n",
        )
        .unwrap();
        let from_file = mode(&shaped(&[]), &file).unwrap();
        assert!(
            matches!(from_file, Mode::Room { bounds, users: 40 } if bounds.from == 4),
            "{from_file:?}"
        );
        assert_eq!(
            mode(&shaped(&["--levels", "10"]), &file).unwrap(),
            Mode::Levels(vec![10])
        );
        // A capacity search on the command line reads none of the file's room bounds.
        let e = mode(&shaped(&["--find-capacity"]), &file).unwrap_err();
        assert_eq!(e.field, "--to", "the file's find_room.to is no level: {e}");
        for (flags, field, says) in [
            (
                vec!["--find-room", "--to", "20"],
                "--users",
                "needs the users",
            ),
            (
                vec!["--find-room", "--users", "40"],
                "--to",
                "its largest room",
            ),
            (
                vec!["--find-room", "--users", "40", "--to", "50"],
                "--to",
                "a room of 50 needs more users",
            ),
            (
                vec!["--find-room", "--users", "1", "--to", "1"],
                "--users",
                "",
            ),
            (
                vec!["--find-room", "--users", "40", "--from", "8", "--to", "4"],
                "--from",
                "--from below --to",
            ),
            (
                vec!["--levels", "10", "--users", "40"],
                "--users",
                "the room-size search's",
            ),
        ] {
            let e = mode(&shaped(&flags), &f).unwrap_err();
            assert_eq!(e.field, field, "{flags:?}: {e}");
            assert!(e.problem.contains(says), "{flags:?}: {e}");
        }
    }

    /// A room-size search needs rooms that relay (collab, editing), each room size's own manifest, and
    /// no other variable setting the room size.
    #[test]
    fn a_room_size_search_refuses_what_would_not_measure_rooms() {
        let room = mode(
            &shaped(&["--find-room", "--users", "40", "--to", "20"]),
            &SweepFile::default(),
        )
        .unwrap();
        let mut collab = BenchSettings::default();
        collab.load.scenario = crate::load::Scenario::Collab;
        let fault = vec![vary::parse("--vary", "env.STANDIN_FAULT=none,slow-relay").unwrap()];
        room_checks(&fault, &collab, &room).unwrap();
        let idle = BenchSettings::default();
        assert_eq!(
            room_checks(&fault, &idle, &room).unwrap_err().field,
            "--scenario"
        );
        let mut pattern = collab.clone();
        pattern.load.pattern = Some("u-{i}@x.net".into());
        assert_eq!(
            room_checks(&fault, &pattern, &room).unwrap_err().field,
            "--pattern"
        );
        let rooms = vec![vary::parse("--vary", "users_per_project=2,4").unwrap()];
        assert_eq!(
            room_checks(&rooms, &collab, &room).unwrap_err().field,
            "--vary"
        );
        // Levels and capacity searches are not its business.
        room_checks(&rooms, &idle, &Mode::Levels(vec![10])).unwrap();
    }

    /// A percent is written with its %; a bare number (a share or a percent?) and a percent out of
    /// range are refused naming the flag, the value and the fix.
    #[test]
    fn the_precision_is_a_percent_with_its_sign() {
        assert_eq!(percent("10%").unwrap(), 0.10);
        assert_eq!(percent("0.5 %").unwrap(), 0.005);
        for (text, says) in [
            ("0.1", "without %"),
            ("0.05%", "not between 0.1 % and 100 %"),
            ("150%", "not between"),
            ("ten%", "not a percent"),
            ("lots", "not a percent"),
        ] {
            let e = percent(text).unwrap_err();
            assert_eq!((e.field.as_str(), e.value.as_str()), ("--precision", text));
            assert!(e.problem.contains(says), "{text}: {e}");
            assert!(e.fix.contains("--precision 10%"), "{e}");
        }
    }

    /// results.json keeps each --set-secret as its fingerprint, in either spelling; the rest as given.
    #[test]
    fn the_kept_plan_has_no_secret() {
        let a = args(&[
            "--set-secret",
            "SMTP_PASSWORD=hunter2",
            "--set-secret=TOKEN=s3cr=t",
            "--set",
            "A=hunter2",
            "--vary",
            "env.M=a,b",
        ]);
        let kept = serde_json::to_value(crate::cli::spec::source(&a.spec).unwrap()).unwrap();
        let text = kept.to_string();
        assert!(!text.contains("s3cr"), "{text}");
        assert_eq!(
            kept["secrets"],
            serde_json::json!([
                format!(
                    "SMTP_PASSWORD={}",
                    SecretValue::new("SMTP_PASSWORD", "hunter2").redacted()
                ),
                format!("TOKEN={}", SecretValue::new("TOKEN", "s3cr=t").redacted()),
            ])
        );
        assert_eq!(
            kept["env"],
            serde_json::json!(["A=hunter2"]),
            "a --set value is not a secret"
        );
        assert_eq!(kept["settings"]["topology"], "ha");
    }

    /// A resume takes each secret's value from its own --set-secret or the stack's .env, where the
    /// fingerprint recorded matches; anything else is refused naming the key, never the value.
    #[test]
    fn a_resumed_secret_is_the_recorded_one_or_refused() {
        let print = SecretValue::new("K", "hunter2").redacted().to_string();
        let recorded = vec![format!("K={print}")];
        let env = Path::new("/s/bundle/.env");
        let ok = |given: &[&str], text: Option<&str>| {
            let given: Vec<String> = given.iter().map(|s| s.to_string()).collect();
            resumed_secrets("S-1", &recorded, &given, (env, text))
        };
        let dotenv = "# Secrets of stack s\nAPP_SECRET=x\nK=hunter2\n";
        assert_eq!(ok(&[], Some(dotenv)).unwrap(), ["K=hunter2"]);
        assert_eq!(ok(&["K=hunter2"], None).unwrap(), ["K=hunter2"]);
        for (given, text, field, says) in [
            (
                vec!["K=wrong"],
                Some(dotenv),
                "--set-secret",
                "not the value",
            ),
            (
                vec!["J=x"],
                Some(dotenv),
                "--set-secret",
                "not begun with --set-secret J",
            ),
            (vec![], Some("K=0th3rval\n"), "--resume", "has another"),
            (vec![], Some("APP_SECRET=x\n"), "--resume", "has none"),
            (vec![], None, "--resume", "cannot be read"),
        ] {
            let e = ok(&given, text).unwrap_err();
            assert_eq!(e.field, field, "{e}");
            assert!(e.problem.contains(says), "{e}");
            let all = e.to_string();
            assert!(
                !all.contains("hunter2") && !all.contains("wrong") && !all.contains("0th3rval"),
                "{all}"
            );
            if field == "--resume" {
                assert!(e.fix.contains("--set-secret K=VALUE"), "{e}");
            }
        }
    }

    #[test]
    fn two_database_engines_on_one_volume_are_refused() {
        let vary = vec!["db=postgres,mariadb".to_string()];
        assert!(one_database_engine(&["postgres"], &vary, "s").is_ok());
        assert!(one_database_engine(&[], &vary, "s").is_ok());
        let e = one_database_engine(&["postgres", "mariadb"], &vary, "s").unwrap_err();
        assert_eq!(
            (e.field.as_str(), e.value.as_str()),
            ("--vary", "db=postgres,mariadb")
        );
        assert!(e.problem.contains("postgres and mariadb"), "{e}");
    }
}
