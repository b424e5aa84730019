//! What a real browser measured during a level's plateau (`--browser-probe`): one extra user in headless
//! Chromium, timed from login to the project's first Yjs sync. The shell's `browser` module drives
//! Chromium and fills this in; bench keeps one per level.

use std::fmt::Display;

use serde::{Deserialize, Serialize};

/// The steps, in order, as `failed` names them.
pub const STEPS: [&str; 4] = ["launch", "login", "open", "sync"];

/// What one browser session measured during a level's plateau.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct BrowserProbe {
    /// Each step's time in ms, in order, of those that finished: login, open (project), sync (first Yjs sync answer).
    pub login_ms: Option<f64>,
    pub open_ms: Option<f64>,
    pub sync_ms: Option<f64>,
    /// login → first sync, ms: Some only when every step finished.
    pub total_ms: Option<f64>,
    /// The step that did not finish ("launch", "login", "open", "sync") and why; None when it finished.
    pub failed: Option<String>,
}

impl BrowserProbe {
    /// A probe that failed at `step` (one of [`STEPS`]) before any step finished: "step: why".
    pub fn failure(step: &str, why: impl Display) -> Self {
        BrowserProbe {
            failed: Some(format!("{step}: {why}")),
            ..BrowserProbe::default()
        }
    }

    /// The three steps' times, all finished: total is their sum.
    pub fn done(login_ms: f64, open_ms: f64, sync_ms: f64) -> Self {
        BrowserProbe {
            login_ms: Some(login_ms),
            open_ms: Some(open_ms),
            sync_ms: Some(sync_ms),
            total_ms: Some(login_ms + open_ms + sync_ms),
            failed: None,
        }
    }

    /// Every step finished (and so `total_ms` is there).
    pub fn finished(&self) -> bool {
        self.failed.is_none() && self.total_ms.is_some()
    }

    /// As a report's cell says it: `57 ms (login 27 · open 11 · sync 19)`, or `did not finish: sync: …`.
    pub fn text(&self) -> String {
        let ms = |v: f64| format!("{v:.0}");
        match (&self.failed, self.total_ms) {
            (None, Some(t)) => {
                let steps: Vec<String> = [
                    ("login", self.login_ms),
                    ("open", self.open_ms),
                    ("sync", self.sync_ms),
                ]
                .iter()
                .filter_map(|(k, v)| Some(format!("{k} {}", ms((*v)?))))
                .collect();
                format!("{} ms ({})", ms(t), steps.join(" · "))
            }
            (Some(f), _) => format!("did not finish: {f}"),
            (None, None) => "not measured".into(),
        }
    }

    /// Why the probe says nothing of the SUT, when the client's own browser failed: it could not start,
    /// or gave the probe no result (the `launch` step). None when it ran (finished or not).
    pub fn client_failure(&self) -> Option<String> {
        (self.failed_step() == Some("launch")).then(|| {
            format!(
                "invalid: the browser probe could not run ({}): a failure of the client's browser, not of the SUT",
                self.failed.as_deref().unwrap_or_default()
            )
        })
    }

    /// The step that did not finish, as `failed` names it ("login", …).
    pub fn failed_step(&self) -> Option<&str> {
        let f = self.failed.as_deref()?;
        Some(f.split_once(':').map_or(f, |(step, _)| step).trim())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failure_names_its_step_and_has_no_total() {
        let p = BrowserProbe::failure("open", "answered 503");
        assert!(!p.finished());
        assert_eq!(p.failed.as_deref(), Some("open: answered 503"));
        assert_eq!(p.failed_step(), Some("open"));
        assert_eq!(p.total_ms, None);
        assert!(p.text().starts_with("did not finish: "), "{}", p.text());
        assert_eq!(
            BrowserProbe::done(27.0, 11.4, 19.0).text(),
            "57 ms (login 27 · open 11 · sync 19)"
        );
        let partial = BrowserProbe {
            login_ms: Some(12.0),
            ..BrowserProbe::failure("sync", "no answer within 5 s")
        };
        assert!(!partial.finished());
        assert_eq!(partial.failed_step(), Some("sync"));
    }

    /// Issue #36, 10: a browser that cannot start is the client's failure, not the SUT's.
    #[test]
    fn a_browser_that_cannot_start_is_the_clients_failure() {
        let p = BrowserProbe::failure("launch", "/bin/false exited at start (exit status: 1)");
        assert_eq!(
            p.client_failure().as_deref(),
            Some("invalid: the browser probe could not run (launch: /bin/false exited at start (exit status: 1)): a failure of the client's browser, not of the SUT")
        );
        assert_eq!(
            BrowserProbe::failure("sync", "no answer").client_failure(),
            None
        );
        assert_eq!(BrowserProbe::done(1.0, 1.0, 1.0).client_failure(), None);
        // Not measured, so the objective is neither met nor failed.
        let f = crate::bench::LevelFigures {
            users: 10,
            held: 10,
            browser: Some(p),
            ..Default::default()
        };
        let checks = crate::bench::Slos::default().check(&f);
        let b = checks.iter().find(|c| c.key == "browser").unwrap();
        assert_eq!((b.measured, b.ok), (None, None));
    }

    #[test]
    fn a_finished_probe_sums_its_steps_and_round_trips() {
        let p = BrowserProbe::done(10.5, 2.0, 3.5);
        assert!(p.finished());
        assert_eq!(p.total_ms, Some(16.0));
        assert_eq!(p.failed_step(), None);
        let json = serde_json::to_string(&p).unwrap();
        assert_eq!(
            json,
            r#"{"login_ms":10.5,"open_ms":2.0,"sync_ms":3.5,"total_ms":16.0,"failed":null}"#
        );
        assert_eq!(serde_json::from_str::<BrowserProbe>(&json).unwrap(), p);
    }
}
