//! A load run planned: what a user asks for (`LoadRequest`: `exectl load`'s flags, or a program's
//! fields) made the run's `LoadOptions` — every value checked, the manifest and the stack's record
//! read, the front door allowed (exit 2 on any bad input, before a single dial) — and the front door
//! knocked on before the first user (`check_front_door`, exit 3 or 2).

use std::path::{Path, PathBuf};

use anyhow::Result;

use crate::load::settings::LoadSettings;
use crate::load::{endpoint, AllowList, LoadOptions, Manifest, StackRef};
use crate::ops::values::count_flag;
use exectl_core::bench::settings::{BenchInput, MAX_USERS};
use exectl_core::error::UsageError;

/// A load run as a user asks for it (`exectl load`'s flags, or a program's fields): the workload as
/// typed bench settings (`BenchInput`: the one reading of hold, ramp, …), and where it goes.
#[derive(Debug, Clone, Default)]
pub struct LoadRequest {
    pub target: crate::sut::target_flags::TargetFlags,
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

fn count(flag: &str, value: &Option<String>) -> Result<Option<usize>, UsageError> {
    value
        .as_deref()
        .map(|v| count_flag(flag, v, 1, MAX_USERS).map(|n| n as usize))
        .transpose()
}

/// The flags' own values, checked (no file, no network), as settings, and `--users` when given.
pub fn settings(args: &LoadRequest) -> Result<(LoadSettings, Option<usize>), UsageError> {
    let users = count("--users", &args.users)?;
    let generators =
        crate::load::Generators::given(args.input.generators.as_deref(), &args.target)?;
    let settings = LoadSettings::from_input(&args.input, generators, args.reconnect, !args.quiet)?;
    Ok((settings, users))
}

/// The request, checked, as a run (no network, no limits yet).
pub fn plan(args: &LoadRequest) -> Result<LoadOptions, UsageError> {
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

/// Before any load, the front door (`load::front_door`): unreachable is exit 3. A 404 from its
/// /healthcheck means no app behind that front door — every login would 404 — so refuse with a fix that
/// works (a Traefik not routing the Host sent is named as such when the front door is Traefik, a path
/// that no app answers under as such: `endpoint::not_routed`).
pub fn check_front_door(args: &LoadRequest, opts: &LoadOptions) -> Result<()> {
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(_) => return Ok(()),
    };
    let knocked = rt.block_on(crate::load::front_door::knock(
        &opts.endpoint,
        args.stack.as_deref(),
    ))?;
    let Some(body) = knocked else {
        return Ok(());
    };
    let (field, value) = match (&args.stack, &args.host_header, &args.url) {
        (Some(s), _, _) => ("--stack", s.clone()),
        (None, Some(h), _) => ("--host-header", h.clone()),
        (None, None, url) => ("--url", url.clone().unwrap_or_default()),
    };
    // This target's stacks: <state>/<target key>/<stack>/bundle/ with each one's record.
    let root = crate::ops::spec_source::target_spec(&args.target)
        .ok()
        .map(|t| crate::state::root().join(t.key()));
    Err(endpoint::not_routed(
        field,
        &value,
        &opts.endpoint,
        &recorded_front_doors(root.as_deref()),
        &body,
    )
    .into())
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
            LoadRequest {
                input,
                url: Some("http://127.0.0.1:8090".into()),
                manifest: Some(d.path().to_path_buf()),
                ..LoadRequest::default()
            }
        };
        assert_eq!(plan(&flags(None)).unwrap().liveness, Bounds::for_users(3));
        let set = plan(&flags(Some("40s"))).unwrap().liveness;
        assert_eq!((set.ping_after_ms, set.answer_within_ms), (40_000, 10_000));
        assert!(
            !set.follow_server,
            "a given --ping-after is kept whatever the server does"
        );
        let mut input = BenchInput::default();
        assert!(input.set("ping_after", "500ms").is_err(), "under a second");
    }
}
