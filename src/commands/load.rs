//! `exectl load`: check the flags, the manifest, the target and the client's limits (exit 2 on any bad
//! input, before a single dial), run the scenario, print the summary. Exit 0 when every user met the
//! scenario's criterion, 1 when some did not.

use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result};

use crate::cli::LoadArgs;
use crate::cli::{count_flag, duration_flag};
use crate::load::{endpoint, preflight, runner, AllowList, LoadOptions, Manifest, Scenario};
use exectl_core::error::UsageError;

/// Dials in flight by default: enough for a fast ramp, far below an accept queue (the MQTT seed's
/// simultaneous dials overflowed it).
pub const DEFAULT_DIAL_CONCURRENCY: usize = 64;
pub const DEFAULT_RAMP: Duration = Duration::from_secs(10);
pub const DEFAULT_HOLD: Duration = Duration::from_secs(30);

/// Longest --ramp, --hold and --interval: far beyond any run, short of what an Instant can add.
const MAX_DURATION: Duration = Duration::from_secs(30 * 86_400);
/// Most --users and --dial-concurrency (the manifest bounds --users further).
const MAX_USERS: u64 = 10_000_000;

fn duration(
    flag: &str,
    value: &Option<String>,
    default: Duration,
    min: Duration,
) -> Result<Duration, UsageError> {
    match value {
        None => Ok(default),
        Some(v) => duration_flag(flag, v, min, MAX_DURATION),
    }
}

fn count(flag: &str, value: &Option<String>) -> Result<Option<usize>, UsageError> {
    value
        .as_deref()
        .map(|v| count_flag(flag, v, 1, MAX_USERS).map(|n| n as usize))
        .transpose()
}

/// The flags, checked, as a run (no network, no limits yet).
pub fn options(args: &LoadArgs) -> Result<LoadOptions, UsageError> {
    let scenario = Scenario::parse(&args.scenario).ok_or_else(|| {
        UsageError::new(
            "scenario",
            &args.scenario,
            "unknown scenario",
            "use idle, login-burst, collab or editing",
        )
    })?;
    // Every numeric flag is read before anything else is (no file, no network).
    let users_flag = count("--users", &args.users)?;
    let dial_flag = count("--dial-concurrency", &args.dial_concurrency)?;
    let default_ramp = if scenario == Scenario::LoginBurst {
        Duration::ZERO
    } else {
        DEFAULT_RAMP
    };
    let ramp = duration("--ramp", &args.ramp, default_ramp, Duration::ZERO)?;
    let hold = duration("--hold", &args.hold, DEFAULT_HOLD, Duration::ZERO)?;
    if scenario.uses_socket() && hold.is_zero() {
        return Err(UsageError::new(
            "--hold",
            args.hold.as_deref().unwrap_or(""),
            "a socket must be held for some time",
            "give e.g. --hold 30s",
        ));
    }
    // Below 10ms the waits are timer noise.
    let interval = duration(
        "--interval",
        &args.interval,
        scenario.default_interval(),
        Duration::from_millis(10),
    )?;
    let target = super::target_spec(&args.target)?;
    // Load goes to loopback or the target's own address, nowhere else.
    let target_ip = target.address()?;
    let stack_dir = |stack: &str| target.stack_dir(stack);
    let endpoint = match (&args.stack, &args.url) {
        (Some(stack), _) => {
            let stack = exectl_core::spec::resolve_stack_name(Some(stack))?;
            let record = crate::state::record::read(&target.bundle_dir(&stack), &stack)?;
            endpoint::from_stack(&stack, record.as_ref(), target_ip)?
        }
        (None, Some(url)) => {
            let e = endpoint::from_url(url, &AllowList::loopback_only().allow(target_ip))?;
            match &args.host_header {
                Some(h) => endpoint::with_host_header(e, h)?,
                None => e,
            }
        }
        (None, None) => {
            return Err(UsageError::new(
                "--url",
                "",
                "no target",
                endpoint::FRONT_DOOR_FIX,
            ))
        }
    };
    if args.tokens && scenario == Scenario::LoginBurst {
        return Err(UsageError::new(
            "--tokens",
            "true",
            "login-burst measures logins; minted tokens skip them",
            "drop --tokens",
        ));
    }
    // With --stack and no --manifest, the stack's newest manifest (or --pattern's).
    let manifest_dir = match (&args.stack, &args.manifest) {
        (Some(stack), None) => {
            crate::state::manifests::locate(stack, &stack_dir(stack), args.pattern.as_deref())?
        }
        (_, Some(dir)) => dir.clone(),
        (None, None) => std::path::PathBuf::from("manifest"),
    };
    let manifest = Manifest::read(&manifest_dir, args.tokens)?;
    let users = users_flag.unwrap_or(manifest.accounts.len());
    if users > manifest.accounts.len() {
        return Err(UsageError::new(
            "--users",
            users,
            format!(
                "the manifest in {} has only {} accounts (one per user)",
                manifest_dir.display(),
                manifest.accounts.len()
            ),
            "prepare more accounts, or lower --users",
        ));
    }
    if scenario == Scenario::Collab {
        check_rooms(&manifest, users)?;
    }
    let dial_concurrency = match dial_flag {
        Some(n) => n,
        None if scenario == Scenario::LoginBurst => users,
        None => DEFAULT_DIAL_CONCURRENCY,
    }
    .min(users);
    let run_id = super::run_id(args.run_id.as_deref(), "E7-IDLE-1000-001", |now| {
        format!("{}-{users}-{now}", scenario.name())
    })?;
    Ok(LoadOptions {
        scenario,
        endpoint,
        manifest,
        users,
        ramp,
        dial_concurrency,
        hold,
        interval,
        tokens: args.tokens,
        liveness: exectl_core::load::liveness::Bounds::default(),
        run_id,
        progress: !args.quiet,
        live: None,
    })
}

