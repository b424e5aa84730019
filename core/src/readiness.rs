//! Readiness probes, pure: which answer makes a service ready, decided from its rendered definition,
//! and whether an answer is that one. Docker's health changes only on its healthcheck's interval tick
//! (30 s for the real image, 5 s for the databases) and says nothing about a proxy's routes, so deploy
//! asks the services themselves as well (the engine's `probe` module sends the requests).

use crate::compose::Service;
use serde::Serialize;

/// The label the compose template gives each service's role (app, db, redis, lb, proxy).
pub const LABEL_ROLE: &str = "exectl.role";

/// What answer a probe waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Expect {
    /// The app's own `{"status":"ok"}` (directly, or routed through a proxy).
    AppOk,
    /// nginx's own `healthy` on `/health` (answered by nginx, not proxied).
    LbHealthy,
}

/// How deploy asks a service whether it is ready.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum Probe {
    Http(HttpProbe),
    /// The service's own healthcheck command (argv), run through the engine's exec at deploy's pace
    /// rather than on Docker's interval tick: the same test, sooner.
    Exec(Vec<String>),
}

/// One HTTP GET on the container's own address (its port inside the stack network), with a Host
/// header when the service routes by Host.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HttpProbe {
    pub port: u16,
    pub path: &'static str,
    pub host: Option<String>,
    pub expect: Expect,
}

impl Probe {
    /// "GET /healthcheck with Host h", "exec redis-cli ping", for progress lines and errors.
    pub fn describe(&self) -> String {
        match self {
            Probe::Http(HttpProbe {
                path,
                host: Some(h),
                ..
            }) => format!("GET {path} with Host {h}"),
            Probe::Http(HttpProbe { path, .. }) => format!("GET {path}"),
            Probe::Exec(argv) => format!("exec {}", argv.join(" ")),
        }
    }
}

/// The probe of a service by its role: the app's `/healthcheck`; nginx's own `/health`; Traefik's
/// Host-routed `/healthcheck`, which answers the app only once Traefik has loaded the stack's route
/// (before that it says `404 page not found`). The rest (databases, redis): their own healthcheck
/// command, run by deploy. `host` is the Host Traefik routes (the spec's).
pub fn probe_for(service: &Service, host: &str) -> Option<Probe> {
    let role = service.labels.get(LABEL_ROLE).map(String::as_str);
    let http = match role {
        Some("app") => Some(HttpProbe {
            port: service
                .environment
                .get("APP_PORT")
                .and_then(|p| p.parse().ok())
                .unwrap_or(crate::render::APP_PORT),
            path: "/healthcheck",
            host: None,
            expect: Expect::AppOk,
        }),
        Some("lb") => Some(HttpProbe {
            port: container_port(service)?,
            path: "/health",
            host: None,
            expect: Expect::LbHealthy,
        }),
        Some("proxy") => Some(HttpProbe {
            port: container_port(service)?,
            path: "/healthcheck",
            host: Some(host.to_string()),
            expect: Expect::AppOk,
        }),
        _ => None,
    };
    match http {
        Some(h) => Some(Probe::Http(h)),
        None if matches!(role, Some("lb" | "proxy")) => None,
        None => exec_argv(&service.healthcheck.as_ref()?.test).map(Probe::Exec),
    }
}

/// A compose healthcheck `test` as the argv an exec runs: `CMD a b` → `a b`, `CMD-SHELL c` →
/// `/bin/sh -c c` (as the engine runs it); `NONE` or anything else → None.
fn exec_argv(test: &[String]) -> Option<Vec<String>> {
    match test.split_first()? {
        (kind, rest) if kind == "CMD" && !rest.is_empty() => Some(rest.to_vec()),
        (kind, [command]) if kind == "CMD-SHELL" => {
            Some(vec!["/bin/sh".into(), "-c".into(), command.clone()])
        }
        _ => None,
    }
}

