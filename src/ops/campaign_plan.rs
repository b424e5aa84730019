//! A campaign planned: its file (or the run to resume) and the flags over every row as
//! `CampaignOptions` — each row's spec (the file's settings, the row's over them, the stack and port
//! flags over both; never ./exectl.yaml), its sweep (a sweep file's keys, `sweep_shape`), its bench
//! (`BenchSettings::from_input` of the row's typed `bench:`) and its seeding, each row's every point
//! resolved — all before anything is connected to (exit 2, naming the row); and each row's estimate
//! (`--plan`). A resume holds the campaign's run (exit 4 while another process does), refuses its
//! results.json changed since it was written or missing a folder it cites, and reads the campaign's
//! file again, refusing one whose settings (or images file) changed since, naming each key. A program
//! plans a campaign with `plan(&PlanOptions { file: Some(path), ..Default::default() })`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use sha2::{Digest, Sha256};

use crate::ops::bench_settings::BenchSettings;
use crate::ops::campaign::{CampaignOptions, RowPlan};
use crate::ops::deploy::DeployOptions;
use crate::ops::spec_source::SpecSource;
use crate::ops::sweep::{Mode, SweepOptions};
use crate::state::campaigns::CampaignDir;
use crate::state::sweeps::SweepDir;
use crate::sut::TargetSpec;
use exectl_core::campaign::estimate::{self, Deploy, Shape};
use exectl_core::campaign::file::{CampaignFile, Row};
use exectl_core::campaign::results::RunFlags;
use exectl_core::error::UsageError;
use exectl_core::spec::{Raw, SpecInput};
use exectl_core::sweep::vary::{self, points, spec_at};

/// A row's error named by its row: "rows[2] (idle 1000): --hold".
fn in_row(i: usize, row: &Row, mut e: UsageError) -> UsageError {
    e.field = format!("rows[{i}] ({}): {}", row.name, e.field);
    e
}

/// The file's text and its parse.
fn read_file(path: &Path, field: &str) -> Result<(String, CampaignFile), UsageError> {
    let text = crate::shell::user_file::read_named(
        path,
        field,
        crate::shell::user_file::WRITTEN,
        "give the path of a campaign file (campaigns/quick.yaml)",
    )?;
    let file = exectl_core::campaign::file::parse(&path.display().to_string(), &text)?;
    Ok((text, file))
}

fn sha256(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// The file's settings under every row, each as its fingerprint, with its images file's content
/// (read as every user's file is: one that cannot be is refused by the spec's own reading of it,
/// which comes next).
fn file_inputs(file: &CampaignFile, base: &Path) -> BTreeMap<String, String> {
    let images = file
        .images
        .as_ref()
        .and_then(|p| {
            crate::shell::user_file::read(&base.join(p), crate::shell::user_file::WRITTEN).ok()
        })
        .map(|bytes| sha256(&bytes));
    exectl_core::campaign::results::file_inputs(file, images.as_deref())
}

/// A resume's check of the campaign file read again (`inputs` the file's, `rows` the rows'):
/// refused, naming each setting that changed since the campaign began (exit 2).
fn unchanged(
    r: &exectl_core::campaign::results::CampaignResults,
    path: &Path,
    inputs: &BTreeMap<String, String>,
    rows: &[RowPlan],
) -> Result<(), UsageError> {
    let now: Vec<(String, BTreeMap<String, String>)> = rows
        .iter()
        .map(|p| (p.name.clone(), p.inputs.clone()))
        .collect();
    let changed = r.changed_inputs(inputs, &now);
    if changed.is_empty() {
        return Ok(());
    }
    Err(UsageError::new(
        "--resume",
        &r.run_id,
        format!(
            "changed since the campaign began ({}): {}",
            path.display(),
            changed.join("; ")
        ),
        "put the file (and the images file it names) back as it was, or start a new campaign with it",
    ))
}

/// What the plan says of one row.
#[derive(Debug, Clone, serde::Serialize)]
pub struct PlannedRow {
    pub index: usize,
    pub name: String,
    pub topology: String,
    pub stack: String,
    pub deploy: Deploy,
    pub points: u32,
    pub levels: String,
    pub estimate_s: f64,
}

/// `--plan`: the rows, what each deploys, and how long each and the whole should take.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Planned {
    pub name: String,
    pub file: String,
    pub rows: Vec<PlannedRow>,
    pub estimate_s: f64,
}

