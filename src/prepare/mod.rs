//! `exectl prepare`: seed benchmark accounts and projects straight into a deployed stack's database,
//! write the manifest a load run reads, and prove through the front door that accounts log in and hold
//! their project's WebSocket.
//!
//! Pure core: `exectl_core::seed::{plan, sql}` (who, which project, which role; the scripts per
//! dialect), `manifest` (files), `token` (JWTs). The edge: `db` (exec into the database client), `verify` (HTTP and
//! WebSocket through the front door), and `run` here, which strings them together. `--via api` does
//! the same through the app's HTTP API (`api`, then `run_api` here), with the same manifest and checks.

pub mod api;
pub mod client_error;
pub mod db;
pub mod manifest;
pub use exectl_core::seed::{plan, sql};
mod reset;
mod seeding;
pub mod token;
pub mod verify;

use crate::state::manifests as store;
pub use reset::{reset, Kept, ResetSummary};
pub use seeding::check_rows;
use seeding::seed;
#[cfg(test)]
use seeding::waves;

use crate::sut::Target;
use anyhow::{bail, Context, Result};
use exectl_core::error::UsageError;
use exectl_core::spec::{Db, Topology};
use plan::{Plan, Role};
use serde::Serialize;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// What prepare needs to know about a deployed stack, from its record (`core::record`).
#[derive(Debug, Clone)]
pub struct Stack {
    pub name: String,
    pub topology: Topology,
    pub db: Db,
    pub host: String,
    pub http_port: u16,
    pub lb_port: u16,
    pub sqlite_image: String,
    pub bundle: PathBuf,
    /// Where the target's published ports answer (loopback, or the SUT's address).
    pub front_ip: std::net::IpAddr,
}

impl Stack {
    /// Read the deployed stack's record; a UsageError when it is not deployed or its record is broken.
    pub fn read(target: &Target, name: &str) -> Result<Stack> {
        let bundle = target.bundle_dir(name);
        let record = crate::state::record::require(
            &bundle,
            name,
            "deploy it first: exectl deploy single|ha --stack NAME …",
        )?;
        let spec = record.spec;
        Ok(Stack {
            name: name.to_string(),
            topology: spec.topology,
            db: spec.db,
            host: spec.host,
            http_port: spec.http_port,
            lb_port: spec.lb_port,
            sqlite_image: spec.images.sqlite,
            bundle,
            front_ip: target.address(),
        })
    }

    /// The front door: nginx on lb_port (ha), else Traefik on http_port with the stack's Host.
    pub fn front_door(&self) -> crate::app::Endpoint {
        use std::net::SocketAddr;
        match self.topology {
            Topology::Ha => {
                crate::app::Endpoint::at(SocketAddr::new(self.front_ip, self.lb_port), None)
            }
            Topology::Single => crate::app::Endpoint::at(
                SocketAddr::new(self.front_ip, self.http_port),
                Some(self.host.clone()),
            ),
        }
    }

    /// The first app container (its data volume is the SQLite file's home).
    /// The stack's database, reached through the engine (exec into its client, or a one-shot for SQLite).
    pub async fn open_db(&self, target: &Target) -> Result<db::Database> {
        // Where the database runs (on a swarm, the node of its task).
        let service = match self.db {
            Db::Sqlite => match self.topology {
                Topology::Single => "app",
                Topology::Ha => "app-1",
            },
            db => db.name(),
        };
        let (engine, container) = target.locate(&self.name, service).await?;
        db::Database::open(
            &engine.docker,
            &self.name,
            self.db,
            &container,
            &self.sqlite_image,
        )
        .await
    }

    pub fn app_container(&self) -> String {
        match self.topology {
            Topology::Single => exectl_core::naming::container(&self.name, "app"),
            Topology::Ha => exectl_core::naming::container(&self.name, "app-1"),
        }
    }

    /// A secret of the stack's .env (never printed).
    pub fn secret(&self, name: &str) -> Result<String> {
        let path = self.bundle.join(exectl_core::render::ENV);
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("reading {}", path.display()))?;
        let v = crate::state::secrets::Secrets::parse(&text)
            .get(name)
            .to_string();
        if v.is_empty() {
            bail!("{} has no {name}", path.display());
        }
        Ok(v)
    }
}

