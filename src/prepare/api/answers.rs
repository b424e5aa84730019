//! The app's answers, read: a users.id, a project of the v1 API or of create-quick, an owner's project
//! to reuse, a collaborator call's outcome, and the plan with the uuids the app chose. Pure.

use crate::prepare::plan::Plan;
use serde_json::Value;

/// A project as `POST|GET /api/v1/projects` describe it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiProject {
    pub uuid: String,
    pub title: String,
    pub owner_id: i64,
    pub saved_once: bool,
}

/// `{success, data:{id, ...}}` of `POST /api/v1/users` (or `{user:{id}}` of a login): the users.id.
pub fn user_id(body: &Value) -> Option<i64> {
    let d = if body.get("data").is_some() {
        &body["data"]
    } else {
        &body["user"]
    };
    match &d["id"] {
        Value::Number(n) => n.as_i64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

/// One project object of the v1 API.
pub fn project_of(v: &Value) -> Option<ApiProject> {
    let owner_id = match &v["owner_id"] {
        Value::Number(n) => n.as_i64()?,
        Value::String(s) => s.trim().parse().ok()?,
        _ => return None,
    };
    Some(ApiProject {
        uuid: v["uuid"].as_str()?.to_string(),
        title: v["title"].as_str()?.to_string(),
        owner_id,
        saved_once: matches!(&v["saved_once"], Value::Bool(true))
            || v["saved_once"].as_i64() == Some(1),
    })
}

/// `{success, uuid, projectUuid, projectId, ...}` of `POST /api/project/create-quick`: the project it
/// made (titled and owned as asked; saved_once 0, as every new project).
pub fn quick_project(body: &Value, title: &str, owner_id: i64) -> Option<ApiProject> {
    if body["success"] == Value::Bool(false) {
        return None;
    }
    let uuid = body["projectUuid"].as_str().or(body["uuid"].as_str())?;
    Some(ApiProject {
        uuid: uuid.to_string(),
        title: title.to_string(),
        owner_id,
        saved_once: false,
    })
}

/// The owner's existing project with the planned title (the first, by the list's order), if any.
pub fn reuse<'a>(owned: &'a [ApiProject], owner_id: i64, title: &str) -> Option<&'a ApiProject> {
    owned
        .iter()
        .find(|p| p.owner_id == owner_id && p.title == title)
}

/// What `POST .../collaborators` answered: Ok(true) added, Ok(false) already there, Err otherwise.
pub fn collaborator(answer: &Value) -> Result<bool, String> {
    match answer["responseMessage"].as_str() {
        Some("OK") => Ok(true),
        Some("ALREADY_COLLABORATOR") => Ok(false),
        Some(other) => Err(other.to_string()),
        None => Err(format!("unexpected answer {answer}")),
    }
}

/// The plan with the uuids the app gave its projects (index for index).
pub fn with_uuids(plan: &Plan, uuids: &[String]) -> Plan {
    let mut p = plan.clone();
    for (proj, uuid) in p.projects.iter_mut().zip(uuids) {
        proj.uuid = uuid.clone();
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prepare::plan::{plan, shape, EmailPattern, Visibility};
    use serde_json::json;

    #[test]
    fn answers() {
        assert_eq!(
            user_id(&json!({"success": true, "data": {"id": 7}})),
            Some(7)
        );
        assert_eq!(
            user_id(&json!({"access_token": "x", "user": {"id": "8"}})),
            Some(8)
        );
        assert_eq!(user_id(&json!({"success": true})), None);
        let p = project_of(
            &json!({"id": 1, "uuid": "u", "title": "t", "owner_id": 3, "saved_once": false}),
        )
        .unwrap();
        assert_eq!(
            p,
            ApiProject {
                uuid: "u".into(),
                title: "t".into(),
                owner_id: 3,
                saved_once: false
            }
        );
        assert!(
            project_of(&json!({"uuid": "u", "title": "t", "owner_id": 3, "saved_once": 1}))
                .unwrap()
                .saved_once
        );
        assert!(project_of(&json!({"title": "t", "owner_id": 3})).is_none());
        assert_eq!(collaborator(&json!({"responseMessage": "OK"})), Ok(true));
        assert_eq!(
            collaborator(&json!({"responseMessage": "ALREADY_COLLABORATOR"})),
            Ok(false)
        );
        assert_eq!(
            collaborator(&json!({"responseMessage": "USER_NOT_FOUND"})),
            Err("USER_NOT_FOUND".into())
        );
        assert!(collaborator(&json!({})).is_err());
    }

    #[test]
    fn create_quick_answer() {
        let body = json!({"success": true, "uuid": "u1", "projectUuid": "u1", "projectId": 9,
            "sessionId": "s"});
        assert_eq!(
            quick_project(&body, "bench-project-3", 4),
            Some(ApiProject {
                uuid: "u1".into(),
                title: "bench-project-3".into(),
                owner_id: 4,
                saved_once: false
            })
        );
        assert_eq!(
            quick_project(&json!({"uuid": "u2"}), "t", 1).unwrap().uuid,
            "u2"
        );
        assert!(quick_project(&json!({"success": false, "uuid": "u"}), "t", 1).is_none());
        assert!(quick_project(&json!({"success": true}), "t", 1).is_none());
    }

    #[test]
    fn reuse_by_owner_and_title() {
        let p = |uuid: &str, title: &str, owner_id| ApiProject {
            uuid: uuid.into(),
            title: title.into(),
            owner_id,
            saved_once: true,
        };
        let owned = vec![
            p("a", "bench-project-1", 5),
            p("b", "bench-project-0", 6),
            p("c", "bench-project-0", 5),
        ];
        assert_eq!(
            reuse(&owned, 5, "bench-project-0").unwrap().uuid,
            "c",
            "a shared project is not the owner's"
        );
        assert!(reuse(&owned, 5, "bench-project-2").is_none());
    }

    #[test]
    fn the_apps_uuids_in_the_plan() {
        let p = plan(
            shape(4, Some(2), Some(2)).unwrap(),
            &EmailPattern::parse("u{i}@x.org").unwrap(),
            Visibility::Private,
        );
        let q = with_uuids(&p, &["x".into(), "y".into()]);
        assert_eq!(
            q.projects
                .iter()
                .map(|p| p.uuid.as_str())
                .collect::<Vec<_>>(),
            ["x", "y"]
        );
        assert_eq!(q.accounts, p.accounts);
        assert_eq!(q.projects[1].owner, p.projects[1].owner);
    }
}
