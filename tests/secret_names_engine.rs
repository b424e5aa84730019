//! Secrets the app reads under two names (contract §8): it signs tokens with `API_JWT_SECRET || JWT_SECRET`
//! and verifies its sharing routes with `JWT_SECRET || APP_SECRET`. With `STANDIN_SPLIT_SECRETS=1` the
//! stand-in takes those names literally, so collaborators are added through the sharing route only when
//! the stack sets JWT_SECRET to API_JWT_SECRET's value (without it, the route answers 401).

use crate::common;

use common::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the Docker engine and the fixture images; bash scripts/test.sh runs it"]
async fn collaborators_are_added_through_routes_that_verify_with_jwt_secret() {
    let s = Stack::new("secret-names").await;
    let port = Stack::port();
    let mut deploy = single_sqlite(&s.name, &port);
    deploy.extend(["--set", "STANDIN_SPLIT_SECRETS=1"]);
    let out = s.x.deploy_json(&deploy);
    assert_eq!(out["ok"], true, "{out}");

    let o = s.x.run(&[
        "prepare",
        "--via",
        "api",
        "--stack",
        &s.name,
        "--accounts",
        "6",
        "--users-per-project",
        "3",
        "--json",
    ]);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "prepare --via api failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let report: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(report["added"]["projects"], 2, "{report}");
    // Two collaborators per project, each added by the owner's token on the sharing route.
    assert_eq!(report["added"]["collaborators"], 4, "{report}");
}
