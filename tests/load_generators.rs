//! `exectl load --generators`: one run over this host and two generator hosts (network namespaces with
//! sshd only, each with a private ~/.cache/exectl: tests/sut/sut.sh with SUT_ENGINE=0 and SUT_PRIVATE),
//! against the real stand-in here. The binary goes to each host once (by hash), each host's slice dials
//! from its own address (the stand-in sees its sockets come from there), the merged held count is the
//! sum of the slices', each slice's start skew and its host's clock are reported; and a host that dies
//! mid-run is reported as failed, its users counted as failures, the run still ending on time.

use crate::common;
use crate::load_support;

use std::collections::BTreeMap;
use std::process::Command;
use std::time::{Duration, Instant};

use common::sut::Sut;
use load_support::{exectl_load, Seeded, Standin};

/// Where the generator's binary goes (root's home on these machines), private to each host.
const CACHE: &str = "/root/.cache/exectl";

fn generator(name: &str, index: u8) -> Sut {
    Sut::up_with_env(
        name,
        index,
        &[],
        &[("SUT_ENGINE", "0"), ("SUT_PRIVATE", CACHE)],
    )
}

#[test]
#[ignore = "needs root, sshd and network namespaces; bash scripts/test.sh runs it"]
fn this_host_and_two_generator_hosts_are_one_run_and_a_host_dying_fails_its_slice_only() {
    let (a, b) = (generator("gen-a", 45), generator("gen-b", 46));
    // One key and one known_hosts for both (the target flags name one of each).
    std::fs::copy(a.key.with_extension("pub"), b.dir.join("authorized_keys")).unwrap();
    let known = tempfile::NamedTempFile::new().unwrap();
    let hosts = [&a, &b]
        .iter()
        .map(|s| std::fs::read_to_string(&s.known_hosts).unwrap())
        .collect::<String>();
    std::fs::write(known.path(), hosts).unwrap();

    let s = Standin::start(&[]);
    let users = 90;
    let seeded = load_support::seed(&s, users, Seeded::solo_layout(users), 4);
    let m = tempfile::tempdir().unwrap();
    // Minted tokens: no logins, so every connection the stand-in sees from a slice is one of its
    // sockets (a login's keep-alive connections, one or more as a loaded machine overlaps them, would
    // blur the count).
    seeded.write_manifest(m.path(), Some(&s.secret), 0);
    let url = s.url();
    let manifest = m.path().to_str().unwrap().to_string();
    let gens = format!("local,{},{}", a.target_url(), b.target_url());
    let key = a.key.to_str().unwrap().to_string();
    let known_hosts = known.path().to_str().unwrap().to_string();
    let args = |hold: &'static str| -> Vec<String> {
        [
            "idle",
            "--url",
            &url,
            "--manifest",
            &manifest,
            "--tokens",
            "--users",
            "90",
            "--ramp",
            "2s",
            "--hold",
            hold,
            "--generators",
            &gens,
            "--identity",
            &key,
            "--known-hosts",
            &known_hosts,
        ]
        .iter()
        .map(|s| s.to_string())
        .collect()
    };

    // During the hold, the stand-in's sockets come from three addresses, 30 from each.
    let port = s.port;
    let watch = std::thread::spawn(move || {
        let deadline = Instant::now() + Duration::from_secs(40);
        let mut best = BTreeMap::new();
        while Instant::now() < deadline {
            let p = load_support::clients_of(port);
            if p.values().sum::<u64>() > best.values().sum::<u64>() {
                best = p;
            }
            if best.len() == 3 && best.values().all(|n| *n >= 30) {
                break;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        best
    });
    let run = args("6s");
    let run: Vec<&str> = run.iter().map(String::as_str).collect();
    let (code, summary, err) = exectl_load(&run, Duration::from_secs(120));
    let peers = watch.join().unwrap();
    eprintln!("{err}");
    let summary = summary.expect("a summary");
    assert_eq!(code, 0, "{summary:#}\n{err}");
    for from in [&a.addr, "127.0.0.1"] {
        let n = peers.get(from).copied().unwrap_or(0);
        assert_eq!(
            n, 30,
            "each slice dials from its own host's address: {peers:?}"
        );
    }
    assert_eq!(peers.get(&b.addr).copied(), Some(30), "{peers:?}");
    assert_eq!(peers.len(), 3, "{peers:?}");
    let slices = summary["generator"]["slices"].as_array().unwrap();
    assert_eq!(slices.len(), 3, "{summary:#}");
    let held: u64 = slices.iter().map(|u| u["held"].as_u64().unwrap()).sum();
    assert_eq!(summary["held_full_duration"], 90, "{summary:#}");
    assert_eq!(held, 90, "the merged held count is the slices' sum");
    let on: Vec<Option<&str>> = slices.iter().map(|u| u["generator"].as_str()).collect();
    assert_eq!(
        on,
        vec![
            None,
            Some(a.target_url().as_str()),
            Some(b.target_url().as_str())
        ]
    );
    for u in slices {
        let skew = u["start_skew_ms"].as_f64().expect("each slice's skew");
        assert!((0.0..1000.0).contains(&skew), "{u:#}");
        assert_eq!(u["users"], 30, "{u:#}");
    }
    for u in &slices[1..] {
        // The same kernel's clock, read over a round trip.
        let c = u["clock_offset_ms"].as_f64().expect("each host's clock");
        assert!(c.abs() < 100.0, "{u:#}");
    }
    assert_eq!(
        err.matches("this exectl sent").count(),
        2,
        "the binary goes to each host: {err}"
    );
    for g in [&a, &b] {
        let there = g.ssh(&a.key, g.ssh_port, "ls .cache/exectl");
        assert!(
            String::from_utf8_lossy(&there.stdout).contains("exectl-"),
            "{}: {there:?}",
            g.addr
        );
    }

    // Again, and host b dies a few seconds into the hold: every process of its namespace killed.
    let mut run = args("10s");
    run.push("--json".into()); // the text summary on stderr
    let run: Vec<&str> = run.iter().map(String::as_str).collect();
    let ns = format!("exectl-{}", b.name());
    let killer = std::thread::spawn(move || {
        // Every socket open (the hold has begun), then a second of the hold.
        let deadline = Instant::now() + Duration::from_secs(60);
        while load_support::server_connections(port) < 90 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(100));
        }
        std::thread::sleep(Duration::from_secs(1));
        let pids = Command::new("ip")
            .args(["netns", "pids", &ns])
            .output()
            .unwrap();
        let pids = String::from_utf8_lossy(&pids.stdout).to_string();
        for pid in pids.split_whitespace() {
            let _ = Command::new("kill").args(["-9", pid]).status();
        }
        pids.split_whitespace().count()
    });
    let t = Instant::now();
    let (code, summary, err) = exectl_load(&run, Duration::from_secs(120));
    let took = t.elapsed();
    assert!(killer.join().unwrap() > 0, "host b had processes to kill");
    eprintln!("{err}");
    let summary = summary.expect("a summary");
    assert_eq!(code, 1, "{summary:#}");
    assert_eq!(
        err.matches("this exectl already there").count(),
        2,
        "sent once: {err}"
    );
    let slices = summary["generator"]["slices"].as_array().unwrap();
    let dead = &slices[2];
    assert_eq!(dead["generator"], b.target_url().as_str(), "{dead:#}");
    assert!(dead["error"].as_str().is_some(), "{dead:#}");
    assert_eq!(summary["failures"]["slice_failed"], 30, "{summary:#}");
    assert_eq!(summary["held_full_duration"], 60, "{summary:#}");
    for u in &slices[..2] {
        assert_eq!(u["held"], 30, "{u:#}");
    }
    // One account of what the dead slice did: its 30 connected and were open when it was last heard
    // from, a few seconds into the hold; the run connected all 90, and the common hold of every user
    // lasted until the slice died (not its full 10 s, nor none); the run's duration covers it.
    let seen = &dead["last_seen"];
    assert_eq!(
        (seen["connected"].as_u64(), seen["open"].as_u64()),
        (Some(30), Some(30)),
        "{dead:#}"
    );
    assert_eq!(summary["connected"], 90, "{summary:#}");
    let p = &summary["plateau"];
    let (start, end) = (p["start_s"].as_f64().unwrap(), p["end_s"].as_f64().unwrap());
    let died = seen["at_s"].as_f64().unwrap();
    assert!(end - start > 0.3 && end - start < 9.0, "{p:#}");
    assert!(
        (died - end).abs() < 0.5,
        "ended when the slice was last heard: {p:#} {dead:#}"
    );
    assert!(
        summary["duration_s"].as_f64().unwrap() >= end,
        "{summary:#}"
    );
    assert!(
        err.contains(&format!(
            "FAILED {died:.1} s after the first dial (last heard: 30 connected, 30 open)"
        )) && err.contains("the common hold lasted")
            && !err.contains("no socket connected"),
        "{err}"
    );
    // 3 s lead + 2 s ramp + 10 s hold: on time, not held up by the dead host.
    assert!(took < Duration::from_secs(25), "took {took:?}");
}
