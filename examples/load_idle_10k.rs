//! Benchmark: `exectl load idle` holding 10,000 WebSockets against one stand-in, each in its own process
//! (each needs 10k file descriptors; these machines' hard limit is 20,000). Prints the generator's peak
//! RSS (target under 200 MiB; the seed's k6 needed about 8 GiB for 10,000), its connection rate and CPU,
//! and the server's own count of connections during and after the hold.
//!
//! ```sh
//! cargo build --release -p exe-standin --bin exe-standin
//! cargo build --release -p exectl --bin exectl
//! cargo run --release --example load_idle_10k -- [USERS] [HOLD] [RAMP] [DIAL_CONCURRENCY]
//! ```
//! Defaults: 10000 users, hold 60s, ramp 20s, 64 dials in flight.

#[path = "../tests/load_support/mod.rs"]
mod load_support;

use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use load_support::{Seeded, Standin};

/// `totalConnections` from the stand-in's /api/websocket/info.
fn server_connections(port: u16) -> Option<u64> {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(
        s,
        "GET /api/websocket/info HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n"
    )
    .ok()?;
    let mut buf = String::new();
    s.read_to_string(&mut buf).ok()?;
    let body = buf.split("\r\n\r\n").nth(1)?;
    let v: serde_json::Value = serde_json::from_str(body).ok()?;
    v["totalConnections"].as_u64()
}

fn vm_hwm(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
        .map_or(0, |kib| kib * 1024)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |i: usize, d: &str| args.get(i).cloned().unwrap_or_else(|| d.to_string());
    let users: usize = arg(0, "10000").parse().expect("USERS");
    let (hold, ramp, dials) = (arg(1, "60s"), arg(2, "20s"), arg(3, "64"));

    let release = load_support::target_dir().join("release");
    let (standin_bin, exectl_bin) = (release.join("exe-standin"), release.join("exectl"));
    for b in [&standin_bin, &exectl_bin] {
        assert!(
            b.exists(),
            "{} is missing: cargo build --release -p exe-standin --bin exe-standin && \
             cargo build --release -p exectl --bin exectl",
            b.display()
        );
    }

    let s = Standin::start_bin(&standin_bin, &[]);
    let t = Instant::now();
    let seeded = load_support::seed(&s, users, Seeded::solo_layout(users), 4);
    let manifest = tempfile::tempdir().unwrap();
    seeded.write_manifest(manifest.path(), Some(&s.secret), 0);
    eprintln!(
        "seeded {users} users and projects, minted {users} tokens in {:.1} s",
        t.elapsed().as_secs_f64()
    );

    // The server's view, sampled once a second in a thread of this (third) process.
    let stop = Arc::new(AtomicBool::new(false));
    let peak = Arc::new(AtomicU64::new(0));
    let sampler = {
        let (stop, peak, port) = (Arc::clone(&stop), Arc::clone(&peak), s.port);
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                if let Some(n) = server_connections(port) {
                    peak.fetch_max(n, Ordering::Relaxed);
                }
                std::thread::sleep(Duration::from_secs(1));
            }
        })
    };

    let out = manifest.path().join("summary.json");
    let url = s.url();
    let status = Command::new(&exectl_bin)
        .args(["load", "idle", "--url", &url, "--manifest"])
        .arg(manifest.path())
        .args([
            "--tokens",
            "--users",
            &users.to_string(),
            "--ramp",
            &ramp,
            "--hold",
            &hold,
        ])
        .args([
            "--dial-concurrency",
            &dials,
            "--run-id",
            &format!("bench-idle-{users}"),
        ])
        .arg("--out")
        .arg(&out)
        .status()
        .expect("run exectl");
    stop.store(true, Ordering::Relaxed);
    sampler.join().unwrap();
    std::thread::sleep(Duration::from_secs(2));
    let after = server_connections(s.port);

    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).expect("summary")).unwrap();
    let mib = |b: u64| b as f64 / (1 << 20) as f64;
    let rss = j["client_peak_rss_bytes"].as_u64().unwrap();
    println!("\n== exectl load idle benchmark ==");
    println!("exit code                 {:?}", status.code());
    println!(
        "users / connected / held  {} / {} / {}",
        j["users"], j["connected"], j["held_full_duration"]
    );
    println!("close codes               {}", j["close_codes"]);
    println!(
        "generator peak RSS        {:.1} MiB ({:.1} KiB per held socket)",
        mib(rss),
        rss as f64 / 1024.0 / j["connected"].as_f64().unwrap().max(1.0)
    );
    println!("generator CPU             {} s", j["client_cpu_seconds"]);
    println!(
        "connection rate           {} /s (ramp {ramp}, {dials} dials in flight)",
        j["connect_rate_per_s"]
    );
    println!("connect ms                {}", j["connect_ms"]);
    println!(
        "server peak connections   {} (after the run: {after:?})",
        peak.load(Ordering::Relaxed)
    );
    println!("server peak RSS           {:.1} MiB", mib(vm_hwm(s.pid())));
    println!("run duration              {} s", j["duration_s"]);
}
