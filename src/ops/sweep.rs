//! `sweep`: one variable at a time. For each value (each cell with `--matrix`), each of its `--repeat`
//! runs: the spec read again (exectl.yaml as it is now) with the value set, its would-be run record
//! compared with the previous point's (anything else that moved stops the sweep, named), a converging
//! deploy, an idempotent prepare, then the bench (fixed levels, or the capacity search's probes), and
//! the point recorded. Before the first deploy every point's `--db` is checked against the data the
//! stack's database volume holds, and its spec fitted to the target and held against its limits.
//! results.json and report.html are written once point 1 is deployed and after every point, so a sweep
//! stopped at point k keeps points 1..k-1 and `--resume` goes on from k; a sweep refused before its
//! first deploy leaves nothing behind, and a refusal met after it stops the sweep early (exit 1).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context as _, Result};

use super::bench_settings::BenchSettings;
use super::prepare::PrepareOptions;
pub use super::sweep_plan::SweepOptions;
pub use super::sweep_shape::Mode;
use super::{Context, Event};
use crate::state::bench_dir::BenchDir;
use crate::state::{manifests, runs};
use crate::sut::Target;
use exectl_core::bench::RunState;
use exectl_core::spec::Spec;
use exectl_core::sweep::results::{LevelSummary, PointResult, SweepResults, SCHEMA};
use exectl_core::sweep::search::{self, Bounds};
use exectl_core::sweep::vary::{points, spec_at, PointWorkload, Workload};

/// What a point seeds: its accounts (and projects, and tokens), made or found, and verified.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Seeding {
    pub accounts: u64,
    /// None: prepare's default (one per account).
    pub projects: Option<u64>,
    /// Mint tokens.json too.
    pub tokens: bool,
}

pub struct SweepOutcome {
    pub results: SweepResults,
    pub report: PathBuf,
}

impl SweepOutcome {
    /// Every point ran, and nothing stopped the sweep.
    pub fn complete(&self) -> bool {
        self.results.state == RunState::Complete && self.results.stopped.is_none()
    }
}

/// Run the sweep on `spec`'s target. Like `bench`, it runs its own runtimes, so it is called outside
/// any tokio runtime. A point that stops the sweep (another variable moved) is in the outcome; a
/// failure (a deploy that fails, a lost link) is an error, after what ran is saved.
pub fn sweep(cx: &Context<'_>, o: SweepOptions) -> Result<SweepOutcome> {
    let (spec, target, progress) = (&cx.target.spec, cx.target, cx.progress);
    let plan = points(&o.vary, o.repeat);
    let now = crate::clock::unix_s();
    let mut results = match o.resumed.clone() {
        Some(mut r) => {
            r.state = RunState::Running;
            r.pid = Some(std::process::id());
            r.pid_since_unix_s = Some(now);
            r.stopped = None;
            r
        }
        None => SweepResults {
            schema: SCHEMA,
            run_id: o.run_id.clone(),
            state: RunState::Running,
            pid: Some(std::process::id()),
            pid_since_unix_s: Some(now),
            exectl_version: env!("CARGO_PKG_VERSION").into(),
            stack: String::new(),
            target: spec.describe(),
            variables: o.vary.iter().map(|v| v.var.name()).collect(),
            values: o.vary.iter().map(|v| v.values.clone()).collect(),
            repeat: o.repeat,
            scenario: match o
                .vary
                .iter()
                .any(|v| v.var.workload() == Some(Workload::Scenario))
            {
                true => "the variable".to_string(),
                false => o.bench.load.scenario.name().to_string(),
            },
            levels: match &o.mode {
                Mode::Levels(l) => l.clone(),
                Mode::Search(_) | Mode::Room { .. } => vec![],
            },
            search: o.mode.bounds(),
            room_users: match &o.mode {
                Mode::Room { users, .. } => Some(*users),
                _ => None,
            },
            browser_probe: o.bench.browser_probe,
            started_unix_s: now,
            duration_s: 0.0,
            points: vec![],
            stopped: None,
            plan: serde_json::to_value(super::sweep_plan::SweepPlan::of(spec, &o))?,
            started_in: o.started_in.clone(),
            fingerprints: BTreeMap::new(),
        },
    };
    let t0 = Instant::now();
    let before = results.duration_s;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let remaining = &plan[results.points.len().min(plan.len())..];
    rt.block_on(data_guard(target, &o, remaining))?;
    if o.resumed.is_some() {
        progress.event(Event::Step(&format!(
            "resuming sweep {} at point {} of {}, as begun in {}",
            o.run_id,
            results.points.len() + 1,
            plan.len(),
            o.started_in.display()
        )));
        begin(&o, &results)?;
    }
    let ran = match run_points(cx, &rt, &o, &plan, &mut results) {
        Err(e) => {
            refused_mid_sweep(e, o.dir.begun(), results.points.len() + 1, plan.len()).map(|why| {
                results.stopped = Some(why);
            })
        }
        Ok(()) => Ok(()),
    };
    results.duration_s = before + t0.elapsed().as_secs_f64();
    results.pid = None;
    results.pid_since_unix_s = None;
    results.state = match (&ran, cx.stop.why()) {
        (Ok(()), None) if results.points.len() == plan.len() || results.stopped.is_some() => {
            RunState::Complete
        }
        _ => RunState::Interrupted,
    };
    if let (RunState::Interrupted, None, Some(why)) =
        (results.state, &results.stopped, cx.stop.why())
    {
        results.stopped = Some(why);
    }
    if let Err(e) = &ran {
        results.stopped.get_or_insert_with(|| format!("{e:#}"));
    }
    // Recorded once point 1 was deployed, or when a signal stopped the sweep before that (resumable).
    let begun = o.dir.begun() || ran.is_ok();
    if begun {
        begin(&o, &results)?;
    }
    ran.with_context(|| match begun {
        true => format!(
            "the sweep stopped at point {} of {}; what ran is in {} (exectl sweep --resume {} goes on)",
            results.points.len() + 1,
            plan.len(),
            o.dir.path.display(),
            o.run_id
        ),
        false => format!(
            "the sweep stopped at point 1 of {}, before anything was recorded",
            plan.len()
        ),
    })?;
    if o.teardown && results.stopped.is_none() && !results.stack.is_empty() {
        progress.event(Event::Step(&format!(
            "tearing down stack {} (its data kept)",
            results.stack
        )));
        rt.block_on(super::teardown::teardown(
            cx,
            &results.stack,
            &super::teardown::TeardownOptions::default(),
        ))?;
    }
    Ok(SweepOutcome {
        report: o.dir.report(),
        results,
    })
}

