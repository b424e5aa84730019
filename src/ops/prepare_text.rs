//! What `prepare` says, for a program as for the CLI: its progress for a person (`progress`: a bar of
//! rows, or of requests through the API), a seeding's lines (`PrepareOutcome::lines`, the `Summary`'s
//! then the env of a k6 run) and `--json`'s object (`PrepareOutcome::json`), and a reset's lines
//! (`ResetSummary::lines`; its `--json` is the `ResetSummary` itself).

use std::time::Duration;

use serde_json::Value;

use super::prepare::PrepareOutcome;
use super::Human;
use crate::prepare::plan::EmailPattern;
use crate::prepare::{ResetSummary, Summary, Via};
use exectl_core::manifest;

/// A seeding's progress for a person: with `bar`, on a terminal, a bar of the rows written (of the
/// requests sent, `via` the API); steps and notes on stderr either way (stdout is the summary).
pub fn progress(via: Via, bar: bool) -> Human {
    Human::counting(
        bar,
        match via {
            Via::Api => {
                "{spinner} seeding through the API {pos}/{len} requests [{bar:30}] {elapsed}"
            }
            Via::Sql => "{spinner} seeding {pos}/{len} rows [{bar:30}] {elapsed}",
        },
    )
}

impl PrepareOutcome {
    /// The seeding for a person (stdout): the summary (`took`: how long the run took, as its caller
    /// timed it), then the env of a k6 run against the stack, as shell lines.
    pub fn lines(&self, took: Duration) -> Vec<String> {
        let mut lines = self.summary.lines(took);
        lines.push(
            "  k6 against this stack (upstream's test/load/k6 scripts, or your own):".to_string(),
        );
        lines.extend(
            manifest::k6_env_lines(&self.k6)
                .into_iter()
                .map(|line| format!("    {line}")),
        );
        lines
    }

    /// `prepare --json`'s object: the summary, its keys sorted, with the k6 env under `k6_env`. An error
    /// only when a path is not UTF-8.
    pub fn json(&self) -> serde_json::Result<Value> {
        let mut v = serde_json::to_value(&self.summary)?;
        v["k6_env"] = self.k6.json();
        Ok(v)
    }
}

impl Summary {
    /// What a seeding made and checked, for a person: the shape, what it added, the app's errors it
    /// went over, where the time went, the accounts verified, the files written, the manifest `load`
    /// reads. `took`: the run's time, as its caller timed it.
    pub fn lines(&self, took: Duration) -> Vec<String> {
        let s = self;
        let mut lines = vec![
            format!(
                "stack {} ({}, via {}): {} accounts, {} projects x {} users ({}), ready in {:.2} s",
                s.stack,
                s.db,
                s.via,
                s.accounts,
                s.projects,
                s.users_per_project,
                s.visibility,
                took.as_secs_f64()
            ),
            format!(
                "  added {} accounts, {} projects, {} collaborator rows (already there: {}, {}, {})",
                s.added.accounts,
                s.added.projects,
                s.added.collaborators,
                s.before.accounts,
                s.before.projects,
                s.before.collaborators
            ),
        ];
        if let (Some(added), Some(after)) = (s.added.documents, s.after.documents) {
            lines.push(format!(
                "  Yjs documents: {after} ({added} added), one per project, read back"
            ));
        }
        for e in &s.app_errors {
            lines.push(format!(
                "  app error: {} answered {} x{} ({} adopted): {}",
                e.endpoint, e.status, e.count, e.adopted, e.action
            ));
        }
        lines.push(if s.via == Via::Api.name() {
            format!(
                "  time: admin login {} ms, API requests {} ms, read-back {} ms, verify {} ms",
                s.ms.schema, s.ms.write, s.ms.readback, s.ms.verify
            )
        } else {
            format!(
                "  time: hash {} ms, schema {} ms, write {} ms, read-back {} ms, verify {} ms",
                s.ms.hash, s.ms.schema, s.ms.write, s.ms.readback, s.ms.verify
            )
        });
        for c in &s.checks {
            lines.push(format!(
                "  verified through {}: {} {} logged in ({} ms) and held its project's WebSocket",
                s.front_door, c.role, c.email, c.login_ms
            ));
        }
        for f in &s.files {
            lines.push(format!("  wrote {}", f.display()));
        }
        lines.push(format!(
            "  load --stack {} reads {} (the newest manifest; --pattern picks another)",
            s.stack,
            s.manifest.display()
        ));
        lines
    }
}

