//! What a load is asked before the stack it goes to is read: typed, with `exectl load`'s defaults in
//! `Default` (a `None` is what the scenario or the users give). `from_input` makes one of what a user
//! said (`BenchInput`: `exectl load`'s flags, each bench level's); sweep and other programs set its
//! fields.
//! `run` and `for_stack` read the manifest and the front door and make the run's `LoadOptions`.

use std::net::IpAddr;
use std::time::Duration;

use super::{
    endpoint, Endpoint, Generators, LoadOptions, Manifest, Scenario, StackRef,
    DEFAULT_DIAL_CONCURRENCY, DEFAULT_HOLD, DEFAULT_RAMP,
};
use crate::sut::TargetSpec;
use exectl_core::bench::fault::Fault;
use exectl_core::bench::settings::BenchInput;
use exectl_core::error::UsageError;
use exectl_core::load::liveness::Bounds;
use exectl_core::load::rules::Workload;

/// Longest schedule (users / rate): as long as the longest --ramp.
const MAX_SCHEDULE: Duration = Duration::from_secs(30 * 86_400);

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct LoadSettings {
    pub scenario: Scenario,
    /// None: 10 s, or none for a login burst.
    pub ramp: Option<Duration>,
    /// Dials in flight. None: 64, or every user at once for a login burst; never more than the users.
    pub dial_concurrency: Option<usize>,
    pub hold: Duration,
    /// The action interval. None: the scenario's.
    pub interval: Option<Duration>,
    /// When a held socket's silent server counts as stalled. None: scaled with the users.
    pub ping_after: Option<Duration>,
    /// Open the sockets with the manifest's minted tokens instead of logging in.
    pub tokens: bool,
    /// User i dials from address i mod n (empty: the kernel chooses).
    pub sources: Vec<IpAddr>,
    /// Generator processes here (None: as many as the open-files limit requires).
    pub processes: Option<usize>,
    pub generators: Generators,
    /// The stack's manifest of this email pattern (None: its newest).
    pub pattern: Option<String>,
    /// The per-second progress line on stderr.
    pub progress: bool,
    /// How users come and come back (the open model, `--reconnect`, `--relogin`).
    #[serde(flatten)]
    pub flow: Flow,
    /// `--churn`: each user leaves after a time of this mean and comes back (`LoadOptions::churn`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub churn: Option<Duration>,
}

/// How users come and come back, as `LoadSettings` and a slice's spec carry them to `LoadOptions`: one
/// struct, so that the two keep the same fields; flattened into each, so that their JSON has them at
/// its top, as it always had.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Flow {
    /// `--arrival-rate`: sessions start on schedule, user i at i/R seconds, whatever the server does
    /// (the open model); their latencies count from that scheduled start. None: the closed model
    /// (`LoadOptions::arrival_rate`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arrival_rate: Option<f64>,
    /// `--reconnect`: a dropped user dials again as the real client does (`LoadOptions::reconnect`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub reconnect: bool,
    /// `--relogin`: a dropped user logs in again before it dials (`LoadOptions::relogin`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub relogin: bool,
}

impl Default for LoadSettings {
    fn default() -> LoadSettings {
        LoadSettings {
            scenario: Scenario::Idle,
            ramp: None,
            dial_concurrency: None,
            hold: DEFAULT_HOLD,
            interval: None,
            ping_after: None,
            tokens: false,
            sources: Vec::new(),
            processes: None,
            generators: Generators::default(),
            pattern: None,
            progress: false,
            flow: Flow::default(),
            churn: None,
        }
    }
}