/// Validated options of a seeding run.
#[derive(Debug, Clone)]
pub struct Options {
    pub via: Via,
    pub plan: Plan,
    pub password: String,
    /// Where the password came from: only the public default is shown again (k6's env).
    pub password_from: exectl_core::manifest::PasswordFrom,
    pub bcrypt_cost: u32,
    /// The stack's state folder: its `manifests/<pattern>/` always gets the manifest.
    pub stack_dir: PathBuf,
    /// `--out DIR`: a further copy there.
    pub out: Option<PathBuf>,
    pub token_ttl: Option<Duration>,
    pub batch: usize,
    pub schema_timeout: Duration,
    /// A sweep's room size (that many users to a project): its manifest is marked so, and is never the
    /// stack's default (`state::manifests::choose`). None for `exectl prepare`.
    pub sweep_room: Option<u64>,
}

/// bcrypt's cost for the accounts' password hashes: the app's own.
pub const DEFAULT_COST: u32 = 10;
/// Rows per INSERT.
pub const DEFAULT_BATCH: usize = 5000;
/// A minted token's lifetime.
pub const DEFAULT_TOKEN_TTL: Duration = Duration::from_secs(7 * 86_400);
/// How long the app may take to create its schema on a fresh database.
pub const DEFAULT_SCHEMA_TIMEOUT: Duration = Duration::from_secs(60);

impl Options {
    /// `accounts` accounts in `projects` projects (None: one each), with `exectl prepare`'s defaults:
    /// through SQL, the default email pattern and password, private projects, cost 10, no tokens. Set
    /// the fields to change the rest.
    pub fn seeding(accounts: u64, projects: Option<u64>) -> Result<Options, UsageError> {
        let pattern = plan::EmailPattern::parse(plan::DEFAULT_PATTERN)?;
        let shape = plan::shape(accounts, projects, None)?;
        Ok(Options {
            via: Via::Sql,
            plan: plan::plan(shape, &pattern, plan::Visibility::Private),
            password: plan::DEFAULT_PASSWORD.to_string(),
            password_from: exectl_core::manifest::PasswordFrom::Default,
            bcrypt_cost: DEFAULT_COST,
            stack_dir: PathBuf::new(),
            out: None,
            token_ttl: None,
            batch: DEFAULT_BATCH,
            schema_timeout: DEFAULT_SCHEMA_TIMEOUT,
            sweep_room: None,
        })
    }

    /// The same seeding with `accounts` accounts in `projects` projects (None: one each).
    pub fn reshaped(&self, accounts: u64, projects: Option<u64>) -> Result<Options, UsageError> {
        let shape = plan::shape(accounts, projects, None)?;
        Ok(Options {
            plan: plan::plan(shape, &self.plan.pattern, self.plan.visibility),
            ..self.clone()
        })
    }
}

/// How the rows are made: SQL into the database (default), or the app's HTTP API.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Via {
    Sql,
    Api,
}

impl Via {
    pub fn parse(v: &str) -> Result<Via, UsageError> {
        match v {
            "sql" => Ok(Via::Sql),
            "api" => Ok(Via::Api),
            _ => Err(UsageError::new(
                "--via",
                v,
                "unknown way to seed",
                "use sql (straight into the database) or api (the app's admin HTTP API)",
            )),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Via::Sql => "sql",
            Via::Api => "api",
        }
    }
}

#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct Counts {
    pub accounts: u64,
    pub projects: u64,
    pub collaborators: u64,
    /// Projects' Yjs document rows, where they were counted (the SQL path reads them back).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub documents: Option<u64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    pub stack: String,
    pub db: &'static str,
    /// sql or api.
    pub via: &'static str,
    pub front_door: String,
    pub accounts: u64,
    pub projects: u64,
    pub users_per_project: u64,
    pub visibility: &'static str,
    /// Rows prepare had made for this pattern before the run, and after it.
    pub before: Counts,
    pub after: Counts,
    pub added: Counts,
    /// The stack's copy of the manifest, the one `load --stack` reads.
    pub manifest: PathBuf,
    pub files: Vec<PathBuf>,
    pub checks: Vec<verify::Check>,
    /// The app's error answers seen on the way and what became of them (`--via api`; the run
    /// converged over them, or it would have failed).
    pub app_errors: Vec<api::app_errors::AppError>,
    pub ms: Timings,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct Timings {
    pub hash: u64,
    pub schema: u64,
    pub write: u64,
    pub readback: u64,
    pub verify: u64,
    pub total: u64,
}

/// Progress of the writes: rows done, of `total`.
pub type Progress<'a> = &'a (dyn Fn(u64, u64) + Sync);

fn ms(d: Duration) -> u64 {
    d.as_millis() as u64
}

