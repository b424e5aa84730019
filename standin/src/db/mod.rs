//! Database access for the three dialects the app supports. One enum of pools; each query is written once
//! with `?` placeholders and run by the `on_pool!` macro, which expands the same code per dialect (so each
//! arm is concretely typed) and rewrites the placeholders to `$n` for PostgreSQL.

pub mod schema;

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use sqlx::mysql::{MySqlConnectOptions, MySqlPoolOptions, MySqlSslMode};
use sqlx::postgres::{PgConnectOptions, PgPoolOptions, PgSslMode};
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions};
use sqlx::{MySqlPool, PgPool, SqlitePool};

use crate::config::{DbConfig, Dialect};

#[derive(Clone)]
pub enum Db {
    Sqlite(SqlitePool),
    MySql(MySqlPool),
    Postgres(PgPool),
}

/// `?` placeholders to PostgreSQL's `$1, $2, ...` (no query here has a literal `?`).
pub(crate) fn to_pg(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len() + 8);
    let mut n = 0;
    for c in sql.chars() {
        if c == '?' {
            n += 1;
            out.push('$');
            out.push_str(&n.to_string());
        } else {
            out.push(c);
        }
    }
    out
}

macro_rules! on_pool {
    ($db:expr, $sql:expr, |$q:ident, $pool:ident| $body:expr) => {{
        match $db {
            $crate::db::Db::Sqlite($pool) => {
                let $q: &str = $sql;
                $body
            }
            $crate::db::Db::MySql($pool) => {
                let $q: &str = $sql;
                $body
            }
            $crate::db::Db::Postgres($pool) => {
                let pg = $crate::db::to_pg($sql);
                let $q: &str = &pg;
                $body
            }
        }
    }};
}

/// Shared with the routes' own writes (`routes::store`).
pub(crate) use on_pool;

pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct User {
    pub id: i32,
    pub email: String,
    pub user_id: Option<String>,
    pub password: String,
    pub roles: String,
    pub is_lopd_accepted: i32,
    pub quota_mb: Option<i32>,
}

impl User {
    /// `roles` is JSON text in the table; a malformed value reads as no roles.
    pub fn role_list(&self) -> Vec<String> {
        serde_json::from_str(&self.roles).unwrap_or_default()
    }
}

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Project {
    pub id: i32,
    pub uuid: String,
    pub title: String,
    pub owner_id: i32,
    pub status: String,
    pub visibility: String,
    pub saved_once: i32,
    pub created_at: Option<i64>,
    pub updated_at: Option<i64>,
}

const PROJECT_COLS: &str =
    "p.id, p.uuid, p.title, p.owner_id, p.status, p.visibility, p.saved_once, p.created_at, p.updated_at";

impl Db {
    /// Connect, retrying for up to `wait` while the server is not yet up (the app's entrypoint waits 60 s).
    pub async fn connect(cfg: &DbConfig, wait: Duration) -> Result<Db> {
        let deadline = Instant::now() + wait;
        loop {
            match Db::try_connect(cfg).await {
                Ok(db) => return Ok(db),
                Err(e) if Instant::now() < deadline => {
                    tracing::warn!("[DB] not ready ({e:#}); retrying");
                    tokio::time::sleep(Duration::from_millis(500)).await;
                }
                Err(e) => return Err(e).context("database did not become reachable"),
            }
        }
    }

    async fn try_connect(cfg: &DbConfig) -> Result<Db> {
        let acquire = Duration::from_secs(30);
        Ok(match cfg.dialect {
            Dialect::Sqlite => {
                if let Some(dir) = Path::new(&cfg.path).parent() {
                    if !dir.as_os_str().is_empty() {
                        std::fs::create_dir_all(dir)
                            .with_context(|| format!("DB_PATH: creating {}", dir.display()))?;
                    }
                }
                let opts = SqliteConnectOptions::new()
                    .filename(&cfg.path)
                    .create_if_missing(true)
                    .journal_mode(SqliteJournalMode::Wal)
                    .busy_timeout(Duration::from_secs(10))
                    .foreign_keys(true);
                let pool = SqlitePoolOptions::new()
                    .max_connections(cfg.pool_max)
                    .acquire_timeout(acquire)
                    .connect_with(opts)
                    .await
                    .with_context(|| format!("opening SQLite at {}", cfg.path))?;
                Db::Sqlite(pool)
            }
            Dialect::MySql => {
                let opts = MySqlConnectOptions::new()
                    .host(&cfg.host)
                    .port(cfg.port)
                    .username(&cfg.user)
                    .password(&cfg.password)
                    .database(&cfg.name)
                    .charset("utf8mb4")
                    .ssl_mode(MySqlSslMode::Disabled);
                let pool = MySqlPoolOptions::new()
                    .max_connections(cfg.pool_max)
                    .acquire_timeout(acquire)
                    .connect_with(opts)
                    .await
                    .with_context(|| format!("connecting to MySQL {}:{}", cfg.host, cfg.port))?;
                Db::MySql(pool)
            }
            Dialect::Postgres => {
                let opts = PgConnectOptions::new()
                    .host(&cfg.host)
                    .port(cfg.port)
                    .username(&cfg.user)
                    .password(&cfg.password)
                    .database(&cfg.name)
                    .ssl_mode(PgSslMode::Disable);
                let pool = PgPoolOptions::new()
                    .max_connections(cfg.pool_max)
                    .acquire_timeout(acquire)
                    .connect_with(opts)
                    .await
                    .with_context(|| {
                        format!("connecting to PostgreSQL {}:{}", cfg.host, cfg.port)
                    })?;
                Db::Postgres(pool)
            }
        })
    }