/// collab relays frames between the members of a room: a layout where no room of the first `users`
/// accounts has two members would exchange nothing, and pass on nothing measured.
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

fn check_out(path: &Path) -> Result<(), UsageError> {
    std::fs::File::create(path).map(drop).map_err(|e| {
        UsageError::new(
            "--out",
            path.display(),
            format!("cannot write: {e}"),
            "give a writable file path",
        )
    })
}

/// The front doors recorded for this target's stacks (for a fix that names the right one).
fn recorded_front_doors(stacks_root: Option<&Path>) -> Vec<endpoint::FrontDoor> {
    let Some(Ok(entries)) = stacks_root.map(std::fs::read_dir) else {
        return Vec::new();
    };
    let mut doors: Vec<endpoint::FrontDoor> = entries
        .filter_map(Result::ok)
        .filter_map(|e| {
            let stack = e.file_name().to_string_lossy().into_owned();
            // A hint: a stack whose record cannot be read is left out of it.
            let record = crate::state::record::read(&e.path().join("bundle"), &stack).ok()??;
            Some(endpoint::FrontDoor::from_record(&record))
        })
        .collect();
    doors.sort_by(|a, b| a.stack.cmp(&b.stack));
    doors
}

/// One GET /healthcheck before any load: a 404 means a Host-routed front door (Traefik) that does not
/// route the Host sent — every login would 404 — so refuse with a fix that works. Anything else (a
/// slow or down server included) is the run's to measure.
fn check_routed(args: &LoadArgs, opts: &LoadOptions) -> Result<(), UsageError> {
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(_) => return Ok(()),
    };
    let http = crate::app::Client::new(1, crate::load::TIMEOUTS);
    let r = rt.block_on(
        http.healthcheck(&opts.endpoint)
            .timeout(Duration::from_secs(5))
            .timed(),
    );
    if r.status != "404" {
        return Ok(());
    }
    let (field, value) = match (&args.stack, &args.host_header, &args.url) {
        (Some(s), _, _) => ("--stack", s.clone()),
        (None, Some(h), _) => ("--host-header", h.clone()),
        (None, None, url) => ("--url", url.clone().unwrap_or_default()),
    };
    // This target's stacks: <state>/<target key>/<stack>/bundle/ with each one's record.
    let root = super::target_spec(&args.target)
        .ok()
        .map(|t| crate::state::root().join(t.key()));
    Err(endpoint::not_routed(
        field,
        &value,
        &opts.endpoint,
        &recorded_front_doors(root.as_deref()),
    ))
}

pub fn run(args: &LoadArgs) -> Result<i32> {
    let opts = options(args)?;
    opts.manifest
        .warn_if_tokens_expire_within(opts.ramp + opts.hold);
    if let Some(out) = &args.out {
        check_out(out)?;
    }
    check_routed(args, &opts)?;
    let needs = preflight::Needs {
        sockets: if opts.scenario.uses_socket() {
            opts.users as u64
        } else {
            0
        },
        http: opts.dial_concurrency as u64 + 1,
    };
    let limits = preflight::ensure(needs)?;
    if !args.quiet {
        let hold = if opts.scenario.uses_socket() {
            format!(", hold {:?}", opts.hold)
        } else {
            String::new()
        };
        let host = opts
            .endpoint
            .host_header
            .as_deref()
            .map_or(String::new(), |h| format!(" Host {h}"));
        eprintln!(
            "exectl load {}: {} users → {}{host} (ramp {:?}{hold}, {} in flight; nofile {}, ports {})",
            opts.scenario,
            opts.users,
            opts.endpoint.base,
            opts.ramp,
            opts.dial_concurrency,
            limits.nofile_soft,
            limits
                .ephemeral_ports
                .map_or("?".to_string(), |p| p.to_string())
        );
    }
    // Ctrl-C ends the hold now and prints what was measured, marked interrupted.
    let live = std::sync::Arc::new(crate::load::metrics::Live::default());
    let mut opts = opts;
    opts.live = Some(live.clone());
    crate::interrupt::on_signal(move |_| live.stop())?;
    let summary = runner::run(opts)?;
    let json = serde_json::to_string_pretty(&summary).context("serialising the summary")?;
    if args.json {
        eprint!("{}", summary.render());
        println!("{json}");
    } else {
        print!("{}", summary.render());
    }
    if let Some(out) = &args.out {
        std::fs::write(out, format!("{json}\n"))
            .with_context(|| format!("writing {}", out.display()))?;
    }
    Ok(summary.exit_code())
}
