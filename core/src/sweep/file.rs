//! A sweep file (`--sweep-file FILE`, YAML): the sweep's own flags as a file, to keep beside the results.
//!
//! ```yaml
//! vary:
//!   nginx: [baseline-default, tuned-ip-hash, tuned-least-conn]
//! repeat: 3
//! levels: [1000]             # or find_capacity: {from: 100, to: 20000, precision: 10%}
//!                            # or find_room: {users: 1000, from: 2, to: 500, precision: 10%}
//! ```
//! Each value stays text, as the flag's would, and is checked by the same code (the flags win).

use std::path::Path;

use serde::Deserialize;
use serde_norway::Value;

use crate::error::UsageError;
use crate::spec::input::{at_line, unique_keys};
use crate::spec::yaml_tree::{self, Kind, Node};

#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, Deserialize)]
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
    /// `--find-room`: the search is over the room size (users per project), at `users` users at once.
    pub find_room: bool,
    pub users: Option<String>,
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
    find_room: Option<Room>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Capacity {
    from: Option<Value>,
    to: Option<Value>,
    precision: Option<Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Room {
    users: Option<Value>,
    from: Option<Value>,
    to: Option<Value>,
    precision: Option<Value>,
}

/// A scalar as text, a list as its items joined by commas.
fn text(v: &Value) -> Option<String> {
    joined(v, ",")
}

/// A scalar as text, a list as its items joined by `sep` (a campaign file's lists too).
pub(crate) fn joined(v: &Value, sep: &str) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Sequence(items) => items
            .iter()
            .map(|i| joined(i, sep))
            .collect::<Option<Vec<_>>>()
            .map(|v| v.join(sep)),
        _ => None,
    }
}

/// The file's shape, on its node tree so that a fault names its line: a key given twice (at the top,
/// under `vary` or `find_capacity`), and `levels` beside `find_capacity` (which would the sweep run?).
fn check_shape(path: &str, body: &str) -> Result<(), UsageError> {
    let Some(Node {
        kind: Kind::Map(pairs),
        ..
    }) = yaml_tree::parse(body)
    else {
        return Ok(()); // syntax errors and a top level that is not a mapping: serde_norway says so
    };
    let (field, path) = ("--sweep-file", Path::new(path));
    unique_keys(field, path, "", &pairs)?;
    for (k, v) in &pairs {
        if let (Some(name @ ("vary" | "find_capacity" | "find_room")), Kind::Map(entries)) =
            (k.text(), &v.kind)
        {
            unique_keys(field, path, &format!("{name}."), entries)?;
        }
    }
    let line = |name: &str| {
        pairs
            .iter()
            .find(|(k, v)| k.text() == Some(name) && !v.is_null())
            .map(|(k, _)| k.line)
    };
    let modes = ["levels", "find_capacity", "find_room"];
    let given: Vec<(&str, usize)> = modes.iter().filter_map(|m| Some((*m, line(m)?))).collect();
    if let [(a, la), (b, lb), ..] = given[..] {
        return Err(at_line(
            field,
            path,
            la.max(lb),
            format!("{a} (line {la}) and {b} (line {lb}) are both given: a sweep runs fixed levels, a capacity search or a room-size search, one of them"),
            "keep one of them (or give --levels, --find-capacity or --find-room on the command line, which wins)",
        ));
    }
    Ok(())
}

pub fn parse(path: &str, body: &str) -> Result<SweepFile, UsageError> {
    let body = yaml_tree::without_bom(body);
    check_shape(path, body)?;
    let bad = |field: &str, problem: String| {
        UsageError::new(
            format!("{field} (in {path})"),
            "",
            problem,
            "see README's sweep section for the file's keys: vary, matrix, repeat, levels, find_capacity, find_room",
        )
    };
    let raw: Raw = serde_norway::from_str(body).map_err(|e| bad("--sweep-file", e.to_string()))?;
    let mut vary = Vec::new();
    for (k, v) in &raw.vary {
        let key = text(k).ok_or_else(|| bad("vary", "a key that is not text".into()))?;
        let values =
            text(v).ok_or_else(|| bad(&format!("vary.{key}"), "give a list of values".into()))?;
        for value in values.split(',') {
            crate::secrets::refuse_credential(
                &format!("vary.{key} (in {path})"),
                &key,
                value,
                crate::sweep::vary::NOT_A_VARIABLE,
            )?;
        }
        vary.push(format!("{key}={values}"));
    }
    let scalar = |field: &str, v: &Option<Value>| -> Result<Option<String>, UsageError> {
        v.as_ref()
            .map(|v| text(v).ok_or_else(|| bad(field, "give a number".into())))
            .transpose()
    };
    let (from, to, precision, users) = match (&raw.find_capacity, &raw.find_room) {
        (Some(c), _) => (
            scalar("find_capacity.from", &c.from)?,
            scalar("find_capacity.to", &c.to)?,
            scalar("find_capacity.precision", &c.precision)?,
            None,
        ),
        (None, Some(r)) => (
            scalar("find_room.from", &r.from)?,
            scalar("find_room.to", &r.to)?,
            scalar("find_room.precision", &r.precision)?,
            scalar("find_room.users", &r.users)?,
        ),
        (None, None) => (None, None, None, None),
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
        find_room: raw.find_room.is_some(),
        users,
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
        let r = parse(
            "s.yaml",
            "vary: {env.STANDIN_FAULT: [none, slow-relay]}\nfind_room: {users: 400, from: 2, to: 200}\n",
        )
        .unwrap();
        assert!(r.find_room && !r.find_capacity);
        assert_eq!(
            (r.users.as_deref(), r.from.as_deref(), r.to.as_deref()),
            (Some("400"), Some("2"), Some("200"))
        );
        let e = parse("s.yaml", "vary: {nginx: [a]}\nrepeats: 3\n").unwrap_err();
        assert!(
            e.field.contains("s.yaml") && e.problem.contains("repeats"),
            "{e}"
        );
    }

    /// A key twice is named at its line; levels beside a search is ambiguous, named at both lines.
    #[test]
    fn twice_or_both_is_refused_at_its_line() {
        for (body, at, says) in [
            (
                "vary: {nginx: [a, b]}\nlevels: [10]\nlevels: [20]\n",
                "s.yaml:3",
                "levels is given twice (first on line 2)",
            ),
            (
                "vary:\n  nginx: [a, b]\n  nginx: [c]\nlevels: [10]\n",
                "s.yaml:3",
                "vary.nginx is given twice",
            ),
            (
                "vary: {cpus: [1, 2]}\nfind_capacity:\n  to: 100\n  to: 200\n",
                "s.yaml:4",
                "find_capacity.to is given twice",
            ),
            (
                "vary: {cpus: [1, 2]}\nlevels: [10, 20]\nfind_capacity: {to: 100}\n",
                "s.yaml:3",
                "levels (line 2) and find_capacity (line 3) are both given",
            ),
            (
                "vary: {cpus: [1, 2]}\nfind_room: {users: 40, to: 40}\nfind_capacity: {to: 100}\n",
                "s.yaml:3",
                "find_capacity (line 3) and find_room (line 2) are both given",
            ),
        ] {
            let e = parse("s.yaml", body).unwrap_err();
            assert_eq!(
                (e.field.as_str(), e.value.as_str()),
                ("--sweep-file", at),
                "{e}"
            );
            assert!(e.problem.contains(says), "{e}");
        }
        assert!(parse(
            "s.yaml",
            "vary: {cpus: [1]}\nlevels:\nfind_capacity: {to: 9}\n"
        )
        .is_ok());
    }
}
