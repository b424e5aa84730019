//! Test harness: the real `exe-standin` binary on a free loopback port, a fresh database of each dialect
//! on the real servers that scripts/services.sh starts (missing servers fail the tests, never skip them),
//! SQL seeding, and small HTTP/WebSocket helpers. Every wait is bounded.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use serde_json::Value;
use sqlx::AnyPool;
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

pub type Ws = WebSocketStream<MaybeTlsStream<TcpStream>>;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    Sqlite,
    MySql,
    Postgres,
}

fn env_or(key: &str, default: &str) -> String {
    std::env::var(key)
        .ok()
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| default.to_string())
}

pub fn mysql_url() -> String {
    env_or(
        "EXE_TEST_MYSQL_URL",
        "mysql://exelearning:exelearning@127.0.0.1:3306/exelearning",
    )
}
pub fn pg_url() -> String {
    env_or(
        "EXE_TEST_PG_URL",
        "postgres://exelearning:exelearning@127.0.0.1:5432/exelearning",
    )
}
pub fn redis_url() -> String {
    env_or("EXE_TEST_REDIS_URL", "redis://127.0.0.1:6379")
}

/// scheme://user:password@host:port/db → its parts (no percent-decoding needed for the test URLs).
pub struct UrlParts {
    pub user: String,
    pub password: String,
    pub host: String,
    pub port: String,
    pub db: String,
}

pub fn parse_url(url: &str) -> UrlParts {
    let rest = url.split_once("://").map(|x| x.1).unwrap_or(url);
    let (auth, hostpart) = rest.rsplit_once('@').unwrap_or(("", rest));
    let (user, password) = auth.split_once(':').unwrap_or((auth, ""));
    let (hostport, db) = hostpart.split_once('/').unwrap_or((hostpart, ""));
    let (host, port) = hostport.split_once(':').unwrap_or((hostport, ""));
    UrlParts {
        user: user.into(),
        password: password.into(),
        host: host.into(),
        port: port.into(),
        db: db.trim_end_matches('/').into(),
    }
}

/// A database of its own for one test: a SQLite file in a tempdir, or a freshly created MariaDB or
/// PostgreSQL database (dropped by `drop_db`).
pub struct TestDb {
    pub dialect: Dialect,
    pub dir: tempfile::TempDir,
    name: String,
    server_url: String,
    url: String,
    pool: Option<AnyPool>,
}

fn fresh_name() -> String {
    format!("standin_{}", uuid::Uuid::new_v4().simple())
}

impl TestDb {
    pub async fn new(dialect: Dialect) -> TestDb {
        sqlx::any::install_default_drivers();
        let dir = tempfile::tempdir().unwrap();
        let name = fresh_name();
        let (server_url, url) = match dialect {
            Dialect::Sqlite => {
                let path = dir.path().join("data/exelearning.db");
                (String::new(), format!("sqlite://{}", path.display()))
            }
            Dialect::MySql | Dialect::Postgres => {
                let server_url = if dialect == Dialect::MySql {
                    mysql_url()
                } else {
                    pg_url()
                };
                let admin = AnyPool::connect(&server_url).await.unwrap_or_else(|e| {
                    panic!("cannot reach {server_url} ({e}); run scripts/services.sh first")
                });
                sqlx::raw_sql(&format!("CREATE DATABASE {name}"))
                    .execute(&admin)
                    .await
                    .unwrap();
                admin.close().await;
                let base = server_url.rsplit_once('/').unwrap().0;
                (server_url.clone(), format!("{base}/{name}"))
            }
        };
        TestDb {
            dialect,
            dir,
            name,
            server_url,
            url,
            pool: None,
        }
    }

    /// The app's env vars that point a server at this database.
    pub fn env(&self) -> Vec<(String, String)> {
        let mut env = vec![];
        let mut set = |k: &str, v: &str| env.push((k.to_string(), v.to_string()));
        match self.dialect {
            Dialect::Sqlite => {
                set("DB_DRIVER", "pdo_sqlite");
                set(
                    "DB_PATH",
                    self.dir
                        .path()
                        .join("data/exelearning.db")
                        .to_str()
                        .unwrap(),
                );
            }
            Dialect::MySql | Dialect::Postgres => {
                let u = parse_url(&self.server_url);
                set(
                    "DB_DRIVER",
                    if self.dialect == Dialect::MySql {
                        "pdo_mysql"
                    } else {
                        "pdo_pgsql"
                    },
                );
                set("DB_HOST", &u.host);
                set("DB_PORT", &u.port);
                set("DB_USER", &u.user);
                set("DB_PASSWORD", &u.password);
                set("DB_NAME", &self.name);
            }
        }
        env
    }

