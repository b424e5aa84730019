//! `campaign`: a study's rows in order, each one sweep (`ops::sweep`: a converging deploy of its own
//! stack, an idempotent prepare, its benches), on one target. After every row its results are read
//! back — a line of the summary table per level of each of its benches, its findings — and the
//! campaign's results.json, report.md and report.html are written whole, so a campaign stopped at row
//! k keeps rows 1..k-1 and `--resume` goes on from k (a row that began and was stopped runs again, in
//! a folder of its own). A row that cannot run (bad input met at its turn, a deploy that fails) is
//! recorded as not run with why, and the campaign goes on; a lost link or a held lock stops it.
//! A row's run that did not end (stopped, or not run) and is run again stays in its record
//! (`attempts`), apart from what counts. At its end the campaign asks the engine which of its stacks
//! still run, and records them with the command that removes each, or (`--teardown`) removes them.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context as _, Result};

use super::sweep::SweepOptions;
use super::{Context, Event};
use crate::state::campaigns::{CampaignDir, REPORT, REPORT_MD};
use exectl_core::bench::RunState;
use exectl_core::campaign::findings::Finding;
use exectl_core::campaign::results::{
    Attempt, CampaignResults, LeftUp, RowRecord, RowState, RunFlags, SCHEMA,
};
use exectl_core::campaign::row;

/// One row: what the report says of it, and the sweep that runs it.
pub struct RowPlan {
    pub name: String,
    pub study: Option<String>,
    pub note: Option<String>,
    pub topology: String,
    pub stack: String,
    /// Its own settings, each as recorded (`row_inputs`): a resume refuses an edited file, naming the
    /// key.
    pub inputs: std::collections::BTreeMap<String, String>,
    pub estimate_s: f64,
    /// Its folder under the campaign's ("rows/02-idle-1000"); a row run again gets ".2", ".3", …
    pub dir: String,
    /// Its sweep; its run id and folder are set when it begins.
    pub sweep: SweepOptions,
    /// It varies something (or repeats, or searches): its sweep's headline and differences are
    /// findings.
    pub compares: bool,
}

pub struct CampaignOptions {
    pub run_id: String,
    pub dir: CampaignDir,
    pub name: String,
    /// The campaign file as given, where it is, and its text's sha256.
    pub file: String,
    pub file_path: PathBuf,
    pub file_sha256: String,
    /// The file's settings under every row, each as its fingerprint (with its images file's content).
    pub inputs: std::collections::BTreeMap<String, String>,
    /// The flags given over the file's (a resume's are the campaign's own).
    pub flags: RunFlags,
    pub rows: Vec<RowPlan>,
    /// The campaign to go on with (`--resume`).
    pub resumed: Option<CampaignResults>,
}

pub struct CampaignOutcome {
    pub results: CampaignResults,
    pub findings: Vec<Finding>,
    pub report: PathBuf,
    pub report_md: PathBuf,
}

impl CampaignOutcome {
    /// Every row ran (its levels passing or not).
    pub fn complete(&self) -> bool {
        self.results.rows.iter().all(|r| r.state == RowState::Done)
    }
}

