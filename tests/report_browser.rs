//! A real bench's report.html in a real browser: a short bench on ha ×2 (stand-in app), then Debian's
//! Chromium, headless, loads the file from disk (no network: the report is self-contained) and its DOM is
//! checked — every chart drew an SVG with a line of the series' own point count for every series — and a
//! screenshot is taken. `exectl report` rebuilds the same bytes from results.json and the timeline.

use crate::common;

use common::*;
use std::path::Path;

const CHROMIUM: &str = "/usr/bin/chromium";

fn chromium(args: &[&str]) -> std::process::Output {
    assert!(
        Path::new(CHROMIUM).exists(),
        "{CHROMIUM} is missing: bash scripts/packages.sh installs Debian's chromium"
    );
    std::process::Command::new(CHROMIUM)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
        ])
        .args(args)
        .output()
        .unwrap()
}

/// (data-series names, data-points counts, the figure's inner HTML) of every chart figure.
fn figures(dom: &str) -> Vec<(String, Vec<String>, Vec<usize>, String)> {
    let mut out = vec![];
    let mut rest = dom;
    while let Some(at) = rest.find("<figure class=\"chart\"") {
        let fig = &rest[at..];
        let end = fig.find("</figure>").expect("figure closed");
        let fig = &fig[..end];
        let attr = |name: &str| {
            let k = format!("{name}=\"");
            let s = &fig[fig.find(&k).unwrap() + k.len()..];
            s[..s.find('"').unwrap()].to_string()
        };
        let names: Vec<String> = attr("data-series")
            .split('|')
            .filter(|s| !s.is_empty())
            .map(String::from)
            .collect();
        let points: Vec<usize> = attr("data-points")
            .split('|')
            .filter(|s| !s.is_empty())
            .map(|n| n.parse().unwrap())
            .collect();
        out.push((attr("id"), names, points, fig.to_string()));
        rest = &rest[at + end..];
    }
    out
}

