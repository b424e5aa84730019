//! Reading the manifest `exectl prepare` wrote (the types and checks are `core::manifest`): who logs
//! in, with what password, into which project, and (with `--tokens`) a JWT minted offline for each
//! account. Every problem is bad input naming `--manifest`, the file and the value.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use exectl_core::error::UsageError;
use exectl_core::manifest::{self, ACCOUNTS_JSON, PROJECTS, TOKENS};
pub use exectl_core::manifest::{Account, Project, Role, TokenEntry};

/// A validated manifest. `tokens[i]` is the token of `accounts[i]` when read with tokens.
#[derive(Debug, Clone)]
pub struct Manifest {
    pub dir: PathBuf,
    pub accounts: Vec<Account>,
    pub projects: Vec<Project>,
    pub tokens: Option<Vec<String>>,
    /// The earliest `exp` (unix seconds) of the tokens read, of those that carry one.
    pub tokens_expire: Option<u64>,
}

/// A JWT's `exp` claim (unix seconds), if it is a JWT that has one. Not verified: the app does that.
pub fn token_exp(token: &str) -> Option<u64> {
    use base64::Engine as _;
    let payload = token.split('.').nth(1)?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload.trim_end_matches('='))
        .ok()?;
    let claims: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
    let exp = &claims["exp"];
    exp.as_u64()
        .or_else(|| exp.as_f64().map(|f| f.max(0.0) as u64))
}

fn now_s() -> u64 {
    crate::clock::unix_s()
}

/// How to get tokens that last: the same prepare again, for longer if need be.
const MINT_AGAIN: &str = "mint new ones: run the `exectl prepare … --mint-tokens` that wrote them again (--token-ttl sets how long they last, 7d by default), or drop --tokens to log in with the passwords";

fn bad(file: &Path, value: impl std::fmt::Display, problem: impl Into<String>) -> UsageError {
    UsageError::new(
        "--manifest",
        format!("{}: {value}", file.display()),
        problem,
        "write the manifest with `exectl prepare` (or fix the file by hand)",
    )
}

/// Parsed as it is read: a 50,000-account manifest's text (30 MB with tokens) is never held whole.
fn read_json<T: for<'de> Deserialize<'de>>(file: &Path) -> Result<T, UsageError> {
    let limit = crate::shell::user_file::MANIFEST;
    let f = crate::shell::user_file::open(file, limit).map_err(|u| {
        UsageError::new(
            "--manifest",
            file.display(),
            u.problem,
            "point --manifest at the folder `exectl prepare` wrote",
        )
    })?;
    serde_json::from_reader(std::io::BufReader::new(std::io::Read::take(f, limit.bytes)))
        .map_err(|e| bad(file, "", format!("not a valid manifest: {e}")))
}

impl Manifest {
    /// Read and check DIR/accounts.json and DIR/projects.json, and DIR/tokens.json when `tokens`:
    /// tokens already expired are refused (the app would refuse every socket they open, 4001).
    pub fn read(dir: &Path, tokens: bool) -> Result<Manifest, UsageError> {
        Self::read_at(dir, tokens, now_s())
    }

    /// `read`, with `now` as the time the tokens must still be valid at.
    pub fn read_at(dir: &Path, tokens: bool, now: u64) -> Result<Manifest, UsageError> {
        let accounts: Vec<Account> = read_json(&dir.join(ACCOUNTS_JSON))?;
        let projects: Vec<Project> = read_json(&dir.join(PROJECTS))?;
        let check = |entries: Option<Vec<TokenEntry>>| {
            manifest::check(&accounts, &projects, entries)
                .map_err(|p| bad(&dir.join(p.file), p.value, p.problem))
        };
        // The accounts and projects first: their problem is the one to fix before any token's.
        check(None)?;
        let tokens = if tokens {
            let entries: Vec<TokenEntry> = read_json(&dir.join(TOKENS))?;
            check(Some(entries))?
        } else {
            None
        };
        let exps: Vec<u64> = tokens
            .iter()
            .flatten()
            .filter_map(|t| token_exp(t))
            .collect();
        let tokens_expire = exps.iter().copied().min();
        if let Some(earliest) = tokens_expire.filter(|e| *e <= now) {
            let expired = exps.iter().filter(|e| **e <= now).count();
            return Err(UsageError::new(
                "--tokens",
                dir.join(TOKENS).display(),
                format!(
                    "tokens expired at {} ({expired} of {}): the app refuses an expired token's socket",
                    crate::engine::lock::format_epoch(earliest),
                    exps.len()
                ),
                MINT_AGAIN,
            ));
        }
        Ok(Manifest {
            dir: dir.to_path_buf(),
            accounts,
            projects,
            tokens,
            tokens_expire,
        })
    }

    /// When a run of `length` from `now` would outlast the tokens: the warning to give. Not a refusal:
    /// the app checks a token when a socket opens, so sockets open by then stay; users that dial
    /// later are refused.
    pub fn expiring_warning(&self, now: u64, length: std::time::Duration) -> Option<String> {
        let exp = self.tokens_expire?;
        let end = now + length.as_secs_f64().ceil() as u64;
        (exp < end).then(|| {
            format!(
                "the tokens in {} expire at {}, before this run could end ({}): users that dial after that are refused (4001); {MINT_AGAIN}",
                self.dir.join(TOKENS).display(),
                crate::engine::lock::format_epoch(exp),
                crate::engine::lock::format_epoch(end)
            )
        })
    }

    /// `expiring_warning` from now, printed on stderr.
    /// The warning to give when minted tokens expire before a run of `length` ends (from now).
    pub fn tokens_expiring_within(&self, length: std::time::Duration) -> Option<String> {
        self.expiring_warning(now_s(), length)
    }

