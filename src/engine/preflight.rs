//! Checks before anything is created: the images are on the target (else pulled), and the target can
//! give what the spec asks (CPUs, memory, open files). Each failure names the flag that fixes it.

use crate::sut::Target;
use anyhow::{Context, Result};
use bollard::query_parameters::CreateImageOptionsBuilder;
use exectl_core::capacity::check_capacity;
use exectl_core::error::UsageError;
use exectl_core::spec::Spec;
use futures_util::StreamExt;

/// A stack whose database volume survives while its stored secrets are gone would get new passwords the
/// old data refuses (the app then never turns healthy). Refuse before anything changes.
pub fn secrets_match_data(
    stack: &str,
    observed: &exectl_core::plan::Observed,
    secrets_stored: bool,
    secrets_path: &std::path::Path,
) -> Option<UsageError> {
    let data = db_volume(stack, observed)?;
    if secrets_stored {
        return None;
    }
    Some(UsageError::new(
        "--stack",
        stack,
        format!(
            "its database volume {data} exists from an earlier deploy, but its secrets ({}) are gone, so the database would refuse new passwords",
            secrets_path.display()
        ),
        format!("restore that file, or remove the old data with `exectl teardown --stack {stack} --purge`"),
    ))
}

/// The stack's database volume, if the target has it.
fn db_volume<'a>(stack: &str, observed: &'a exectl_core::plan::Observed) -> Option<&'a String> {
    observed
        .volumes
        .iter()
        .find(|v| exectl_core::naming::is_db_volume(stack, v))
}

/// Deploying a `--db` other than the engine whose data the database volume holds would remove the old
/// database and start the new one on a data folder it cannot read (it crash-loops until the wait
/// timeout, and the stack is left with none). `found` is what the volume itself holds
/// (`db_data::read`), not what a record says: a record can be lost, and then the data is still there.
pub fn db_matches_data(
    spec: &Spec,
    volume: &str,
    found: Option<&super::db_data::Found>,
) -> Option<UsageError> {
    let wanted = spec.db_service()?;
    let found = found?;
    if found.db.name() == wanted {
        return None;
    }
    Some(UsageError::new(
        "--db",
        wanted,
        format!(
            "the stack's database volume {volume} holds {} data ({} found in it), which {wanted} cannot read",
            found.engine(),
            found.evidence
        ),
        format!(
            "deploy with --db {} (the data's engine), or remove the old data first with `exectl teardown --stack {} --purge`",
            found.db.name(),
            spec.stack
        ),
    ))
}

/// `db_matches_data` for each of `specs` (one stack's, e.g. a sweep's points), the stack's database
/// volume read once: what deploy's preflight would refuse at each, known before the first deploys.
pub async fn db_data_refusals(target: &Target, specs: &[Spec]) -> Result<Vec<UsageError>> {
    let Some(first) = specs.first() else {
        return Ok(Vec::new());
    };
    if specs.iter().all(|s| s.db_service().is_none()) {
        return Ok(Vec::new());
    }
    let observed = super::observe::observe(&target.docker, &first.stack).await?;
    let Some(volume) = db_volume(&first.stack, &observed) else {
        return Ok(Vec::new());
    };
    let found = super::db_data::read(target, &first.stack, volume, &probe_images(first)).await?;
    let mut refused: Vec<UsageError> = Vec::new();
    for e in specs
        .iter()
        .filter_map(|s| db_matches_data(s, volume, found.as_ref()))
    {
        if !refused.contains(&e) {
            refused.push(e);
        }
    }
    Ok(refused)
}

/// What deploy would refuse at each of `specs` (one stack's, e.g. a sweep's points) for the target's
/// limits — a default it cannot fit (`Spec::fit`: a given worker_connections the fitted nofile cannot
/// hold), CPUs, memory or open files beyond what it allows (`check_capacity`) — from one read of them,
/// the open-files limit included. Each refusal once.
pub async fn capacity_refusals(target: &Target, specs: &[Spec]) -> Result<Vec<UsageError>> {
    if specs.is_empty() {
        return Ok(Vec::new());
    }
    let o = read_offers(target, true).await?;
    let mut refused: Vec<UsageError> = Vec::new();
    for s in specs {
        let found = match s.fit(&o) {
            Ok((fitted, _)) => check_capacity(&fitted, o.ncpu, o.mem_total, o.max_nofile),
            Err(e) => vec![e],
        };
        for e in found {
            if !refused.contains(&e) {
                refused.push(e);
            }
        }
    }
    Ok(refused)
}

