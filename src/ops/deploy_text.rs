//! What `deploy` and `plan` say of their outcomes, for a program as for the CLI: the lines for a person
//! (`lines`; a deploy's failures apart, `error_lines`) and `--json`'s object (`json`, its keys sorted as
//! `serde_json` sorts them).

use std::path::Path;

use serde_json::{json, Value};

use super::deploy::fitted_lines;
use super::deploy_stage::{plan_lines, DeployOutcome, PlanOutcome};
use crate::sut::Target;
use exectl_core::spec::Spec;

impl DeployOutcome {
    /// The outcome for a person (stdout): ready, not ready or unchanged, the run id, then each service's
    /// limits in effect.
    pub fn lines(&self) -> Vec<String> {
        let (stack, changed, elapsed) = (&self.stack, self.changed, self.seconds);
        let mut lines = vec![if !self.restarts.is_empty() {
            let restarted = self
                .restarts
                .iter()
                .map(|r| r.service.as_str())
                .collect::<Vec<_>>()
                .join(", ");
            format!(
                "stack {stack} NOT ready: {restarted} restarted during this deploy ({changed} change(s) in {elapsed:.1}s)"
            )
        } else if self.plan.is_noop() {
            format!("nothing changed: stack {stack} already matches the spec")
        } else {
            format!("stack {stack} ready: {changed} change(s) in {elapsed:.1}s")
        }];
        lines.push(format!("run id: {}", self.run_id));
        for e in &self.limits {
            let state = if e.mismatches.is_empty() {
                "ok"
            } else {
                "MISMATCH"
            };
            let workers = e
                .nginx_workers
                .map(|n| format!(" workers {n}"))
                .unwrap_or_default();
            lines.push(format!(
                "  limits {:<9} nofile {}/{} cpus {} memory {}{workers} {state} {}",
                e.service,
                known(e.nofile_soft),
                known(e.nofile_hard),
                e.cpus
                    .map(|c| format!("{c}"))
                    .unwrap_or_else(|| "unlimited".into()),
                e.memory
                    .map(|m| format!("{}m", m >> 20))
                    .unwrap_or_else(|| "unlimited".into()),
                e.mismatches.join("; ")
            ));
        }
        lines
    }

