use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;

use crate::state::AppState;

/// `GET /healthcheck` and `/health`: what the image's HEALTHCHECK and exectl's deploy gate poll.
pub async fn health(State(st): State<AppState>) -> Json<serde_json::Value> {
    if let Some(crash) = &st.crash_once {
        crash.answered();
    }
    Json(json!({"status": "ok", "timestamp": crate::db::now_ms()}))
}

/// `GET /health/db`.
pub async fn health_db(State(st): State<AppState>) -> Response {
    match st.db.count_users().await {
        Ok(n) => {
            Json(json!({"status": "ok", "database": "connected", "usersCount": n})).into_response()
        }
        Err(e) => (
            StatusCode::SERVICE_UNAVAILABLE,
            Json(json!({"status": "error", "database": "disconnected", "error": e.to_string()})),
        )
            .into_response(),
    }
}
