//! The report: a table for people, `--json` for scripts (a stable shape), and the exit code.

use super::check::{Check, Level};
use serde::Serialize;

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Summary {
    pub pass: usize,
    pub warn: usize,
    pub fail: usize,
}

/// `{target, checks: [{name, level, detail, fix}], summary: {pass, warn, fail}}`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    pub target: String,
    pub checks: Vec<Check>,
    pub summary: Summary,
}

impl Report {
    pub fn new(target: impl Into<String>, checks: Vec<Check>) -> Report {
        let mut summary = Summary::default();
        for c in &checks {
            match c.level {
                Level::Pass => summary.pass += 1,
                Level::Warn => summary.warn += 1,
                Level::Fail => summary.fail += 1,
            }
        }
        Report {
            target: target.into(),
            checks,
            summary,
        }
    }

    /// 0 when nothing failed (warnings allowed), 1 otherwise.
    pub fn exit_code(&self) -> i32 {
        i32::from(self.summary.fail > 0)
    }

    pub fn json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a report serializes")
    }

    /// The terminal table, then a summary line.
    pub fn table(&self) -> String {
        use comfy_table::{presets::UTF8_FULL_CONDENSED, ContentArrangement, Table};
        let mut t = Table::new();
        t.load_style(UTF8_FULL_CONDENSED)
            .set_content_arrangement(ContentArrangement::Dynamic)
            .set_width(160)
            .set_header(vec!["check", "level", "detail", "fix"]);
        for c in &self.checks {
            t.add_row(vec![
                c.name.clone(),
                c.level.name().to_uppercase(),
                c.detail.clone(),
                if c.fix.is_empty() {
                    "-".to_string()
                } else {
                    c.fix.clone()
                },
            ]);
        }
        format!(
            "doctor: {}\n{t}\n{} pass, {} warn, {} fail\n",
            self.target, self.summary.pass, self.summary.warn, self.summary.fail
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(name: &str, level: Level) -> Check {
        Check {
            name: name.into(),
            level,
            detail: format!("{name} detail"),
            fix: if level == Level::Pass {
                String::new()
            } else {
                "do it".into()
            },
        }
    }

    #[test]
    fn summary_and_exit_code() {
        let r = Report::new("t", vec![c("a", Level::Pass), c("b", Level::Warn)]);
        assert_eq!(
            r.summary,
            Summary {
                pass: 1,
                warn: 1,
                fail: 0
            }
        );
        assert_eq!(r.exit_code(), 0);
        let r = Report::new("t", vec![c("a", Level::Fail), c("b", Level::Warn)]);
        assert_eq!(r.exit_code(), 1);
    }

    #[test]
    fn json_shape_is_stable() {
        let r = Report::new("the local engine", vec![c("swap", Level::Warn)]);
        let v: serde_json::Value = serde_json::from_str(&r.json()).unwrap();
        assert_eq!(
            v,
            serde_json::json!({
                "target": "the local engine",
                "checks": [{"name": "swap", "level": "warn", "detail": "swap detail", "fix": "do it"}],
                "summary": {"pass": 0, "warn": 1, "fail": 0}
            })
        );
    }

    #[test]
    fn table_names_every_check() {
        let r = Report::new("t", vec![c("swap", Level::Warn), c("nofile", Level::Pass)]);
        let out = r.table();
        assert!(out.contains("swap") && out.contains("WARN") && out.contains("do it"));
        assert!(out.contains("nofile") && out.contains("PASS"));
        assert!(out.ends_with("1 pass, 1 warn, 0 fail\n"));
    }
}
