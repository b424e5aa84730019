//! The target: one Docker engine (the local one by default) and the folder on its host where a stack's
//! files live. Everything that talks to the engine goes through here or `engine`.

mod exec;

pub use exec::{exec, ExecOutput};

use anyhow::{Context, Result};
use bollard::Docker;
use std::path::PathBuf;

pub struct Target {
    pub docker: Docker,
    /// Names the target in local state paths ("local").
    pub key: String,
    /// Where stack folders live on the target's host (bind-mount sources must be paths there).
    pub stacks_root: PathBuf,
}

impl Target {
    /// The local engine: DOCKER_HOST if set, else the unix socket; API version negotiated so that old
    /// engines (20.10 / API 1.41) work.
    pub async fn local() -> Result<Target> {
        let docker = Docker::connect_with_defaults().context(
            "connecting to the local Docker engine (DOCKER_HOST or /var/run/docker.sock)",
        )?;
        let docker = docker.negotiate_version().await.context(
            "the Docker engine does not answer; fix: start it (dockerd, or `bash scripts/dockerd.sh`) or set DOCKER_HOST",
        )?;
        Ok(Target {
            docker,
            key: crate::commands::LOCAL_TARGET.to_string(),
            stacks_root: crate::secrets::state_root().join(crate::commands::LOCAL_TARGET),
        })
    }

    /// The stack's folder on the target (bundle, lock, secrets).
    pub fn stack_dir(&self, stack: &str) -> PathBuf {
        self.stacks_root.join(stack)
    }

    /// The rendered bundle's folder on the target.
    pub fn bundle_dir(&self, stack: &str) -> PathBuf {
        self.stack_dir(stack).join("bundle")
    }

    /// Run a shell script on the target's host (arguments as $1, $2, ...) and return its stdout.
    pub async fn host_shell(&self, script: &str, args: &[&str]) -> Result<String> {
        let out = tokio::process::Command::new("sh")
            .arg("-c")
            .arg(script)
            .arg("sh")
            .args(args)
            .output()
            .await
            .context("running a shell on the target host")?;
        if !out.status.success() {
            anyhow::bail!(
                "host script failed ({}): {}",
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// The hard open-files limit a container may ask for: the engine's own hard limit (a container's
    /// rlimit is set by a child of dockerd, which cannot raise it without CAP_SYS_RESOURCE) and the
    /// kernel's fs.nr_open. None when it cannot be read.
    pub fn max_nofile(&self) -> Option<u64> {
        let nr_open = std::fs::read_to_string("/proc/sys/fs/nr_open")
            .ok()
            .and_then(|s| s.trim().parse::<u64>().ok());
        let engine = engine_pid().and_then(|pid| {
            let limits = std::fs::read_to_string(format!("/proc/{pid}/limits")).ok()?;
            parse_nofile(&limits).map(|(_, hard)| hard)
        });
        match (engine, nr_open) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}

fn engine_pid() -> Option<u32> {
    if let Some(pid) = std::fs::read_to_string("/var/run/docker.pid")
        .ok()
        .and_then(|s| s.trim().parse().ok())
    {
        return Some(pid);
    }
    std::fs::read_dir("/proc").ok()?.flatten().find_map(|e| {
        let pid: u32 = e.file_name().to_str()?.parse().ok()?;
        let comm = std::fs::read_to_string(e.path().join("comm")).ok()?;
        (comm.trim() == "dockerd").then_some(pid)
    })
}

/// (soft, hard) of "Max open files" in a /proc/PID/limits text.
pub fn parse_nofile(limits: &str) -> Option<(u64, u64)> {
    let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
    let mut nums = line["Max open files".len()..].split_whitespace().map(|w| {
        if w == "unlimited" {
            Some(u64::MAX)
        } else {
            w.parse().ok()
        }
    });
    Some((nums.next()??, nums.next()??))
}

#[cfg(test)]
mod tests {
    #[test]
    fn reads_nofile_from_proc_limits() {
        let text = "Limit                     Soft Limit           Hard Limit           Units\n\
                    Max open files            1024                 20000                files\n";
        assert_eq!(super::parse_nofile(text), Some((1024, 20000)));
    }
}