    /// Why the deploy is not `ok()`, as `error:` lines (stderr, with `--json` too): the services whose
    /// limits in effect differ from the spec, then each service that restarted.
    pub fn error_lines(&self) -> Vec<String> {
        let mut lines = Vec::new();
        let mismatched = self.mismatched();
        if !mismatched.is_empty() {
            lines.push(format!(
                "error: limits in effect differ from the spec in {}",
                mismatched
                    .iter()
                    .map(|e| e.service.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        for r in &self.restarts {
            lines.push(format!(
                "error: {} {}: the stack is not ready over a crash (its last log lines are in the progress \
                 above, or under `restarts` with --json); fix the cause, then deploy again (a restart before \
                 a deploy does not count)",
                r.service,
                r.summary()
            ));
        }
        lines
    }

    /// `deploy --json`'s object: the outcome, `ok`, the topology of `spec` (the spec deployed), and the
    /// target with where it keeps the stack's bundle (on its host, and the local copy).
    pub fn json(&self, spec: &Spec, target: &Target) -> Value {
        self.json_at(
            spec.topology.name(),
            &target.describe(),
            &target.host_bundle_dir(&self.stack),
            &target.bundle_dir(&self.stack),
        )
    }

    fn json_at(&self, topology: &str, target: &str, host_bundle: &Path, bundle: &Path) -> Value {
        json!({
            "stack": self.stack,
            "run_id": self.run_id,
            "topology": topology,
            "ok": self.ok(),
            "changed": self.changed,
            "noop": self.plan.is_noop(),
            "plan": self.plan,
            "ready": self.ready,
            "restarts": self.restarts,
            "pulled": self.pulled,
            "loaded": self.loaded,
            "target": target,
            "host_bundle": host_bundle.display().to_string(),
            "limits": self.limits,
            "bundle": bundle.display().to_string(),
            "seconds": self.seconds,
            "fitted": self.fitted,
        })
    }
}

impl PlanOutcome {
    /// The plan for a person (stdout): the stack and its spec, the defaults fitted, the images to pull,
    /// each action, and "nothing to change" when there is none and deploy would not refuse.
    pub fn lines(&self) -> Vec<String> {
        let mut lines = vec![format!(
            "plan for stack {} ({}):",
            self.spec.stack,
            self.spec.describe()
        )];
        lines.extend(fitted_lines(&self.fitted));
        lines.extend(
            self.to_pull
                .iter()
                .map(|image| format!("  pull     image {image} (not on the target)")),
        );
        lines.extend(plan_lines(&self.plan));
        if self.plan.is_noop() && self.refused.is_none() {
            lines.push("nothing to change".to_string());
        }
        lines
    }

    /// `plan --json`'s object: the stack, the plan, the images to pull, the defaults fitted, and what
    /// deploy would refuse (the error's chain on one line, or null).
    pub fn json(&self) -> Value {
        json!({
            "stack": self.spec.stack, "noop": self.plan.is_noop(), "plan": self.plan, "pull": self.to_pull,
            "fitted": self.fitted,
            "refused": self.refused.as_ref().map(|e| format!("{e:#}")),
        })
    }
}

/// A limit read back, or `?` when it could not be.
fn known(v: Option<u64>) -> String {
    v.map(|v| v.to_string()).unwrap_or_else(|| "?".into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shell::scripts::limits::Effective;
    use exectl_core::plan::{Action, Plan};
    use exectl_core::readiness::Restart;
    use exectl_core::spec::Fitted;
    use std::path::PathBuf;

    fn plan(actions: Vec<Action>) -> Plan {
        Plan {
            create_network: None,
            create_volumes: Vec::new(),
            actions,
            waves: Vec::new(),
            wait_at_end: Vec::new(),
        }
    }

    fn limits(service: &str, workers: Option<u32>, mismatches: &[&str]) -> Effective {
        Effective {
            service: service.into(),
            nofile_soft: Some(20000),
            nofile_hard: None,
            cpus: Some(1.5),
            memory: Some(512 << 20),
            cpu_usage_ns: Some(7),
            rss_bytes: None,
            usage_bytes: None,
            nginx_workers: workers,
            mismatches: mismatches.iter().map(|m| m.to_string()).collect(),
        }
    }

    fn fitted() -> Fitted {
        Fitted {
            knob: "nofile".into(),
            default: "200000".into(),
            value: "20000".into(),
            why: "the engine's hard limit".into(),
        }
    }

    fn outcome(restarts: Vec<Restart>, limits: Vec<Effective>) -> DeployOutcome {
        DeployOutcome {
            stack: "s".into(),
            run_id: "20260101-000000-s".into(),
            plan: plan(vec![
                Action::Create {
                    service: "app".into(),
                },
                Action::Keep {
                    service: "db".into(),
                    start: false,
                },
            ]),
            ready: Vec::new(),
            restarts,
            pulled: vec!["nginx:1".into()],
            loaded: Vec::new(),
            limits,
            changed: 1,
            seconds: 12.34,
            fitted: vec![fitted()],
        }
    }

    fn crash(service: &str) -> Restart {
        Restart {
            service: service.into(),
            restarts: 2,
            exit_codes: vec![1, 137],
            last_logs: "boom".into(),
        }
    }

    #[test]
    fn a_ready_deploy_says_its_changes_run_id_and_limits() {
        let o = outcome(
            Vec::new(),
            vec![
                limits("app", None, &[]),
                Effective {
                    cpus: None,
                    memory: None,
                    nofile_soft: None,
                    ..limits("nginx", Some(2), &[])
                },
            ],
        );
        assert_eq!(
            o.lines(),
            [
                "stack s ready: 1 change(s) in 12.3s",
                "run id: 20260101-000000-s",
                "  limits app       nofile 20000/? cpus 1.5 memory 512m ok ",
                "  limits nginx     nofile ?/? cpus unlimited memory unlimited workers 2 ok ",
            ]
        );
        assert!(o.error_lines().is_empty());
    }

    #[test]
    fn an_unchanged_stack_says_so() {
        let o = DeployOutcome {
            plan: plan(vec![Action::Keep {
                service: "app".into(),
                start: false,
            }]),
            changed: 0,
            ..outcome(Vec::new(), Vec::new())
        };
        assert_eq!(
            o.lines(),
            [
                "nothing changed: stack s already matches the spec",
                "run id: 20260101-000000-s",
            ]
        );
    }

    #[test]
    fn restarts_and_mismatches_are_not_ready_and_are_errors() {
        let o = outcome(
            vec![crash("app-1"), crash("app-2")],
            vec![
                limits(
                    "app-1",
                    None,
                    &["nofile 1024, not 20000", "cpus 1, not 1.5"],
                ),
                limits("nginx", Some(1), &["workers 1, not 2"]),
            ],
        );
        assert_eq!(
            o.lines(),
            [
                "stack s NOT ready: app-1, app-2 restarted during this deploy (1 change(s) in 12.3s)",
                "run id: 20260101-000000-s",
                "  limits app-1     nofile 20000/? cpus 1.5 memory 512m MISMATCH nofile 1024, not 20000; cpus 1, not 1.5",
                "  limits nginx     nofile 20000/? cpus 1.5 memory 512m workers 1 MISMATCH workers 1, not 2",
            ]
        );
        let crashed = |s: &str| {
            format!(
                "error: {s} restarted 2 times during this deploy (exit codes 1, 137): the stack is not \
                 ready over a crash (its last log lines are in the progress above, or under `restarts` \
                 with --json); fix the cause, then deploy again (a restart before a deploy does not count)"
            )
        };
        assert_eq!(
            o.error_lines(),
            [
                "error: limits in effect differ from the spec in app-1, nginx".to_string(),
                crashed("app-1"),
                crashed("app-2"),
            ]
        );
        assert!(!o.ok());
    }

    #[test]
    fn deploy_json_has_the_outcome_and_where_the_bundle_is() {
        let o = outcome(Vec::new(), vec![limits("nginx", Some(2), &[])]);
        let v = o.json_at(
            "ha",
            "the local engine",
            &PathBuf::from("/opt/exectl/s"),
            &PathBuf::from("/state/local/s/bundle"),
        );
        // serde_json without preserve_order: the keys come out sorted.
        assert_eq!(
            serde_json::to_string(&v).unwrap(),
            concat!(
                r#"{"bundle":"/state/local/s/bundle","changed":1,"#,
                r#""fitted":[{"default":"200000","knob":"nofile","value":"20000","why":"the engine's hard limit"}],"#,
                r#""host_bundle":"/opt/exectl/s","#,
                r#""limits":[{"cpus":1.5,"memory":536870912,"mismatches":[],"nginx_workers":2,"nofile_hard":null,"nofile_soft":20000,"service":"nginx"}],"#,
                r#""loaded":[],"noop":false,"ok":true,"#,
                r#""plan":{"actions":[{"action":"create","service":"app"},{"action":"keep","service":"db","start":false}],"create_network":null,"create_volumes":[],"wait_at_end":[],"waves":[]},"#,
                r#""pulled":["nginx:1"],"ready":[],"restarts":[],"run_id":"20260101-000000-s","#,
                r#""seconds":12.34,"stack":"s","target":"the local engine","topology":"ha"}"#,
            )
        );
    }

    fn spec() -> Spec {
        exectl_core::spec::resolve(exectl_core::spec::ha_input(&[("--instances", "2")])).unwrap()
    }

    #[test]
    fn a_plan_says_the_spec_fitted_pulls_and_actions() {
        let p = PlanOutcome {
            spec: spec(),
            fitted: vec![fitted()],
            plan: Plan {
                create_network: Some("exectl-s".into()),
                create_volumes: vec!["exectl-s-db".into()],
                ..plan(vec![
                    Action::Remove {
                        service: "old".into(),
                        reason: "not in the spec".into(),
                    },
                    Action::Recreate {
                        service: "app-1".into(),
                        reason: "config changed".into(),
                    },
                    Action::Keep {
                        service: "db".into(),
                        start: true,
                    },
                ])
            },
            to_pull: vec!["nginx:1".into()],
            refused: None,
        };
        let head = format!("plan for stack {} ({}):", p.spec.stack, p.spec.describe());
        assert_eq!(
            p.lines(),
            [
                head.as_str(),
                "defaults fitted to the target (give a value to set it yourself):",
                "  fitted   nofile 200000 -> 20000: the engine's hard limit",
                "  pull     image nginx:1 (not on the target)",
                "  create   network exectl-s",
                "  create   volume exectl-s-db",
                "  remove   old (not in the spec)",
                "  recreate app-1 (config changed)",
                "  start    db (config unchanged, not running)",
            ]
        );
    }

    #[test]
    fn an_empty_plan_is_nothing_to_change_unless_deploy_would_refuse() {
        let mut p = PlanOutcome {
            spec: spec(),
            fitted: Vec::new(),
            plan: plan(Vec::new()),
            to_pull: Vec::new(),
            refused: None,
        };
        let head = format!("plan for stack {} ({}):", p.spec.stack, p.spec.describe());
        assert_eq!(p.lines(), [head.as_str(), "nothing to change"]);
        assert_eq!(
            serde_json::to_string(&p.json()).unwrap(),
            format!(
                r#"{{"fitted":[],"noop":true,"plan":{{"actions":[],"create_network":null,"create_volumes":[],"wait_at_end":[],"waves":[]}},"pull":[],"refused":null,"stack":"{}"}}"#,
                p.spec.stack
            )
        );
        p.refused = Some(anyhow::anyhow!("port 80 is taken").context("preflight"));
        assert_eq!(p.lines(), [head.as_str()]);
        assert_eq!(p.json()["refused"], "preflight: port 80 is taken");
    }
}
