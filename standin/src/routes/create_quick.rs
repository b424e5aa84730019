//! `POST /api/project/create-quick` with `{"title"}` (Bearer or the `auth` cookie), the editor's "new
//! project" and the route that works on builds with the v1 create's uuid bug (contract §1): a private,
//! active project with `saved_once = 0` and its empty Yjs document → 200 `{success, uuid, projectUuid,
//! projectId, sessionId, title}`.

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Value};

use crate::auth::{auth_cookie, bearer};
use crate::db::{Db, Project};
use crate::routes::login::validation;
use crate::routes::projects::EMPTY_YJS_UPDATE;
use crate::routes::{error, store};
use crate::state::AppState;

/// The title when the body names none.
const UNTITLED: &str = "Untitled document";

/// Insert a project under `uuid` and store its empty Yjs document (what the app's `createProject` +
/// `ensureDocument` leave): the one "project + its document" write of the stand-in.
pub(crate) async fn insert_project_with_document(
    db: &Db,
    uuid: &str,
    title: &str,
    owner_id: i32,
    visibility: &str,
) -> anyhow::Result<Project> {
    store::insert_project(db, uuid, title, owner_id, visibility).await?;
    let project = db
        .project_by_uuid(uuid)
        .await?
        .ok_or_else(|| anyhow::anyhow!("project {uuid} vanished after its insert"))?;
    db.save_snapshot(project.id, &EMPTY_YJS_UPDATE, false, None)
        .await?;
    Ok(project)
}

pub async fn create(State(st): State<AppState>, headers: HeaderMap, body: Bytes) -> Response {
    let Some(token) = bearer(&headers).or_else(|| auth_cookie(&headers)) else {
        return error(StatusCode::UNAUTHORIZED, "Unauthorized");
    };
    let Some(caller) = st.tokens.verify(token) else {
        return error(StatusCode::UNAUTHORIZED, "Invalid token");
    };
    let body = if body.is_empty() {
        Value::Null
    } else {
        match serde_json::from_slice::<Value>(&body) {
            Ok(v) => v,
            Err(_) => return validation("Expected a JSON body"),
        }
    };
    let title = match body.get("title") {
        None | Some(Value::Null) => UNTITLED.to_string(),
        Some(Value::String(t)) if !t.trim().is_empty() && t.chars().count() <= 255 => t.clone(),
        Some(_) => return validation("Property 'title' must be a string of 1 to 255 characters"),
    };
    let uuid = uuid::Uuid::new_v4().to_string();
    match insert_project_with_document(&st.db, &uuid, &title, caller.id, "private").await {
        Ok(p) => Json(json!({
            "success": true,
            "uuid": p.uuid,
            "projectUuid": p.uuid,
            "projectId": p.id,
            "sessionId": uuid::Uuid::new_v4().simple().to_string(),
            "title": p.title,
        }))
        .into_response(),
        Err(e) => {
            tracing::error!("[API] create-quick: {e:#}");
            error(StatusCode::INTERNAL_SERVER_ERROR, "Internal server error")
        }
    }
}
