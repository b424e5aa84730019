//! The host shell: what exectl does on the target's host besides the Docker API — run a POSIX shell
//! script, put a file. One trait with two implementations (this machine, an SSH link), so `Target`
//! never matches on local versus remote to do it. The scripts themselves are data, built with their
//! output parsers in `scripts`; `atomic` is the one local atomic write.

pub mod atomic;
pub mod scripts;

use anyhow::{Context, Result};
use std::path::Path;

/// A shell script and its arguments ($1, $2, ...): what a host shell runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Script {
    pub body: String,
    pub args: Vec<String>,
}

impl Script {
    pub fn new(body: impl Into<String>) -> Script {
        Script {
            body: body.into(),
            args: Vec::new(),
        }
    }

    pub fn arg(mut self, a: impl Into<String>) -> Script {
        self.args.push(a.into());
        self
    }

    pub fn args<I: IntoIterator<Item = S>, S: Into<String>>(mut self, args: I) -> Script {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// The one command line for a remote shell: `sh -c 'BODY' sh 'ARG1' ...` ($0 is `sh`).
    pub fn command_line(&self) -> String {
        let mut cmd = format!("sh -c {} sh", quote(&self.body));
        for a in &self.args {
            cmd.push(' ');
            cmd.push_str(&quote(a));
        }
        cmd
    }
}

/// `'…'` with embedded quotes closed and escaped: one word for a POSIX shell.
pub fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// What a host script printed and how it ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Output {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

/// A machine exectl runs scripts on and puts files on. Blocking: async callers go through `Target`,
/// which runs these on the blocking pool.
pub trait HostShell: Send + Sync {
    /// Run `script`, feeding `stdin`: its exit code and output (a failing script is not an error here).
    fn run(&self, script: &Script, stdin: Option<&[u8]>) -> Result<Output>;
    /// Replace `path` with `bytes` at `mode` (folders made), atomically: a reader never sees half a file
    /// and a secret is never readable by others on the way.
    fn put_file(&self, path: &Path, bytes: &[u8], mode: u32) -> Result<()>;
    /// "the local engine" or the SSH URL, for messages.
    fn describe(&self) -> String;
}

/// This machine's shell.
pub struct Local;

impl HostShell for Local {
    fn run(&self, script: &Script, stdin: Option<&[u8]>) -> Result<Output> {
        use std::io::Write;
        use std::process::{Command, Stdio};
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(&script.body)
            .arg("sh")
            .args(&script.args)
            .stdin(if stdin.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .context("running a shell on the target host")?;
        // stdin is fed from a thread while the output is read: a script that prints much before it
        // reads could otherwise block both ends.
        let writer = child.stdin.take();
        let out = std::thread::scope(|s| {
            let fed = s.spawn(move || match (stdin, writer) {
                // A script that exits without reading all of it is judged by its exit code.
                (Some(bytes), Some(mut w)) => match w.write_all(bytes) {
                    Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
                    r => r,
                },
                _ => Ok(()),
            });
            let out = child.wait_with_output();
            (out, fed.join())
        });
        let out = match out {
            (Ok(out), Ok(Ok(()))) => out,
            (Err(e), _) | (_, Ok(Err(e))) => {
                return Err(e).context("running a shell on the target host")
            }
            (_, Err(_)) => anyhow::bail!("the thread feeding the host shell panicked"),
        };
        Ok(Output {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        })
    }

    fn put_file(&self, path: &Path, bytes: &[u8], mode: u32) -> Result<()> {
        atomic::write(path, bytes, mode)
    }

    fn describe(&self) -> String {
        "the local engine".to_string()
    }
}

/// Run `script` and return its stdout; an error naming the host when it fails.
pub fn stdout_of(shell: &dyn HostShell, script: &Script) -> Result<String> {
    let out = shell.run(script, None)?;
    if out.code != 0 {
        anyhow::bail!(
            "host script failed on {} (exit {}): {}",
            shell.describe(),
            out.code,
            out.stderr.trim()
        );
    }
    Ok(out.stdout)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_line_quotes_body_and_every_argument() {
        let s = Script::new(r#"rm -f -- "$1""#).arg("/opt/it's here");
        assert_eq!(
            s.command_line(),
            r#"sh -c 'rm -f -- "$1"' sh '/opt/it'\''s here'"#
        );
        assert_eq!(Script::new("true").command_line(), "sh -c 'true' sh");
        assert_eq!(quote(""), "''");
    }

    /// The command line is what a remote sshd hands to the login shell: run it through one here and
    /// the script must see exactly its arguments.
    #[test]
    fn the_command_line_survives_a_real_shell() {
        let args = ["a b", "it's", "$HOME", "\"q\"", "", "x\ny"];
        let s = Script::new(r#"for a in "$@"; do printf '[%s]' "$a"; done"#).args(args);
        let out = Local.run(&Script::new(s.command_line()), None).unwrap();
        assert_eq!(out.stdout, "[a b][it's][$HOME][\"q\"][][x\ny]");
    }

    #[test]
    fn the_local_shell_runs_with_stdin_and_reports_failure() {
        let out = Local
            .run(&Script::new("cat; echo err >&2; exit 3"), Some(b"in"))
            .unwrap();
        assert_eq!(
            out,
            Output {
                code: 3,
                stdout: "in".into(),
                stderr: "err\n".into()
            }
        );
        let big = vec![b'x'; 1 << 20];
        let out = Local.run(&Script::new("exit 5"), Some(&big)).unwrap();
        assert_eq!(out.code, 5, "an unread stdin is not an error");
        let out = Local.run(&Script::new("wc -c"), Some(&big)).unwrap();
        assert_eq!(out.stdout.trim(), "1048576");
        let e = stdout_of(&Local, &Script::new("echo no >&2; exit 4")).unwrap_err();
        assert_eq!(
            e.to_string(),
            "host script failed on the local engine (exit 4): no"
        );
    }
}
