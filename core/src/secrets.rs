//! The stack's secrets as values: their names, generated once (random), read back from the env-file
//! form they are stored in. Pure; where they are kept is `crate::secrets`.

use rand::RngCore;
use std::collections::BTreeMap;

/// The names, in the order .env lists them.
pub const NAMES: [&str; 5] = [
    "APP_SECRET",
    "API_JWT_SECRET",
    "DB_PASSWORD",
    "DB_ROOT_PASSWORD",
    "ADMIN_PASSWORD",
];

#[derive(Clone, PartialEq, Eq)]
pub struct Secrets(BTreeMap<String, String>);

// Debug must not leak values into logs or panics.
impl std::fmt::Debug for Secrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Secrets({:?})", self.0.keys().collect::<Vec<_>>())
    }
}

impl Secrets {
    pub fn generate() -> Secrets {
        let mut rng = rand::rngs::OsRng;
        Secrets(
            NAMES
                .iter()
                .map(|n| {
                    let mut b = [0u8; 24];
                    rng.fill_bytes(&mut b);
                    (n.to_string(), hex::encode(b))
                })
                .collect(),
        )
    }

    pub fn get(&self, name: &str) -> &str {
        self.0.get(name).map(String::as_str).unwrap_or("")
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        NAMES.iter().map(move |n| (*n, self.get(n)))
    }

    /// Parse KEY=VALUE lines; missing names are filled in by `complete`.
    pub fn parse(text: &str) -> Secrets {
        Secrets(
            text.lines()
                .filter_map(|l| l.split_once('='))
                .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
                .collect(),
        )
    }

    /// Add any secret a newer exectl needs that an older state file lacks. Returns true if one was added.
    pub fn complete(&mut self) -> bool {
        let fresh = Secrets::generate();
        let mut added = false;
        for n in NAMES {
            if self.get(n).is_empty() {
                self.0.insert(n.to_string(), fresh.get(n).to_string());
                added = true;
            }
        }
        added
    }

    pub fn to_env_text(&self) -> String {
        self.iter().map(|(k, v)| format!("{k}={v}\n")).collect()
    }
}

/// `text` (a container's log lines, carried into error messages and a bench's incidents) with the
/// credentials in it cut to `…`: the value of a `token=` parameter, the word after `Bearer`, and any
/// word shaped like a JWT. nginx's error log quotes the request line, and the app's WebSocket URL
/// carries the user's JWT in its query (`/yjs/project-…?token=…`).
pub fn redact_credentials(text: &str) -> String {
    const CUT: &str = "…";
    let delimiter = |c: char| c.is_whitespace() || "\"'&?,;()<>[]{}`".contains(c);
    let mut out = String::with_capacity(text.len());
    let mut after_bearer = false;
    let flush = |word: &str, out: &mut String, after_bearer: &mut bool| {
        if word.is_empty() {
            return;
        }
        let lower = word.to_ascii_lowercase();
        if *after_bearer {
            out.push_str(CUT);
            *after_bearer = false;
        } else if let Some(i) = lower.find("token=").or_else(|| lower.find("token:")) {
            out.push_str(&word[..i + "token=".len()]);
            if word.len() > i + "token=".len() {
                out.push_str(CUT);
            }
        } else if is_jwt(word) {
            out.push_str(CUT);
        } else {
            out.push_str(word);
            *after_bearer = lower == "bearer";
        }
    };
    let mut start = 0;
    for (i, c) in text.char_indices() {
        if delimiter(c) {
            flush(&text[start..i], &mut out, &mut after_bearer);
            out.push(c);
            start = i + c.len_utf8();
        }
    }
    flush(&text[start..], &mut out, &mut after_bearer);
    out
}

/// Three base64url parts joined by dots, the first a JSON header (`eyJ` is `{"` encoded).
fn is_jwt(word: &str) -> bool {
    let parts: Vec<&str> = word.split('.').collect();
    word.starts_with("eyJ")
        && parts.len() == 3
        && parts[..2].iter().all(|p| p.len() >= 4)
        && parts.iter().all(|p| {
            p.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '=')
        })
}

#[cfg(test)]
mod redact_tests {
    use super::redact_credentials;

    const JWT: &str =
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOjQyLCJlbWFpbCI6ImJAZSJ9.c2lnbmF0dXJlLXNpZ25hdHVyZQ";

    #[test]
    fn an_nginx_error_line_keeps_its_words_and_loses_the_token() {
        let line = format!(
            "2026/12/06 22:40:01 [error] 29#29: *1043 upstream prematurely closed connection while reading response header from upstream, client: 172.18.0.1, server: , request: \"GET /yjs/project-6a1f?token={JWT} HTTP/1.1\", upstream: \"http://172.18.0.4:8080/yjs/project-6a1f?token={JWT}\", host: \"127.0.0.1:20873\""
        );
        let r = redact_credentials(&line);
        assert!(!r.contains(JWT) && !r.contains("eyJ"), "{r}");
        assert_eq!(
            r,
            line.replace(&format!("token={JWT}"), "token=…"),
            "only the token's value changed"
        );
    }

    #[test]
    fn a_bearer_a_json_token_and_a_bare_jwt_are_cut_and_plain_text_is_not() {
        let r = redact_credentials(&format!(
            "Authorization: Bearer abc.def-123\n{{\"access_token\": \"{JWT}\", \"user\": 1}}\nsaw {JWT} here"
        ));
        assert_eq!(
            r,
            "Authorization: Bearer …\n{\"access_token\": \"…\", \"user\": 1}\nsaw … here"
        );
        let plain = "[notice] 1#1: signal process started; worker_connections are not enough: 1024 (v1.2.3)";
        assert_eq!(redact_credentials(plain), plain);
        assert_eq!(redact_credentials("ws ?token= empty"), "ws ?token= empty");
    }
}
