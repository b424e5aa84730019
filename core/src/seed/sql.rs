//! SQL text for each dialect, from a plan. Pure: the runner streams these scripts into the database's
//! own client (mariadb, psql, sqlite3) and parses what the SELECTs print (tab-separated, no headers).
//!
//! Writes are idempotent: users and projects by their unique email / uuid, Yjs documents by their unique
//! project_id (INSERT IGNORE, ON CONFLICT DO NOTHING, INSERT OR IGNORE), collaborators by NOT EXISTS (the
//! app's table has no unique key in older images). Each chunk is one transaction.
//!
//! What a project gets is what the app's own create path (`POST /api/v1/projects`) leaves: its row and
//! an empty Yjs document row, so that `GET /api/projects/uuid/:uuid/yjs-document` answers 200.

use super::plan::{EmailPattern, Plan, MARKER};
use crate::spec::Db;

/// One script to run in one exec: a transaction over `rows` rows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chunk {
    pub what: &'static str,
    /// Its statement's kind and tables, for errors that must not quote the rows.
    pub statement: &'static str,
    pub rows: usize,
    pub sql: String,
}

/// Tables prepare writes; the app creates them when it migrates at boot.
pub const TABLES: [&str; 4] = [
    "users",
    "projects",
    "project_collaborators",
    "yjs_documents",
];

/// The snapshot of a new project: `Y.encodeStateAsUpdate(new Y.Doc())`, i.e. zero structs and an empty
/// delete set, the two bytes 0x00 0x00. The app's `ensureDocument` (src/yjs/doc-manager.ts) stores it on
/// create; `snapshot_version` is left at the table's default, '0' (no update folded in yet).
pub const EMPTY_YJS_UPDATE: [u8; 2] = [0, 0];

/// `EMPTY_YJS_UPDATE` as a blob literal of the dialect.
fn empty_document(db: Db) -> String {
    let hex: String = EMPTY_YJS_UPDATE
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    match db {
        Db::Postgres => format!("'\\x{hex}'::bytea"),
        Db::Mariadb | Db::Sqlite => format!("X'{hex}'"),
    }
}

/// A string literal. Emails and uuids are checked upstream (no quotes or backslashes); doubling quotes
/// and, for MariaDB, backslashes keeps any text safe anyway.
pub fn quote(db: Db, s: &str) -> String {
    let s = s.replace('\'', "''");
    let s = if db == Db::Mariadb {
        s.replace('\\', "\\\\")
    } else {
        s
    };
    format!("'{s}'")
}

fn prelude(db: Db) -> &'static str {
    match db {
        // The app holds the file open too: wait for its locks instead of failing at once.
        Db::Sqlite => "PRAGMA busy_timeout = 30000;\nPRAGMA foreign_keys = ON;\n",
        _ => "",
    }
}

fn begin(db: Db) -> &'static str {
    match db {
        Db::Mariadb => "START TRANSACTION;\n",
        Db::Postgres => "BEGIN;\n",
        // Take the write lock up front, so the transaction never has to upgrade (and deadlock).
        Db::Sqlite => "BEGIN IMMEDIATE;\n",
    }
}

fn transaction(
    db: Db,
    (what, statement): (&'static str, &'static str),
    rows: usize,
    body: String,
) -> Chunk {
    Chunk {
        what,
        statement,
        rows,
        sql: format!("{}{}{body}COMMIT;\n", prelude(db), begin(db)),
    }
}

/// Does the schema exist? Prints `T <count of prepare's tables present>`.
pub fn schema_probe(db: Db) -> String {
    let names = TABLES.map(|t| format!("'{t}'")).join(", ");
    match db {
        Db::Mariadb => format!(
            "SELECT 'T', COUNT(*) FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name IN ({names});\n"
        ),
        Db::Postgres => format!(
            "SELECT 'T', COUNT(*) FROM information_schema.tables WHERE table_schema = current_schema() AND table_name IN ({names});\n"
        ),
        Db::Sqlite => format!(
            "{}SELECT 'T', COUNT(*) FROM sqlite_master WHERE type = 'table' AND name IN ({names});\n",
            prelude(db)
        ),
    }
}

fn marked_users(db: Db) -> String {
    format!("external_identifier = {}", quote(db, MARKER))
}

/// `email` is one of the pattern's: LIKE narrows it, then where `{i}` stands there must be a number as
/// `{i}` writes it (no sign, no leading zero), so that `bench-{i}@x.org` never takes `bench-b0@x.org`
/// (another pattern's account). The length is kept from going negative: PostgreSQL's substr refuses
/// that, and nothing makes it test the LIKE first.
fn of_pattern(db: Db, p: &EmailPattern) -> String {
    let (start, around) = (p.prefix.len() + 1, p.prefix.len() + p.suffix.len());
    let greatest = if db == Db::Sqlite { "MAX" } else { "GREATEST" };
    let mid = format!("SUBSTR(email, {start}, {greatest}(LENGTH(email) - {around}, 0))");
    let number = match db {
        Db::Mariadb => format!("{mid} REGEXP '^(0|[1-9][0-9]*)$'"),
        Db::Postgres => format!("{mid} ~ '^(0|[1-9][0-9]*)$'"),
        Db::Sqlite => {
            format!("({mid} = '0' OR ({mid} GLOB '[1-9]*' AND {mid} NOT GLOB '*[^0-9]*'))")
        }
    };
    format!(
        "email LIKE {} ESCAPE '!' AND {number}",
        quote(db, &p.like())
    )
}