/// The sweep's folder made and its results written (before a point's bench: what a resume reads).
fn begin(o: &SweepOptions, results: &SweepResults) -> Result<()> {
    o.dir.create(&o.run_id)?;
    // Held for this process's life before its results are written: a resume meanwhile is refused.
    crate::engine::run_lock::hold(&o.dir.path, "sweep", &o.run_id)?;
    o.dir.save(results)
}

/// What deploy would refuse at each of `points`, checked before the first deploy: its `--db` against
/// the data the stack's database volume holds (read once), and its spec fitted to the target and held
/// against its CPUs, memory and open-files limit (read once). A refusal deploy's preflight would make
/// at a later point is made before point 1 (exit 2, nothing deployed).
async fn data_guard(
    target: &Target,
    o: &SweepOptions,
    points: &[(Vec<String>, u32)],
) -> Result<()> {
    let mut specs: Vec<Spec> = Vec::new();
    // One reading of the input for every point (the sweep reads it again at each point it deploys).
    let input = o.spec.read()?;
    for (values, _) in points {
        let mut w = PointWorkload::of(&o.vary, values);
        // A room-size search seeds and benches rooms up to its largest.
        if let Mode::Room { bounds, .. } = &o.mode {
            w.room = Some(bounds.to);
        }
        point_bench(o, &w)?;
        prepare_options(
            o,
            w.room,
            Seeding {
                accounts: o.mode.top().max(1),
                projects: None,
                tokens: false,
            },
        )?;
        let s = spec_at(input.clone(), &o.vary, values)?;
        if !specs.contains(&s) {
            specs.push(s);
        }
    }
    let (data, capacity) = tokio::join!(
        crate::engine::preflight::db_data_refusals(target, &specs),
        crate::engine::preflight::capacity_refusals(target, &specs)
    );
    let mut refused = data?;
    refused.extend(capacity?);
    exectl_core::error::UsageErrors::result(refused)
        .context("checked before the sweep's first deploy; nothing was deployed")
}

