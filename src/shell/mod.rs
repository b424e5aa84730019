//! The host shell: what exectl does on the target's host besides the Docker API — run a POSIX shell
//! script (or keep one running that answers requests), put a file. One trait with two implementations
//! (this machine, an SSH link), so `Target` never matches on local versus remote to do it. The scripts
//! themselves are data (`exectl_core::scripts::Script`), built with their output parsers in the core's
//! `scripts` and, for those the engine module still reads from here, in `scripts`; `atomic` is the one
//! local atomic write, `user_file` the one read of a file a user names.

pub mod atomic;
pub mod scripts;
pub mod user_file;

use anyhow::{Context, Result};
use exectl_core::scripts::Script;
use std::path::Path;

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
    /// Start `script` and keep it running: a conversation of request lines and answers (`ShellLoop`).
    /// For work done every second (bench's sampler), where a session and a process per run would cost
    /// the host more than the work itself.
    fn open_loop(&self, script: &Script) -> Result<Box<dyn ShellLoop>>;
}

/// Ends every answer of a looping script: the script prints it on a line of its own after each request.
pub const END: &str = "@@exectl-end";

/// A script kept running on a host, reading request lines on its stdin and answering each on stdout up to
/// an `END` line. Dropping it closes the script's stdin and waits for it to end.
pub trait ShellLoop: Send {
    /// Send one request line (no newline in it) and read its answer, the `END` line left out.
    fn ask(&mut self, line: &str) -> Result<String>;
}

/// Read from `r` into `buf` until it holds a whole answer (up to an `END` line); the answer is taken
/// out of `buf`, what follows stays. An end of stream first is an error.
/// Process `pid` of this machine exists.
pub fn alive(pid: u32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
}

pub fn read_answer(r: &mut dyn std::io::Read, buf: &mut Vec<u8>) -> Result<String> {
    let end = format!("{END}\n");
    let mut chunk = [0u8; 8192];
    loop {
        let at = if buf.starts_with(end.as_bytes()) {
            Some(0)
        } else {
            find(buf, format!("\n{end}").as_bytes()).map(|i| i + 1)
        };
        if let Some(i) = at {
            let answer = String::from_utf8_lossy(&buf[..i]).into_owned();
            buf.drain(..i + end.len());
            return Ok(answer);
        }
        match r.read(&mut chunk) {
            Ok(0) => anyhow::bail!("the looping host script ended"),
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e).context("reading the looping host script's answer"),
        }
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// A request line: the words a looping script reads with `read -r`; none may hold a newline.
pub(crate) fn request(line: &str) -> Result<Vec<u8>> {
    anyhow::ensure!(!line.contains('\n'), "a request line holds a newline");
    Ok(format!("{line}\n").into_bytes())
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

    fn open_loop(&self, script: &Script) -> Result<Box<dyn ShellLoop>> {
        use std::process::{Command, Stdio};
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(&script.body)
            .arg("sh")
            .args(&script.args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .context("running a shell on the target host")?;
        let stdin = child.stdin.take().expect("piped");
        let stdout = child.stdout.take().expect("piped");
        Ok(Box::new(LocalLoop {
            child,
            stdin: Some(stdin),
            stdout,
            buf: Vec::new(),
        }))
    }
}

struct LocalLoop {
    child: std::process::Child,
    stdin: Option<std::process::ChildStdin>,
    stdout: std::process::ChildStdout,
    buf: Vec<u8>,
}

impl ShellLoop for LocalLoop {
    fn ask(&mut self, line: &str) -> Result<String> {
        use std::io::Write;
        let w = self.stdin.as_mut().expect("open until dropped");
        w.write_all(&request(line)?)
            .context("writing to the looping host script")?;
        w.flush()?;
        read_answer(&mut self.stdout, &mut self.buf)
    }
}

impl Drop for LocalLoop {
    /// Its stdin closed, the script's `read` ends the loop; waiting reaps it, so its CPU time is counted
    /// in this process's children's (what bench's sampler reports locally).
    fn drop(&mut self) {
        self.stdin.take();
        let _ = self.child.wait();
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

    /// The command line is what a remote sshd hands to the login shell: run it through one here and
    /// the script must see exactly its arguments.
    #[test]
    fn the_command_line_survives_a_real_shell() {
        let args = ["a b", "it's", "$HOME", "\"q\"", "", "x\ny"];
        let s = Script::new(r#"for a in "$@"; do printf '[%s]' "$a"; done"#).args(args);
        let out = Local.run(&Script::new(s.command_line()), None).unwrap();
        assert_eq!(out.stdout, "[a b][it's][$HOME][\"q\"][][x\ny]");
    }

    /// One process answers every request, each answer cut at its END line; a script that ends is an error.
    #[test]
    fn a_looping_script_answers_each_request_in_one_process() {
        let body = format!(
            "while IFS= read -r l; do echo \"$$ $1 $l\"; echo {END}; [ \"$l\" = quit ] && exit 0; done"
        );
        let mut lp = Local.open_loop(&Script::new(body).arg("x")).unwrap();
        let a = lp.ask("one").unwrap();
        let b = lp.ask("two words").unwrap();
        let pid = a.split_whitespace().next().unwrap().to_string();
        assert_eq!(a, format!("{pid} x one\n"));
        assert_eq!(b, format!("{pid} x two words\n"), "the same process");
        assert!(lp.ask("a\nb").is_err());
        assert_eq!(lp.ask("quit").unwrap(), format!("{pid} x quit\n"));
        let e = lp.ask("again").unwrap_err();
        assert!(
            format!("{e:#}").contains("ended") || format!("{e:#}").contains("writing"),
            "{e:#}"
        );
    }

    #[test]
    fn an_answer_is_cut_at_its_end_line_and_the_rest_kept() {
        let mut input: &[u8] = b"a\n@@exectl-end\n@@exectl-end\nb @@exectl-end\n@@exectl-end\n";
        let mut buf = Vec::new();
        assert_eq!(read_answer(&mut input, &mut buf).unwrap(), "a\n");
        assert_eq!(read_answer(&mut input, &mut buf).unwrap(), "");
        assert_eq!(
            read_answer(&mut input, &mut buf).unwrap(),
            "b @@exectl-end\n"
        );
        assert!(read_answer(&mut input, &mut buf).is_err());
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
