//! A slice on another generator host (`--generators ssh://USER@HOST[:PORT]`): reached as every SSH
//! target is (`sut::ssh::connect`: the same keys, known_hosts and stages), this very binary put there by
//! hash (`~/.cache/exectl/exectl-HASH`, sent only when missing or different), the host's clock read
//! against this one's, and `exectl load-slice` run on an exec channel whose stdio carries the slice's
//! lines as a child's pipes do (`fan`).

use std::io::{ErrorKind, Read, Write};
use std::mem::ManuallyDrop;
use std::net::{IpAddr, TcpStream};
use std::os::unix::io::FromRawFd;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

use anyhow::{bail, Context, Result};
use sha2::{Digest, Sha256};
use ssh2::{Channel, Session};

use super::fan::Heard;
use super::FromSlice;
use crate::sut::ssh::{self, connect, ConnectOptions};

/// This binary, to be run on the generator hosts: hashed as a stream, read whole only when a host
/// needs a copy (a debug build is 200 MB: it would sit in the parent's memory all run).
pub struct Exe {
    file: std::path::PathBuf,
    pub sha256: String,
}

impl Exe {
    pub fn current() -> Result<Exe> {
        let file = std::env::current_exe().context("finding this exectl binary")?;
        let mut hash = Sha256::new();
        std::fs::File::open(&file)
            .and_then(|mut f| std::io::copy(&mut f, &mut hash))
            .with_context(|| format!("reading {}", file.display()))?;
        let sha256 = hex::encode(hash.finalize());
        Ok(Exe { file, sha256 })
    }

    fn bytes(&self) -> Result<Vec<u8>> {
        std::fs::read(&self.file).with_context(|| format!("reading {}", self.file.display()))
    }

    /// Where it goes on a generator host, relative to the login's home: one file per build.
    fn path(&self) -> String {
        format!(".cache/exectl/exectl-{}", &self.sha256[..16])
    }
}

/// A generator host, connected and ready to run a slice.
pub struct Host {
    pub url: String,
    sess: Session,
    /// This host's address as the generator host reached it: where a front door on loopback here
    /// answers it.
    pub here: IpAddr,
    /// Its clock minus this one's, in ms (read around one round trip, so within half of it).
    pub clock_offset_ms: f64,
    /// The binary had to be sent (missing there, or another build).
    pub copied: bool,
    exe: String,
}

/// Connect to `o`, check it runs this binary's OS and architecture, put the binary there if its hash
/// differs, and read its clock.
pub fn prepare(o: &ConnectOptions, exe: &Exe) -> Result<Host> {
    let url = o.url.to_string();
    let (sess, _, fd) = connect::open_session(o)
        .map_err(anyhow::Error::from)
        .with_context(|| format!("generator {url} (--generators)"))?;
    // The session owns the socket: read its local address without closing it.
    // SAFETY: fd is the session's open TCP socket, alive for this call; ManuallyDrop never closes it.
    let tcp = ManuallyDrop::new(unsafe { TcpStream::from_raw_fd(fd) });
    let here = tcp
        .local_addr()
        .context("the SSH connection's address")?
        .ip();
    let path = exe.path();
    let probe = ssh::run(
        &sess,
        &format!("uname -sm; sha256sum {path} 2>/dev/null | cut -c1-64"),
        None,
    )
    .with_context(|| format!("generator {url}: reading its system"))?;
    let mut lines = probe.stdout.lines();
    let system = lines.next().unwrap_or_default().trim().to_string();
    let ours = format!("{} {}", std::env::consts::OS, std::env::consts::ARCH);
    if !system.eq_ignore_ascii_case(&ours) {
        bail!("generator {url} runs {system:?}, this exectl is built for {ours:?}: a slice there would need another build; fix: drop it from --generators, or run an exectl built for it");
    }
    let copied = lines.next().map(str::trim) != Some(exe.sha256.as_str());
    if copied {
        ssh::upload::put(
            &sess,
            &url,
            Path::new(&path),
            &exe.bytes()?,
            0o755,
            &AtomicBool::new(false),
        )
        .with_context(|| format!("generator {url}: sending this exectl binary"))?;
    }
    let clock_offset_ms =
        clock_offset(&sess).with_context(|| format!("generator {url}: reading its clock"))?;
    Ok(Host {
        url,
        sess,
        here,
        clock_offset_ms,
        copied,
        exe: path,
    })
}

