//! `exectl load`'s flags as `LoadOptions` (and each bench level's: `LoadFlags` is what both commands
//! give): every value checked, the manifest and the stack's record read, the front door allowed (exit 2
//! on any bad input, before a single dial).

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::cli::target::TargetArgs;
use crate::cli::values::{count_flag, duration_flag};
use crate::cli::LoadArgs;
use crate::load::settings::LoadSettings;
use crate::load::{endpoint, AllowList, LoadOptions, Manifest, Scenario, StackRef, DEFAULT_HOLD};
use exectl_core::error::UsageError;

/// The load flags of `exectl load`, and of one level of `exectl bench` (which has no --users: a level).
#[derive(Debug, Clone, Default)]
pub struct LoadFlags {
    pub target: TargetArgs,
    pub scenario: String,
    pub stack: Option<String>,
    pub url: Option<String>,
    pub host_header: Option<String>,
    pub manifest: Option<PathBuf>,
    pub pattern: Option<String>,
    pub users: Option<String>,
    pub ramp: Option<String>,
    pub dial_concurrency: Option<String>,
    pub arrival_rate: Option<String>,
    pub hold: Option<String>,
    pub interval: Option<String>,
    pub ping_after: Option<String>,
    pub tokens: bool,
    pub reconnect: bool,
    pub relogin: bool,
    pub churn: Option<String>,
    pub source_addrs: Option<String>,
    pub processes: Option<String>,
    pub generators: Option<String>,
    pub run_id: Option<String>,
    pub quiet: bool,
}

impl LoadFlags {
    pub fn of(a: &LoadArgs) -> LoadFlags {
        LoadFlags {
            target: a.target.clone(),
            scenario: a.scenario.clone(),
            stack: a.stack.clone(),
            url: a.url.clone(),
            host_header: a.host_header.clone(),
            manifest: a.manifest.clone(),
            pattern: a.pattern.clone(),
            users: a.users.clone(),
            ramp: a.ramp.clone(),
            dial_concurrency: a.dial_concurrency.clone(),
            arrival_rate: a.arrival_rate.clone(),
            hold: a.hold.clone(),
            interval: a.interval.clone(),
            ping_after: a.ping_after.clone(),
            tokens: a.tokens,
            reconnect: a.reconnect,
            relogin: a.relogin,
            churn: a.churn.clone(),
            source_addrs: a.source_addrs.clone(),
            processes: a.processes.clone(),
            generators: a.generators.clone(),
            run_id: a.run_id.clone(),
            quiet: a.quiet,
        }
    }
}

/// Longest --ramp, --hold and --interval: far beyond any run, short of what an Instant can add.
const MAX_DURATION: Duration = Duration::from_secs(30 * 86_400);
/// Most --users and --dial-concurrency (the manifest bounds --users further).
const MAX_USERS: u64 = 10_000_000;

fn duration(
    flag: &str,
    value: &Option<String>,
    min: Duration,
) -> Result<Option<Duration>, UsageError> {
    value
        .as_deref()
        .map(|v| duration_flag(flag, v, min, MAX_DURATION))
        .transpose()
}

fn count(flag: &str, value: &Option<String>) -> Result<Option<usize>, UsageError> {
    value
        .as_deref()
        .map(|v| count_flag(flag, v, 1, MAX_USERS).map(|n| n as usize))
        .transpose()
}

/// `--arrival-rate`: sessions a second, `50` or `50/s` (fractions allowed: `0.5` is one every 2 s); a
/// text that is no number is out of every range.
fn rate(text: &str) -> Result<f64, UsageError> {
    let n = text.trim().strip_suffix("/s").unwrap_or(text.trim());
    crate::load::settings::checked_rate(n.parse().unwrap_or(f64::NAN), text)
}