impl ResetSummary {
    /// The reset for a person (stdout): what was removed of `pattern`'s, the manifests removed, and
    /// those kept with why.
    pub fn lines(&self, pattern: &EmailPattern) -> Vec<String> {
        let mut lines = vec![format!(
            "stack {}: removed {} account(s) and {} project(s) (with {} Yjs document(s)) made by prepare ({}); other accounts untouched",
            self.stack, self.accounts, self.projects, self.documents, pattern.text()
        )];
        lines.extend(
            self.files
                .iter()
                .map(|f| format!("  removed {}", f.display())),
        );
        lines.extend(
            self.kept
                .iter()
                .map(|k| format!("  kept the manifest in {}: {}", k.dir.display(), k.reason)),
        );
        lines
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prepare::api::app_errors::AppError;
    use crate::prepare::verify::{Check, Hold};
    use crate::prepare::{Counts, Kept, Stack, Timings};
    use exectl_core::spec::{Db, Topology};
    use std::path::PathBuf;

    fn counts(accounts: u64, projects: u64, collaborators: u64, documents: Option<u64>) -> Counts {
        Counts {
            accounts,
            projects,
            collaborators,
            documents,
        }
    }

    fn summary(via: Via) -> Summary {
        Summary {
            stack: "s".into(),
            db: "postgres",
            via: via.name(),
            front_door: "127.0.0.1:8080".into(),
            accounts: 10,
            projects: 5,
            users_per_project: 2,
            visibility: "private",
            before: counts(4, 2, 4, Some(2)),
            after: counts(10, 5, 10, Some(5)),
            added: counts(6, 3, 6, Some(3)),
            manifest: PathBuf::from("/state/local/s/manifests/bench-user-{i}@exelearning.net"),
            files: vec![PathBuf::from("/out/accounts.csv")],
            checks: vec![Check {
                email: "bench-user-1@exelearning.net".into(),
                project_uuid: "u1".into(),
                role: "owner".into(),
                login_ms: 42,
                socket: Hold::Held { ms: 5 },
            }],
            app_errors: Vec::new(),
            ms: Timings {
                hash: 1,
                schema: 2,
                write: 3,
                readback: 4,
                verify: 5,
                total: 15,
            },
        }
    }

    fn outcome(summary: Summary) -> PrepareOutcome {
        PrepareOutcome {
            summary,
            stack: Stack {
                name: "s".into(),
                topology: Topology::Single,
                db: Db::Postgres,
                host: "s.localhost".into(),
                http_port: 8080,
                lb_port: 0,
                sqlite_image: String::new(),
                bundle: PathBuf::from("/state/local/s/bundle"),
                front_ip: std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST),
            },
            k6: manifest::K6Env {
                vars: vec![
                    ("BASE_URL", "http://127.0.0.1:8080".into()),
                    ("BENCH_USER_COUNT", "10".into()),
                ],
                withheld: vec![("BENCH_PASSWORD", "yours".into())],
                notes: vec!["two users a project".into()],
            },
        }
    }