/// A container on the target, as far as conflicts go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Existing {
    pub name: String,
    /// Its `exectl.stack` label, if it has one.
    pub stack: Option<String>,
    /// Host ports it publishes.
    pub published: Vec<u16>,
}

/// Pure: names and ports the stack needs that something else holds. An unlabelled (or another stack's)
/// container under one of the stack's names, or a published port held by another container or a process
/// outside Docker, is found here, before anything is created; the foreign container is never touched.
/// Every one found.
pub fn check_conflicts(
    desired: &super::desired::Desired,
    existing: &[Existing],
    listening: &[u16],
) -> Vec<UsageError> {
    let stack = &desired.stack;
    let ours = |e: &&Existing| e.stack.as_deref() == Some(stack.as_str());
    let mut out = Vec::new();
    for s in &desired.services {
        if let Some(other) = existing
            .iter()
            .find(|e| e.name == s.container_name && !ours(e))
        {
            let whose = match &other.stack {
                Some(st) => format!("it belongs to stack {st}"),
                None => "exectl did not create it (no exectl.stack label)".to_string(),
            };
            out.push(UsageError::new(
                "--stack",
                stack,
                format!("a container named {} already exists and {whose}", other.name),
                "remove or rename that container yourself (exectl never touches it), or deploy under another --stack",
            ));
        }
    }
    for s in &desired.services {
        let flag = if s.name == "nginx" {
            "--lb-port"
        } else {
            "--http-port"
        };
        for p in &s.service.ports {
            let Some(port) = p.split_once(':').and_then(|(h, _)| h.parse::<u16>().ok()) else {
                continue;
            };
            let held_by_us = existing
                .iter()
                .filter(ours)
                .any(|e| e.published.contains(&port));
            if let Some(other) = existing
                .iter()
                .find(|e| !ours(e) && e.published.contains(&port))
            {
                out.push(UsageError::new(
                    flag,
                    port,
                    format!(
                        "port {port} is already published on the target by container {}",
                        other.name
                    ),
                    format!("pass another {flag}, or stop {}", other.name),
                ));
            } else if listening.contains(&port) && !held_by_us {
                out.push(UsageError::new(
                    flag,
                    port,
                    format!("port {port} is already in use on the target (a process outside this stack listens on it)"),
                    format!("pass another {flag}, or stop what listens on {port}"),
                ));
            }
        }
    }
    out
}

pub use crate::shell::scripts::ports::parse_listening;

/// Containers and listening ports on the target, then `check_conflicts`.
pub async fn conflicts(
    target: &Target,
    desired: &super::desired::Desired,
) -> Result<Vec<UsageError>> {
    let containers = target
        .docker
        .list_containers(Some(
            bollard::query_parameters::ListContainersOptionsBuilder::default()
                .all(true)
                .build(),
        ))
        .await
        .context("listing the target's containers")?;
    let existing: Vec<Existing> = containers
        .into_iter()
        .map(|c| Existing {
            name: super::observe::summary_name(c.names).unwrap_or_default(),
            stack: c
                .labels
                .and_then(|l| l.get(super::desired::LABEL_STACK).cloned()),
            published: c
                .ports
                .unwrap_or_default()
                .iter()
                .filter_map(|p| p.public_port)
                .collect(),
        })
        .collect();
    let tcp = target
        .host_shell(&crate::shell::scripts::ports::listening())
        .await
        .context("reading the target's listening ports")?;
    Ok(check_conflicts(desired, &existing, &parse_listening(&tcp)))
}

/// Every check deploy makes before it changes anything (images aside: deploy pulls them, plan lists
/// them), each refusal found: none, one (that error) or several (`UsageErrors`), all exit 2. `plan` runs
/// the same, so it shows everything deploy would refuse. A failure to check at all is that failure.
///
/// The checks run concurrently. Those that guard what a container start would meet are made only when
/// the plan starts one (`Starts`): the database volume's probe when the database container is created,
/// recreated or started, the engine's open-files limit when any container is. A container kept running
/// already has what they guard (and deploy reads its limits back after).
pub async fn check(
    target: &Target,
    spec: &Spec,
    desired: &super::desired::Desired,
    observed: &exectl_core::plan::Observed,
) -> Result<()> {
    let mut refused = Vec::new();
    let secrets_file = crate::state::secrets_file(&target.stack_dir(&spec.stack));
    refused.extend(secrets_match_data(
        &spec.stack,
        observed,
        secrets_file.exists(),
        &secrets_file,
    ));
    let starts = Starts::of(desired, observed);
    let db_data = async {
        match (db_volume(&spec.stack, observed), spec.db_service()) {
            (Some(volume), Some(db)) if starts.service(db) => {
                let found =
                    super::db_data::read(target, &spec.stack, volume, &probe_images(spec)).await?;
                Ok(db_matches_data(spec, volume, found.as_ref()))
            }
            _ => Ok::<_, anyhow::Error>(None),
        }
    };
    // Each runs to its end (the volume's probe removes its container), then the first failure is said.
    let (db_data, capacity, conflicts) = tokio::join!(
        db_data,
        capacity(target, spec, starts.any()),
        conflicts(target, desired)
    );
    refused.extend(db_data?);
    refused.extend(capacity?);
    refused.extend(conflicts?);
    exectl_core::error::UsageErrors::result(refused)
}