/// What a campaign is asked besides its file's rows: the file or the run to resume, where it runs,
/// and the flags over every row (`exectl campaign`'s).
#[derive(Debug, Clone, Default)]
pub struct PlanOptions {
    /// The campaign file (none with `resume`).
    pub file: Option<PathBuf>,
    /// The run id of a campaign to go on with, on its own target and flags.
    pub resume: Option<String>,
    /// Where the rows run (None: a resume's own target, else this machine's engine).
    pub target: Option<TargetSpec>,
    /// `--stack`, `--http-port`, `--lb-port`, `--teardown` (a resume's are its own).
    pub flags: RunFlags,
    pub run_id: Option<String>,
    /// The campaign's folder [default: RUN_ID under the state's campaigns].
    pub out: Option<PathBuf>,
}

/// The target, the campaign's options and its plan; nothing connected to or made (but `--plan`
/// needs no target: it is returned all the same).
pub fn plan(o: &PlanOptions) -> Result<(TargetSpec, CampaignOptions, Planned)> {
    crate::state::checked_root()?;
    let here = std::env::current_dir().context("reading the current folder")?;
    let (path, resumed, dir) = match &o.resume {
        Some(id) => {
            let (dir, r) = crate::state::campaigns::find(id)?;
            // Held from here on: a campaign another process runs is refused (exit 4), its files
            // untouched; then its results as written and the folders they cite.
            crate::engine::run_lock::hold(&dir.path, "campaign", id)?;
            crate::state::campaigns::resumable(&dir, &r)?;
            (PathBuf::from(&r.file_path), Some(r), Some(dir))
        }
        None => (
            o.file.clone().ok_or_else(|| {
                UsageError::new(
                    "FILE",
                    "",
                    "no campaign file",
                    "give one: exectl campaign campaigns/quick.yaml (or --resume RUN_ID)",
                )
            })?,
            None,
            None,
        ),
    };
    // A resume runs on the campaign's target with its flags, unless given another target.
    let target = match (&resumed, &o.target) {
        (_, Some(t)) => t.clone(),
        // One recorded before targets were (none): this machine's engine, as then.
        (Some(r), None) => {
            serde_json::from_value(r.target_spec.clone()).unwrap_or_else(|_| TargetSpec::local())
        }
        (None, None) => TargetSpec::local(),
    };
    target.one_engine("campaign")?;
    let mut flags = match &resumed {
        Some(r) => r.flags.clone(),
        None => o.flags.clone(),
    };
    // The flags over every row's spec: checked once, named as the flags they are.
    for (flag, v) in [
        ("--http-port", &flags.http_port),
        ("--lb-port", &flags.lb_port),
    ] {
        if let Some(v) = v {
            crate::ops::values::count_flag(flag, v, 1, u64::from(u16::MAX))?;
        }
    }
    let (text, file) = read_file(
        &path,
        if resumed.is_some() {
            "--resume"
        } else {
            "FILE"
        },
    )?;
    stack_checked(&flags, &file)?;
    flags.teardown |= o.flags.teardown || file.teardown;
    let base = path.parent().unwrap_or(Path::new("."));
    let inputs = file_inputs(&file, base);
    let mut rows = Vec::new();
    let mut planned = Vec::new();
    // Each stack's last spec and seeding, for what a row's deploy and prepare will have to do.
    let mut last: BTreeMap<String, (exectl_core::spec::Spec, (u64, Option<u64>))> = BTreeMap::new();
    for (i, row) in file.rows.iter().enumerate() {
        let (plan, shown) = row_plan(&flags, &file, base, i, row, &mut last, &here)?;
        planned.push(PlannedRow {
            index: i + 1,
            name: row.name.clone(),
            topology: row.topology.clone(),
            stack: plan.stack.clone(),
            deploy: shown.0,
            points: shown.1,
            levels: shown.2,
            estimate_s: plan.estimate_s,
        });
        rows.push(plan);
    }
    let run_id = match &resumed {
        Some(r) => r.run_id.clone(),
        None => crate::ops::values::run_id_from_name(
            o.run_id.as_deref(),
            "C-QUICK-001",
            ("name", &file.name),
            |now| {
                format!(
                    "C-{}-{now}",
                    file.name.replace(|c: char| !c.is_ascii_alphanumeric(), "-")
                )
            },
        )?,
    };
    if let Some(r) = &resumed {
        unchanged(r, &path, &inputs, &rows)?;
    }
    let dir = match dir {
        Some(d) => d,
        None => {
            let campaigns = crate::state::campaigns_dir(&crate::state::root());
            let (field, value, at) =
                crate::ops::values::run_folder(o.out.as_deref(), &run_id, &campaigns);
            CampaignDir::check(&at, field, &value)?
        }
    };
    let plan = Planned {
        name: file.name.clone(),
        file: path.display().to_string(),
        estimate_s: rows.iter().map(|r| r.estimate_s).sum(),
        rows: planned,
    };
    Ok((
        target,
        CampaignOptions {
            run_id,
            dir,
            name: file.name.clone(),
            file: match &resumed {
                Some(r) => r.file.clone(),
                None => path.display().to_string(),
            },
            file_path: std::path::absolute(&path).unwrap_or(path.clone()),
            file_sha256: sha256(text.as_bytes()),
            inputs,
            flags,
            rows,
            resumed,
        },
        plan,
    ))
}