fn now_ms() -> i64 {
    crate::clock::unix_ms() as i64
}

fn hash(password: &str, cost: u32) -> Result<String> {
    Ok(bcrypt::hash_with_result(password, cost)
        .context("bcrypt")?
        .format_for_version(bcrypt::Version::TwoB))
}

fn schema_error(stack: &Stack, m: db::SchemaMissing) -> anyhow::Error {
    let detail = if m.detail.is_empty() {
        String::new()
    } else {
        format!(" ({})", m.detail)
    };
    UsageError::new(
        "--stack",
        &stack.name,
        format!(
            "the app has not created its tables in the {} database: {} of {} ({}) present{detail}",
            stack.db.name(),
            m.present,
            sql::TABLES.len(),
            sql::TABLES.join(", "),
        ),
        format!(
            "wait for the app to finish booting (it migrates at boot), or read its log: docker logs {}",
            stack.app_container()
        ),
    )
    .into()
}

/// Seed, read back, write the manifest, verify. Nothing is written when a check before the writes fails.
pub async fn run(
    target: &Target,
    stack: &Stack,
    opts: &Options,
    progress: Progress<'_>,
) -> Result<Summary> {
    let start = Instant::now();
    let mut timings = Timings::default();
    let plan = &opts.plan;
    let (pw, cost) = (opts.password.clone(), opts.bcrypt_cost);
    let hashing = tokio::task::spawn_blocking(move || {
        let t = Instant::now();
        hash(&pw, cost).map(|h| (h, t.elapsed()))
    });
    let jwt_secret = match opts.token_ttl {
        Some(_) => Some(stack.secret("API_JWT_SECRET")?),
        None => None,
    };

    let db = stack.open_db(target).await?;
    // The verification needs the rows committed, not read back: it runs beside the read-back and the
    // manifest (a sampled socket is held for 500 ms).
    let (written, committed) = tokio::sync::oneshot::channel();
    let verifying = async {
        committed.await.ok()?;
        let t = Instant::now();
        let v = verify_samples(stack, plan, &opts.password).await;
        Some((v, ms(t.elapsed())))
    };
    let seeding = async {
        let result = seed(stack, opts, &db, hashing, &mut timings, progress, written).await;
        db.close().await;
        let (before, after, ids) = result?;
        let (manifest, files) = write_manifest(plan, opts, Via::Sql, &ids, jwt_secret.as_deref())?;
        anyhow::Ok((before, after, manifest, files))
    };
    let (seeded, verified) = tokio::join!(seeding, verifying);
    let (before, after, manifest, files) = seeded?;
    let (verified, verify_ms) = verified.context("the verification never began")?;
    let (door, checks) = verified?;
    timings.verify = verify_ms;
    timings.total = ms(start.elapsed());
    let added = Counts {
        accounts: after.accounts.saturating_sub(before.accounts),
        projects: after.projects.saturating_sub(before.projects),
        collaborators: after.collaborators.saturating_sub(before.collaborators),
        documents: after
            .documents
            .map(|a| a.saturating_sub(before.documents.unwrap_or(0))),
    };
    Ok(Summary {
        stack: stack.name.clone(),
        db: stack.db.name(),
        via: Via::Sql.name(),
        front_door: door.addr.to_string(),
        accounts: plan.shape.accounts,
        projects: plan.shape.projects,
        users_per_project: plan.shape.users_per_project,
        visibility: plan.visibility.name(),
        before,
        after,
        added,
        manifest,
        files,
        checks,
        app_errors: Vec::new(),
        ms: timings,
    })
}