/// The campaign's record before its first row (or as resumed).
fn begin(o: &CampaignOptions, target: &crate::sut::TargetSpec) -> CampaignResults {
    let mut r = o.resumed.clone().unwrap_or_else(|| CampaignResults {
        schema: SCHEMA,
        run_id: o.run_id.clone(),
        state: RunState::Running,
        pid: None,
        exectl_version: env!("CARGO_PKG_VERSION").into(),
        name: o.name.clone(),
        file: o.file.clone(),
        file_path: o.file_path.display().to_string(),
        file_sha256: o.file_sha256.clone(),
        target: target.describe(),
        target_spec: serde_json::to_value(target).unwrap_or_default(),
        flags: o.flags.clone(),
        started_unix_s: crate::clock::unix_s(),
        duration_s: 0.0,
        estimate_s: o.rows.iter().map(|r| r.estimate_s).sum(),
        rows: o
            .rows
            .iter()
            .enumerate()
            .map(|(i, p)| RowRecord {
                index: i + 1,
                name: p.name.clone(),
                study: p.study.clone(),
                note: p.note.clone(),
                topology: p.topology.clone(),
                stack: p.stack.clone(),
                inputs: p.inputs.clone(),
                state: RowState::Pending,
                sweep: None,
                dir: None,
                estimate_s: p.estimate_s,
                took_s: None,
                lines: vec![],
                capacities: vec![],
                headline: None,
                differences: vec![],
                findings: vec![],
                unmeasured: vec![],
                attempts: vec![],
            })
            .collect(),
        stopped: None,
        not_measured: vec![],
        inputs: o.inputs.clone(),
        fingerprints: Default::default(),
        left_up: vec![],
        torn_down: vec![],
    });
    r.state = RunState::Running;
    r.pid = Some(std::process::id());
    r.stopped = None;
    // A resume may be given --teardown: the stacks then go at its end.
    r.flags.teardown |= o.flags.teardown;
    r
}

/// "about 23 min left": the rows still to run at their estimates, scaled by how the rows run so far
/// compared with theirs.
fn left(r: &CampaignResults, from: usize) -> String {
    let (took, estimated) = r
        .rows
        .iter()
        .filter_map(|x| Some((x.took_s?, x.estimate_s)))
        .fold((0.0, 0.0), |(a, b), (t, e)| (a + t, b + e));
    let scale = if estimated > 0.0 {
        took / estimated
    } else {
        1.0
    };
    let rest: f64 = r.rows[from..]
        .iter()
        .filter(|x| x.state.to_run())
        .map(|x| x.estimate_s)
        .sum();
    format!(
        "about {} left",
        exectl_core::units::readable_s(rest * scale.clamp(0.25, 4.0))
    )
}

