//! The editing session's autosave: `GET|POST /api/projects/uuid/:uuid/yjs-document`. As in the fork,
//! neither checks who is calling.

use std::collections::HashMap;

use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;

use crate::routes::error;
use crate::state::AppState;

fn internal(e: anyhow::Error) -> Response {
    tracing::error!("[API] database error: {e:#}");
    error(StatusCode::INTERNAL_SERVER_ERROR, "Internal server error")
}

pub async fn load(State(st): State<AppState>, Path(uuid): Path<String>) -> Response {
    let project = match st.db.project_by_uuid(&uuid).await {
        Ok(Some(p)) => p,
        Ok(None) => return error(StatusCode::NOT_FOUND, "Project not found"),
        Err(e) => return internal(e),
    };
    match st.db.snapshot(project.id).await {
        Ok(Some(data)) => {
            ([(header::CONTENT_TYPE, "application/octet-stream")], data).into_response()
        }
        Ok(None) => error(StatusCode::NOT_FOUND, "Document not found"),
        Err(e) => internal(e),
    }
}

pub async fn save(
    State(st): State<AppState>,
    Path(uuid): Path<String>,
    Query(query): Query<HashMap<String, String>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let project = match st.db.project_by_uuid(&uuid).await {
        Ok(Some(p)) => p,
        Ok(None) => return error(StatusCode::NOT_FOUND, "Project not found"),
        Err(e) => return internal(e),
    };
    let mark_saved = query
        .get("markSaved")
        .is_some_and(|v| v == "true" || v == "1");
    let title = headers
        .get("x-project-title")
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|t| !t.is_empty());
    match st
        .db
        .save_snapshot(project.id, &body, mark_saved, title)
        .await
    {
        Ok(()) => Json(json!({"success": true, "size": body.len()})).into_response(),
        Err(e) => internal(e),
    }
}
