//! `exectl load`'s flags as `LoadOptions` (and each bench level's: `LoadFlags` is what both commands
//! give): every value checked, the manifest and the stack's record read, the front door allowed (exit 2
//! on any bad input, before a single dial).

use std::path::{Path, PathBuf};

use crate::cli::LoadArgs;
use crate::load::settings::LoadSettings;
use crate::load::{endpoint, AllowList, LoadOptions, Manifest, StackRef};
use crate::ops::values::count_flag;
use crate::sut::target_flags::TargetFlags;
use exectl_core::bench::settings::{BenchInput, MAX_USERS};
use exectl_core::error::UsageError;

/// The load flags of `exectl load`, and of one level of `exectl bench` (which has no --users: a level):
/// the workload as typed bench settings (`BenchInput`: the one reading of --hold, --ramp, …), and where
/// it goes.
#[derive(Debug, Clone, Default)]
pub struct LoadFlags {
    pub target: TargetFlags,
    pub input: BenchInput,
    pub stack: Option<String>,
    pub url: Option<String>,
    pub host_header: Option<String>,
    pub manifest: Option<PathBuf>,
    pub users: Option<String>,
    pub reconnect: bool,
    pub run_id: Option<String>,
    pub quiet: bool,
}

impl LoadFlags {
    /// `exectl load`'s flags, each workload value read by its bench setting (exit 2 naming the flag).
    pub fn of(a: &LoadArgs) -> Result<LoadFlags, UsageError> {
        // --users first, as before: every numeric flag is read before anything else is.
        count("--users", &a.users)?;
        // The scenario is load's positional argument, not a flag.
        let mut input = BenchInput::default();
        input
            .set("scenario", &a.scenario)
            .map_err(|i| UsageError::new("scenario", &a.scenario, i.problem, i.fix))?;
        let input = input.over(&a.workload.0.input()?);
        Ok(LoadFlags {
            target: a.target.flags(),
            input,
            stack: a.stack.clone(),
            url: a.url.clone(),
            host_header: a.host_header.clone(),
            manifest: a.manifest.clone(),
            users: a.users.clone(),
            reconnect: a.reconnect,
            run_id: a.run_id.clone(),
            quiet: a.quiet,
        })
    }
}

fn count(flag: &str, value: &Option<String>) -> Result<Option<usize>, UsageError> {
    value
        .as_deref()
        .map(|v| count_flag(flag, v, 1, MAX_USERS).map(|n| n as usize))
        .transpose()
}

/// The flags' own values, checked (no file, no network), as settings, and `--users` when given.
pub fn settings(args: &LoadFlags) -> Result<(LoadSettings, Option<usize>), UsageError> {
    let users = count("--users", &args.users)?;
    let generators = match &args.input.generators {
        Some(v) => crate::load::Generators::parse(&args.target, v)?,
        None => crate::load::Generators::default(),
    };
    let settings = LoadSettings::from_input(&args.input, generators, args.reconnect, !args.quiet)?;
    Ok((settings, users))
}

/// The flags, checked, as a run (no network, no limits yet).
pub fn load(args: &LoadFlags) -> Result<LoadOptions, UsageError> {
    let (settings, users) = settings(args)?;
    let target = crate::ops::spec_source::target_spec(&args.target)?;
    let run_id = args
        .run_id
        .as_deref()
        .map(|id| crate::ops::values::run_id(Some(id), "E7-IDLE-1000-001", |_| String::new()))
        .transpose()?;
    let front_door_check = |door: &endpoint::Endpoint| match &args.input.source_addrs {
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
            crate::state::manifests::locate(&s.name, &s.dir, settings.pattern.as_deref())?
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
        let flags = |ping_after: Option<&str>| {
            let mut input = BenchInput::default();
            if let Some(p) = ping_after {
                input.set("ping_after", p).unwrap();
            }
            LoadFlags {
                input,
                url: Some("http://127.0.0.1:8090".into()),
                manifest: Some(d.path().to_path_buf()),
                ..LoadFlags::default()
            }
        };
        assert_eq!(load(&flags(None)).unwrap().liveness, Bounds::for_users(3));
        let set = load(&flags(Some("40s"))).unwrap().liveness;
        assert_eq!((set.ping_after_ms, set.answer_within_ms), (40_000, 10_000));
        assert!(
            !set.follow_server,
            "a given --ping-after is kept whatever the server does"
        );
        let mut input = BenchInput::default();
        assert!(input.set("ping_after", "500ms").is_err(), "under a second");
    }
}
