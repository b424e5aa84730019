//! `exectl runs` over benches, with crafted results.json files in a temp state folder (no engine): list
//! shows each bench's state (complete, running, interrupted, and "interrupted (killed)" for a file still
//! running whose process is gone) and its capacity as the verdict means it ("at least N" when every
//! level passed); show prints a bench's results as it prints a deploy record; diff warns when more than
//! one variable differs and says which id does not exist; a bench written to `--out DIR` is recorded
//! in the state folder and found by its id (runs and `exectl report`).

use std::path::Path;
use std::process::Command;

use serde_json::Value;

const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/bench-results.json"
);

/// exectl with this state folder: exit code, stdout, stderr.
fn exectl(state: &Path, args: &[&str]) -> (Option<i32>, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_exectl"))
        .env("EXECTL_STATE_DIR", state)
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn ok(state: &Path, args: &[&str]) -> String {
    let (code, out, err) = exectl(state, args);
    assert_eq!(code, Some(0), "{args:?}: {out}{err}");
    out
}

fn now_s() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// The fixture (2 of 3 levels run: 200 passed, 500 failed), as bench `id`, changed by `edit`, written
/// to `dir` (default: `<state>/benches/ID`).
fn bench(dir: &Path, id: &str, edit: impl FnOnce(&mut Value)) {
    let mut r: Value = serde_json::from_str(&std::fs::read_to_string(FIXTURE).unwrap()).unwrap();
    r["run_id"] = id.into();
    edit(&mut r);
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join("results.json"), serde_json::to_vec(&r).unwrap()).unwrap();
}

/// Every level passed: the verdict's capacity has no knee.
fn all_passed(r: &mut Value) {
    r["levels"].as_array_mut().unwrap().truncate(1);
    r["levels_asked"] = serde_json::json!([200]);
    r["verdict"]["knee"] = Value::Null;
    r["verdict"]["limiting"] = Value::Null;
    r["verdict"]["reasons"] = serde_json::json!([]);
}

/// A timeline of `n` samples in `dir` (the fixture's results count 26).
fn timeline(dir: &Path, n: usize) {
    let sample = serde_json::to_string(&exectl_core::bench::Sample::default()).unwrap();
    std::fs::write(dir.join("timeline.jsonl"), format!("{sample}\n").repeat(n)).unwrap();
}

fn line<'a>(out: &'a str, id: &str) -> &'a str {
    out.lines()
        .find(|l| l.split_whitespace().nth(1) == Some(id))
        .unwrap_or_else(|| panic!("no line for {id} in:\n{out}"))
}

#[test]
fn list_shows_each_benchs_state_and_capacity() {
    let state = tempfile::tempdir().unwrap();
    let benches = state.path().join("benches");
    bench(&benches.join("B-done"), "B-done", all_passed);
    bench(&benches.join("B-failed"), "B-failed", |_| {});
    bench(&benches.join("B-stopped"), "B-stopped", |r| {
        r["state"] = "interrupted".into()
    });
    // Still "running", but its process is gone: killed.
    bench(&benches.join("B-killed"), "B-killed", |r| {
        r["state"] = "running".into();
        r["pid"] = u32::MAX.into();
    });
    // Still running: this test's own process, started before the bench.
    bench(&benches.join("B-live"), "B-live", |r| {
        r["state"] = "running".into();
        r["pid"] = std::process::id().into();
        r["started_unix_s"] = now_s().into();
    });
    let out = ok(state.path(), &["runs", "list"]);
    assert!(
        line(&out, "B-done").contains("capacity at least 200  complete"),
        "{out}"
    );
    assert!(
        line(&out, "B-failed").contains("capacity 200  complete"),
        "{out}"
    );
    assert!(line(&out, "B-stopped").ends_with("  interrupted"), "{out}");
    assert!(
        line(&out, "B-killed").ends_with("  interrupted (killed)"),
        "{out}"
    );
    assert!(line(&out, "B-live").ends_with("  running"), "{out}");

    let json: Value = serde_json::from_str(&ok(state.path(), &["runs", "list", "--json"])).unwrap();
    let of = |id: &str| {
        json.as_array()
            .unwrap()
            .iter()
            .find(|b| b["id"] == id)
            .cloned()
            .unwrap()
    };
    assert_eq!(of("B-killed")["state"], "interrupted (killed)");
    assert_eq!(of("B-done")["capacity_at_least"], true);
    assert_eq!(of("B-failed")["capacity_at_least"], false);
}

