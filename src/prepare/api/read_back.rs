//! The read-back: each project read as its owner, there under the manifest's uuid, titled and owned as
//! planned, and saved (the SQL path's read-back, through the API).

use super::answers::{project_of, ApiProject};
use super::at_once;
use super::client::Api;
use crate::prepare::plan::Plan;
use anyhow::Result;
use std::collections::HashMap;

/// Read back every project of `plan` as its owner (`tokens` by email, `ids` the users.id by email).
pub(super) async fn read_back_all(
    api: &Api,
    plan: &Plan,
    ids: &HashMap<String, i64>,
    tokens: &HashMap<&str, String>,
) -> Result<()> {
    at_once(plan.projects.iter().map(|p| {
        let owner = plan.accounts[p.owner].email.as_str();
        async move {
            let got = api
                .client
                .project_metadata(&api.door, &p.uuid, &tokens[owner])
                .answer()
                .await?;
            if !got.status.is_success() {
                return Err(got.refused(&format!("read-back: project {} of {owner}", p.uuid)));
            }
            let found = project_of(&got.body["data"]);
            read_back(found.as_ref(), &p.uuid, &p.title, ids[owner])
                .map_err(|m| anyhow::anyhow!("read-back: project {} of {owner}: {m}", p.uuid))
        }
    }))
    .await?;
    Ok(())
}

/// A project as read back against the plan: its uuid, title, owner and saved_once; Err names what differs.
pub fn read_back(
    got: Option<&ApiProject>,
    uuid: &str,
    title: &str,
    owner_id: i64,
) -> Result<(), String> {
    let Some(g) = got else {
        return Err("no project in the answer".into());
    };
    let mut wrong = Vec::new();
    if g.uuid != uuid {
        wrong.push(format!("uuid {} (want {uuid})", g.uuid));
    }
    if g.title != title {
        wrong.push(format!("title {:?} (want {title:?})", g.title));
    }
    if g.owner_id != owner_id {
        wrong.push(format!("owner {} (want {owner_id})", g.owner_id));
    }
    if !g.saved_once {
        wrong.push("saved_once 0 (want 1)".into());
    }
    if wrong.is_empty() {
        Ok(())
    } else {
        Err(wrong.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_back_names_what_differs() {
        let p = ApiProject {
            uuid: "u".into(),
            title: "bench-project-0".into(),
            owner_id: 3,
            saved_once: true,
        };
        assert_eq!(read_back(Some(&p), "u", "bench-project-0", 3), Ok(()));
        assert_eq!(
            read_back(Some(&p), "u", "bench-project-0", 4),
            Err("owner 3 (want 4)".into())
        );
        let unsaved = ApiProject {
            saved_once: false,
            title: "x".into(),
            ..p.clone()
        };
        let e = read_back(Some(&unsaved), "u", "bench-project-0", 3).unwrap_err();
        assert!(
            e.contains("title \"x\"") && e.contains("saved_once 0"),
            "{e}"
        );
        assert!(read_back(None, "u", "t", 3).is_err());
    }
}