    #[test]
    fn a_seeding_through_sql_says_its_shape_counts_times_checks_and_k6_env() {
        assert_eq!(
            outcome(summary(Via::Sql)).lines(Duration::from_millis(1234)),
            [
                "stack s (postgres, via sql): 10 accounts, 5 projects x 2 users (private), ready in 1.23 s",
                "  added 6 accounts, 3 projects, 6 collaborator rows (already there: 4, 2, 4)",
                "  Yjs documents: 5 (3 added), one per project, read back",
                "  time: hash 1 ms, schema 2 ms, write 3 ms, read-back 4 ms, verify 5 ms",
                "  verified through 127.0.0.1:8080: owner bench-user-1@exelearning.net logged in (42 ms) and held its project's WebSocket",
                "  wrote /out/accounts.csv",
                "  load --stack s reads /state/local/s/manifests/bench-user-{i}@exelearning.net (the newest manifest; --pattern picks another)",
                "  k6 against this stack (upstream's test/load/k6 scripts, or your own):",
                "    export BASE_URL='http://127.0.0.1:8080'",
                "    export BENCH_USER_COUNT='10'",
                "    # BENCH_PASSWORD: yours",
                "    # note: two users a project",
            ]
        );
    }

    #[test]
    fn a_seeding_through_the_api_says_its_requests_and_the_apps_errors() {
        let s = Summary {
            after: counts(10, 5, 10, None),
            added: counts(6, 3, 6, None),
            app_errors: vec![AppError {
                endpoint: "POST /api/v1/users".into(),
                status: 502,
                count: 2,
                adopted: 1,
                action: "looked for the account".into(),
            }],
            checks: Vec::new(),
            files: Vec::new(),
            ..summary(Via::Api)
        };
        assert_eq!(
            s.lines(Duration::from_secs(2)),
            [
                "stack s (postgres, via api): 10 accounts, 5 projects x 2 users (private), ready in 2.00 s",
                "  added 6 accounts, 3 projects, 6 collaborator rows (already there: 4, 2, 4)",
                "  app error: POST /api/v1/users answered 502 x2 (1 adopted): looked for the account",
                "  time: admin login 2 ms, API requests 3 ms, read-back 4 ms, verify 5 ms",
                "  load --stack s reads /state/local/s/manifests/bench-user-{i}@exelearning.net (the newest manifest; --pattern picks another)",
            ]
        );
    }

    #[test]
    fn a_seedings_json_is_the_summary_with_the_k6_env() {
        let v = outcome(summary(Via::Sql)).json().unwrap();
        let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
        // serde_json without preserve_order: the summary's keys sorted, k6_env among them.
        assert_eq!(
            keys,
            [
                "accounts",
                "added",
                "after",
                "app_errors",
                "before",
                "checks",
                "db",
                "files",
                "front_door",
                "k6_env",
                "manifest",
                "ms",
                "projects",
                "stack",
                "users_per_project",
                "via",
                "visibility",
            ]
        );
        assert_eq!(
            v["k6_env"].to_string(),
            r#"{"notes":["two users a project"],"vars":{"BASE_URL":"http://127.0.0.1:8080","BENCH_USER_COUNT":"10"},"withheld":{"BENCH_PASSWORD":"yours"}}"#
        );
        assert_eq!(
            v["added"].to_string(),
            r#"{"accounts":6,"collaborators":6,"documents":3,"projects":3}"#
        );
        assert_eq!(v["checks"][0]["login_ms"], 42);
    }

    #[test]
    fn a_reset_says_what_it_removed_and_the_manifests_kept() {
        let r = ResetSummary {
            stack: "s".into(),
            accounts: 10,
            projects: 5,
            documents: 5,
            files: vec![PathBuf::from(
                "/state/local/s/manifests/bench-user-{i}@exelearning.net/accounts.csv",
            )],
            kept: vec![Kept {
                dir: PathBuf::from("/out"),
                reason: "it still describes rows in the database".into(),
            }],
        };
        let pattern = EmailPattern::parse("bench-user-{i}@exelearning.net").unwrap();
        assert_eq!(
            r.lines(&pattern),
            [
                "stack s: removed 10 account(s) and 5 project(s) (with 5 Yjs document(s)) made by prepare (bench-user-{i}@exelearning.net); other accounts untouched",
                "  removed /state/local/s/manifests/bench-user-{i}@exelearning.net/accounts.csv",
                "  kept the manifest in /out: it still describes rows in the database",
            ]
        );
    }
}