/// The number of points of every <polyline> in an SVG fragment.
fn polylines(svg: &str) -> Vec<usize> {
    svg.split("<polyline")
        .skip(1)
        .filter_map(|p| {
            let s = &p[p.find("points=\"")? + 8..];
            Some(s[..s.find('"')?].split_whitespace().count())
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the Docker engine, the fixture images and chromium; bash scripts/test.sh runs it"]
async fn a_real_benchs_report_draws_every_series_in_chromium() {
    let s = Stack::new("report").await;
    let port = Stack::port();
    let mut deploy = vec![
        "ha",
        "--stack",
        &s.name,
        "--instances",
        "2",
        "--lb-port",
        &port,
        "--cpus",
        "1",
        "--memory",
        "256m",
    ];
    deploy.extend(HA_LIMITS);
    // Rooms are cleaned a second after their last socket, so each leak check settles quickly.
    deploy.extend(["--set", "STANDIN_ROOM_CLEANUP_MS=1000"]);
    assert_eq!(s.x.deploy_json(&deploy)["ok"], true);
    s.x.ok(&[
        "prepare",
        "--stack",
        &s.name,
        "--accounts",
        "60",
        "--bcrypt-cost",
        "4",
    ]);
    let out = tempfile::tempdir().unwrap();
    let dir = out.path().join("bench");
    let o = s.x.run(&[
        "bench",
        "--stack",
        &s.name,
        "--levels",
        "20,60",
        "--hold",
        "4s",
        "--ramp",
        "1s",
        "--settle",
        "20s",
        "--run-id",
        "report-test",
        "--out",
        dir.to_str().unwrap(),
        "--json",
    ]);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "bench failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let results: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(results["verdict"]["capacity"], 60, "{results}");

    let report = dir.join("report.html");
    let url = format!("file://{}", report.display());
    let dump = chromium(&["--dump-dom", &url]);
    assert!(
        dump.status.success(),
        "{}",
        String::from_utf8_lossy(&dump.stderr)
    );
    let dom = String::from_utf8_lossy(&dump.stdout).into_owned();
    assert!(dom.contains("Capacity: at least 60 users"), "{dom}");
    let figs = figures(&dom);
    let ids: Vec<&str> = figs.iter().map(|f| f.0.as_str()).collect();
    assert_eq!(
        ids,
        [
            "users",
            "cpu",
            "rss",
            "files",
            "nginx",
            "load",
            "generator-cpu",
            "generator-rss",
            "latency",
            "failures"
        ]
    );
    for (id, names, points, html) in &figs {
        if *id == "failures" && names.is_empty() {
            // No failure of any kind in a passing bench: the chart says so instead of drawing nothing.
            assert!(html.contains("not sampled in this run"));
            continue;
        }
        assert!(!names.is_empty(), "chart {id} has no series");
        assert!(html.contains("<svg"), "chart {id} drew no SVG");
        let lines = polylines(html);
        for (name, n) in names.iter().zip(points) {
            assert!(
                html.contains(&format!(">{name}<")) || html.contains(&format!(">\n{name}\n<")),
                "{id}: no legend for {name}"
            );
            if *n >= 2 && !name.ends_with(" limit") {
                assert!(
                    lines.contains(n),
                    "{id}: no line of {n} points for {name} (lines: {lines:?})"
                );
            }
        }
    }
    let users = &figs[0];
    assert!(
        users.1.contains(&"app-1 connections".to_string())
            && users.1.contains(&"all instances".to_string())
    );

    let shot = out.path().join("report.png");
    let png = chromium(&[
        "--window-size=1000,1400",
        &format!("--screenshot={}", shot.display()),
        &url,
    ]);
    assert!(
        png.status.success(),
        "{}",
        String::from_utf8_lossy(&png.stderr)
    );
    assert!(
        std::fs::metadata(&shot).unwrap().len() > 20_000,
        "an almost empty screenshot"
    );

    // `exectl report` rebuilds the same file from results.json and the timeline alone.
    let before = std::fs::read(&report).unwrap();
    std::fs::remove_file(&report).unwrap();
    let rebuilt =
        s.x.ok(&["report", "report-test", "--from", dir.to_str().unwrap()]);
    assert_eq!(rebuilt.trim(), report.display().to_string());
    assert_eq!(
        std::fs::read(&report).unwrap(),
        before,
        "the rebuilt report differs"
    );
    let elsewhere = out.path().join("copy.html");
    s.x.ok(&[
        "report",
        "report-test",
        "--from",
        dir.to_str().unwrap(),
        "--out",
        elsewhere.to_str().unwrap(),
    ]);
    assert_eq!(std::fs::read(&elsewhere).unwrap(), before);
    // `runs list` shows benches beside deploys; `runs diff` of two benches shows the knob and the levels.
    let benches = s.x.state.path().join("benches");
    let mut r: serde_json::Value = serde_json::from_str(&read(&dir.join("results.json"))).unwrap();
    for (id, hold) in [("bench-a", 4.0), ("bench-b", 9.0)] {
        r["run_id"] = id.into();
        r["hold_s"] = hold.into();
        std::fs::create_dir_all(benches.join(id)).unwrap();
        std::fs::write(benches.join(id).join("results.json"), r.to_string()).unwrap();
    }
    let list = s.x.ok(&["runs", "list"]);
    assert!(list.lines().any(|l| l.starts_with("deploy ")), "{list}");
    assert!(
        list.contains("bench  bench-a") && list.contains("capacity at least 60"),
        "{list}"
    );
    let diff = s.x.ok(&["runs", "diff", "bench-a", "bench-b"]);
    assert!(diff.contains("hold_s") && diff.contains("4 -> 9"), "{diff}");
    assert!(diff.contains("60 users: pass -> pass"), "{diff}");
    let deploy_id = list
        .lines()
        .find(|l| l.starts_with("deploy "))
        .unwrap()
        .split_whitespace()
        .nth(1)
        .unwrap();
    let mixed = s.x.run(&["runs", "diff", "bench-a", deploy_id]);
    assert_eq!(
        mixed.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&mixed.stderr)
    );

    let missing = s.x.run(&["report", "no-such-run"]);
    assert_eq!(
        missing.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&missing.stderr)
    );
}
