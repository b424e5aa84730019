//! 10,000 idle WebSockets against one exe-standin, opened by a separate client process (this same
//! executable, re-run with STANDIN_BENCH_ROLE=client); prints the server's RSS (VmRSS/VmHWM from
//! /proc/PID/status) against the real app's 257 MiB at 10,000.
//!
//! Run: cargo bench -p exe-standin --bench idle_sockets   (STANDIN_BENCH_SOCKETS overrides 10000)

#[path = "../tests/common/mod.rs"]
mod common;

use std::io::{BufRead, BufReader, Read};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use futures_util::StreamExt;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;

const EMAIL: &str = "bench-user-0@exelearning.net";
const PW: &str = "Bench1234!";
const REAL_APP_MIB: f64 = 257.0;

fn raise_nofile() -> u64 {
    // SAFETY: plain getrlimit/setrlimit on a local struct.
    unsafe {
        let mut lim = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim);
        lim.rlim_cur = lim.rlim_max;
        libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
        lim.rlim_cur
    }
}

/// VmRSS and VmHWM of a process, in MiB.
fn rss_mib(pid: u32) -> (f64, f64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|kb| kb.parse::<f64>().ok())
            .map(|kb| kb / 1024.0)
            .unwrap_or(f64::NAN)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

fn main() {
    let nofile = raise_nofile();
    if std::env::var("STANDIN_BENCH_ROLE").as_deref() == Ok("client") {
        return client();
    }
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
        .block_on(parent(nofile));
}

