//! A sweep file (`--sweep-file FILE`, YAML): the sweep's own flags as a file, to keep beside the results.
//!
//! ```yaml
//! vary:
//!   nginx: [baseline-default, tuned-ip-hash, tuned-least-conn]
//! repeat: 3
//! levels: [1000]             # or find_capacity: {from: 100, to: 20000, precision: 10%}
//! ```
//! Each value stays text, as the flag's would, and is checked by the same code (the flags win).

use serde::Deserialize;
use serde_norway::Value;

use crate::error::UsageError;

#[derive(Debug, Clone, Default, PartialEq)]
pub struct SweepFile {
    /// `VAR=V1,V2,...`, as `--vary` gives it, in the file's order.
    pub vary: Vec<String>,
    pub matrix: bool,
    pub repeat: Option<String>,
    pub levels: Option<String>,
    pub from: Option<String>,
    pub to: Option<String>,
    pub precision: Option<String>,
    pub find_capacity: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Raw {
    #[serde(default)]
    vary: serde_norway::Mapping,
    #[serde(default)]
    matrix: bool,
    repeat: Option<Value>,
    levels: Option<Value>,
    find_capacity: Option<Capacity>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Capacity {
    from: Option<Value>,
    to: Option<Value>,
    precision: Option<Value>,
}

/// A scalar as text, a list as its items joined by commas.
fn text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Sequence(items) => items
            .iter()
            .map(text)
            .collect::<Option<Vec<_>>>()
            .map(|v| v.join(",")),
        _ => None,
    }
}

pub fn parse(path: &str, body: &str) -> Result<SweepFile, UsageError> {
    let bad = |field: &str, problem: String| {
        UsageError::new(
            format!("{field} (in {path})"),
            "",
            problem,
            "see README's sweep section for the file's keys: vary, matrix, repeat, levels, find_capacity",
        )
    };
    let raw: Raw = serde_norway::from_str(body).map_err(|e| bad("--sweep-file", e.to_string()))?;
    let mut vary = Vec::new();
    for (k, v) in &raw.vary {
        let key = text(k).ok_or_else(|| bad("vary", "a key that is not text".into()))?;
        let values =
            text(v).ok_or_else(|| bad(&format!("vary.{key}"), "give a list of values".into()))?;
        vary.push(format!("{key}={values}"));
    }
    let scalar = |field: &str, v: &Option<Value>| -> Result<Option<String>, UsageError> {
        v.as_ref()
            .map(|v| text(v).ok_or_else(|| bad(field, "give a number".into())))
            .transpose()
    };
    let (from, to, precision) = match &raw.find_capacity {
        Some(c) => (
            scalar("find_capacity.from", &c.from)?,
            scalar("find_capacity.to", &c.to)?,
            scalar("find_capacity.precision", &c.precision)?,
        ),
        None => (None, None, None),
    };
    Ok(SweepFile {
        vary,
        matrix: raw.matrix,
        repeat: scalar("repeat", &raw.repeat)?,
        levels: scalar("levels", &raw.levels)?,
        from,
        to,
        precision,
        find_capacity: raw.find_capacity.is_some(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_says_what_the_flags_say() {
        let f = parse(
            "s.yaml",
            "vary:\n  nginx: [baseline-default, tuned-ip-hash]\nrepeat: 3\nlevels: [100, 500]\n",
        )
        .unwrap();
        assert_eq!(f.vary, ["nginx=baseline-default,tuned-ip-hash"]);
        assert_eq!(f.repeat.as_deref(), Some("3"));
        assert_eq!(f.levels.as_deref(), Some("100,500"));
        let c = parse(
            "s.yaml",
            "vary: {instances: [1, 2]}\nfind_capacity: {from: 100, to: 2000, precision: 10%}\n",
        )
        .unwrap();
        assert!(c.find_capacity);
        assert_eq!(c.vary, ["instances=1,2"]);
        assert_eq!(
            (c.from.as_deref(), c.to.as_deref()),
            (Some("100"), Some("2000"))
        );
        assert_eq!(c.precision.as_deref(), Some("10%"));
        let e = parse("s.yaml", "vary: {nginx: [a]}\nrepeats: 3\n").unwrap_err();
        assert!(
            e.field.contains("s.yaml") && e.problem.contains("repeats"),
            "{e}"
        );
    }
}
