//! `exectl sweep` refusals and `--resume`'s reading of a recorded sweep, with no engine: DOCKER_HOST
//! points at a socket that does not exist, so a sweep that gets past every check exits 3 (unreachable)
//! and one refused as bad input exits 2, before any connection. A recorded sweep is written here as
//! exectl writes one (sealed), in a state folder of the test's own.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Output;

use std::time::Duration;

use exectl::ops::bench_settings::BenchSettings;
use exectl::ops::spec_source::SpecSource;
use exectl::ops::sweep_plan::{FromFile, SeedPlan, SweepPlan};
use exectl::sut::TargetSpec;
use exectl_core::bench::RunState;
use exectl_core::spec::{Raw, SecretValue, SpecInput};
use exectl_core::sweep::results::{SweepResults, SCHEMA};

const SECRET: &str = "hunter2-sw-cli-Zq9";

struct Dirs {
    _tmp: tempfile::TempDir,
    state: PathBuf,
    /// Where the sweep began.
    began: PathBuf,
    /// Somewhere else.
    elsewhere: PathBuf,
}

fn dirs() -> Dirs {
    let tmp = tempfile::tempdir().unwrap();
    let (state, began, elsewhere) = (
        tmp.path().join("state"),
        tmp.path().join("study"),
        tmp.path().join("elsewhere"),
    );
    for d in [&state, &began, &elsewhere] {
        std::fs::create_dir_all(d).unwrap();
    }
    Dirs {
        _tmp: tmp,
        state,
        began,
        elsewhere,
    }
}

fn exectl(d: &Dirs, cwd: &Path, args: &[&str]) -> Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_exectl"))
        .args(args)
        .current_dir(cwd)
        .env("EXECTL_STATE_DIR", &d.state)
        .env("DOCKER_HOST", "unix:///nonexistent/exectl-sweep-cli.sock")
        .env_remove("EXECTL_TARGET")
        .env("RUST_BACKTRACE", "0")
        .output()
        .unwrap()
}

