//! The HTTP routes, with the app's paths, status codes and JSON shapes (contract §1).

mod create_quick;
mod email;
mod health;
mod login;
mod projects;
mod sharing;
pub(crate) mod store;
mod users;
mod websocket_info;
mod yjs_document;

use axum::extract::DefaultBodyLimit;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};

use crate::state::AppState;

pub fn router(state: AppState) -> Router {
    Router::new()
        .route("/healthcheck", get(health::health))
        .route("/health", get(health::health))
        .route("/health/db", get(health::health_db))
        .route("/api/auth/login", axum::routing::post(login::login))
        .route("/api/websocket/info", get(websocket_info::info))
        .route("/api/websocket/rooms", get(websocket_info::rooms))
        .route("/api/v1/users", axum::routing::post(users::create))
        .route(
            "/api/v1/projects",
            get(projects::list).post(projects::create),
        )
        .route("/api/v1/projects/{uuid}", get(projects::show))
        .route(
            "/api/project/create-quick",
            axum::routing::post(create_quick::create),
        )
        .route(
            "/api/projects/uuid/{uuid}/yjs-document",
            get(yjs_document::load)
                .post(yjs_document::save)
                // Documents with embedded assets are large; nginx in front allows 1024M.
                .layer(DefaultBodyLimit::max(256 << 20)),
        )
        .route(
            "/api/projects/uuid/{uuid}/visibility",
            axum::routing::patch(sharing::visibility),
        )
        .route(
            "/api/projects/uuid/{uuid}/collaborators",
            axum::routing::post(sharing::add_collaborator),
        )
        .route("/yjs/{doc}", get(crate::ws::upgrade))
        .with_state(state)
}

/// `{"error": ..., "message": ...}` with a status, the app's error shape.
pub fn error(status: StatusCode, message: &str) -> Response {
    let error = status.canonical_reason().unwrap_or("Error");
    (
        status,
        Json(serde_json::json!({"error": error, "message": message})),
    )
        .into_response()
}
