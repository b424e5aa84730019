//! Checks before anything is created: the images are on the target (else pulled), and the target can
//! give what the spec asks (CPUs, memory, open files). Each failure names the flag that fixes it.

use crate::error::UsageError;
use crate::spec::Spec;
use crate::target::Target;
use anyhow::{Context, Result};
use bollard::query_parameters::CreateImageOptionsBuilder;
use futures_util::StreamExt;

/// Pure: compare the spec with what the target offers.
pub fn check_capacity(
    spec: &Spec,
    ncpu: Option<i64>,
    mem_total: Option<i64>,
    max_nofile: Option<u64>,
) -> Result<(), UsageError> {
    let cpus: f64 = spec.cpus.parse().unwrap_or(0.0);
    if let Some(n) = ncpu {
        if cpus > n as f64 {
            return Err(UsageError::new(
                "--cpus",
                &spec.cpus,
                format!("the target has {n} CPUs and the engine refuses a larger limit"),
                format!("pass --cpus {n} or less"),
            ));
        }
    }
    if let Some(m) = mem_total {
        if spec.memory_bytes > m as u64 {
            return Err(UsageError::new(
                "--memory",
                &spec.memory,
                format!("the target has {} MiB of memory", m >> 20),
                format!("pass --memory {}m or less", m >> 20),
            ));
        }
    }
    if let Some(max) = max_nofile {
        if spec.nofile > max {
            return Err(UsageError::new(
                "--nofile",
                spec.nofile,
                format!(
                    "the target allows at most {max} open files per container (the engine's hard limit)"
                ),
                format!(
                    "pass --nofile {max} or less (with --worker-rlimit-nofile and --worker-connections to match), or raise the engine's LimitNOFILE"
                ),
            ));
        }
    }
    Ok(())
}

/// A stack whose database volume survives while its stored secrets are gone would get new passwords the
/// old data refuses (the app then never turns healthy). Refuse before anything changes.
pub fn secrets_match_data(
    stack: &str,
    observed: &crate::plan::Observed,
    secrets_stored: bool,
    secrets_path: &std::path::Path,
) -> Result<(), UsageError> {
    let data: Vec<&String> = observed
        .volumes
        .iter()
        .filter(|v| v.ends_with("-db-data"))
        .collect();
    if secrets_stored || data.is_empty() {
        return Ok(());
    }
    Err(UsageError::new(
        "--stack",
        stack,
        format!(
            "its database volume {} exists from an earlier deploy, but its secrets ({}) are gone, so the database would refuse new passwords",
            data[0],
            secrets_path.display()
        ),
        format!("restore that file, or remove the old data with `exectl teardown --stack {stack} --purge`"),
    ))
}

pub async fn capacity(target: &Target, spec: &Spec) -> Result<()> {
    let info = target
        .docker
        .info()
        .await
        .context("reading the engine's info")?;
    check_capacity(spec, info.ncpu, info.mem_total, target.max_nofile().await)?;
    Ok(())
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
    progress: bool,
) -> Result<Vec<String>> {
    let mut missing = Vec::new();
    for image in images {
        if target.docker.inspect_image(image).await.is_err() {
            missing.push(image.clone());
        }
    }
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
        if progress {
            eprintln!("sending image {image} to {}", target.describe());
        }
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