/// A refusal (bad input, exit 2) met once the sweep has begun (point 1 deployed) is no longer "nothing
/// was changed": the sweep stopped early (exit 1), said with the point it stopped at, and without a
/// `--resume` that would meet the same refusal. Anything else stays the error it is (a lost link: exit
/// 3, a lock: 4, with its resume).
fn refused_mid_sweep(
    e: anyhow::Error,
    begun: bool,
    point: usize,
    of: usize,
) -> Result<String, anyhow::Error> {
    match begun && exectl_core::error::is_usage(&e) {
        true => Ok(format!("point {point} of {of} was refused: {e:#}")),
        false => Err(e),
    }
}

/// What a point seeds: the accounts it needs, or as many as the stack's manifest of the same pattern
/// has when that is more, with its projects and its tokens. A sweep never takes away what was prepared.
/// A room-size point (`users_per_project`) seeds a manifest of its own, that many users to a project,
/// marked as the sweep's (never the stack's default) unless the user prepared that pattern themselves.
fn seeding(
    o: &SweepOptions,
    room: Option<u64>,
    stack_dir: &Path,
    needed: u64,
) -> Result<PrepareOptions> {
    let asked = prepare_options(
        o,
        room,
        Seeding {
            accounts: needed,
            projects: room.map(|k| needed.div_ceil(k)),
            tokens: false,
        },
    )?;
    let folder = manifests::folder(stack_dir, &asked.seed.plan.pattern);
    let Some(there) = manifests::read_meta(&folder) else {
        return Ok(asked);
    };
    let tokens = folder.join(exectl_core::manifest::TOKENS).exists();
    let mut kept = prepare_options(o, room, kept(&there, tokens, needed))?;
    if there.sweep_room.is_none() {
        kept.seed.sweep_room = None;
    }
    Ok(kept)
}

/// A point's accounts (or a room probe's, `room` users to a project) seeded through `ops::prepare`,
/// as many as the sweep's levels need, and verified; `what` names it in an error.
fn seed(
    cx: &Context<'_>,
    o: &SweepOptions,
    stack: &str,
    room: Option<u64>,
    what: &str,
) -> Result<()> {
    let needed = o.mode.top() + o.bench.browser_probe as u64;
    let options = seeding(o, room, &cx.target.stack_dir(stack), needed)?;
    // On a runtime of its own, dropped once it is done: the connections its checks leave pooled close
    // then. On the sweep's, they would stay open until it next ran — through the bench that follows,
    // which counts them as another client's sockets (and, against an app that leaks a closed socket,
    // refuses to start: "not idle").
    let own = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let prepared = own.block_on(super::prepare::prepare(cx, stack, options))?;
    drop(own);
    if let Some(bad) = prepared.summary.checks.iter().find(|c| !c.ok()) {
        anyhow::bail!(
            "{what}: the seeded accounts did not verify: {} could not log in and hold a socket",
            bad.email
        );
    }
    cx.progress.event(Event::Step(&format!(
        "prepared {} accounts ({} already there), verified",
        prepared.summary.accounts, prepared.summary.before.accounts
    )));
    Ok(())
}

/// The point's bench settings: the sweep's, with each workload variable set to its value (a room
/// size benches the manifest its point seeded).
fn point_bench(o: &SweepOptions, w: &PointWorkload) -> Result<BenchSettings> {
    let mut b = o.bench.clone();
    if let Some(name) = &w.scenario {
        b.load.scenario =
            crate::load::Scenario::parse(name).with_context(|| format!("no scenario {name}"))?;
    }
    if let Some(d) = w.interval {
        b.load.interval = Some(d);
    }
    if let Some(k) = w.room {
        if let Some(given) = &o.bench.load.pattern {
            return Err(exectl_core::error::UsageError::new(
                "--pattern",
                given,
                "a users_per_project sweep benches the manifest each room size seeds",
                "drop --pattern (--email-pattern names the accounts)",
            )
            .into());
        }
        b.load.pattern = Some(o.seed.plan.pattern.for_room(k)?.text());
    }
    b.load.check()?;
    Ok(b)
}

/// The sweep's seeding with a point's accounts, projects and tokens (a room size's under its own
/// pattern).
fn prepare_options(o: &SweepOptions, room: Option<u64>, s: Seeding) -> Result<PrepareOptions> {
    let mut base = o.seed.clone();
    if let Some(k) = room {
        base.plan.pattern = o.seed.plan.pattern.for_room(k)?;
        base.sweep_room = Some(k);
    }
    let mut seed = base.reshaped(s.accounts, s.projects)?;
    if s.tokens && seed.token_ttl.is_none() {
        seed.token_ttl = Some(crate::prepare::DEFAULT_TOKEN_TTL);
    }
    Ok(PrepareOptions {
        seed,
        break_lock: false,
    })
}

