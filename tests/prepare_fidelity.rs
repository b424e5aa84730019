//! The SQL seed leaves what the app's own create path leaves, on MariaDB, PostgreSQL and SQLite: the
//! stand-in (deployed by exectl) makes two accounts, a project and its collaborator through its HTTP API
//! (`POST /api/v1/users`, `POST /api/v1/projects`, `POST .../collaborators`), `exectl prepare` makes the
//! same through SQL; every row of users, projects, project_collaborators and yjs_documents of both is
//! dumped (every column the table has), ids / uuids / timestamps / hash salts masked, and compared.
//! Then: `GET /api/projects/uuid/:uuid/yjs-document` answers 200 with the empty document for every
//! seeded project; a stack seeded without documents gets them on a re-run, a larger N adds only the
//! difference, and `--reset` removes the documents with their projects.

use crate::common;

use common::*;
use exectl::app::{Client, Endpoint, Timeouts};
use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

const PASSWORD: &str = "Fidelity-1234";
const TABLES: [&str; 4] = [
    "users",
    "projects",
    "project_collaborators",
    "yjs_documents",
];

/// A script in the stack's database as the app's user, with tab-separated output and NULL as `NULL`.
async fn db_sql(d: &bollard::Docker, stack: &str, db: &str, script: &str) -> String {
    if db == "mariadb" {
        return sql(d, stack, db, script).await;
    }
    if db == "postgres" {
        let cmd = [
            "psql",
            "-X",
            "-q",
            "-A",
            "-t",
            "-F",
            "\t",
            "-v",
            "ON_ERROR_STOP=1",
            "-U",
            "exelearning",
            "exelearning",
        ];
        let container = format!("exectl-{stack}-postgres");
        let out = exectl::sut::exec(d, &container, &cmd, Some(script.as_bytes()))
            .await
            .unwrap();
        assert_eq!(out.exit_code, 0, "{script}: {}", out.stderr);
        return out.stdout;
    }
    use std::io::Write;
    let mut child = std::process::Command::new("docker")
        .args([
            "run",
            "--rm",
            "-i",
            "--network",
            "none",
            "--user",
            "1000:1000",
            "--label",
            &format!("exectl.stack={stack}"),
            "-v",
            &format!("exectl-{stack}-app-data:/mnt/data"),
            "exectl-fixture/sqlite:3",
            "sqlite3",
            "-bail",
            "-separator",
            "\t",
            "/mnt/data/exelearning.db",
        ])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(script.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{script}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The table's columns, in order, as the database has them (so a column the seed forgets is seen).
async fn columns(d: &bollard::Docker, stack: &str, db: &str, table: &str) -> Vec<String> {
    let q = match db {
        "postgres" => format!("SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = '{table}' ORDER BY ordinal_position;\n"),
        "mariadb" => format!("SELECT column_name FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = '{table}' ORDER BY ordinal_position;\n"),
        _ => format!("SELECT name FROM pragma_table_info('{table}');\n"),
    };
    let cols: Vec<String> = db_sql(d, stack, db, &q)
        .await
        .lines()
        .map(|l| l.trim().to_string())
        .filter(|l| !l.is_empty())
        .collect();
    assert!(!cols.is_empty(), "no columns for {table} on {db}");
    cols
}

/// One column as text: blobs as lowercase hex, NULL as `NULL`.
fn as_text(db: &str, col: &str) -> String {
    match (db, col) {
        ("postgres", "snapshot_data") => format!("COALESCE(encode({col}, 'hex'), 'NULL')"),
        (_, "snapshot_data") => format!("COALESCE(lower(hex({col})), 'NULL')"),
        ("postgres", _) => format!("COALESCE({col}::text, 'NULL')"),
        ("mariadb", _) => format!("COALESCE(CAST({col} AS CHAR), 'NULL')"),
        _ => format!("COALESCE(CAST({col} AS TEXT), 'NULL')"),
    }
}

type Row = BTreeMap<String, String>;

/// Every row of the four tables, every column, as column → text.
async fn dump(d: &bollard::Docker, stack: &str, db: &str) -> HashMap<&'static str, Vec<Row>> {
    let mut out = HashMap::new();
    for table in TABLES {
        let cols = columns(d, stack, db, table).await;
        let select = cols
            .iter()
            .map(|c| as_text(db, c))
            .collect::<Vec<_>>()
            .join(", ");
        let text = db_sql(d, stack, db, &format!("SELECT {select} FROM {table};\n")).await;
        let rows = text
            .lines()
            .filter(|l| !l.is_empty())
            .map(|l| {
                let f: Vec<&str> = l.split('\t').collect();
                assert_eq!(f.len(), cols.len(), "{table}: {l:?}");
                cols.iter()
                    .cloned()
                    .zip(f.iter().map(|v| v.to_string()))
                    .collect()
            })
            .collect();
        out.insert(table, rows);
    }
    out
}

/// One side's rows with what legitimately differs masked: ids (replaced by what they point at: an
/// account's role, a project's title), uuids (checked canonical first), timestamps (checked set first),
/// the bcrypt salt and digest (the `$2b$10$` algorithm and cost are kept), and the email's own text
/// (kept as its role). `users.external_identifier` is prepare's marker (how `--reset` knows its rows):
/// the one column the seed writes on purpose where the app leaves NULL; checked, then masked.
fn side(
    all: &HashMap<&'static str, Vec<Row>>,
    role_of: &HashMap<String, String>,
    marker: Option<&str>,
) -> BTreeMap<&'static str, Vec<Row>> {
    let users: Vec<&Row> = all["users"]
        .iter()
        .filter(|u| role_of.contains_key(&u["email"]))
        .collect();
    assert_eq!(users.len(), role_of.len(), "{:?}", all["users"]);
    let user_label: HashMap<&str, String> = users
        .iter()
        .map(|u| (u["id"].as_str(), role_of[&u["email"]].clone()))
        .collect();
    let projects: Vec<&Row> = all["projects"]
        .iter()
        .filter(|p| user_label.contains_key(p["owner_id"].as_str()))
        .collect();
    let project_label: HashMap<&str, String> = projects
        .iter()
        .map(|p| (p["id"].as_str(), format!("project {}", p["title"])))
        .collect();
    let stamp = |r: &mut Row, table: &str| {
        for c in ["created_at", "updated_at"] {
            if let Some(v) = r.get_mut(c) {
                assert!(v.parse::<i64>().is_ok_and(|t| t > 0), "{table}.{c} = {v}");
                *v = "<ms>".into();
            }
        }
        if let Some(v) = r.get_mut("id") {
            *v = "<id>".into();
        }
    };
    let mut out = BTreeMap::new();
    out.insert(
        "users",
        users
            .iter()
            .map(|u| {
                let mut r = (*u).clone();
                stamp(&mut r, "users");
                let pw = r["password"].clone();
                assert!(pw.starts_with("$2b$10$") && pw.len() == 60, "{pw}");
                r.insert("password".into(), "$2b$10$<salt+digest>".into());
                assert_eq!(r["external_identifier"], marker.unwrap_or("NULL"));
                r.insert("external_identifier".into(), "<marker>".into());
                r.insert("email".into(), role_of[&u["email"]].clone());
                r
            })
            .collect::<Vec<_>>(),
    );
    out.insert(
        "projects",
        projects
            .iter()
            .map(|p| {
                let mut r = (*p).clone();
                stamp(&mut r, "projects");
                let u = &r["uuid"];
                assert!(
                    uuid::Uuid::parse_str(u).is_ok() && u.len() == 36 && *u == u.to_lowercase(),
                    "{u}"
                );
                r.insert("uuid".into(), "<uuid>".into());
                r.insert(
                    "owner_id".into(),
                    user_label[p["owner_id"].as_str()].clone(),
                );
                r
            })
            .collect(),
    );
    let mut collab: Vec<Row> = all["project_collaborators"]
        .iter()
        .filter(|c| project_label.contains_key(c["project_id"].as_str()))
        .map(|c| {
            let mut r = c.clone();
            stamp(&mut r, "project_collaborators");
            r.insert(
                "project_id".into(),
                project_label[c["project_id"].as_str()].clone(),
            );
            r.insert("user_id".into(), user_label[c["user_id"].as_str()].clone());
            r
        })
        .collect();
    collab.sort();
    out.insert("project_collaborators", collab);
    out.insert(
        "yjs_documents",
        all["yjs_documents"]
            .iter()
            .filter(|d| project_label.contains_key(d["project_id"].as_str()))
            .map(|d| {
                let mut r = d.clone();
                stamp(&mut r, "yjs_documents");
                r.insert(
                    "project_id".into(),
                    project_label[d["project_id"].as_str()].clone(),
                );
                r
            })
            .collect(),
    );
    out
}

