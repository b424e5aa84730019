//! `/api/v1/projects`: Bearer only (no cookie fallback), guest tokens refused, `{success, data}` wrapping.

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Value};

use crate::auth::{bearer, Caller};
use crate::db::Project;
use crate::state::AppState;

pub(crate) fn fail(status: StatusCode, code: &str, message: &str) -> Response {
    (
        status,
        Json(json!({"success": false, "error": {"code": code, "message": message}})),
    )
        .into_response()
}

/// Why a v1 request is refused: (status, code, message).
pub(crate) type Refusal = (StatusCode, &'static str, &'static str);

pub(crate) fn v1_caller(st: &AppState, headers: &HeaderMap) -> Result<Caller, Refusal> {
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

pub(crate) fn project_json(p: &Project) -> Value {
    json!({
        "id": p.id, "uuid": p.uuid, "title": p.title, "owner_id": p.owner_id,
        "created_at": p.created_at, "updated_at": p.updated_at, "saved_once": p.saved_once != 0,
    })
}

pub(crate) fn internal(e: anyhow::Error) -> Response {
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

/// An empty Yjs update: `Y.encodeStateAsUpdate(new Y.Doc())` is a zero count of structs and an empty
/// delete set, two zero bytes. The app's `ensureDocument` (src/yjs/doc-manager.ts) stores that for a new
/// project (it names `navigation`, `metadata` and `assets` first, which adds no structs).
pub const EMPTY_YJS_UPDATE: [u8; 2] = [0, 0];

/// `POST /api/v1/projects` with `{"title"}` → 201: a private, active project with `saved_once = 0` and an
/// empty Yjs snapshot, under a uuid the server picks (the fixed upstream behaviour, not the old uuid bug).
pub async fn create(
    State(st): State<AppState>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    let caller = match v1_caller(&st, &headers) {
        Ok(c) => c,
        Err((status, code, message)) => return fail(status, code, message),
    };
    let title = serde_json::from_slice::<Value>(&body)
        .ok()
        .and_then(|b| b.get("title").and_then(Value::as_str).map(str::to_string));
    let Some(title) = title.filter(|t| !t.trim().is_empty() && t.chars().count() <= 255) else {
        return crate::routes::login::validation(
            "Property 'title' must be a string of 1 to 255 characters",
        );
    };
    if let Some(r) = faulty_create(&st, caller.id, &title).await {
        return r;
    }
    let uuid = uuid::Uuid::new_v4().to_string();
    if let Err(e) =
        crate::routes::store::insert_project(&st.db, &uuid, &title, caller.id, "private").await
    {
        return internal(e.into());
    }
    let project = match st.db.project_by_uuid(&uuid).await {
        Ok(Some(p)) => p,
        Ok(None) => return internal(anyhow::anyhow!("project {uuid} vanished after its insert")),
        Err(e) => return internal(e),
    };
    if let Err(e) = st.db.ensure_document(project.id, &EMPTY_YJS_UPDATE).await {
        return internal(e);
    }
    (
        StatusCode::CREATED,
        Json(json!({"success": true, "data": project_json(&project)})),
    )
        .into_response()
}

/// The create of `projects-500` (contract §1, §8: the old build's route passes its own uuid,
/// `createProject()` replaces it with a fresh one, `ensureDocument(route's uuid)` finds no project): a
/// row under another uuid than the route's, no Yjs document, then 500. `projects-fail`: 500, nothing
/// written. None: no such fault, create as usual.
async fn faulty_create(st: &AppState, owner_id: i32, title: &str) -> Option<Response> {
    use crate::config::Fault;
    if st.cfg.fault.has(Fault::ProjectsFail) {
        return Some(internal(anyhow::anyhow!(
            "the write failed (STANDIN_FAULT=projects-fail)"
        )));
    }
    if !st.cfg.fault.has(Fault::Projects500) {
        return None;
    }
    let route_uuid = uuid::Uuid::new_v4().to_string();
    let stored = uuid::Uuid::new_v4().to_string();
    if let Err(e) =
        crate::routes::store::insert_project(&st.db, &stored, title, owner_id, "private").await
    {
        return Some(internal(e.into()));
    }
    Some(match st.db.project_by_uuid(&route_uuid).await {
        Ok(_) => internal(anyhow::anyhow!(
            "ProjectNotFoundError: project {route_uuid} (STANDIN_FAULT=projects-500)"
        )),
        Err(e) => internal(e),
    })
}
