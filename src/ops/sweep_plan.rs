//! A sweep planned: its options (`SweepOptions`, what `ops::sweep` runs), and its plan as its
//! results.json keeps it (`SweepPlan`): its options besides what results.json holds as fields (the
//! variables, values, repeats, levels or search), typed, every secret as its keyed fingerprint.
//! Written by `ops::sweep` when the sweep begins; `--resume` makes the sweep's options from it again —
//! no command line is kept or read back (`resume`). Also what every sweep and campaign row checks of
//! its points before the first deploy: each point's spec, one database engine, a fault's service, a
//! room-size search's needs, no credential in a plain setting.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::bench_settings::BenchSettings;
use super::deploy::DeployOptions;
use super::spec_source::SpecSource;
use super::sweep_shape::Mode;
use crate::prepare::plan::{self, EmailPattern, Visibility};
use crate::prepare::{Options, Via};
use crate::state::sweeps::SweepDir;
use crate::sut::TargetSpec;
use exectl_core::bench::fault::Fault;
use exectl_core::error::UsageError;
use exectl_core::spec::{Raw, SecretValue};
use exectl_core::sweep::results::SweepResults;
use exectl_core::sweep::vary::{self, points, Vary, Workload};

/// A sweep: its variable and values, its repeats, each point's bench, all checked (`ops::sweep` runs it).
pub struct SweepOptions {
    pub run_id: String,
    pub dir: SweepDir,
    /// exectl.yaml and the spec's flags: read again when each point begins (an edit between points is
    /// seen, and stops the sweep).
    pub spec: SpecSource,
    /// One variable, or two with `--matrix`.
    pub vary: Vec<Vary>,
    pub repeat: u32,
    pub mode: Mode,
    pub deploy: DeployOptions,
    /// Each point's seeding: its accounts and projects are the point's (`seeding`), the rest as set.
    pub seed: crate::prepare::Options,
    /// Each point's bench: its levels, run id and folder are the point's. With its browser user, one
    /// more account is prepared.
    pub bench: BenchSettings,
    /// Tear the stack down at the end (its data kept) instead of leaving it at the last point.
    pub teardown: bool,
    /// The sweep to go on with (`--resume`): its points are kept, the next one runs.
    pub resumed: Option<SweepResults>,
    /// The sweep file the variables came from (None: flags, or a program's): a resume reads it again
    /// and refuses one that changed.
    pub sweep_file: Option<FromFile>,
    /// The folder the sweep began in (absolute), where a resume reads exectl.yaml and relative paths.
    pub started_in: PathBuf,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SweepPlan {
    pub target: TargetSpec,
    /// exectl.yaml, the settings and the images file, read again at each point.
    pub spec: SpecSource,
    /// The sweep file the variables came from: a resume reads it again and refuses one that changed.
    pub sweep_file: Option<FromFile>,
    pub wait_timeout: Duration,
    pub load_images: bool,
    pub seed: SeedPlan,
    pub bench: BenchSettings,
    pub teardown: bool,
}

/// A sweep file and the flags given with it (which win over it): a resume reads the file again and
/// makes the sweep's shape of both, to refuse a file that changed.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FromFile {
    pub path: PathBuf,
    pub flags: exectl_core::sweep::file::SweepFile,
}

/// A point's seeding but its accounts and projects (the point's): `prepare::Options` without its plan,
/// the password as its fingerprint when it is not the public default.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SeedPlan {
    pub via: Via,
    pub pattern: String,
    pub visibility: Visibility,
    /// None: the public default password.
    pub password: Option<String>,
    pub bcrypt_cost: u32,
    pub token_ttl: Option<Duration>,
    pub out: Option<PathBuf>,
    pub batch: usize,
    pub schema_timeout: Duration,
}

impl SeedPlan {
    pub fn of(o: &Options) -> SeedPlan {
        SeedPlan {
            via: o.via,
            pattern: o.plan.pattern.text(),
            visibility: o.plan.visibility,
            password: (o.password != plan::DEFAULT_PASSWORD).then(|| {
                SecretValue::new("password", &o.password)
                    .redacted()
                    .to_string()
            }),
            bcrypt_cost: o.bcrypt_cost,
            token_ttl: o.token_ttl,
            out: o.out.clone(),
            batch: o.batch,
            schema_timeout: o.schema_timeout,
        }
    }

    /// The seeding again (one account: each point reshapes it). A password other than the default is
    /// kept as a fingerprint only, and refused.
    pub fn options(&self) -> Result<Options, UsageError> {
        if let Some(print) = &self.password {
            return Err(UsageError::new(
                "--resume",
                print,
                "the sweep seeded its accounts with a password of its own, which is not kept",
                "start a new sweep",
            ));
        }
        let pattern = EmailPattern::parse(&self.pattern)?;
        let shape = plan::shape(1, None, None)?;
        Ok(Options {
            via: self.via,
            plan: plan::plan(shape, &pattern, self.visibility),
            bcrypt_cost: self.bcrypt_cost,
            token_ttl: self.token_ttl,
            out: self.out.clone(),
            batch: self.batch,
            schema_timeout: self.schema_timeout,
            ..Options::seeding(1, None)?
        })
    }
}

