//! `exectl host tune|restore`: upload ansible-free/ (embedded) to the target's host, run its tune.sh
//! there, and report. Only `Target`'s host file and shell calls touch the host, so a remote SUT over SSH
//! is tuned exactly like the local machine. The pure part (files, daemon.json merge, report) is
//! `crate::host`.

use crate::cli::host::{HostArgs, HostCommand, RestoreArgs, TuneArgs};
use crate::host::report::{self, Mode, Report};
use crate::host::{self, daemon_json, sysctl, Role};
use crate::sut::Target;
use anyhow::{anyhow, bail, Context, Result};
use exectl_core::error::UsageError;
use exectl_core::scripts::{files, tune::forget_state, tune::run_tune as tune_script};
use std::path::{Path, PathBuf};

pub async fn run(args: &HostArgs) -> Result<i32> {
    match &args.command {
        HostCommand::Tune(a) => tune(a).await,
        HostCommand::Restore(a) => restore(a).await,
    }
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

async fn tune(a: &TuneArgs) -> Result<i32> {
    // Every input is checked before the host is touched.
    let role = Role::parse(&a.role)?;
    let custom = match &a.sysctl_file {
        None => None,
        Some(p) => Some(read_sysctl_file(p)?),
    };
    let root = host::check_root(a.root.as_deref())?;
    let paths = HostPaths::new(&root);
    let spec = crate::cli::target::target_spec(&a.target)?;
    spec.one_engine("host tune")?;
    let target = crate::sut::Target::connect(&spec).await?;

    let current = read_host_file(&target, &paths.daemon_json).await?;
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

    let mode = if a.check { Mode::Check } else { Mode::Apply };
    let dir = match mode {
        Mode::Apply => paths.kept_copy(),
        _ => temp_dir(&target).await?,
    };
    let result = async {
        stage(&target, &dir).await?;
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
            if a.check { "--check" } else { "--apply" }.into(),
        ];
        run_tune(&target, &dir, &args).await
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
    print(&r, a.json)?;
    Ok(r.exit_code())
}

async fn restore(a: &RestoreArgs) -> Result<i32> {
    let root = host::check_root(a.root.as_deref())?;
    let paths = HostPaths::new(&root);
    let spec = crate::cli::target::target_spec(&a.target)?;
    spec.one_engine("host restore")?;
    let target = crate::sut::Target::connect(&spec).await?;
    let dir = temp_dir(&target).await?;
    let result = async {
        stage(&target, &dir).await?;
        let args = ["--root".into(), paths.root.clone(), "--restore".into()];
        run_tune(&target, &dir, &args).await
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
    print(&r, a.json)?;
    Ok(r.exit_code())
}

fn print(r: &Report, json: bool) -> Result<()> {
    if json {
        println!("{}", serde_json::to_string_pretty(r)?);
    } else {
        print!("{}", r.render());
    }
    Ok(())
}

/// `--sysctl-file`, read here and checked: a bad one is refused before anything is sent.
fn read_sysctl_file(path: &Path) -> Result<String, UsageError> {
    let fix = "give a readable sysctl.d file of KEY = VALUE lines (e.g. ansible-free/sysctl/99-exectl-sut.conf), \
               or leave --sysctl-file out to use the role's";
    let text = std::fs::read_to_string(path).map_err(|e| {
        UsageError::new(
            "--sysctl-file",
            path.display(),
            format!("cannot be read ({e})"),
            fix,
        )
    })?;
    sysctl::parse(&text).map_err(|e| {
        UsageError::new(
            "--sysctl-file",
            path.display(),
            format!("not a sysctl.d file: {e}"),
            fix,
        )
    })?;
    Ok(text)
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

/// tune.sh's report; an error with its stderr when it fails.
async fn run_tune(target: &Target, dir: &Path, args: &[String]) -> Result<String> {
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
        eprintln!("{}", out.stderr.trim_end());
    }
    Ok(out.stdout)
}
