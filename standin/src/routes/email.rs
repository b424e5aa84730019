//! The app's server-side e-mail check: Elysia's `format: 'email'` is ajv-formats' full pattern
//! (elysia src/formats.ts), compiled here as the app writes it. exectl checks e-mails on its own side
//! with its own code (prepare's plan); keeping the two apart lets a bug in either fail a test.

use std::sync::OnceLock;

use regex::Regex;

/// Elysia's pattern; `(?i-u)`: JavaScript's `/i` without `u` folds ASCII letters only.
const PATTERN: &str = r"(?i-u)^[a-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[a-z0-9!#$%&'*+/=?^_`{|}~-]+)*@(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\.)+[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$";

pub fn is_email(s: &str) -> bool {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| Regex::new(PATTERN).expect("the app's pattern compiles"))
        .is_match(s)
}

#[cfg(test)]
mod tests {
    use super::is_email;

    #[test]
    fn the_apps_email_format() {
        for ok in [
            "a@b.co",
            "bench-user-0@exelearning.net",
            "x.y+z@sub.example.org",
            "A.B@EXAMPLE.ORG",
            "a@b.c",
            "a-@b.co",
            "a@1.2",
        ] {
            assert!(is_email(ok), "{ok}");
        }
        for bad in [
            "",
            "a",
            "a@b",
            "@b.co",
            "a@.co",
            "a@b..co",
            "a b@c.de",
            "a@-b.co",
            "a@b-.co",
            "a..b@c.de",
            ".a@b.co",
            "a.@b.co",
            "a@b.co.",
            "a@b_c.de",
            "é@b.co",
            "\u{17f}@b.co",
            "a@\u{212a}.co",
            "a@b.co\n",
        ] {
            assert!(!is_email(bad), "{bad:?}");
        }
    }
}