/// What exists before writing, besides the read-back run with it (`readback`: the pattern's accounts,
/// projects, documents and collaborators): `H <hash>` of one of its accounts (to check a re-run's
/// password against), and on PostgreSQL `S 1` when the role is a superuser (`Fresh`).
pub fn state(db: Db, pattern: &EmailPattern) -> String {
    let mine = format!("{} AND {}", marked_users(db), of_pattern(db, pattern));
    format!(
        "{}SELECT 'H', password FROM users WHERE {mine} ORDER BY id LIMIT 1;\n{}",
        prelude(db),
        if db == Db::Postgres {
            "SELECT 'S', CASE WHEN rolsuper THEN 1 ELSE 0 END FROM pg_roles WHERE rolname = current_user;\n"
        } else {
            ""
        }
    )
}

/// The write scripts: users, then projects (owner by email) with their empty Yjs documents in the same
/// transaction, then collaborators, each in chunks of at most `batch` rows, one transaction each. A
/// document is added to a planned project that lacks one even when the project was there before (a
/// stack seeded by an older exectl converges).
///
/// A chunk's rows reach the database as a relation `v`: PostgreSQL loads them with `COPY` into a
/// temporary table (dropped at commit), so no statement with a row literal per row has to be parsed
/// (3x faster at 100,000 rows); MariaDB and SQLite read them from a `WITH v AS (VALUES …)` list. The
/// inserts then join `v` to the tables: one join, not a subquery per row (which PostgreSQL plans one by
/// one: 10x slower at 10,000 rows).
pub fn write_chunks(
    db: Db,
    plan: &Plan,
    hash: &str,
    now_ms: i64,
    batch: usize,
    fresh: Option<Fresh>,
) -> Vec<Chunk> {
    let batch = batch.max(1);
    let mut out = Vec::new();
    let marker = quote(db, MARKER);
    let hash = quote(db, hash);
    if let (Db::Postgres, Some(f)) = (db, fresh) {
        out.extend(fresh_chunks(plan, &hash, &marker, now_ms, batch, f));
        out.extend(collaborator_chunks(db, plan, batch));
        return out;
    }
    let insert = match db {
        Db::Mariadb => "INSERT IGNORE INTO",
        Db::Postgres => "INSERT INTO",
        Db::Sqlite => "INSERT OR IGNORE INTO",
    };
    let conflict = |key: &str| match db {
        Db::Postgres => format!("\nON CONFLICT ({key}) DO NOTHING"),
        _ => String::new(),
    };
    for slice in plan.accounts.chunks(batch) {
        let rows = slice.iter().map(|a| vec![a.email.as_str()]);
        let v = Rows::new(db, &["email"], rows);
        let (ins, on) = (insert, conflict("email"));
        let body = format!(
            "{load}{ins} users (email, password, roles, is_lopd_accepted, quota_mb, external_identifier, is_active, created_at, updated_at)\n\
{with}SELECT v.email, {hash}, '[\"ROLE_USER\"]', 1, 4096, {marker}, 1, {now_ms}, {now_ms} FROM {from}{on};\n",
            load = v.load,
            with = v.with,
            from = v.from,
        );
        out.push(transaction(
            db,
            ("accounts", "INSERT INTO users"),
            slice.len(),
            body,
        ));
    }
    let vis = quote(db, plan.visibility.name());
    let doc = empty_document(db);
    for slice in plan.projects.chunks(batch) {
        let rows = slice.iter().map(|p| {
            vec![
                p.uuid.as_str(),
                p.title.as_str(),
                plan.accounts[p.owner].email.as_str(),
            ]
        });
        let v = Rows::new(db, &["uuid", "title", "email"], rows);
        // The documents: from the same temporary table (PostgreSQL), or by uuid list (a CTE lives
        // for one statement only).
        let of_chunk = if db == Db::Postgres {
            format!("{} JOIN projects p ON p.uuid = v.uuid", v.from)
        } else {
            let uuids = slice
                .iter()
                .map(|p| quote(db, &p.uuid))
                .collect::<Vec<_>>()
                .join(", ");
            format!("projects p WHERE p.uuid IN ({uuids})")
        };
        let body = format!(
            "{load}{ins} projects (uuid, title, owner_id, status, visibility, saved_once, created_at, updated_at)\n\
{with}{select} v.uuid, v.title, u.id, 'active', {vis}, 1, {now_ms}, {now_ms} FROM {from} JOIN users u ON u.email = v.email{on};\n\
{ins} yjs_documents (project_id, snapshot_data, snapshot_version, created_at, updated_at)\n\
SELECT p.id, {doc}, '0', {now_ms}, {now_ms} FROM {of_chunk}{on_doc};\n",
            load = v.load,
            with = v.with,
            from = v.from,
            ins = insert,
            on = conflict("uuid"),
            on_doc = conflict("project_id"),
            select = join_select(db),
        );
        out.push(transaction(
            db,
            ("projects", "INSERT INTO projects and yjs_documents"),
            slice.len(),
            body,
        ));
    }
    out.extend(collaborator_chunks(db, plan, batch));
    out
}