/// The flags' own values, checked (no file, no network), as settings, and `--users` when given.
pub fn settings(args: &LoadFlags) -> Result<(LoadSettings, Option<usize>), UsageError> {
    let scenario = Scenario::parse(&args.scenario).ok_or_else(|| {
        UsageError::new(
            "scenario",
            &args.scenario,
            "unknown scenario",
            "use idle, login-burst, collab or editing",
        )
    })?;
    // Every numeric flag is read before anything else is (no file, no network).
    let users = count("--users", &args.users)?;
    let dial_concurrency = count("--dial-concurrency", &args.dial_concurrency)?;
    let ramp = duration("--ramp", &args.ramp, Duration::ZERO)?;
    let arrival_rate = args.arrival_rate.as_deref().map(rate).transpose()?;
    let hold = duration("--hold", &args.hold, Duration::ZERO)?.unwrap_or(DEFAULT_HOLD);
    if scenario.uses_socket() && hold.is_zero() {
        return Err(UsageError::new(
            "--hold",
            args.hold.as_deref().unwrap_or(""),
            "a socket must be held for some time",
            "give e.g. --hold 30s",
        ));
    }
    // A socket's mean life under churn: below 100 ms the users do nothing but dial.
    let churn = args
        .churn
        .as_deref()
        .map(|v| {
            duration_flag(
                "--churn",
                v,
                Duration::from_millis(100),
                Duration::from_secs(30 * 24 * 3600),
            )
        })
        .transpose()?;
    if churn.is_some() && !scenario.uses_socket() {
        return Err(UsageError::new(
            "--churn",
            args.churn.as_deref().unwrap_or(""),
            format!("{} holds no socket to leave", scenario.name()),
            "use it with idle, collab or editing",
        ));
    }
    // Below 10ms the waits are timer noise.
    let interval = duration("--interval", &args.interval, Duration::from_millis(10))?;
    // Under a second, pings are the load; above an hour, no hold would ever ping.
    let ping_after = args
        .ping_after
        .as_deref()
        .map(|v| {
            duration_flag(
                "--ping-after",
                v,
                Duration::from_secs(1),
                Duration::from_secs(3600),
            )
        })
        .transpose()?;
    let sources = match &args.source_addrs {
        Some(t) => exectl_core::load::sources::parse(t)?,
        None => Vec::new(),
    };
    let processes = args
        .processes
        .as_deref()
        .map(|v| {
            count_flag(
                "--processes",
                v,
                1,
                exectl_core::load::slices::MAX_PROCESSES as u64,
            )
            .map(|n| n as usize)
        })
        .transpose()?;
    let generators = match &args.generators {
        Some(v) => crate::cli::target::generators(&args.target, v)?,
        None => crate::load::Generators::default(),
    };
    let settings = LoadSettings {
        scenario,
        ramp,
        dial_concurrency,
        hold,
        interval,
        ping_after,
        tokens: args.tokens,
        sources,
        processes,
        generators,
        pattern: args.pattern.clone(),
        progress: !args.quiet,
        arrival_rate,
        // A user that left comes back; if its dial fails, as --reconnect does.
        reconnect: args.reconnect || churn.is_some(),
        relogin: args.relogin,
        churn,
    };
    settings.check()?;
    Ok((settings, users))
}

/// The flags' own values checked, before the stack they load exists (bench, and sweep before its first
/// deploy, check a level's flags this way), as settings.
pub fn check(args: &LoadFlags) -> Result<LoadSettings, UsageError> {
    let (s, _) = settings(args)?;
    if let (Some(text), false) = (&args.source_addrs, s.sources.is_empty()) {
        // The front door is --url's address, or the stack's on the target.
        let target = crate::cli::target::target_spec(&args.target)?.address()?;
        let door = match &args.url {
            Some(u) => endpoint::from_url(u, &AllowList::loopback_only().allow(target))?
                .addr
                .ip(),
            None => target,
        };
        exectl_core::load::sources::check_family(&s.sources, door, text)?;
    }
    Ok(s)
}