#[test]
fn show_prints_a_benchs_results() {
    let state = tempfile::tempdir().unwrap();
    let benches = state.path().join("benches");
    bench(&benches.join("B-one"), "B-one", |_| {});
    let shown: Value = serde_json::from_str(&ok(state.path(), &["runs", "show", "B-one"])).unwrap();
    assert_eq!(shown["run_id"], "B-one");
    assert_eq!(shown["verdict"]["capacity"], 200);
    // A killed bench is shown interrupted, with a note saying why.
    bench(&benches.join("B-killed"), "B-killed", |r| {
        r["state"] = "running".into();
        r["pid"] = u32::MAX.into();
    });
    let (code, out, err) = exectl(state.path(), &["runs", "show", "B-killed"]);
    assert_eq!(code, Some(0), "{err}");
    let shown: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(shown["state"], "interrupted", "{out}");
    assert!(err.contains("the bench was killed"), "{err}");
    let (code, _, err) = exectl(state.path(), &["runs", "show", "nope"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("invalid run id \"nope\": no such run"),
        "{err}"
    );
}

#[test]
fn diff_names_a_missing_id_for_benches_and_deploys() {
    let state = tempfile::tempdir().unwrap();
    bench(&state.path().join("benches/B-a"), "B-a", |_| {});
    let (code, _, err) = exectl(state.path(), &["runs", "diff", "B-a", "nope"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("invalid run id \"nope\": no such run") && !err.contains("\"B-a\""),
        "{err}"
    );
    // A deploy record and a missing id: the same.
    let runs = state.path().join("runs");
    std::fs::create_dir_all(&runs).unwrap();
    let spec = exectl_core::spec::resolve(exectl_core::spec::SpecInput {
        topology: Some(exectl_core::spec::Raw::flag("topology", "ha")),
        ..Default::default()
    })
    .unwrap();
    let record = exectl::state::runs::Record {
        id: "E-ha-2-tuned-least-conn-001".into(),
        created: "2026-12-01 10:00:00 UTC".into(),
        created_epoch: 1_796_000_000,
        stack: "exe".into(),
        knobs: exectl::state::runs::knobs(&spec),
        spec: serde_json::to_value(&spec).unwrap(),
        files: Default::default(),
        images: Default::default(),
        engine: Default::default(),
        exectl: exectl::state::runs::ExectlRecord::current(),
        changed: 0,
        seconds: 0.0,
        fitted: vec![],
    };
    std::fs::write(
        runs.join("E-ha-2-tuned-least-conn-001.json"),
        serde_json::to_vec(&record).unwrap(),
    )
    .unwrap();
    let (code, _, err) = exectl(
        state.path(),
        &["runs", "diff", "nope", "E-ha-2-tuned-least-conn-001"],
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("invalid run id \"nope\": no such run"),
        "{err}"
    );
    // Both missing: both named.
    let (code, _, err) = exectl(state.path(), &["runs", "diff", "nope", "gone"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("2 problems") && err.contains("\"nope\"") && err.contains("\"gone\""),
        "{err}"
    );
    // A bench and a deploy are not compared.
    let (code, _, err) = exectl(
        state.path(),
        &["runs", "diff", "B-a", "E-ha-2-tuned-least-conn-001"],
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("B-a is a bench"), "{err}");
}

#[test]
fn diff_of_two_benches_warns_about_several_variables_and_keeps_at_least() {
    let state = tempfile::tempdir().unwrap();
    let benches = state.path().join("benches");
    bench(&benches.join("B-a"), "B-a", all_passed);
    bench(&benches.join("B-b"), "B-b", |r| {
        all_passed(r);
        r["knobs"]["cpus"] = "2".into();
    });
    let out = ok(state.path(), &["runs", "diff", "B-a", "B-b"]);
    assert!(out.contains("1 variable changed: cpus"), "{out}");
    assert!(
        out.contains("capacity: at least 200 -> at least 200"),
        "{out}"
    );
    bench(&benches.join("B-c"), "B-c", |r| {
        r["scenario"] = "collab".into();
        r["hold_s"] = 60.0.into();
        r["knobs"]["instances"] = "4".into();
    });
    let out = ok(state.path(), &["runs", "diff", "B-a", "B-c"]);
    assert!(
        out.contains("WARNING: 4 variables changed (hold, instances, levels, scenario)"),
        "{out}"
    );
    assert!(out.contains("capacity: at least 200 -> 200"), "{out}");
    let json: Value =
        serde_json::from_str(&ok(state.path(), &["runs", "diff", "B-a", "B-c", "--json"])).unwrap();
    assert_eq!(json["variables"].as_array().unwrap().len(), 4, "{json}");
}

#[test]
fn a_bench_written_to_out_is_found_by_its_id() {
    let state = tempfile::tempdir().unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    let out_dir = elsewhere.path().join("my-bench");
    // What `bench --out DIR` does once it knows its run id and folder.
    exectl::state::benches::record_out(state.path(), "B-out", &out_dir).unwrap();
    bench(&out_dir, "B-out", all_passed);
    bench(&state.path().join("benches/B-home"), "B-home", |_| {});
    let listed = ok(state.path(), &["runs", "list"]);
    assert!(
        line(&listed, "B-out").contains("capacity at least 200"),
        "{listed}"
    );
    let shown: Value = serde_json::from_str(&ok(state.path(), &["runs", "show", "B-out"])).unwrap();
    assert_eq!(shown["run_id"], "B-out");
    let diff = ok(state.path(), &["runs", "diff", "B-home", "B-out"]);
    assert!(diff.contains("B-home -> B-out"), "{diff}");
    // `exectl report RUN_ID` follows it too, and writes the report beside its results.
    timeline(&out_dir, 26);
    let report = ok(state.path(), &["report", "B-out"]);
    assert!(report.trim().ends_with("report.html"), "{report}");
    assert!(out_dir.join("report.html").exists());
}

/// One unreadable file does not hide the others: a corrupt deploy record is listed as unreadable beside
/// the rest (it made `runs list` fail whole), and `runs show` of a corrupt record or bench is bad input
/// naming the file (exit 2), as a state folder that is a file is.
#[test]
fn corrupt_records_are_named_not_fatal() {
    let state = tempfile::tempdir().unwrap();
    let runs = state.path().join("runs");
    std::fs::create_dir_all(&runs).unwrap();
    std::fs::write(runs.join("E-ha-2-tuned-least-conn-001.json"), "{\"id\": 1").unwrap();
    bench(&state.path().join("benches/B-ok"), "B-ok", all_passed);
    bench(&state.path().join("benches/B-bad"), "B-bad", |_| {});
    std::fs::write(
        state.path().join("benches/B-bad/results.json"),
        "\u{1}\u{2}garbage",
    )
    .unwrap();
    let out = ok(state.path(), &["runs", "list"]);
    assert!(
        line(&out, "E-ha-2-tuned-least-conn-001").contains("unreadable:")
            && line(&out, "E-ha-2-tuned-least-conn-001").contains("is not a deploy's run record"),
        "{out}"
    );
    assert!(line(&out, "B-bad").contains("unreadable:"), "{out}");
    assert!(
        line(&out, "B-ok").contains("capacity at least 200"),
        "{out}"
    );
    let json: Value = serde_json::from_str(&ok(state.path(), &["runs", "list", "--json"])).unwrap();
    let kinds: Vec<(&str, bool)> = json
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["kind"].as_str().unwrap(), r["error"].is_string()))
        .collect();
    assert!(
        kinds.contains(&("deploy", true)) && kinds.contains(&("bench", true)),
        "{json}"
    );
    for id in ["B-bad", "E-ha-2-tuned-least-conn-001"] {
        let (code, _, err) = exectl(state.path(), &["runs", "show", id]);
        assert_eq!(code, Some(2), "{id}: {err}");
        assert!(
            err.contains(&format!("invalid run id \"{id}\"")) && err.contains(".json"),
            "{id}: {err}"
        );
    }
    // A state folder that is a file, or lies under one: refused, naming the variable.
    let file = state.path().join("not-a-folder");
    std::fs::write(&file, "").unwrap();
    for root in [file.clone(), file.join("below")] {
        let (code, out, err) = exectl(&root, &["runs", "list"]);
        assert_eq!(code, Some(2), "{}: {out}{err}", root.display());
        assert!(
            err.contains("invalid EXECTL_STATE_DIR") && err.contains("is a file"),
            "{err}"
        );
    }
}

/// `report --out` is the report's file, in a folder that exists: a folder, or a path under folders that
/// do not exist, is refused (exit 2) and nothing is made (the missing folders were created).
#[test]
fn report_out_is_a_file_in_an_existing_folder() {
    let state = tempfile::tempdir().unwrap();
    let dir = state.path().join("benches/B-r");
    bench(&dir, "B-r", all_passed);
    timeline(&dir, 26);
    let elsewhere = tempfile::tempdir().unwrap();
    let folder = elsewhere.path().display().to_string();
    let missing = elsewhere.path().join("nonexistent");
    let under = missing.join("x.html").display().to_string();
    for (out, said) in [(&folder, "is a folder"), (&under, "does not exist")] {
        let (code, _, err) = exectl(state.path(), &["report", "B-r", "--out", out]);
        assert_eq!(code, Some(2), "--out {out}: {err}");
        assert!(
            err.contains(&format!("invalid --out \"{out}\"")) && err.contains(said),
            "{err}"
        );
    }
    assert!(!missing.exists(), "no folder made for --out");
    assert!(!dir.join("report.html").exists(), "nothing written");
    let file = elsewhere.path().join("r.html").display().to_string();
    let out = ok(state.path(), &["report", "B-r", "--out", &file]);
    assert!(out.trim().ends_with("r.html"), "{out}");
}

/// A timeline that is missing, not text, unreadable or shorter than the bench counted is refused
/// naming the file and why, never drawn as "not sampled in this run"; a bench still running, with an
/// empty timeline, says it has sampled nothing yet.
#[test]
fn an_unreadable_timeline_is_named_not_drawn_as_unsampled() {
    let state = tempfile::tempdir().unwrap();
    let dir = state.path().join("benches/B-t");
    bench(&dir, "B-t", all_passed);
    let path = dir.join("timeline.jsonl");
    let refused = |why: &str| {
        let (code, out, err) = exectl(state.path(), &["report", "B-t"]);
        assert_eq!(code, Some(2), "{why}: {out}{err}");
        assert!(
            err.contains("timeline unreadable:")
                && err.contains(&path.display().to_string())
                && err.contains(why),
            "{err}"
        );
        assert!(
            !dir.join("report.html").exists(),
            "{why}: a report was written"
        );
    };
    refused("is missing");
    std::fs::write(&path, [0x7f, b'E', b'L', b'F', 0xff, 0xfe, 0, 1]).unwrap();
    refused("is not text");
    std::fs::remove_file(&path).unwrap();
    std::fs::create_dir(&path).unwrap();
    refused("cannot be read");
    std::fs::remove_dir(&path).unwrap();
    std::fs::write(&path, "").unwrap();
    refused("holds 0 samples where results.json counts 26");
    timeline(&dir, 26);
    ok(state.path(), &["report", "B-t"]);
    assert!(dir.join("report.html").exists());
    // Running (this test's process, started before it), nothing sampled yet: said so.
    bench(&dir, "B-t", |r| {
        r["state"] = "running".into();
        r["pid"] = std::process::id().into();
        r["started_unix_s"] = now_s().into();
        r["sampler"]["samples"] = 0.into();
    });
    std::fs::write(&path, "").unwrap();
    ok(state.path(), &["report", "B-t"]);
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert!(
        html.contains("not sampled yet: the bench is running") && !html.contains("in this run"),
        "a running bench's empty charts"
    );
}