fn prepare(x: &Exectl, stack: &str, args: &[&str]) -> serde_json::Value {
    let mut full = vec!["prepare", "--stack", stack, "--json"];
    full.extend(args);
    serde_json::from_str(&x.ok(&full)).unwrap()
}

/// The API side: the admin makes two accounts, the first creates a project and adds the second. Then,
/// as the editor's first save does, `POST .../yjs-document?markSaved=true` with the empty document
/// (`prepare --via api` does the same): the SQL seed writes saved_once = 1 on purpose (contract §7.6:
/// the UI lists the project and cleanup never deletes it).
async fn through_the_api(x: &Exectl, stack: &str, door: &Endpoint) -> String {
    let client = Client::new(4, Timeouts::all(Duration::from_secs(30)));
    let secrets = read(&x.stack_dir(stack).join("secrets.env"));
    let admin_pw = exectl_core::secrets::Secrets::parse(&secrets)
        .get("ADMIN_PASSWORD")
        .to_string();
    // Traefik may take a moment to route a new stack's Host.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let admin = loop {
        match client
            .login(door, exectl_core::render::ADMIN_EMAIL, &admin_pw)
            .await
        {
            Ok(l) => break l.token,
            Err(e) if std::time::Instant::now() > deadline => panic!("admin login: {e:?}"),
            Err(_) => tokio::time::sleep(Duration::from_millis(300)).await,
        }
    };
    for i in 0..2 {
        let a = client
            .create_user(door, &admin, &format!("fid-api-{i}@x.org"), PASSWORD)
            .answer()
            .await
            .unwrap();
        assert_eq!(a.status, 201, "{:?}", a.body);
    }
    let owner = client
        .login(door, "fid-api-0@x.org", PASSWORD)
        .await
        .unwrap()
        .token;
    let p = client
        .create_project(door, &owner, "bench-project-0")
        .answer()
        .await
        .unwrap();
    assert_eq!(p.status, 201, "{:?}", p.body);
    let uuid = p.body["data"]["uuid"].as_str().unwrap().to_string();
    // Right after the create: the empty document is there.
    assert_eq!(get_document(door, &uuid, &owner).await, (200, vec![0, 0]));
    let c = client
        .add_collaborator(door, &owner, &uuid, "fid-api-1@x.org")
        .answer()
        .await
        .unwrap();
    assert_eq!(c.body["responseMessage"], "OK", "{:?}", c.body);
    let s = client
        .save_document(door, &owner, &uuid, vec![0, 0], true)
        .answer()
        .await
        .unwrap();
    assert!(s.status.is_success(), "{:?}", s.body);
    uuid
}

