//! The real-browser probe (bench's `--browser-probe`): one extra user in headless Chromium, timed from
//! login to the project's first Yjs sync, as the editor's front end does them (`probe.js`, run in a page
//! of the app's origin). Every failure is a value naming its step, and a run ends within its timeout
//! (plus the few seconds it takes to kill Chromium).
//!
//! Chromium is driven over the DevTools protocol with tokio-tungstenite, by hand: the probe needs two
//! CDP methods (`Page.navigate`, `Runtime.evaluate`), which do not justify a CDP crate (chromiumoxide and
//! its generated protocol, a second WebSocket stack, minutes of build).

mod cdp;
mod chromium;

use std::path::PathBuf;
use std::time::Duration;

use exectl_core::bench::browser::BrowserProbe;
use serde_json::{json, Value};
use tokio::time::Instant;

/// One probe: which Chromium, the stack's front door, who logs in into which project, and the bound.
#[derive(Debug, Clone)]
pub struct Probe {
    pub chromium: PathBuf,
    /// The front door, as a browser reaches it: `http://127.0.0.1:8090` (ha's nginx) or
    /// `http://STACK.localhost:8080` (single's Traefik routes on the Host header; Chromium resolves
    /// `*.localhost` to loopback itself). A base path (`BASE_PATH`) may follow.
    pub base_url: String,
    pub email: String,
    pub password: String,
    pub project_uuid: String,
    /// From Chromium's start to the first sync, everything included.
    pub timeout: Duration,
}

/// The page's script: an async function of the probe's arguments.
const PROBE_JS: &str = include_str!("probe.js");

/// How long past the deadline the page may take to return its (named) failure before the browser is
/// deemed stuck.
const PAGE_GRACE: Duration = Duration::from_secs(2);

/// How long Chromium may take to give its DevTools port when checked before a bench.
const CHECK: Duration = Duration::from_secs(20);

/// Start Chromium once and kill it: before any load, a browser that cannot start here is said as the
/// client's problem (naming it and the fix), never measured as the SUT failing every level.
pub async fn check(chromium: &std::path::Path) -> Result<(), String> {
    let mut browser = chromium::Chromium::start(chromium, Instant::now() + CHECK).await?;
    browser.kill().await;
    Ok(())
}

/// Start Chromium, open the app's origin, run the probe in the page, kill Chromium. Never panics.
pub async fn run(p: &Probe) -> BrowserProbe {
    let deadline = Instant::now() + p.timeout;
    let base = p.base_url.trim_end_matches('/').to_string();
    if !(base.starts_with("http://") || base.starts_with("https://")) {
        return BrowserProbe::failure("launch", format!("{base} is not an http(s) URL"));
    }
    let mut browser = match chromium::Chromium::start(&p.chromium, deadline).await {
        Ok(b) => b,
        Err(why) => return BrowserProbe::failure("launch", why),
    };
    let r = probe(&mut browser, p, &base, deadline).await;
    browser.kill().await;
    r
}

async fn probe(
    browser: &mut chromium::Chromium,
    p: &Probe,
    base: &str,
    deadline: Instant,
) -> BrowserProbe {
    let mut page = match cdp::Page::connect(browser.port(), deadline).await {
        Ok(page) => page,
        Err(why) => return BrowserProbe::failure("launch", why),
    };
    // The page only needs the app's origin; /healthcheck is served by every build (`/` is not).
    if let Err(why) = page
        .open(&format!("{base}/healthcheck"), base, deadline)
        .await
    {
        return BrowserProbe::failure("login", format!("the app's page did not load: {why}"));
    }
    let left = deadline.saturating_duration_since(Instant::now());
    let ws_base = format!(
        "ws{}/yjs/project-{}?token=",
        base.strip_prefix("http").unwrap_or(base),
        p.project_uuid
    );
    let args = json!({
        "base": base,
        "email": p.email,
        "password": p.password,
        "uuid": p.project_uuid,
        "yjs_base": ws_base,
        "budget_ms": left.as_millis().max(1) as u64,
    });
    // The expression holds the password: it goes to the page only, never into a message.
    let expression = format!("({})({args})", PROBE_JS.trim());
    match page.evaluate(&expression, deadline + PAGE_GRACE).await {
        Ok(v) => from_page(&v),
        Err(why) => BrowserProbe::failure(
            "launch",
            format!("Chromium gave the probe no result: {why}"),
        ),
    }
}

/// The page's answer → the probe.
fn from_page(v: &Value) -> BrowserProbe {
    let ms = |k: &str| v.get(k).and_then(Value::as_f64);
    let (login, open, sync) = (ms("login_ms"), ms("open_ms"), ms("sync_ms"));
    if let Some(f) = v.get("failed").and_then(Value::as_str) {
        return BrowserProbe {
            login_ms: login,
            open_ms: open,
            sync_ms: sync,
            total_ms: None,
            failed: Some(f.to_string()),
        };
    }
    match (login, open, sync) {
        (Some(l), Some(o), Some(s)) => BrowserProbe::done(l, o, s),
        _ => BrowserProbe {
            login_ms: login,
            open_ms: open,
            sync_ms: sync,
            total_ms: None,
            failed: Some(format!(
                "{}: the page's answer has no time for it",
                ["login", "open", "sync"][[login, open, sync]
                    .iter()
                    .position(Option::is_none)
                    .unwrap_or(2)]
            )),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pages_answer() {
        let done = from_page(&json!({"login_ms": 1.5, "open_ms": 2.0, "sync_ms": 0.5}));
        assert!(done.finished());
        assert_eq!(done.total_ms, Some(4.0));
        let failed = from_page(&json!({"login_ms": 1.5, "failed": "open: GET … answered 500"}));
        assert_eq!(failed.failed_step(), Some("open"));
        assert_eq!(failed.login_ms, Some(1.5));
        assert_eq!(failed.total_ms, None);
        let odd = from_page(&json!({"login_ms": 1.5}));
        assert_eq!(odd.failed_step(), Some("open"));
    }

    /// Issue #36, 10: `EXECTL_CHROMIUM=/bin/false` is refused before any load, as the client's browser.
    #[tokio::test]
    async fn a_browser_that_exits_at_start_fails_its_check() {
        let why = check(std::path::Path::new("/bin/false")).await.unwrap_err();
        assert!(why.starts_with("/bin/false exited at start"), "{why}");
    }

    #[tokio::test]
    async fn a_missing_chromium_fails_at_launch_quickly() {
        let p = Probe {
            chromium: "/nonexistent/chromium".into(),
            base_url: "http://127.0.0.1:9".into(),
            email: "a@b.c".into(),
            password: "secret".into(),
            project_uuid: "00000000-0000-0000-0000-000000000000".into(),
            timeout: Duration::from_secs(5),
        };
        let r = run(&p).await;
        assert_eq!(r.failed_step(), Some("launch"), "{r:?}");
        assert!(!r.failed.unwrap().contains("secret"));
    }
}
