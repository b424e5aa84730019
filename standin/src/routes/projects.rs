//! `/api/v1/projects`: Bearer only (no cookie fallback), guest tokens refused, `{success, data}` wrapping.

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Value};

use crate::auth::{bearer, Caller};
use crate::db::Project;
use crate::state::AppState;

fn fail(status: StatusCode, code: &str, message: &str) -> Response {
    (
        status,
        Json(json!({"success": false, "error": {"code": code, "message": message}})),
    )
        .into_response()
}

/// Why a v1 request is refused: (status, code, message).
type Refusal = (StatusCode, &'static str, &'static str);

fn v1_caller(st: &AppState, headers: &HeaderMap) -> Result<Caller, Refusal> {
    let Some(token) = bearer(headers) else {
        return Err((
            StatusCode::UNAUTHORIZED,
            "UNAUTHORIZED",
            "Bearer token required",
        ));
    };
    let Some(caller) = st.tokens.verify(token) else {
        return Err((StatusCode::UNAUTHORIZED, "UNAUTHORIZED", "Invalid token"));
    };
    if caller.is_guest {
        return Err((
            StatusCode::FORBIDDEN,
            "FORBIDDEN",
            "Guest users cannot use the API",
        ));
    }
    Ok(caller)
}

fn project_json(p: &Project) -> Value {
    json!({
        "id": p.id, "uuid": p.uuid, "title": p.title, "owner_id": p.owner_id,
        "created_at": p.created_at, "updated_at": p.updated_at, "saved_once": p.saved_once != 0,
    })
}

fn internal(e: anyhow::Error) -> Response {
    tracing::error!("[API] database error: {e:#}");
    fail(
        StatusCode::INTERNAL_SERVER_ERROR,
        "INTERNAL_ERROR",
        "Internal server error",
    )
}

/// `GET /api/v1/projects`: the bearer's owned and shared projects (active or archived).
pub async fn list(State(st): State<AppState>, headers: HeaderMap) -> Response {
    let caller = match v1_caller(&st, &headers) {
        Ok(c) => c,
        Err((status, code, message)) => return fail(status, code, message),
    };
    match st.db.projects_for_user(caller.id).await {
        Ok(ps) => {
            let data: Vec<Value> = ps.iter().map(project_json).collect();
            Json(json!({"success": true, "data": data})).into_response()
        }
        Err(e) => internal(e),
    }
}

/// `GET /api/v1/projects/:uuid`: owner or admin only; collaborators too get 403.
pub async fn show(
    State(st): State<AppState>,
    headers: HeaderMap,
    Path(uuid): Path<String>,
) -> Response {
    let caller = match v1_caller(&st, &headers) {
        Ok(c) => c,
        Err((status, code, message)) => return fail(status, code, message),
    };
    match st.db.project_by_uuid(&uuid).await {
        Ok(None) => fail(StatusCode::NOT_FOUND, "NOT_FOUND", "Project not found"),
        Ok(Some(p)) if p.owner_id != caller.id && !caller.is_admin() => {
            fail(StatusCode::FORBIDDEN, "FORBIDDEN", "Access denied")
        }
        Ok(Some(p)) => Json(json!({"success": true, "data": project_json(&p)})).into_response(),
        Err(e) => internal(e),
    }
}
