//! Benchmark: the client's cost of a busy `exectl load collab` run, to compare exectl builds in one
//! sitting. 200 users in 40 rooms of 5, a frame every 50–200 ms each, 2 s ramp, 20 s hold, against one
//! stand-in; each build given runs in turn (alternating, 3 rounds) on the same stand-in and seed. Prints
//! per run: exit code, frames sent and received, the delivery counts, the client's CPU and peak RSS, and
//! the delivery latency.
//!
//! ```sh
//! cargo build -p exe-standin --bin exe-standin && cargo build -p exectl --bin exectl
//! cargo run --example load_collab_cost -- [EXECTL_BIN ...]   # default: target/debug/exectl
//! ```

#[path = "../tests/load_support/mod.rs"]
mod load_support;

use std::process::{Command, Stdio};

use load_support::Standin;

fn main() {
    let mut bins: Vec<String> = std::env::args().skip(1).collect();
    if bins.is_empty() {
        bins.push(
            load_support::target_dir()
                .join("debug/exectl")
                .display()
                .to_string(),
        );
    }
    let s = Standin::start(&[]);
    let layout: Vec<(usize, Vec<usize>)> = (0..40)
        .map(|r| (5 * r, (5 * r + 1..5 * r + 5).collect()))
        .collect();
    let seeded = load_support::seed(&s, 200, layout, 4);
    let dir = tempfile::tempdir().unwrap();
    seeded.write_manifest(dir.path(), None, 0);
    for round in 0..3 {
        for bin in &bins {
            let out = tempfile::NamedTempFile::new().unwrap();
            let st = Command::new(bin)
                .args(["load", "collab", "--url", &s.url(), "--manifest"])
                .arg(dir.path())
                .args([
                    "--ramp",
                    "2s",
                    "--hold",
                    "20s",
                    "--interval",
                    "100ms",
                    "--json",
                ])
                .arg("--out")
                .arg(out.path())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .expect("run exectl");
            let j: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(out.path()).unwrap()).unwrap();
            let f = &j["fanout"];
            println!(
                "round {round} {bin}: exit {:?} sent {} received {} deliveries {} cpu {} s \
                 peak RSS {:.1} MiB delivery p50 {} p99 {} ms",
                st.code(),
                f["frames_sent"],
                f["fanout_messages"],
                f["deliveries"],
                j["client_cpu_seconds"],
                j["client_peak_rss_bytes"].as_u64().unwrap_or(0) as f64 / (1 << 20) as f64,
                f["delivery_ms"]["p50"],
                f["delivery_ms"]["p99"],
            );
        }
    }
}
