//! What a bench is asked before its stack's manifest is read: typed, `exectl bench`'s defaults in
//! `Default`, made from what a user said (`BenchInput`: bench's and sweep's flags, a campaign row's
//! `bench:`) by `from_input`, which checks it across settings. `options` makes a bench of it on a
//! stack — each level's load, the browser user — for `exectl bench`, sweep's points and any program.

use std::time::Duration;

use super::bench::BenchOptions;
use crate::load::settings::LoadSettings;
use crate::load::{Endpoint, Generators, LoadOptions, Manifest, StackRef};
use crate::state::bench_dir::BenchDir;
use crate::sut::TargetSpec;
use exectl_core::bench::settings::BenchInput;
use exectl_core::bench::Slos;
use exectl_core::error::UsageError;

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct BenchSettings {
    /// Each level's load; its users are the level's.
    pub load: LoadSettings,
    pub slos: Slos,
    /// The SUT's sampling period.
    pub sample: Duration,
    /// How long the leak check (and the wait for an idle stack before level 1) may wait.
    pub settle: Duration,
    pub continue_after_fail: bool,
    /// One more user in headless Chromium during each level's plateau.
    pub browser_probe: bool,
    /// A progress line every sample while a level runs (on stderr).
    pub sample_lines: bool,
    /// `--fault`: done to the stack in each level's common hold (the load then reconnects:
    /// `load.flow.reconnect`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fault: Option<exectl_core::bench::fault::Fault>,
}

/// The SUT sampled every second.
pub const DEFAULT_SAMPLE: Duration = Duration::from_secs(1);
/// A level's users gone from every instance within 45 s (the app drops a room 30 s after it empties).
pub const DEFAULT_SETTLE: Duration = Duration::from_secs(45);

impl Default for BenchSettings {
    fn default() -> BenchSettings {
        BenchSettings {
            load: LoadSettings::default(),
            slos: Slos::default(),
            sample: DEFAULT_SAMPLE,
            settle: DEFAULT_SETTLE,
            continue_after_fail: false,
            browser_probe: false,
            sample_lines: false,
            fault: None,
        }
    }
}

impl BenchSettings {
    /// A bench's settings as a user gives them, checked on their own before the stack they will
    /// bench exists (a sweep's, before its first deploy): the objectives, the sampling and a level's
    /// load, its generator hosts reached with the target's flags, its source addresses of the family
    /// of the front door (the target's address).
    pub fn given(
        input: &BenchInput,
        target: &crate::sut::target_flags::TargetFlags,
        progress: bool,
    ) -> Result<BenchSettings, UsageError> {
        let generators = Generators::given(input.generators.as_deref(), target)?;
        let settings = BenchSettings::from_input(input, generators, progress)?;
        if let (Some(text), false) = (&input.source_addrs, settings.load.sources.is_empty()) {
            let door = super::spec_source::target_spec(target)?.address()?;
            exectl_core::load::sources::check_family(&settings.load.sources, door, text)?;
        }
        Ok(settings)
    }

    /// The bench of what a user said (bench's and sweep's flags, a campaign row's `bench:`, each
    /// value read as its type by `BenchInput`), its users from `generators`: checked across settings
    /// (the load's rules, a fault inside the hold on a scenario that holds sockets), nothing connected
    /// to. `sample_lines`: a progress line every sample.
    pub fn from_input(
        input: &BenchInput,
        generators: Generators,
        sample_lines: bool,
    ) -> Result<BenchSettings, UsageError> {
        let slos = Slos::with_overrides(input.slo.as_deref().unwrap_or_default())?;
        // A fault drops sockets on purpose: the users come back as the real client does.
        let load = LoadSettings::from_input(input, generators, input.fault.is_some(), false)?;
        Ok(BenchSettings {
            load,
            slos,
            sample: input.sample.unwrap_or(DEFAULT_SAMPLE),
            settle: input.settle.unwrap_or(DEFAULT_SETTLE),
            continue_after_fail: BenchInput::on(input.continue_after_fail),
            browser_probe: BenchInput::on(input.browser_probe),
            sample_lines,
            fault: input.fault.clone(),
        })
    }