async fn parent(nofile: u64) {
    let n: usize = std::env::var("STANDIN_BENCH_SOCKETS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000);
    let rooms: usize = std::env::var("STANDIN_BENCH_ROOMS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100);
    let mut db = TestDb::new(Dialect::Sqlite).await;
    let mut env = db.env();
    env.push(("RUST_LOG".into(), "warn".into()));
    // Extra server variables for experiments, e.g. STANDIN_BENCH_SERVER_ENV="GLIBC_TUNABLES=...".
    if let Ok(extra) = std::env::var("STANDIN_BENCH_SERVER_ENV") {
        for kv in extra.split(',').filter(|kv| !kv.is_empty()) {
            if let Some((k, v)) = kv.split_once('=') {
                env.push((k.to_string(), v.to_string()));
            }
        }
    }
    let server = Server::start(&env).await;
    db.seed_user(EMAIL, &hash(PW, "$2b$", 10), r#"["ROLE_USER"]"#)
        .await;
    let mut docs = Vec::new();
    for _ in 0..rooms {
        docs.push(format!(
            "project-{}",
            db.seed_project(EMAIL, "active", "private").await
        ));
    }
    let (token, _) = login(&server, EMAIL, PW).await;
    // A file, not a variable: 10,000 names exceed the kernel's limit for one environment string.
    let docs_file = db.dir.path().join("docs.txt");
    std::fs::write(&docs_file, docs.join("\n")).unwrap();
    let pid = server.pid();
    let (rss0, _) = rss_mib(pid);

    let mut child = Command::new(std::env::current_exe().unwrap())
        .env("STANDIN_BENCH_ROLE", "client")
        .env("BENCH_BASE", format!("ws://127.0.0.1:{}/yjs/", server.port))
        .env("BENCH_TOKEN", &token)
        .env("BENCH_DOCS_FILE", &docs_file)
        .env("BENCH_N", n.to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let report = std::thread::spawn(move || {
        let mut line = String::new();
        BufReader::new(stdout).read_line(&mut line).ok();
        line
    });

    // Joined (authorised, in a room) is what counts, not upgraded: poll the server's own count until it
    // reaches n, or stops growing for 10 s once the client is done.
    let t0 = Instant::now();
    let (mut held, mut last_growth) = (0, Instant::now());
    while t0.elapsed() < Duration::from_secs(300) {
        let now = ws_counts(&server, None).await.0 as usize;
        if now > held {
            (held, last_growth) = (now, Instant::now());
        }
        if held >= n || (report.is_finished() && last_growth.elapsed() > Duration::from_secs(10)) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let open_secs = t0.elapsed().as_secs_f64();
    // Idle for a while (past one 30 s ping round would be longer than needed), then read the figures.
    let hold: u64 = std::env::var("STANDIN_BENCH_HOLD_SECS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3);
    tokio::time::sleep(Duration::from_secs(hold)).await;
    let (rss, hwm) = rss_mib(pid);
    let client_line = if report.is_finished() {
        report.join().unwrap()
    } else {
        "client still opening".into()
    };

    drop(child.stdin.take()); // the client exits on stdin EOF, closing every socket
    let _ = child.wait();
    let t1 = Instant::now();
    let mut after = usize::MAX;
    while t1.elapsed() < Duration::from_secs(60) {
        after = ws_counts(&server, None).await.0 as usize;
        if after == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let (rss_after, _) = rss_mib(pid);

    println!("idle WebSockets: {n} requested over {rooms} rooms, client in a separate process");
    println!("RLIMIT_NOFILE soft raised to {nofile}");
    println!("client: {}", client_line.trim());
    println!("server totalConnections while held: {held} (all opened within {open_secs:.1} s)");
    println!("server RSS before sockets:  {rss0:7.1} MiB");
    println!(
        "server RSS with sockets:    {rss:7.1} MiB (VmHWM {hwm:.1} MiB) — target < 150 MiB; the real app: {REAL_APP_MIB} MiB"
    );
    println!(
        "per socket:                 {:7.1} KiB",
        (rss - rss0) * 1024.0 / held.max(1) as f64
    );
    println!("after the client closed:    totalConnections {after}, RSS {rss_after:.1} MiB");
}

fn client() {
    let base = std::env::var("BENCH_BASE").unwrap();
    let token = std::env::var("BENCH_TOKEN").unwrap();
    let docs: Vec<String> = std::fs::read_to_string(std::env::var("BENCH_DOCS_FILE").unwrap())
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    let n: usize = std::env::var("BENCH_N").unwrap().parse().unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async move {
        let opened = Arc::new(AtomicUsize::new(0));
        let failed = Arc::new(AtomicUsize::new(0));
        // Handshakes in flight (STANDIN_BENCH_DIALS, default 200).
        let dials: usize = std::env::var("STANDIN_BENCH_DIALS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(200);
        let gate = Arc::new(tokio::sync::Semaphore::new(dials));
        let mut handles = Vec::with_capacity(n);
        let config = WebSocketConfig::default()
            .read_buffer_size(4096)
            .write_buffer_size(0);
        for i in 0..n {
            let url = format!("{base}{}?token={token}", docs[i % docs.len()]);
            let permit = Arc::clone(&gate).acquire_owned().await.unwrap();
            let (opened, failed) = (Arc::clone(&opened), Arc::clone(&failed));
            handles.push(tokio::spawn(async move {
                let r = tokio_tungstenite::connect_async_with_config(url, Some(config), true).await;
                match r {
                    Ok((mut ws, _)) => {
                        opened.fetch_add(1, Ordering::Relaxed);
                        drop(permit);
                        // Idle, but reading: that answers the server's pings.
                        while let Some(Ok(_)) = ws.next().await {}
                    }
                    Err(_) => {
                        failed.fetch_add(1, Ordering::Relaxed);
                        drop(permit);
                    }
                }
            }));
        }
        // Wait for the last handshakes (bounded), then report.
        let _ = tokio::time::timeout(Duration::from_secs(60), async {
            let _ = Arc::clone(&gate).acquire_many_owned(dials as u32).await;
        })
        .await;
        println!(
            "opened {} failed {}",
            opened.load(Ordering::Relaxed),
            failed.load(Ordering::Relaxed)
        );
        // Hold until the parent closes stdin.
        tokio::task::spawn_blocking(|| {
            let mut sink = Vec::new();
            let _ = std::io::stdin().read_to_end(&mut sink);
        })
        .await
        .ok();
    });
}