/// Run the campaign. Like `sweep`, it runs its own runtimes, so it is called outside any tokio runtime.
pub fn campaign(cx: &Context<'_>, o: CampaignOptions) -> Result<CampaignOutcome> {
    let progress = cx.progress;
    let mut results = begin(&o, &cx.target.spec);
    o.dir.create(&o.run_id)?;
    // Held for this process's life before its results are written: another campaign running it (a
    // resume) is refused (exit 4), its files untouched.
    crate::engine::run_lock::hold(&o.dir.path, "campaign", &o.run_id)?;
    o.dir.save(&results)?;
    let t0 = Instant::now();
    let before = results.duration_s;
    let n = o.rows.len();
    let mut fatal: Option<anyhow::Error> = None;
    let runs: Vec<bool> = results
        .rows
        .iter()
        .map(|r| r.state.to_run() || (o.resumed.is_some() && r.state.resumed()))
        .collect();
    let stacks: Vec<String> = o.rows.iter().map(|r| r.stack.clone()).collect();
    let last = last_on_stack(&stacks, &runs);
    for (i, mut row) in o.rows.into_iter().enumerate() {
        if !runs[i] {
            continue;
        }
        if let Some(why) = cx.stop.why() {
            results.stopped = Some(why);
            break;
        }
        progress.event(Event::Step(&format!(
            "row {}/{n} · {} · {}",
            i + 1,
            row.name,
            left(&results, i)
        )));
        // A row that began before (stopped) runs again in a folder of its own: the first's stays.
        let (rel, sweep_id) = match next_run(&row.dir, results.rows[i].dir.as_deref()) {
            1 => (row.dir.clone(), format!("{}-r{:02}", o.run_id, i + 1)),
            k => (
                format!("{}.{k}", row.dir),
                format!("{}-r{:02}.{k}", o.run_id, i + 1),
            ),
        };
        row.sweep.run_id = sweep_id.clone();
        row.sweep.dir = crate::state::sweeps::SweepDir {
            path: o.dir.path.join(&rel),
        };
        // Made now, not when the sweep's first deploy is done: the record names it from here on (a
        // kill during that deploy left a row whose folder did not exist).
        std::fs::create_dir_all(&row.sweep.dir.path)
            .with_context(|| format!("creating {}", row.sweep.dir.path.display()))?;
        let record = &mut results.rows[i];
        // Its run before (stopped, or not run) is kept in the record, apart from what counts.
        keep_attempt(&o.dir.path, record);
        record.sweep = Some(sweep_id);
        record.dir = Some(rel.clone());
        record.state = RowState::Interrupted("it was running when the campaign stopped".into());
        o.dir.save(&results)?;

        let started = Instant::now();
        let ran = super::sweep::sweep(cx, row.sweep);
        let record = &mut results.rows[i];
        record.took_s = Some(started.elapsed().as_secs_f64());
        match ran {
            Ok(out) => {
                record.state = match (&out.results.stopped, cx.stop.why()) {
                    (_, Some(why)) => RowState::Interrupted(why),
                    (None, None) => RowState::Done,
                    (Some(why), None) => RowState::NotRun(why.clone()),
                };
                read_row(&o.dir.path, record, &out.results, &rel, row.compares);
            }
            Err(e) => {
                let code = crate::error::exit_code(&e);
                record.state = match cx.stop.why() {
                    Some(why) => RowState::Interrupted(why),
                    None => RowState::NotRun(format!("{e:#}")),
                };
                // A lost link or a lock taken stops the campaign: the rows after would meet it too.
                if code == exectl_core::error::exit::UNREACHABLE
                    || code == exectl_core::error::exit::LOCKED
                {
                    record.state = RowState::Interrupted(format!("{e:#}"));
                    fatal = Some(e);
                }
            }
        }
        let ended = row::ended(&results.rows[i]);
        if matches!(results.rows[i].state, RowState::Interrupted(_)) {
            keep_attempt(&o.dir.path, &mut results.rows[i]);
        }
        progress.event(Event::Step(&format!(
            "row {}/{n} · {}: {ended}",
            i + 1,
            row.name
        )));
        // With --teardown the stack goes after the last row that runs on it, once the row is read
        // (a teardown that fails loses no figure: the end says the stack is left running); not
        // after a stop, which a resume goes on from.
        if results.flags.teardown && last[i] && fatal.is_none() && cx.stop.why().is_none() {
            tear_down(cx, &row.stack, &mut results);
        }
        results.duration_s = before + t0.elapsed().as_secs_f64();
        write(&o.dir, &mut results)?;
        if fatal.is_some() || cx.stop.why().is_some() {
            results.stopped = cx
                .stop
                .why()
                .or_else(|| fatal.as_ref().map(|e| format!("{e:#}")));
            break;
        }
    }
    if fatal.is_none() {
        // After a lost link or a lock taken there is no engine to ask: the error says to resume.
        stacks_at_end(cx, &stacks, &mut results);
    }
    results.duration_s = before + t0.elapsed().as_secs_f64();
    results.pid = None;
    results.state = match results.rows.iter().any(|r| r.state.to_run()) {
        true => RunState::Interrupted,
        false => RunState::Complete,
    };
    let findings = write(&o.dir, &mut results)?;
    if let Some(e) = fatal {
        return Err(e.context(format!(
            "the campaign stopped; what ran is in {} (exectl campaign --resume {} goes on)",
            o.dir.path.display(),
            results.run_id
        )));
    }
    Ok(CampaignOutcome {
        findings,
        report: o.dir.path.join(REPORT),
        report_md: o.dir.path.join(REPORT_MD),
        results,
    })
}

/// For each row, whether it is the last that runs on its stack (`runs`: the rows this campaign, or
/// this resume, runs): with --teardown its stack goes after it, never before a later row needs it.
fn last_on_stack(stacks: &[String], runs: &[bool]) -> Vec<bool> {
    (0..stacks.len())
        .map(|i| runs[i] && !(i + 1..stacks.len()).any(|j| runs[j] && stacks[j] == stacks[i]))
        .collect()
}