/// The manifest files (and with --mint-tokens, tokens.json; else an earlier tokens.json is removed)
/// into the stack's folder for this pattern and, with --out, there too; pattern.json last in each, so
/// a write cut short is never taken for a manifest. Returns the stack's folder and every file written.
fn write_manifest(
    plan: &Plan,
    opts: &Options,
    via: Via,
    ids: &HashMap<String, i64>,
    jwt_secret: Option<&str>,
) -> Result<(PathBuf, Vec<PathBuf>)> {
    let accounts = manifest::accounts(plan, &opts.password);
    let mut contents = vec![
        (
            manifest::PROJECTS,
            serde_json::to_vec_pretty(&manifest::projects(plan))?,
        ),
        (
            manifest::ACCOUNTS_JSON,
            serde_json::to_vec_pretty(&accounts)?,
        ),
        (
            manifest::ACCOUNTS_CSV,
            manifest::accounts_csv(&accounts).into_bytes(),
        ),
    ];
    if let (Some(ttl), Some(secret)) = (opts.token_ttl, jwt_secret) {
        let iat = now_ms() / 1000;
        // In the order of accounts.json.
        let tokens: Vec<_> = plan
            .manifest_order()
            .map(|i| &plan.accounts[i])
            .map(|a| manifest::TokenEntry {
                email: a.email.clone(),
                token: token::mint(
                    secret.as_bytes(),
                    ids[&a.email],
                    &a.email,
                    iat,
                    ttl.as_secs() as i64,
                ),
            })
            .collect();
        contents.push((manifest::TOKENS, serde_json::to_vec_pretty(&tokens)?));
    }
    let home = store::folder(&opts.stack_dir, &plan.pattern);
    store::private_dir(&opts.stack_dir.join(store::DIR))?;
    store::private_dir(&home)?;
    let meta = store::Meta {
        pattern: plan.pattern.text(),
        accounts: plan.shape.accounts,
        projects: plan.shape.projects,
        via: Some(via.name().to_string()),
        written_ms: now_ms(),
        out: opts.out.clone(),
        sweep_room: opts.sweep_room,
    };
    let mut files = Vec::new();
    let dirs =
        std::iter::once((home.as_path(), meta.clone())).chain(opts.out.as_deref().map(|d| {
            (
                d,
                store::Meta {
                    out: None,
                    ..meta.clone()
                },
            )
        }));
    for (dir, meta) in dirs {
        // The pattern.json of an earlier run goes first: until the new one is written, this folder
        // holds no finished manifest.
        let _ = std::fs::remove_file(dir.join(store::META));
        for (name, bytes) in &contents {
            files.push(store::write_private(dir, name, bytes)?);
        }
        if opts.token_ttl.is_none() {
            // A tokens.json of an earlier run would name accounts this manifest may not have.
            let _ = std::fs::remove_file(dir.join(manifest::TOKENS));
        }
        files.push(store::write_meta(dir, &meta)?);
    }
    Ok((home, files))
}

/// Verification through the front door: a sampled owner, and a sampled collaborator when there are any,
/// log in and hold their project's WebSocket. Any failure is an error.
async fn verify_samples(
    stack: &Stack,
    plan: &Plan,
    password: &str,
) -> Result<(crate::app::Endpoint, Vec<verify::Check>)> {
    let door = stack.front_door();
    let client = crate::app::Client::new(4, verify::TIMEOUTS);
    let samples = samples(plan);
    let checks = futures_util::future::join_all(samples.iter().map(|&i| {
        let a = &plan.accounts[i];
        let role = match a.role {
            Role::Owner => "owner",
            Role::Collaborator => "collaborator",
        };
        verify::check(
            &client,
            &door,
            &a.email,
            password,
            &plan.projects[a.project].uuid,
            role,
        )
    }))
    .await
    .into_iter()
    .collect::<Result<Vec<_>>>()?;
    for c in &checks {
        if !c.ok() {
            bail!(
                "verification failed: {} {} logged in through {} but its WebSocket to project {} was not held: {:?}",
                c.role,
                c.email,
                door.addr,
                c.project_uuid,
                c.socket
            );
        }
    }
    Ok((door, checks))
}

/// `--via api`: the rows through the app's HTTP API, then the same manifest and verification. The
/// counts are of the planned rows: `before` = found already there, `added` = made by this run.
pub async fn run_api(stack: &Stack, opts: &Options, progress: Progress<'_>) -> Result<Summary> {
    let start = Instant::now();
    let mut timings = Timings::default();
    let jwt_secret = match opts.token_ttl {
        Some(_) => Some(stack.secret("API_JWT_SECRET")?),
        None => None,
    };
    let t = Instant::now();
    let o = api::seed(
        stack,
        &opts.plan,
        &opts.password,
        opts.schema_timeout,
        progress,
    )
    .await?;
    timings.schema = o.ready_ms;
    timings.readback = o.readback_ms;
    timings.write = ms(t.elapsed()).saturating_sub(o.ready_ms + o.readback_ms);
    let plan = &o.plan;
    let (manifest, files) = write_manifest(plan, opts, Via::Api, &o.ids, jwt_secret.as_deref())?;
    let t = Instant::now();
    let (door, checks) = verify_samples(stack, plan, &opts.password).await?;
    timings.verify = ms(t.elapsed());
    timings.total = ms(start.elapsed());
    let after = Counts {
        accounts: o.before.accounts + o.added.accounts,
        projects: o.before.projects + o.added.projects,
        collaborators: o.before.collaborators + o.added.collaborators,
        documents: None,
    };
    Ok(Summary {
        stack: stack.name.clone(),
        db: stack.db.name(),
        via: Via::Api.name(),
        front_door: door.addr.to_string(),
        accounts: plan.shape.accounts,
        projects: plan.shape.projects,
        users_per_project: plan.shape.users_per_project,
        visibility: plan.visibility.name(),
        before: o.before,
        after,
        added: o.added,
        manifest,
        files,
        checks,
        app_errors: o.app_errors,
        ms: timings,
    })
}

