//! `ops::runs` over real state folders and typed values.

use super::*;
use crate::state::runs::{EngineRecord, ExectlRecord};
use std::collections::BTreeMap;

/// A bench's results (the core's example: levels 200, 500 and 1000 asked, the knee at 500).
fn bench_results(id: &str, state: RunState, pid: Option<u32>) -> Results {
    let (mut r, _) = exectl_core::bench::report::tests::example();
    r.run_id = id.into();
    r.state = state;
    r.pid = pid;
    r
}

fn sweep_results(id: &str, state: RunState, pid: Option<u32>) -> SweepResults {
    SweepResults {
        schema: exectl_core::sweep::results::SCHEMA,
        run_id: id.into(),
        state,
        pid,
        pid_since_unix_s: None,
        exectl_version: "0".into(),
        stack: "exe".into(),
        target: "local".into(),
        variables: vec!["nginx".into(), "env.M".into()],
        values: vec![vec!["stock".into(), "tuned".into()], vec!["c".into()]],
        repeat: 2,
        scenario: "login-burst".into(),
        levels: vec![200],
        search: None,
        room_users: None,
        browser_probe: false,
        started_unix_s: 1_795_000_000,
        duration_s: 0.0,
        points: vec![],
        stopped: None,
        plan: Value::Null,
        started_in: PathBuf::from("/"),
        fingerprints: BTreeMap::new(),
    }
}

fn record(id: &str, instances: &str) -> Record {
    Record {
        id: id.into(),
        created: "2026-12-01T10:00:00Z".into(),
        created_epoch: 0,
        stack: "exe".into(),
        knobs: BTreeMap::from([
            ("topology".to_string(), "ha".to_string()),
            ("instances".to_string(), instances.to_string()),
        ]),
        spec: Value::Null,
        files: BTreeMap::new(),
        images: BTreeMap::new(),
        engine: EngineRecord::default(),
        exectl: ExectlRecord::current(),
        changed: 3,
        seconds: 1.5,
        fitted: vec![],
    }
}

fn unreadable(id: &str, why: &str) -> Unreadable {
    Unreadable {
        id: id.into(),
        why: why.into(),
    }
}

fn typed_list() -> RunList {
    RunList {
        deploys: vec![record("E-ha-2-001", "2")],
        unreadable_deploys: vec![unreadable("E-bad", "not a record")],
        benches: vec![Listed {
            run: BenchRun {
                id: "B-1".into(),
                dir: PathBuf::from("/s/benches/B-1"),
                results: bench_results("B-1", RunState::Running, Some(7)),
            },
            shown: Shown::Killed,
        }],
        unreadable_benches: vec![unreadable("B-bad", "{")],
        sweeps: vec![Listed {
            run: SweepRun {
                id: "S-1".into(),
                dir: PathBuf::from("/s/sweeps/S-1"),
                results: sweep_results("S-1", RunState::Interrupted, None),
            },
            shown: Shown::Interrupted,
        }],
        unreadable_sweeps: vec![unreadable("S-bad", "has layout 1")],
    }
}

#[test]
fn a_list_is_a_line_per_run_kind_by_kind() {
    let pad = |id: &str| format!("{id:<36}");
    assert_eq!(
        typed_list().lines(),
        [
            format!(
                "deploy {} 2026-12-01T10:00:00Z  stack exe  3 change(s)",
                pad("E-ha-2-001")
            ),
            format!("deploy {} unreadable: not a record", pad("E-bad")),
            format!(
                "bench  {} stack exe  login-burst levels 200,500,1000  capacity 200  interrupted (killed)",
                pad("B-1")
            ),
            format!("bench  {} unreadable: {{", pad("B-bad")),
            format!(
                "sweep  {} stack exe  nginx=stock,tuned env.M=c  0 point(s) of 4  interrupted",
                pad("S-1")
            ),
            format!("sweep  {} unreadable: has layout 1", pad("S-bad")),
        ]
    );
    assert_eq!(
        RunList::default().lines(),
        ["no runs recorded yet (every deploy and every bench records one)"]
    );
    assert_eq!(RunList::default().json(), json!([]));
}

