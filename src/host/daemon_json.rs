//! The Docker daemon's configuration: exectl's keys (ansible-free/docker/daemon.json) merged into the
//! host's own /etc/docker/daemon.json without losing the user's other keys. Done here rather than on the
//! host, which may have neither jq nor python3; tune.sh is given the merged file to install.

use serde_json::{Map, Value};

/// The merged file, and for each of exectl's top-level keys what the host has and what it will have.
#[derive(Debug, Clone, PartialEq)]
pub struct Merge {
    /// What to install: the host's bytes unchanged when every key is already as wanted (so that tune.sh
    /// sees the same file and keeps it), else the merged object, pretty-printed.
    pub text: String,
    pub keys: Vec<KeyDiff>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct KeyDiff {
    pub key: String,
    /// None when the host's file lacks the key (or there is no file).
    pub current: Option<Value>,
    pub wanted: Value,
}

impl KeyDiff {
    pub fn differs(&self) -> bool {
        self.current.as_ref() != Some(&self.wanted)
    }
}

impl Merge {
    pub fn changed(&self) -> bool {
        self.keys.iter().any(KeyDiff::differs)
    }
}

/// Merge `wanted` into `current` (the host's file, None when absent): objects merge key by key at every
/// depth (like jq's `*`), anything else is replaced. So `default-ulimits.nofile` is set and a user's
/// `default-ulimits.nproc` or `log-driver` stays. An error when the host's file is not a JSON object.
pub fn merge(current: Option<&str>, wanted: &str) -> Result<Merge, String> {
    let wanted: Value =
        serde_json::from_str(wanted).map_err(|e| format!("exectl's daemon.json: {e}"))?;
    let Value::Object(wanted_map) = &wanted else {
        return Err("exectl's daemon.json is not a JSON object".into());
    };
    let base = match current {
        None => Value::Object(Map::new()),
        Some(t) if t.trim().is_empty() => Value::Object(Map::new()),
        Some(t) => serde_json::from_str(t).map_err(|e| format!("not valid JSON ({e})"))?,
    };
    if !base.is_object() {
        return Err("not a JSON object".into());
    }
    let mut merged = base.clone();
    deep_merge(&mut merged, &wanted);
    let keys: Vec<KeyDiff> = wanted_map
        .keys()
        .map(|k| KeyDiff {
            key: k.clone(),
            current: base.get(k).cloned(),
            wanted: merged[k].clone(),
        })
        .collect();
    let text = match current {
        Some(t) if !keys.iter().any(KeyDiff::differs) => t.to_string(),
        _ => serde_json::to_string_pretty(&merged).expect("a Value prints") + "\n",
    };
    Ok(Merge { text, keys })
}

fn deep_merge(base: &mut Value, over: &Value) {
    match (base, over) {
        (Value::Object(b), Value::Object(o)) => {
            for (k, v) in o {
                match b.get_mut(k) {
                    Some(slot) if slot.is_object() && v.is_object() => deep_merge(slot, v),
                    _ => {
                        b.insert(k.clone(), v.clone());
                    }
                }
            }
        }
        (b, o) => *b = o.clone(),
    }
}

/// `wanted` with its `default-ulimits.nofile` no higher than `max` (the most open files a container may
/// have on this host: the engine's hard limit and fs.nr_open), and a note saying so when it was lowered.
/// A default above it makes every container that sets no ulimits of its own fail to start ("error
/// setting rlimit type 7: operation not permitted": measured on a 20000-file engine with 1048576).
pub fn capped_nofile(wanted: &str, max: Option<u64>) -> Result<(String, Option<String>), String> {
    let mut v: Value =
        serde_json::from_str(wanted).map_err(|e| format!("exectl's daemon.json: {e}"))?;
    let (Some(max), Some(nofile)) = (max, v.pointer_mut("/default-ulimits/nofile")) else {
        return Ok((wanted.to_string(), None));
    };
    let mut lowered = None;
    for key in ["Soft", "Hard"] {
        if let Some(n) = nofile.get(key).and_then(Value::as_u64).filter(|n| *n > max) {
            lowered = Some(n);
            nofile[key] = Value::from(max);
        }
    }
    let Some(was) = lowered else {
        return Ok((wanted.to_string(), None));
    };
    let note = format!(
        "default-ulimits nofile is {max}, not exectl's {was}: the engine here allows a container at most {max} open          files (dockerd's hard limit and fs.nr_open), and a default above that makes every container that sets          no ulimits fail to start (\"error setting rlimit type 7\"). For more, raise dockerd's limit          (LimitNOFILE= in docker.service, or `ulimit -Hn` where it is started) and fs.nr_open, restart dockerd,          then run host tune again"
    );
    Ok((
        serde_json::to_string_pretty(&v).expect("a Value prints") + "\n",
        Some(note),
    ))
}

/// A value as one line for reports: compact JSON, or `absent`.
pub fn show(v: Option<&Value>) -> String {
    v.map_or_else(|| "absent".to_string(), |v| v.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const WANTED: &str = r#"{"default-ulimits": {"nofile": {"Name": "nofile", "Soft": 1048576, "Hard": 1048576}},
        "userland-proxy": false}"#;

    fn value(text: &str) -> Value {
        serde_json::from_str(text).unwrap()
    }

    #[test]
    fn no_file_gets_exactly_the_wanted_keys() {
        let m = merge(None, WANTED).unwrap();
        assert_eq!(value(&m.text), value(WANTED));
        assert!(m.changed());
        assert_eq!(m.keys.len(), 2);
        assert!(m.keys.iter().all(|k| k.current.is_none()));
    }

    #[test]
    fn the_users_other_keys_stay() {
        let host = r#"{"log-driver": "local", "userland-proxy": true,
            "default-ulimits": {"nproc": {"Name": "nproc", "Soft": 4096, "Hard": 8192},
                                "nofile": {"Name": "nofile", "Soft": 1024, "Hard": 4096}}}"#;
        let m = merge(Some(host), WANTED).unwrap();
        assert_eq!(
            value(&m.text),
            json!({"log-driver": "local", "userland-proxy": false,
                   "default-ulimits": {"nproc": {"Name": "nproc", "Soft": 4096, "Hard": 8192},
                                       "nofile": {"Name": "nofile", "Soft": 1048576, "Hard": 1048576}}})
        );
        let proxy = m.keys.iter().find(|k| k.key == "userland-proxy").unwrap();
        assert_eq!(proxy.current, Some(json!(true)));
        assert_eq!(proxy.wanted, json!(false));
        assert!(m.keys.iter().all(KeyDiff::differs));
    }

