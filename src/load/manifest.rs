//! Reading the manifest `exectl prepare` wrote (the types and checks are `core::manifest`): who logs
//! in, with what password, into which project, and (with `--tokens`) a JWT minted offline for each
//! account. Every problem is bad input naming `--manifest`, the file and the value.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::core::manifest::{self, ACCOUNTS_JSON, PROJECTS, TOKENS};
pub use crate::core::manifest::{Account, Project, Role, TokenEntry};
use crate::error::UsageError;

/// A validated manifest. `tokens[i]` is the token of `accounts[i]` when read with tokens.
#[derive(Debug, Clone)]
pub struct Manifest {
    pub dir: PathBuf,
    pub accounts: Vec<Account>,
    pub projects: Vec<Project>,
    pub tokens: Option<Vec<String>>,
}

fn bad(file: &Path, value: impl std::fmt::Display, problem: impl Into<String>) -> UsageError {
    UsageError::new(
        "--manifest",
        format!("{}: {value}", file.display()),
        problem,
        "write the manifest with `exectl prepare` (or fix the file by hand)",
    )
}

fn read_json<T: for<'de> Deserialize<'de>>(file: &Path) -> Result<T, UsageError> {
    let text = std::fs::read_to_string(file).map_err(|e| {
        UsageError::new(
            "--manifest",
            file.display(),
            format!("cannot read: {e}"),
            "point --manifest at the folder `exectl prepare` wrote",
        )
    })?;
    serde_json::from_str(&text).map_err(|e| bad(file, "", format!("not a valid manifest: {e}")))
}

impl Manifest {
    /// Read and check DIR/accounts.json and DIR/projects.json, and DIR/tokens.json when `tokens`.
    pub fn read(dir: &Path, tokens: bool) -> Result<Manifest, UsageError> {
        let accounts: Vec<Account> = read_json(&dir.join(ACCOUNTS_JSON))?;
        let projects: Vec<Project> = read_json(&dir.join(PROJECTS))?;
        let check = |entries: Option<&[TokenEntry]>| {
            manifest::check(&accounts, &projects, entries)
                .map_err(|p| bad(&dir.join(p.file), p.value, p.problem))
        };
        // The accounts and projects first: their problem is the one to fix before any token's.
        check(None)?;
        let tokens = if tokens {
            let entries: Vec<TokenEntry> = read_json(&dir.join(TOKENS))?;
            check(Some(&entries))?
        } else {
            None
        };
        Ok(Manifest {
            dir: dir.to_path_buf(),
            accounts,
            projects,
            tokens,
        })
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
}