/// `GET /api/projects/uuid/:uuid/yjs-document` through the front door: status and body.
async fn get_document(door: &Endpoint, uuid: &str, token: &str) -> (u16, Vec<u8>) {
    let mut req = reqwest::Client::new()
        .get(door.http(&format!("/api/projects/uuid/{uuid}/yjs-document")))
        .bearer_auth(token);
    if let Some(h) = &door.host_header {
        req = req.header("Host", h);
    }
    let r = req.send().await.unwrap();
    let status = r.status().as_u16();
    (status, r.bytes().await.unwrap().to_vec())
}

async fn count(d: &bollard::Docker, stack: &str, db: &str, q: &str) -> u64 {
    db_sql(d, stack, db, &format!("{q};\n"))
        .await
        .trim()
        .parse()
        .unwrap()
}

async fn fidelity(db: &str, short: &str) {
    let d = docker().await;
    let s = Stack::new(short).await;
    let (x, stack) = (&*s.x, s.name.as_str());
    let port = Stack::port();
    let out = x.deploy_json(&[
        "single",
        "--stack",
        stack,
        "--db",
        db,
        "--http-port",
        &port,
        "--nofile",
        "20000",
    ]);
    assert_eq!(out["ok"], true, "{out}");
    let door = Endpoint::at(
        format!("127.0.0.1:{port}").parse().unwrap(),
        Some(format!("{stack}.localhost")),
    );

    // The same accounts and project, once through the app and once through the SQL seed.
    through_the_api(x, stack, &door).await;
    let manifest = tempfile::tempdir().unwrap();
    let o = manifest.path().to_str().unwrap();
    let seeded = prepare(
        x,
        stack,
        &[
            "--accounts",
            "2",
            "--projects",
            "1",
            "--users-per-project",
            "2",
            "--email-pattern",
            "fid-sql-{i}@x.org",
            "--password",
            PASSWORD,
            "--out",
            o,
        ],
    );

    let all = dump(&d, stack, db).await;
    let api_roles: HashMap<String, String> = [
        ("fid-api-0@x.org", "owner@x.org"),
        ("fid-api-1@x.org", "collaborator@x.org"),
    ]
    .map(|(e, r)| (e.to_string(), r.to_string()))
    .into();
    let accounts: serde_json::Value =
        serde_json::from_str(&read(&manifest.path().join("accounts.json"))).unwrap();
    let sql_roles: HashMap<String, String> = accounts
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            (
                a["email"].as_str().unwrap().to_string(),
                format!("{}@x.org", a["role"].as_str().unwrap()),
            )
        })
        .collect();
    let by_api = side(&all, &api_roles, None);
    let by_sql = side(&all, &sql_roles, Some("exectl-prepare"));
    for t in TABLES {
        assert!(!by_api[t].is_empty(), "the app's path left no {t} row");
        assert_eq!(
            by_sql[t], by_api[t],
            "{db}: {t} rows of the SQL seed differ from the app's create path"
        );
    }

    assert_eq!(seeded["added"]["documents"], 1, "{seeded}");

    // Every seeded project's document answers 200 with the empty document, through the front door.
    let many = tempfile::tempdir().unwrap();
    let m = many.path().to_str().unwrap();
    let base = [
        "--email-pattern",
        "fid-many-{i}@x.org",
        "--password",
        PASSWORD,
        "--bcrypt-cost",
        "4",
        "--out",
        m,
    ];
    let run = |n: &str| {
        let mut a = vec!["--accounts", n, "--projects", n];
        a.extend(base);
        prepare(x, stack, &a)
    };
    let first = run("60");
    assert_eq!(first["added"]["documents"], 60, "{first}");
    let token = Client::new(4, Timeouts::all(Duration::from_secs(30)))
        .login(&door, "fid-many-0@x.org", PASSWORD)
        .await
        .unwrap()
        .token;
    let projects: serde_json::Value =
        serde_json::from_str(&read(&many.path().join("projects.json"))).unwrap();
    let uuids: Vec<String> = projects
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["uuid"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(uuids.len(), 60);
    for u in &uuids {
        assert_eq!(
            get_document(&door, u, &token).await,
            (200, vec![0, 0]),
            "{u}"
        );
    }

    // A stack seeded without documents (an older exectl) converges: a re-run adds only them.
    let mine = "SELECT p.id FROM projects p JOIN users u ON u.id = p.owner_id WHERE u.email LIKE 'fid-many-%'";
    let lacking = format!("{mine} AND p.title IN ('bench-project-3', 'bench-project-7')");
    let ids: Vec<String> = db_sql(&d, stack, db, &format!("{lacking};\n"))
        .await
        .lines()
        .map(str::to_string)
        .collect();
    assert_eq!(ids.len(), 2);
    db_sql(
        &d,
        stack,
        db,
        &format!(
            "DELETE FROM yjs_documents WHERE project_id IN ({});\n",
            ids.join(", ")
        ),
    )
    .await;
    let again = run("60");
    assert_eq!(again["added"]["projects"], 0, "{again}");
    assert_eq!(again["added"]["documents"], 2, "{again}");
    let rerun = run("60");
    assert_eq!(rerun["added"]["documents"], 0, "{rerun}");
    // A larger N adds only the difference, documents too.
    let larger = run("75");
    assert_eq!(larger["added"]["projects"], 15, "{larger}");
    assert_eq!(larger["added"]["documents"], 15, "{larger}");
    let docs_of_many = format!("SELECT COUNT(*) FROM yjs_documents WHERE project_id IN ({mine})");
    assert_eq!(count(&d, stack, db, &docs_of_many).await, 75);

    // --reset removes the documents of the projects it removes, and nothing else.
    let total = "SELECT COUNT(*) FROM yjs_documents";
    let before = count(&d, stack, db, total).await;
    let mut reset = vec!["--reset"];
    reset.extend(base);
    let r = prepare(x, stack, &reset);
    assert_eq!(r["documents"], 75, "{r}");
    assert_eq!(count(&d, stack, db, &docs_of_many).await, 0);
    assert_eq!(count(&d, stack, db, total).await, before - 75);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the Docker engine and the fixture images; bash scripts/test.sh runs it"]
async fn seed_equals_create_path_mariadb() {
    fidelity("mariadb", "fid-maria").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the Docker engine and the fixture images; bash scripts/test.sh runs it"]
async fn seed_equals_create_path_postgres() {
    fidelity("postgres", "fid-pg").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the Docker engine and the fixture images; bash scripts/test.sh runs it"]
async fn seed_equals_create_path_sqlite() {
    fidelity("sqlite", "fid-lite").await;
}
