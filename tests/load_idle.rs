//! `exectl load idle` against the real stand-in: held sockets succeed; sockets the server closes right
//! after the 101 (ACCESS_DENIED) are failures with their close code, not successes.

mod load_support;

use std::time::Duration;

use load_support::{exectl_load, Seeded, Standin};

const USERS: usize = 200;

fn args<'a>(url: &'a str, manifest: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut v = vec![
        "idle",
        "--url",
        url,
        "--manifest",
        manifest,
        "--users",
        "200",
        "--ramp",
        "2s",
        "--hold",
        "3s",
        "--dial-concurrency",
        "32",
    ];
    v.extend_from_slice(extra);
    v
}

#[test]
fn idle_holds_every_socket_and_reports_access_denied_as_failure() {
    let s = Standin::start(&[]);
    let seeded = load_support::seed(&s, USERS, Seeded::solo_layout(USERS), 4);
    let url = s.url();

    // Each user in the project it owns: all held for the full hold, exit 0.
    let good = tempfile::tempdir().unwrap();
    seeded.write_manifest(good.path(), None, 0);
    let m = good.path().to_str().unwrap();
    let (code, json, stderr) = exectl_load(&args(&url, m, &[]), Duration::from_secs(120));
    let j = json.unwrap_or_else(|| panic!("no summary; stderr:\n{stderr}"));
    assert_eq!(code, 0, "{j:#}\n{stderr}");
    assert_eq!(j["scenario"], "idle");
    assert_eq!(j["users"], USERS);
    assert_eq!(j["connected"], USERS, "{j:#}");
    assert_eq!(j["held_full_duration"], USERS, "{j:#}");
    assert_eq!(j["failed"], 0);
    assert_eq!(j["close_codes"], serde_json::json!({}));
    assert_eq!(j["login_ms"]["count"], USERS);
    assert!(j["login_ms"]["p50"].as_f64().unwrap() > 0.0);
    assert_eq!(j["connect_ms"]["count"], USERS);
    for k in ["p50", "p95", "p99", "max"] {
        assert!(j["connect_ms"][k].is_number(), "{k}");
    }
    assert!(j["client_peak_rss_bytes"].as_u64().unwrap() > 0);
    assert!(j["client_cpu_seconds"].is_number());
    assert!(j["run_id"].as_str().unwrap().starts_with("idle-200-"));
    // The per-second progress line.
    assert!(stderr.contains("held"), "{stderr}");

    // Users mapped to projects they cannot access: the upgrade still answers 101, then 4003 closes.
    // Counted as connected but failed, never as held, and the exit code says so.
    let denied = tempfile::tempdir().unwrap();
    seeded.write_manifest(denied.path(), None, 1);
    let m = denied.path().to_str().unwrap();
    let (code, json, stderr) = exectl_load(
        &args(&url, m, &["--run-id", "denied-1", "--json"]),
        Duration::from_secs(120),
    );
    let j = json.unwrap_or_else(|| panic!("no summary; stderr:\n{stderr}"));
    assert_eq!(code, 1, "{j:#}");
    assert_eq!(j["run_id"], "denied-1");
    assert_eq!(j["connected"], USERS, "the 101 is not success: {j:#}");
    assert_eq!(j["held_full_duration"], 0, "{j:#}");
    assert_eq!(j["failed"], USERS);
    assert_eq!(j["close_codes"]["4003"], USERS, "{j:#}");
    assert_eq!(j["failures"]["closed_4003"], USERS, "{j:#}");
    // Closed right after the upgrade, far from the 3 s hold.
    assert!(j["early_end_ms"]["max"].as_f64().unwrap() < 2000.0, "{j:#}");
    assert!(stderr.contains("4003"), "{stderr}");
}

#[test]
fn idle_with_minted_tokens_skips_login() {
    let s = Standin::start(&[("STANDIN_PING_INTERVAL_MS", "500")]);
    let seeded = load_support::seed(&s, 50, Seeded::solo_layout(50), 4);
    let dir = tempfile::tempdir().unwrap();
    seeded.write_manifest(dir.path(), Some(&s.secret), 0);
    let m = dir.path().to_str().unwrap();
    let url = s.url();
    // Pings every 500 ms with a 10.5 s pong deadline: a 2 s hold must answer several pings.
    let (code, json, stderr) = exectl_load(
        &[
            "idle",
            "--url",
            &url,
            "--manifest",
            m,
            "--tokens",
            "--ramp",
            "500ms",
            "--hold",
            "2s",
            "--json",
        ],
        Duration::from_secs(60),
    );
    let j = json.unwrap_or_else(|| panic!("no summary; stderr:\n{stderr}"));
    assert_eq!(code, 0, "{j:#}\n{stderr}");
    assert_eq!(j["held_full_duration"], 50);
    assert_eq!(j["login_ms"]["count"], 0, "no logins with --tokens");
    assert_eq!(j["settings"]["tokens"], true);

    // A token signed with another secret is a 4001 close.
    let bad = tempfile::tempdir().unwrap();
    seeded.write_manifest(bad.path(), Some("not-the-secret"), 0);
    let m = bad.path().to_str().unwrap();
    let (code, json, _) = exectl_load(
        &[
            "idle",
            "--url",
            &url,
            "--manifest",
            m,
            "--tokens",
            "--ramp",
            "0",
            "--hold",
            "2s",
            "--users",
            "10",
            "--quiet",
        ],
        Duration::from_secs(60),
    );
    let j = json.unwrap();
    assert_eq!(code, 1);
    assert_eq!(j["close_codes"]["4001"], 10, "{j:#}");
}