    #[test]
    fn a_file_already_as_wanted_is_kept_byte_for_byte() {
        let host = "{ \"userland-proxy\":false, \"debug\": true,\n \"default-ulimits\": {\"nofile\": {\"Hard\": 1048576, \"Name\": \"nofile\", \"Soft\": 1048576}} }";
        let m = merge(Some(host), WANTED).unwrap();
        assert!(!m.changed());
        assert_eq!(m.text, host);
        // Merging the merged file again changes nothing either (idempotent).
        let once = merge(Some("{\"debug\": true}"), WANTED).unwrap();
        let twice = merge(Some(&once.text), WANTED).unwrap();
        assert!(!twice.changed());
        assert_eq!(twice.text, once.text);
    }

    #[test]
    fn an_empty_file_is_an_empty_object_and_a_broken_one_is_refused() {
        assert!(merge(Some("  \n"), WANTED).unwrap().changed());
        assert!(merge(Some("{\"a\": "), WANTED)
            .unwrap_err()
            .contains("not valid JSON"));
        assert_eq!(merge(Some("[1]"), WANTED).unwrap_err(), "not a JSON object");
    }

    #[test]
    fn the_default_nofile_is_capped_at_what_the_engine_allows() {
        let (text, note) = capped_nofile(WANTED, Some(20_000)).unwrap();
        let v = value(&text);
        assert_eq!(v["default-ulimits"]["nofile"]["Soft"], 20_000);
        assert_eq!(v["default-ulimits"]["nofile"]["Hard"], 20_000);
        assert_eq!(v["userland-proxy"], false);
        let note = note.unwrap();
        assert!(
            note.contains("is 20000, not exectl's 1048576") && note.contains("LimitNOFILE"),
            "{note}"
        );
        // Room enough, or nothing known: exectl's file as it is.
        assert_eq!(
            capped_nofile(WANTED, Some(1 << 20)).unwrap(),
            (WANTED.to_string(), None)
        );
        assert_eq!(
            capped_nofile(WANTED, None).unwrap(),
            (WANTED.to_string(), None)
        );
    }

    #[test]
    fn shows_values_on_one_line() {
        assert_eq!(show(None), "absent");
        assert_eq!(show(Some(&json!({"a": [1, 2]}))), r#"{"a":[1,2]}"#);
    }
}