/// The SELECT that joins the rows `v` to the tables by their unique keys. MariaDB: `STRAIGHT_JOIN`,
/// `v` first, so each row finds its user and project by index whatever InnoDB's statistics say: just
/// after a seed they still said 0 users, and the optimizer scanned users × projects × `v` instead
/// (a second prepare of 1,000 accounts within a minute of the first: 35 s, not 0.3 s).
fn join_select(db: Db) -> &'static str {
    match db {
        Db::Mariadb => "SELECT STRAIGHT_JOIN",
        Db::Postgres | Db::Sqlite => "SELECT",
    }
}

/// Collaborators by project uuid and email, in chunks of at most `batch` rows: always after the
/// projects and accounts they join.
fn collaborator_chunks(db: Db, plan: &Plan, batch: usize) -> Vec<Chunk> {
    let mut out = Vec::new();
    let rows: Vec<_> = plan.collaborator_rows().collect();
    for slice in rows.chunks(batch) {
        let members = slice
            .iter()
            .map(|(p, c)| vec![p.uuid.as_str(), plan.accounts[*c].email.as_str()]);
        let v = Rows::new(db, &["uuid", "email"], members);
        let body = format!(
            "{load}INSERT INTO project_collaborators (project_id, user_id)\n\
{with}{select} p.id, u.id FROM {from} JOIN projects p ON p.uuid = v.uuid JOIN users u ON u.email = v.email\n\
WHERE NOT EXISTS (SELECT 1 FROM project_collaborators c WHERE c.project_id = p.id AND c.user_id = u.id);\n",
            load = v.load,
            with = v.with,
            from = v.from,
            select = join_select(db),
        );
        out.push(transaction(
            db,
            ("collaborators", "INSERT INTO project_collaborators"),
            slice.len(),
            body,
        ));
    }
    out
}

/// A PostgreSQL run from none of the pattern's rows (the state read says so): each chunk of accounts
/// with the projects they own and those projects' documents, in one transaction and one statement.
/// The inserts hand their new ids on (`RETURNING`), so neither the projects nor the documents join a
/// whole table (a scan of every user and every project per chunk, growing with the database), and
/// accounts and projects need no wave of their own. As the database's owner (a superuser, as the
/// official image's `POSTGRES_USER` is) the transaction also skips the per-row foreign-key triggers
/// (`session_replication_role = replica`, what `pg_restore` does): every id it writes comes from the
/// row it references, inserted just before, and the read-back checks each one. And no `ON CONFLICT`:
/// nothing of the pattern was there under the stack's lock, so a conflict means another writer, and
/// the chunk fails naming its rows (a speculative insertion per row costs a third of the statement);
/// the next run finds rows there and takes the general path, which converges. PostgreSQL 15, 5,000 of
/// each per statement: 406 ms the general way, 326 in one statement, 221 without the triggers, about
/// 110 without `ON CONFLICT` (BENCHMARKS.md, "Prepare").
fn fresh_chunks(
    plan: &Plan,
    hash: &str,
    marker: &str,
    now_ms: i64,
    batch: usize,
    fresh: Fresh,
) -> Vec<Chunk> {
    let db = Db::Postgres;
    let mut owned: Vec<Vec<usize>> = vec![Vec::new(); plan.accounts.len()];
    for (i, p) in plan.projects.iter().enumerate() {
        owned[p.owner].push(i);
    }
    let vis = quote(db, plan.visibility.name());
    let doc = empty_document(db);
    let mut out = Vec::new();
    for (k, slice) in plan.accounts.chunks(batch).enumerate() {
        let first = k * batch;
        let projects: Vec<usize> = (first..first + slice.len())
            .flat_map(|a| owned[a].iter().copied())
            .collect();
        let accounts = Rows::named(
            db,
            "exectl_seed",
            &["email"],
            slice.iter().map(|a| vec![a.email.as_str()]),
        );
        let owners = Rows::named(
            db,
            "exectl_seed_p",
            &["uuid", "title", "email"],
            projects.iter().map(|&i| {
                let p = &plan.projects[i];
                vec![
                    p.uuid.as_str(),
                    p.title.as_str(),
                    plan.accounts[p.owner].email.as_str(),
                ]
            }),
        );
        let triggers = if fresh.superuser {
            "SET LOCAL session_replication_role = replica;\n"
        } else {
            ""
        };
        let body = format!(
            "{triggers}{}{}WITH u AS (INSERT INTO users (email, password, roles, is_lopd_accepted, quota_mb, external_identifier, is_active, created_at, updated_at)\n\
SELECT v.email, {hash}, '[\"ROLE_USER\"]', 1, 4096, {marker}, 1, {now_ms}, {now_ms} FROM exectl_seed v\n\
RETURNING id, email),\n\
p AS (INSERT INTO projects (uuid, title, owner_id, status, visibility, saved_once, created_at, updated_at)\n\
SELECT w.uuid, w.title, u.id, 'active', {vis}, 1, {now_ms}, {now_ms} FROM exectl_seed_p w JOIN u ON u.email = w.email\n\
RETURNING id)\n\
INSERT INTO yjs_documents (project_id, snapshot_data, snapshot_version, created_at, updated_at)\n\
SELECT p.id, {doc}, '0', {now_ms}, {now_ms} FROM p;\n",
            accounts.load, owners.load,
        );
        out.push(transaction(
            db,
            // Named by its accounts (an error says "accounts 1–5000 of …"); their projects come with them.
            ("accounts", "INSERT INTO users, projects and yjs_documents"),
            slice.len(),
            body,
        ));
    }
    out
}