/// The container side of the first published port ("8090:80" → 80).
fn container_port(service: &Service) -> Option<u16> {
    let p = service.ports.first()?;
    p.rsplit(':').next()?.parse().ok()
}

/// Ok when `status` and `body` are the answer `expect` waits for, else why not (for the timeout's
/// report: a Traefik 404 is named as a route not loaded yet).
pub fn judge(expect: Expect, status: u16, body: &str) -> Result<(), String> {
    let short: String = body.trim().chars().take(120).collect();
    match expect {
        Expect::AppOk if status == 200 && app_ok(body) => Ok(()),
        Expect::LbHealthy if status == 200 && body.trim() == "healthy" => Ok(()),
        _ if status == 404 && body.trim() == "404 page not found" => Err(format!(
            "404 {short:?}: Traefik's own answer, the stack's route is not loaded (yet)"
        )),
        _ => Err(format!("{status} {short:?}")),
    }
}

fn app_ok(body: &str) -> bool {
    serde_json::from_str::<serde_json::Value>(body)
        .map(|v| v["status"] == "ok")
        .unwrap_or(false)
}

/// What made a service ready.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ReadyBy {
    /// Its own HTTP answer (deploy's probe), whatever Docker's health says yet.
    Probe,
    /// Docker's healthcheck.
    Healthy,
    /// Running, and nothing more was asked (no healthcheck and no probe, or a `service_started` wait).
    Running,
    /// A one-shot that exited 0.
    Completed,
}

/// One service's readiness, for progress and deploy's JSON.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Ready {
    pub service: String,
    pub by: ReadyBy,
    /// From the start of the wait.
    pub seconds: f64,
    /// Docker's health at that moment: healthy, starting, unhealthy, or none.
    pub docker_health: String,
    /// The probe that answered, when `by` is `probe`.
    pub probe: Option<String>,
}

impl Ready {
    /// The progress line's words: `ready (probe 0.4s; GET /healthcheck; docker health starting)`,
    /// `healthy (3.1s)`, `running (0.0s)`, `completed (1.2s)`.
    pub fn describe(&self) -> String {
        let s = self.seconds;
        match self.by {
            ReadyBy::Probe => format!(
                "ready (probe {s:.1}s; {}; docker health {})",
                self.probe.as_deref().unwrap_or("?"),
                self.docker_health
            ),
            ReadyBy::Healthy => format!("healthy ({s:.1}s)"),
            ReadyBy::Running => format!("running ({s:.1}s)"),
            ReadyBy::Completed => format!("completed ({s:.1}s)"),
        }
    }
}

/// The waits at the end of a deploy: the plan's, and every service with a probe (`probed`) that a wave
/// waited for only as started (compose's `service_started`: nginx in front of Traefik), because it is
/// still a front door that must route.
pub fn final_waits(wait_at_end: &[String], probed: &[&str], readied: &[Ready]) -> Vec<String> {
    let mut rest = wait_at_end.to_vec();
    for r in readied {
        if r.by == ReadyBy::Running
            && probed.contains(&r.service.as_str())
            && !rest.contains(&r.service)
        {
            rest.push(r.service.clone());
        }
    }
    rest
}

/// A service the engine restarted during this deploy: whatever answered before or after, it is not
/// ready (the real image's admin race crashed an instance once at boot, and a deploy that said ready over
/// it sent the benchmark onto an instance that had just lost its state).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Restart {
    pub service: String,
    /// Restarts during this deploy (the container's count now, less its count when the deploy began).
    pub restarts: i64,
    /// The exit codes of those runs, oldest first, as the engine's die events gave them.
    pub exit_codes: Vec<i64>,
    pub last_logs: String,
}

/// How long a container this deploy started must stay up after it answered before deploy counts its
/// restarts and calls the stack ready: an instance that answers and dies a moment later (a crash just
/// after start; the stand-in's `crash-once` dies 50 ms after its first answer) is not ready either.
pub const STABLE: std::time::Duration = std::time::Duration::from_secs(1);

