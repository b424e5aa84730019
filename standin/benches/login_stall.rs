//! A burst of 200 concurrent logins (bcrypt cost 10) while a probe GETs /healthcheck every 25 ms, once
//! with the fixed server (bcrypt on the blocking pool) and once with STANDIN_FAULT=blocking-bcrypt (bcrypt
//! on the runtime, as bcryptjs on Bun's event loop). Prints the probe's latency for both.
//!
//! Run: cargo bench -p exe-standin --bench login_stall

#[path = "../tests/common/mod.rs"]
mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;

const LOGINS: usize = 200;
const PROBE_EVERY: Duration = Duration::from_millis(25);
const EMAIL: &str = "bench-user-0@exelearning.net";
const PW: &str = "Bench1234!";

struct Outcome {
    ok: usize,
    burst: Duration,
    probes: Vec<Duration>,
}

fn pct(sorted: &[Duration], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i].as_secs_f64() * 1000.0
}

/// The probe runs on its own thread and runtime, so the client's own work cannot delay it.
fn spawn_probe(url: String, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<Vec<Duration>> {
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let client = reqwest::Client::new();
            let mut lat = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                let t = Instant::now();
                let r = client
                    .get(&url)
                    .timeout(Duration::from_secs(60))
                    .send()
                    .await;
                if r.is_ok_and(|r| r.status().is_success()) {
                    lat.push(t.elapsed());
                }
                tokio::time::sleep(PROBE_EVERY).await;
            }
            lat
        })
    })
}

async fn burst(fault: Option<&str>) -> Outcome {
    let mut db = TestDb::new(Dialect::Sqlite).await;
    let mut env = db.env();
    env.push(("RUST_LOG".into(), "warn".into()));
    if let Some(f) = fault {
        env.push(("STANDIN_FAULT".into(), f.into()));
    }
    let server = Server::start(&env).await;
    db.seed_user(EMAIL, &hash(PW, "$2b$", 10), r#"["ROLE_USER"]"#)
        .await;
    login(&server, EMAIL, PW).await; // warm the pool

    let stop = Arc::new(AtomicBool::new(false));
    let probe = spawn_probe(server.url("/healthcheck"), Arc::clone(&stop));
    tokio::time::sleep(Duration::from_millis(200)).await;

    let client = reqwest::Client::new();
    let url = server.url("/api/auth/login");
    let t0 = Instant::now();
    let mut set = tokio::task::JoinSet::new();
    for _ in 0..LOGINS {
        let req = client
            .post(&url)
            .json(&serde_json::json!({"email": EMAIL, "password": PW}))
            .timeout(Duration::from_secs(120));
        set.spawn(async move { req.send().await.is_ok_and(|r| r.status() == 200) });
    }
    let mut ok = 0;
    while let Some(r) = set.join_next().await {
        ok += usize::from(r.unwrap_or(false));
    }
    let burst = t0.elapsed();
    stop.store(true, Ordering::Relaxed);
    let mut probes = probe.join().unwrap();
    probes.sort();
    drop(server);
    Outcome { ok, burst, probes }
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    println!(
        "login burst: {LOGINS} concurrent logins, bcrypt cost 10, SQLite; probe GET /healthcheck every {} ms",
        PROBE_EVERY.as_millis()
    );
    println!(
        "machine: {} cores",
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(0)
    );
    println!(
        "{:<34} {:>9} {:>8} {:>7} {:>9} {:>9} {:>9}",
        "server", "logins ok", "burst s", "probes", "p50 ms", "p95 ms", "max ms"
    );
    for (name, fault) in [
        ("fixed (bcrypt on blocking pool)", None),
        ("STANDIN_FAULT=blocking-bcrypt", Some("blocking-bcrypt")),
    ] {
        let o = burst(fault).await;
        println!(
            "{:<34} {:>9} {:>8.2} {:>7} {:>9.1} {:>9.1} {:>9.1}",
            name,
            format!("{}/{LOGINS}", o.ok),
            o.burst.as_secs_f64(),
            o.probes.len(),
            pct(&o.probes, 0.50),
            pct(&o.probes, 0.95),
            o.probes
                .last()
                .map(|d| d.as_secs_f64() * 1000.0)
                .unwrap_or(f64::NAN),
        );
    }
}