/// The host's clock minus this one's, in ms: NTP's way, over one open channel (a fresh exec's start-up
/// would make the round trip lopsided): of a few reads, the one with the shortest round trip, its
/// reading against the middle of that trip.
fn clock_offset(sess: &Session) -> Result<f64> {
    let mut ch = sess.channel_session()?;
    ch.exec("while read -r _; do date +%s%N; done")?;
    let mut best = (f64::INFINITY, 0.0);
    for _ in 0..5 {
        let before = super::unix_ms_f64();
        ch.write_all(b"\n")?;
        ch.flush()?;
        let mut line = Vec::new();
        let mut byte = [0u8; 1];
        while byte[0] != b'\n' {
            if ch.read(&mut byte)? == 0 {
                bail!("its shell ended: {:?}", String::from_utf8_lossy(&line));
            }
            line.push(byte[0]);
        }
        let after = super::unix_ms_f64();
        let text = String::from_utf8_lossy(&line);
        let there = text
            .trim()
            .parse::<f64>()
            .with_context(|| format!("`date +%s%N` said {:?}", text.trim()))?
            / 1e6;
        if after - before < best.0 {
            best = (after - before, there - (before + after) / 2.0);
        }
    }
    let _ = ch.send_eof();
    let _ = ch.wait_close();
    Ok((best.1 * 10.0).round() / 10.0)
}

/// A slice running on a generator host: its words go out through `to`, what it says comes back on
/// the fan's channel from the pump thread, which owns the session.
pub struct Remote {
    to: Option<mpsc::Sender<String>>,
    kill: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<String>>,
    ended: Option<String>,
}

impl Host {
    /// Start `exectl load-slice` there and send it its spec (one line).
    pub fn spawn(self, k: usize, spec: &str, tx: mpsc::Sender<super::fan::Said>) -> Result<Remote> {
        let mut ch = self
            .sess
            .channel_session()
            .with_context(|| format!("generator {}: opening a channel", self.url))?;
        ch.exec(&format!("exec ./{} load-slice", self.exe))
            .with_context(|| format!("generator {}: starting its slice", self.url))?;
        ch.write_all(spec.as_bytes())
            .and_then(|_| ch.write_all(b"\n"))
            .and_then(|_| ch.flush())
            .with_context(|| format!("generator {}: sending its slice's spec", self.url))?;
        let (to, words) = mpsc::channel();
        let kill = Arc::new(AtomicBool::new(false));
        let thread = {
            let kill = kill.clone();
            std::thread::spawn(move || pump(self.sess, ch, &self.url, k, words, tx, &kill))
        };
        Ok(Remote {
            to: Some(to),
            kill,
            thread: Some(thread),
            ended: None,
        })
    }
}

impl Remote {
    pub fn tell(&mut self, word: &str) {
        if let Some(to) = &self.to {
            if to.send(word.to_string()).is_err() {
                self.to = None;
            }
        }
    }

    /// No more words: its stdin ends (it stops its hold, as a child whose parent is gone).
    pub fn close(&mut self) {
        self.to = None;
    }

    /// Cut the link: the session closes, and sshd ends the slice's stdin.
    pub fn kill(&mut self) {
        self.kill.store(true, Ordering::Release);
    }

    /// How it ended (waits for the pump thread, which ends once the channel or the link does).
    pub fn ended(&mut self) -> String {
        if let Some(t) = self.thread.take() {
            self.ended = Some(
                t.join()
                    .unwrap_or_else(|_| "its pump thread panicked".into()),
            );
        }
        self.ended.clone().unwrap_or_default()
    }
}

