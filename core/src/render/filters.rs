//! Quoting filters: tera autoescapes only HTML/XML, so every value a template interpolates into YAML,
//! nginx or an env file goes through one of these. A value a format cannot carry safely is refused.

use std::collections::HashMap;
use tera::{Result, Value};

fn text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// A YAML double-quoted scalar: every character survives a round trip.
pub fn yaml_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\x{:02x}", c as u32))
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// `yaml_str`: a YAML string for a file no one interpolates (Traefik).
pub fn yaml_str(v: &Value, _: &HashMap<String, Value>) -> Result<Value> {
    Ok(Value::String(yaml_quote(&text(v))))
}

/// `compose_str`: a YAML string in a compose file, where `$` starts an interpolation and must be doubled.
pub fn compose_str(v: &Value, _: &HashMap<String, Value>) -> Result<Value> {
    Ok(Value::String(yaml_quote(&text(v).replace('$', "$$"))))
}

/// `nginx_word`: a bare nginx token. nginx expands `$` even inside quotes and has no escape for it in
/// older versions, so anything beyond a conservative character set is refused.
pub fn nginx_word(v: &Value, _: &HashMap<String, Value>) -> Result<Value> {
    let s = text(v);
    if s.is_empty()
        || !s
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._:-/".contains(c))
    {
        return Err(tera::Error::msg(format!(
            "value {s:?} cannot be written safely into nginx.conf (allowed: letters, digits, . _ : - /)"
        )));
    }
    Ok(Value::String(s))
}

/// `env_value`: a value in a .env file. Parsers of .env disagree on quoting, so only values that need no
/// quoting at all are accepted (secrets are hex).
pub fn env_value(v: &Value, _: &HashMap<String, Value>) -> Result<Value> {
    let s = text(v);
    if !s
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "._-@:/+=".contains(c))
    {
        return Err(tera::Error::msg(format!(
            "a value cannot be written safely into .env (allowed: letters, digits, . _ - @ : / + =); length {}",
            s.len()
        )));
    }
    Ok(Value::String(s))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args() -> HashMap<String, Value> {
        HashMap::new()
    }

    #[test]
    fn yaml_round_trips_hostile_values() {
        for s in [
            "a \"b\" $c # d\ne",
            "'single' \\ back",
            "tab\there",
            ": colon",
            "- dash",
            "\u{1}",
        ] {
            let quoted = yaml_quote(s);
            let back: String = serde_norway::from_str(&quoted).unwrap();
            assert_eq!(back, s);
        }
    }

    #[test]
    fn compose_doubles_dollars() {
        let v = compose_str(&Value::String("$HOME".into()), &args()).unwrap();
        assert_eq!(v, Value::String("\"$$HOME\"".into()));
    }

    #[test]
    fn nginx_and_env_refuse_unsafe() {
        assert!(nginx_word(&Value::String("a;b".into()), &args()).is_err());
        assert!(nginx_word(&Value::String("$host".into()), &args()).is_err());
        assert!(nginx_word(&Value::String("app-1:8080".into()), &args()).is_ok());
        assert!(env_value(&Value::String("a b".into()), &args()).is_err());
        assert!(env_value(&Value::String("0a9f".into()), &args()).is_ok());
    }
}
