//! Input that used to pass every check and fail (or do harm) once a campaign, sweep or bench ran
//! (issue #50, items 1, 12, 13 and 14): refused before anything runs, exit 2, naming the field, with
//! nothing written. No engine: DOCKER_HOST points at a socket that does not exist, so a command that
//! gets past its checks exits 3 (unreachable), and one refused as bad input exits 2 before connecting.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

struct Dirs {
    tmp: tempfile::TempDir,
    state: PathBuf,
}

fn dirs() -> Dirs {
    let tmp = tempfile::tempdir().unwrap();
    let state = tmp.path().join("state");
    Dirs { tmp, state }
}

impl Dirs {
    fn path(&self) -> &Path {
        self.tmp.path()
    }

    /// A campaign file of these rows (YAML flow maps) and top-level lines, named `c.yaml`.
    fn campaign(&self, top: &str, rows: &[&str]) -> String {
        let rows: String = rows.iter().map(|r| format!("  - {r}\n")).collect();
        let file = self.path().join("c.yaml");
        std::fs::write(&file, format!("{top}\nrows:\n{rows}")).unwrap();
        file.to_str().unwrap().to_string()
    }

    /// `exectl ARGS` in the temporary folder, its address space capped (a file read without end fails
    /// there, not on the machine) and killed past 30 s (a read that waits for ever fails the test
    /// rather than hang the suite): its exit code and stderr.
    fn run(&self, args: &[&str]) -> (Option<i32>, String) {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_exectl"));
        cmd.args(args)
            .current_dir(self.path())
            .env("EXECTL_STATE_DIR", &self.state)
            .env("DOCKER_HOST", "unix:///nonexistent/exectl-refused.sock")
            .env_remove("EXECTL_TARGET")
            .env("RUST_BACKTRACE", "0")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        // SAFETY: setrlimit is async-signal-safe; nothing else runs between fork and exec.
        unsafe {
            std::os::unix::process::CommandExt::pre_exec(&mut cmd, || {
                let cap = libc::rlimit {
                    rlim_cur: 3 << 30,
                    rlim_max: 3 << 30,
                };
                libc::setrlimit(libc::RLIMIT_AS, &cap);
                Ok(())
            });
        }
        let mut child = cmd.spawn().unwrap();
        let began = Instant::now();
        while child.try_wait().unwrap().is_none() {
            if began.elapsed() > Duration::from_secs(30) {
                child.kill().unwrap();
                let _ = child.wait();
                panic!("exectl {args:?} still running after 30 s: it waits on a file");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let o: Output = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        (o.status.code(), err)
    }

    /// `exectl ARGS` refused: exit 2, stderr holding each of `says`; nothing recorded.
    fn refused(&self, args: &[&str], says: &[&str]) -> String {
        let (code, err) = self.run(args);
        assert_eq!(code, Some(2), "{args:?}: {err}");
        for s in says {
            assert!(err.contains(s), "{args:?}: wanted {s:?} in:\n{err}");
        }
        for kind in ["campaigns", "sweeps", "benches"] {
            let dir = self.state.join(kind);
            let n = std::fs::read_dir(&dir).map_or(0, |e| e.count());
            assert_eq!(n, 0, "{args:?}: something recorded in {}", dir.display());
        }
        err
    }
}

const ROW: &str = "{name: one, topology: single, spec: {db: sqlite}, levels: [10]}";

/// Item 1: `--out DIR` into a folder holding the user's own files (a report.md) replaced them. Refused,
/// for a campaign, a sweep and a bench alike, the file left as it was; an empty folder (or one holding
/// only empty folders) is taken.
#[test]
fn an_out_folder_holding_other_files_is_refused_by_campaign_sweep_and_bench() {
    let d = dirs();
    let file = d.campaign("name: mine", &[ROW]);
    let out = d.path().join("study");
    std::fs::create_dir_all(&out).unwrap();
    std::fs::write(out.join("report.md"), "my notes\n").unwrap();
    let o = out.to_str().unwrap();
    let says = ["invalid --out", "is not empty: it holds report.md"];
    d.refused(&["campaign", &file, "--out", o], &says);
    d.refused(
        &[
            "sweep",
            "ha",
            "--vary",
            "instances=1,2",
            "--levels",
            "10",
            "--out",
            o,
        ],
        &says,
    );
    d.refused(&["bench", "--levels", "10", "--out", o], &says);
    assert_eq!(
        std::fs::read_to_string(out.join("report.md")).unwrap(),
        "my notes\n"
    );
    // Only empty folders in it: nothing of the user's to lose; the campaign gets as far as the engine.
    std::fs::remove_file(out.join("report.md")).unwrap();
    std::fs::create_dir(out.join("rows")).unwrap();
    let (code, err) = d.run(&["campaign", &file, "--out", o]);
    assert_eq!(code, Some(3), "{err}");
}

/// Item 12: a fault naming a service the row's (or a point's) stack does not run passed `--plan` and
/// failed after a deploy and a seed. Refused with the services the stack runs.
#[test]
fn a_fault_on_a_service_the_stack_does_not_run_is_refused_by_plan_and_sweep() {
    let d = dirs();
    let file = d.campaign(
        "name: faults",
        &[
            "{name: ha row, topology: ha, levels: [10], bench: {fault: 'restart:nginx@2s'}}",
            "{name: single row, topology: single, spec: {db: sqlite}, levels: [10], bench: {fault: 'restart:app-1@2s'}}",
        ],
    );
    d.refused(
        &["campaign", &file, "--plan"],
        &[
            "invalid rows[1] (single row): --fault \"restart:app-1@2s\"",
            "the stack faults-single runs no service app-1 (it runs app, traefik)",
            "e.g. --fault restart:app@2s",
        ],
    );
    let sweep = |fault: &str| -> Vec<String> {
        [
            "sweep",
            "ha",
            "--stack",
            "sw",
            "--vary",
            "instances=1,2",
            "--levels",
            "10",
            "--fault",
            fault,
        ]
        .map(String::from)
        .into()
    };
    let args = sweep("restart:nosuchservice@3s");
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    d.refused(
        &args,
        &[
            "invalid --fault",
            "the stack sw runs no service nosuchservice (it runs app-1, ",
        ],
    );
    // The first point runs one instance: its stack has no app-2.
    let args = sweep("restart:app-2@1s");
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    d.refused(&args, &["runs no service app-2 (it runs app-1, nginx"]);
    // A service every point runs: past the checks, to the engine.
    let args = sweep("restart:app-1@1s");
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    assert_eq!(d.run(&args).0, Some(3));
}

/// Item 13: a long campaign name made a run id that failed at run as "File name too long"; a
/// 27-character --stack was refused as "use 1-32 characters" because the rows append "-single".
#[test]
fn a_campaign_name_or_stack_too_long_for_what_is_made_of_it_is_refused_with_its_limit() {
    let d = dirs();
    let long = "n".repeat(300);
    let file = d.campaign(&format!("name: {long}\nstack: short"), &[ROW]);
    d.refused(
        &["campaign", &file, "--plan"],
        &[
            "invalid name \"nnnn",
            "a run id is at most 100",
            "shorten it to at most 87 characters, or give --run-id",
        ],
    );
    let ha_row = "{name: two, topology: ha, levels: [10]}";
    let file = d.campaign("name: short", &[ROW, ha_row]);
    let stack = "s".repeat(27);
    d.refused(
        &["campaign", &file, "--plan", "--stack", &stack],
        &[
            "invalid --stack",
            "followed by \"-single\"",
            "use 1-25 characters",
        ],
    );
    let (code, err) = d.run(&["campaign", &file, "--plan", "--stack", &"s".repeat(25)]);
    assert_eq!(code, Some(0), "{err}");
    // Only ha rows: "-ha" leaves 29.
    let file = d.campaign(
        &format!("name: short\nstack: {}", "s".repeat(30)),
        &[ha_row],
    );
    d.refused(
        &["campaign", &file, "--plan"],
        &[
            "invalid stack",
            "followed by \"-ha\"",
            "use 1-29 characters",
        ],
    );
    // The stack defaults to the name: said, with the `stack:` key as the other way out.
    let file = d.campaign(&format!("name: {}", "n".repeat(26)), &[ROW]);
    d.refused(
        &["campaign", &file, "--plan"],
        &[
            "invalid name",
            "use 1-25 characters",
            "give the file a shorter `stack:`",
        ],
    );
}

/// Item 14: `campaign /dev/zero --plan` grew until the kernel killed it, and a FIFO hung for ever.
/// Every file a user names is read only when it is a regular file within its limit, else refused.
#[test]
fn devices_fifos_folders_and_oversized_files_are_refused_where_a_user_names_a_file() {
    let d = dirs();
    let fifo = d.path().join("fifo");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let folder = d.path().join("folder");
    std::fs::create_dir(&folder).unwrap();
    // A sparse file, 1 byte past the 1 MiB a file written by hand may be.
    let big = d.path().join("big.yaml");
    std::fs::File::create(&big)
        .unwrap()
        .set_len((1 << 20) + 1)
        .unwrap();
    let cases = [
        (
            "/dev/zero",
            "is a character device: exectl reads only regular files",
        ),
        (fifo.to_str().unwrap(), "is a FIFO (a named pipe)"),
        (folder.to_str().unwrap(), "is a folder"),
        (
            big.to_str().unwrap(),
            "is 1048577 bytes, more than a file written by hand may be (at most 1 MiB)",
        ),
    ];
    let sweep = |flag: &'static str, path: &str| -> Vec<String> {
        let mut v = vec!["sweep", "ha", "--vary", "instances=1,2", "--levels", "10"];
        v.extend([flag, path]);
        v.into_iter().map(String::from).collect()
    };
    for (path, says) in cases {
        d.refused(
            &["campaign", path, "--plan"],
            &[&format!("invalid FILE \"{path}\""), says],
        );
        for flag in ["--sweep-file", "--config", "--images"] {
            let args = sweep(flag, path);
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            d.refused(&args, &[&format!("invalid {flag} \"{path}\""), says]);
        }
    }
}