    /// Create the tables if absent. Retried: two instances booting on one PostgreSQL can race on
    /// `CREATE TABLE IF NOT EXISTS` (a duplicate pg_type row).
    pub async fn migrate(&self) -> Result<()> {
        let dialect = match self {
            Db::Sqlite(_) => Dialect::Sqlite,
            Db::MySql(_) => Dialect::MySql,
            Db::Postgres(_) => Dialect::Postgres,
        };
        let mut attempt = 0;
        loop {
            let mut result = Ok(());
            for stmt in schema::ddl(dialect) {
                let r: Result<()> = on_pool!(self, &stmt, |q, p| sqlx::query(q)
                    .execute(p)
                    .await
                    .map(|_| ())
                    .map_err(anyhow::Error::from));
                if let Err(e) = r {
                    result = Err(e);
                    break;
                }
            }
            match result {
                Ok(()) => return Ok(()),
                Err(e) if attempt < 5 => {
                    attempt += 1;
                    tracing::warn!("[DB] schema creation failed ({e:#}); retrying");
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
                Err(e) => return Err(e).context("creating the schema"),
            }
        }
    }

    pub async fn count_users(&self) -> Result<i64> {
        let row: (i64,) = on_pool!(self, "SELECT COUNT(*) FROM users", |q, p| sqlx::query_as(q)
            .fetch_one(p)
            .await?);
        Ok(row.0)
    }

    pub async fn user_by_email(&self, email: &str) -> Result<Option<User>> {
        let sql = "SELECT id, email, user_id, password, roles, is_lopd_accepted, quota_mb \
                   FROM users WHERE email = ?";
        Ok(on_pool!(self, sql, |q, p| sqlx::query_as::<_, User>(q)
            .bind(email)
            .fetch_optional(p)
            .await?))
    }

    /// Create the user if absent; with `reset`, also set its password and roles (the app's admin bootstrap).
    pub async fn ensure_user(
        &self,
        email: &str,
        hash: &str,
        roles: &[&str],
        reset: bool,
    ) -> Result<()> {
        let roles = serde_json::to_string(roles)?;
        let now = now_ms();
        let insert = match self {
            Db::Sqlite(_) => "INSERT OR IGNORE INTO users (email, password, roles, is_lopd_accepted, quota_mb, is_active, created_at, updated_at) VALUES (?, ?, ?, 1, 4096, 1, ?, ?)",
            Db::MySql(_) => "INSERT IGNORE INTO users (email, password, roles, is_lopd_accepted, quota_mb, is_active, created_at, updated_at) VALUES (?, ?, ?, 1, 4096, 1, ?, ?)",
            Db::Postgres(_) => "INSERT INTO users (email, password, roles, is_lopd_accepted, quota_mb, is_active, created_at, updated_at) VALUES (?, ?, ?, 1, 4096, 1, ?, ?) ON CONFLICT (email) DO NOTHING",
        };
        on_pool!(self, insert, |q, p| sqlx::query(q)
            .bind(email)
            .bind(hash)
            .bind(&roles)
            .bind(now)
            .bind(now)
            .execute(p)
            .await
            .map(|_| ())?);
        if reset {
            let sql = "UPDATE users SET password = ?, roles = ?, updated_at = ? WHERE email = ?";
            on_pool!(self, sql, |q, p| sqlx::query(q)
                .bind(hash)
                .bind(&roles)
                .bind(now)
                .bind(email)
                .execute(p)
                .await
                .map(|_| ())?);
        }
        Ok(())
    }

    pub async fn project_by_uuid(&self, uuid: &str) -> Result<Option<Project>> {
        let sql = format!("SELECT {PROJECT_COLS} FROM projects p WHERE p.uuid = ?");
        Ok(on_pool!(self, &sql, |q, p| sqlx::query_as::<_, Project>(q)
            .bind(uuid)
            .fetch_optional(p)
            .await?))
    }

    /// Owned plus collaborating projects with status active or archived (`GET /api/v1/projects`).
    pub async fn projects_for_user(&self, user_id: i32) -> Result<Vec<Project>> {
        let sql = format!(
            "SELECT {PROJECT_COLS} FROM projects p \
             WHERE p.status IN ('active', 'archived') AND (p.owner_id = ? OR p.id IN \
             (SELECT c.project_id FROM project_collaborators c WHERE c.user_id = ?)) \
             ORDER BY p.updated_at DESC, p.id DESC"
        );
        Ok(on_pool!(self, &sql, |q, p| sqlx::query_as::<_, Project>(q)
            .bind(user_id)
            .bind(user_id)
            .fetch_all(p)
            .await?))
    }

    pub async fn is_collaborator(&self, project_id: i32, user_id: i32) -> Result<bool> {
        let sql =
            "SELECT project_id FROM project_collaborators WHERE project_id = ? AND user_id = ?";
        let row: Option<(i32,)> = on_pool!(self, sql, |q, p| sqlx::query_as(q)
            .bind(project_id)
            .bind(user_id)
            .fetch_optional(p)
            .await?);
        Ok(row.is_some())
    }

    pub async fn snapshot(&self, project_id: i32) -> Result<Option<Vec<u8>>> {
        let sql = "SELECT snapshot_data FROM yjs_documents WHERE project_id = ?";
        let row: Option<(Vec<u8>,)> = on_pool!(self, sql, |q, p| sqlx::query_as(q)
            .bind(project_id)
            .fetch_optional(p)
            .await?);
        Ok(row.map(|r| r.0))
    }

    /// The project's first snapshot, if it has none (the app's `ensureDocument` on create): the default
    /// `snapshot_version` '0', and the project row is left as it is.
    pub async fn ensure_document(&self, project_id: i32, data: &[u8]) -> Result<()> {
        let now = now_ms();
        let insert = match self {
            Db::MySql(_) => "INSERT IGNORE INTO yjs_documents (project_id, snapshot_data, snapshot_version, created_at, updated_at) VALUES (?, ?, '0', ?, ?)",
            _ => "INSERT INTO yjs_documents (project_id, snapshot_data, snapshot_version, created_at, updated_at) VALUES (?, ?, '0', ?, ?) \
                 ON CONFLICT (project_id) DO NOTHING",
        };
        on_pool!(self, insert, |q, p| sqlx::query(q)
            .bind(project_id)
            .bind(data)
            .bind(now)
            .bind(now)
            .execute(p)
            .await
            .map(|_| ())?);
        Ok(())
    }

    /// Store the project's snapshot (upsert), touch the project, and apply `markSaved`/`X-Project-Title`.
    pub async fn save_snapshot(
        &self,
        project_id: i32,
        data: &[u8],
        mark_saved: bool,
        title: Option<&str>,
    ) -> Result<()> {
        let now = now_ms();
        let upsert = match self {
            Db::MySql(_) => "INSERT INTO yjs_documents (project_id, snapshot_data, snapshot_version, created_at, updated_at) VALUES (?, ?, '1', ?, ?) \
                 ON DUPLICATE KEY UPDATE snapshot_data = VALUES(snapshot_data), updated_at = VALUES(updated_at)",
            _ => "INSERT INTO yjs_documents (project_id, snapshot_data, snapshot_version, created_at, updated_at) VALUES (?, ?, '1', ?, ?) \
                 ON CONFLICT (project_id) DO UPDATE SET snapshot_data = excluded.snapshot_data, updated_at = excluded.updated_at",
        };
        on_pool!(self, upsert, |q, p| sqlx::query(q)
            .bind(project_id)
            .bind(data)
            .bind(now)
            .bind(now)
            .execute(p)
            .await
            .map(|_| ())?);
        let sql = match (mark_saved, title.is_some()) {
            (true, true) => {
                "UPDATE projects SET updated_at = ?, saved_once = 1, title = ? WHERE id = ?"
            }
            (false, true) => "UPDATE projects SET updated_at = ?, title = ? WHERE id = ?",
            (true, false) => "UPDATE projects SET updated_at = ?, saved_once = 1 WHERE id = ?",
            (false, false) => "UPDATE projects SET updated_at = ? WHERE id = ?",
        };
        on_pool!(self, sql, |q, p| {
            let mut query = sqlx::query(q).bind(now);
            if let Some(t) = title {
                query = query.bind(t);
            }
            query.bind(project_id).execute(p).await.map(|_| ())?
        });
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn placeholders_for_postgres() {
        assert_eq!(
            super::to_pg("a = ? AND b = ? OR c = ?"),
            "a = $1 AND b = $2 OR c = $3"
        );
    }
}
