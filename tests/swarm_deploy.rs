//! ha over a real 3-node swarm (tests/swarm/rig.sh: n1 manager, n2 and n3 workers labelled
//! exectl.role=app): placement, limits read back on each node, load through nginx's host port with each
//! instance's own count, a bench sampled on every node (its report with a node column), doctor on every
//! node and the swarm's own checks, convergence (no-op, more instances, another nginx), a node's engine down and
//! back, and a teardown that leaves nothing labelled on any node and a foreign service alone.

use crate::common;

use common::swarm::Swarm;
use common::{Exectl, HA_LIMITS};
use serde_json::Value;
use std::time::{Duration, Instant};

/// What the nodes start with: every image but nginx's, which `--load-images` sends to its node.
const IMAGES: [&str; 3] = [
    "exectl-fixture/standin:latest",
    "exectl-fixture/postgres:15",
    "exectl-fixture/redis:7",
];
const NGINX_IMAGE: &str = "exectl-fixture/nginx:1";
const STACK: &str = "sw";
const LB_PORT: &str = "18471";

fn deploy(x: &Exectl, sw: &Swarm, extra: &[&str]) -> Value {
    let target = sw.target_args();
    // Rooms cleaned 2 s after their last socket (the app's 30 s would race the leak check's settle).
    let mut args: Vec<&str> = vec![
        "ha",
        "--stack",
        STACK,
        "--lb-port",
        LB_PORT,
        "--set",
        "STANDIN_ROOM_CLEANUP_MS=2000",
        // A swarm task is ready once Docker calls it healthy (its first check one interval after it
        // starts), and `status --expect-healthy` follows a convergence here.
        "--health-interval",
        "1s",
    ];
    args.extend(HA_LIMITS);
    args.extend(target.iter().map(String::as_str));
    args.extend(extra);
    x.deploy_json(&args)
}

