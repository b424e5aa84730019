//! `exectl campaign --resume`'s checks of a recorded campaign, with no engine: DOCKER_HOST points at
//! a socket that does not exist, so a resume past every check exits 3 (unreachable), one refused as
//! bad input exits 2 and one whose run another process holds exits 4, each before any connection and
//! with nothing written. The campaign is recorded here as exectl records one (sealed, each setting's
//! fingerprint), in a state folder of the test's own: row 1 ran (its folder and bench cited), row 2
//! not yet.

use std::path::{Path, PathBuf};
use std::process::Output;

use exectl::engine::lock::Holder;
use exectl_core::campaign::file::parse;
use exectl_core::campaign::results::{file_inputs, row_inputs, CampaignResults, SCHEMA};
use sha2::{Digest, Sha256};

const ID: &str = "C-res";

const FILE: &str = "name: res
images: images.yaml
bench: {hold: 20s, ramp: 2s, settle: 5s}
rows:
  - {name: a, topology: single, levels: [20]}
  - {name: b, topology: single, levels: [40]}
";

struct Campaign {
    _tmp: tempfile::TempDir,
    state: PathBuf,
    study: PathBuf,
    /// STATE/campaigns/C-res.
    dir: PathBuf,
}

impl Campaign {
    fn results(&self) -> PathBuf {
        self.dir.join("results.json")
    }

    fn exectl(&self, args: &[&str]) -> Output {
        std::process::Command::new(env!("CARGO_BIN_EXE_exectl"))
            .args(args)
            .current_dir(&self.study)
            .env("EXECTL_STATE_DIR", &self.state)
            .env(
                "DOCKER_HOST",
                "unix:///nonexistent/exectl-campaign-cli.sock",
            )
            .env_remove("EXECTL_TARGET")
            .env("RUST_BACKTRACE", "0")
            .output()
            .unwrap()
    }

    /// `campaign --resume C-res [extra]`: its exit code and stderr, refused with nothing written
    /// (every file of the campaign's folder as it was, but the lock's).
    fn resume(&self, extra: &[&str]) -> (Option<i32>, String) {
        let before = files(&self.dir);
        let mut args = vec!["campaign", "--resume", ID];
        args.extend(extra);
        let o = self.exectl(&args);
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        assert_eq!(files(&self.dir), before, "the campaign's files: {err}");
        (o.status.code(), err)
    }
}

/// Every file under `dir` (but the run's lock) and its bytes.
fn files(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(files(&p));
        } else if !p.ends_with("exectl.lock") {
            out.push((p.clone(), std::fs::read(&p).unwrap()));
        }
    }
    out.sort();
    out
}

/// The campaign of FILE begun in a study folder with its images file, row 1 done, recorded as
/// exectl records one.
fn recorded() -> Campaign {
    let tmp = tempfile::tempdir().unwrap();
    let (state, study) = (tmp.path().join("state"), tmp.path().join("study"));
    let dir = state.join("campaigns").join(ID);
    std::fs::create_dir_all(dir.join("rows/01-a/points/B-1")).unwrap();
    std::fs::create_dir_all(&study).unwrap();
    let fixtures = concat!(env!("CARGO_MANIFEST_DIR"), "/images/fixtures.yaml");
    std::fs::copy(fixtures, study.join("images.yaml")).unwrap();
    std::fs::write(study.join("c.yaml"), FILE).unwrap();
    std::fs::write(dir.join("report.md"), "# res\n").unwrap();

    let file = parse("c.yaml", FILE).unwrap();
    let images = hex::encode(Sha256::digest(
        std::fs::read(study.join("images.yaml")).unwrap(),
    ));
    let row = |i: usize, state: serde_json::Value| {
        serde_json::json!({
            "index": i + 1, "name": file.rows[i].name, "topology": "single", "stack": "res-single",
            "inputs": row_inputs(&file.rows[i]), "state": state, "estimate_s": 60.0,
        })
    };
    let mut done = row(0, serde_json::json!({"state": "done"}));
    done["dir"] = "rows/01-a".into();
    done["sweep"] = "C-res-r01".into();
    done["took_s"] = 61.5.into();
    done["lines"] = serde_json::json!([{
        "row": "a", "scenario": "idle", "users": 20, "instances": 1, "duration_s": 31.0,
        "success_pct": 100.0, "http_errors_pct": 0.0, "sut_cpu_pct": 3.5, "redis_cpu_pct": null,
        "result": "pass", "bench": "rows/01-a/points/B-1",
    }]);
    let r: CampaignResults = serde_json::from_value(serde_json::json!({
        "schema": SCHEMA, "run_id": ID, "state": "interrupted", "exectl_version": "0.1.0",
        "name": "res", "file": "c.yaml", "file_path": study.join("c.yaml"), "file_sha256": "-",
        "target": "local", "started_unix_s": 1_000_000_000u64, "duration_s": 61.5,
        "estimate_s": 120.0, "stopped": "SIGINT received",
        "rows": [done, row(1, serde_json::json!({"state": "pending"}))],
        "inputs": file_inputs(&file, Some(&images)),
    }))
    .unwrap();
    std::fs::write(dir.join("results.json"), r.to_json().unwrap()).unwrap();
    Campaign {
        _tmp: tmp,
        state,
        study,
        dir,
    }
}

