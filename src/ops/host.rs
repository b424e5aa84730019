//! `host tune` and `host restore`: upload ansible-free/ (embedded) to the target's host, run its tune.sh
//! there, and report. Only `Target`'s host file and shell calls touch the host, so a remote SUT over SSH
//! is tuned exactly like the local machine. The pure part (files, daemon.json merge, report) is
//! `crate::host`.

use super::{Context, Event};
use crate::host::report::{self, Mode, Report};
use crate::host::{self, daemon_json, Role};
use crate::sut::Target;
use anyhow::{anyhow, bail, Context as _, Result};
use exectl_core::scripts::{files, tune::forget_state, tune::run_tune as tune_script};
use std::path::{Path, PathBuf};

/// What `host tune` sets, checked (`cli::options::host_tune`): nothing reaches the host before.
pub struct TuneOptions {
    pub role: Role,
    /// A sysctl.d file's text to apply instead of the role's (`--sysctl-file`, read and parsed).
    pub sysctl_text: Option<String>,
    /// The host's root the files are written under (`--root`, checked: `host::check_root`).
    pub root: PathBuf,
    /// Only say what would change (`--check`).
    pub check: bool,
}

/// Where `host restore` puts things back: under the host's root (`--root`).
pub struct RestoreOptions {
    pub root: PathBuf,
}

/// Where things are on the host, under --root.
struct HostPaths {
    root: String,
    sysctls: String,
    state: PathBuf,
    daemon_json: PathBuf,
    limits_dir: PathBuf,
}

impl HostPaths {
    fn new(root: &Path) -> HostPaths {
        HostPaths {
            root: host::root_arg(root),
            sysctls: host::sysctl_dir(root),
            state: root.join(host::STATE_DIR),
            daemon_json: root.join(host::DAEMON_JSON),
            limits_dir: root.join("etc/security/limits.d"),
        }
    }

    /// Where `host tune` leaves its copy of ansible-free/ (to restore by hand without exectl).
    fn kept_copy(&self) -> PathBuf {
        self.state.join("ansible-free")
    }
}

/// Tune the target's host (or, with `check`, say what would change) for `o.role`.
pub async fn tune(cx: &Context<'_>, o: &TuneOptions) -> Result<Report> {
    let (target, role, custom) = (cx.target, o.role, &o.sysctl_text);
    let paths = HostPaths::new(&o.root);

    let current = read_host_file(target, &paths.daemon_json).await?;
    let (wanted, capped) =
        daemon_json::capped_nofile(host::WANTED_DAEMON_JSON, target.max_nofile().await)
            .map_err(|e| anyhow!(e))?;
    let merge = daemon_json::merge(current.as_deref(), &wanted).map_err(|e| {
        anyhow!(
            "{} on {} is {e}; fix it or move it away, then run again (nothing was changed)",
            paths.daemon_json.display(),
            target.describe()
        )
    })?;

    let mode = if o.check { Mode::Check } else { Mode::Apply };
    let dir = match mode {
        Mode::Apply => paths.kept_copy(),
        _ => temp_dir(target).await?,
    };
    let result = async {
        stage(target, &dir).await?;
        let sysctl_file = match &custom {
            None => dir.join(role.sysctl_file()),
            Some(text) => {
                let f = dir.join("sysctl/from-sysctl-file.conf");
                target.put_file(&f, text.as_bytes(), 0o644).await?;
                f
            }
        };
        let daemon = dir.join("docker/daemon.merged.json");
        target
            .put_file(&daemon, merge.text.as_bytes(), 0o644)
            .await?;
        let args = [
            "--role".into(),
            role.name().into(),
            "--sysctl-file".into(),
            sysctl_file.display().to_string(),
            "--limits".into(),
            dir.join(host::LIMITS_FILE).display().to_string(),
            "--daemon-json".into(),
            daemon.display().to_string(),
            "--root".into(),
            paths.root.clone(),
            if o.check { "--check" } else { "--apply" }.into(),
        ];
        run_tune(cx, &dir, &args).await
    }
    .await;
    if mode == Mode::Check {
        target.remove_host_dir(&dir).await?;
    }
    let (settings, mut notes) = report::parse_lines(&result?);
    notes.extend(capped);
    let daemon = paths.daemon_json.display().to_string();
    let settings = report::detail_daemon_json(settings, &daemon, &merge);
    let r = Report::new(
        mode,
        target.describe(),
        paths.state.display().to_string(),
        settings,
        notes,
        &daemon,
        &paths.limits_dir.display().to_string(),
    )
    .sysctls_in(&paths.sysctls);
    Ok(r)
}

/// Put back what `host tune` changed on the target's host, and forget it.
pub async fn restore(cx: &Context<'_>, o: &RestoreOptions) -> Result<Report> {
    let target = cx.target;
    let paths = HostPaths::new(&o.root);
    let dir = temp_dir(target).await?;
    let result = async {
        stage(target, &dir).await?;
        let args = ["--root".into(), paths.root.clone(), "--restore".into()];
        run_tune(cx, &dir, &args).await
    }
    .await;
    target.remove_host_dir(&dir).await?;
    let (settings, notes) = report::parse_lines(&result?);
    // Nothing is recorded any more: the copy `host tune` kept goes too, and the state folder if empty.
    target
        .host_shell(&forget_state(&paths.state.display().to_string()))
        .await?;
    let r = Report::new(
        Mode::Restore,
        target.describe(),
        paths.state.display().to_string(),
        settings,
        notes,
        &paths.daemon_json.display().to_string(),
        &paths.limits_dir.display().to_string(),
    )
    .sysctls_in(&paths.sysctls);
    Ok(r)
}

/// A file on the target's host: None when it does not exist.
async fn read_host_file(target: &Target, path: &Path) -> Result<Option<String>> {
    let out = target
        .host_shell(&files::read(path))
        .await
        .with_context(|| format!("reading {}", path.display()))?;
    Ok(files::parse_read(&out))
}

async fn temp_dir(target: &Target) -> Result<PathBuf> {
    let out = target
        .host_shell(&files::make_temp_dir())
        .await
        .context("making a temporary folder on the host")?;
    Ok(files::parse_temp_dir(&out))
}

/// ansible-free/ as embedded in exectl, written to `dir` on the host.
async fn stage(target: &Target, dir: &Path) -> Result<()> {
    for f in &host::ANSIBLE_FREE {
        target
            .put_file(&dir.join(f.path), f.text.as_bytes(), f.mode)
            .await?;
    }
    Ok(())
}

/// tune.sh's report (what it says on stderr, a note); an error with its stderr when it fails.
async fn run_tune(cx: &Context<'_>, dir: &Path, args: &[String]) -> Result<String> {
    let target = cx.target;
    let out = target
        .host_run(&tune_script(&dir.display().to_string(), args))
        .await?;
    if out.code != 0 {
        bail!(
            "ansible-free/tune.sh failed on {} (exit {}): {}{}",
            target.describe(),
            out.code,
            out.stderr.trim(),
            if out.stdout.trim().is_empty() {
                String::new()
            } else {
                format!("\n(done before it failed:\n{})", out.stdout.trim_end())
            }
        );
    }
    if !out.stderr.trim().is_empty() {
        cx.progress.event(Event::Note(out.stderr.trim_end()));
    }
    Ok(out.stdout)
}
