//! `exectl load login-burst` against the real stand-in, with and without `STANDIN_FAULT=blocking-bcrypt`
//! (bcrypt on the runtime's threads, as the old bcryptjs on Bun's event loop): the /healthcheck probe
//! stalls with the fault and does not without it, as in the seed's table. The two runs are compared in the
//! same test, with a generous factor and no absolute timing.

mod load_support;

use std::time::Duration;

use load_support::{exectl_load, Seeded, Standin};

const USERS: usize = 200;
/// Enough bcrypt work per login for the stall to dwarf scheduling noise, little enough for a quick test.
/// 8: bcrypt is optimised in test builds (Cargo.toml, for tests/common/cpu.rs), the stand-in's too; at 6
/// a burst of 200 was over in 0.9 s and the fault's stall (probe p95 89 ms) fell below the healthy
/// run's noise (120 ms) in CI.
const COST: u32 = 8;

fn burst(fault: Option<&str>) -> serde_json::Value {
    let env: Vec<(&str, &str)> = fault.map(|f| ("STANDIN_FAULT", f)).into_iter().collect();
    let s = Standin::start(&env);
    let seeded = load_support::seed(&s, USERS, Seeded::solo_layout(USERS), COST);
    let dir = tempfile::tempdir().unwrap();
    seeded.write_manifest(dir.path(), None, 0);
    let m = dir.path().to_str().unwrap();
    let url = s.url();
    let (code, json, stderr) = exectl_load(
        &["login-burst", "--url", &url, "--manifest", m, "--json"],
        Duration::from_secs(180),
    );
    eprintln!("{stderr}");
    let j = json.unwrap_or_else(|| panic!("no summary; stderr:\n{stderr}"));
    assert_eq!(code, 0, "every login succeeds either way: {j:#}");
    let b = &j["login_burst"];
    assert_eq!(b["logins_ok"], USERS, "{j:#}");
    assert_eq!(b["login_status"]["200"], USERS);
    assert_eq!(j["login_ms"]["count"], USERS);
    assert_eq!(j["connected"], 0, "login-burst opens no socket");
    assert!(b["probe_samples"].as_u64().unwrap() >= 2, "{b:#}");
    j
}

#[test]
fn blocking_bcrypt_stalls_the_probe() {
    let healthy = burst(None);
    let blocked = burst(Some("blocking-bcrypt"));
    let p95 = |j: &serde_json::Value| j["login_burst"]["probe_ms"]["p95"].as_f64().unwrap();
    let max = |j: &serde_json::Value| j["login_burst"]["probe_ms"]["max"].as_f64().unwrap();
    eprintln!(
        "probe p95 / max: healthy {:.1} / {:.1} ms, blocking-bcrypt {:.1} / {:.1} ms",
        p95(&healthy),
        max(&healthy),
        p95(&blocked),
        max(&blocked)
    );
    assert!(
        p95(&blocked) > 3.0 * p95(&healthy).max(1.0),
        "probe p95 with the fault ({}) should be far above without it ({})",
        p95(&blocked),
        p95(&healthy)
    );
    assert!(max(&blocked) > max(&healthy));
}
