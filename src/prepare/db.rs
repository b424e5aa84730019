//! The imperative edge: stream SQL scripts into the stack's database client through the engine's exec
//! API. MariaDB and PostgreSQL: their own client inside their container (no port is published). SQLite:
//! the app image has no sqlite3, so a one-shot container from the `sqlite` image mounts the app's data
//! volume (SQLite's locks work across containers on one local volume), runs as the owner of the data
//! folder (so that files it creates stay the app's), and is removed at the end.

use super::client_error::ClientFailed;
use super::sql;
use crate::engine::desired::{LABEL_SERVICE, LABEL_STACK};
use anyhow::{bail, Context, Result};
use bollard::models::{ContainerCreateBody, HostConfig};
use bollard::query_parameters::{
    CreateContainerOptionsBuilder, CreateImageOptionsBuilder, RemoveContainerOptionsBuilder,
};
use bollard::Docker;
use exectl_core::spec::Db;
use futures_util::StreamExt;
use std::collections::HashMap;
use std::time::{Duration, Instant};

pub struct Database {
    docker: Docker,
    pub db: Db,
    /// The container the client runs in.
    pub container: String,
    /// When it started, as the engine says: another value later means it restarted meanwhile.
    started_at: Option<String>,
    /// The one-shot container to remove at the end (SQLite).
    oneshot: Option<String>,
}

pub enum SchemaWait {
    /// The tables are absent.
    Missing(SchemaMissing),
    /// They are there, but the rest of the script failed.
    Failed(anyhow::Error),
}

/// The schema is not there (yet): the app migrates at boot.
#[derive(Debug)]
pub struct SchemaMissing {
    pub present: u64,
    pub detail: String,
}

/// Whether it runs, and since when; None when the engine does not answer.
async fn state(docker: &Docker, name: &str) -> Option<(bool, Option<String>)> {
    let s = docker.inspect_container(name, None).await.ok()?.state;
    Some((
        s.as_ref().and_then(|s| s.running).unwrap_or(false),
        s.and_then(|s| s.started_at),
    ))
}

async fn running(docker: &Docker, name: &str) -> bool {
    state(docker, name).await.is_some_and(|s| s.0)
}

/// How long a write cut off (its exec stream reset) waits for the engine to record that the database's
/// container stopped: the stream is cut when the process dies, a moment before the engine says so.
const CUT_SETTLES: Duration = Duration::from_secs(3);

impl Database {
    /// Reach the stack's database. Errors when its container is not running. `container` is the
    /// database's (the app's for SQLite), as `Target::locate` found it.
    pub async fn open(
        docker: &Docker,
        stack: &str,
        db: Db,
        container: &str,
        sqlite_image: &str,
    ) -> Result<Database> {
        match db {
            Db::Mariadb | Db::Postgres => {
                let container = container.to_string();
                let (running, started_at) = state(docker, &container).await.unwrap_or_default();
                if !running {
                    bail!(exectl_core::error::UsageError::new(
                        "--stack",
                        stack,
                        format!("its database container {container} is not running"),
                        "deploy the stack first: exectl deploy …",
                    ));
                }
                Ok(Database {
                    docker: docker.clone(),
                    db,
                    container,
                    started_at,
                    oneshot: None,
                })
            }
            Db::Sqlite => {
                let app_container = container;
                if !running(docker, app_container).await {
                    bail!(exectl_core::error::UsageError::new(
                        "--stack",
                        stack,
                        format!("its app container {app_container} is not running"),
                        "deploy the stack first: exectl deploy …",
                    ));
                }
                // Owner of the data folder, as the app sees it.
                let out = crate::sut::exec(
                    docker,
                    app_container,
                    &["stat", "-c", "%u:%g", "/mnt/data"],
                    None,
                )
                .await?;
                let owner = out.stdout.trim().to_string();
                if out.exit_code != 0 || owner.is_empty() {
                    bail!(
                        "cannot read the owner of /mnt/data in {app_container}: {}",
                        out.stderr.trim()
                    );
                }
                let name = exectl_core::naming::container(stack, "prepare-sqlite");
                let oneshot = start_oneshot(docker, stack, &name, sqlite_image, &owner).await?;
                let started_at = state(docker, &oneshot).await.and_then(|s| s.1);
                Ok(Database {
                    docker: docker.clone(),
                    db,
                    container: oneshot.clone(),
                    started_at,
                    oneshot: Some(oneshot),
                })
            }
        }
    }

    /// Run a script: exit code, stdout, stderr.
    async fn exec(&self, script: &str) -> Result<crate::sut::ExecOutput> {
        let cmd = sql::client(self.db);
        crate::sut::exec(&self.docker, &self.container, &cmd, Some(script.as_bytes())).await
    }

