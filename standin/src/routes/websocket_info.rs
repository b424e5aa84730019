//! Per-instance relay statistics. Public in the fork; ROLE_ADMIN (Bearer or `auth` cookie) in newer
//! images, which `STANDIN_INFO_REQUIRES_ADMIN=1` selects.

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;

use crate::auth::{auth_cookie, bearer};
use crate::routes::error;
use crate::state::AppState;

fn admin_gate(st: &AppState, headers: &HeaderMap) -> Option<Response> {
    if !st.cfg.info_requires_admin {
        return None;
    }
    let Some(token) = bearer(headers).or_else(|| auth_cookie(headers)) else {
        return Some(error(StatusCode::UNAUTHORIZED, "Authentication required"));
    };
    match st.tokens.verify(token) {
        None => Some(error(StatusCode::UNAUTHORIZED, "Invalid token")),
        Some(c) if !c.is_admin() => Some(error(StatusCode::FORBIDDEN, "Admin access required")),
        Some(_) => None,
    }
}

/// The app reports `ELYSIA_PORT || PORT || 3002`, not the port it listens on: cosmetic, kept as is.
fn reported_port() -> u16 {
    ["ELYSIA_PORT", "PORT"]
        .iter()
        .find_map(|k| std::env::var(k).ok().and_then(|v| v.parse().ok()))
        .unwrap_or(3002)
}

/// `GET /api/websocket/info`.
pub async fn info(State(st): State<AppState>, headers: HeaderMap) -> Response {
    if let Some(denied) = admin_gate(&st, &headers) {
        return denied;
    }
    let (rooms, connections) = st.rooms.counts();
    Json(json!({
        "port": reported_port(), "isRunning": true, "roomsCount": rooms,
        "totalConnections": connections, "mode": "stateless-relay",
    }))
    .into_response()
}

/// `GET /api/websocket/rooms`, the newer shape.
pub async fn rooms(State(st): State<AppState>, headers: HeaderMap) -> Response {
    if let Some(denied) = admin_gate(&st, &headers) {
        return denied;
    }
    let rooms = st.rooms.list();
    let total: usize = rooms.iter().map(|r| r.connections).sum();
    Json(json!({"rooms": rooms, "totalRooms": rooms.len(), "totalConnections": total}))
        .into_response()
}