/// Which services the plan of `desired` over `observed` starts a container for (created, recreated, or
/// kept but not running). Every one when there is no plan (its error is deploy's to say).
pub struct Starts(Option<Vec<String>>);

impl Starts {
    pub fn of(desired: &super::desired::Desired, observed: &exectl_core::plan::Observed) -> Starts {
        use exectl_core::plan::Action;
        Starts(exectl_core::plan::plan(desired, observed).ok().map(|p| {
            p.actions
                .iter()
                .filter(|a| !matches!(a, Action::Keep { start: false, .. } | Action::Remove { .. }))
                .map(|a| a.service().to_string())
                .collect()
        }))
    }

    pub fn service(&self, name: &str) -> bool {
        self.0.as_ref().is_none_or(|s| s.iter().any(|n| n == name))
    }

    pub fn any(&self) -> bool {
        self.0.as_ref().is_none_or(|s| !s.is_empty())
    }
}

/// Images the volume probe may use, likeliest present first: the databases' (the one that wrote the
/// data is there), then the stack's others.
fn probe_images(spec: &Spec) -> Vec<&str> {
    let i = &spec.images;
    vec![
        &i.mariadb,
        &i.postgres,
        &i.redis,
        &i.nginx,
        &i.traefik,
        &i.app,
    ]
    .into_iter()
    .map(String::as_str)
    .collect()
}

/// The images the stack uses that the target does not have.
pub async fn missing_images(target: &Target, images: &[String]) -> Vec<String> {
    let mut missing = Vec::new();
    for image in images {
        if target.docker.inspect_image(image).await.is_err() {
            missing.push(image.clone());
        }
    }
    missing
}

/// What the target offers for fitting `spec`'s defaults to it (`Spec::fit`): the engine's CPUs and
/// memory, and its open-files limit (a host command) when nofile is left to its default. Read at every
/// deploy and plan, whatever they start, so that one spec fits one target the same way every time.
pub async fn offers(target: &Target, spec: &Spec) -> Result<exectl_core::spec::Offers> {
    read_offers(target, spec.given.nofile.is_none()).await
}

/// The engine's CPUs and memory, and its open-files limit (a host command) only with `nofile`.
async fn read_offers(target: &Target, nofile: bool) -> Result<exectl_core::spec::Offers> {
    let info = async {
        target
            .docker
            .info()
            .await
            .context("reading the engine's info")
    };
    let max_nofile = async {
        match nofile {
            true => target.max_nofile().await,
            false => None,
        }
    };
    let (info, max_nofile) = tokio::join!(info, max_nofile);
    let info = info?;
    Ok(exectl_core::spec::Offers {
        ncpu: info.ncpu,
        mem_total: info.mem_total,
        max_nofile,
    })
}

/// What the target offers against the spec. The engine's open-files limit (a host command) is read only
/// with `nofile`: when a container is to start with the spec's.
pub async fn capacity(target: &Target, spec: &Spec, nofile: bool) -> Result<Vec<UsageError>> {
    let o = read_offers(target, nofile).await?;
    Ok(check_capacity(spec, o.ncpu, o.mem_total, o.max_nofile))
}

/// Every image present on the target, pulling the missing ones. Returns the images it pulled.
pub async fn images(target: &Target, images: &[String]) -> Result<Vec<String>> {
    let mut pulled = Vec::new();
    for image in images {
        if target.docker.inspect_image(image).await.is_ok() {
            continue;
        }
        let mut stream = target.docker.create_image(
            Some(
                CreateImageOptionsBuilder::default()
                    .from_image(image)
                    .build(),
            ),
            None,
            None,
        );
        let mut failure = None;
        while let Some(item) = stream.next().await {
            if let Err(e) = item {
                failure = Some(e.to_string());
                break;
            }
        }
        if let Some(e) = failure {
            return Err(UsageError::new(
                "image",
                image,
                format!("it is not on the target and pulling it failed ({e})"),
                "build or load it on the target (here: bash images/build.sh, and --images images/fixtures.yaml)",
            )
            .into());
        }
        pulled.push(image.clone());
    }
    Ok(pulled)
}