/// Pure: the seeding that keeps a manifest's accounts (or more, when the point needs more), its room
/// layout and its tokens. The layout is its users per project (its largest project's, as
/// `--users-per-project` gives it): more accounts get more projects of as many users, never one user
/// per project (a collab scenario is refused on that).
fn kept(there: &manifests::Meta, tokens: bool, needed: u64) -> Seeding {
    let accounts = there.accounts.max(needed);
    let projects = match accounts == there.accounts {
        true => there.projects,
        // max(1): a manifest of no account (none prepared since 0 is refused) is one user per project.
        false => accounts.div_ceil(there.accounts.div_ceil(there.projects.max(1)).max(1)),
    };
    Seeding {
        accounts,
        projects: Some(projects),
        tokens,
    }
}

fn run_points(
    cx: &Context<'_>,
    rt: &tokio::runtime::Runtime,
    o: &SweepOptions,
    plan: &[(Vec<String>, u32)],
    results: &mut SweepResults,
) -> Result<()> {
    let (target, progress) = (cx.target, cx.progress);
    for (i, (values, run)) in plan.iter().enumerate() {
        let index = i + 1;
        if index <= results.points.len() {
            continue;
        }
        if cx.stop.why().is_some() {
            return Ok(());
        }
        let label = SweepResults::label(values);
        progress.event(Event::Step(&format!(
            "point {index}/{}: {} = {label}{}",
            plan.len(),
            results.variables.join(" × "),
            if o.repeat > 1 {
                format!(", run {run}/{}", o.repeat)
            } else {
                String::new()
            }
        )));
        let spec_now = super::sweep_plan::point_spec(o, values)?;
        results.stack = spec_now.stack.clone();
        if let Some(prev) = results.points.last() {
            if let Some(why) =
                super::sweep_guard::other_variables(target, rt, o, prev, values, &spec_now)?
            {
                progress.event(Event::Note(&format!("sweep stopped: {why}")));
                results.stopped = Some(why);
                return Ok(());
            }
        }
        let deployed = rt.block_on(super::deploy::deploy(cx, &spec_now, &o.deploy))?;
        if !deployed.ok() {
            anyhow::bail!(
                "the deploy of point {index} ({label}) did not converge: {}",
                deployed
                    .mismatched()
                    .iter()
                    .map(|e| e.service.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
        if !o.dir.begun() {
            begin(o, results)?;
        }
        let recreated: Vec<String> = deployed
            .plan
            .actions
            .iter()
            .filter(|a| a.changes())
            .map(|a| a.service().to_string())
            .collect();
        let containers = rt.block_on(container_ids(target, &spec_now.stack))?;
        let record = runs::load(
            &crate::state::runs_dir(&crate::state::root()),
            &deployed.run_id,
        )?;
        let w = PointWorkload::of(&o.vary, values);
        // A room-size search seeds each room size it probes, not the point.
        if !matches!(o.mode, Mode::Room { .. }) {
            let what = format!("point {index} ({label})");
            seed(cx, o, &spec_now.stack, w.room, &what)?;
        }
        let mut point = PointResult {
            index,
            values: values.clone(),
            run: *run,
            deploy_run_id: deployed.run_id.clone(),
            recreated,
            containers,
            images: record
                .images
                .iter()
                .map(|(s, i)| (s.clone(), i.digest.clone()))
                .collect(),
            benches: vec![],
            capacity: None,
            at_least: false,
            unknown: None,
            leaks: vec![],
            probes: vec![],
            levels: vec![],
            limiting: None,
        };
        let done = match &o.mode {
            Mode::Levels(levels) => {
                let bench = point_bench(o, &w)?;
                let Some(b) = bench_point(cx, o, &bench, &spec_now.stack, index, levels)? else {
                    return Ok(());
                };
                point.judged(&b.results);
                point.levels = b.levels;
                point.benches.push(b.results.run_id.clone());
                true
            }
            Mode::Search(bounds) => {
                let probe = Probing { index, room: None };
                search_point(cx, o, &w, &spec_now.stack, probe, bounds, &mut point)?
            }
            Mode::Room { bounds, users } => {
                let probe = Probing {
                    index,
                    room: Some(*users),
                };
                search_point(cx, o, &w, &spec_now.stack, probe, bounds, &mut point)?
            }
        };
        if !done {
            return Ok(());
        }
        let leaked = match point.leaks.first() {
            Some(l) => format!(
                "; the app leaked {} connections and {} rooms in the {} users level",
                l.connections, l.rooms, l.users
            ),
            None => String::new(),
        };
        let found = match o.mode {
            Mode::Room { .. } => "largest room",
            _ => "capacity",
        };
        progress.event(Event::Step(&format!(
            "point {index}: {label}: {found} {}{leaked}",
            point.capacity_text()
        )));
        results.points.push(point);
        o.dir.save(results)?;
    }
    Ok(())
}

/// Service → container id of the stack's containers.
async fn container_ids(target: &Target, stack: &str) -> Result<BTreeMap<String, String>> {
    let observed = crate::engine::observe::observe(&target.docker, stack).await?;
    let mut out = BTreeMap::new();
    for c in observed.containers {
        let id = target
            .docker
            .inspect_container(&c.name, None)
            .await?
            .id
            .unwrap_or_default();
        out.insert(c.service, id);
    }
    Ok(out)
}

/// A point's bench, run: None when the sweep was stopped during it (the point is not recorded).
struct Benched {
    results: exectl_core::bench::Results,
    levels: Vec<LevelSummary>,
}

/// A bench run id not used yet in this sweep's folder (a resumed point runs again under a new one).
fn bench_id(o: &SweepOptions, base: &str) -> String {
    let mut id = base.to_string();
    let mut n = 2;
    while o.dir.point_dir(&id).exists() {
        id = format!("{base}-{n}");
        n += 1;
    }
    id
}

fn bench_point(
    cx: &Context<'_>,
    o: &SweepOptions,
    bench: &BenchSettings,
    stack: &str,
    index: usize,
    levels: &[u64],
) -> Result<Option<Benched>> {
    bench_once(
        cx,
        o,
        bench,
        stack,
        &format!("{}-{index:02}", o.run_id),
        levels,
    )
}

fn bench_once(
    cx: &Context<'_>,
    o: &SweepOptions,
    bench: &BenchSettings,
    stack: &str,
    base: &str,
    levels: &[u64],
) -> Result<Option<Benched>> {
    let id = bench_id(o, base);
    let out = o.dir.point_dir(&id);
    let folder = BenchDir::check(&out, "--out", &out.display().to_string())?;
    let opts = bench.options(&cx.target.spec, stack, levels, &id, folder)?;
    let outcome = super::bench::bench(cx, opts)?;
    if cx.stop.why().is_some() {
        return Ok(None);
    }
    // The outcome has the results; the timeline is on disk (the sampler appended it there).
    let results = outcome.results;
    let (_, samples) = crate::state::bench_dir::read(&out, &id)?;
    let levels = results
        .levels
        .iter()
        .map(|l| LevelSummary::of(&id, l, &samples, &results.cpu_scale))
        .collect();
    Ok(Some(Benched { results, levels }))
}

/// Which search a point runs: over the users at once (`room` None), or over the room size at
/// `room` users at once.
struct Probing {
    index: usize,
    room: Option<u64>,
}

/// The search of one point: its probes and what they found, into `point`. A capacity probe benches
/// that many users at once; a room probe seeds rooms of that size and benches the search's users in
/// them. False when the sweep was stopped during a probe.
fn search_point(
    cx: &Context<'_>,
    o: &SweepOptions,
    w: &PointWorkload,
    stack: &str,
    probing: Probing,
    bounds: &Bounds,
    point: &mut PointResult,
) -> Result<bool> {
    let (progress, index) = (cx.progress, probing.index);
    let mut limits = BTreeMap::new();
    while let Some(v) = search::next(bounds, &point.probes) {
        let (users, w, base) = match probing.room {
            None => {
                progress.event(Event::Step(&format!(
                    "point {index}: probing {v} users at once"
                )));
                (v, w.clone(), format!("{}-{index:02}-{v}", o.run_id))
            }
            Some(users) => {
                progress.event(Event::Step(&format!(
                    "point {index}: probing rooms of {v} at {users} users at once"
                )));
                seed(
                    cx,
                    o,
                    stack,
                    Some(v),
                    &format!("point {index}, rooms of {v}"),
                )?;
                let w = PointWorkload {
                    room: Some(v),
                    ..w.clone()
                };
                (users, w, format!("{}-{index:02}-room{v}", o.run_id))
            }
        };
        let bench = point_bench(o, &w)?;
        let Some(b) = bench_once(cx, o, &bench, stack, &base, &[users])? else {
            return Ok(false);
        };
        if let Some(l) = &b.results.verdict.limiting {
            limits.insert(v, l.clone());
        }
        // The question: did it hold its users at once, every objective met? A level that held them
        // and leaked counts, as in a bench's verdict (the leak is said beside it); an invalid one is
        // probed again.
        // A room probe's level is that room's: the sweep compares it with the same room's.
        let level = b.levels.into_iter().next().map(|l| LevelSummary {
            room: probing.room.map(|_| v),
            ..l
        });
        point.probed(v, &b.results, level);
        if point.probes.last().is_some_and(|p| p.invalid) {
            progress.event(Event::Note(&format!(
                "point {index}: the probe {} could not count ({}); {}",
                match probing.room {
                    None => format!("at {v} users"),
                    Some(_) => format!("of rooms of {v}"),
                },
                point
                    .probes
                    .last()
                    .map(|p| p.reasons.join("; "))
                    .unwrap_or_default(),
                match search::next(bounds, &point.probes) {
                    Some(_) => "probing it again",
                    None => "the point's capacity is unknown",
                }
            )));
        }
    }
    point.searched(bounds, &limits);
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use exectl_core::error::{exit, UsageError};

    /// A refusal after point 1 was deployed stops the sweep (exit 1, no resume hint: a resume would
    /// meet it again); before, it is the bad input it is (exit 2, nothing deployed); a lost link or a
    /// lock stays itself (exit 3 or 4, resumable).
    #[test]
    fn a_refusal_mid_sweep_stops_it_early() {
        let refusal = || -> anyhow::Error {
            anyhow::Error::new(UsageError::new(
                "--cpus",
                "4",
                "the target has 2 CPUs and the engine refuses a larger limit",
                "pass --cpus 2 or less",
            ))
            .context("deploying point 2")
        };
        let why = refused_mid_sweep(refusal(), true, 2, 3).unwrap();
        assert!(
            why.starts_with("point 2 of 3 was refused: deploying point 2: invalid --cpus \"4\""),
            "{why}"
        );
        assert!(!why.contains("--resume"), "{why}");
        let before = refused_mid_sweep(refusal(), false, 1, 3).unwrap_err();
        assert_eq!(crate::error::exit_code(&before), exit::USAGE);
        let lost = anyhow::Error::new(exectl_core::error::Unreachable {
            what: "the engine does not answer".into(),
            fix: "start it".into(),
        });
        let lost = refused_mid_sweep(lost, true, 2, 3).unwrap_err();
        assert_eq!(crate::error::exit_code(&lost), exit::UNREACHABLE);
    }

    /// A point seeds the manifest's room layout as well as its accounts: 40 accounts in 10 projects (4
    /// users each) stay 10 projects, grow to 15 projects of 4 for 60 accounts, and keep their tokens;
    /// a one-user-per-project manifest stays one. The layout was reset to one user per project when the
    /// point needed as many accounts as the manifest held or more (projects: None).
    #[test]
    fn a_point_keeps_the_manifests_room_layout() {
        let meta = |accounts, projects| manifests::Meta {
            pattern: "user{n}@example.com".into(),
            accounts,
            projects,
            via: None,
            written_ms: 0,
            out: None,
            sweep_room: None,
        };
        let s = |accounts, projects, tokens| Seeding {
            accounts,
            projects: Some(projects),
            tokens,
        };
        let four = meta(40, 10);
        assert_eq!(kept(&four, false, 21), s(40, 10, false));
        assert_eq!(kept(&four, false, 40), s(40, 10, false));
        assert_eq!(kept(&four, true, 60), s(60, 15, true));
        assert_eq!(kept(&four, false, 61), s(61, 16, false));
        // 10 accounts in 3 projects (4, 3, 3): 4 per project.
        assert_eq!(kept(&meta(10, 3), false, 20), s(20, 5, false));
        assert_eq!(kept(&meta(40, 40), false, 60), s(60, 60, false));
        // A manifest of no account (divided by zero before): one user per project.
        assert_eq!(kept(&meta(0, 0), false, 5), s(5, 5, false));
    }
}
