//! A database client's failure, as an error that never quotes what was seeded. The clients echo values:
//! mariadb prints the whole statement it lost (a batch of thousands of emails and the accounts' bcrypt
//! hash) between `--------------` lines, psql a `LINE n:` excerpt, a `DETAIL: Key (email)=(…)` or a
//! `Failing row contains (…)`, COPY a `CONTEXT: … line n: "…"`. What is kept: the client's own words, its
//! error codes and SQL names, and the script line it named (so the runner can name the statement and the
//! rows instead).

use exectl_core::spec::Db;
use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientFailed {
    pub db: Db,
    pub container: String,
    pub exit_code: i64,
    /// The client's message, values taken out (`redact`).
    pub message: String,
    /// The line of the script the client named, if it did.
    pub line: Option<usize>,
}

impl ClientFailed {
    pub fn new(db: Db, container: &str, exit_code: i64, stderr: &str) -> ClientFailed {
        ClientFailed {
            db,
            container: container.to_string(),
            exit_code,
            message: redact(stderr),
            line: script_line(stderr),
        }
    }
}

impl fmt::Display for ClientFailed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} client in {} failed (exit {})",
            self.db.name(),
            self.container,
            self.exit_code
        )?;
        match self.message.as_str() {
            "" => Ok(()),
            m => write!(f, ": {m}"),
        }
    }
}

impl std::error::Error for ClientFailed {}

/// Lines of the client's message kept at most, and characters of each.
const MAX_LINES: usize = 6;
const MAX_LINE: usize = 300;

/// The client's stderr without any value: echoed statements and query excerpts dropped, quoted text
/// other than a plain SQL name replaced by `…`, a row's contents by `(…)`, and emails, uuids and bcrypt
/// hashes outside quotes replaced too. Short: a few lines.
pub fn redact(stderr: &str) -> String {
    let mut out = Vec::new();
    let mut echoed = false;
    for line in stderr.lines() {
        let t = line.trim();
        // mariadb's echo of the statement it was running, between two such lines.
        if t.len() >= 8 && t.chars().all(|c| c == '-') {
            echoed = !echoed;
            continue;
        }
        // psql's excerpt of the query and the caret under it.
        if echoed
            || t.is_empty()
            || t.starts_with("LINE ")
            || t.chars().all(|c| c == '^' || c == ' ')
        {
            continue;
        }
        let mut l = unquoted(t);
        if let Some(i) = l.find("row contains (") {
            l.truncate(i + "row contains ".len());
            l.push_str("(…)");
        }
        let mut l = l
            .split(' ')
            .map(|w| if is_value(w) { "…" } else { w })
            .collect::<Vec<_>>()
            .join(" ");
        if l.chars().count() > MAX_LINE {
            l = l.chars().take(MAX_LINE).collect::<String>() + "…";
        }
        out.push(l);
        if out.len() == MAX_LINES {
            out.push("…".into());
            break;
        }
    }
    out.join("; ")
}