impl SweepPlan {
    pub fn of(target: &TargetSpec, o: &SweepOptions) -> SweepPlan {
        SweepPlan {
            target: target.clone(),
            spec: o.spec.clone(),
            sweep_file: o.sweep_file.clone(),
            wait_timeout: o.deploy.wait_timeout,
            load_images: o.deploy.load_images,
            seed: SeedPlan::of(&o.seed),
            bench: o.bench.clone(),
            teardown: o.teardown,
        }
    }
}

/// The point's spec: the input as it is now, with each variable set to its value.
pub fn point_spec(o: &SweepOptions, values: &[String]) -> anyhow::Result<exectl_core::spec::Spec> {
    let input = o.spec.read()?;
    Ok(vary::spec_at(input, &o.vary, values)?)
}

/// `sweep --resume RUN_ID`: the sweep's options as its results.json keeps them (refused when the file
/// was changed since), in the folder it was begun in, its secrets from `given_secrets` (the resume's
/// own `--set-secret KEY=VALUE`s) or the stack's 0600 .env; held (exit 4 while another process runs
/// it). `sample_lines`: a progress line every sample.
pub fn resume(
    id: &str,
    given_secrets: &[String],
    sample_lines: bool,
) -> anyhow::Result<(TargetSpec, SweepOptions)> {
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
        let file = super::sweep_shape::read_sweep_file(&f.path)?;
        let (v, repeat, m) = super::sweep_shape::shape(&f.flags, &file)?;
        super::sweep_shape::not_changed(&results, Some(&f.path), &v, repeat, &m)?;
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
        given_secrets,
        (&env, std::fs::read_to_string(&env).ok().as_deref()),
    )?
    .into_iter()
    .map(|kv| Raw::flag("--set-secret", kv))
    .collect();
    let templates = crate::ops::templates::templates(spec.templates.as_deref())?;
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
            sample_lines,
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
pub fn resumed_secrets(
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

/// `--set`s none a credential (`secrets::credential`): a sweep writes them into its results.json and
/// every point's run record. Refused naming the key, with `--set-secret`, which keeps the value out.
pub fn plain_settings(set: &[String]) -> Result<(), UsageError> {
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

/// What every sweep (and campaign row) checks before its first deploy, and the seeding its points
/// reshape: a room-size search's needs, every point's spec (one database engine, a fault's service),
/// the seeding's bcrypt cost (`--bcrypt-cost`, or a campaign's `bcrypt_cost`) and its tokens.
pub fn checked_seed(
    source: &SpecSource,
    vary: &[Vary],
    mode: &Mode,
    bench: &BenchSettings,
    bcrypt_cost: Option<&str>,
) -> anyhow::Result<Options> {
    room_checks(vary, bench, mode)?;
    points_checked(source, vary, bench.fault.as_ref())?;
    // Each scenario a point benches meets the load's rules with the sweep's other settings (churn,
    // tokens, a fault need what that scenario does): refused now, not at its point.
    for (values, _) in points(vary, 1) {
        let Some(name) = vary::PointWorkload::of(vary, &values).scenario else {
            continue;
        };
        let Some(scenario) = crate::load::Scenario::parse(&name) else {
            continue; // The variable's own reading names a scenario that does not exist.
        };
        let load = crate::load::settings::LoadSettings {
            scenario,
            ..bench.load.clone()
        };
        exectl_core::load::rules::check(&load.workload(bench.fault.as_ref())).map_err(|e| {
            UsageError::new(
                "--vary",
                format!("scenario={name}"),
                format!("the {name} point: {}", e.problem),
                e.fix,
            )
        })?;
    }
    let mut seed = Options::seeding(mode.top() + 1, None)?;
    if let Some(c) = bcrypt_cost {
        seed.bcrypt_cost = super::values::bcrypt_cost(c)?;
    }
    if bench.load.tokens {
        seed.token_ttl = Some(crate::prepare::DEFAULT_TOKEN_TTL);
    }
    Ok(seed)
}

/// Every point's spec resolved now, read as each point will read it (exit 2 before the first deploy),
/// the points' database engines: one, on the stack's one volume, and the fault's service among those
/// each point's stack runs.
pub fn points_checked(
    source: &SpecSource,
    vary: &[Vary],
    fault: Option<&Fault>,
) -> anyhow::Result<()> {
    let now = source.read()?;
    let templates = match fault {
        Some(_) => Some(crate::ops::templates::templates(
            source.templates.as_deref(),
        )?),
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

/// The stack has one database volume, and neither PostgreSQL nor MariaDB reads the other's data (the
/// deploy refuses it): points that would put both on it are refused before anything is deployed.
pub fn one_database_engine(
    engines: &[&str],
    vary: &[String],
    stack: &str,
) -> Result<(), UsageError> {
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

/// What a room-size search needs of the rest of the sweep, checked before the first deploy: rooms
/// whose deliveries are measured (collab, editing), each room size's own manifest (no `--pattern`),
/// and no other variable setting the room size.
pub fn room_checks(vary: &[Vary], bench: &BenchSettings, mode: &Mode) -> Result<(), UsageError> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::settings::LoadSettings;
    use crate::load::Scenario;
    use exectl_core::spec::SecretValue;
    use std::path::Path;

    /// What results.json keeps reads back as it was, but each secret: its fingerprint, never its value.
    #[test]
    fn a_plan_reads_back_as_written_with_its_secrets_as_fingerprints() {
        let mut flags = exectl_core::spec::SpecInput::default();
        flags
            .set("topology", "single")
            .unwrap()
            .set("cpus", "0.5")
            .unwrap();
        flags.env.push(exectl_core::spec::Raw::flag("--set", "A=1"));
        flags
            .secret_env
            .push(exectl_core::spec::Raw::flag("--set-secret", "K=hunter2"));
        let mut seed = Options::seeding(10, None).unwrap();
        seed.bcrypt_cost = 4;
        let plan = SweepPlan {
            target: TargetSpec::local(),
            spec: SpecSource {
                config: Some("/s/exectl.yaml".into()),
                flags,
                images: Some("images.yaml".into()),
                templates: None,
                no_config: false,
            },
            sweep_file: None,
            wait_timeout: Duration::from_secs(300),
            load_images: true,
            seed: SeedPlan::of(&seed),
            bench: BenchSettings {
                load: LoadSettings {
                    scenario: Scenario::LoginBurst,
                    hold: Duration::from_secs(3),
                    ..LoadSettings::default()
                },
                ..BenchSettings::default()
            },
            teardown: true,
        };
        let text = serde_json::to_string(&plan).unwrap();
        assert!(!text.contains("hunter2"), "{text}");
        assert!(
            text.contains("\"login-burst\"") && text.contains("K=<secret sha256:"),
            "{text}"
        );
        let back: SweepPlan = serde_json::from_str(&text).unwrap();
        let mut input = back.spec.flags.clone();
        assert_eq!(input.cpus.as_ref().unwrap().value, "0.5");
        assert_eq!(input.env[0].value, "A=1");
        assert_eq!(
            input.secret_env[0].value,
            format!("K={}", SecretValue::new("K", "hunter2").redacted())
        );
        assert_eq!(
            input
                .set("stack", "x")
                .unwrap()
                .stack
                .as_ref()
                .unwrap()
                .value,
            "x"
        );
        assert_eq!(back.bench.load.scenario, Scenario::LoginBurst);
        assert_eq!(back.bench.load.hold, Duration::from_secs(3));
        assert_eq!(back.seed.options().unwrap().bcrypt_cost, 4);
        assert!(back.teardown && back.load_images);
        // A password of the sweep's own is kept as a fingerprint, and a resume is refused.
        let mut own = seed.clone();
        own.password = "s3cret-pw".into();
        let p = SeedPlan::of(&own);
        assert!(!serde_json::to_string(&p).unwrap().contains("s3cret-pw"));
        assert_eq!(p.options().unwrap_err().field, "--resume");
    }

    /// A room-size search needs rooms that relay (collab, editing), each room size's own manifest, and
    /// no other variable setting the room size.
    #[test]
    fn a_room_size_search_refuses_what_would_not_measure_rooms() {
        let room = Mode::Room {
            bounds: exectl_core::sweep::search::Bounds::new(2, 20, 0.1).unwrap(),
            users: 40,
        };
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

    /// A scenario a point benches is held to the load's rules with the sweep's other settings before
    /// anything is deployed: churn needs a scenario that holds sockets, and login-burst holds none.
    #[test]
    fn a_varied_scenario_meets_the_load_rules_before_the_first_deploy() {
        let mut flags = exectl_core::spec::SpecInput::default();
        flags.set("topology", "single").unwrap();
        let source = SpecSource {
            config: None,
            flags,
            images: None,
            templates: None,
            no_config: true,
        };
        let mut bench = BenchSettings::default();
        bench.load.churn = Some(Duration::from_secs(5));
        let levels = Mode::Levels(vec![10]);
        let idle = vec![vary::parse("--vary", "scenario=idle,collab").unwrap()];
        checked_seed(&source, &idle, &levels, &bench, None).unwrap();
        let burst = vec![vary::parse("--vary", "scenario=idle,login-burst").unwrap()];
        let e = checked_seed(&source, &burst, &levels, &bench, None)
            .unwrap_err()
            .downcast::<UsageError>()
            .unwrap();
        assert_eq!(
            (e.field.as_str(), e.value.as_str()),
            ("--vary", "scenario=login-burst")
        );
        assert!(e.problem.contains("holds no socket to leave"), "{e}");
    }
}