/// A run that starts from none of its pattern's rows on PostgreSQL (`write_chunks`' fast path).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fresh {
    /// The database role may skip the foreign-key triggers (a superuser).
    pub superuser: bool,
}

/// A chunk's rows as the relation `v` of its statements: `load` goes before them (PostgreSQL: the
/// temporary table and its COPY data), `with` starts the SELECT (the others: the VALUES list), `from`
/// names it in the FROM clause.
struct Rows {
    load: String,
    with: String,
    from: String,
}

impl Rows {
    fn new<'a>(db: Db, cols: &[&str], rows: impl Iterator<Item = Vec<&'a str>>) -> Rows {
        Rows::named(db, "exectl_seed", cols, rows)
    }

    /// PostgreSQL's temporary table `table` (the others' `WITH v` ignores the name).
    fn named<'a>(
        db: Db,
        table: &str,
        cols: &[&str],
        rows: impl Iterator<Item = Vec<&'a str>>,
    ) -> Rows {
        if db == Db::Postgres {
            let defs = cols
                .iter()
                .map(|c| format!("{c} text"))
                .collect::<Vec<_>>()
                .join(", ");
            let mut load = format!(
                "CREATE TEMP TABLE {table} ({defs}) ON COMMIT DROP;\nCOPY {table} FROM STDIN;\n"
            );
            for r in rows {
                let line: Vec<String> = r.iter().map(|f| copy_field(f)).collect();
                load.push_str(&line.join("\t"));
                load.push('\n');
            }
            load.push_str("\\.\n");
            Rows {
                load,
                with: String::new(),
                from: format!("{table} v"),
            }
        } else {
            let values = rows
                .map(|r| {
                    let f: Vec<String> = r.iter().map(|f| quote(db, f)).collect();
                    format!("({})", f.join(", "))
                })
                .collect::<Vec<_>>()
                .join(",\n");
            Rows {
                load: String::new(),
                with: format!("WITH v ({}) AS (VALUES\n{values})\n", cols.join(", ")),
                from: "v".into(),
            }
        }
    }
}

/// A field of COPY's text format: backslash, tab and line ends escaped (emails, titles and uuids are
/// checked upstream and have none; this keeps any text safe anyway).
fn copy_field(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('\t', "\\t")
        .replace('\n', "\\n")
        .replace('\r', "\\r")
}

/// Read back what exists for this pattern: `U id email marked`, and for prepare's accounts
/// `P id uuid owner_id has_document` (1 when the project has its Yjs document row: a LEFT JOIN in the
/// same query, not a second pass over projects and users) and `C project_id user_id`.
pub fn readback(db: Db, pattern: &EmailPattern) -> String {
    readback_parts(db, pattern).concat()
}

/// `readback` as two scripts of about the same cost (the projects with their documents; the accounts
/// and the collaborator rows), to read over two connections at once.
pub fn readback_parts(db: Db, pattern: &EmailPattern) -> [String; 2] {
    let m = marked_users(db);
    let l = of_pattern(db, pattern);
    [
        format!(
            "{}SELECT 'U', id, email, CASE WHEN {m} THEN 1 ELSE 0 END FROM users WHERE {l};\n\
SELECT 'C', c.project_id, c.user_id FROM project_collaborators c JOIN users u ON u.id = c.user_id WHERE u.{m} AND {l};\n",
            prelude(db),
        ),
        format!(
            "{}SELECT 'P', p.id, p.uuid, p.owner_id, CASE WHEN d.project_id IS NULL THEN 0 ELSE 1 END FROM projects p JOIN users u ON u.id = p.owner_id \
LEFT JOIN yjs_documents d ON d.project_id = p.id WHERE u.{m} AND {l};\n",
            prelude(db),
        ),
    ]
}