fn code_err(o: &Output) -> (Option<i32>, String) {
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// A sweep begun in `d.began` with `--images images.yaml` (relative) and a `--set-secret`, stopped
/// before its first point, recorded as exectl records one: STATE/sweeps/S-cli/results.json.
fn recorded(d: &Dirs) -> PathBuf {
    recorded_asking(d, None)
}

/// `recorded`, its variable and levels (env.M = c,d,e at level 5) given by flags, or by `sweep_file`
/// (relative to where the sweep began).
fn recorded_asking(d: &Dirs, sweep_file: Option<&str>) -> PathBuf {
    let fixtures = concat!(env!("CARGO_MANIFEST_DIR"), "/images/fixtures.yaml");
    std::fs::copy(fixtures, d.began.join("images.yaml")).unwrap();
    std::fs::write(d.began.join("exectl.yaml"), "memory: 512m\n").unwrap();
    // The plan as the sweep's flags give it: single SQLite, --images images.yaml, --set-secret K=….
    let mut flags = SpecInput::default();
    flags.set("topology", "single").unwrap();
    flags.set("db", "sqlite").unwrap();
    flags.set("stack", "sw-cli").unwrap();
    flags
        .secret_env
        .push(Raw::flag("--set-secret", format!("K={SECRET}")));
    let plan = SweepPlan {
        target: TargetSpec::local(),
        spec: SpecSource {
            flags,
            images: Some("images.yaml".into()),
            ..SpecSource::default()
        },
        sweep_file: sweep_file.map(|f| FromFile {
            path: f.into(),
            flags: Default::default(),
        }),
        wait_timeout: Duration::from_secs(300),
        load_images: false,
        seed: SeedPlan::of(&exectl::prepare::Options::seeding(6, None).unwrap()),
        bench: BenchSettings::default(),
        teardown: false,
    };
    let r = SweepResults {
        schema: SCHEMA,
        run_id: "S-cli".into(),
        state: RunState::Interrupted,
        pid: None,
        pid_since_unix_s: None,
        exectl_version: env!("CARGO_PKG_VERSION").into(),
        stack: "sw-cli".into(),
        target: "the local engine".into(),
        variables: vec!["env.M".into()],
        values: vec![vec!["c".into(), "d".into(), "e".into()]],
        repeat: 1,
        scenario: "idle".into(),
        levels: vec![5],
        search: None,
        room_users: None,
        browser_probe: false,
        started_unix_s: 1,
        duration_s: 0.5,
        points: vec![],
        stopped: Some("SIGINT received".into()),
        plan: serde_json::to_value(&plan).unwrap(),
        started_in: d.began.clone(),
        fingerprints: Default::default(),
    };
    let dir = d.state.join("sweeps/S-cli");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("results.json");
    std::fs::write(&file, r.to_json().unwrap()).unwrap();
    // The stack's .env, 0600, where the sweep's deploy put the secret.
    let bundle = d.state.join("local/sw-cli/bundle");
    std::fs::create_dir_all(&bundle).unwrap();
    std::fs::write(bundle.join(".env"), format!("APP_SECRET=x\nK={SECRET}\n")).unwrap();
    file
}

/// A sweep with a --set-secret writes its value nowhere, and says it nowhere, whether or not it gets
/// far (here: refused as unreachable, after every check).
#[test]
fn a_secret_of_a_sweep_is_kept_nowhere() {
    let d = dirs();
    let out = d.began.join("out");
    let flag = format!("K={SECRET}");
    for json in [false, true] {
        let mut args = vec![
            "sweep",
            "single",
            "--db",
            "sqlite",
            "--stack",
            "sw-cli",
            "--set-secret",
            &flag,
            "--vary",
            "env.M=a,b",
            "--levels",
            "5",
            "--out",
            out.to_str().unwrap(),
        ];
        if json {
            args.push("--json");
        }
        let o = exectl(&d, &d.began, &args);
        let (code, err) = code_err(&o);
        assert_eq!(code, Some(3), "{err}");
        let stdout = String::from_utf8_lossy(&o.stdout);
        assert!(
            !stdout.contains(SECRET) && !err.contains(SECRET),
            "{stdout}{err}"
        );
        assert_eq!(
            common::files_holding(&d.state, SECRET),
            Vec::<PathBuf>::new()
        );
        assert_eq!(
            common::files_holding(&d.began, SECRET),
            Vec::<PathBuf>::new()
        );
        assert!(
            !out.join("results.json").exists(),
            "nothing recorded before a connection"
        );
    }
}

/// `--resume` reads exectl.yaml and the relative paths from the folder the sweep began in, and its
/// secret from the stack's .env: from anywhere it gets as far as connecting.
#[test]
fn a_resume_from_elsewhere_reads_where_the_sweep_began() {
    let d = dirs();
    recorded(&d);
    // Read here, this file would be refused.
    std::fs::write(d.elsewhere.join("exectl.yaml"), "cpus: lots\n").unwrap();
    let o = exectl(&d, &d.elsewhere, &["sweep", "--resume", "S-cli"]);
    let (code, err) = code_err(&o);
    assert_eq!(code, Some(3), "past every check, to the connection: {err}");
    assert!(!err.contains(SECRET), "{err}");

    // The folder it began in is gone: refused naming it.
    std::fs::rename(&d.began, d.elsewhere.join("moved")).unwrap();
    let (code, err) = code_err(&exectl(&d, &d.elsewhere, &["sweep", "--resume", "S-cli"]));
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("invalid --resume \"S-cli\"")
            && err.contains(&format!("the sweep began in {}", d.began.display())),
        "{err}"
    );
}