/// The campaign's stack, checked before any row: each row runs on STACK-TOPOLOGY, so STACK has the
/// room its rows' longest topology leaves. Named where it was given: --stack, else the file's `stack:`,
/// else its `name:` (the stack's default).
fn stack_checked(flags: &RunFlags, file: &CampaignFile) -> Result<(), UsageError> {
    let (field, stack) = match &flags.stack {
        Some(s) => ("--stack", s),
        None if file.stack != file.name => ("stack", &file.stack),
        None => ("name", &file.name),
    };
    // The topologies a row may have (another is refused, naming its row).
    let suffixes: Vec<String> = file
        .rows
        .iter()
        .filter(|r| ["single", "ha"].contains(&r.topology.as_str()))
        .map(|r| format!("-{}", r.topology))
        .collect();
    let suffixes: Vec<&str> = suffixes.iter().map(String::as_str).collect();
    exectl_core::spec::check_stack_prefix(field, stack, &suffixes).map_err(|mut e| {
        if field == "name" {
            e.fix = format!(
                "{}, or give the file a shorter `stack:` (or --stack)",
                e.fix
            );
        }
        e
    })
}

/// A row's `secrets:` as `--set-secret NAME=VALUE`s, each value read from exectl's environment as a
/// bare `--set-secret NAME` reads it: never from the file, so never in the campaign's records and
/// reports (a sweep keeps a keyed fingerprint of it, the stack's 0600 .env the value). One not set is
/// refused, naming it, before anything runs.
fn secrets_from_env(
    names: &[String],
    var: impl Fn(&str) -> Option<String>,
) -> Result<Vec<Raw>, UsageError> {
    names
        .iter()
        .map(|n| match var(n) {
            Some(v) => Ok(Raw::flag("secrets", format!("{n}={v}"))),
            None => Err(UsageError::new(
                "secrets",
                n,
                format!("{n} is not set in exectl's environment, where a campaign's secrets are read from"),
                format!("export {n}=... before exectl campaign (its value then goes only to the stack's 0600 .env), or drop it from secrets:"),
            )),
        })
        .collect()
}