/// The flags, checked, as a run (no network, no limits yet).
pub fn load(args: &LoadFlags) -> Result<LoadOptions, UsageError> {
    let (settings, users) = settings(args)?;
    let target = crate::cli::target::target_spec(&args.target)?;
    let run_id = args
        .run_id
        .as_deref()
        .map(|id| crate::cli::values::run_id(Some(id), "E7-IDLE-1000-001", |_| String::new()))
        .transpose()?;
    let front_door_check = |door: &endpoint::Endpoint| match &args.source_addrs {
        Some(text) => {
            exectl_core::load::sources::check_family(&settings.sources, door.addr.ip(), text)
        }
        None => Ok(()),
    };
    // Load goes to loopback or the target's own address, nowhere else.
    let target_ip = target.address()?;
    let stack_dir = |stack: &str| target.stack_dir(stack);
    let (endpoint, stacks) = match (&args.stack, &args.url) {
        (Some(stack), _) => {
            let (e, stack) = crate::load::settings::front_door(&target, stack)?;
            (e, vec![stack])
        }
        (None, Some(url)) => {
            let e = endpoint::from_url(url, &AllowList::loopback_only().allow(target_ip))?;
            let e = match &args.host_header {
                Some(h) => endpoint::with_host_header(e, h)?,
                None => e,
            };
            // A --url that a recorded stack of this target publishes is that stack's front door.
            let root = crate::state::root().join(target.key());
            let stacks = recorded_front_doors(Some(&root))
                .into_iter()
                .filter(|d| d.fronts(&e, target_ip))
                .map(|d| StackRef {
                    dir: stack_dir(&d.stack),
                    name: d.stack,
                })
                .collect();
            (e, stacks)
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
    front_door_check(&endpoint)?;
    // With --stack and no --manifest, the stack's newest manifest (or --pattern's).
    let manifest_dir = match (&stacks[..], &args.stack, &args.manifest) {
        ([s], Some(_), None) => {
            crate::state::manifests::locate(&s.name, &s.dir, args.pattern.as_deref())?
        }
        (_, _, Some(dir)) => dir.clone(),
        _ => PathBuf::from("manifest"),
    };
    let manifest = Manifest::read(&manifest_dir, settings.tokens)?;
    settings.run(endpoint, stacks, manifest, users, run_id)
}

/// The front doors recorded for this target's stacks (`stacks_root`: its folder of the state), in the
/// stacks' order.
pub fn recorded_front_doors(stacks_root: Option<&Path>) -> Vec<endpoint::FrontDoor> {
    let Some(Ok(entries)) = stacks_root.map(std::fs::read_dir) else {
        return Vec::new();
    };
    let mut doors: Vec<endpoint::FrontDoor> = entries
        .filter_map(Result::ok)
        .filter_map(|e| {
            let stack = e.file_name().to_string_lossy().into_owned();
            // A hint: a stack whose record cannot be read is left out of it.
            let record =
                crate::state::record::read(&crate::state::bundle_dir(&e.path()), &stack).ok()??;
            Some(endpoint::FrontDoor::from_record(&record))
        })
        .collect();
    doors.sort_by(|a, b| a.stack.cmp(&b.stack));
    doors
}

pub fn check_out(path: &Path) -> Result<(), UsageError> {
    std::fs::File::create(path).map(drop).map_err(|e| {
        UsageError::new(
            "--out",
            path.display(),
            format!("cannot write: {e}"),
            "give a writable file path",
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::manifest::{Account, Project, Role};
    use exectl_core::load::liveness::Bounds;

    #[test]
    fn the_liveness_cadence_is_the_flags_or_scales_with_the_users() {
        let d = tempfile::tempdir().unwrap();
        let uuid = "0b8e6f6e-8a43-4f55-9d3c-2f1b7b0a9e11";
        let accounts: Vec<Account> = (0..3)
            .map(|i| Account {
                email: format!("u{i}@x.org"),
                password: "pw".into(),
                project_uuid: uuid.into(),
                role: Role::Owner,
            })
            .collect();
        let projects = [Project {
            uuid: uuid.into(),
            owner_email: "u0@x.org".into(),
        }];
        Manifest::write(d.path(), &accounts, &projects, None).unwrap();
        let flags = |ping_after: Option<&str>| LoadFlags {
            scenario: "idle".into(),
            url: Some("http://127.0.0.1:8090".into()),
            manifest: Some(d.path().to_path_buf()),
            ping_after: ping_after.map(str::to_string),
            ..LoadFlags::default()
        };
        assert_eq!(load(&flags(None)).unwrap().liveness, Bounds::for_users(3));
        let set = load(&flags(Some("40s"))).unwrap().liveness;
        assert_eq!((set.ping_after_ms, set.answer_within_ms), (40_000, 10_000));
        assert!(
            !set.follow_server,
            "a given --ping-after is kept whatever the server does"
        );
        let e = load(&flags(Some("500ms"))).unwrap_err();
        assert_eq!(e.field, "--ping-after");
    }
}
