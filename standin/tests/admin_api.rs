//! The admin and sharing routes prepare's `--via api` uses, on real SQLite: user creation (admin only,
//! 409 on a duplicate), project creation (private, saved_once 0, a server-chosen uuid), visibility, and
//! collaborators with every answer; and the access each grants to the project's WebSocket. On SQLite,
//! MariaDB and PostgreSQL (duplicates are told apart by each driver's unique-violation error).

mod common;

use std::time::Duration;

use common::*;
use serde_json::{json, Value};

const ADMIN: &str = "admin@exelearning.net";
const ADMIN_PW: &str = "Admin-pw-1";

async fn send(
    server: &Server,
    method: reqwest::Method,
    path: &str,
    token: Option<&str>,
    body: Value,
) -> (u16, Value) {
    let mut req = reqwest::Client::new()
        .request(method, server.url(path))
        .json(&body);
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    let resp = req.send().await.unwrap();
    let status = resp.status().as_u16();
    (status, resp.json().await.unwrap_or(Value::Null))
}

async fn post(server: &Server, path: &str, token: Option<&str>, body: Value) -> (u16, Value) {
    send(server, reqwest::Method::POST, path, token, body).await
}

async fn users_projects_visibility_and_collaborators(dialect: Dialect) {
    let mut db = TestDb::new(dialect).await;
    let mut env = db.env();
    env.push(("ADMIN_EMAIL".into(), ADMIN.into()));
    env.push(("ADMIN_PASSWORD".into(), ADMIN_PW.into()));
    let mut s = Server::start(&env).await;
    let (admin, _) = login(&s, ADMIN, ADMIN_PW).await;

    // Users: 401 without a token, 400 on a short password, 201, 409 on the same email, 403 for non-admins.
    let user = |email: &str| json!({"email": email, "password": "pw-1234"});
    assert_eq!(
        post(&s, "/api/v1/users", None, user("a@x.org")).await.0,
        401
    );
    let (st, _) = post(
        &s,
        "/api/v1/users",
        Some(&admin),
        json!({"email": "a@x.org", "password": "123"}),
    )
    .await;
    assert_eq!(st, 400);
    let (st, body) = post(&s, "/api/v1/users", Some(&admin), user("a@x.org")).await;
    assert_eq!(st, 201, "{body}");
    assert_eq!(body["success"], true);
    assert_eq!(body["data"]["email"], "a@x.org");
    assert_eq!(body["data"]["roles"], json!(["ROLE_USER"]));
    let a_id = body["data"]["id"].as_i64().unwrap();
    assert_eq!(
        post(&s, "/api/v1/users", Some(&admin), user("a@x.org"))
            .await
            .0,
        409
    );
    let (owner, lb) = login(&s, "a@x.org", "pw-1234").await;
    assert_eq!(lb["user"]["id"].as_i64(), Some(a_id));
    assert_eq!(
        post(&s, "/api/v1/users", Some(&owner), user("z@x.org"))
            .await
            .0,
        403
    );
    for e in ["b@x.org", "c@x.org"] {
        assert_eq!(
            post(&s, "/api/v1/users", Some(&admin), user(e)).await.0,
            201
        );
    }
    let (collab, _) = login(&s, "b@x.org", "pw-1234").await;
    let (stranger, _) = login(&s, "c@x.org", "pw-1234").await;

    // Projects: 201, private, saved_once false, the server's own uuid, an empty snapshot stored.
    assert_eq!(
        post(&s, "/api/v1/projects", None, json!({"title": "t"}))
            .await
            .0,
        401
    );
    let (st, body) = post(
        &s,
        "/api/v1/projects",
        Some(&owner),
        json!({"title": "bench-project-0"}),
    )
    .await;
    assert_eq!(st, 201, "{body}");
    let d = &body["data"];
    assert_eq!(d["title"], "bench-project-0");
    assert_eq!(d["owner_id"].as_i64(), Some(a_id));
    assert_eq!(d["saved_once"], false);
    let uuid = d["uuid"].as_str().unwrap().to_string();
    assert_eq!(uuid::Uuid::parse_str(&uuid).unwrap().to_string(), uuid);
    let (st, list) = get_json(&s, "/api/v1/projects", Some(&owner)).await;
    assert_eq!(
        (st, list["data"][0]["uuid"].as_str()),
        (200, Some(uuid.as_str()))
    );
    let snap = reqwest::get(s.url(&format!("/api/projects/uuid/{uuid}/yjs-document")))
        .await
        .unwrap();
    assert_eq!(snap.status().as_u16(), 200);
    let row: (String, String) = sqlx::query_as(&format!(
        "SELECT visibility, status FROM projects WHERE uuid = '{uuid}' AND saved_once = 0"
    ))
    .fetch_one(db.pool().await)
    .await
    .unwrap();
    assert_eq!(row, ("private".into(), "active".into()));

    // Private: the collaborator-to-be is refused.
    let mut ws = ws_connect(&s, &format!("project-{uuid}"), Some(&collab)).await;
    assert_eq!(expect_close(&mut ws).await.0, 4003);

    // Collaborators: owner only; every answer.
    let coll = format!("/api/projects/uuid/{uuid}/collaborators");
    let add = |email: &str| json!({"email": email});
    assert_eq!(post(&s, &coll, Some(&collab), add("b@x.org")).await.0, 403);
    assert_eq!(post(&s, &coll, None, add("b@x.org")).await.0, 401);
    for (email, answer) in [
        ("b@x.org", "OK"),
        ("b@x.org", "ALREADY_COLLABORATOR"),
        ("a@x.org", "IS_OWNER"),
        ("nobody@x.org", "USER_NOT_FOUND"),
    ] {
        let (st, body) = post(&s, &coll, Some(&owner), add(email)).await;
        assert_eq!(
            (st, body["responseMessage"].as_str()),
            (200, Some(answer)),
            "{email}"
        );
    }
    let mut ws = ws_connect(&s, &format!("project-{uuid}"), Some(&collab)).await;
    expect_held(&mut ws, Duration::from_millis(300)).await;
    close_ws(ws).await;
    let mut ws = ws_connect(&s, &format!("project-{uuid}"), Some(&stranger)).await;
    assert_eq!(expect_close(&mut ws).await.0, 4003);

    // Visibility: owner only, public lets the stranger in, a bad value is 400.
    let vis = format!("/api/projects/uuid/{uuid}/visibility");
    let patch = |t: &str, v: &str| {
        let (t, v) = (t.to_string(), v.to_string());
        let (s, vis) = (&s, &vis);
        async move {
            send(
                s,
                reqwest::Method::PATCH,
                vis,
                Some(&t),
                json!({"visibility": v}),
            )
            .await
        }
    };
    assert_eq!(patch(&stranger, "public").await.0, 403);
    assert_eq!(patch(&owner, "open").await.0, 400);
    let (st, body) = patch(&owner, "public").await;
    assert_eq!((st, body["responseMessage"].as_str()), (200, Some("OK")));
    let mut ws = ws_connect(&s, &format!("project-{uuid}"), Some(&stranger)).await;
    expect_held(&mut ws, Duration::from_millis(300)).await;
    close_ws(ws).await;
    assert_eq!(patch(&owner, "private").await.0, 200);
    let mut ws = ws_connect(&s, &format!("project-{uuid}"), Some(&stranger)).await;
    assert_eq!(expect_close(&mut ws).await.0, 4003);

    // markSaved after creation sets saved_once (what prepare --via api relies on).
    let resp = reqwest::Client::new()
        .post(s.url(&format!(
            "/api/projects/uuid/{uuid}/yjs-document?markSaved=true"
        )))
        .body(vec![0u8, 0])
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    let (st, body) = get_json(&s, &format!("/api/v1/projects/{uuid}"), Some(&owner)).await;
    assert_eq!((st, &body["data"]["saved_once"]), (200, &json!(true)));
    s.stop();
    db.drop_db().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_admin_routes() {
    users_projects_visibility_and_collaborators(Dialect::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs MariaDB at EXE_TEST_MYSQL_URL (scripts/services.sh); bash scripts/test.sh runs it"]
async fn mariadb_admin_routes() {
    users_projects_visibility_and_collaborators(Dialect::MySql).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs PostgreSQL at EXE_TEST_PG_URL (scripts/services.sh); bash scripts/test.sh runs it"]
async fn postgres_admin_routes() {
    users_projects_visibility_and_collaborators(Dialect::Postgres).await;
}
