//! Writing the manifest a load run reads (its types are `core::manifest`, which load reads with):
//! projects.json, accounts.csv and accounts.json from the plan, and with --mint-tokens tokens.json.
//! They hold the password and tokens: mode 0600, written whole then renamed.

use super::plan::Plan;
pub use exectl_core::manifest::{
    accounts_csv, Account, Project, TokenEntry, ACCOUNTS_CSV, ACCOUNTS_JSON, ALL, PROJECTS, TOKENS,
};

pub fn projects(plan: &Plan) -> Vec<Project> {
    plan.projects
        .iter()
        .map(|p| Project {
            uuid: p.uuid.clone(),
            owner_email: plan.accounts[p.owner].email.clone(),
        })
        .collect()
}

/// In the plan's manifest order (project by project).
pub fn accounts(plan: &Plan, password: &str) -> Vec<Account> {
    plan.manifest_order()
        .map(|i| &plan.accounts[i])
        .map(|a| Account {
            email: a.email.clone(),
            password: password.to_string(),
            project_uuid: plan.projects[a.project].uuid.clone(),
            role: a.role,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prepare::plan::{plan, shape, EmailPattern, Role, Visibility};
    use crate::state::manifests::write_private;

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

    /// Entries go project by project, so load's first users fill a room before the next.
    #[test]
    fn accounts_listed_project_by_project() {
        let p = plan(
            shape(8, None, Some(4)).unwrap(),
            &EmailPattern::parse("u{i}@x.org").unwrap(),
            Visibility::Private,
        );
        let a = accounts(&p, "pw");
        let emails: Vec<&str> = a.iter().map(|a| a.email.as_str()).collect();
        assert_eq!(
            emails,
            [
                "u0@x.org", "u2@x.org", "u4@x.org", "u6@x.org", "u1@x.org", "u3@x.org", "u5@x.org",
                "u7@x.org"
            ]
        );
        assert!(a[..4].iter().all(|e| e.project_uuid == p.projects[0].uuid));
        assert_eq!(a[4].role, Role::Owner);
    }

    /// What prepare writes is what load reads: one set of types, through the files.
    #[test]
    fn what_prepare_writes_load_reads_back() {
        let p = plan(
            shape(5, Some(2), Some(3)).unwrap(),
            &EmailPattern::parse("bench-{i}@x.org").unwrap(),
            Visibility::Private,
        );
        let d = tempfile::tempdir().unwrap();
        let accounts = accounts(&p, "pw,\"x");
        let tokens: Vec<TokenEntry> = accounts
            .iter()
            .map(|a| TokenEntry {
                email: a.email.clone(),
                token: format!("t-{}", a.email),
            })
            .collect();
        for (name, bytes) in [
            (PROJECTS, serde_json::to_vec_pretty(&projects(&p)).unwrap()),
            (ACCOUNTS_JSON, serde_json::to_vec_pretty(&accounts).unwrap()),
            (ACCOUNTS_CSV, accounts_csv(&accounts).into_bytes()),
            (TOKENS, serde_json::to_vec_pretty(&tokens).unwrap()),
        ] {
            write_private(d.path(), name, &bytes).unwrap();
        }
        let m = crate::load::Manifest::read(d.path(), true).unwrap();
        assert_eq!(m.accounts, accounts);
        assert_eq!(m.projects, projects(&p));
        assert_eq!(m.accounts.len(), 5);
        assert!(m.accounts.iter().any(|a| a.role == Role::Collaborator));
        let minted: Vec<String> = tokens.into_iter().map(|t| t.token).collect();
        assert_eq!(m.tokens, Some(minted));
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
