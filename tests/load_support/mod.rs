//! Shared by tests/load_*.rs: the real `exe-standin` binary on a free loopback port with SQLite in a
//! tempdir, users and projects seeded by SQL into that file, a manifest written as `exectl prepare` will,
//! and the real `exectl load` binary run against it. Every wait is bounded.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use exectl::load::manifest::{Account, Manifest, Project, Role, TokenEntry};
use exectl::prepare::token::mint as mint_token;
use rand::Rng;

pub const PASSWORD: &str = "Bench1234!";

pub fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target"))
}

/// The newest modification time of the files under `path`.
fn newest(path: &Path) -> std::time::SystemTime {
    let own = std::fs::metadata(path)
        .and_then(|m| m.modified())
        .unwrap_or(std::time::UNIX_EPOCH);
    match std::fs::read_dir(path) {
        Ok(entries) => entries
            .filter_map(Result::ok)
            .map(|e| newest(&e.path()))
            .fold(own, std::cmp::max),
        Err(_) => own,
    }
}

/// The stand-in binary. `cargo test --workspace` builds it for the stand-in's own tests; when it is
/// missing or older than its sources (e.g. `cargo test -p exectl`), it is built once per test process
/// with `cargo build -p exe-standin`: tests of this package cannot use CARGO_BIN_EXE of another package.
pub fn standin_bin() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        let bin = target_dir().join("debug/exe-standin");
        let sources = Path::new(env!("CARGO_MANIFEST_DIR")).join("standin");
        let fresh = std::fs::metadata(&bin)
            .and_then(|m| m.modified())
            .is_ok_and(|built| {
                built >= newest(&sources.join("src")).max(newest(&sources.join("Cargo.toml")))
            });
        if fresh {
            return bin;
        }
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let status = Command::new(cargo)
            .args(["build", "-q", "-p", "exe-standin", "--bin", "exe-standin"])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .status();
        match status {
            Ok(s) if s.success() => {}
            other => eprintln!(
                "warning: `cargo build -p exe-standin` failed ({other:?}); using {}",
                bin.display()
            ),
        }
        assert!(
            bin.exists(),
            "{} is missing: run `cargo build -p exe-standin` first",
            bin.display()
        );
        bin
    })
}

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// `GET path` over HTTP/1.0 with a bound: the status code, or None.
pub fn http_status(port: u16, path: &str) -> Option<u16> {
    let mut s =
        TcpStream::connect_timeout(&([127, 0, 0, 1], port).into(), Duration::from_secs(2)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").ok()?;
    let mut buf = String::new();
    s.read_to_string(&mut buf).ok()?;
    buf.split_whitespace().nth(1)?.parse().ok()
}

/// A running exe-standin with its own SQLite database; killed on drop.
pub struct Standin {
    child: Child,
    pub port: u16,
    pub dir: tempfile::TempDir,
    pub secret: String,
}

impl Standin {
    pub fn start(extra_env: &[(&str, &str)]) -> Standin {
        Standin::start_bin(standin_bin(), extra_env)
    }

    pub fn start_bin(bin: &Path, extra_env: &[(&str, &str)]) -> Standin {
        let dir = tempfile::tempdir().unwrap();
        let port = free_port();
        let secret: String = format!("jwt-{:032x}", rand::thread_rng().gen::<u128>());
        let log = std::fs::File::create(dir.path().join("server.log")).unwrap();
        let mut cmd = Command::new(bin);
        cmd.env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("RUST_LOG", "warn")
            .env("API_JWT_SECRET", &secret)
            .env(
                "APP_SECRET",
                format!("app-{:032x}", rand::thread_rng().gen::<u128>()),
            )
            .env("APP_PORT", port.to_string())
            .env("DB_DRIVER", "sqlite")
            .env("DB_PATH", dir.path().join("data/exelearning.db"))
            .current_dir(dir.path())
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log);
        for (k, v) in extra_env {
            cmd.env(k, v);
        }
        let child = cmd.spawn().expect("spawn exe-standin");
        let mut s = Standin {
            child,
            port,
            dir,
            secret,
        };
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Ok(Some(status)) = s.child.try_wait() {
                panic!("exe-standin exited with {status}:\n{}", s.log());
            }
            if http_status(port, "/healthcheck") == Some(200) {
                return s;
            }
            assert!(
                Instant::now() < deadline,
                "exe-standin not healthy in 60 s:\n{}",
                s.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub fn db(&self) -> PathBuf {
        self.dir.path().join("data/exelearning.db")
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("server.log")).unwrap_or_default()
    }
}

impl Standin {
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// `kill SIG` its process: "-STOP" freezes it (as `docker pause` a container), "-CONT" thaws it.
    pub fn signal(&self, sig: &str) {
        let st = Command::new("kill")
            .args([sig, &self.pid().to_string()])
            .status()
            .unwrap();
        assert!(st.success(), "kill {sig} {}", self.pid());
    }

    /// Wait until it holds `n` sockets by its own count, at most `within`.
    pub fn wait_for_sockets(&self, n: u64, within: Duration) {
        let deadline = Instant::now() + within;
        while server_connections(self.port) < n {
            assert!(Instant::now() < deadline, "the {n} sockets never opened");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Standin {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Run SQL against a SQLite file (python3's sqlite3 module: no extra build for the tests) and return
/// what the script prints.
pub fn sqlite(db: &Path, sql: &str, query: Option<&str>) -> String {
    let script = r#"
import sqlite3, sys
c = sqlite3.connect(sys.argv[1], timeout=30)
c.executescript(sys.stdin.read())
c.commit()
if len(sys.argv) > 2:
    for row in c.execute(sys.argv[2]):
        print("\t".join(str(x) for x in row))
"#;
    let mut cmd = Command::new("python3");
    cmd.arg("-c").arg(script).arg(db);
    if let Some(q) = query {
        cmd.arg(q);
    }
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python3 (for SQLite seeding)");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(sql.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "sqlite: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

pub fn new_uuid() -> String {
    let b: [u8; 16] = rand::thread_rng().gen();
    let h = hex::encode(b);
    format!(
        "{}-{}-{}-{}-{}",
        &h[..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..]
    )
}

/// Who is seeded: users `bench-user-i`, and rooms, each an owner index plus collaborator indexes.
pub struct Seeded {
    pub emails: Vec<String>,
    pub ids: Vec<i64>,
    /// Room r's project uuid.
    pub rooms: Vec<String>,
    pub layout: Vec<(usize, Vec<usize>)>,
}

/// INSERT users (bcrypt at `cost`) and one private project per room with its collaborators, as prepare's
/// SQL will (contract §3).
pub fn seed(s: &Standin, users: usize, layout: Vec<(usize, Vec<usize>)>, cost: u32) -> Seeded {
    let hash = bcrypt::hash(PASSWORD, cost).unwrap();
    let emails: Vec<String> = (0..users)
        .map(|i| format!("bench-user-{i}@exelearning.net"))
        .collect();
    let rooms: Vec<String> = layout.iter().map(|_| new_uuid()).collect();
    let mut sql = String::from("BEGIN;\n");
    for e in &emails {
        sql += &format!(
            "INSERT INTO users (email, password, roles, is_lopd_accepted, quota_mb, is_active, created_at, updated_at) \
             VALUES ('{e}', '{hash}', '[\"ROLE_USER\"]', 1, 4096, 1, 1700000000000, 1700000000000);\n"
        );
    }
    for (r, (owner, collaborators)) in layout.iter().enumerate() {
        let uuid = &rooms[r];
        sql += &format!(
            "INSERT INTO projects (uuid, title, owner_id, status, visibility, saved_once, created_at, updated_at) \
             VALUES ('{uuid}', 'bench-project-{r}', (SELECT id FROM users WHERE email = '{}'), 'active', 'private', 1, \
             1700000000000, 1700000000000);\n",
            emails[*owner]
        );
        for c in collaborators {
            sql += &format!(
                "INSERT INTO project_collaborators (project_id, user_id) VALUES \
                 ((SELECT id FROM projects WHERE uuid = '{uuid}'), (SELECT id FROM users WHERE email = '{}'));\n",
                emails[*c]
            );
        }
    }
    sql += "COMMIT;\n";
    let rows = sqlite(&s.db(), &sql, Some("SELECT email, id FROM users"));
    let ids_by_email: std::collections::HashMap<&str, i64> = rows
        .lines()
        .filter_map(|l| l.split_once('\t'))
        .map(|(e, id)| (e, id.parse().unwrap()))
        .collect();
    let ids = emails.iter().map(|e| ids_by_email[e.as_str()]).collect();
    Seeded {
        emails,
        ids,
        rooms,
        layout,
    }
}

impl Seeded {
    /// One room per user, each its owner.
    pub fn solo_layout(users: usize) -> Vec<(usize, Vec<usize>)> {
        (0..users).map(|i| (i, vec![])).collect()
    }

    /// The manifest prepare would write: each user in the room it owns or collaborates on; `shift`
    /// maps user i to room (i + shift) instead (users joining projects they cannot access).
    pub fn write_manifest(&self, dir: &Path, secret: Option<&str>, shift: usize) {
        let mut room_of = vec![usize::MAX; self.emails.len()];
        let mut role_of = vec![Role::Owner; self.emails.len()];
        for (r, (owner, collaborators)) in self.layout.iter().enumerate() {
            room_of[*owner] = r;
            for c in collaborators {
                room_of[*c] = r;
                role_of[*c] = Role::Collaborator;
            }
        }
        let accounts: Vec<Account> = self
            .emails
            .iter()
            .enumerate()
            .map(|(i, e)| Account {
                email: e.clone(),
                password: PASSWORD.into(),
                project_uuid: self.rooms[(room_of[i] + shift) % self.rooms.len()].clone(),
                role: role_of[i],
            })
            .collect();
        let projects: Vec<Project> = self
            .layout
            .iter()
            .enumerate()
            .map(|(r, (owner, _))| Project {
                uuid: self.rooms[r].clone(),
                owner_email: self.emails[*owner].clone(),
            })
            .collect();
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs() as i64;
        let tokens: Option<Vec<TokenEntry>> = secret.map(|k| {
            self.emails
                .iter()
                .zip(&self.ids)
                .map(|(e, id)| TokenEntry {
                    email: e.clone(),
                    token: mint_token(k.as_bytes(), *id, e, now, 3600),
                })
                .collect()
        });
        Manifest::write(dir, &accounts, &projects, tokens.as_deref()).unwrap();
    }
}

/// The real `exectl load`, bounded by `limit`: (exit code, JSON summary from --out, stderr).
pub fn exectl_load(args: &[&str], limit: Duration) -> (i32, Option<serde_json::Value>, String) {
    let out_dir = tempfile::tempdir().unwrap();
    let out_file = out_dir.path().join("summary.json");
    let err_file = out_dir.path().join("stderr.txt");
    let exectl = option_env!("CARGO_BIN_EXE_exectl")
        .map(PathBuf::from)
        .unwrap_or_else(|| target_dir().join("debug/exectl"));
    let mut child = Command::new(&exectl)
        .arg("load")
        .args(args)
        .arg("--out")
        .arg(&out_file)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&err_file).unwrap())
        .spawn()
        .expect("spawn exectl");
    let deadline = Instant::now() + limit;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "exectl load {args:?} still running after {limit:?}:\n{}",
                std::fs::read_to_string(&err_file).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let stderr = std::fs::read_to_string(&err_file).unwrap_or_default();
    let json = std::fs::read_to_string(&out_file)
        .ok()
        .filter(|t| !t.trim().is_empty())
        .map(|t| serde_json::from_str(&t).unwrap());
    (status.code().unwrap_or(-1), json, stderr)
}

/// `totalConnections` of the stand-in's /api/websocket/info.
pub fn server_connections(port: u16) -> u64 {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    write!(s, "GET /api/websocket/info HTTP/1.0\r\nHost: x\r\n\r\n").unwrap();
    let mut buf = String::new();
    s.read_to_string(&mut buf).unwrap();
    let body = buf.split("\r\n\r\n").nth(1).unwrap();
    let v: serde_json::Value = serde_json::from_str(body).unwrap();
    v["totalConnections"].as_u64().unwrap()
}

/// Established connections to this host's `port` (the server's side), by the client's address, from
/// the kernel's own table (`ss`): where each generator's sockets come from.
pub fn clients_of(port: u16) -> std::collections::BTreeMap<String, u64> {
    let out = Command::new("ss")
        .args([
            "-Htn",
            "state",
            "established",
            &format!("( sport = :{port} )"),
        ])
        .output()
        .expect("run ss");
    let mut by = std::collections::BTreeMap::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        // Recv-Q Send-Q Local:Port Peer:Port; an IPv4 peer of a dual-stack listener is [::ffff:a.b.c.d].
        if let Some(peer) = line.split_whitespace().nth(3) {
            let ip = peer.rsplit_once(':').map_or(peer, |(ip, _)| ip);
            let ip = ip
                .trim_start_matches('[')
                .trim_end_matches(']')
                .trim_start_matches("::ffff:");
            *by.entry(ip.to_string()).or_insert(0) += 1;
        }
    }
    by
}