    /// A seeding connection (the schema must exist: start a server first, as with the real app).
    pub async fn pool(&mut self) -> &AnyPool {
        if self.pool.is_none() {
            self.pool = Some(AnyPool::connect(&self.url).await.unwrap());
        }
        self.pool.as_ref().unwrap()
    }

    pub async fn exec(&mut self, sql: &str) {
        let pool = self.pool().await.clone();
        sqlx::raw_sql(sql)
            .execute(&pool)
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
    }

    /// INSERT a user row with a bcrypt hash, as exectl's prepare does (contract §3's seed sketch).
    pub async fn seed_user(&mut self, email: &str, hash: &str, roles: &str) {
        let sql = format!(
            "INSERT INTO users (email, password, roles, is_lopd_accepted, quota_mb, is_active, created_at, updated_at) \
             VALUES ('{email}', '{hash}', '{roles}', 1, 4096, 1, 1700000000000, 1700000000000)"
        );
        self.exec(&sql).await;
    }

    /// INSERT a project owned by `owner_email`; returns its uuid.
    pub async fn seed_project(
        &mut self,
        owner_email: &str,
        status: &str,
        visibility: &str,
    ) -> String {
        let uuid = uuid::Uuid::new_v4().to_string();
        let sql = format!(
            "INSERT INTO projects (uuid, title, owner_id, status, visibility, saved_once, created_at, updated_at) \
             VALUES ('{uuid}', 'project {uuid}', (SELECT id FROM users WHERE email = '{owner_email}'), \
             '{status}', '{visibility}', 0, 1700000000000, 1700000000000)"
        );
        self.exec(&sql).await;
        uuid
    }

    pub async fn add_collaborator(&mut self, uuid: &str, email: &str) {
        let sql = format!(
            "INSERT INTO project_collaborators (project_id, user_id) VALUES \
             ((SELECT id FROM projects WHERE uuid = '{uuid}'), (SELECT id FROM users WHERE email = '{email}'))"
        );
        self.exec(&sql).await;
    }

    /// Drop the MariaDB/PostgreSQL database (stop the servers first).
    pub async fn drop_db(mut self) {
        if let Some(p) = self.pool.take() {
            p.close().await;
        }
        let sql = match self.dialect {
            Dialect::Sqlite => return,
            Dialect::MySql => format!("DROP DATABASE IF EXISTS {}", self.name),
            Dialect::Postgres => format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.name),
        };
        let admin = AnyPool::connect(&self.server_url).await.unwrap();
        sqlx::raw_sql(&sql).execute(&admin).await.unwrap();
        admin.close().await;
    }
}

/// bcrypt hash in the given `$2x$` variant. Cost 4 keeps the (debug-built) tests fast; one test uses the
/// app's cost 10.
pub fn hash(password: &str, prefix: &str, cost: u32) -> String {
    let h = bcrypt::hash(password, cost).unwrap();
    format!("{prefix}{}", &h[4..])
}

pub const JWT_SECRET: &str = "test-jwt-secret-0123456789";

/// A running exe-standin; killed on drop.
pub struct Server {
    child: Child,
    pub port: u16,
    pub log: PathBuf,
    _logdir: tempfile::TempDir,
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

impl Server {
    /// Start with the base secrets plus `env`, and wait until /healthcheck answers.
    pub async fn start(env: &[(String, String)]) -> Server {
        let mut server = Server::spawn(env);
        server.wait_healthy().await;
        server
    }

    /// Start with the base secrets plus `env`, without waiting for it.
    pub fn spawn(env: &[(String, String)]) -> Server {
        let logdir = tempfile::tempdir().unwrap();
        let log = logdir.path().join("server.log");
        let port = free_port();
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_exe-standin"));
        cmd.env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("RUST_LOG", "info")
            .env("API_JWT_SECRET", JWT_SECRET)
            .env("APP_SECRET", "test-app-secret")
            .env("APP_PORT", port.to_string())
            .current_dir(logdir.path())
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&log).unwrap())
            .stderr(std::fs::File::options().append(true).open(&log).unwrap());
        for (k, v) in env {
            cmd.env(k, v);
        }
        let child = cmd.spawn().expect("spawn exe-standin");
        Server {
            child,
            port,
            log,
            _logdir: logdir,
        }
    }

    /// Wait until /healthcheck answers; the server exiting first fails the test.
    pub async fn wait_healthy(&mut self) {
        let client = reqwest::Client::new();
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!("exe-standin exited with {status}:\n{}", self.log_text());
            }
            if let Ok(r) = client.get(self.url("/healthcheck")).send().await {
                if r.status().is_success() {
                    return;
                }
            }
            assert!(
                Instant::now() < deadline,
                "exe-standin not healthy in 60 s:\n{}",
                self.log_text()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Its exit code once it has exited, waiting up to `within`; None while it still runs.
    pub async fn exit_code(&mut self, within: Duration) -> Option<i32> {
        let deadline = Instant::now() + within;
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Some(status.code().unwrap_or(-1));
            }
            if Instant::now() >= deadline {
                return None;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
    }
}

