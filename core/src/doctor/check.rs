//! One finding of `doctor`, and what its checks share (`assess`, `host_checks`, `engine_checks` all use
//! this; it uses none of them).

use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    Pass,
    Warn,
    Fail,
}

impl Level {
    pub fn name(self) -> &'static str {
        match self {
            Level::Pass => "pass",
            Level::Warn => "warn",
            Level::Fail => "fail",
        }
    }
}

/// One finding: what was checked, how it went, what was seen, and what to do (empty when nothing).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Check {
    pub name: String,
    pub level: Level,
    pub detail: String,
    pub fix: String,
}

impl Check {
    pub(super) fn new(
        name: &str,
        level: Level,
        detail: impl Into<String>,
        fix: impl Into<String>,
    ) -> Check {
        Check {
            name: name.to_string(),
            level,
            detail: detail.into(),
            fix: fix.into(),
        }
    }
    pub(super) fn pass(name: &str, detail: impl Into<String>) -> Check {
        Check::new(name, Level::Pass, detail, "")
    }
    pub(super) fn warn(name: &str, detail: impl Into<String>, fix: impl Into<String>) -> Check {
        Check::new(name, Level::Warn, detail, fix)
    }
    pub(super) fn fail(name: &str, detail: impl Into<String>, fix: impl Into<String>) -> Check {
        Check::new(name, Level::Fail, detail, fix)
    }
}

/// A figure with at most two decimals: 0.5, 2, 1.25.
pub(super) fn num(x: f64) -> String {
    let s = format!("{x:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// A warning that `what` could not be read (and why, when known).
pub(super) fn unread(name: &str, what: &str, why: Option<&str>, fix: &str) -> Check {
    let detail = match why {
        Some(w) => format!("could not read {what}: {w}"),
        None => format!("could not read {what}"),
    };
    Check::warn(name, detail, fix)
}

pub(super) const READ_FIX: &str = "run doctor as a user that may read /proc on the target (root)";