/// At this many restarts during one deploy a service is crash-looping: its wait fails at once instead
/// of waiting for `--wait-timeout`.
pub const CRASH_LOOP: i64 = 3;

/// Restarts of a container during this deploy: `before` is its container's (id, RestartCount) when the
/// deploy began, None when it had none. A container created since (another id) restarted `count` times
/// during this deploy; a kept one `count` less what it had (a restart last week is not this deploy's).
pub fn restarts_during(before: Option<(&str, i64)>, id: &str, count: i64) -> i64 {
    match before {
        Some((old, was)) if old == id => (count - was).max(0),
        _ => count.max(0),
    }
}

impl Restart {
    /// The progress line: the summary, then its last log lines.
    pub fn describe(&self) -> String {
        match self.last_logs.trim() {
            "" => format!("{}: not ready", self.summary()),
            l => format!("{}: not ready; last log lines:\n{l}", self.summary()),
        }
    }

    /// `restarted 1 time during this deploy (exit code 1)`
    pub fn summary(&self) -> String {
        let n = self.restarts;
        let codes = match self.exit_codes.as_slice() {
            [] => "exit code unknown".to_string(),
            [c] => format!("exit code {c}"),
            cs => format!(
                "exit codes {}",
                cs.iter().map(i64::to_string).collect::<Vec<_>>().join(", ")
            ),
        };
        format!(
            "restarted {n} time{} during this deploy ({codes})",
            if n == 1 { "" } else { "s" }
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn service(role: &str, ports: &[&str], env: &[(&str, &str)]) -> Service {
        let mut s: Service = serde_norway::from_str("image: x\n").unwrap();
        s.labels.insert(LABEL_ROLE.into(), role.into());
        s.ports = ports.iter().map(|p| p.to_string()).collect();
        s.environment = env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        s
    }

    fn http(p: Option<Probe>) -> HttpProbe {
        match p {
            Some(Probe::Http(h)) => h,
            other => panic!("not an HTTP probe: {other:?}"),
        }
    }

    fn with_test(mut s: Service, test: &[&str]) -> Service {
        s.healthcheck = Some(crate::compose::Healthcheck {
            test: test.iter().map(|t| t.to_string()).collect(),
            interval: "5s".into(),
            timeout: "5s".into(),
            retries: 3,
            start_period: None,
        });
        s
    }

    #[test]
    fn probes_by_role() {
        let app = http(probe_for(
            &service("app", &[], &[("APP_PORT", "8081")]),
            "h",
        ));
        assert_eq!(
            (app.port, app.path, app.host.clone()),
            (8081, "/healthcheck", None)
        );
        let lb = http(probe_for(&service("lb", &["18090:80"], &[]), "h"));
        assert_eq!(
            (lb.port, lb.path, lb.expect),
            (80, "/health", Expect::LbHealthy)
        );
        let proxy = probe_for(&service("proxy", &["8080:80"], &[]), "s.localhost");
        assert_eq!(
            proxy.as_ref().unwrap().describe(),
            "GET /healthcheck with Host s.localhost"
        );
        let proxy = http(proxy);
        assert_eq!((proxy.port, proxy.expect), (80, Expect::AppOk));
        assert_eq!(probe_for(&service("db", &[], &[]), "h"), None);
        assert_eq!(probe_for(&service("lb", &[], &[]), "h"), None);
    }

    #[test]
    fn the_rest_run_their_own_healthcheck() {
        let redis = with_test(service("redis", &[], &[]), &["CMD", "redis-cli", "ping"]);
        let p = probe_for(&redis, "h").unwrap();
        assert_eq!(p, Probe::Exec(vec!["redis-cli".into(), "ping".into()]));
        assert_eq!(p.describe(), "exec redis-cli ping");
        let pg = with_test(service("db", &[], &[]), &["CMD-SHELL", "pg_isready -U u"]);
        assert_eq!(
            probe_for(&pg, "h").unwrap().describe(),
            "exec /bin/sh -c pg_isready -U u"
        );
        assert_eq!(
            probe_for(&with_test(service("db", &[], &[]), &["NONE"]), "h"),
            None
        );
        assert_eq!(
            probe_for(&with_test(service("db", &[], &[]), &["CMD"]), "h"),
            None
        );
        // A front door is asked over HTTP or not at all, never by exec.
        let lb = with_test(service("lb", &[], &[]), &["CMD", "true"]);
        assert_eq!(probe_for(&lb, "h"), None);
    }

    #[test]
    fn answers() {
        assert!(judge(Expect::AppOk, 200, r#"{"status":"ok","timestamp":1}"#).is_ok());
        assert!(judge(Expect::AppOk, 200, "ok").is_err());
        assert!(judge(Expect::AppOk, 503, r#"{"status":"ok"}"#).is_err());
        let traefik = judge(Expect::AppOk, 404, "404 page not found\n").unwrap_err();
        assert!(traefik.contains("route is not loaded"), "{traefik}");
        assert!(judge(Expect::LbHealthy, 200, "healthy\n").is_ok());
        assert!(judge(Expect::LbHealthy, 502, "<html>bad gateway</html>").is_err());
    }

    #[test]
    fn front_doors_only_started_are_probed_at_the_end() {
        let ready = |service: &str, by| Ready {
            service: service.into(),
            by,
            seconds: 0.0,
            docker_health: "none".into(),
            probe: None,
        };
        let readied = [
            ready("postgres", ReadyBy::Healthy),
            ready("app-1", ReadyBy::Probe),
            ready("nginx", ReadyBy::Running),
            ready("init", ReadyBy::Running),
        ];
        let rest = final_waits(
            &["traefik".into()],
            &["app-1", "nginx", "traefik"],
            &readied,
        );
        assert_eq!(rest, ["traefik", "nginx"]);
        assert_eq!(
            final_waits(&["nginx".into()], &["nginx"], &readied),
            ["nginx"]
        );
    }

    #[test]
    fn progress_words() {
        let r = Ready {
            service: "app".into(),
            by: ReadyBy::Probe,
            seconds: 0.42,
            docker_health: "starting".into(),
            probe: Some("GET /healthcheck".into()),
        };
        assert_eq!(
            r.describe(),
            "ready (probe 0.4s; GET /healthcheck; docker health starting)"
        );
        let h = Ready {
            by: ReadyBy::Healthy,
            seconds: 3.06,
            ..r
        };
        assert_eq!(h.describe(), "healthy (3.1s)");
    }

    #[test]
    fn only_restarts_during_this_deploy_count() {
        // Kept: what it had before is not this deploy's.
        assert_eq!(restarts_during(Some(("a", 4)), "a", 4), 0);
        assert_eq!(restarts_during(Some(("a", 4)), "a", 5), 1);
        // Recreated (another id) or created: every restart is this deploy's.
        assert_eq!(restarts_during(Some(("a", 4)), "b", 1), 1);
        assert_eq!(restarts_during(None, "b", 0), 0);
        assert_eq!(restarts_during(None, "b", 2), 2);
    }

    #[test]
    fn a_restart_says_count_exit_codes_and_logs() {
        let r = Restart {
            service: "app-2".into(),
            restarts: 1,
            exit_codes: vec![1],
            last_logs: "[FATAL] Bootstrap failed\n".into(),
        };
        assert_eq!(
            r.describe(),
            "restarted 1 time during this deploy (exit code 1): not ready; last log lines:\n[FATAL] Bootstrap failed"
        );
        let r = Restart {
            restarts: 2,
            exit_codes: vec![],
            last_logs: String::new(),
            ..r
        };
        assert_eq!(
            r.describe(),
            "restarted 2 times during this deploy (exit code unknown): not ready"
        );
    }
}