pub async fn login(server: &Server, email: &str, password: &str) -> (String, Value) {
    let r = reqwest::Client::new()
        .post(server.url("/api/auth/login"))
        .json(&serde_json::json!({"email": email, "password": password}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200, "login {email}");
    let body: Value = r.json().await.unwrap();
    (body["access_token"].as_str().unwrap().to_string(), body)
}

pub async fn get_json(server: &Server, path: &str, token: Option<&str>) -> (u16, Value) {
    let mut req = reqwest::Client::new().get(server.url(path));
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    let r = req.send().await.unwrap();
    let status = r.status().as_u16();
    (status, r.json().await.unwrap_or(Value::Null))
}

/// `totalConnections` and `roomsCount` from /api/websocket/info.
pub async fn ws_counts(server: &Server, admin: Option<&str>) -> (u64, u64) {
    let (status, v) = get_json(server, "/api/websocket/info", admin).await;
    assert_eq!(status, 200, "{v}");
    (
        v["totalConnections"].as_u64().unwrap(),
        v["roomsCount"].as_u64().unwrap(),
    )
}

/// Poll until `f` holds, for at most `within`.
pub async fn eventually<F, Fut>(within: Duration, what: &str, mut f: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + within;
    loop {
        if f().await {
            return;
        }
        assert!(Instant::now() < deadline, "timed out waiting for: {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

pub async fn ws_connect(server: &Server, doc: &str, token: Option<&str>) -> Ws {
    let url = match token {
        Some(t) => format!("ws://127.0.0.1:{}/yjs/{doc}?token={t}", server.port),
        None => format!("ws://127.0.0.1:{}/yjs/{doc}", server.port),
    };
    let (ws, resp) = tokio_tungstenite::connect_async(url).await.unwrap();
    assert_eq!(resp.status(), 101, "the upgrade always succeeds");
    ws
}

/// The close code (and reason) the server sends within 5 s.
pub async fn expect_close(ws: &mut Ws) -> (u16, String) {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match tokio::time::timeout(left, ws.next()).await {
            Ok(Some(Ok(Message::Close(Some(f))))) => return (f.code.into(), f.reason.to_string()),
            Ok(Some(Ok(_))) => continue,
            other => panic!("expected a close frame, got {other:?}"),
        }
    }
}

/// The socket stays open for `held` (no close frame, no EOF); other frames are ignored.
pub async fn expect_held(ws: &mut Ws, held: Duration) {
    let deadline = Instant::now() + held;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return;
        }
        match tokio::time::timeout(left, ws.next()).await {
            Err(_) => return,
            Ok(Some(Ok(Message::Close(f)))) => panic!("socket closed: {f:?}"),
            Ok(Some(Ok(_))) => continue,
            Ok(other) => panic!("socket ended: {other:?}"),
        }
    }
}

/// The next binary frame within `within`, skipping text (resync notices) and control frames.
pub async fn next_binary(ws: &mut Ws, within: Duration) -> Option<Vec<u8>> {
    let deadline = Instant::now() + within;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match tokio::time::timeout(left, ws.next()).await {
            Ok(Some(Ok(Message::Binary(b)))) => return Some(b.to_vec()),
            Ok(Some(Ok(Message::Close(f)))) => panic!("socket closed: {f:?}"),
            Ok(Some(Ok(_))) => continue,
            _ => return None,
        }
    }
}

/// The next text frame whose JSON `type` is `kind`, within `within`.
pub async fn next_text_of_type(ws: &mut Ws, kind: &str, within: Duration) -> Option<Value> {
    let deadline = Instant::now() + within;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match tokio::time::timeout(left, ws.next()).await {
            Ok(Some(Ok(Message::Text(t)))) => {
                let v: Value = serde_json::from_str(&t).unwrap_or(Value::Null);
                if v["type"] == kind {
                    return Some(v);
                }
            }
            Ok(Some(Ok(Message::Close(f)))) => panic!("socket closed: {f:?}"),
            Ok(Some(Ok(_))) => continue,
            _ => return None,
        }
    }
}

pub async fn close_ws(mut ws: Ws) {
    let _ = ws.close(None).await;
    // Drain until the server's close reply or EOF (bounded).
    let _ = tokio::time::timeout(Duration::from_secs(2), async {
        while let Some(Ok(_)) = ws.next().await {}
    })
    .await;
}

pub async fn send_binary(ws: &mut Ws, data: &[u8]) {
    ws.send(Message::Binary(data.to_vec().into()))
        .await
        .unwrap();
}
