//! The real app's tables (contract §3: Kysely migrations 001 + 005), as each dialect's DDL. Column names,
//! types and defaults match, so rows that exectl seeds read the same in the stand-in and in the real app.
//! Only the four tables the stand-in uses are created; `kysely_migration` is not.

use crate::config::Dialect;

pub fn ddl(dialect: Dialect) -> Vec<String> {
    // The primary key and the snapshot's blob type are the only per-dialect differences.
    let (pk, blob, suffix) = match dialect {
        Dialect::Sqlite => ("integer PRIMARY KEY AUTOINCREMENT", "blob", ""),
        Dialect::MySql => (
            "integer PRIMARY KEY AUTO_INCREMENT",
            "longblob",
            " DEFAULT CHARSET=utf8mb4",
        ),
        Dialect::Postgres => ("serial PRIMARY KEY", "bytea", ""),
    };
    vec![
        format!(
            "CREATE TABLE IF NOT EXISTS users (
  id {pk},
  email varchar(180) NOT NULL UNIQUE,
  user_id varchar(255) NULL,
  password text NOT NULL,
  roles text NOT NULL DEFAULT '[]',
  is_lopd_accepted integer NOT NULL DEFAULT 0,
  quota_mb integer,
  external_identifier varchar(180),
  api_token varchar(255),
  is_active integer NOT NULL DEFAULT 1,
  created_at bigint,
  updated_at bigint){suffix}"
        ),
        format!(
            "CREATE TABLE IF NOT EXISTS projects (
  id {pk},
  uuid varchar(36) NOT NULL UNIQUE,
  title varchar(255) NOT NULL,
  description text,
  owner_id integer NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  status varchar(50) NOT NULL DEFAULT 'active',
  visibility varchar(20) NOT NULL DEFAULT 'private',
  language varchar(10),
  author varchar(255),
  license varchar(255),
  last_accessed_at bigint,
  saved_once integer NOT NULL DEFAULT 0,
  platform_id varchar(64),
  created_at bigint,
  updated_at bigint){suffix}"
        ),
        format!(
            "CREATE TABLE IF NOT EXISTS project_collaborators (
  project_id integer NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  user_id integer NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  UNIQUE (project_id, user_id)){suffix}"
        ),
        format!(
            "CREATE TABLE IF NOT EXISTS yjs_documents (
  id {pk},
  project_id integer NOT NULL UNIQUE REFERENCES projects(id) ON DELETE CASCADE,
  snapshot_data {blob} NOT NULL,
  snapshot_version text DEFAULT '0',
  created_at bigint,
  updated_at bigint){suffix}"
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_dialect_keys_and_blobs() {
        let pg = ddl(Dialect::Postgres).join("\n");
        assert!(pg.contains("id serial PRIMARY KEY") && pg.contains("snapshot_data bytea"));
        let my = ddl(Dialect::MySql).join("\n");
        assert!(my.contains("AUTO_INCREMENT") && my.contains("longblob"));
        let lite = ddl(Dialect::Sqlite).join("\n");
        assert!(lite.contains("AUTOINCREMENT") && lite.contains("snapshot_data blob"));
        for sql in [pg, my, lite] {
            assert!(sql.contains("roles text NOT NULL DEFAULT '[]'"));
            assert!(sql.contains("saved_once integer NOT NULL DEFAULT 0"));
        }
    }
}
