//! The stack's secrets as values: their names, generated once (random), read back from the env-file
//! form they are stored in. Pure; where they are kept is `crate::secrets`. Also the one screen for a
//! credential given as a plain setting, and the cutting of credentials out of logs.

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

/// The parts of a name that mark a credential, matched anywhere in it and in any case: `SMTP_PASS`,
/// `DB_PASSWORD`, `API_KEY`, `OAUTH_CLIENT_SECRET`, `GITHUB_TOKEN`, `AWS_CREDENTIALS`, `MAILER_DSN`.
/// Broad on purpose: a false alarm costs the user one line (`secrets:`, `--set-secret`), a miss puts
/// a password in every record and report.
pub const CREDENTIAL_MARKS: [&str; 6] = ["PASS", "SECRET", "TOKEN", "KEY", "CREDENTIAL", "DSN"];

/// Why a plain `key=value` setting looks like a credential (None: it does not): its name has one of
/// `CREDENTIAL_MARKS` in it, or its value is a URL with a password in it.
pub fn credential(key: &str, value: &str) -> Option<String> {
    let upper = key.to_ascii_uppercase();
    if let Some(mark) = CREDENTIAL_MARKS.iter().find(|m| upper.contains(*m)) {
        return Some(format!("its name has {mark} in it"));
    }
    url_with_password(value)
        .then(|| "its value is a URL with a password in it (scheme://user:password@host)".into())
}

/// A `scheme://user:password@host` anywhere in `value`: the userinfo (RFC 3986: before the last `@`
/// of the authority, which ends at the first `/`, `?` or `#`) holds a `:` and a password after it.
pub fn url_with_password(value: &str) -> bool {
    value.match_indices("://").any(|(i, _)| {
        let rest = &value[i + 3..];
        let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
        authority
            .rsplit_once('@')
            .and_then(|(user, _)| user.split_once(':'))
            .is_some_and(|(_, password)| !password.is_empty())
    })
}

/// A plain setting `key=value` given at `field` (a campaign's `set:`, a sweep's `--set` or `--vary`)
/// refused when it looks like a credential: such values are written into records and reports. The
/// error names the key, never the value; `fix` says where the secret goes instead.
pub fn refuse_credential(
    field: &str,
    key: &str,
    value: &str,
    fix: &str,
) -> Result<(), crate::error::UsageError> {
    match credential(key, value) {
        None => Ok(()),
        Some(why) => Err(crate::error::UsageError::new(
            field,
            format!("{key}=<redacted>"),
            format!("{key} looks like a credential ({why}), and a plain setting is written into records and reports"),
            fix,
        )),
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

#[cfg(test)]
mod credential_tests {
    use super::{credential, refuse_credential, url_with_password};

    #[test]
    fn a_credential_is_told_by_its_name_or_a_password_in_its_url() {
        for key in [
            "SMTP_PASS",
            "smtp_password",
            "API_KEY",
            "MAILER_DSN",
            "OAUTH_CLIENT_SECRET",
            "GITHUB_TOKEN",
            "AWS_CREDENTIALS",
            "DBPASSWD",
        ] {
            assert!(credential(key, "x").is_some(), "{key}");
        }
        assert!(credential("MAILER_URL", "smtp://u:pw@mail.example:25").is_some());
        // The settings the shipped campaigns and the tests give stay plain.
        for (key, value) in [
            ("STANDIN_ROOM_CLEANUP_MS", "500"),
            ("STANDIN_FAULT", "leak-on-close"),
            ("DB_POOL_MAX", "50"),
            ("BASE_PATH", "/exe"),
            ("PUBLIC_URL", "http://user@host:8080/a:b?mail=a@b"),
        ] {
            assert_eq!(credential(key, value), None, "{key}={value}");
        }
    }

    #[test]
    fn a_url_has_a_password_only_in_its_userinfo() {
        for (v, has) in [
            ("postgres://app:s3cret@db:5432/exe", true),
            ("redis://:pw@redis:6379", true),
            ("see smtp://u:p@h and more", true),
            ("https://user@host/path", false),
            ("https://u:@host", false),
            ("http://host:8080/path?email=a@b:c", false),
            ("user:pw@host", false),
        ] {
            assert_eq!(url_with_password(v), has, "{v}");
        }
    }

    #[test]
    fn a_refusal_names_the_key_and_never_the_value() {
        let e = refuse_credential("--set", "MAILER_DSN", "smtp://u:hunter2@h", "use secrets:")
            .unwrap_err();
        let text = e.to_string();
        assert!(
            text.contains("MAILER_DSN=<redacted>") && text.contains("DSN"),
            "{text}"
        );
        assert!(!text.contains("hunter2"), "{text}");
        assert!(refuse_credential("--set", "DB_POOL_MAX", "50", "").is_ok());
    }
}