fn with_target<'a>(sw: &'a [String], args: &[&'a str]) -> Vec<&'a str> {
    let mut v = args.to_vec();
    v.extend(sw.iter().map(String::as_str));
    v
}

/// What each action of the deploy did, as "create app-5", sorted; keeps left out.
fn changes(d: &Value) -> Vec<String> {
    let mut c: Vec<String> = d["plan"]["actions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["action"] != "keep")
        .map(|a| {
            format!(
                "{} {}",
                a["action"].as_str().unwrap(),
                a["service"].as_str().unwrap()
            )
        })
        .collect();
    c.sort();
    c
}

/// The stack's services running on node K, by their compose name.
fn on_node(sw: &Swarm, k: usize) -> Vec<String> {
    let mut v = sw.lines(
        k,
        &[
            "ps",
            "--filter",
            &format!("label=exectl.stack={STACK}"),
            "--format",
            "{{.Label \"exectl.service\"}}",
        ],
    );
    v.sort();
    v
}

/// `rig.sh COMMAND NAME 3`: node n3's engine stopped or started.
fn n3_engine(sw: &Swarm, command: &str) {
    let out = std::process::Command::new("bash")
        .args([common::swarm::SCRIPT, command, &sw.name, "3"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn status(x: &Exectl, target: &[String], extra: &[&str]) -> (Option<i32>, Value, String) {
    let mut args = with_target(target, &["status", "--stack", STACK, "--json"]);
    args.extend(extra);
    let out = x.run(&args);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let v = serde_json::from_str(&stdout).unwrap_or(Value::Null);
    (out.status.code(), v, format!("{stdout}\n{stderr}"))
}

#[test]
#[ignore = "needs root, sshd, dockerd and the fixture images (tests/swarm/rig.sh); bash scripts/test.sh runs it"]
fn ha_over_a_three_node_swarm() {
    let sw = Swarm::up("t-swarm", 47, &IMAGES);
    let x = Exectl::new();
    let target = sw.target_args();
    let (n1, n2, n3) = (
        sw.nodes[0].hostname.as_str(),
        sw.nodes[1].hostname.as_str(),
        sw.nodes[2].hostname.as_str(),
    );

    // Bad placement is refused before anything is made.
    let out = x.run(&with_target(
        &target,
        &["deploy", "ha", "--stack", STACK, "--place", "app=nowhere"],
    ));
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("the swarm has no node nowhere"));
    assert!(sw.lines(1, &["service", "ls", "-q"]).is_empty());

    // A worker named as the manager: bad input naming --target (it was exit 1).
    let mut worker = target.clone();
    worker[1] = format!("swarm+ssh://root@{}:{}", sw.nodes[1].addr, sw.ssh_port);
    let (code, _, out) = status(&x, &worker, &[]);
    assert_eq!(code, Some(2), "{out}");
    assert!(
        out.contains(&format!("invalid --target \"{}\"", worker[1]))
            && out.contains("not a swarm manager"),
        "{out}"
    );

    // The manager lacks nginx's image: refused, naming the node and the image, nothing made…
    let mut args = with_target(
        &target,
        &[
            "deploy",
            "ha",
            "--stack",
            STACK,
            "--lb-port",
            LB_PORT,
            "--images",
            common::FIXTURES,
        ],
    );
    args.extend(HA_LIMITS);
    let out = x.run(&args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(NGINX_IMAGE) && err.contains(n1) && err.contains("--load-images"),
        "{err}"
    );
    assert!(sw.lines(1, &["service", "ls", "-q"]).is_empty());
    // …and sent to that node only with --load-images.
    // ha ×4: two instances on each worker, the rest on the manager, limits read back on each node.
    let d = deploy(
        &x,
        &sw,
        &[
            "--instances",
            "4",
            "--nginx",
            "tuned-least-conn",
            "--load-images",
        ],
    );
    assert_eq!(d["ok"], true, "{d:#}");
    assert_eq!(
        d["loaded"],
        serde_json::json!([format!("{NGINX_IMAGE} → {n1}")]),
        "{d:#}"
    );
    for k in [2, 3] {
        assert!(
            sw.lines(k, &["image", "ls", "-q", NGINX_IMAGE]).is_empty(),
            "nginx's image on n{k}"
        );
    }
    assert_eq!(d["changed"], 7, "{d:#}");
    assert_eq!(on_node(&sw, 1), ["nginx", "postgres", "redis"], "on {n1}");
    assert_eq!(on_node(&sw, 2), ["app-1", "app-3"], "on {n2}");
    assert_eq!(on_node(&sw, 3), ["app-2", "app-4"], "on {n3}");
    let limits = d["limits"].as_array().unwrap();
    for app in ["app-1", "app-2", "app-3", "app-4", "nginx"] {
        let l = limits
            .iter()
            .find(|l| l["service"] == app)
            .unwrap_or_else(|| panic!("no limits read back for {app}: {d:#}"));
        assert_eq!(l["nofile_soft"], 20000, "{app}: {l}");
        assert_eq!(l["mismatches"], Value::Array(vec![]), "{app}: {l}");
    }
    // No VIP, no ingress: dnsrr and the LB's port in host mode.
    let mode = sw.lines(
        1,
        &[
            "service",
            "inspect",
            "--format",
            "{{.Spec.EndpointSpec.Mode}} {{range .Spec.EndpointSpec.Ports}}{{.PublishMode}}{{end}}",
            &format!("exectl-{STACK}-nginx"),
        ],
    );
    assert_eq!(mode, ["dnsrr host"]);
    let bundle = x.state.path().join(format!(
        "swarm-ssh-root@{}-{}/{STACK}/bundle/stack.yaml",
        sw.nodes[0].addr, sw.ssh_port
    ));
    let stack_file = std::fs::read_to_string(&bundle).unwrap();
    // Its environment holds the stack's secrets: private, here and on the manager.
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&bundle).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "{}", bundle.display());
    // The manager's copy: the rig's hosts share this machine's files.
    let remote = format!("/opt/exectl/{STACK}/stack.yaml");
    let mode = std::fs::metadata(&remote).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "{remote}");
    assert!(stack_file.contains("endpoint_mode: dnsrr"), "{stack_file}");

    // A no-op redeploy changes nothing.
    let again = deploy(
        &x,
        &sw,
        &["--instances", "4", "--nginx", "tuned-least-conn"],
    );
    assert_eq!(
        (again["ok"].clone(), again["changed"].clone()),
        (Value::Bool(true), Value::from(0)),
        "{again:#}"
    );

    // 1000 idle users through nginx's host port on the manager; each instance counts its own.
    x.ok(&with_target(
        &target,
        &[
            "prepare",
            "--stack",
            STACK,
            "--accounts",
            "1000",
            "--mint-tokens",
            "--bcrypt-cost",
            "4",
            "--json",
        ],
    ));
    let load = x
        .command(&with_target(
            &target,
            &[
                "load", "idle", "--stack", STACK, "--users", "1000", "--tokens", "--ramp", "5s",
                "--hold", "20s", "--json", "--quiet",
            ],
        ))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    let peak = loop {
        let (_, s, text) = status(&x, &target, &[]);
        if s["total_connections"] == 1000 {
            break s;
        }
        assert!(
            Instant::now() < deadline,
            "never 1000 connections at once: {text}"
        );
        std::thread::sleep(Duration::from_secs(1));
    };
    let instances = peak["instances"].as_array().unwrap();
    assert_eq!(instances.len(), 4, "{peak:#}");
    for i in instances {
        assert!(i["totalConnections"].as_u64().unwrap() > 0, "{peak:#}");
        assert!(i["node"] == n2 || i["node"] == n3, "{i}");
    }
    let out = load.wait_with_output().unwrap();
    let j: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    assert_eq!(j["plateau"]["min_open"], 1000, "{j:#}");
    let (code, idle, text) = status(&x, &target, &["--expect-idle", "--settle", "30s"]);
    assert_eq!(
        (code, idle["total_connections"].clone()),
        (Some(0), Value::from(0)),
        "{text}"
    );

    // One bench on the swarm: two levels through nginx's host port, sampled on every node on one clock,
    // each container with its node, each node's own CPU count, and a report with a node column.
    let bench = x.run(&with_target(
        &target,
        &[
            "bench", "--stack", STACK, "--run-id", "sw-bench", "--tokens", "--levels", "200,400",
            "--hold", "5s", "--ramp", "2s", "--settle", "20s", "--json",
        ],
    ));
    let stderr = String::from_utf8_lossy(&bench.stderr);
    let r: Value =
        serde_json::from_slice(&bench.stdout).unwrap_or_else(|e| panic!("{e}: {stderr}"));
    assert_eq!(bench.status.code(), Some(0), "{r:#}\n{stderr}");
    assert_eq!(r["verdict"]["capacity"], 400, "{r:#}");
    assert!(
        r["target"].as_str().unwrap().starts_with("swarm+ssh://"),
        "{r}"
    );
    let dir = x.state.path().join("benches/sw-bench");
    let timeline: Vec<Value> = std::fs::read_to_string(dir.join("timeline.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // At the 400 level's hold the instances' own counts, read on their nodes, sum to 400: the samples
    // read wholly inside it (one begun just before its end reads the first users leaving: seen with a
    // 183 ms read on a busy host).
    let hold = r["levels"][1]["span"].clone();
    let in_hold: Vec<&Value> = timeline
        .iter()
        .filter(|s| s["t_ms"].as_u64() > hold["hold_ms"].as_u64())
        .filter(|s| {
            let read = s["sample_ms"].as_f64().unwrap_or(0.0).ceil() as u64;
            s["t_ms"].as_u64().map(|t| t + read) < hold["hold_end_ms"].as_u64()
        })
        .collect();
    assert!(!in_hold.is_empty(), "{hold}");
    for s in &in_hold {
        let sum: u64 = s["instances"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["connections"].as_u64().unwrap_or(0))
            .sum();
        assert_eq!(sum, 400, "{s}");
        for c in s["containers"].as_array().unwrap() {
            let on = if c["service"].as_str().unwrap().starts_with("app-") {
                [n2, n3].contains(&c["node"].as_str().unwrap())
            } else {
                c["node"] == n1
            };
            assert!(on && c["rss_bytes"].as_u64().is_some(), "{c}");
        }
        let nodes: Vec<&str> = s["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|n| n["host_cpu"]["busy_pct"].is_number())
            .map(|n| n["node"].as_str().unwrap())
            .collect();
        assert_eq!(nodes, [n1, n2, n3], "{s}");
        assert!(s.get("host_cpu").is_none(), "no one host on a swarm: {s}");
    }
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    let table = &html[html.find("<table id=\"services\"").unwrap()..];
    let table = &table[..table.find("</table>").unwrap()];
    assert!(table.contains("<th>node</th>"), "{table}");
    assert!(
        table.contains(&format!("<tr><td>app-1</td><td>{n2}</td>"))
            && table.contains(&format!("<tr><td>app-2</td><td>{n3}</td>"))
            && table.contains(&format!("<tr><td>nginx</td><td>{n1}</td>")),
        "{table}"
    );
    assert!(
        html.contains(&format!("node {n2}: CPUs busy")),
        "no node chart line"
    );

    // Six instances: app-5 and app-6 added (one on each worker), nginx rewritten for them, nothing else.
    let six = deploy(
        &x,
        &sw,
        &["--instances", "6", "--nginx", "tuned-least-conn"],
    );
    assert_eq!(
        changes(&six),
        ["create app-5", "create app-6", "recreate nginx"],
        "{six:#}"
    );
    assert_eq!(on_node(&sw, 2), ["app-1", "app-3", "app-5"]);
    assert_eq!(on_node(&sw, 3), ["app-2", "app-4", "app-6"]);
    // Another nginx variant recreates nginx only.
    let ip = deploy(&x, &sw, &["--instances", "6", "--nginx", "tuned-ip-hash"]);
    assert_eq!(changes(&ip), ["recreate nginx"], "{ip:#}");

    // n3's engine down: status fails and names the node and its instances.
    n3_engine(&sw, "engine-stop");
    let (code, down, text) = status(&x, &target, &[]);
    assert_ne!(code, Some(0), "{text}");
    for app in ["app-2", "app-4", "app-6"] {
        let i = down["instances"]
            .as_array()
            .unwrap()
            .iter()
            .find(|i| i["name"] == app)
            .unwrap();
        let e = i["error"].as_str().unwrap_or_default();
        assert!(e.contains(n3), "{app} on {n3}: {i}");
    }
    // Back: the next deploy converges, and every instance answers again.
    n3_engine(&sw, "engine-start");
    let back = deploy(&x, &sw, &["--instances", "6", "--nginx", "tuned-ip-hash"]);
    assert_eq!(back["ok"], true, "{back:#}");
    let (code, after, text) = status(&x, &target, &["--expect-healthy"]);
    assert_eq!(code, Some(0), "{text}");
    assert_eq!(after["instances"].as_array().unwrap().len(), 6);

    // An app setting: every instance's service is recreated, with new task addresses, and nginx after
    // them, since it reads its upstreams' addresses when it starts (kept, it timed out and answered 502).
    let set = deploy(
        &x,
        &sw,
        &[
            "--instances",
            "6",
            "--nginx",
            "tuned-ip-hash",
            "--set",
            "DB_POOL_MAX=50",
        ],
    );
    let mut apps: Vec<String> = (1..=6).map(|i| format!("recreate app-{i}")).collect();
    apps.push("recreate nginx".into());
    apps.sort();
    assert_eq!(changes(&set), apps, "{set:#}");
    let through = x.run(&with_target(
        &target,
        &[
            "load", "idle", "--stack", STACK, "--users", "60", "--tokens", "--ramp", "2s",
            "--hold", "3s", "--json", "--quiet",
        ],
    ));
    let j: Value = serde_json::from_slice(&through.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&through.stderr)));
    assert_eq!(
        j["plateau"]["min_open"], 60,
        "through nginx to the new tasks: {j:#}"
    );

    // Teardown --purge: nothing labelled left on any node; a foreign service untouched.
    let foreign = sw.docker(
        1,
        &[
            "service",
            "create",
            "--detach",
            "--name",
            "foreign",
            "--no-resolve-image",
            "--constraint",
            &format!("node.hostname=={n1}"),
            "exectl-fixture/redis:7",
        ],
    );
    assert!(
        foreign.status.success(),
        "{}",
        String::from_utf8_lossy(&foreign.stderr)
    );
    // doctor on the swarm: each node's own checks (the instances placed there), then the swarm's: the
    // clocks, the foreign service's VIP (the stack has none), the overlays against each node's link.
    let out = x.run(&with_target(
        &target,
        &["doctor", "--stack", STACK, "--json"],
    ));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let d: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {stderr}"));
    let check = |name: &str| common::doctor_check(&d, name).clone();
    for n in [n1, n2, n3] {
        assert_eq!(
            check(&format!("{n}: engine-version"))["level"],
            "pass",
            "{d:#}"
        );
    }
    for n in [n2, n3] {
        let c = check(&format!("{n}: cpu-memory"));
        assert!(
            c["detail"].as_str().unwrap().contains("3 on this node"),
            "{c}"
        );
    }
    let clock = check("swarm-clock-skew");
    assert_eq!(clock["level"], "pass", "{clock}");
    let ipvs = check("swarm-ipvs");
    let detail = ipvs["detail"].as_str().unwrap();
    assert_eq!(ipvs["level"], "warn", "{ipvs}");
    assert!(
        detail.ends_with(": foreign (VIP)") && !detail.contains(STACK),
        "{ipvs}"
    );
    let mtu = check("swarm-overlay-mtu");
    assert_eq!(mtu["level"], "pass", "{mtu}");
    assert!(
        mtu["detail"]
            .as_str()
            .unwrap()
            .contains("the smallest: 1500"),
        "{mtu}"
    );

    x.ok(&with_target(
        &target,
        &["teardown", "--stack", STACK, "--purge"],
    ));
    let label = format!("label=exectl.stack={STACK}");
    for (what, args) in [
        ("services", vec!["service", "ls", "-q", "--filter", &label]),
        ("networks", vec!["network", "ls", "-q", "--filter", &label]),
        ("configs", vec!["config", "ls", "-q", "--filter", &label]),
    ] {
        assert!(sw.lines(1, &args).is_empty(), "{what} left on the manager");
    }
    for k in 1..=3 {
        for (what, args) in [
            ("containers", vec!["ps", "-aq", "--filter", &label]),
            ("volumes", vec!["volume", "ls", "-q", "--filter", &label]),
        ] {
            assert!(sw.lines(k, &args).is_empty(), "{what} left on n{k}");
        }
    }
    assert_eq!(
        sw.lines(1, &["service", "ls", "--format", "{{.Name}}"]),
        ["foreign"]
    );
}
