//! `exectl sweep`'s flags (and its sweep file) as `SweepOptions`: the shape (`ops::sweep_shape`), each
//! point's spec resolved and checked (`ops::sweep_plan`), each point's bench, the sweep's folder, all
//! before the first deploy (exit 2). `--resume RUN_ID` is `ops::sweep_plan::resume`: the sweep's plan as
//! its results.json keeps it, its `--set-secret` values from where they legitimately live.

use std::path::PathBuf;

use anyhow::{Context, Result};

use crate::cli::SweepArgs;
use crate::ops::sweep::SweepOptions;
use crate::ops::sweep_plan::FromFile;
use crate::ops::sweep_shape::{read_sweep_file, shape};
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
    let bench = crate::cli::options::bench::settings(&a.bench, &a.target.flags(), a.json)?;
    let target = crate::ops::spec_source::target_spec(&a.target.flags())?;
    target.one_engine("sweep")?;
    let source = crate::cli::spec::source(&a.spec)?;
    let seed = crate::ops::sweep_plan::checked_seed(
        &source,
        &vary,
        &mode,
        &bench,
        a.bcrypt_cost.as_deref(),
    )?;

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
    let deploy = crate::cli::options::converging(
        &a.deploy,
        crate::cli::spec::load_templates(&a.spec)?,
        Vec::new(),
        false,
    )?;
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
    use clap::Parser;
    use exectl_core::spec::SecretValue;

    fn args(extra: &[&str]) -> SweepArgs {
        let mut v = vec!["exectl", "sweep", "ha"];
        v.extend(extra);
        match Cli::parse_from(v).command {
            Command::Sweep(a) => *a,
            _ => unreachable!(),
        }
    }

    /// Each shape flag lands in its own field of the sweep file it stands for (what the shape is
    /// made of is `ops::sweep_shape`'s, tested there).
    #[test]
    fn the_shape_flags_are_the_sweep_file_they_stand_for() {
        let given = shape_flags(&args(&[
            "--vary",
            "cpus=1,2",
            "--vary",
            "instances=1,2",
            "--matrix",
            "--repeat",
            "3",
            "--find-room",
            "--users",
            "40",
            "--from",
            "4",
            "--to",
            "32",
            "--precision",
            "5%",
        ]));
        let want = SweepFile {
            vary: vec!["cpus=1,2".into(), "instances=1,2".into()],
            matrix: true,
            repeat: Some("3".into()),
            levels: None,
            from: Some("4".into()),
            to: Some("32".into()),
            precision: Some("5%".into()),
            find_capacity: false,
            find_room: true,
            users: Some("40".into()),
        };
        assert_eq!(given, want);
        let levels = shape_flags(&args(&["--levels", "10,20"]));
        assert_eq!(levels.levels.as_deref(), Some("10,20"));
        assert!(shape_flags(&args(&["--find-capacity"])).find_capacity);
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
}