#[test]
fn a_lists_json_is_an_object_per_run_the_unreadable_with_their_error() {
    let json = typed_list().json();
    let runs = json.as_array().unwrap();
    let kinds: Vec<(&str, &str)> = runs
        .iter()
        .map(|r| (r["kind"].as_str().unwrap(), r["id"].as_str().unwrap()))
        .collect();
    assert_eq!(
        kinds,
        [
            ("deploy", "E-ha-2-001"),
            ("bench", "B-1"),
            ("deploy", "E-bad"),
            ("bench", "B-bad"),
            ("sweep", "S-1"),
            ("sweep", "S-bad")
        ]
    );
    assert_eq!(
        runs[0],
        json!({"kind": "deploy", "id": "E-ha-2-001", "created": "2026-12-01T10:00:00Z",
               "stack": "exe", "topology": "ha", "instances": "2", "changed": 3, "seconds": 1.5})
    );
    assert_eq!(
        runs[1],
        json!({"kind": "bench", "id": "B-1", "dir": "/s/benches/B-1",
               "state": "interrupted (killed)", "started_unix_s": 1_795_000_000u64,
               "stack": "exe", "scenario": "login-burst", "levels": [200, 500, 1000],
               "capacity": 200, "capacity_at_least": false, "knee": 500})
    );
    assert_eq!(
        runs[2],
        json!({"kind": "deploy", "id": "E-bad", "error": "not a record"})
    );
    assert_eq!(
        runs[4],
        json!({"kind": "sweep", "id": "S-1", "dir": "/s/sweeps/S-1", "state": "interrupted",
               "started_unix_s": 1_795_000_000u64, "stack": "exe",
               "variables": ["nginx", "env.M"], "values": [["stock", "tuned"], ["c"]],
               "points": 0})
    );
}

/// A state folder of real files: a bench killed (its pid gone), a sweep killed, a deploy record
/// that cannot be read.
fn state_root() -> tempfile::TempDir {
    let root = tempfile::tempdir().unwrap();
    let bench = crate::state::benches_dir(root.path()).join("B-1");
    std::fs::create_dir_all(&bench).unwrap();
    let r = bench_results("B-1", RunState::Running, Some(u32::MAX));
    std::fs::write(
        bench.join(exectl_core::bench::results::RESULTS),
        serde_json::to_vec(&r).unwrap(),
    )
    .unwrap();
    let sweep = crate::state::sweeps_dir(root.path()).join("S-1");
    std::fs::create_dir_all(&sweep).unwrap();
    let s = sweep_results("S-1", RunState::Running, Some(u32::MAX));
    std::fs::write(
        sweep.join(exectl_core::sweep::results::RESULTS),
        s.to_json().unwrap(),
    )
    .unwrap();
    let runs = crate::state::runs_dir(root.path());
    std::fs::create_dir_all(&runs).unwrap();
    std::fs::write(runs.join("E-bad.json"), "{").unwrap();
    root
}

#[test]
fn a_state_folder_is_listed_with_what_cannot_be_read() {
    let root = state_root();
    let list = list(root.path());
    assert!(list.deploys.is_empty());
    assert_eq!(list.unreadable_deploys.len(), 1);
    assert_eq!(list.unreadable_deploys[0].id, "E-bad");
    assert!(
        list.unreadable_deploys[0]
            .why
            .contains("is not a deploy's run record"),
        "{list:?}"
    );
    let benches: Vec<(&str, Shown)> = list
        .benches
        .iter()
        .map(|b| (b.run.id.as_str(), b.shown))
        .collect();
    assert_eq!(benches, [("B-1", Shown::Killed)]);
    let sweeps: Vec<(&str, Shown)> = list
        .sweeps
        .iter()
        .map(|s| (s.run.id.as_str(), s.shown))
        .collect();
    assert_eq!(sweeps, [("S-1", Shown::Killed)]);
    assert!(list.unreadable_benches.is_empty() && list.unreadable_sweeps.is_empty());
    assert!(!list.is_empty());
    assert!(super::list(&root.path().join("none")).is_empty());
}

#[test]
fn a_killed_run_is_shown_interrupted_with_a_note() {
    let root = state_root();
    let shown = show(root.path(), "B-1").unwrap();
    let file = crate::state::benches_dir(root.path()).join("B-1/results.json");
    assert_eq!(
        shown.note().unwrap(),
        format!(
            "note: {} says running, but its process (pid {}) is gone: the bench was killed",
            file.display(),
            u32::MAX
        )
    );
    let ShownRun::Bench { results, .. } = &shown else {
        panic!("{shown:?}")
    };
    assert_eq!((results.state, results.pid), (RunState::Interrupted, None));
    let text = shown.to_json().unwrap();
    assert!(text.ends_with("}\n") && text.contains("\"state\": \"interrupted\""));

    let shown = show(root.path(), "S-1").unwrap();
    let file = crate::state::sweeps_dir(root.path()).join("S-1/results.json");
    assert_eq!(
        shown.note().unwrap(),
        format!(
            "note: {} says running, but its process (pid {}) is gone: the sweep was killed (exectl sweep --resume S-1 goes on)",
            file.display(),
            u32::MAX
        )
    );
    let ShownRun::Sweep { results, .. } = &shown else {
        panic!("{shown:?}")
    };
    assert_eq!((results.state, results.pid), (RunState::Interrupted, None));

    // Not killed: no note, nothing corrected; without a pid, none said.
    let (mut state, mut pid) = (RunState::Complete, Some(3));
    assert_eq!(
        killed(Shown::Complete, "f".into(), &mut state, &mut pid),
        None
    );
    assert_eq!((state, pid), (RunState::Complete, Some(3)));
    let k = Killed {
        file: "f".into(),
        pid: None,
    };
    let bench = ShownRun::Bench {
        results: Box::new(bench_results("B", RunState::Interrupted, None)),
        killed: Some(k),
    };
    assert_eq!(
        bench.note().unwrap(),
        "note: f says running, but its process is gone: the bench was killed"
    );
    assert_eq!(ShownRun::Deploy(Box::new(record("E", "2"))).note(), None);
}

