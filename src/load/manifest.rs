//! The manifest that `exectl prepare` writes and `exectl load` reads: who logs in, with what password,
//! into which project, and (with `--tokens`) a JWT minted offline for each account.
//!
//! ```text
//! DIR/accounts.json  [{"email","password","projectUuid","role":"owner"|"collaborator"}]
//! DIR/projects.json  [{"uuid","ownerEmail"}]
//! DIR/tokens.json    [{"email","token"}]            (only with --tokens)
//! ```

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::UsageError;

pub const ACCOUNTS_FILE: &str = "accounts.json";
pub const PROJECTS_FILE: &str = "projects.json";
pub const TOKENS_FILE: &str = "tokens.json";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    Owner,
    Collaborator,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Account {
    pub email: String,
    pub password: String,
    pub project_uuid: String,
    pub role: Role,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Project {
    pub uuid: String,
    pub owner_email: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TokenEntry {
    pub email: String,
    pub token: String,
}

/// A validated manifest. `tokens[i]` is the token of `accounts[i]` when read with tokens.
#[derive(Debug, Clone)]
pub struct Manifest {
    pub dir: PathBuf,
    pub accounts: Vec<Account>,
    pub projects: Vec<Project>,
    pub tokens: Option<Vec<String>>,
}

/// The room regex of the app: `project-([0-9a-f-]{36})`; prepare writes canonical lowercase uuids.
pub fn is_canonical_uuid(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 36
        && b.iter().enumerate().all(|(i, &c)| match i {
            8 | 13 | 18 | 23 => c == b'-',
            _ => c.is_ascii_digit() || (b'a'..=b'f').contains(&c),
        })
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
        let accounts_path = dir.join(ACCOUNTS_FILE);
        let projects_path = dir.join(PROJECTS_FILE);
        let accounts: Vec<Account> = read_json(&accounts_path)?;
        let projects: Vec<Project> = read_json(&projects_path)?;
        if accounts.is_empty() {
            return Err(bad(&accounts_path, "[]", "no accounts"));
        }
        let mut uuids = HashSet::new();
        for p in &projects {
            if !is_canonical_uuid(&p.uuid) {
                return Err(bad(
                    &projects_path,
                    &p.uuid,
                    "not a canonical lowercase uuid (the app's room regex needs one)",
                ));
            }
            if !uuids.insert(p.uuid.as_str()) {
                return Err(bad(&projects_path, &p.uuid, "project listed twice"));
            }
        }
        for a in &accounts {
            if a.email.is_empty() || a.password.is_empty() {
                return Err(bad(&accounts_path, &a.email, "empty email or password"));
            }
            if !uuids.contains(a.project_uuid.as_str()) {
                return Err(bad(
                    &accounts_path,
                    &a.project_uuid,
                    format!(
                        "account {} names a project absent from {PROJECTS_FILE}",
                        a.email
                    ),
                ));
            }
        }
        let tokens = if tokens {
            let tokens_path = dir.join(TOKENS_FILE);
            let entries: Vec<TokenEntry> = read_json(&tokens_path)?;
            let by_email: HashMap<&str, &str> = entries
                .iter()
                .map(|t| (t.email.as_str(), t.token.as_str()))
                .collect();
            let mut v = Vec::with_capacity(accounts.len());
            for a in &accounts {
                match by_email.get(a.email.as_str()) {
                    Some(t) if !t.is_empty() => v.push((*t).to_string()),
                    _ => {
                        return Err(bad(
                            &tokens_path,
                            &a.email,
                            "no token for this account (--tokens needs one per account)",
                        ))
                    }
                }
            }
            Some(v)
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

    /// Write the three files (what `exectl prepare` does; also used by tests and the benchmark).
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
        put(ACCOUNTS_FILE, serde_json::to_value(accounts).expect("json"))?;
        put(PROJECTS_FILE, serde_json::to_value(projects).expect("json"))?;
        if let Some(t) = tokens {
            put(TOKENS_FILE, serde_json::to_value(t).expect("json"))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const U1: &str = "0b8e6f6e-8a43-4f55-9d3c-2f1b7b0a9e11";

    fn write(dir: &Path, accounts: &str, projects: &str, tokens: Option<&str>) {
        std::fs::write(dir.join(ACCOUNTS_FILE), accounts).unwrap();
        std::fs::write(dir.join(PROJECTS_FILE), projects).unwrap();
        if let Some(t) = tokens {
            std::fs::write(dir.join(TOKENS_FILE), t).unwrap();
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
    fn canonical_uuid() {
        assert!(is_canonical_uuid(U1));
        assert!(!is_canonical_uuid(&U1.to_uppercase()));
        assert!(!is_canonical_uuid(&U1.replace('-', "x")));
        assert!(!is_canonical_uuid("short"));
    }
}
