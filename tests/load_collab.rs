//! `exectl load collab` against the real stand-in: every frame one collaborator sends reaches each other
//! member of its room exactly once (delivery latency measured from the timestamp it carries), and what
//! arrives wrong is counted by kind and fails the run: echoes to the sender, frames in another room.

mod load_support;

use std::time::Duration;

use load_support::{exectl_load, Standin};

/// `exectl load collab --json` on a stand-in with `faults`, users and rooms as `layout` (owner,
/// collaborators): (exit code, summary).
fn collab(
    faults: &str,
    users: usize,
    layout: Vec<(usize, Vec<usize>)>,
) -> (i32, serde_json::Value) {
    let s = Standin::start(&[("STANDIN_FAULT", faults)]);
    let seeded = load_support::seed(&s, users, layout, 4);
    let dir = tempfile::tempdir().unwrap();
    seeded.write_manifest(dir.path(), None, 0);
    let m = dir.path().to_str().unwrap();
    let url = s.url();
    let (code, json, stderr) = exectl_load(
        &[
            "collab",
            "--url",
            &url,
            "--manifest",
            m,
            "--ramp",
            "500ms",
            "--hold",
            "4s",
            "--interval",
            "200ms",
            "--json",
        ],
        Duration::from_secs(60),
    );
    eprintln!("{stderr}");
    let j = json.unwrap_or_else(|| panic!("no summary; stderr:\n{stderr}"));
    assert_eq!(j["held_full_duration"], users, "{j:#}");
    (code, j)
}

fn count(v: &serde_json::Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
}

#[test]
fn collab_fans_every_frame_out_to_the_others() {
    // User 0 owns the project; users 1..4 are collaborators (project_collaborators rows).
    let (code, j) = collab("none", 5, vec![(0, vec![1, 2, 3, 4])]);
    assert_eq!(code, 0, "{j:#}");
    let f = &j["fanout"];
    let sent = count(&f["frames_sent"]);
    assert!(sent >= 5, "every user sends several frames: {f:#}");
    let d = &f["deliveries"];
    assert_eq!(count(&d["expected"]), 4 * sent, "{f:#}");
    assert_eq!(count(&d["delivered"]), 4 * sent, "{f:#}");
    for kind in [
        "lost",
        "duplicated",
        "echoed",
        "cross_room",
        "delivered_to_partial_members",
    ] {
        assert_eq!(count(&d[kind]), 0, "{kind}: {f:#}");
    }
    assert_eq!(count(&f["fanout_messages"]), 4 * sent, "{f:#}");
    assert_eq!(count(&f["fanout_bytes"]), 4 * count(&f["bytes_sent"]));
    // Frames are 50..=450 bytes.
    assert!(count(&f["bytes_sent"]) >= 50 * sent);
    assert!(count(&f["bytes_sent"]) <= 450 * sent);
    assert_eq!(count(&f["delivery_ms"]["count"]), 4 * sent);
    assert!(f["delivery_ms"]["max"].as_f64().unwrap() > 0.0);
}

/// The real build relays every frame back to its sender too: received was 4/3 of expected in every run,
/// and the excess counted as delivered. Each echo is now counted as such, and fails the run.
#[test]
fn collab_fails_when_the_relay_echoes_frames_to_their_sender() {
    let (code, j) = collab("echo-to-sender", 4, vec![(0, vec![1, 2, 3])]);
    assert_eq!(code, 1, "{j:#}");
    let f = &j["fanout"];
    let sent = count(&f["frames_sent"]);
    let d = &f["deliveries"];
    assert!(sent >= 4, "{f:#}");
    assert_eq!(
        count(&d["echoed"]),
        sent,
        "each sender gets each of its own frames back: {f:#}"
    );
    // The echoes are not deliveries: the room-mates still got exactly what they were owed.
    assert_eq!(count(&d["delivered"]), 3 * sent, "{f:#}");
    assert_eq!(count(&d["expected"]), 3 * sent, "{f:#}");
    assert_eq!(count(&f["fanout_messages"]), 4 * sent, "{f:#}");
    assert_eq!(
        (
            count(&d["lost"]),
            count(&d["duplicated"]),
            count(&d["cross_room"])
        ),
        (0, 0, 0)
    );
    assert_eq!(
        j["failures"]["echoed_frames"], 4,
        "every user got echoes: {j:#}"
    );
    assert_eq!(j["failed"], 4);
    assert_eq!(
        count(&f["delivery_ms"]["count"]),
        3 * sent,
        "echoes are not timed as deliveries"
    );
}