#[test]
fn an_unknown_id_is_named_with_where_it_was_looked_for() {
    let root = state_root();
    let e = show(root.path(), "nope").unwrap_err();
    let u = e.downcast_ref::<UsageError>().unwrap();
    assert_eq!((u.field.as_str(), u.value.as_str()), ("run id", "nope"));
    assert_eq!(
        u.problem,
        format!(
            "no such run: no deploy record in {}, no bench in {} and no sweep in {}",
            crate::state::runs_dir(root.path()).display(),
            crate::state::benches_dir(root.path()).display(),
            crate::state::sweeps_dir(root.path()).display()
        )
    );
    // Both ids of a diff, when neither is a run; one, when one is.
    let e = diff(root.path(), "nope", "gone").unwrap_err();
    let both = e.downcast_ref::<UsageErrors>().unwrap();
    let ids: Vec<&str> = both.0.iter().map(|u| u.value.as_str()).collect();
    assert_eq!(ids, ["nope", "gone"]);
    let e = diff(root.path(), "B-1", "gone").unwrap_err();
    assert_eq!(e.downcast_ref::<UsageError>().unwrap().value, "gone");
    // A sweep is not diffed, even with itself.
    let e = diff(root.path(), "S-1", "S-1").unwrap_err();
    let u = e.downcast_ref::<UsageError>().unwrap();
    assert_eq!(
        u.problem,
        "S-1 is a sweep, and its report compares its values"
    );
}

#[test]
fn runs_of_two_kinds_are_not_compared_the_other_named() {
    let error = |ka, kb| {
        let u = not_compared("x", "y", ka, kb);
        (u.value, u.problem)
    };
    let sweep = |id: &str| {
        (
            id.to_string(),
            format!("{id} is a sweep, and its report compares its values"),
        )
    };
    assert_eq!(error(Kind::Sweep, Kind::Bench), sweep("x"));
    assert_eq!(error(Kind::Sweep, Kind::Sweep), sweep("x"));
    assert_eq!(error(Kind::Deploy, Kind::Sweep), sweep("y"));
    assert_eq!(
        error(Kind::Bench, Kind::Deploy),
        (
            "y".to_string(),
            "x is a bench and y is a deploy".to_string()
        )
    );
    assert_eq!(
        error(Kind::Deploy, Kind::Bench),
        (
            "x".to_string(),
            "y is a bench and x is a deploy".to_string()
        )
    );
    let u = not_compared("x", "y", Kind::Bench, Kind::Deploy);
    assert_eq!(
        u.fix,
        "compare two benches or two deploys (exectl runs list)"
    );
}

#[test]
fn a_diff_is_its_lines_and_its_json() {
    let d = RunDiff::Deploy {
        a: "E-1".into(),
        b: "E-2".into(),
        diff: runs::diff(&record("E-1", "2"), &record("E-2", "4 ")),
    };
    assert_eq!(
        d.text(),
        format!(
            "E-1 -> E-2\n  {:<34} 2 -> \"4 \"\n1 variable changed: instances\n",
            "knobs.instances"
        )
    );
    let json: Value = serde_json::from_str(&d.to_json().unwrap()).unwrap();
    assert_eq!(json["variables"], json!(["instances"]));
    assert!(d.to_json().unwrap().ends_with("}\n"));

    let (x, y) = (
        bench_results("B-1", RunState::Interrupted, None),
        bench_results("B-2", RunState::Complete, None),
    );
    let diff = compare::diff(&x, &y);
    let d = RunDiff::Bench {
        a: "B-1".into(),
        b: "B-2".into(),
        diff: diff.clone(),
        shown: (Shown::Killed, Shown::Complete),
    };
    assert_eq!(
        d.text(),
        format!(
            "note: B-1 is interrupted (killed): its levels end early\n{}",
            compare::render("B-1", "B-2", &diff)
        )
    );
    assert_eq!(
        d.to_json().unwrap(),
        serde_json::to_string_pretty(&diff).unwrap() + "\n"
    );
}