/// Quoted text ('…', "…", and psql's `=(…)` key values) replaced by `…`, unless it is a plain SQL name
/// (`users_email_key`, `exelearning.users`): those say where, never what.
fn unquoted(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    while let Some(i) = rest.find(['\'', '"', '=']) {
        let (before, from) = rest.split_at(i);
        out.push_str(before);
        let (open, close) = match from.as_bytes()[0] {
            b'=' if from.starts_with("=(") => ("=(", ')'),
            b'=' => {
                out.push('=');
                rest = &from[1..];
                continue;
            }
            b'\'' => ("'", '\''),
            _ => ("\"", '"'),
        };
        let inner = &from[open.len()..];
        match inner.find(close) {
            Some(j) => {
                let text = &inner[..j];
                out.push_str(open);
                out.push_str(if is_name(text) { text } else { "…" });
                out.push(close);
                rest = &inner[j + 1..];
            }
            // Unclosed on this line: the rest is the value.
            None => {
                out.push_str(open);
                out.push('…');
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
}

fn is_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 64
        && s.chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
}

/// A word that is a seeded value: an email, a uuid, a bcrypt hash.
fn is_value(w: &str) -> bool {
    let w = w.trim_matches(|c: char| ",;:()[]".contains(c));
    let uuid = w.len() == 36
        && w.char_indices().all(|(i, c)| {
            if [8, 13, 18, 23].contains(&i) {
                c == '-'
            } else {
                c.is_ascii_hexdigit()
            }
        });
    w.contains('@') || uuid || w.starts_with("$2")
}

/// The script line a client named: psql `psql:<stdin>:12: ERROR`, mariadb `ERROR 1146 (42S02) at line
/// 12`, sqlite3 `Runtime error near line 12`. psql's first: its COPY context names a data line too.
pub fn script_line(stderr: &str) -> Option<usize> {
    let number = |s: &str| -> Option<usize> {
        let digits: String = s.chars().take_while(char::is_ascii_digit).collect();
        digits.parse().ok()
    };
    if let Some(i) = stderr.find("<stdin>:") {
        return number(&stderr[i + "<stdin>:".len()..]);
    }
    ["at line ", "near line "]
        .iter()
        .find_map(|p| stderr.find(p).and_then(|i| number(&stderr[i + p.len()..])))
}

#[cfg(test)]
mod tests {
    use super::*;

    const HASH: &str = "$2b$04$smZaU0SUChyrbbtgYt5xc.Ycwy6YxpCZLUzLtIvGuO8P1gomlHwN6";

    #[test]
    fn mariadb_echoes_the_lost_statement() {
        let stderr = format!(
            "--------------\nINSERT IGNORE INTO users (email, password)\nWITH v (email) AS (VALUES\n('m3-95000@x.org'),\n('m3-95001@x.org'))\nSELECT v.email, '{HASH}' FROM v\n--------------\n\nERROR 2013 (HY000) at line 15017: Lost connection to server during query\n"
        );
        let e = ClientFailed::new(Db::Mariadb, "exectl-s-mariadb", 137, &stderr);
        assert_eq!(
            e.to_string(),
            "mariadb client in exectl-s-mariadb failed (exit 137): ERROR 2013 (HY000) at line 15017: Lost connection to server during query"
        );
        assert_eq!(e.line, Some(15017));
        let dup = redact("ERROR 1062 (23000) at line 3: Duplicate entry 'a@x.org' for key 'email'");
        assert_eq!(
            dup,
            "ERROR 1062 (23000) at line 3: Duplicate entry '…' for key 'email'"
        );
    }

    #[test]
    fn psql_details_and_contexts_lose_their_values() {
        let stderr = format!(
            "psql:<stdin>:9: ERROR:  new row for relation \"users\" violates check constraint \"no_seven\"\n\
DETAIL:  Failing row contains (8, bench-user-7@exelearning.net, {HASH}, [\"ROLE_USER\"], 1).\n\
psql:<stdin>:12: ERROR:  duplicate key value violates unique constraint \"users_email_key\"\n\
DETAIL:  Key (email)=(bench-user-3@exelearning.net) already exists.\n\
CONTEXT:  COPY exectl_seed, line 3: \"0b8e6f6e-8a43-4f55-9d3c-2f1b7b0a9e11\tbench-project-2\"\n\
LINE 2: SELECT v.email, '{HASH}', '[\"ROLE_USER\"]'\n\
                        ^\n"
        );
        let r = redact(&stderr);
        for value in [
            HASH,
            "@exelearning.net",
            "0b8e6f6e",
            "bench-project-2",
            "SELECT",
        ] {
            assert!(!r.contains(value), "{value} in {r}");
        }
        assert!(r.contains("check constraint \"no_seven\""), "{r}");
        assert!(r.contains("Failing row contains (…)"), "{r}");
        assert!(r.contains("Key (email)=(…) already exists"), "{r}");
        assert!(r.contains("unique constraint \"users_email_key\""), "{r}");
        assert_eq!(script_line(&stderr), Some(9));
    }

    #[test]
    fn bare_values_and_long_messages() {
        assert_eq!(
            redact("error near bench-user-1@x.org and 0b8e6f6e-8a43-4f55-9d3c-2f1b7b0a9e11 and $2b$10$abc"),
            "error near … and … and …"
        );
        let many = "x\n".repeat(50);
        assert_eq!(redact(&many).split("; ").count(), MAX_LINES + 1);
        let long = redact(&"y".repeat(10_000));
        assert!(long.chars().count() <= MAX_LINE + 1, "{}", long.len());
        assert_eq!(
            script_line("Runtime error near line 40: database is locked (5)"),
            Some(40)
        );
        assert_eq!(
            script_line("server closed the connection unexpectedly"),
            None
        );
    }
}