/// Every 4th frame the stand-in relays also goes into the other room: its 3 members each count it as
/// cross-room, and the run fails.
#[test]
fn collab_fails_when_frames_reach_another_room() {
    let (code, j) = collab("cross-room", 6, vec![(0, vec![1, 2]), (3, vec![4, 5])]);
    assert_eq!(code, 1, "{j:#}");
    let f = &j["fanout"];
    let sent = count(&f["frames_sent"]);
    let d = &f["deliveries"];
    assert!(sent >= 8, "{f:#}");
    assert_eq!(count(&d["cross_room"]), 3 * (sent / 4), "{f:#}");
    assert_eq!(count(&d["delivered"]), 2 * sent, "{f:#}");
    assert_eq!(count(&d["expected"]), 2 * sent, "{f:#}");
    assert_eq!(
        (
            count(&d["lost"]),
            count(&d["duplicated"]),
            count(&d["echoed"])
        ),
        (0, 0, 0)
    );
    assert!(count(&j["failures"]["cross_room_frames"]) > 0, "{j:#}");
}

#[test]
fn editing_mix_runs_its_actions() {
    let s = Standin::start(&[]);
    let seeded = load_support::seed(&s, 4, vec![(0, vec![1]), (2, vec![3])], 4);
    let dir = tempfile::tempdir().unwrap();
    seeded.write_manifest(dir.path(), None, 0);
    let m = dir.path().to_str().unwrap();
    let url = s.url();
    // Waits uniform in [25 ms, 100 ms] over 3 s: dozens of actions per user, every kind drawn.
    let (code, json, stderr) = exectl_load(
        &[
            "editing",
            "--url",
            &url,
            "--manifest",
            m,
            "--ramp",
            "0",
            "--hold",
            "3s",
            "--interval",
            "50ms",
            "--json",
        ],
        Duration::from_secs(60),
    );
    eprintln!("{stderr}");
    let j = json.unwrap_or_else(|| panic!("no summary; stderr:\n{stderr}"));
    assert_eq!(code, 0, "{j:#}");
    assert_eq!(j["held_full_duration"], 4);
    let actions = j["editing"]["actions"].as_object().unwrap();
    assert!(actions["autosave 200"].as_u64().unwrap() > 0, "{actions:?}");
    assert!(actions["metadata 200"].as_u64().unwrap() > 0, "{actions:?}");
    // Collaborators get 403 on /api/v1/projects/:uuid (owner only): expected, not a failure.
    assert!(actions["metadata 403"].as_u64().unwrap() > 0, "{actions:?}");
    assert!(j["fanout"]["frames_sent"].as_u64().unwrap() > 0);
    assert!(j["fanout"]["fanout_messages"].as_u64().unwrap() > 0);
}

/// Not a check: the client's cost of a busy collab run, for BENCHMARKS.md. 200 users in 40 rooms of 5,
/// a frame every 50–200 ms each, 20 s hold; prints the client's CPU and peak RSS and the delivery
/// latency. `EXECTL_BENCH_BINS=/path/a,/path/b` runs each of several exectl builds in turn (alternating,
/// 3 rounds) on the same stand-in and seed, to compare builds in one sitting.
#[test]
#[ignore = "a measurement, not a check: cargo test --test load_collab collab_cost -- --ignored --nocapture"]
fn collab_cost_per_frame() {
    let s = Standin::start(&[]);
    let layout: Vec<(usize, Vec<usize>)> = (0..40)
        .map(|r| (5 * r, (5 * r + 1..5 * r + 5).collect()))
        .collect();
    let seeded = load_support::seed(&s, 200, layout, 4);
    let dir = tempfile::tempdir().unwrap();
    seeded.write_manifest(dir.path(), None, 0);
    let default_bin = load_support::target_dir().join("debug/exectl");
    let bins: Vec<String> = std::env::var("EXECTL_BENCH_BINS")
        .map(|v| v.split(',').map(str::to_string).collect())
        .unwrap_or_else(|_| vec![default_bin.display().to_string()]);
    for round in 0..3 {
        for bin in &bins {
            let out = tempfile::NamedTempFile::new().unwrap();
            let st = std::process::Command::new(bin)
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
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .status()
                .unwrap();
            let j: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(out.path()).unwrap()).unwrap();
            let f = &j["fanout"];
            println!(
                "round {round} {bin}: exit {:?} sent {} received {} cpu {} s peak RSS {:.1} MiB \
                 delivery p50 {} p99 {} ms",
                st.code(),
                f["frames_sent"],
                f["fanout_messages"],
                j["client_cpu_seconds"],
                count(&j["client_peak_rss_bytes"]) as f64 / (1 << 20) as f64,
                f["delivery_ms"]["p50"],
                f["delivery_ms"]["p99"],
            );
        }
    }
}
