//! The manifest files a load run reads: projects.json (the seed's `[{uuid, ownerEmail}]`), accounts.csv
//! and accounts.json (`[{email, password, projectUuid, role}]`), and with --mint-tokens tokens.json
//! (`[{email, token}]`). They hold the password and tokens: mode 0600, written whole then renamed.

use super::plan::{Plan, Role};
use anyhow::Result;
use serde::Serialize;
use std::path::{Path, PathBuf};

pub const PROJECTS: &str = "projects.json";
pub const ACCOUNTS_JSON: &str = "accounts.json";
pub const ACCOUNTS_CSV: &str = "accounts.csv";
pub const TOKENS: &str = "tokens.json";
pub const ALL: [&str; 4] = [PROJECTS, ACCOUNTS_JSON, ACCOUNTS_CSV, TOKENS];

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ProjectEntry<'a> {
    pub uuid: &'a str,
    pub owner_email: &'a str,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AccountEntry<'a> {
    pub email: &'a str,
    pub password: &'a str,
    pub project_uuid: &'a str,
    pub role: Role,
}

#[derive(Debug, Serialize)]
pub struct TokenEntry<'a> {
    pub email: &'a str,
    pub token: String,
}

fn role_name(r: Role) -> &'static str {
    match r {
        Role::Owner => "owner",
        Role::Collaborator => "collaborator",
    }
}

pub fn projects(plan: &Plan) -> Vec<ProjectEntry<'_>> {
    plan.projects
        .iter()
        .map(|p| ProjectEntry {
            uuid: &p.uuid,
            owner_email: &plan.accounts[p.owner].email,
        })
        .collect()
}

pub fn accounts<'a>(plan: &'a Plan, password: &'a str) -> Vec<AccountEntry<'a>> {
    plan.accounts
        .iter()
        .map(|a| AccountEntry {
            email: &a.email,
            password,
            project_uuid: &plan.projects[a.project].uuid,
            role: a.role,
        })
        .collect()
}

/// CSV with a header; a field with a quote, comma or newline is quoted (the password may hold any).
pub fn accounts_csv(entries: &[AccountEntry<'_>]) -> String {
    let field = |s: &str| {
        if s.contains(['"', ',', '\n', '\r']) {
            format!("\"{}\"", s.replace('"', "\"\""))
        } else {
            s.to_string()
        }
    };
    let mut out = String::from("email,password,projectUuid,role\n");
    for a in entries {
        out.push_str(&format!(
            "{},{},{},{}\n",
            field(a.email),
            field(a.password),
            a.project_uuid,
            role_name(a.role)
        ));
    }
    out
}

/// Write `bytes` to DIR/name with mode 0600 (the one atomic write).
pub fn write_private(dir: &Path, name: &str, bytes: &[u8]) -> Result<PathBuf> {
    let path = dir.join(name);
    crate::shell::atomic::write(&path, bytes, 0o600)?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prepare::plan::{plan, shape, EmailPattern, Visibility};

    #[test]
    fn entries_and_csv() {
        let p = plan(
            shape(2, Some(1), Some(2)).unwrap(),
            &EmailPattern::parse("u{i}@x.org").unwrap(),
            Visibility::Private,
        );
        let a = accounts(&p, "pw,\"x");
        let json = serde_json::to_value(&a).unwrap();
        assert_eq!(json[1]["role"], "collaborator");
        assert_eq!(json[1]["projectUuid"], p.projects[0].uuid.as_str());
        assert_eq!(
            accounts_csv(&a),
            format!(
                "email,password,projectUuid,role\nu0@x.org,\"pw,\"\"x\",{u},owner\nu1@x.org,\"pw,\"\"x\",{u},collaborator\n",
                u = p.projects[0].uuid
            )
        );
        let pj = serde_json::to_value(projects(&p)).unwrap();
        assert_eq!(
            pj,
            serde_json::json!([{"uuid": p.projects[0].uuid, "ownerEmail": "u0@x.org"}])
        );
    }

    #[test]
    fn private_mode() {
        use std::os::unix::fs::PermissionsExt;
        let d = tempfile::tempdir().unwrap();
        let p = write_private(d.path(), "a.json", b"[]").unwrap();
        assert_eq!(
            std::fs::metadata(&p).unwrap().permissions().mode() & 0o777,
            0o600
        );
        write_private(d.path(), "a.json", b"[1]").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"[1]");
    }
}