/// How long the row's app keeps an empty room: the stand-in's `STANDIN_ROOM_CLEANUP_MS` when set
/// (the last wins, as the environment's), else the real app's 30 s.
fn room_cleanup_s<'a>(set: impl Iterator<Item = &'a String>) -> f64 {
    set.filter_map(|p| p.strip_prefix("STANDIN_ROOM_CLEANUP_MS="))
        .filter_map(|ms| ms.parse::<f64>().ok())
        .last()
        .map_or(30.0, |ms| ms / 1000.0)
}

/// What `--plan` shows of a row besides its estimate: its deploy, points, levels.
type Shown = (Deploy, u32, String);

#[allow(clippy::too_many_arguments)]
fn row_plan(
    flags: &RunFlags,
    file: &CampaignFile,
    base: &Path,
    i: usize,
    row: &Row,
    last: &mut BTreeMap<String, (exectl_core::spec::Spec, (u64, Option<u64>))>,
    here: &Path,
) -> Result<(RowPlan, Shown)> {
    let bad = |e: UsageError| in_row(i, row, e);
    let stack_base = flags.stack.clone().unwrap_or_else(|| file.stack.clone());
    let stack = format!("{stack_base}-{}", row.topology);
    let mut input = SpecInput::default();
    input.set("topology", &row.topology).map_err(bad)?;
    input.set("stack", &stack).map_err(bad)?;
    for (k, v) in file.spec.iter().chain(&row.spec) {
        input.set(k, v).map_err(bad)?;
    }
    // Each port where the row's stack publishes one: Traefik's (single, or ha with traefik), nginx's.
    let ha = row.topology == "ha";
    let traefik = input.traefik.as_ref().is_some_and(|r| r.value == "true");
    for (k, v, applies) in [
        ("http_port", &flags.http_port, !ha || traefik),
        ("lb_port", &flags.lb_port, ha),
    ] {
        if let (Some(v), true) = (v, applies) {
            input.set(k, v).map_err(bad)?;
        }
    }
    input.env = file
        .set
        .iter()
        .chain(&row.set)
        .map(|v| Raw::flag("--set", v.clone()))
        .collect();
    input.secret_env = secrets_from_env(&row.secrets, |k| std::env::var(k).ok()).map_err(bad)?;
    let source = SpecSource {
        config: None,
        flags: input,
        images: file.images.as_ref().map(|p| base.join(p)),
        templates: None,
        no_config: true,
    };
    let (mut vary_list, repeat, mode) =
        crate::ops::sweep_shape::row_shape(&row.sweep).map_err(bad)?;
    let compares = !vary_list.is_empty() || repeat > 1 || mode.bounds().is_some();
    if let Some(k) = &row.users_per_project {
        if vary_list
            .iter()
            .any(|v| v.var.workload() == Some(vary::Workload::UsersPerProject))
        {
            return Err(bad(UsageError::new(
                "users_per_project",
                k,
                "the row varies the room size already",
                "drop users_per_project, or its vary",
            ))
            .into());
        }
        vary_list.push(
            vary::parse("users_per_project", &format!("users_per_project={k}")).map_err(bad)?,
        );
    }
    // A campaign's users come from this host (`generators` is a flag's, not a file's).
    let bench = BenchSettings::from_input(&row.bench, crate::load::Generators::default(), false)
        .map_err(bad)?;
    let seed = crate::ops::sweep_plan::checked_seed(
        &source,
        &vary_list,
        &mode,
        &bench,
        file.bcrypt_cost.as_deref(),
    )
    .map_err(|e| match e.downcast::<UsageError>() {
        Ok(u) => anyhow::Error::from(bad(u)),
        Err(e) => e,
    })?;

    // The estimate: what this row's deploy and seeding do after the rows before it on its stack.
    let cells = points(&vary_list, repeat);
    let first = spec_at(source.read().map_err(bad)?, &vary_list, &cells[0].0).map_err(bad)?;
    let room = vary_list
        .iter()
        .position(|v| v.var.workload() == Some(vary::Workload::UsersPerProject))
        .and_then(|p| cells[0].0[p].parse().ok());
    let seeding = (mode.top() + 1, room);
    let (deploy, accounts) = match last.get(&stack) {
        None => (Deploy::First, seeding.0),
        Some((spec, seeded)) => (
            if *spec == first {
                Deploy::Same
            } else {
                Deploy::Changed
            },
            if seeded.0 >= seeding.0 && seeded.1 == seeding.1 {
                0
            } else {
                seeding.0
            },
        ),
    };
    let last_spec = spec_at(
        source.read().map_err(bad)?,
        &vary_list,
        &cells[cells.len() - 1].0,
    )
    .map_err(bad)?;
    let top = last.get(&stack).map_or(0, |(_, s)| s.0).max(seeding.0);
    last.insert(stack.clone(), (last_spec, (top, room)));
    let (levels, levels_text) = match &mode {
        Mode::Levels(l) => (
            l.len() as u32,
            l.iter().map(u64::to_string).collect::<Vec<_>>().join(","),
        ),
        Mode::Search(b) => (
            estimate::probes(b.from, b.to, b.precision),
            format!("capacity search {}..{}", b.from, b.to),
        ),
        Mode::Room { bounds, users } => (
            estimate::probes(bounds.from, bounds.to, bounds.precision),
            format!(
                "room-size search {}..{} at {users} users",
                bounds.from, bounds.to
            ),
        ),
    };
    let shape = Shape {
        deploy,
        ha: row.topology == "ha",
        health_interval_s: f64::from(first.health_interval_s),
        points: cells.len() as u32,
        deploy_per_point: vary_list.iter().any(|v| v.var.workload().is_none()),
        levels,
        ramp_s: bench.load.ramp(mode.top() as usize).as_secs_f64(),
        hold_s: bench.load.hold.as_secs_f64(),
        settle_s: bench.settle.as_secs_f64(),
        room_cleanup_s: room_cleanup_s(file.set.iter().chain(&row.set)),
        accounts,
    };
    let slug = exectl_core::naming::slug(&row.name);
    let sweep = SweepOptions {
        run_id: String::new(),
        dir: SweepDir {
            path: PathBuf::new(),
        },
        spec: source,
        vary: vary_list,
        repeat,
        mode,
        deploy: DeployOptions::new(exectl_core::render::Templates::embedded()),
        seed,
        bench,
        teardown: false,
        resumed: None,
        sweep_file: None,
        started_in: here.to_path_buf(),
    };
    Ok((
        RowPlan {
            name: row.name.clone(),
            study: row.study.clone(),
            note: row.note.clone(),
            topology: row.topology.clone(),
            stack,
            inputs: exectl_core::campaign::results::row_inputs(row),
            estimate_s: estimate::seconds(&shape),
            dir: format!("rows/{:02}-{}", i + 1, &slug[..slug.len().min(40)]),
            sweep,
            compares,
        },
        (deploy, cells.len() as u32, levels_text),
    ))
}

