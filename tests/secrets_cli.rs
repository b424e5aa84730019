//! A credential given as a plain setting of a campaign (`set:`, a row's `vary`) or of a sweep (`--set`,
//! `--vary`, its sweep file) is refused before anything runs — exit 2, the value said nowhere, no file
//! written — and a campaign's `secrets:` take their values from exectl's environment; a campaign
//! file's bench switches take booleans, and a byte-order mark is no fault. No engine: DOCKER_HOST
//! points at a socket that does not exist, so a campaign that got past its checks would exit 3.

use std::path::{Path, PathBuf};
use std::process::Output;

const SECRET: &str = "hunter2-secrets-cli-Xk7";

struct Run {
    _tmp: tempfile::TempDir,
    dir: PathBuf,
    state: PathBuf,
    out: PathBuf,
}

fn run() -> Run {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_path_buf();
    Run {
        state: dir.join("state"),
        out: dir.join("out"),
        dir,
        _tmp: tmp,
    }
}

impl Run {
    /// `exectl ARGS` with the state folder and environment of this run (`env`: variables set).
    fn exectl(&self, args: &[&str], env: &[(&str, &str)]) -> Output {
        let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_exectl"));
        c.args(args)
            .current_dir(&self.dir)
            .env("EXECTL_STATE_DIR", &self.state)
            .env("DOCKER_HOST", "unix:///nonexistent/exectl-secrets-cli.sock")
            .env_remove("EXECTL_TARGET")
            .env("RUST_BACKTRACE", "0");
        for (k, v) in env {
            c.env(k, v);
        }
        c.output().unwrap()
    }

    fn file(&self, name: &str, body: &str) -> String {
        let path = self.dir.join(name);
        std::fs::write(&path, body).unwrap();
        path.display().to_string()
    }

    /// `exectl campaign FILE [--plan] [--json] --out OUT`, each way, every one refused (exit 2) with
    /// `says` on stderr, the secret in no output and no file written.
    fn campaign_refused(&self, body: &str, says: &str) {
        let file = self.file("c.yaml", body);
        let out = self.out.display().to_string();
        for extra in [&["--plan"][..], &["--plan", "--json"], &[], &["--json"]] {
            let mut args = vec!["campaign", file.as_str(), "--out", out.as_str()];
            args.extend(extra);
            let o = self.exectl(&args, &[]);
            let shown = said(&o);
            assert_eq!(o.status.code(), Some(2), "{body}\n{args:?}: {shown}");
            assert!(shown.contains(says), "{body}\n{args:?}: {shown}");
            assert!(!shown.contains(SECRET), "the secret said: {shown}");
            self.nothing_written();
        }
    }

    /// No --out folder, and nothing under the state folder (a campaign's or sweep's folder, a record)
    /// holds the secret.
    fn nothing_written(&self) {
        assert!(!self.out.exists(), "{} was made", self.out.display());
        for f in files(&self.state) {
            let text = String::from_utf8_lossy(&std::fs::read(&f).unwrap()).into_owned();
            assert!(!text.contains(SECRET), "{} holds the secret", f.display());
            assert!(
                !f.starts_with(self.state.join("campaigns"))
                    && !f.starts_with(self.state.join("sweeps")),
                "{} was written",
                f.display()
            );
        }
    }
}

