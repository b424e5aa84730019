//! Visibility and sharing (`src/routes/project.ts`), owner only, Bearer or the `auth` cookie:
//! `PATCH /api/projects/uuid/:uuid/visibility` and `POST /api/projects/uuid/:uuid/collaborators`.

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Value};

use crate::auth::{auth_cookie, bearer};
use crate::db::Project;
use crate::routes::login::validation;
use crate::routes::{error, store};
use crate::state::AppState;

fn internal(e: anyhow::Error) -> Response {
    tracing::error!("[API] database error: {e:#}");
    error(StatusCode::INTERNAL_SERVER_ERROR, "Internal server error")
}

fn message(m: &str) -> Response {
    Json(json!({"responseMessage": m})).into_response()
}

/// The caller's project, when the caller owns it; else the refusal to send.
async fn owned(st: &AppState, headers: &HeaderMap, uuid: &str) -> Result<Project, Response> {
    let Some(token) = bearer(headers).or_else(|| auth_cookie(headers)) else {
        return Err(error(StatusCode::UNAUTHORIZED, "Unauthorized"));
    };
    let Some(caller) = st.sharing_tokens.verify(token) else {
        return Err(error(StatusCode::UNAUTHORIZED, "Invalid token"));
    };
    match st.db.project_by_uuid(uuid).await {
        Ok(None) => Err(error(StatusCode::NOT_FOUND, "Project not found")),
        Ok(Some(p)) if p.owner_id != caller.id => Err(error(
            StatusCode::FORBIDDEN,
            "Only the owner can change this project",
        )),
        Ok(Some(p)) => Ok(p),
        Err(e) => Err(internal(e)),
    }
}

pub async fn visibility(
    State(st): State<AppState>,
    headers: HeaderMap,
    Path(uuid): Path<String>,
    body: Bytes,
) -> Response {
    let project = match owned(&st, &headers, &uuid).await {
        Ok(p) => p,
        Err(r) => return r,
    };
    let v = serde_json::from_slice::<Value>(&body).ok();
    let Some(vis) = v
        .as_ref()
        .and_then(|b| b.get("visibility"))
        .and_then(Value::as_str)
        .filter(|v| *v == "public" || *v == "private")
    else {
        return validation("Property 'visibility' must be 'public' or 'private'");
    };
    match store::set_visibility(&st.db, project.id, vis).await {
        Ok(()) => message("OK"),
        Err(e) => internal(e),
    }
}

pub async fn add_collaborator(
    State(st): State<AppState>,
    headers: HeaderMap,
    Path(uuid): Path<String>,
    body: Bytes,
) -> Response {
    let project = match owned(&st, &headers, &uuid).await {
        Ok(p) => p,
        Err(r) => return r,
    };
    let v = serde_json::from_slice::<Value>(&body).ok();
    let Some(email) = v
        .as_ref()
        .and_then(|b| b.get("email"))
        .and_then(Value::as_str)
    else {
        return validation("Expected string property 'email'");
    };
    let user = match st.db.user_by_email(email.trim()).await {
        Ok(Some(u)) => u,
        Ok(None) => return message("USER_NOT_FOUND"),
        Err(e) => return internal(e),
    };
    if user.id == project.owner_id {
        return message("IS_OWNER");
    }
    match store::add_collaborator(&st.db, project.id, user.id).await {
        Ok(_) => message("OK"),
        Err(e) if store::is_unique_violation(&e) => message("ALREADY_COLLABORATOR"),
        Err(e) => internal(e.into()),
    }
}
