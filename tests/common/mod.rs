//! Shared helpers of the real-engine tests: run the exectl binary with its own state folder, reach the
//! local engine, and find containers' addresses on their stack network.

#![allow(dead_code)]

pub mod cpu;
pub mod sut;
pub mod swarm;

use bollard::Docker;
use std::path::{Path, PathBuf};
use std::process::Output;

pub const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/images/fixtures.yaml");

/// Flags every HA test needs on these machines: the engine allows 20000 open files per container.
pub const HA_LIMITS: [&str; 6] = [
    "--nofile",
    "20000",
    "--worker-rlimit-nofile",
    "20000",
    "--worker-connections",
    "10000",
];

/// Objectives for tests that judge counts (sockets held, leaks, a component's limit), not latency: a
/// host busy with the other tests side by side slows logins and upgrades past the defaults (a CI run's
/// 200 users at 8.4 s login p95, at the start of the run), which is no finding of theirs.
pub const COUNTS_ONLY: [&str; 4] = ["--slo", "login_p95=30s", "--slo", "connect_p95=10s"];

pub struct Exectl {
    pub state: tempfile::TempDir,
}

impl Exectl {
    pub fn new() -> Exectl {
        Exectl {
            state: tempfile::tempdir().unwrap(),
        }
    }

    pub fn command(&self, args: &[&str]) -> std::process::Command {
        let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_exectl"));
        c.env("EXECTL_STATE_DIR", self.state.path()).args(args);
        c
    }

    pub fn run(&self, args: &[&str]) -> Output {
        let t0 = std::time::Instant::now();
        let out = self.command(args).output().unwrap();
        trace(args, t0.elapsed());
        out
    }

