//! `exectl campaign` on the real engine with the stand-in (#40): campaigns/quick.yaml planned, run and
//! killed during its row 2, refused when its file was edited since, resumed to its end — rows 1 and 3
//! run once, row 2 again in a folder of its own — then its summary table, its findings (each citing a
//! figure that its bench's results.json holds) and its report.html in headless Chromium, every link of
//! which opens a file of the campaign; the run killed is kept apart (not counted) and linked, the
//! stacks left running are named with their teardown commands, and `--resume --teardown` of the
//! ended campaign removes them.

use crate::common;

use common::*;
use serde_json::Value;
use std::path::Path;
use std::time::{Duration, Instant};

const CHROMIUM: &str = "/usr/bin/chromium";

fn results(path: &Path) -> Option<Value> {
    serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()
}

/// Every `href="…"` of a DOM, entities decoded.
fn hrefs(dom: &str) -> Vec<String> {
    dom.split("href=\"")
        .skip(1)
        .map(|s| {
            s[..s.find('"').unwrap()]
                .replace("&#x2F;", "/")
                .replace("&amp;", "&")
        })
        .collect()
}

const MAIL_PASSWORD: &str = "cq-mail-pw-7Rk2wQ";

#[tokio::test]
#[ignore = "needs the Docker engine, the docker CLI, the fixture images and Chromium; bash scripts/test.sh runs it"]
async fn the_quick_campaign_killed_in_row_2_resumes_and_reports_what_it_measured() {
    let s = Stack::new("cq").await;
    let stacks = [format!("{}-single", s.name), format!("{}-ha", s.name)];
    s.x.purge_leftovers(&[&stacks[0], &stacks[1]]).await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("quick.yaml");
    let body =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/campaigns/quick.yaml"))
            .unwrap()
            .replace("../images/fixtures.yaml", FIXTURES)
            .replace(
                "\nname: quick\n",
                "\nname: quick\nsecrets: [CQ_MAIL_PASSWORD]\n",
            );
    std::fs::write(&file, &body).unwrap();
    // A secret of the campaign's own, from exectl's environment (each exectl below inherits it).
    std::env::set_var("CQ_MAIL_PASSWORD", MAIL_PASSWORD);
    let (http, lb) = (Stack::port(), Stack::port());
    let path = file.to_str().unwrap();
    let flags = ["--stack", &s.name, "--http-port", &http, "--lb-port", &lb];

    // The plan: no connection, three rows, the third on the second's stack as it is.
    let mut args = vec!["campaign", path, "--plan", "--json"];
    args.extend(flags);
    let plan: Value = serde_json::from_str(&s.x.ok(&args)).unwrap();
    let deploys: Vec<&str> = plan["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["deploy"].as_str().unwrap())
        .collect();
    assert_eq!(deploys, ["first", "first", "same"], "{plan:#}");

    // Run, and kill it (SIGKILL: nothing of its own runs after) a few seconds into its row 2's first
    // bench: once the row's sweep has written its results (it does so when its first deploy is done),
    // not at a time after the row began (in CI that deploy once took longer than the 8 s waited).
    let mut args = vec!["campaign", path, "--run-id", "cq"];
    args.extend(flags);
    let mut child =
        s.x.command(&args)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
    let record = s.x.state.path().join("campaigns/cq/results.json");
    let deadline = Instant::now() + Duration::from_secs(600);
    loop {
        assert!(Instant::now() < deadline, "row 2 never began");
        assert!(
            child.try_wait().unwrap().is_none(),
            "the campaign ended before its row 2"
        );
        let row2 = results(&record).and_then(|r| r["rows"][1]["dir"].as_str().map(String::from));
        if row2.is_some_and(|d| {
            s.x.state
                .path()
                .join("campaigns/cq")
                .join(d)
                .join("results.json")
                .exists()
        }) {
            std::thread::sleep(Duration::from_secs(3));
            break;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let killed = results(&record).unwrap();
    let states: Vec<&str> = killed["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["state"]["state"].as_str().unwrap())
        .collect();
    assert_eq!(states, ["done", "interrupted", "pending"], "{killed:#}");

    // The file edited since: refused, naming the row, nothing run.
    let at = body.rfind("levels: [100]").unwrap();
    let edited = format!(
        "{}levels: [120]{}",
        &body[..at],
        &body[at + "levels: [100]".len()..]
    );
    std::fs::write(&file, edited).unwrap();
    let (code, err) = failed(&s.x.run(&["campaign", "--resume", "cq"]));
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("row 3 (least_conn against ip_hash): levels changed (100 → 120)"),
        "{err}"
    );

    // As it was: resumed to its end.
    std::fs::write(&file, &body).unwrap();
    let out = s.x.run(&["campaign", "--resume", "cq", "--json"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = r["rows"].as_array().unwrap();
    assert!(rows.iter().all(|x| x["state"]["state"] == "done"), "{r:#}");
    let campaign = s.x.state.path().join("campaigns/cq");
    let mut folders: Vec<String> = std::fs::read_dir(campaign.join("rows"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    folders.sort();
    assert_eq!(
        folders,
        [
            "01-idle-on-one-instance",
            "02-collaboration-on-two-instances",
            "02-collaboration-on-two-instances.2",
            "03-least-conn-against-ip-hash"
        ],
        "row 1 and 3 ran once, row 2 twice"
    );
    assert_eq!(rows[1]["dir"], "rows/02-collaboration-on-two-instances.2");
    // The run killed is kept apart, not counted, with the reports it left.
    let attempts = rows[1]["attempts"].as_array().unwrap();
    assert_eq!(attempts.len(), 1, "{r:#}");
    assert_eq!(attempts[0]["dir"], "rows/02-collaboration-on-two-instances");
    assert_eq!(attempts[0]["sweep"], "cq-r02");
    assert_eq!(attempts[0]["state"]["state"], "interrupted");
    let reports = attempts[0]["reports"].as_array().unwrap();
    assert!(!reports.is_empty(), "{r:#}");
    for p in reports {
        assert!(campaign.join(p.as_str().unwrap()).is_file(), "{p}");
    }
    assert!(rows[0].get("attempts").is_none() && rows[2].get("attempts").is_none());
    // Both stacks are left running, each with the command that removes it.
    let left: Vec<(&str, &str)> = r["left_up"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| (x["stack"].as_str().unwrap(), x["command"].as_str().unwrap()))
        .collect();
    let commands = stacks
        .clone()
        .map(|st| format!("exectl teardown --stack {st}"));
    assert_eq!(
        left,
        [
            (stacks[0].as_str(), commands[0].as_str()),
            (stacks[1].as_str(), commands[1].as_str())
        ],
        "{r:#}"
    );

    // The table: a line per level of each bench (2 + 1 + 2 points), each from a bench that exists.
    let lines: Vec<&Value> = rows
        .iter()
        .flat_map(|x| x["lines"].as_array().unwrap())
        .collect();
    assert_eq!(lines.len(), 5, "{r:#}");
    for l in &lines {
        let bench = campaign.join(l["bench"].as_str().unwrap());
        let b = results(&bench.join("results.json")).unwrap();
        let level = b["levels"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["users"] == l["users"])
            .unwrap();
        let held = level["figures"]["held"].as_f64().unwrap();
        let users = level["figures"]["users"].as_f64().unwrap();
        assert!(
            (l["success_pct"].as_f64().unwrap() - held / users * 100.0).abs() < 1e-9,
            "{l}"
        );
    }
    assert_eq!(lines[2]["scenario"], "collab");
    assert_eq!(lines[0]["instances"], 1);
    assert_eq!(lines[3]["instances"], 2);

    // Each finding (each row has its own) cites figures its bench's results.json holds.
    let findings: Vec<&Value> = rows
        .iter()
        .flat_map(|x| x["findings"].as_array().into_iter().flatten())
        .collect();
    assert!(
        findings.iter().filter(|f| f["kind"] == "capacity").count() >= 3,
        "{findings:#?}"
    );
    for f in &findings {
        for e in f["evidence"].as_array().unwrap() {
            let b = results(
                &campaign
                    .join(e["dir"].as_str().unwrap())
                    .join("results.json"),
            )
            .unwrap();
            assert_eq!(
                b.pointer(e["pointer"].as_str().unwrap()),
                Some(&e["value"]),
                "{f:#}"
            );
        }
    }
    // ip_hash put every user (one client address) on one instance: caught, cited from the row's sweep.
    assert!(
        findings.iter().any(|f| f["kind"] == "defect"
            && f["sentence"]
                .as_str()
                .unwrap()
                .starts_with("lb_algorithm=ip_hash: ")),
        "{findings:#?}"
    );
    let md = std::fs::read_to_string(campaign.join("report.md")).unwrap();
    assert!(
        md.contains("| idle on one instance | WS inactivo 100 / 500 · 1 | idle | [100]("),
        "{md}"
    );
    assert!(
        md.contains(
            "- row 2 (collaboration on two instances): run cq-r02 in rows/02-collaboration-on-two-instances, interrupted: "
        ) && md.contains("](rows/02-collaboration-on-two-instances/report.html)"),
        "{md}"
    );
    assert!(
        md.contains(&format!("Left running: {}, {}.", stacks[0], stacks[1]))
            && md.contains(&format!("    {}\n", commands[1])),
        "{md}"
    );

    // The stacks' generated secrets (database, admin, JWT) are in no file of the campaign, and in
    // nothing it printed.
    let mut secrets = 0;
    for stack in &stacks {
        let env = std::fs::read_to_string(s.x.stack_dir(stack).join("secrets.env")).unwrap();
        for value in env
            .lines()
            .filter_map(|l| l.split_once('=').map(|(_, v)| v))
        {
            assert!(
                value.len() >= 16,
                "a generated secret: {} chars",
                value.len()
            );
            secrets += 1;
            let holding = common::files_holding(&campaign, value);
            assert!(holding.is_empty(), "a secret of {stack} in {holding:?}");
            assert!(!String::from_utf8_lossy(&out.stdout).contains(value));
            assert!(!stderr.contains(value));
        }
    }
    assert_eq!(secrets, 10, "five secrets of each stack");
    // The campaign's `secrets:` value went to each stack's 0600 .env, and nowhere else.
    assert!(common::files_holding(&campaign, MAIL_PASSWORD).is_empty());
    for stack in &stacks {
        let holding = common::files_holding(&s.x.stack_dir(stack), MAIL_PASSWORD);
        let names: Vec<_> = holding.iter().filter_map(|p| p.file_name()).collect();
        assert_eq!(names, [".env"], "{stack}: {holding:?}");
    }
    assert!(!String::from_utf8_lossy(&out.stdout).contains(MAIL_PASSWORD));
    assert!(!stderr.contains(MAIL_PASSWORD));

    // report.html in a real browser: the table, the findings, and every link opening a file here.
    assert!(
        Path::new(CHROMIUM).exists(),
        "{CHROMIUM} is missing: bash scripts/packages.sh installs it"
    );
    let url = format!("file://{}", campaign.join("report.html").display());
    let dump = std::process::Command::new(CHROMIUM)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--dump-dom",
            &url,
        ])
        .output()
        .unwrap();
    let dom = String::from_utf8_lossy(&dump.stdout);
    assert!(dom.contains("<table id=\"summary\">"), "{dom}");
    assert_eq!(dom.matches("<tr><td>").count(), 5, "{dom}");
    assert!(
        dom.contains("id=\"findings\"") && dom.contains("<h3>Capacity</h3>"),
        "{dom}"
    );
    let links = hrefs(&dom);
    assert!(links.len() >= 10, "{links:?}");
    for h in &links {
        assert!(campaign.join(h).is_file(), "a link to nothing: {h}");
    }
    assert!(
        links
            .iter()
            .any(|h| h.starts_with("rows/02-collaboration-on-two-instances/")),
        "the run killed is linked: {links:?}"
    );

    // --teardown on the campaign ended: no row to run, its stacks removed (their data kept).
    let out =
        s.x.run(&["campaign", "--resume", "cq", "--teardown", "--json"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["torn_down"], serde_json::json!(stacks), "{r:#}");
    assert_eq!(r["left_up"], serde_json::json!([]), "{r:#}");
    let d = docker().await;
    for st in &stacks {
        assert!(
            container_ids(&d, st).await.is_empty(),
            "{st} still has containers"
        );
    }

    for st in &stacks {
        s.x.ok(&["teardown", "--stack", st, "--purge"]);
    }
}