    /// The bench of `levels` (ascending) on the recorded stack `stack` of `target`, into `out`: each
    /// level's load read from the stack's record and manifest (which must hold the top level's users,
    /// and one more for the browser), nothing connected to.
    pub fn options(
        &self,
        target: &TargetSpec,
        stack: &str,
        levels: &[u64],
        run_id: &str,
        out: BenchDir,
    ) -> Result<BenchOptions, UsageError> {
        let shown: Vec<String> = levels.iter().map(u64::to_string).collect();
        let levels_text = shown.join(",");
        // The stack's record and manifest, read once for every level.
        let read = self.load.read_stack(target, stack)?;
        let plans = levels
            .iter()
            .map(|&users| self.level(&read, users, run_id, &levels_text))
            .collect::<Result<Vec<_>, _>>()?;
        let browser = match (self.browser_probe, plans.last()) {
            (true, Some(top)) => Some(browser(top)?),
            _ => None,
        };
        Ok(BenchOptions {
            run_id: run_id.to_string(),
            stack: stack.to_string(),
            out,
            levels_text,
            levels: levels.to_vec(),
            plans,
            slos: self.slos.clone(),
            sample: self.sample,
            settle: self.settle,
            continue_after_fail: self.continue_after_fail,
            sample_lines: self.sample_lines,
            browser,
            fault: self.fault.clone(),
        })
    }

    /// One level's load, as `exectl load --users N` would run it (quiet: the bench prints its lines).
    fn level(
        &self,
        (door, stack, manifest): &(Endpoint, StackRef, Manifest),
        users: u64,
        run_id: &str,
        levels: &str,
    ) -> Result<LoadOptions, UsageError> {
        let load = LoadSettings {
            progress: false,
            ..self.load.clone()
        };
        let id = Some(format!("{run_id}-{users}"));
        let (stacks, manifest) = (vec![stack.clone()], manifest.clone());
        load.run(door.clone(), stacks, manifest, Some(users as usize), id)
            .map_err(|e| {
                // bench has no --users: a level's count is one of --levels.
                if e.field != "--users" {
                    e
                } else if e.problem.contains("accounts (one per user)") {
                    UsageError::new(
                        "--levels",
                        levels,
                        e.problem,
                        "prepare at least as many accounts as the top level",
                    )
                } else {
                    UsageError::new(
                        "--levels",
                        levels,
                        format!("the {users} users level: {}", e.problem),
                        e.fix.replace("give --users", "start --levels at"),
                    )
                }
            })
    }
}

/// Where the browser's Chromium is: $EXECTL_CHROMIUM, else Debian's.
const CHROMIUM: &str = "/usr/bin/chromium";
/// How long the browser may take, from Chromium's start to the first sync.
const BROWSER_TIMEOUT: Duration = Duration::from_secs(30);

/// `--browser-probe`: Chromium, the front door as a browser reaches it, and the account after the top
/// level's users (so the browser is one more user, not one of them).
fn browser(top: &LoadOptions) -> Result<crate::browser::Probe, UsageError> {
    let chromium = std::env::var_os("EXECTL_CHROMIUM")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| CHROMIUM.into());
    if !chromium.is_file() {
        return Err(UsageError::new(
            "--browser-probe",
            chromium.display(),
            "no Chromium there",
            "install it (bash scripts/packages.sh installs Debian's chromium), or set EXECTL_CHROMIUM to its path",
        ));
    }
    let Some(account) = top.manifest.accounts.get(top.users) else {
        return Err(UsageError::new(
            "--browser-probe",
            top.users + 1,
            format!(
                "the browser needs an account of its own after the top level's {} users, and the manifest in {} has {}",
                top.users,
                top.manifest.dir.display(),
                top.manifest.accounts.len()
            ),
            format!("prepare at least {} accounts", top.users + 1),
        ));
    };
    let e = &top.endpoint;
    // A Host rule (Traefik) is reached by name: Chromium resolves *.localhost to loopback itself.
    let base_url = match &e.host_header {
        None => e.base.as_str().trim_end_matches('/').to_string(),
        Some(h) if e.addr.ip().is_loopback() && (h == "localhost" || h.ends_with(".localhost")) => {
            format!("http://{h}:{}", e.addr.port())
        }
        Some(h) => {
            return Err(UsageError::new(
                "--browser-probe",
                h,
                format!("a browser cannot send Host {h} to {}", e.addr),
                "probe a stack whose front door a browser reaches by name (an ha stack's nginx port, or a single stack on this machine with --host NAME.localhost)",
            ))
        }
    };
    Ok(crate::browser::Probe {
        chromium,
        base_url,
        email: account.email.clone(),
        password: account.password.clone(),
        project_uuid: account.project_uuid.clone(),
        timeout: BROWSER_TIMEOUT,
    })
}