    /// Run and require exit 0, returning stdout.
    pub fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(
            out.status.success(),
            "exectl {args:?} failed ({:?}):\n{}\n{}",
            out.status.code(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// `deploy --json` with the fixture images, parsed. Docker's healthcheck every `HEALTH_INTERVAL`
    /// unless the test gives its own `--health-interval`.
    pub fn deploy_json(&self, args: &[&str]) -> serde_json::Value {
        let mut full = vec!["deploy"];
        full.extend(args);
        full.extend(["--images", FIXTURES, "--json"]);
        if !args.contains(&"--health-interval") {
            full.extend(["--health-interval", HEALTH_INTERVAL]);
        }
        serde_json::from_str(&self.ok(&full)).unwrap()
    }

    /// Remove anything a crashed earlier run left under these stack names (only those of this test).
    pub async fn purge_leftovers(&self, stacks: &[&str]) {
        let d = docker().await;
        for s in stacks {
            if !labelled(&d, s).await.is_empty() {
                self.ok(&["teardown", "--stack", s, "--purge", "--break-lock"]);
            }
        }
    }

    pub fn stack_dir(&self, stack: &str) -> PathBuf {
        self.state.path().join("local").join(stack)
    }
}

/// One stack of an engine test: its own state folder, a name, and free ports. Made from a short name
/// ("ha") and EXECTL_TEST_STACK_PREFIX (default "t-"), so engineers sharing one engine can run the same
/// tests at once with prefixes of their own. Dropping it runs `teardown --purge --break-lock`, also when
/// the test panics, so no run leaves containers, volumes or state behind; leftovers of a crashed earlier
/// run are removed when it is made.
pub struct Stack {
    pub name: String,
    /// Shared by the stacks made with `beside`: one state folder, as one user would have.
    pub x: std::sync::Arc<Exectl>,
}

impl Stack {
    pub async fn new(short: &str) -> Stack {
        Stack::with(std::sync::Arc::new(Exectl::new()), short).await
    }

    /// Another stack in the same state folder.
    pub async fn beside(&self, short: &str) -> Stack {
        Stack::with(self.x.clone(), short).await
    }

    async fn with(x: std::sync::Arc<Exectl>, short: &str) -> Stack {
        let name = format!("{}{short}", stack_prefix());
        x.purge_leftovers(&[&name]).await;
        Stack { name, x }
    }

    /// A port free right now (bound on every address, then released), as a flag value. Picked below
    /// the kernel's ephemeral range (32768–60999): a port from that range, free when picked, was taken
    /// by a load test's outgoing connection before the deploy could publish it. Random, and never the
    /// same twice in one process, so that tests side by side do not pick one port.
    pub fn port() -> String {
        use rand::Rng;
        static GIVEN: std::sync::Mutex<Vec<u16>> = std::sync::Mutex::new(Vec::new());
        let mut given = GIVEN.lock().unwrap();
        let mut rng = rand::thread_rng();
        for _ in 0..1000 {
            let port: u16 = rng.gen_range(20_000..32_000);
            if !given.contains(&port) && std::net::TcpListener::bind(("0.0.0.0", port)).is_ok() {
                given.push(port);
                return port.to_string();
            }
        }
        panic!("no free port in 20000..32000");
    }

    /// `exectl-STACK-SERVICE`, the name of one of its containers.
    pub fn container(&self, service: &str) -> String {
        format!("exectl-{}-{service}", self.name)
    }

    /// `prepare` of `accounts` accounts at bcrypt cost 4 with minted tokens (`--tokens` then skips the
    /// logins), and `extra` flags.
    pub fn prepare_tokens(&self, accounts: &str, extra: &[&str]) {
        let mut args = vec![
            "prepare",
            "--stack",
            &self.name,
            "--accounts",
            accounts,
            "--bcrypt-cost",
            "4",
            "--mint-tokens",
            "--json",
        ];
        args.extend(extra);
        self.x.ok(&args);
    }
}

/// A command run with its stdout and stderr piped, its progress read line by line: `until` waits for
/// a line (something to do at a moment of the run: pause the app, restart it), `wait` for its end.
pub struct Watched {
    child: std::process::Child,
    lines: Option<std::io::Lines<std::io::BufReader<std::process::ChildStderr>>>,
    /// Every stderr line read so far, for the failure messages.
    pub said: Vec<String>,
}

impl Watched {
    pub fn spawn(mut command: std::process::Command) -> Watched {
        use std::io::BufRead;
        let mut child = command
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let lines = std::io::BufReader::new(child.stderr.take().unwrap()).lines();
        Watched {
            child,
            lines: Some(lines),
            said: Vec::new(),
        }
    }

    /// Read stderr until a line `what` accepts; panics naming `waiting_for` if the run ends first.
    pub fn until(&mut self, waiting_for: &str, what: impl Fn(&str) -> bool) {
        let lines = self.lines.as_mut().expect("until before wait");
        loop {
            let line = lines
                .next()
                .unwrap_or_else(|| panic!("the run ended before {waiting_for}: {:?}", self.said))
                .unwrap();
            let seen = what(&line);
            self.said.push(line);
            if seen {
                return;
            }
        }
    }

    /// Keep reading stderr on a thread (a full pipe would block the run) while `during` runs, then
    /// wait for the end: its output, and every stderr line.
    pub fn wait(mut self, during: impl FnOnce()) -> (Output, Vec<String>) {
        let lines = self.lines.take().expect("wait once");
        let rest = std::thread::spawn(move || lines.map_while(Result::ok).collect::<Vec<_>>());
        during();
        let out = self.child.wait_with_output().unwrap();
        self.said.extend(rest.join().unwrap());
        (out, self.said)
    }
}

impl Drop for Stack {
    fn drop(&mut self) {
        let out = self
            .x
            .run(&["teardown", "--stack", &self.name, "--purge", "--break-lock"]);
        if !out.status.success() {
            eprintln!(
                "warning: teardown of {} at the end of the test failed: {}",
                self.name,
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
}

/// EXECTL_TEST_STACK_PREFIX, default "t-": starts every stack and container name a test makes.
pub fn stack_prefix() -> String {
    std::env::var("EXECTL_TEST_STACK_PREFIX").unwrap_or_else(|_| "t-".into())
}

/// A container made outside exectl (`docker create`/`run` ARGS), removed when dropped, passed or not.
pub struct Foreign {
    pub name: String,
}

impl Foreign {
    /// Remove a leftover of the same name, then `docker ARGS` (which must name it).
    pub fn start(name: &str, args: &[&str]) -> Foreign {
        let _ = std::process::Command::new("docker")
            .args(["rm", "-f", name])
            .output();
        let f = Foreign { name: name.into() };
        docker_cli(args);
        f
    }
}

impl Drop for Foreign {
    fn drop(&mut self) {
        let _ = std::process::Command::new("docker")
            .args(["rm", "-f", &self.name])
            .output();
    }
}

pub async fn docker() -> Docker {
    let d = Docker::connect_with_defaults()
        .unwrap()
        .negotiate_version()
        .await
        .expect("a running Docker engine (scripts/dockerd.sh) is required for these tests");
    for image in [
        "exectl-fixture/standin:latest",
        "exectl-fixture/postgres:15",
    ] {
        d.inspect_image(image)
            .await
            .unwrap_or_else(|_| panic!("fixture image {image} missing: run bash images/build.sh"));
    }
    d
}

/// Names of every container, network and volume carrying the stack's label.
pub async fn labelled(d: &Docker, stack: &str) -> Vec<String> {
    let o = exectl::engine::observe::observe(d, stack).await.unwrap();
    let mut all: Vec<String> = o.containers.into_iter().map(|c| c.name).collect();
    all.extend(o.networks);
    all.extend(o.volumes);
    all
}

/// Container name → id, for the stack.
pub async fn container_ids(d: &Docker, stack: &str) -> std::collections::BTreeMap<String, String> {
    let mut out = std::collections::BTreeMap::new();
    for c in exectl::engine::observe::observe(d, stack)
        .await
        .unwrap()
        .containers
    {
        let info = d.inspect_container(&c.name, None).await.unwrap();
        out.insert(c.service, info.id.unwrap_or_default());
    }
    out
}

/// The container's address on its stack network (reachable from this host's bridge).
pub async fn container_ip(d: &Docker, container: &str) -> String {
    let info = d.inspect_container(container, None).await.unwrap();
    let nets = info.network_settings.unwrap().networks.unwrap();
    nets.values()
        .find_map(|n| n.ip_address.clone().filter(|ip| !ip.is_empty()))
        .unwrap()
}

pub fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap()
}

/// Run a SQL script in the stack's database container, as the app's user.
pub async fn sql(d: &Docker, stack: &str, db: &str, script: &str) -> String {
    let container = format!("exectl-{stack}-{db}");
    let cmd: Vec<&str> = match db {
        "postgres" => vec![
            "psql",
            "-v",
            "ON_ERROR_STOP=1",
            "-qAt",
            "-U",
            "exelearning",
            "exelearning",
        ],
        _ => vec![
            "sh",
            "-c",
            "mariadb -N -uexelearning -p\"$MARIADB_PASSWORD\" exelearning",
        ],
    };
    let out = exectl::sut::exec(d, &container, &cmd, Some(script.as_bytes()))
        .await
        .unwrap();
    assert_eq!(out.exit_code, 0, "{script}: {}", out.stderr);
    out.stdout
}

pub fn now_ms() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis()
}

/// Seed one user owning one public project; returns the project's uuid.
pub async fn seed_owner(d: &Docker, stack: &str, db: &str, email: &str, password: &str) -> String {
    let hash = bcrypt::hash(password, 4).unwrap();
    let uuid = format!(
        "{:08x}-0000-4000-8000-{:012x}",
        now_ms() as u32,
        now_ms() as u64 & 0xffff_ffff_ffff
    );
    let now = now_ms();
    sql(
        d,
        stack,
        db,
        &format!(
            "INSERT INTO users (email, password, roles, is_lopd_accepted, quota_mb, is_active, created_at, updated_at) \
             VALUES ('{email}', '{hash}', '[\"ROLE_USER\"]', 1, 4096, 1, {now}, {now});\n\
             INSERT INTO projects (uuid, title, owner_id, status, visibility, saved_once, created_at, updated_at) \
             VALUES ('{uuid}', 'bench', (SELECT id FROM users WHERE email = '{email}'), 'active', 'public', 1, {now}, {now});\n"
        ),
    )
    .await;
    uuid
}

pub async fn login(base: &str, host: Option<&str>, email: &str, password: &str) -> String {
    let mut req = reqwest::Client::new()
        .post(format!("{base}/api/auth/login"))
        .json(&serde_json::json!({"email": email, "password": password}));
    if let Some(h) = host {
        req = req.header("Host", h);
    }
    let resp = req.send().await.unwrap();
    assert_eq!(resp.status(), 200, "login through {base}");
    let body: serde_json::Value = resp.json().await.unwrap();
    body["access_token"].as_str().unwrap().to_string()
}

/// `/api/websocket/info` of one instance, queried directly on its container address.
pub async fn ws_info(d: &Docker, container: &str) -> serde_json::Value {
    let ip = container_ip(d, container).await;
    reqwest::get(format!("http://{ip}:8080/api/websocket/info"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

pub type Socket = tokio_tungstenite::WebSocketStream<tokio::net::TcpStream>;

/// Open `n` WebSockets to the project through 127.0.0.1:`port`, and check they are held: still open once
/// the server has had time to authorise (a rejection comes as a close right after the upgrade).
pub async fn hold_sockets(port: &str, uuid: &str, token: &str, n: usize) -> Vec<Socket> {
    use futures_util::StreamExt;
    let dials = (0..n).map(|_| {
        let url = format!("ws://127.0.0.1:{port}/yjs/project-{uuid}?token={token}");
        async move {
            let tcp = tokio::net::TcpStream::connect(format!("127.0.0.1:{port}"))
                .await
                .unwrap();
            tokio_tungstenite::client_async(url, tcp).await.unwrap().0
        }
    });
    let mut sockets = futures_util::future::join_all(dials).await;
    tokio::time::sleep(std::time::Duration::from_millis(700)).await;
    for s in sockets.iter_mut() {
        if let Ok(Some(msg)) =
            tokio::time::timeout(std::time::Duration::from_millis(5), s.next()).await
        {
            assert!(
                !matches!(msg, Ok(tokio_tungstenite::tungstenite::Message::Close(_))),
                "closed: {msg:?}"
            );
        }
    }
    sockets
}

pub async fn close_sockets(sockets: Vec<Socket>) {
    for mut s in sockets {
        let _ = s.close(None).await;
    }
}

/// A rig's hold on its fixed names (namespace, veth, subnet, folder): shared on `/tmp/exectl-rig.lock`,
/// exclusive on `/tmp/exectl-rig.NAME.lock`, both released when dropped (after the rig's teardown, as the
/// last field of its owner). Within one run every rig has its own name and they come up side by side; a
/// second run on the machine (another clone's CI, a developer's `cargo test --test suite remote_sut::`) waits for
/// the same rig instead of tearing it down under the first, and `flock /tmp/exectl-rig.lock CMD` keeps
/// every rig of this machine for CMD.
pub struct RigLock(#[allow(dead_code)] Vec<std::fs::File>);

pub fn rig_lock(name: &str) -> RigLock {
    let take = |path: String, how: i32| {
        let f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .unwrap_or_else(|e| panic!("opening {path}: {e}"));
        let waited = std::time::Instant::now();
        // SAFETY: flock on a descriptor this File owns; released when it closes.
        let rc = unsafe { libc::flock(std::os::fd::AsRawFd::as_raw_fd(&f), how) };
        assert_eq!(rc, 0, "flock {path}: {}", std::io::Error::last_os_error());
        if waited.elapsed() > std::time::Duration::from_secs(1) {
            eprintln!("waited {:.0} s for {path}", waited.elapsed().as_secs_f64());
        }
        f
    };
    RigLock(vec![
        take("/tmp/exectl-rig.lock".into(), libc::LOCK_SH),
        take(format!("/tmp/exectl-rig.{name}.lock"), libc::LOCK_EX),
    ])
}

/// `bash SCRIPT down NAME` of a test rig (sut.sh, rig.sh), from a Drop: a failure is said, not raised.
pub fn rig_down(script: &str, name: &str) {
    match std::process::Command::new("bash")
        .args([script, "down", name])
        .output()
    {
        Ok(out) if out.status.success() => {}
        Ok(out) => eprintln!(
            "{script} down {name} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ),
        Err(e) => eprintln!("{script} down {name}: {e}"),
    }
}

/// One named check of a `doctor --json` report.
pub fn doctor_check<'a>(report: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no {name} check in {report:#}"))
}

/// Run the docker CLI against the local engine and require success; returns stdout.
pub fn docker_cli(args: &[&str]) -> String {
    let o = std::process::Command::new("docker")
        .args(args)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "docker {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// A single SQLite stack's spec flags on `port`, sized for these machines (the engine allows 20000 open
/// files per container).
pub fn single_sqlite<'a>(stack: &'a str, port: &'a str) -> Vec<&'a str> {
    vec![
        "single",
        "--db",
        "sqlite",
        "--stack",
        stack,
        "--http-port",
        port,
        "--nofile",
        "20000",
    ]
}

/// A container paused by `docker pause`, unpaused when dropped: a failed assertion leaves no paused
/// container to the teardown (or the next run).
pub struct Paused(String);

impl Paused {
    /// Freezes `container`. The engine's freezer gives up ("unable to freeze") when the container's
    /// processes do not all stop within its own retries, which a host busy with other work can cause
    /// (runc thaws it again then): the pause is asked again after a quiet moment, a few times, before
    /// the test fails.
    pub fn pause(container: &str) -> Paused {
        const TRIES: u32 = 6;
        for attempt in 1..=TRIES {
            let o = std::process::Command::new("docker")
                .args(["pause", container])
                .output()
                .unwrap();
            if o.status.success() {
                return Paused(container.to_string());
            }
            let err = String::from_utf8_lossy(&o.stderr);
            assert!(
                err.contains("unable to freeze") && attempt < TRIES,
                "docker pause {container} (attempt {attempt} of {TRIES}): {err}"
            );
            eprintln!("docker pause {container}: the engine could not freeze it (attempt {attempt}); again in 2 s");
            std::thread::sleep(std::time::Duration::from_secs(2));
        }
        unreachable!("the last attempt returns or fails its assert")
    }
}

impl Drop for Paused {
    fn drop(&mut self) {
        let _ = std::process::Command::new("docker")
            .args(["unpause", &self.0])
            .stderr(std::process::Stdio::null())
            .status();
    }
}

/// A bench level's check of objective `key` (results.json's `levels[i]`), or a panic naming it.
pub fn slo_check<'a>(level: &'a serde_json::Value, key: &str) -> &'a serde_json::Value {
    level["slos"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["key"] == key)
        .unwrap_or_else(|| panic!("no {key} check: {:#}", level["slos"]))
}

/// Exit code and stderr of a run that must fail.
pub fn failed(out: &Output) -> (Option<i32>, String) {
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Every regular file under `dir` (symbolic links not followed) whose bytes hold `needle`.
pub fn files_holding(dir: &Path, needle: &str) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            let Ok(meta) = std::fs::symlink_metadata(&p) else {
                continue;
            };
            if meta.is_dir() {
                todo.push(p);
            } else if meta.is_file() {
                let bytes = std::fs::read(&p).unwrap_or_default();
                if bytes.windows(needle.len()).any(|w| w == needle.as_bytes()) {
                    found.push(p);
                }
            }
        }
    }
    found.sort();
    found
}

/// Docker's healthcheck interval of the stacks `deploy_json` makes. Each check is a `docker exec`: ~40 ms
/// of CPU for the engine, containerd and runc (an idle ha ×2 stack took 0.12 CPU with 1 s, 0.04 with
/// 30 s). Every deploy of the tests had 1 s; at 5 s the first run of scripts/test.sh took 609 s instead
/// of 672 (tests/README.md). Deploy and bench do not wait for Docker's word (deploy's own probe answers
/// first; bench refuses only "unhealthy"); a test that does passes its own `--health-interval`.
pub const HEALTH_INTERVAL: &str = "5s";

/// With `EXECTL_TEST_TRACE=FILE`, each command a test ran and how long it took, appended to FILE (one
/// line each, the test's name first): where a slow test's minutes go, read from one whole run.
pub fn trace(args: &[&str], took: std::time::Duration) {
    let Some(file) = std::env::var_os("EXECTL_TEST_TRACE") else {
        return;
    };
    let test = std::thread::current().name().unwrap_or("?").to_owned();
    let words: Vec<&str> = args.iter().take(6).copied().collect();
    let line = format!(
        "{}\t{test}\t{:.1}\t{}\n",
        env!("CARGO_CRATE_NAME"),
        took.as_secs_f64(),
        words.join(" ")
    );
    use std::io::Write;
    if let Ok(mut f) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(file)
    {
        let _ = f.write_all(line.as_bytes());
    }
}