/// A random owner and, when the plan has collaborators, a random collaborator.
fn samples(plan: &Plan) -> Vec<usize> {
    use rand::seq::SliceRandom;
    let mut rng = rand::thread_rng();
    let mut out = Vec::new();
    for role in [Role::Owner, Role::Collaborator] {
        let of: Vec<usize> = (0..plan.accounts.len())
            .filter(|&i| plan.accounts[i].role == role)
            .collect();
        if let Some(&i) = of.choose(&mut rng) {
            out.push(i);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::plan::{plan, shape, EmailPattern, Visibility};
    use super::*;

    #[test]
    fn writes_go_in_waves_of_one_kind_shared_by_the_lanes() {
        let c = |what, rows| sql::Chunk {
            what,
            statement: "INSERT",
            rows,
            sql: String::new(),
        };
        let mut chunks: Vec<_> = (0..20).map(|_| c("accounts", 5000)).collect();
        chunks.extend((0..20).map(|_| c("projects", 5000)));
        chunks.push(c("collaborators", 10));
        let w = waves(&chunks, 20_000, 2);
        let sizes = |w: &Vec<std::ops::Range<usize>>| w.iter().map(|r| r.len()).collect::<Vec<_>>();
        assert_eq!(w.len(), 3, "one wave per kind, in order");
        assert_eq!(sizes(&w[0]), vec![4; 5], "at most 20,000 rows an exec");
        assert_eq!(w[1][0], 20..24, "the projects after every account");
        assert_eq!(w[2], vec![40..41]);
        // 10,000 rows over two lanes: two execs.
        assert_eq!(waves(&chunks[..2], 20_000, 2), vec![vec![0..1, 1..2]]);
        assert_eq!(waves(&chunks[..2], 20_000, 1), vec![vec![0..2]]);
        // An oversized chunk is still sent; nothing, no wave.
        assert_eq!(waves(&chunks[..1], 10, 1), vec![vec![0..1]]);
        assert!(waves(&[], 10, 2).is_empty());
    }

    #[test]
    fn row_check_finds_missing_rows() {
        let p = plan(
            shape(4, Some(2), Some(2)).unwrap(),
            &EmailPattern::parse("u{i}@x.org").unwrap(),
            Visibility::Private,
        );
        let (u0, u1) = (&p.projects[0].uuid, &p.projects[1].uuid);
        let mut out = String::from(
            "U\t1\tu0@x.org\t1\nU\t2\tu1@x.org\t1\nU\t3\tu2@x.org\t1\nU\t4\tu3@x.org\t1\n",
        );
        out += &format!("P\t10\t{u0}\t1\t1\nP\t11\t{u1}\t2\t1\nC\t10\t3\n");
        let err = check_rows(&p, &out).unwrap_err().to_string();
        assert!(err.contains("1 of 2 collaborator rows"), "{err}");
        let ids = check_rows(&p, &(out.clone() + "C\t11\t4\n")).unwrap();
        assert_eq!(ids["u3@x.org"], 4);
        let wrong_owner = out.replace(&format!("{u1}\t2\t"), &format!("{u1}\t3\t")) + "C\t11\t4\n";
        assert!(check_rows(&p, &wrong_owner)
            .unwrap_err()
            .to_string()
            .contains("another owner"));
        let no_doc = out.replace(&format!("{u1}\t2\t1"), &format!("{u1}\t2\t0")) + "C\t11\t4\n";
        assert!(check_rows(&p, &no_doc)
            .unwrap_err()
            .to_string()
            .contains("1 of 2 projects have no Yjs document"));
        let unmarked = out.replace("u3@x.org\t1", "u3@x.org\t0");
        assert!(check_rows(&p, &unmarked)
            .unwrap_err()
            .to_string()
            .contains("1 of 4 accounts"));
    }
}