/// An edited results.json is not resumed: refused naming what changed. A secret given again must be
/// the recorded one, and one found nowhere is asked for by name.
#[test]
fn an_edited_sweep_or_another_secret_is_refused() {
    let d = dirs();
    let file = recorded(&d);
    let written = std::fs::read_to_string(&file).unwrap();
    let resume = |extra: &[&str]| {
        let mut args = vec!["sweep", "--resume", "S-cli"];
        args.extend(extra);
        code_err(&exectl(&d, &d.began, &args))
    };

    let mut r: serde_json::Value = serde_json::from_str(&written).unwrap();
    // The plan holds the secret as its fingerprint only.
    assert!(!written.contains(SECRET), "{written}");
    assert!(written.contains(&format!("K={}", SecretValue::new("K", SECRET).redacted())));
    r["values"][0] = serde_json::json!(["c", "X", "Y"]);
    r["plan"]["bench"]["settle"]["secs"] = 5.into();
    std::fs::write(&file, serde_json::to_string_pretty(&r).unwrap()).unwrap();
    let (code, err) = resume(&[]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("was changed after the sweep wrote it: plan, values differ"),
        "{err}"
    );
    std::fs::write(&file, &written).unwrap();

    let (code, err) = resume(&["--set-secret", "K=not-the-one"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("invalid --set-secret \"K=<redacted>\"") && err.contains("not the value"),
        "{err}"
    );
    assert!(!err.contains("not-the-one"), "{err}");

    std::fs::remove_file(d.state.join("local/sw-cli/bundle/.env")).unwrap();
    let (code, err) = resume(&[]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--set-secret K=VALUE"), "{err}");
    // Given again, the right value goes on (to the connection).
    let flag = format!("K={SECRET}");
    let (code, err) = resume(&["--set-secret", &flag]);
    assert_eq!(code, Some(3), "{err}");
    // A bare --set-secret K takes it from the environment (out of `ps`): checked the same way.
    let bare = |value: &str| {
        let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_exectl"));
        c.args(["sweep", "--resume", "S-cli", "--set-secret", "K"])
            .current_dir(&d.began)
            .env("EXECTL_STATE_DIR", &d.state)
            .env("DOCKER_HOST", "unix:///nonexistent/exectl-sweep-cli.sock")
            .env_remove("EXECTL_TARGET")
            .env("K", value);
        code_err(&c.output().unwrap())
    };
    let (code, err) = bare("not-the-one");
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("not the value") && !err.contains("not-the-one"),
        "{err}"
    );
    let (code, err) = bare(SECRET);
    assert_eq!(code, Some(3), "{err}");
}

/// A resume runs the sweep that was recorded: a sweep file edited since (read again where the sweep
/// began) is refused naming what differs, before any connection (it ran the file's new values X and Y
/// as points 2 and 3).
#[test]
fn a_resume_refuses_a_sweep_file_that_changed() {
    let d = dirs();
    let file = d.began.join("sweep.yaml");
    std::fs::write(&file, "vary: {env.M: [c, d, e]}\nlevels: [5]\n").unwrap();
    recorded_asking(&d, Some("sweep.yaml"));
    let resume = || code_err(&exectl(&d, &d.elsewhere, &["sweep", "--resume", "S-cli"]));
    let (code, err) = resume();
    assert_eq!(
        code,
        Some(3),
        "as recorded, it goes on (to the connection): {err}"
    );
    for (body, says) in [
        (
            "vary: {env.M: [c, X, Y]}\nlevels: [5]\n",
            "values c,X,Y (recorded c,d,e)",
        ),
        (
            "vary: {env.N: [c, d, e]}\nlevels: [5]\n",
            "variables env.N (recorded env.M)",
        ),
        (
            "vary: {env.M: [c, d, e]}\nlevels: [5, 10]\nrepeat: 2\n",
            "repeat 2 (recorded 1); levels 5,10 (recorded 5)",
        ),
        (
            "vary: {env.M: [c, d, e]}\nfind_capacity: {to: 500}\n",
            "levels none (recorded 5); search --find-capacity --from 100",
        ),
    ] {
        std::fs::write(&file, body).unwrap();
        let (code, err) = resume();
        assert_eq!(code, Some(2), "{body}: {err}");
        assert!(
            err.contains("invalid --resume \"S-cli\"")
                && err.contains(&format!("its sweep file {} now gives", "sweep.yaml"))
                && err.contains(says)
                && err.contains("put the sweep file back"),
            "{body}: {err}"
        );
    }
}

/// `runs` shows a sweep running while its process is alive and began no later than it took the sweep
/// on (its resume's start, recorded): a resumed sweep, running under a pid newer than the sweep's
/// start, is running (runs called it killed); a pid another process took since is not the sweep.
/// `--resume` goes by the run's lock alone: held by another process (a sweep running, begun or
/// resumed), refused, exit 4, naming it, the file untouched; let go, resumed, whatever the pid says.
#[test]
fn a_resumed_sweep_running_is_running_and_a_reused_pid_is_not() {
    let d = dirs();
    let file = recorded(&d);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let running_since = |since: u64| {
        let mut r: SweepResults =
            serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        r.state = RunState::Running;
        r.stopped = None;
        // This test's own process, alive, and begun before `now`.
        r.pid = Some(std::process::id());
        r.pid_since_unix_s = Some(since);
        std::fs::write(&file, r.to_json().unwrap()).unwrap();
    };
    let list = || {
        let o = exectl(&d, &d.began, &["runs", "list"]);
        let out = String::from_utf8_lossy(&o.stdout).into_owned();
        out.lines()
            .find(|l| l.starts_with("sweep  S-cli"))
            .unwrap_or_else(|| panic!("{out}"))
            .to_string()
    };
    let resume = || {
        let before = std::fs::read(&file).unwrap();
        let o = exectl(&d, &d.began, &["sweep", "--resume", "S-cli"]);
        assert_eq!(
            std::fs::read(&file).unwrap(),
            before,
            "results.json untouched"
        );
        code_err(&o)
    };

    // Begun at unix time 1, resumed now by a process alive: running.
    running_since(now);
    let line = list();
    assert!(line.ends_with("  running"), "{line}");
    let (code, err) = code_err(&exectl(&d, &d.began, &["runs", "show", "S-cli"]));
    assert_eq!(code, Some(0), "{err}");
    assert!(!err.contains("killed"), "{err}");
    // Its run held by that process (as a sweep running holds it): refused, naming it.
    let holder = exectl::engine::lock::Holder::me("exectl sweep S-cli");
    let lock = file.parent().unwrap().join("exectl.lock");
    std::fs::write(&lock, serde_json::to_string(&holder).unwrap()).unwrap();
    let held = std::fs::File::open(&lock).unwrap();
    held.lock().unwrap();
    let (code, err) = resume();
    assert_eq!(code, Some(4), "{err}");
    assert!(
        err.contains(&format!(
            "sweep S-cli is running: exectl sweep S-cli (pid {} on",
            holder.pid
        )) && err.contains(&format!("since {}", holder.since)),
        "{err}"
    );
    drop(held);

    // Its pid now belongs to a process that started after the sweep's took it on: killed, resumable.
    running_since(1_000_000_000);
    let line = list();
    assert!(line.ends_with("interrupted (killed)"), "{line}");
    let (code, err) = resume();
    assert_eq!(code, Some(3), "past the check, to the connection: {err}");
}

/// A recorded sweep is a run: `runs show` prints its results, `runs list` lists it.
#[test]
fn runs_show_and_list_a_sweep() {
    let d = dirs();
    recorded(&d);
    let o = exectl(&d, &d.began, &["runs", "show", "S-cli"]);
    let (code, err) = code_err(&o);
    assert_eq!(code, Some(0), "{err}");
    let r: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        (r["run_id"].as_str(), r["state"].as_str()),
        (Some("S-cli"), Some("interrupted"))
    );
    let o = exectl(&d, &d.began, &["runs", "list"]);
    let list = String::from_utf8_lossy(&o.stdout);
    assert!(
        list.contains("sweep  S-cli")
            && list.contains("env.M=c,d,e")
            && list.contains("0 point(s) of 3"),
        "{list}"
    );

    // A sweep of the layout before (schema 1, no started_in) is unreadable by its layout, said so
    // (it was "missing field `started_in`"), as --resume says it.
    let old = d.state.join("sweeps/S-old");
    std::fs::create_dir_all(&old).unwrap();
    let mut r: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(d.state.join("sweeps/S-cli/results.json")).unwrap(),
    )
    .unwrap();
    r["schema"] = 1.into();
    r["run_id"] = "S-old".into();
    r.as_object_mut().unwrap().remove("started_in");
    std::fs::write(old.join("results.json"), r.to_string()).unwrap();
    let layout = format!("has layout 1 and this exectl reads {SCHEMA}");
    let layout = layout.as_str();
    let o = exectl(&d, &d.began, &["runs", "list"]);
    let list = String::from_utf8_lossy(&o.stdout);
    let line = list
        .lines()
        .find(|l| l.starts_with("sweep  S-old"))
        .unwrap_or_default();
    assert!(
        line.contains("unreadable:") && line.contains(layout),
        "{list}"
    );
    assert!(list.contains("sweep  S-cli"), "{list}");
    for args in [
        &["runs", "show", "S-old"][..],
        &["sweep", "--resume", "S-old"],
    ] {
        let (code, err) = code_err(&exectl(&d, &d.began, args));
        assert_eq!(code, Some(2), "{args:?}: {err}");
        assert!(err.contains(layout), "{args:?}: {err}");
    }
}