    /// Write accounts.json, projects.json and tokens.json as plain files (for tests and the benchmark;
    /// `exectl prepare` writes them 0600 with `prepare::manifest`).
    pub fn write(
        dir: &Path,
        accounts: &[Account],
        projects: &[Project],
        tokens: Option<&[TokenEntry]>,
    ) -> std::io::Result<()> {
        std::fs::create_dir_all(dir)?;
        let put = |name: &str, v: serde_json::Value| {
            std::fs::write(dir.join(name), serde_json::to_vec_pretty(&v).expect("json"))
        };
        put(ACCOUNTS_JSON, serde_json::to_value(accounts).expect("json"))?;
        put(PROJECTS, serde_json::to_value(projects).expect("json"))?;
        if let Some(t) = tokens {
            put(TOKENS, serde_json::to_value(t).expect("json"))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const U1: &str = "0b8e6f6e-8a43-4f55-9d3c-2f1b7b0a9e11";

    fn write(dir: &Path, accounts: &str, projects: &str, tokens: Option<&str>) {
        std::fs::write(dir.join(ACCOUNTS_JSON), accounts).unwrap();
        std::fs::write(dir.join(PROJECTS), projects).unwrap();
        if let Some(t) = tokens {
            std::fs::write(dir.join(TOKENS), t).unwrap();
        }
    }

    #[test]
    fn reads_prepare_shape() {
        let d = tempfile::tempdir().unwrap();
        write(
            d.path(),
            &format!(
                r#"[{{"email":"a@x.org","password":"pw","projectUuid":"{U1}","role":"owner"}},
                   {{"email":"b@x.org","password":"pw","projectUuid":"{U1}","role":"collaborator"}}]"#
            ),
            &format!(r#"[{{"uuid":"{U1}","ownerEmail":"a@x.org"}}]"#),
            Some(r#"[{"email":"b@x.org","token":"tb"},{"email":"a@x.org","token":"ta"}]"#),
        );
        let m = Manifest::read(d.path(), true).unwrap();
        assert_eq!(m.accounts.len(), 2);
        assert_eq!(m.accounts[1].role, Role::Collaborator);
        assert_eq!(m.tokens.unwrap(), vec!["ta".to_string(), "tb".to_string()]);
        // Without --tokens the tokens file is not read.
        assert!(Manifest::read(d.path(), false).unwrap().tokens.is_none());
    }

    #[test]
    fn refuses_bad_manifests() {
        let d = tempfile::tempdir().unwrap();
        let acc = |uuid: &str, role: &str| {
            format!(
                r#"[{{"email":"a@x.org","password":"pw","projectUuid":"{uuid}","role":"{role}"}}]"#
            )
        };
        let proj = |uuid: &str| format!(r#"[{{"uuid":"{uuid}","ownerEmail":"a@x.org"}}]"#);
        let upper = U1.to_uppercase();
        let cases = [
            (acc(U1, "owner"), proj(&upper), None),
            (acc(U1, "admin"), proj(U1), None),
            ("[]".to_string(), proj(U1), None),
            (
                acc("11111111-1111-1111-1111-111111111111", "owner"),
                proj(U1),
                None,
            ),
            (
                acc(U1, "owner"),
                proj(U1),
                Some(r#"[{"email":"z@x.org","token":"t"}]"#),
            ),
            (acc(U1, "owner"), "{".to_string(), None),
        ];
        for (a, p, t) in cases {
            write(d.path(), &a, &p, t);
            let err = Manifest::read(d.path(), t.is_some()).unwrap_err();
            assert_eq!(err.field, "--manifest", "{a} {p}");
        }
        let missing = Manifest::read(&d.path().join("nope"), false).unwrap_err();
        assert!(missing.problem.contains("cannot read"));
    }

    #[test]
    fn expired_tokens_are_refused_and_expiring_ones_warned_about() {
        let d = tempfile::tempdir().unwrap();
        let iat = 1_795_000_000; // 2026-11-18 11:06:40 UTC
        let token = |ttl| crate::prepare::token::mint(b"s", 1, "a@x.org", iat, ttl);
        let write_tokens = |ttl: i64| {
            write(
                d.path(),
                &format!(
                    r#"[{{"email":"a@x.org","password":"pw","projectUuid":"{U1}","role":"owner"}}]"#
                ),
                &format!(r#"[{{"uuid":"{U1}","ownerEmail":"a@x.org"}}]"#),
                Some(&format!(
                    r#"[{{"email":"a@x.org","token":"{}"}}]"#,
                    token(ttl)
                )),
            )
        };
        write_tokens(3600);
        assert_eq!(token_exp(&token(3600)), Some(iat as u64 + 3600));
        let now = iat as u64 + 7200;
        let e = Manifest::read_at(d.path(), true, now).unwrap_err();
        assert_eq!(e.field, "--tokens");
        assert!(e.value.ends_with("tokens.json"), "{e}");
        assert!(
            e.problem
                .starts_with("tokens expired at 2026-11-18 12:06:40 UTC (1 of 1)"),
            "{e}"
        );
        assert!(
            e.fix.contains("--mint-tokens") && e.fix.contains("--token-ttl"),
            "{e}"
        );
        // Without --tokens they are not read, so not judged.
        assert!(Manifest::read_at(d.path(), false, now).is_ok());

        write_tokens(3 * 3600);
        let m = Manifest::read_at(d.path(), true, now).unwrap();
        let hour = std::time::Duration::from_secs(3600);
        assert_eq!(m.expiring_warning(now, hour), None);
        let w = m.expiring_warning(now, 2 * hour).unwrap();
        assert!(
            w.contains("expire at 2026-11-18 14:06:40 UTC, before this run could end (2026-11-18 15:06:40 UTC)"),
            "{w}"
        );
    }
}