/// The campaign as exectl wrote it passes every check: `--plan` says its rows, and the resume goes
/// on to the connection (exit 3 here), having written nothing before it.
#[test]
fn a_campaign_as_written_is_resumed() {
    let c = recorded();
    let (code, err) = c.resume(&["--plan"]);
    assert_eq!(code, Some(0), "{err}");
    let (code, err) = c.resume(&[]);
    assert_eq!(code, Some(3), "past the checks, to the connection: {err}");
}

/// A figure typed into results.json (row 1's 100 % served as 42 %) is refused, naming the file and
/// the row's record, exit 2: it would be resumed and reported as measured.
#[test]
fn an_edited_figure_is_refused() {
    let c = recorded();
    let text = std::fs::read_to_string(c.results()).unwrap();
    let edited = text.replacen("\"success_pct\": 100.0", "\"success_pct\": 42.0", 1);
    assert_ne!(edited, text);
    std::fs::write(c.results(), edited).unwrap();
    for extra in [&["--plan"][..], &[]] {
        let (code, err) = c.resume(extra);
        assert_eq!(code, Some(2), "{err}");
        assert!(
            err.contains(&format!(
                "{} was changed after the campaign wrote it: rows.1 differs",
                c.results().display()
            )) && err.contains("put the file back as the campaign wrote it"),
            "{err}"
        );
    }
}

/// A folder the results cite gone (row 1's bench, then row 1's own) is refused, naming it and the
/// row citing it, exit 2: the report would link evidence that is not there.
#[test]
fn a_cited_folder_gone_is_refused() {
    let c = recorded();
    for gone in ["rows/01-a/points/B-1", "rows/01-a"] {
        std::fs::remove_dir_all(c.dir.join(gone)).unwrap();
        let (code, err) = c.resume(&["--plan"]);
        assert_eq!(code, Some(2), "{err}");
        assert!(
            err.contains(&format!(
                "{} is gone: row 1 (a) cites it",
                c.dir.join(gone).display()
            )),
            "{gone}: {err}"
        );
    }
}

/// The campaign's inputs changed since it began are refused naming the key, exit 2: the images
/// file's content (another app tag, its path the same), the file's bench.hold (under every row,
/// said once, not as each row's change), a row's own levels.
#[test]
fn an_input_changed_is_refused_naming_its_key() {
    let c = recorded();
    let images = c.study.join("images.yaml");
    let was = std::fs::read_to_string(&images).unwrap();
    let tag = "app: exectl-fixture/standin:latest";
    assert!(was.contains(tag));
    std::fs::write(&images, was.replace(tag, "app: exectl-fixture/standin:v2")).unwrap();
    let (code, err) = c.resume(&["--plan"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("changed since the campaign began")
            && err.contains(
                "the content of the images file c.yaml names changed: every row starts from it"
            ),
        "{err}"
    );
    std::fs::write(&images, was).unwrap();

    let file = c.study.join("c.yaml");
    for (from, to, says) in [
        (
            "hold: 20s",
            "hold: 30s",
            "bench.hold of c.yaml changed (20s → 30s): every row starts from it",
        ),
        (
            "levels: [40]",
            "levels: [50]",
            "row 2 (b): levels changed (40 → 50)",
        ),
    ] {
        std::fs::write(&file, FILE.replace(from, to)).unwrap();
        let (code, err) = c.resume(&["--plan"]);
        assert_eq!(code, Some(2), "{err}");
        assert!(err.contains(says) && !err.contains("row 1"), "{to}: {err}");
    }
}

/// A campaign whose run another process holds (its lock taken, as a running campaign or resume
/// holds it; its results.json saying running since long before this process began, as a resume's
/// does) is refused, exit 4, naming the holder and since when, its files untouched; once let go,
/// it is resumed.
#[test]
fn a_running_campaign_holds_its_run() {
    let c = recorded();
    let mut r: CampaignResults =
        serde_json::from_str(&std::fs::read_to_string(c.results()).unwrap()).unwrap();
    r.state = exectl_core::bench::RunState::Running;
    r.pid = Some(std::process::id());
    std::fs::write(c.results(), r.to_json().unwrap()).unwrap();
    let holder = Holder::me("exectl campaign C-res");
    let lock = c.dir.join("exectl.lock");
    std::fs::write(&lock, serde_json::to_string(&holder).unwrap()).unwrap();
    let held = std::fs::File::open(&lock).unwrap();
    held.lock().unwrap();
    for extra in [&[][..], &["--plan"]] {
        let (code, err) = c.resume(extra);
        assert_eq!(code, Some(4), "{err}");
        assert!(
            err.contains(&format!(
                "campaign C-res is running: exectl campaign C-res (pid {} on",
                holder.pid
            )) && err.contains(&format!("since {}", holder.since)),
            "{err}"
        );
    }
    drop(held);
    let (code, err) = c.resume(&["--plan"]);
    assert_eq!(code, Some(0), "{err}");
}