/// stdout and stderr, together.
fn said(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Every file under `dir` (none: no files).
fn files(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .flatten()
        .flat_map(|e| match e.path().is_dir() {
            true => files(&e.path()),
            false => vec![e.path()],
        })
        .collect()
}

const ROW: &str = "{name: a, topology: single, levels: [10]";

#[test]
fn a_campaign_refuses_a_credential_in_set_or_vary_saying_it_nowhere() {
    let r = run();
    for (body, says) in [
        (
            format!("name: c\nrows: [{ROW}, vary: {{env.SMTP_PASSWORD: [{SECRET}]}}}}]\n"),
            "env.SMTP_PASSWORD=<redacted>",
        ),
        (
            format!(
                "name: c\nrows: [{ROW}, vary: {{env.MAILER_URL: ['smtp://u:{SECRET}@h']}}}}]\n"
            ),
            "a URL with a password",
        ),
        (
            format!("name: c\nset: [SMTP_PASS={SECRET}]\nrows: [{ROW}}}]\n"),
            "secrets: [SMTP_PASS]",
        ),
        (
            format!("name: c\nset: [API_KEY={SECRET}]\nrows: [{ROW}}}]\n"),
            "secrets: [API_KEY]",
        ),
        (
            format!("name: c\nrows: [{ROW}, set: ['MAILER_DSN=smtp://u:{SECRET}@h']}}]\n"),
            "secrets: [MAILER_DSN]",
        ),
    ] {
        r.campaign_refused(&body, says);
    }
}

/// `secrets:` names a variable whose value exectl reads from its environment: missing, refused naming
/// it; given, the campaign plans, and the value is said nowhere and written nowhere but the stack's
/// .env (no stack here: the run stops at the unreachable engine, exit 3).
#[test]
fn a_campaigns_secrets_come_from_the_environment_and_go_nowhere_else() {
    let r = run();
    let file = r.file(
        "c.yaml",
        &format!("name: c\nsecrets: [SMTP_PASSWORD]\nrows: [{ROW}}}, {{name: b, topology: single, levels: [10], secrets: [API_TOKEN]}}]\n"),
    );
    let out = r.out.display().to_string();
    let o = r.exectl(&["campaign", &file, "--plan"], &[("SMTP_PASSWORD", SECRET)]);
    assert_eq!(o.status.code(), Some(2), "{}", said(&o));
    assert!(
        said(&o).contains("API_TOKEN is not set in exectl's environment"),
        "{}",
        said(&o)
    );
    let env = [("SMTP_PASSWORD", SECRET), ("API_TOKEN", SECRET)];
    for args in [
        &["campaign", &file, "--plan"][..],
        &["campaign", &file, "--plan", "--json"],
    ] {
        let o = r.exectl(args, &env);
        assert_eq!(o.status.code(), Some(0), "{args:?}: {}", said(&o));
        assert!(!said(&o).contains(SECRET), "{}", said(&o));
    }
    let o = r.exectl(&["campaign", &file, "--out", &out, "--json"], &env);
    assert_eq!(o.status.code(), Some(3), "{}", said(&o));
    assert!(!said(&o).contains(SECRET), "{}", said(&o));
    for f in files(&r.state).into_iter().chain(files(&r.out)) {
        let text = String::from_utf8_lossy(&std::fs::read(&f).unwrap()).into_owned();
        assert!(!text.contains(SECRET), "{} holds the secret", f.display());
    }
}

/// A bench switch takes a boolean: `tokens: yes` once benched with logins.
#[test]
fn a_campaign_refuses_a_switch_that_is_no_boolean() {
    let r = run();
    for bench in [
        "tokens: yes",
        "relogin: 1",
        "browser_probe: 'true'",
        "continue_after_fail: on",
    ] {
        let key = bench.split(':').next().unwrap();
        let body = format!("name: c\nbench: {{{bench}}}\nrows: [{ROW}}}]\n");
        let file = r.file("c.yaml", &body);
        let o = r.exectl(&["campaign", &file, "--plan"], &[]);
        assert_eq!(o.status.code(), Some(2), "{bench}: {}", said(&o));
        assert!(
            said(&o).contains(&format!("bench.{key}")),
            "{bench}: {}",
            said(&o)
        );
    }
}

/// A file an editor began with a byte-order mark: the campaign file, and a sweep file.
#[test]
fn a_byte_order_mark_is_accepted() {
    let r = run();
    let file = r.file("c.yaml", &format!("\u{feff}name: c\nrows: [{ROW}}}]\n"));
    let o = r.exectl(&["campaign", &file, "--plan"], &[]);
    assert_eq!(o.status.code(), Some(0), "{}", said(&o));
    let sweep = r.file(
        "s.yaml",
        "\u{feff}vary: {nginx: [baseline-default, tuned-ip-hash]}\nlevels: [10]\n",
    );
    let o = r.exectl(&["sweep", "ha", "--sweep-file", &sweep], &[]);
    assert_eq!(
        o.status.code(),
        Some(3),
        "past every check, at the engine: {}",
        said(&o)
    );
}

/// A sweep refuses a credential in `--set`, `--vary` and its sweep file, pointing to --set-secret.
#[test]
fn a_sweep_refuses_a_credential_in_set_or_vary_saying_it_nowhere() {
    let r = run();
    let sweep = r.file(
        "s.yaml",
        &format!("vary: {{env.SMTP_PASSWORD: [{SECRET}, b]}}\nlevels: [10]\n"),
    );
    let out = r.out.display().to_string();
    let vary = format!("env.API_KEY={SECRET},b");
    let set = format!("MAILER_DSN=smtp://u:{SECRET}@h");
    let nginx = "nginx=baseline-default,tuned-ip-hash";
    for args in [
        vec!["sweep", "ha", "--vary", &vary, "--levels", "10"],
        vec!["sweep", "ha", "--sweep-file", &sweep],
        vec![
            "sweep", "ha", "--vary", nginx, "--levels", "10", "--set", &set,
        ],
    ] {
        for json in [false, true] {
            let mut args = args.clone();
            args.extend(["--out", &out]);
            if json {
                args.push("--json");
            }
            let o = r.exectl(&args, &[]);
            assert_eq!(o.status.code(), Some(2), "{args:?}: {}", said(&o));
            assert!(said(&o).contains("looks like a credential"), "{}", said(&o));
            assert!(said(&o).contains("--set-secret"), "{}", said(&o));
            assert!(!said(&o).contains(SECRET), "the secret said: {}", said(&o));
            r.nothing_written();
        }
    }
}
