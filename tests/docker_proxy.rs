//! docker-proxy as the limit, on a private engine (issue #20, section 2): a SUT engine in its own network
//! namespace (tests/sut/sut.sh) started with 1024 open files, and exectl run inside that namespace against
//! it as a local engine (DOCKER_HOST), so that the bench's sockets reach the stack's published port on
//! loopback — through docker-proxy while the engine's userland proxy is on. docker-proxy holds 6
//! descriptors a connection under the engine's nofile and stops for good when an accept fails at it:
//! here at about 169 sockets. The bench names it as the limiting component; doctor says beforehand that it
//! cannot carry the level; with the userland proxy off the same level is held.

use crate::common;

use common::sut::Sut;
use common::*;
use serde_json::Value;
use std::process::{Command, Output};

const IMAGES: [&str; 4] = [
    "exectl-fixture/standin:latest",
    "exectl-fixture/postgres:15",
    "exectl-fixture/redis:7",
    "exectl-fixture/nginx:1",
];
const LB_PORT: &str = "18474";
const USERS: u64 = 300;

/// exectl inside the SUT's network namespace, against its engine as a local one.
struct Inside<'a> {
    sut: &'a Sut,
    x: Exectl,
}

impl Inside<'_> {
    fn run(&self, args: &[&str]) -> Output {
        Command::new("nsenter")
            .arg(format!("--net=/run/netns/exectl-{}", self.sut.name()))
            .arg(env!("CARGO_BIN_EXE_exectl"))
            .args(args)
            .env("EXECTL_STATE_DIR", self.x.state.path())
            .env("DOCKER_HOST", format!("unix://{}", self.sut.docker_sock))
            .env_remove("EXECTL_TARGET")
            .output()
            .unwrap()
    }

    fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(
            out.status.success(),
            "exectl {args:?} ({:?}):\n{}\n{}",
            out.status.code(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// ha ×2 within the engine's 1024 files (nginx: 2 workers × 500 connections, 250 proxied sockets
    /// each), seeded.
    fn deploy(&self, stack: &str) {
        let d: Value = serde_json::from_str(&self.ok(&[
            "deploy",
            "ha",
            "--stack",
            stack,
            "--lb-port",
            LB_PORT,
            "--cpus",
            "0.5",
            "--memory",
            "512m",
            "--nofile",
            "1024",
            "--worker-rlimit-nofile",
            "1024",
            "--worker-connections",
            "500",
            "--set",
            "STANDIN_ROOM_CLEANUP_MS=2000",
            "--images",
            FIXTURES,
            "--health-interval",
            "1s",
            "--json",
        ]))
        .unwrap();
        assert_eq!(d["ok"], true, "{d}");
        self.ok(&[
            "prepare",
            "--stack",
            stack,
            "--accounts",
            "400",
            "--bcrypt-cost",
            "4",
            "--json",
        ]);
    }

    fn bench(&self, stack: &str) -> (Option<i32>, Value, Vec<Value>, String) {
        let dir = self.x.state.path().join(format!("bench-{stack}"));
        let users = USERS.to_string();
        let mut args = vec![
            "bench",
            "--stack",
            stack,
            "--scenario",
            "idle",
            "--levels",
            &users,
            "--hold",
            "10s",
            "--ramp",
            "3s",
            "--settle",
            "5s",
            "--sample",
            "1s",
            "--out",
            dir.to_str().unwrap(),
        ];
        // The finding is a count: sockets held through docker-proxy or not.
        args.extend(COUNTS_ONLY);
        let out = self.run(&args);
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        let results = std::fs::read_to_string(dir.join("results.json"))
            .unwrap_or_else(|e| panic!("no results.json ({e}):\n{stderr}"));
        let timeline = read(&dir.join("timeline.jsonl"))
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        (
            out.status.code(),
            serde_json::from_str(&results).unwrap(),
            timeline,
            stderr,
        )
    }

    fn doctor(&self) -> Value {
        let out = self.run(&["doctor", "--json", "--connections", &USERS.to_string()]);
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!(
                "doctor JSON ({e}): {}",
                String::from_utf8_lossy(&out.stderr)
            )
        })
    }
}