/// Remove what prepare made for this pattern: its accounts' collaborator rows, the projects they own
/// (with their collaborators and Yjs documents, deleted explicitly: older schemas may lack the cascade and
/// SQLite applies it only with foreign_keys on), then the accounts. Prints `R users projects documents`.
/// Accounts without the marker (the admin, anyone else's) are never touched.
///
/// The app's schema has no index on the foreign keys `projects.owner_id` and
/// `project_collaborators.user_id`/`project_id`, so on PostgreSQL and SQLite every deleted row's
/// cascade check scans the referencing table: 100,000 accounts took longer than minutes. The reset's
/// own transaction makes those indexes first and drops them before its commit (DDL is transactional
/// on both), so each check is a lookup and the schema is left as it was. InnoDB indexes every foreign
/// key already.
pub fn reset(db: Db, pattern: &EmailPattern) -> String {
    let mine = format!(
        "SELECT id FROM users WHERE {} AND {}",
        marked_users(db),
        of_pattern(db, pattern)
    );
    let owned = format!("SELECT id FROM projects WHERE owner_id IN ({mine})");
    let (index, unindex) = match db {
        Db::Mariadb => (String::new(), String::new()),
        Db::Postgres | Db::Sqlite => RESET_INDEXES.iter().fold(
            (String::new(), String::new()),
            |(mut make, mut drop), (name, on)| {
                make += &format!("CREATE INDEX IF NOT EXISTS {name} ON {on};\n");
                drop += &format!("DROP INDEX IF EXISTS {name};\n");
                (make, drop)
            },
        ),
    };
    format!(
        "{prelude}{begin}{index}SELECT 'R', (SELECT COUNT(*) FROM ({mine}) AS a), (SELECT COUNT(*) FROM ({owned}) AS b), \
(SELECT COUNT(*) FROM yjs_documents WHERE project_id IN ({owned}));\n\
DELETE FROM project_collaborators WHERE user_id IN ({mine}) OR project_id IN ({owned});\n\
DELETE FROM yjs_documents WHERE project_id IN ({owned});\n\
DELETE FROM projects WHERE owner_id IN ({mine});\n\
DELETE FROM users WHERE {marked} AND {emails};\n\
{unindex}COMMIT;\n",
        prelude = prelude(db),
        begin = begin(db),
        marked = marked_users(db),
        emails = of_pattern(db, pattern)
    )
}

/// The reset's indexes on the app's unindexed foreign keys: (name, table and column).
const RESET_INDEXES: [(&str, &str); 3] = [
    ("exectl_reset_projects_owner", "projects (owner_id)"),
    (
        "exectl_reset_collaborators_user",
        "project_collaborators (user_id)",
    ),
    (
        "exectl_reset_collaborators_project",
        "project_collaborators (project_id)",
    ),
];

/// Emails of the pattern still there (after a reset: accounts prepare did not make): `L email`.
pub fn remaining(db: Db, pattern: &EmailPattern) -> String {
    format!(
        "SELECT 'L', email FROM users WHERE {};\n",
        of_pattern(db, pattern)
    )
}

/// The client command to run in the database container (or the SQLite one-shot), reading a script on
/// stdin, stopping at the first error, printing rows tab-separated without headers.
pub fn client(db: Db) -> Vec<&'static str> {
    match db {
        Db::Mariadb => vec![
            "sh",
            "-c",
            "MYSQL_PWD=\"$MARIADB_PASSWORD\" exec mariadb --batch --skip-column-names -u exelearning exelearning",
        ],
        Db::Postgres => vec![
            "psql",
            "-X",
            "-q",
            "-A",
            "-t",
            "-F",
            "\t",
            "-v",
            "ON_ERROR_STOP=1",
            // Stdin as a named script: its errors then say `psql:<stdin>:LINE:`, so a failed write
            // can be told by its statement and rows rather than quoted.
            "-f",
            "-",
            "-U",
            "exelearning",
            "exelearning",
        ],
        Db::Sqlite => vec![
            "sqlite3",
            "-batch",
            "-bail",
            "-noheader",
            "-separator",
            "\t",
            SQLITE_URI,
        ],
    }
}

/// The app's SQLite database in its data volume (DB_PATH of the rendered stack), opened read-write but
/// never created: an absent file means the app has not migrated yet.
pub const SQLITE_URI: &str = "file:/mnt/data/exelearning.db?mode=rw";