/// Refused before any connection (exit 2), naming the flag or the file's line.
#[test]
fn a_sweep_that_cannot_run_is_refused_before_connecting() {
    let d = dirs();
    let file = d.began.join("a-file");
    std::fs::write(&file, "").unwrap();
    let sweep_file = d.began.join("sweep.yaml");
    std::fs::write(
        &sweep_file,
        "vary: {instances: [1, 2]}\nlevels: [10]\nfind_capacity: {to: 100}\n",
    )
    .unwrap();
    let twice = d.began.join("twice.yaml");
    std::fs::write(
        &twice,
        "vary:\n  instances: [1, 2]\n  instances: [3]\nlevels: [10]\n",
    )
    .unwrap();
    let ha = |extra: &[&str]| -> Vec<String> {
        let mut v = vec!["sweep", "ha", "--stack", "sw-cli"];
        v.extend(extra);
        v.into_iter().map(String::from).collect()
    };
    for (args, named, says) in [
        (
            ha(&["--vary", "db=postgres,mariadb", "--levels", "10"]),
            "invalid --vary \"db=postgres,mariadb\"",
            "postgres and mariadb on the stack's one database volume",
        ),
        (
            ha(&[
                "--vary",
                "instances=1,2",
                "--find-capacity",
                "--to",
                "1000",
                "--precision",
                "0.1",
            ]),
            "invalid --precision \"0.1\"",
            "give a percent from 0.1% to 100% with its %",
        ),
        (
            ha(&[
                "--vary",
                "instances=1,2",
                "--find-capacity",
                "--to",
                "1000",
                "--precision",
                "0.05%",
            ]),
            "invalid --precision \"0.05%\"",
            "not between 0.1 % and 100 %",
        ),
        (
            ha(&[
                "--vary",
                "instances=1,2",
                "--levels",
                "10",
                "--out",
                file.to_str().unwrap(),
            ]),
            "invalid --out",
            "give a folder for the sweep's results.json",
        ),
        (
            ha(&["--sweep-file", sweep_file.to_str().unwrap()]),
            &format!("invalid --sweep-file \"{}:3\"", sweep_file.display()),
            "levels (line 2) and find_capacity (line 3) are both given",
        ),
        (
            ha(&["--sweep-file", twice.to_str().unwrap()]),
            &format!("invalid --sweep-file \"{}:3\"", twice.display()),
            "vary.instances is given twice (first on line 2)",
        ),
    ] {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (code, err) = code_err(&exectl(&d, &d.began, &args));
        assert_eq!(code, Some(2), "{args:?}: {err}");
        assert!(err.contains(named) && err.contains(says), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
    assert!(!d.state.join("sweeps").exists(), "nothing recorded");
}