impl LoadSettings {
    /// The load of what a user said (`BenchInput`'s workload settings, each already read as its type),
    /// with the users' generators, whether a dropped user dials again (`--reconnect`, a bench's fault)
    /// and the progress line; checked across settings, a bench's fault among them (`load::rules`).
    pub fn from_input(
        input: &BenchInput,
        generators: Generators,
        reconnect: bool,
        progress: bool,
    ) -> Result<LoadSettings, UsageError> {
        let scenario = input.scenario();
        let sources = match &input.source_addrs {
            Some(t) => exectl_core::load::sources::parse(t)?,
            None => Vec::new(),
        };
        let settings = LoadSettings {
            scenario,
            ramp: input.ramp,
            dial_concurrency: input.dial_concurrency.map(|n| n as usize),
            hold: input.hold.unwrap_or(DEFAULT_HOLD),
            interval: input.interval,
            ping_after: input.ping_after,
            tokens: BenchInput::on(input.tokens),
            sources,
            processes: input.processes.map(|n| n as usize),
            generators,
            pattern: input.pattern.clone(),
            progress,
            flow: Flow {
                arrival_rate: input.arrival_rate,
                // A user that left comes back; if its dial fails, as --reconnect does.
                reconnect: reconnect || input.churn.is_some(),
                relogin: BenchInput::on(input.relogin),
            },
            churn: input.churn,
        };
        // A bench's fault is checked with the rest: inside the hold, on a scenario that holds sockets.
        exectl_core::load::rules::check(&settings.workload(input.fault.as_ref()))
            .map_err(|e| input.as_given(e))?;
        Ok(settings)
    }

    /// What no value's own range shows (`exectl_core::load::rules`).
    pub fn check(&self) -> Result<(), UsageError> {
        exectl_core::load::rules::check(&self.workload(None))
    }

    /// What the rules across settings read of this load, with a bench's `fault`.
    pub fn workload<'a>(&self, fault: Option<&'a Fault>) -> Workload<'a> {
        Workload {
            scenario: self.scenario,
            hold: self.hold,
            ramp: self.ramp,
            arrival_rate: self.flow.arrival_rate,
            churn: self.churn,
            tokens: self.tokens,
            relogin: self.flow.relogin,
            reconnect: self.flow.reconnect,
            fault,
        }
    }

    /// The ramp: `users` at the arrival rate, the given one, or the scenario's.
    pub fn ramp(&self, users: usize) -> Duration {
        if let Some(rate) = self.flow.arrival_rate {
            return Duration::from_secs_f64(users as f64 / rate);
        }
        self.ramp.unwrap_or(match self.scenario {
            Scenario::LoginBurst => Duration::ZERO,
            _ => DEFAULT_RAMP,
        })
    }

    /// The run of `users` (None: every account of `manifest`) against `endpoint`, the front door of
    /// `stacks` (empty: a URL no recorded stack publishes). `run_id` None: the scenario, the users and
    /// the unix time.
    pub fn run(
        &self,
        endpoint: Endpoint,
        stacks: Vec<StackRef>,
        manifest: Manifest,
        users: Option<usize>,
        run_id: Option<String>,
    ) -> Result<LoadOptions, UsageError> {
        self.check()?;
        if !self.sources.is_empty() {
            let shown: Vec<String> = self.sources.iter().map(IpAddr::to_string).collect();
            exectl_core::load::sources::check_family(
                &self.sources,
                endpoint.addr.ip(),
                &shown.join(","),
            )?;
        }
        let users = users.unwrap_or(manifest.accounts.len());
        if let Some(rate) = self.flow.arrival_rate {
            if users as f64 / rate > MAX_SCHEDULE.as_secs_f64() {
                return Err(UsageError::new(
                    "--arrival-rate",
                    rate,
                    format!("{users} users at {rate} a second take more than 30 days to start"),
                    "give a higher rate, or fewer users",
                ));
            }
        }
        if users > manifest.accounts.len() {
            return Err(UsageError::new(
                "--users",
                users,
                format!(
                    "the manifest in {} has only {} accounts (one per user)",
                    manifest.dir.display(),
                    manifest.accounts.len()
                ),
                "prepare more accounts, or lower --users",
            ));
        }
        if self.scenario == Scenario::Collab {
            check_rooms(&manifest, users)?;
        }
        let dial_concurrency = match self.dial_concurrency {
            Some(n) => n,
            None if self.scenario == Scenario::LoginBurst => users,
            None => DEFAULT_DIAL_CONCURRENCY,
        }
        .min(users);
        let run_id = run_id.unwrap_or_else(|| {
            let now = crate::clock::unix_s();
            format!("{}-{users}-{now}", self.scenario.name())
        });
        Ok(LoadOptions {
            scenario: self.scenario,
            endpoint,
            manifest,
            users,
            ramp: self.ramp(users),
            dial_concurrency,
            hold: self.hold,
            interval: self.interval.unwrap_or(self.scenario.default_interval()),
            tokens: self.tokens,
            liveness: match self.ping_after {
                Some(d) => Bounds::fixed(d),
                None => Bounds::for_users(users),
            },
            run_id,
            progress: self.progress,
            live: None,
            sources: self.sources.clone(),
            processes: self.processes,
            probe: true,
            generators: self.generators.clone(),
            ramp_slots: None,
            stacks,
            arrival_rate: self.flow.arrival_rate,
            reconnect: self.flow.reconnect,
            relogin: self.flow.relogin,
            churn: self.churn,
        })
    }

    /// The run against the recorded stack `stack` of `target`: its front door (from its record), and
    /// its newest manifest (or `pattern`'s). The stack is held as a reader while the load runs.
    pub fn for_stack(
        &self,
        target: &TargetSpec,
        stack: &str,
        users: Option<usize>,
        run_id: Option<String>,
    ) -> Result<LoadOptions, UsageError> {
        let (door, stack, manifest) = self.read_stack(target, stack)?;
        self.run(door, vec![stack], manifest, users, run_id)
    }

    /// The recorded stack `stack` of `target`: its front door, the stack, and its newest manifest (or
    /// `pattern`'s), read once for any number of runs (a bench's levels).
    pub fn read_stack(
        &self,
        target: &TargetSpec,
        stack: &str,
    ) -> Result<(Endpoint, StackRef, Manifest), UsageError> {
        let (door, stack) = front_door(target, stack)?;
        let dir =
            crate::state::manifests::locate(&stack.name, &stack.dir, self.pattern.as_deref())?;
        let manifest = Manifest::read(&dir, self.tokens)?;
        Ok((door, stack, manifest))
    }
}

