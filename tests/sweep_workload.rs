//! The workload as a sweep's variable: `--vary users_per_project=2,4` on one collab level keeps the
//! deployment (point 2 recreates nothing), seeds each room size as a manifest of its own (that many
//! users to a project), benches it, and reports each room size's delivery percentiles and the frames
//! the instance relayed a second. Real engine, stand-in app.

mod common;

use common::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the Docker engine, the docker CLI and the fixture images; bash scripts/test.sh runs it"]
async fn room_size_is_swept_with_a_manifest_each_and_its_deliveries_reported() {
    let st = Stack::new("swroom").await;
    let port = Stack::port();
    let out = tempfile::tempdir().unwrap();
    let dir = out.path().join("sweep");
    let mut args = vec!["sweep"];
    let spec = single_sqlite(&st.name, &port);
    args.extend(spec.iter());
    args.extend([
        "--images",
        FIXTURES,
        "--health-interval",
        "1s",
        "--set",
        "STANDIN_ROOM_CLEANUP_MS=500",
        "--vary",
        "users_per_project=2,4",
        "--scenario",
        "collab",
        "--levels",
        "8",
        "--hold",
        "3s",
        "--settle",
        "20s",
        "--bcrypt-cost",
        "4",
        "--out",
        dir.to_str().unwrap(),
        "--json",
    ]);
    args.extend(COUNTS_ONLY);
    let o = st.x.run(&args);
    let (code, err) = failed(&o);
    assert_eq!(code, Some(0), "{err}");
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("results.json")).unwrap()).unwrap();
    let points = r["points"].as_array().unwrap();
    assert_eq!(points.len(), 2, "{r:#}");
    assert_eq!(r["variables"][0], "users_per_project");
    assert!(
        points[1]["recreated"].as_array().unwrap().is_empty(),
        "a workload variable leaves the deployment alone: {r:#}"
    );
    for p in points {
        let l = &p["levels"][0];
        assert_eq!(l["passed"], true, "{r:#}");
        assert!(l["delivery_ms"]["p95"].as_f64().unwrap() > 0.0, "{l:#}");
        assert!(
            l["relayed_per_s_per_instance"].as_f64().unwrap() > 0.0,
            "{l:#}"
        );
    }

    // Each room size has its manifest: 8 accounts, 4 projects of 2 and 2 projects of 4.
    let manifests = st.x.stack_dir(&st.name).join("manifests");
    for (k, projects) in [(2, 4), (4, 2)] {
        let slug = std::fs::read_dir(&manifests)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .find(|n| n.contains(&format!("r{k}.")))
            .unwrap_or_else(|| panic!("no manifest of room size {k} in {}", manifests.display()));
        let accounts =
            std::fs::read_to_string(manifests.join(&slug).join("accounts.json")).unwrap();
        let a: serde_json::Value = serde_json::from_str(&accounts).unwrap();
        let a = a.as_array().unwrap();
        assert_eq!(a.len(), 8, "{slug}");
        let mut rooms: Vec<&str> = a
            .iter()
            .map(|x| x["projectUuid"].as_str().unwrap())
            .collect();
        rooms.sort_unstable();
        rooms.dedup();
        assert_eq!(rooms.len(), projects, "{slug}: {rooms:?}");
    }

    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert!(
        html.contains("delivery p50 / p95 / p99"),
        "the report's levels table"
    );
    assert!(html.contains("relayed frames/s per instance"));
}
