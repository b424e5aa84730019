//! Which database engine's data the stack's database volume holds, read from the volume itself (a
//! record file can be lost or removed; the data cannot lie). Read without changing anything: a container
//! is created, never started, from an image already on the target with the volume mounted read-only, and
//! the engine's archive stat (`HEAD /containers/ID/archive`, what `docker cp` asks first) looks for the
//! files each engine leaves at the top of its data folder. Those are engine API calls only, so they work
//! the same on the local engine and through the SSH tunnel, with no shell in the image and no access to
//! the engine's data root on the host.

use crate::sut::Target;
use anyhow::{Context, Result};
use bollard::models::{ContainerCreateBody, HostConfig};
use bollard::query_parameters::{
    ContainerArchiveInfoOptionsBuilder, CreateContainerOptionsBuilder, ListImagesOptions,
};
use exectl_core::spec::Db;
use std::collections::HashMap;

/// Where the probe container sees the volume.
const MOUNT: &str = "/exectl-db-data";

/// Files each engine leaves at the top of its data folder: PostgreSQL's version file; MariaDB's system
/// tablespace and its `mysql` schema folder.
const MARKERS: [(&str, Db); 3] = [
    ("PG_VERSION", Db::Postgres),
    ("ibdata1", Db::Mariadb),
    ("mysql/", Db::Mariadb),
];

/// The engine whose data was found, and the files that show it (`ibdata1, mysql/`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    pub db: Db,
    pub evidence: String,
}

impl Found {
    /// The engine as people call it.
    pub fn engine(&self) -> &'static str {
        match self.db {
            Db::Postgres => "PostgreSQL",
            Db::Mariadb => "MariaDB",
            Db::Sqlite => "SQLite",
        }
    }
}

/// Pure: the engine the markers present point to. None when none is there (a new or empty volume, or
/// data of something else) or when both engines' are (it cannot be told: no refusal rests on a guess).
pub fn engine_of(present: &[&str]) -> Option<Found> {
    let of = |db: Db| -> Vec<&str> {
        MARKERS
            .iter()
            .filter(|(m, d)| *d == db && present.contains(m))
            .map(|(m, _)| *m)
            .collect()
    };
    match (of(Db::Postgres), of(Db::Mariadb)) {
        (p, m) if !p.is_empty() && m.is_empty() => Some(Found {
            db: Db::Postgres,
            evidence: p.join(", "),
        }),
        (p, m) if p.is_empty() && !m.is_empty() => Some(Found {
            db: Db::Mariadb,
            evidence: m.join(", "),
        }),
        _ => None,
    }
}

/// The engine whose data `volume` holds, if any can be told. `images` are tried in order for the probe
/// container (it never runs, so any image will do); without any image on the target, None.
pub async fn read(
    target: &Target,
    stack: &str,
    volume: &str,
    images: &[&str],
) -> Result<Option<Found>> {
    let Some(image) = some_image(target, images).await? else {
        return Ok(None);
    };
    let name = format!(
        "{}-{}",
        exectl_core::naming::container(stack, "db-data-probe"),
        std::process::id()
    );
    let body = ContainerCreateBody {
        image: Some(image.clone()),
        // Never started: an entrypoint the image need not have.
        entrypoint: Some(vec!["/exectl-never-run".into()]),
        // The stack's label, so that a probe left by a crash is removed by teardown like the rest.
        labels: Some(HashMap::from([
            (
                crate::engine::desired::LABEL_STACK.to_string(),
                stack.to_string(),
            ),
            (
                crate::engine::desired::LABEL_SERVICE.to_string(),
                "db-data-probe".to_string(),
            ),
        ])),
        host_config: Some(HostConfig {
            binds: Some(vec![format!("{volume}:{MOUNT}:ro")]),
            network_mode: Some("none".into()),
            ..Default::default()
        }),
        ..Default::default()
    };
    remove(target, &name).await;
    target
        .docker
        .create_container(
            Some(CreateContainerOptionsBuilder::default().name(&name).build()),
            body,
        )
        .await
        .with_context(|| format!("creating a container from {image} to read volume {volume}"))?;
    let present = present_markers(target, &name).await;
    remove(target, &name).await;
    let present = present.with_context(|| format!("reading what volume {volume} holds"))?;
    Ok(engine_of(&present))
}

async fn present_markers(target: &Target, container: &str) -> Result<Vec<&'static str>> {
    let mut present = Vec::new();
    for (marker, _) in MARKERS {
        let path = format!("{MOUNT}/{}", marker.trim_end_matches('/'));
        let options = ContainerArchiveInfoOptionsBuilder::default()
            .path(&path)
            .build();
        match target
            .docker
            .get_container_archive_info(container, Some(options))
            .await
        {
            Ok(stat) => {
                // A folder marker must be a folder (mode's directory bit, as Go's os.ModeDir).
                let dir = stat.file_mode & (1 << 31) != 0;
                if dir == marker.ends_with('/') {
                    present.push(marker);
                }
            }
            Err(bollard::errors::Error::DockerResponseServerError {
                status_code: 404, ..
            }) => {}
            Err(e) => return Err(e).with_context(|| format!("stat {path}")),
        }
    }
    Ok(present)
}

/// The first of `preferred` on the target, else any image it has.
async fn some_image(target: &Target, preferred: &[&str]) -> Result<Option<String>> {
    for image in preferred {
        if target.docker.inspect_image(image).await.is_ok() {
            return Ok(Some(image.to_string()));
        }
    }
    let all = target
        .docker
        .list_images(None::<ListImagesOptions>)
        .await
        .context("listing the target's images")?;
    Ok(all.into_iter().next().map(|i| i.id))
}

async fn remove(target: &Target, name: &str) {
    let _ = super::teardown::force_remove(&target.docker, name).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_engine_from_its_files() {
        assert_eq!(
            engine_of(&["PG_VERSION"]),
            Some(Found {
                db: Db::Postgres,
                evidence: "PG_VERSION".into()
            })
        );
        let m = engine_of(&["ibdata1", "mysql/"]).unwrap();
        assert_eq!(
            (m.db, m.evidence.as_str()),
            (Db::Mariadb, "ibdata1, mysql/")
        );
        assert_eq!(m.engine(), "MariaDB");
        assert_eq!(engine_of(&[]), None);
        assert_eq!(engine_of(&["PG_VERSION", "ibdata1"]), None, "both: a guess");
    }
}