/// `--load-images`: every image missing on a remote target sent from the local engine (docker save |
/// docker load through the SSH tunnel). Returns the images sent.
pub async fn send_images(
    target: &Target,
    images: &[String],
    on_send: &(dyn Fn(&str) + Sync),
) -> Result<Vec<String>> {
    let missing = missing_images(target, images).await;
    if missing.is_empty() {
        return Ok(missing);
    }
    let local = Target::local()
        .await
        .context("--load-images reads images from the local engine")?;
    for image in &missing {
        if local.docker.inspect_image(image).await.is_err() {
            return Err(UsageError::new(
                "--load-images",
                image,
                "it is missing on the target and on the local engine too",
                "build or pull it locally first (fixtures: bash images/build)",
            )
            .into());
        }
        on_send(image);
        let tar = local.docker.export_image(image);
        let mut load = target.docker.import_image_stream(
            bollard::query_parameters::ImportImageOptionsBuilder::default()
                .quiet(true)
                .build(),
            tar,
            None,
        );
        while let Some(item) = load.next().await {
            item.with_context(|| format!("loading {image} into {}", target.describe()))?;
        }
    }
    Ok(missing)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::db_data::Found;
    use exectl_core::spec::Db;

    fn spec(flags: &[(&'static str, &str)]) -> Spec {
        exectl_core::spec::resolve(exectl_core::spec::ha_input(flags)).unwrap()
    }

    #[test]
    fn only_a_start_makes_the_checks_a_start_needs() {
        use exectl_core::plan::{Observed, ObservedContainer};
        let secrets = crate::state::secrets::Secrets::parse(
            "APP_SECRET=a\nAPI_JWT_SECRET=b\nDB_PASSWORD=c\nDB_ROOT_PASSWORD=d\nADMIN_PASSWORD=e\n",
        );
        let d = exectl_core::pipeline::desired_state(
            &spec(&[]),
            &secrets,
            &exectl_core::render::Templates::embedded(),
            std::path::Path::new("/srv/exe"),
        )
        .unwrap()
        .desired;
        let running = |state: &str| Observed {
            containers: d
                .services
                .iter()
                .map(|s| ObservedContainer {
                    name: s.container_name.clone(),
                    service: s.name.clone(),
                    hash: s.hash.clone(),
                    parts: s.parts.clone(),
                    state: if s.name == "postgres" {
                        state
                    } else {
                        "running"
                    }
                    .into(),
                })
                .collect(),
            networks: vec![d.network.clone()],
            volumes: d.volumes.clone(),
        };
        let kept = Starts::of(&d, &running("running"));
        assert!(!kept.any() && !kept.service("postgres"));
        let stopped = Starts::of(&d, &running("exited"));
        assert!(stopped.any() && stopped.service("postgres") && !stopped.service("redis"));
        let mut changed = running("running");
        changed.containers.retain(|c| c.service != "postgres");
        assert!(Starts::of(&d, &changed).service("postgres"));
        let fresh = Starts::of(&d, &Observed::default());
        assert!(fresh.any() && fresh.service("postgres") && fresh.service("nginx"));
    }

    #[test]
    fn the_db_is_refused_on_the_other_engines_data_only() {
        let volume = "exectl-exe-db-data";
        let maria = Found {
            db: Db::Mariadb,
            evidence: "ibdata1, mysql/".into(),
        };
        let pg = spec(&[("--db", "postgres")]);
        let e = db_matches_data(&pg, volume, Some(&maria)).unwrap();
        assert_eq!((e.field.as_str(), e.value.as_str()), ("--db", "postgres"));
        assert!(
            e.problem
                .contains("holds MariaDB data (ibdata1, mysql/ found in it)"),
            "{e}"
        );
        assert!(e.fix.starts_with("deploy with --db mariadb"), "{e}");
        assert_eq!(
            db_matches_data(&spec(&[("--db", "mariadb")]), volume, Some(&maria)),
            None
        );
        // Nothing told (a new volume, or data of neither engine): no refusal rests on a guess.
        assert_eq!(db_matches_data(&pg, volume, None), None);
    }
}
