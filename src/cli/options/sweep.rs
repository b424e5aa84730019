//! `exectl sweep`'s flags (and its sweep file) as `SweepOptions`: the shape (`ops::sweep_shape`), each
//! point's spec resolved and checked (`ops::sweep_plan`), each point's bench, the sweep's folder, all
//! before the first deploy (exit 2). `--resume RUN_ID` is `ops::sweep_plan::resume`: the sweep's plan as
//! its results.json keeps it, its `--set-secret` values from where they legitimately live.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result};

use crate::cli::SweepArgs;
use crate::ops::deploy::DeployOptions;
use crate::ops::sweep::SweepOptions;
use crate::ops::sweep_plan::FromFile;
use crate::ops::sweep_shape::{read_sweep_file, shape};
use crate::ops::values::duration_flag;
use crate::state::sweeps::SweepDir;
use crate::sut::TargetSpec;
use exectl_core::sweep::file::SweepFile;

/// The target and the sweep's options, every flag checked; nothing connected to or made. With
/// `--resume`, the options are the sweep's plan as its results.json keeps them.
pub fn sweep(a: &SweepArgs) -> Result<(TargetSpec, SweepOptions)> {
    crate::state::checked_root()?;
    match &a.resume {
        None => {
            let here = std::env::current_dir().context("reading the current folder")?;
            fresh(a, here)
        }
        Some(id) => {
            let given = crate::ops::spec_source::secret_pairs(&a.spec.set_secret, |k| {
                std::env::var(k).ok()
            })?;
            crate::ops::sweep_plan::resume(id, &given, !a.json)
        }
    }
}

fn fresh(a: &SweepArgs, started_in: PathBuf) -> Result<(TargetSpec, SweepOptions)> {
    crate::ops::sweep_plan::plain_settings(&a.spec.set)?;
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
    crate::ops::sweep_plan::room_checks(&vary, &bench, &mode)?;
    let target = crate::cli::target::target_spec(&a.target)?;
    target.one_engine("sweep")?;
    let source = crate::cli::spec::source(&a.spec)?;
    crate::ops::sweep_plan::points_checked(&source, &vary, bench.fault.as_ref())?;

    let name = vary
        .iter()
        .map(|v| v.var.name().replace('.', "_"))
        .collect::<Vec<_>>()
        .join("-");
    let run_id = crate::ops::values::run_id_from_name(
        a.run_id.as_deref(),
        "S-NGINX-001",
        ("--vary", &name),
        |now| format!("S-{name}-{now}"),
    )?;
    let sweeps = crate::state::sweeps_dir(&crate::state::root());
    let (field, value, path) = crate::ops::values::run_folder(a.out.as_deref(), &run_id, &sweeps);
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
    if bench.load.tokens {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{Cli, Command};
    use crate::ops::bench_settings::BenchSettings;
    use crate::ops::sweep::Mode;
    use crate::ops::sweep_plan::*;
    use crate::ops::sweep_shape::*;
    use clap::Parser;
    use exectl_core::spec::SecretValue;
    use exectl_core::sweep::vary::{self, points};
    use std::path::Path;

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
