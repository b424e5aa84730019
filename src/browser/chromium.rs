//! Headless Chromium as a child in its own process group, with a fresh profile, its DevTools port read
//! from `DevToolsActivePort`. The group (Chromium and its zygote, renderer and utility children) is killed
//! by `kill`, or when dropped.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use tokio::process::{Child, Command};
use tokio::time::{sleep, Instant};

pub struct Chromium {
    child: Child,
    /// The process group's id (the child's pid: it leads its own group).
    pgid: Option<i32>,
    port: u16,
    /// The profile; removed when dropped, after the kill.
    _profile: tempfile::TempDir,
}

impl Chromium {
    /// Start `chromium` and wait (until `deadline`) for its DevTools port.
    pub async fn start(chromium: &Path, deadline: Instant) -> Result<Chromium, String> {
        let profile = tempfile::Builder::new()
            .prefix("exectl-browser-")
            .tempdir()
            .map_err(|e| format!("no profile folder: {e}"))?;
        let mut cmd = Command::new(chromium);
        cmd.args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--disable-dev-shm-usage",
            "--no-first-run",
            "--no-default-browser-check",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-extensions",
            // Requests go to the front door only, whatever the environment's proxy.
            "--no-proxy-server",
            "--remote-debugging-port=0",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg("about:blank")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .kill_on_drop(true);
        let child = cmd
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", chromium.display()))?;
        let pgid = child.id().map(|id| id as i32);
        let mut me = Chromium {
            child,
            pgid,
            port: 0,
            _profile: profile,
        };
        let file = me._profile.path().join("DevToolsActivePort");
        loop {
            if let Ok(text) = std::fs::read_to_string(&file) {
                if let Some(port) = text.lines().next().and_then(|l| l.trim().parse().ok()) {
                    me.port = port;
                    return Ok(me);
                }
            }
            if let Ok(Some(status)) = me.child.try_wait() {
                me.kill().await;
                return Err(format!("{} exited at start ({status})", chromium.display()));
            }
            if Instant::now() >= deadline {
                me.kill().await;
                return Err(format!(
                    "{} gave no DevTools port within the timeout",
                    chromium.display()
                ));
            }
            sleep(Duration::from_millis(25)).await;
        }
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// SIGKILL the whole group, then reap the child (at most 3 s).
    pub async fn kill(&mut self) {
        self.kill_group();
        let _ = self.child.start_kill();
        let _ = tokio::time::timeout(Duration::from_secs(3), self.child.wait()).await;
    }

    fn kill_group(&mut self) {
        if let Some(pgid) = self.pgid.take() {
            // SAFETY: kill(2) with a negative pid signals the group this child leads; no memory involved.
            unsafe {
                libc::kill(-pgid, libc::SIGKILL);
            }
        }
    }
}

impl Drop for Chromium {
    fn drop(&mut self) {
        // A run cancelled mid-way: the group too, not only the child (kill_on_drop).
        self.kill_group();
    }
}
