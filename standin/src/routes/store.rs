//! The writes behind the admin and sharing routes (user creation, project creation, visibility,
//! collaborators), written once with `?` placeholders for the three dialects like `crate::db`.

use anyhow::Result;

use crate::db::{now_ms, on_pool, Db};

/// Run one statement built from `sqlx::query`, on whichever dialect the pool is (`crate::db::on_pool`).
macro_rules! exec {
    ($db:expr, $sql:expr, |$q:ident| $build:expr) => {
        on_pool!($db, $sql, |sql, pool| {
            let $q = sqlx::query(sql);
            $build.execute(pool).await.map(|r| r.rows_affected())
        })
    };
}

/// An insert refused by a UNIQUE constraint (a concurrent duplicate).
pub fn is_unique_violation(e: &sqlx::Error) -> bool {
    matches!(e, sqlx::Error::Database(d) if d.is_unique_violation())
}

/// `POST /api/v1/users`: quota 4096, active, LOPD accepted (as the app's v1 route sets), roles as JSON text. `Err` carries the driver error so that a
/// duplicate email can be told apart.
pub async fn insert_user(
    db: &Db,
    email: &str,
    hash: &str,
    roles: &[String],
) -> Result<u64, sqlx::Error> {
    let roles = serde_json::to_string(roles).unwrap_or_else(|_| "[]".into());
    let now = now_ms();
    let sql = "INSERT INTO users (email, password, roles, is_lopd_accepted, quota_mb, is_active, created_at, updated_at) \
               VALUES (?, ?, ?, 1, 4096, 1, ?, ?)";
    exec!(db, sql, |q| q
        .bind(email)
        .bind(hash)
        .bind(&roles)
        .bind(now)
        .bind(now))
}

/// A new active project, `saved_once = 0`, with the given visibility.
pub async fn insert_project(
    db: &Db,
    uuid: &str,
    title: &str,
    owner_id: i32,
    visibility: &str,
) -> Result<u64, sqlx::Error> {
    let now = now_ms();
    let sql = "INSERT INTO projects (uuid, title, owner_id, status, visibility, saved_once, created_at, updated_at) \
               VALUES (?, ?, ?, 'active', ?, 0, ?, ?)";
    exec!(db, sql, |q| q
        .bind(uuid)
        .bind(title)
        .bind(owner_id)
        .bind(visibility)
        .bind(now)
        .bind(now))
}

pub async fn set_visibility(db: &Db, project_id: i32, visibility: &str) -> Result<()> {
    let sql = "UPDATE projects SET visibility = ?, updated_at = ? WHERE id = ?";
    exec!(db, sql, |q| q
        .bind(visibility)
        .bind(now_ms())
        .bind(project_id))?;
    Ok(())
}

pub async fn add_collaborator(db: &Db, project_id: i32, user_id: i32) -> Result<u64, sqlx::Error> {
    let sql = "INSERT INTO project_collaborators (project_id, user_id) VALUES (?, ?)";
    exec!(db, sql, |q| q.bind(project_id).bind(user_id))
}