#[cfg(test)]
mod tests {
    use exectl_core::campaign::estimate::Deploy;

    /// The campaign of `body`, planned into a folder of its own, as `exectl campaign FILE --plan`
    /// plans it (`stack`: `--stack`).
    fn planned(body: &str, stack: Option<&str>) -> anyhow::Result<super::Planned> {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("c.yaml");
        std::fs::write(&file, body).unwrap();
        let o = super::PlanOptions {
            file: Some(file),
            out: Some(dir.path().join("out")),
            flags: exectl_core::campaign::results::RunFlags {
                stack: stack.map(str::to_string),
                ..Default::default()
            },
            ..Default::default()
        };
        super::plan(&o).map(|(_, _, p)| p)
    }

    /// The shipped quick campaign: three rows on two stacks, the third on the second's stack as it
    /// is (the variable's first value is its default), two points.
    #[test]
    fn the_quick_campaign_plans_its_rows_and_their_deploys() {
        let body = std::fs::read_to_string("campaigns/quick.yaml")
            .unwrap()
            .replace(
                "../images/fixtures.yaml",
                &format!("{}/images/fixtures.yaml", env!("CARGO_MANIFEST_DIR")),
            );
        let p = planned(&body, Some("q1")).unwrap();
        let deploys: Vec<Deploy> = p.rows.iter().map(|r| r.deploy).collect();
        assert_eq!(deploys, [Deploy::First, Deploy::First, Deploy::Same]);
        let stacks: Vec<&str> = p.rows.iter().map(|r| r.stack.as_str()).collect();
        assert_eq!(stacks, ["q1-single", "q1-ha", "q1-ha"]);
        assert_eq!(p.rows[2].points, 2);
        let sum: f64 = p.rows.iter().map(|r| r.estimate_s).sum();
        assert!((p.estimate_s - sum).abs() < 1e-9 && sum > 60.0, "{p:?}");
    }