    /// The client's failure, never quoting what the script carried (`ClientFailed`).
    fn failed(&self, out: &crate::sut::ExecOutput) -> anyhow::Error {
        ClientFailed::new(self.db, &self.container, out.exit_code, &out.stderr).into()
    }

    /// After a failure: whether the database's container stopped or restarted since it was opened
    /// (the database was lost, rather than refusing the script), as the engine answers (None when it
    /// does not: the link, not the database, may be what was lost). `cut`: the write's stream was
    /// reset, so the engine is given a moment to record the stop.
    pub async fn lost(&self, cut: bool) -> Option<String> {
        let until = Instant::now() + if cut { CUT_SETTLES } else { Duration::ZERO };
        loop {
            let (running, started_at) = state(&self.docker, &self.container).await?;
            if !running {
                return Some(format!(
                    "the database container {} is not running",
                    self.container
                ));
            }
            if started_at != self.started_at {
                return Some(format!(
                    "the database container {} restarted meanwhile",
                    self.container
                ));
            }
            if Instant::now() >= until {
                return None;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Run a script; its output, or an error with the client's own message.
    pub async fn run(&self, script: &str) -> Result<String> {
        let out = self.exec(script).await?;
        if out.exit_code != 0 {
            return Err(self.failed(&out));
        }
        Ok(out.stdout)
    }

    /// Poll until prepare's tables exist, or `timeout` passes; then run `then` in the same exec (one
    /// round trip in the common case, where the schema is there at once). Its output.
    pub async fn wait_schema(&self, timeout: Duration, then: &str) -> Result<String, SchemaWait> {
        let deadline = Instant::now() + timeout;
        let script = format!("{}{then}", sql::schema_probe(self.db));
        loop {
            let (present, detail) = match self.exec(&script).await {
                Ok(out) => {
                    let n = sql::rows(&out.stdout, "T")
                        .next()
                        .and_then(|r| r.first().and_then(|n| n.trim().parse::<u64>().ok()))
                        .unwrap_or(0);
                    if n as usize == sql::TABLES.len() {
                        if out.exit_code != 0 {
                            return Err(SchemaWait::Failed(self.failed(&out)));
                        }
                        return Ok(out.stdout);
                    }
                    (n, out.stderr.trim().to_string())
                }
                Err(e) => (0, format!("{e:#}")),
            };
            if Instant::now() >= deadline {
                return Err(SchemaWait::Missing(SchemaMissing { present, detail }));
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }

    /// Remove the one-shot container, if any.
    pub async fn close(self) {
        if let Some(name) = &self.oneshot {
            remove(&self.docker, name).await;
        }
    }
}

async fn remove(docker: &Docker, name: &str) {
    let _ = docker
        .remove_container(
            name,
            Some(RemoveContainerOptionsBuilder::default().force(true).build()),
        )
        .await;
}

async fn start_oneshot(
    docker: &Docker,
    stack: &str,
    name: &str,
    image: &str,
    user: &str,
) -> Result<String> {
    // A previous run that was killed may have left it.
    remove(docker, name).await;
    if docker.inspect_image(image).await.is_err() {
        let (repo, tag) = match image.rsplit_once(':') {
            Some((r, t)) if !t.contains('/') => (r, t),
            _ => (image, "latest"),
        };
        let mut pull = docker.create_image(
            Some(
                CreateImageOptionsBuilder::default()
                    .from_image(repo)
                    .tag(tag)
                    .build(),
            ),
            None,
            None,
        );
        while let Some(step) = pull.next().await {
            step.with_context(|| {
                format!(
                    "image {image} (for seeding SQLite) is not present and cannot be pulled; fix: load it, \
                     or map `sqlite:` to an image with sqlite3 in the --images file when deploying"
                )
            })?;
        }
    }
    let volume = exectl_core::naming::volume(stack, "app-data");
    let body = ContainerCreateBody {
        image: Some(image.to_string()),
        entrypoint: Some(vec!["sleep".into()]),
        cmd: Some(vec!["3600".into()]),
        user: Some(user.to_string()),
        labels: Some(HashMap::from([
            (LABEL_STACK.to_string(), stack.to_string()),
            (LABEL_SERVICE.to_string(), "prepare-sqlite".to_string()),
        ])),
        host_config: Some(HostConfig {
            binds: Some(vec![format!("{volume}:/mnt/data")]),
            network_mode: Some("none".into()),
            ..Default::default()
        }),
        ..Default::default()
    };
    docker
        .create_container(
            Some(CreateContainerOptionsBuilder::default().name(name).build()),
            body,
        )
        .await
        .with_context(|| format!("creating the SQLite one-shot container {name} from {image}"))?;
    if let Err(e) = docker.start_container(name, None).await {
        remove(docker, name).await;
        return Err(e).with_context(|| format!("starting {name}"));
    }
    Ok(name.to_string())
}