/// Moves lines both ways on a non-blocking channel until it ends, the link breaks or `kill` is set;
/// the slice's stderr goes to this one's, prefixed. Says `None` on the fan's channel at the end and
/// returns how it ended.
fn pump(
    sess: Session,
    mut ch: Channel,
    url: &str,
    k: usize,
    words: mpsc::Receiver<String>,
    tx: mpsc::Sender<super::fan::Said>,
    kill: &AtomicBool,
) -> String {
    sess.set_blocking(false);
    let (mut out, mut err, mut pending) = (Vec::new(), Vec::new(), Vec::new());
    let mut eof_sent = false;
    let mut buf = vec![0u8; 64 * 1024];
    let why = loop {
        if kill.load(Ordering::Acquire) {
            break "cut by the run".to_string();
        }
        loop {
            match words.try_recv() {
                Ok(w) => {
                    pending.extend_from_slice(w.as_bytes());
                    pending.push(b'\n');
                }
                Err(mpsc::TryRecvError::Empty) => break,
                Err(mpsc::TryRecvError::Disconnected) => {
                    if pending.is_empty() && !eof_sent {
                        eof_sent = ch.send_eof().is_ok();
                    }
                    break;
                }
            }
        }
        if !pending.is_empty() {
            match ch.write(&pending) {
                Ok(n) => drop(pending.drain(..n)),
                Err(e) if e.kind() == ErrorKind::WouldBlock => {}
                Err(e) => break format!("writing to it: {e}"),
            }
        }
        let mut idle = true;
        match ch.read(&mut buf) {
            Ok(0) if ch.eof() => break "its channel ended".to_string(),
            Ok(n) => {
                idle &= n == 0;
                out.extend_from_slice(&buf[..n]);
                for line in take_lines(&mut out) {
                    let msg = serde_json::from_str::<FromSlice>(&line)
                        .map_err(|e| format!("unreadable line from slice {k} on {url}: {e}"));
                    if tx.send((k, Heard::Line(msg))).is_err() {
                        return "the run ended".into();
                    }
                }
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => {}
            Err(e) => break format!("the link broke: {e}"),
        }
        match ch.stderr().read(&mut buf) {
            Ok(n) if n > 0 => {
                idle = false;
                err.extend_from_slice(&buf[..n]);
                for line in take_lines(&mut err) {
                    if tx
                        .send((k, Heard::Stderr(format!("{url}: {line}"))))
                        .is_err()
                    {
                        return "the run ended".into();
                    }
                }
            }
            _ => {}
        }
        if idle {
            std::thread::sleep(Duration::from_millis(10));
        }
    };
    let why = match (why.as_str(), ch.exit_status()) {
        ("its channel ended", Ok(code)) => format!("its process ended (exit status {code})"),
        _ => why,
    };
    let _ = tx.send((k, Heard::Ended));
    // Dropping the session closes the link: sshd ends whatever still runs of the slice.
    drop(ch);
    drop(sess);
    why
}

/// The whole lines at the front of `buf`, taken out.
fn take_lines(buf: &mut Vec<u8>) -> Vec<String> {
    let Some(end) = buf.iter().rposition(|b| *b == b'\n') else {
        return Vec::new();
    };
    let text: Vec<u8> = buf.drain(..=end).collect();
    String::from_utf8_lossy(&text)
        .lines()
        .map(str::to_string)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_taken_whole() {
        let mut b = b"{\"a\":1}\n{\"b\"".to_vec();
        assert_eq!(take_lines(&mut b), vec!["{\"a\":1}".to_string()]);
        assert_eq!(b, b"{\"b\"");
        b.extend_from_slice(b":2}\n");
        assert_eq!(take_lines(&mut b), vec!["{\"b\":2}".to_string()]);
        assert!(b.is_empty());
    }
}