#[test]
#[ignore = "needs root, nsenter, dockerd and the fixture images for the fake SUT (tests/sut/sut.sh); bash scripts/test.sh runs it"]
fn docker_proxy_at_its_nofile_is_named_and_the_userland_proxy_off_holds_the_level() {
    let stack = format!("{}proxy", stack_prefix());
    {
        let sut = Sut::up_with_env("proxy-on", 24, &IMAGES, &[("SUT_NOFILE", "1024")]);
        let inside = Inside {
            sut: &sut,
            x: Exectl::new(),
        };
        // doctor first: the proxy cannot carry the level.
        let report = inside.doctor();
        let proxy = doctor_check(&report, "userland-proxy");
        assert_eq!(proxy["level"], "fail", "{proxy:#}");
        let detail = proxy["detail"].as_str().unwrap();
        assert!(
            detail.contains("nofile 1024") && detail.contains("at most 169 connections"),
            "{detail}"
        );

        inside.deploy(&stack);
        let (code, r, timeline, stderr) = inside.bench(&stack);
        let verdict = &r["verdict"];
        eprintln!("{}\n{}", verdict["headline"], verdict["limiting"]["detail"]);
        assert_eq!(code, Some(1), "{stderr}\n{verdict:#}");
        let what = format!("docker-proxy (the engine's userland proxy of port {LB_PORT})");
        assert!(
            verdict["limiting"]["component"]
                .as_str()
                .unwrap()
                .starts_with(&what),
            "{verdict:#}"
        );
        assert_eq!(
            verdict["limiting"]["resource"], "docker-proxy",
            "{verdict:#}"
        );
        assert!(verdict["headline"].as_str().unwrap().contains(&what));
        // The timeline holds the proxy's figures: its nofile, its files rising, then gone.
        let proxies: Vec<&Value> = timeline
            .iter()
            .flat_map(|s| s["proxies"].as_array().into_iter().flatten())
            .filter(|p| p["host_ip"] == "0.0.0.0")
            .collect();
        assert!(!proxies.is_empty(), "no docker-proxy in the timeline");
        assert!(proxies.iter().all(|p| p["nofile"] == 1024), "{proxies:?}");
        assert!(proxies.iter().any(|p| p["alive"] == false), "{proxies:?}");
        let most = proxies
            .iter()
            .filter_map(|p| p["open_files"].as_u64())
            .max()
            .unwrap();
        assert!(most > 300, "it held {most} files before it stopped");

        // The proxy is gone for good: the stack's containers run and its front door refuses. A bench
        // now measures nothing (review of #36, L6): exit 3 naming the front door, as `load` does, where
        // it recorded a knee of users that never connected.
        let dir = inside.x.state.path().join("bench-closed");
        let out = inside.run(&[
            "bench",
            "--stack",
            &stack,
            "--scenario",
            "idle",
            "--levels",
            "10",
            "--hold",
            "2s",
            "--settle",
            "5s",
            "--out",
            dir.to_str().unwrap(),
        ]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(3), "{stderr}");
        let said = format!(":{LB_PORT}/ cannot be reached: connecting to");
        assert!(
            stderr.contains("the front door http://")
                && stderr.contains(&said)
                && stderr.contains(&format!("fix: check that stack {stack} runs")),
            "{said:?} in:\n{stderr}"
        );
        assert!(
            !dir.join("results.json").exists(),
            "nothing measured:\n{stderr}"
        );
    }

    // The same stack, the same level, on an engine with the userland proxy off: held.
    let sut = Sut::up_with_env(
        "proxy-off",
        25,
        &IMAGES,
        &[
            ("SUT_NOFILE", "1024"),
            ("SUT_DAEMON_JSON", "\"userland-proxy\": false"),
        ],
    );
    let inside = Inside {
        sut: &sut,
        x: Exectl::new(),
    };
    let report = inside.doctor();
    assert_eq!(
        doctor_check(&report, "userland-proxy")["level"],
        "pass",
        "{report:#}"
    );
    inside.deploy(&stack);
    let (code, r, timeline, stderr) = inside.bench(&stack);
    assert_eq!(code, Some(0), "{stderr}\n{:#}", r["verdict"]);
    assert_eq!(r["levels"][0]["figures"]["held"], USERS);
    assert!(
        timeline.iter().all(|s| s["proxies"].is_null()),
        "no docker-proxy with the userland proxy off"
    );
}