    /// Every shipped campaign plans: its rows resolve at every point, their bench flags hold.
    #[test]
    fn every_shipped_campaign_plans() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/campaigns");
        let mut names = Vec::new();
        for e in std::fs::read_dir(dir).unwrap() {
            let path = e.unwrap().path();
            // The schemas beside them are JSON, no campaign.
            if path.extension().is_none_or(|x| x != "yaml") {
                continue;
            }
            let body = std::fs::read_to_string(&path).unwrap().replace(
                "../images/fixtures.yaml",
                concat!(env!("CARGO_MANIFEST_DIR"), "/images/fixtures.yaml"),
            );
            let p = planned(&body, None).unwrap_or_else(|e| panic!("{}: {e:#}", path.display()));
            assert!(!p.rows.is_empty() && p.estimate_s > 0.0);
            names.push(p.name);
        }
        names.sort();
        assert_eq!(names, ["quick", "seed-000", "upstream"]);
    }

    /// A row's secrets come from the environment, named in the error when one is not there, and
    /// their values never in an error.
    #[test]
    fn a_rows_secrets_are_read_from_the_environment() {
        let env = |k: &str| (k == "SMTP_PASSWORD").then(|| "from-env".to_string());
        let names = ["SMTP_PASSWORD".to_string()];
        let got = super::secrets_from_env(&names, env).unwrap();
        assert_eq!(got[0].value, "SMTP_PASSWORD=from-env");
        let e = super::secrets_from_env(&["API_KEY".to_string()], env).unwrap_err();
        assert_eq!((e.field.as_str(), e.value.as_str()), ("secrets", "API_KEY"));
        assert!(e.fix.contains("export API_KEY="), "{e}");
    }

    /// A fault of a row is named by its row, before anything runs (exit 2).
    #[test]
    fn a_bad_row_is_refused_naming_it() {
        let row = |extra: &str| {
            format!("name: c\nrows:\n  - {{name: ok, topology: single, levels: [10]}}\n  - {{name: bad one, topology: ha, levels: [10]{extra}}}\n")
        };
        for (extra, says) in [
            (", bench: {hold: soon}", "rows[1].bench.hold"),
            (
                ", spec: {instances: many}",
                "rows[1] (bad one): --instances",
            ),
            (", spec: {stack: x}", "rows[1].spec.stack"),
            (", bench: {fault: 'kill:app-1@1s'}", "rows[1].bench.fault"),
            (
                ", bench: {fault: 'restart:app-9@1s'}",
                "rows[1] (bad one): --fault",
            ),
        ] {
            let e = planned(&row(extra), None).unwrap_err();
            assert!(exectl_core::error::is_usage(&e), "{extra}: {e:#}");
            assert!(format!("{e:#}").contains(says), "{extra}: {e:#}");
        }
    }
}