/// Rows of a client's output: tag → fields after it.
pub fn rows<'a>(out: &'a str, tag: &'a str) -> impl Iterator<Item = Vec<&'a str>> + 'a {
    out.lines().filter_map(move |l| {
        let mut f = l.split('\t');
        (f.next() == Some(tag)).then(|| f.collect())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::seed::plan::{plan, shape, EmailPattern, Visibility};

    fn small() -> Plan {
        plan(
            shape(4, Some(2), Some(2)).unwrap(),
            &EmailPattern::parse("u{i}@x.org").unwrap(),
            Visibility::Private,
        )
    }

    #[test]
    fn postgres_chunks_exact() {
        let p = small();
        let c = write_chunks(Db::Postgres, &p, "$2b$04$h", 1700000000000, 3, None);
        assert_eq!(
            c.iter().map(|c| (c.what, c.rows)).collect::<Vec<_>>(),
            vec![
                ("accounts", 3),
                ("accounts", 1),
                ("projects", 2),
                ("collaborators", 2)
            ]
        );
        assert_eq!(
            c[1].sql,
            "BEGIN;\nCREATE TEMP TABLE exectl_seed (email text) ON COMMIT DROP;\nCOPY exectl_seed FROM STDIN;\nu3@x.org\n\\.\n\
INSERT INTO users (email, password, roles, is_lopd_accepted, quota_mb, external_identifier, is_active, created_at, updated_at)\n\
SELECT v.email, '$2b$04$h', '[\"ROLE_USER\"]', 1, 4096, 'exectl-prepare', 1, 1700000000000, 1700000000000 FROM exectl_seed v\n\
ON CONFLICT (email) DO NOTHING;\nCOMMIT;\n"
        );
        let (u0, u1) = (&p.projects[0].uuid, &p.projects[1].uuid);
        let (o0, o1) = (
            &p.accounts[p.projects[0].owner].email,
            &p.accounts[p.projects[1].owner].email,
        );
        assert_eq!(
            c[2].sql,
            format!(
                "BEGIN;\nCREATE TEMP TABLE exectl_seed (uuid text, title text, email text) ON COMMIT DROP;\nCOPY exectl_seed FROM STDIN;\n\
{u0}\tbench-project-0\t{o0}\n{u1}\tbench-project-1\t{o1}\n\\.\n\
INSERT INTO projects (uuid, title, owner_id, status, visibility, saved_once, created_at, updated_at)\n\
SELECT v.uuid, v.title, u.id, 'active', 'private', 1, 1700000000000, 1700000000000 FROM exectl_seed v JOIN users u ON u.email = v.email\n\
ON CONFLICT (uuid) DO NOTHING;\n\
INSERT INTO yjs_documents (project_id, snapshot_data, snapshot_version, created_at, updated_at)\n\
SELECT p.id, '\\x0000'::bytea, '0', 1700000000000, 1700000000000 FROM exectl_seed v JOIN projects p ON p.uuid = v.uuid\n\
ON CONFLICT (project_id) DO NOTHING;\nCOMMIT;\n"
            )
        );
        let (m0, m1) = (
            &p.accounts[p.projects[0].collaborators[0]].email,
            &p.accounts[p.projects[1].collaborators[0]].email,
        );
        assert_eq!(
            c[3].sql,
            format!(
                "BEGIN;\nCREATE TEMP TABLE exectl_seed (uuid text, email text) ON COMMIT DROP;\nCOPY exectl_seed FROM STDIN;\n\
{u0}\t{m0}\n{u1}\t{m1}\n\\.\n\
INSERT INTO project_collaborators (project_id, user_id)\n\
SELECT p.id, u.id FROM exectl_seed v JOIN projects p ON p.uuid = v.uuid JOIN users u ON u.email = v.email\n\
WHERE NOT EXISTS (SELECT 1 FROM project_collaborators c WHERE c.project_id = p.id AND c.user_id = u.id);\nCOMMIT;\n"
            )
        );
    }

    #[test]
    fn a_fresh_postgres_run_writes_accounts_projects_and_documents_in_one_statement() {
        let p = small();
        let fresh = |superuser| Some(Fresh { superuser });
        let c = write_chunks(Db::Postgres, &p, "$2b$04$h", 1700000000000, 3, fresh(true));
        // Accounts 0–2 own projects 0 and 1; account 3 owns none. Collaborators after, as ever.
        assert_eq!(
            c.iter().map(|c| (c.what, c.rows)).collect::<Vec<_>>(),
            vec![("accounts", 3), ("accounts", 1), ("collaborators", 2)]
        );
        let emails: Vec<&str> = p.accounts.iter().map(|a| a.email.as_str()).collect();
        let (u0, u1) = (&p.projects[0].uuid, &p.projects[1].uuid);
        assert_eq!(
            c[0].sql,
            format!(
                "BEGIN;\nSET LOCAL session_replication_role = replica;\n\
CREATE TEMP TABLE exectl_seed (email text) ON COMMIT DROP;\nCOPY exectl_seed FROM STDIN;\n{}\n{}\n{}\n\\.\n\
CREATE TEMP TABLE exectl_seed_p (uuid text, title text, email text) ON COMMIT DROP;\nCOPY exectl_seed_p FROM STDIN;\n\
{u0}\tbench-project-0\t{}\n{u1}\tbench-project-1\t{}\n\\.\n\
WITH u AS (INSERT INTO users (email, password, roles, is_lopd_accepted, quota_mb, external_identifier, is_active, created_at, updated_at)\n\
SELECT v.email, '$2b$04$h', '[\"ROLE_USER\"]', 1, 4096, 'exectl-prepare', 1, 1700000000000, 1700000000000 FROM exectl_seed v\n\
RETURNING id, email),\n\
p AS (INSERT INTO projects (uuid, title, owner_id, status, visibility, saved_once, created_at, updated_at)\n\
SELECT w.uuid, w.title, u.id, 'active', 'private', 1, 1700000000000, 1700000000000 FROM exectl_seed_p w JOIN u ON u.email = w.email\n\
RETURNING id)\n\
INSERT INTO yjs_documents (project_id, snapshot_data, snapshot_version, created_at, updated_at)\n\
SELECT p.id, '\\x0000'::bytea, '0', 1700000000000, 1700000000000 FROM p;\nCOMMIT;\n",
                emails[0], emails[1], emails[2], emails[0], emails[1]
            )
        );
        // The last chunk: one account, no project (an empty COPY).
        assert!(c[1].sql.contains(&format!(
            "COPY exectl_seed FROM STDIN;\n{}\n\\.\n",
            emails[3]
        )));
        assert!(c[1].sql.contains("COPY exectl_seed_p FROM STDIN;\n\\.\n"));
        // Not a superuser: the foreign keys are checked row by row, the rest is the same.
        let checked = write_chunks(Db::Postgres, &p, "$2b$04$h", 1700000000000, 3, fresh(false));
        assert_eq!(
            checked[0].sql,
            c[0].sql
                .replace("SET LOCAL session_replication_role = replica;\n", "")
        );
        // The other databases ignore it.
        assert_eq!(
            write_chunks(Db::Mariadb, &p, "h", 1, 10, fresh(true)),
            write_chunks(Db::Mariadb, &p, "h", 1, 10, None)
        );
    }

    #[test]
    fn mariadbs_joins_read_the_rows_first_whatever_its_statistics_say() {
        let p = small();
        let joins = |db| {
            write_chunks(db, &p, "h", 1, 10, None)
                .iter()
                .filter(|c| c.sql.contains(" JOIN users u ON u.email = v.email"))
                .map(|c| c.sql.matches("SELECT STRAIGHT_JOIN ").count())
                .collect::<Vec<_>>()
        };
        // The projects' owner join and the collaborators' join: each forced to start from `v`.
        assert_eq!(joins(Db::Mariadb), [1, 1]);
        assert_eq!(joins(Db::Sqlite), [0, 0]);
        assert_eq!(joins(Db::Postgres), [0, 0]);
    }

    #[test]
    fn copy_fields_are_escaped() {
        assert_eq!(copy_field("a\\b\tc\nd\re"), "a\\\\b\\tc\\nd\\re");
    }

    #[test]
    fn mariadb_and_sqlite_read_a_values_list() {
        let p = small();
        let m = write_chunks(Db::Mariadb, &p, "h", 1, 10, None);
        assert_eq!(
            m[0].sql,
            "START TRANSACTION;\nINSERT IGNORE INTO users (email, password, roles, is_lopd_accepted, quota_mb, external_identifier, is_active, created_at, updated_at)\n\
WITH v (email) AS (VALUES\n('u0@x.org'),\n('u1@x.org'),\n('u2@x.org'),\n('u3@x.org'))\n\
SELECT v.email, 'h', '[\"ROLE_USER\"]', 1, 4096, 'exectl-prepare', 1, 1, 1 FROM v;\nCOMMIT;\n"
        );
        let s = write_chunks(Db::Sqlite, &p, "h", 1, 10, None);
        assert!(s[1].sql.starts_with(
            "PRAGMA busy_timeout = 30000;\nPRAGMA foreign_keys = ON;\nBEGIN IMMEDIATE;\nINSERT OR IGNORE INTO projects"
        ));
        assert!(m[1]
            .sql
            .starts_with("START TRANSACTION;\nINSERT IGNORE INTO projects"));
        let uuids = format!("'{}', '{}'", p.projects[0].uuid, p.projects[1].uuid);
        for (c, insert) in [
            (&m[1], "INSERT IGNORE INTO"),
            (&s[1], "INSERT OR IGNORE INTO"),
        ] {
            assert!(
                c.sql.ends_with(&format!(
                    "FROM v JOIN users u ON u.email = v.email;\n{insert} yjs_documents (project_id, snapshot_data, snapshot_version, created_at, updated_at)\n\
SELECT p.id, X'0000', '0', 1, 1 FROM projects p WHERE p.uuid IN ({uuids});\nCOMMIT;\n"
                )),
                "{}",
                c.sql
            );
        }
        assert_eq!(s.len(), 3);
    }

    #[test]
    fn quoting() {
        assert_eq!(quote(Db::Postgres, "a'b\\c"), "'a''b\\c'");
        assert_eq!(quote(Db::Mariadb, "a'b\\c"), "'a''b\\\\c'");
    }

    #[test]
    fn reset_touches_only_marked_pattern_accounts() {
        let p = EmailPattern::parse("bench_{i}@x.org").unwrap();
        let r = reset(Db::Mariadb, &p);
        let emails = "email LIKE 'bench!_%@x.org' ESCAPE '!' AND SUBSTR(email, 7, GREATEST(LENGTH(email) - 12, 0)) REGEXP '^(0|[1-9][0-9]*)$'";
        assert!(r.contains(&format!(
            "SELECT id FROM users WHERE external_identifier = 'exectl-prepare' AND {emails}"
        )));
        assert!(r.contains(&format!(
            "DELETE FROM users WHERE external_identifier = 'exectl-prepare' AND {emails};"
        )));
        assert!(r.starts_with("START TRANSACTION;\n") && r.ends_with("COMMIT;\n"));
        assert!(
            !r.contains("INDEX"),
            "InnoDB indexes its foreign keys itself"
        );
    }

    #[test]
    fn reset_indexes_the_foreign_keys_for_its_own_transaction_only() {
        let p = EmailPattern::parse("u{i}@x.org").unwrap();
        for db in [Db::Postgres, Db::Sqlite] {
            let r = reset(db, &p);
            let begin = r.find(begin(db)).unwrap();
            let make = r
                .find("CREATE INDEX IF NOT EXISTS exectl_reset_projects_owner ON projects (owner_id);")
                .unwrap();
            let first_delete = r.find("DELETE FROM").unwrap();
            let drop = r
                .find("DROP INDEX IF EXISTS exectl_reset_projects_owner;")
                .unwrap();
            let last_delete = r.rfind("DELETE FROM").unwrap();
            let commit = r.rfind("COMMIT;").unwrap();
            assert!(begin < make && make < first_delete, "{r}");
            assert!(last_delete < drop && drop < commit, "{r}");
            assert_eq!(r.matches("CREATE INDEX").count(), 3);
            assert_eq!(r.matches("DROP INDEX").count(), 3);
        }
    }

    #[test]
    fn pattern_rows_need_a_number_where_i_stands() {
        // These exact predicates were run against MariaDB 11 and SQLite 3 (the fixtures): of
        // hp-a-0, hp-a-12, hp-a-x0, hp-a-01, hp-a-, a@b.org and hp-a-3@x.org.uk they keep the first two.
        let p = EmailPattern::parse("hp-a-{i}@x.org").unwrap();
        let mid = "SUBSTR(email, 6, GREATEST(LENGTH(email) - 11, 0))";
        assert_eq!(
            remaining(Db::Postgres, &p),
            format!("SELECT 'L', email FROM users WHERE email LIKE 'hp-a-%@x.org' ESCAPE '!' AND {mid} ~ '^(0|[1-9][0-9]*)$';\n")
        );
        assert!(remaining(Db::Mariadb, &p).contains(&format!("{mid} REGEXP '^(0|[1-9][0-9]*)$'")));
        let lite = mid.replace("GREATEST", "MAX");
        assert!(remaining(Db::Sqlite, &p).contains(&format!(
            "({lite} = '0' OR ({lite} GLOB '[1-9]*' AND {lite} NOT GLOB '*[^0-9]*'))"
        )));
    }

    #[test]
    fn documents_are_counted_read_back_and_reset() {
        let p = EmailPattern::parse("u{i}@x.org").unwrap();
        for db in [Db::Mariadb, Db::Postgres, Db::Sqlite] {
            // What exists before is counted from the same read-back, run with the state.
            assert!(!state(db, &p).contains("COUNT"));
            assert_eq!(state(db, &p).contains("rolsuper"), db == Db::Postgres);
            assert!(readback(db, &p).contains(
                "CASE WHEN d.project_id IS NULL THEN 0 ELSE 1 END FROM projects p JOIN users u ON u.id = p.owner_id \
LEFT JOIN yjs_documents d ON d.project_id = p.id WHERE u.external_identifier = 'exectl-prepare' AND "
            ));
            let r = reset(db, &p);
            let docs = r.find("DELETE FROM yjs_documents WHERE project_id IN (SELECT id FROM projects WHERE owner_id IN").unwrap();
            assert!(
                docs < r.find("DELETE FROM projects").unwrap(),
                "documents go before their projects"
            );
            assert!(r.contains(
                "(SELECT COUNT(*) FROM yjs_documents WHERE project_id IN (SELECT id FROM projects"
            ));
        }
        assert!(TABLES.contains(&"yjs_documents"));
    }

    #[test]
    fn empty_document_literals() {
        // Checked against the fixtures: length 2 and hex 0000 on PostgreSQL 15, MariaDB 11 and SQLite 3.
        assert_eq!(empty_document(Db::Postgres), "'\\x0000'::bytea");
        assert_eq!(empty_document(Db::Mariadb), "X'0000'");
        assert_eq!(empty_document(Db::Sqlite), "X'0000'");
    }

    #[test]
    fn parses_tagged_rows() {
        let out = "T\t3\nU\t1\ta@x.org\t1\nnoise\nU\t2\tb@x.org\t0\n";
        let u: Vec<_> = rows(out, "U").collect();
        assert_eq!(
            u,
            vec![vec!["1", "a@x.org", "1"], vec!["2", "b@x.org", "0"]]
        );
        assert_eq!(rows(out, "T").next(), Some(vec!["3"]));
    }
}