/// The row's last run, when it began and did not end, kept among its attempts (once) with the
/// reports found in its folder: its sweep's, each bench's.
fn keep_attempt(campaign: &std::path::Path, record: &mut RowRecord) {
    let (Some(sweep), Some(dir)) = (&record.sweep, &record.dir) else {
        return;
    };
    if record.state == RowState::Done || record.attempts.iter().any(|a| &a.dir == dir) {
        return;
    }
    let mut reports = Vec::new();
    if campaign.join(dir).join(REPORT).is_file() {
        reports.push(format!("{dir}/{REPORT}"));
    }
    let points = format!("{dir}/{}", exectl_core::sweep::results::POINTS);
    let mut benches: Vec<String> = std::fs::read_dir(campaign.join(&points))
        .into_iter()
        .flatten()
        .filter_map(|e| Some(e.ok()?.file_name().to_str()?.to_string()))
        .filter(|id| campaign.join(&points).join(id).join(REPORT).is_file())
        .collect();
    benches.sort();
    reports.extend(benches.iter().map(|id| format!("{points}/{id}/{REPORT}")));
    record.attempts.push(Attempt {
        sweep: sweep.clone(),
        dir: dir.clone(),
        state: record.state.clone(),
        took_s: record.took_s,
        reports,
    });
}

/// `exectl teardown` of `stack` on `target`, as a user would type it.
fn teardown_command(target: &crate::sut::TargetSpec, stack: &str) -> String {
    let quote = |s: String| match s
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "@:/._-+=,".contains(c))
    {
        true => s,
        false => format!("'{}'", s.replace('\'', r"'\''")),
    };
    let mut c = String::from("exectl teardown");
    if let Some(o) = &target.ssh {
        c += &format!(" --target {}", quote(o.url.to_string()));
        if let Some(id) = &o.identity {
            c += &format!(" --identity {}", quote(id.display().to_string()));
        }
        c += &format!(
            " --known-hosts {}",
            quote(o.known_hosts.display().to_string())
        );
    }
    if target.docker_socket != crate::sut::DEFAULT_DOCKER_SOCKET {
        c += &format!(" --docker-socket {}", quote(target.docker_socket.clone()));
    }
    c + &format!(" --stack {}", quote(stack.to_string()))
}

/// A current-thread runtime for the engine calls made between rows (each sweep runs its own).
fn runtime() -> Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?)
}

/// Tear `stack` down, its data kept, and record it; false when that failed (said, and the stack is
/// then said left running).
fn tear_down(cx: &Context<'_>, stack: &str, results: &mut CampaignResults) -> bool {
    cx.progress.event(Event::Step(&format!(
        "tearing down stack {stack} (its data kept)"
    )));
    let opts = super::teardown::TeardownOptions::default();
    match runtime().and_then(|rt| rt.block_on(super::teardown::teardown(cx, stack, &opts))) {
        Ok(_) => {
            if !results.torn_down.iter().any(|s| s == stack) {
                results.torn_down.push(stack.to_string());
            }
            true
        }
        Err(e) => {
            cx.progress
                .event(Event::Note(&format!("tearing down {stack} failed: {e:#}")));
            false
        }
    }
}