/// The front door of the recorded stack `stack` of `target` (from its record), and the stack.
pub fn front_door(target: &TargetSpec, stack: &str) -> Result<(Endpoint, StackRef), UsageError> {
    let stack = exectl_core::spec::resolve_stack_name(Some(stack))?;
    let record = crate::state::record::read(&target.bundle_dir(&stack), &stack)?;
    let door = endpoint::from_stack(&stack, record.as_ref(), target.address()?)?;
    let dir = target.stack_dir(&stack);
    Ok((door, StackRef { name: stack, dir }))
}

/// collab relays frames within a room: the first `users` accounts must hold two in one project.
fn check_rooms(manifest: &Manifest, users: usize) -> Result<(), UsageError> {
    // The first account whose project an earlier account is in: users up to it make a room of two.
    let mut seen = std::collections::HashSet::new();
    let pair_at = manifest
        .accounts
        .iter()
        .position(|a| !seen.insert(a.project_uuid.as_str()));
    match pair_at {
        Some(i) if i < users => Ok(()),
        Some(i) => Err(UsageError::new(
            "--users",
            users,
            format!(
                "collab needs two users in a room, and the first {users} accounts of the manifest in {} are each in a project of their own",
                manifest.dir.display()
            ),
            format!("give --users {} or more", i + 1),
        )),
        None => Err(UsageError::new(
            "--users-per-project",
            1,
            format!(
                "collab relays frames between the members of a project's room, and every account of the manifest in {} has a project of its own: no frame could reach anyone",
                manifest.dir.display()
            ),
            "prepare the accounts again with --users-per-project 2 or more (e.g. exectl prepare --accounts N --users-per-project 4)",
        )),
    }
}