/// Which of the campaign's stacks still run (a container of theirs on the engine): with --teardown
/// and nothing stopped, those are removed (a stack whose last row failed, or ran before a resume);
/// the others are recorded with the command that removes each.
fn stacks_at_end(cx: &Context<'_>, stacks: &[String], results: &mut CampaignResults) {
    let mut seen: Vec<&String> = Vec::new();
    for s in stacks {
        if !seen.contains(&s) {
            seen.push(s);
        }
    }
    let remove = results.flags.teardown && results.stopped.is_none() && cx.stop.why().is_none();
    results.left_up.clear();
    for stack in seen {
        let up = runtime()
            .and_then(|rt| rt.block_on(crate::engine::observe::observe(&cx.target.docker, stack)));
        // An engine that does not answer: the stack may be up, and is said so.
        if matches!(up, Ok(o) if o.containers.is_empty()) {
            continue;
        }
        if remove && tear_down(cx, stack, results) {
            continue;
        }
        results.torn_down.retain(|s| s != stack);
        results.left_up.push(LeftUp {
            stack: stack.clone(),
            command: teardown_command(&cx.target.spec, stack),
        });
    }
}

/// The number of a row's next run: 1, or one more than its last's (`rows/02-x` is run 1,
/// `rows/02-x.2` run 2).
fn next_run(base: &str, last: Option<&str>) -> u32 {
    match last {
        None => 1,
        Some(d) => {
            d.strip_prefix(base)
                .and_then(|s| s.strip_prefix('.'))
                .and_then(|k| k.parse::<u32>().ok())
                .unwrap_or(1)
                + 1
        }
    }
}

/// A row read back: each of its benches' files (a bench whose files cannot be read has no line),
/// then its lines, headline and findings (`campaign::row`).
fn read_row(
    campaign: &std::path::Path,
    record: &mut RowRecord,
    sweep: &exectl_core::sweep::results::SweepResults,
    rel: &str,
    compares: bool,
) {
    let mut benches = Vec::new();
    for (point, p) in sweep.points.iter().enumerate() {
        for id in &p.benches {
            let dir = format!("{rel}/{}/{id}", exectl_core::sweep::results::POINTS);
            if let Ok((results, samples)) = crate::state::bench_dir::read(&campaign.join(&dir), id)
            {
                benches.push(row::ReadBench {
                    point,
                    dir,
                    results,
                    samples,
                });
            }
        }
    }
    row::read(record, sweep, &benches, rel, compares);
}

/// results.json and both reports, each written whole; the findings of every row.
fn write(dir: &CampaignDir, r: &mut CampaignResults) -> Result<Vec<Finding>> {
    let files = row::files(r)?;
    dir.save_files(&files)?;
    Ok(files.findings)
}

#[cfg(test)]
mod tests {
    /// With --teardown a stack goes after the last row that runs on it: rows 2 and 3 share one, and
    /// a resume that runs only row 3 tears down after it, not after row 1 (done before).
    #[test]
    fn each_stack_is_torn_down_after_its_last_row_that_runs() {
        let stacks: Vec<String> = ["q-single", "q-ha", "q-ha", "q-single"]
            .map(String::from)
            .into();
        assert_eq!(
            super::last_on_stack(&stacks, &[true; 4]),
            [false, false, true, true]
        );
        assert_eq!(
            super::last_on_stack(&stacks[..3], &[false, false, true]),
            [false, false, true]
        );
        assert_eq!(
            super::last_on_stack(&stacks[..3], &[true, true, false]),
            [true, true, false],
            "a row not run is no row after"
        );
    }

    #[test]
    fn the_teardown_command_names_the_target_as_given() {
        let local = crate::sut::TargetSpec::local();
        assert_eq!(
            super::teardown_command(&local, "q-ha"),
            "exectl teardown --stack q-ha"
        );
        let mut other = local.clone();
        other.docker_socket = "/run/my docker.sock".into();
        assert_eq!(
            super::teardown_command(&other, "q-ha"),
            "exectl teardown --docker-socket '/run/my docker.sock' --stack q-ha"
        );
    }

    #[test]
    fn a_row_run_again_gets_a_folder_of_its_own() {
        assert_eq!(super::next_run("rows/02-x", None), 1);
        assert_eq!(super::next_run("rows/02-x", Some("rows/02-x")), 2);
        assert_eq!(super::next_run("rows/02-x", Some("rows/02-x.2")), 3);
    }
}
