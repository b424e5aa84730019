use axum::body::Bytes;
use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Value};

use crate::auth::{verify_password, TOKEN_TTL_SECS};
use crate::config::Fault;
use crate::routes::email::is_email;
use crate::routes::error;
use crate::state::AppState;

/// Elysia's answer to a body that fails the route's schema.
pub(crate) fn validation(message: &str) -> Response {
    (
        StatusCode::BAD_REQUEST,
        Json(json!({"type": "validation", "on": "body", "message": message})),
    )
        .into_response()
}

/// `POST /api/auth/login` with `{"email","password"}`.
pub async fn login(State(st): State<AppState>, body: Bytes) -> Response {
    let Ok(body) = serde_json::from_slice::<Value>(&body) else {
        return validation("Expected a JSON body");
    };
    let (Some(email), Some(password)) = (
        body.get("email").and_then(Value::as_str),
        body.get("password").and_then(Value::as_str),
    ) else {
        return validation("Expected string properties 'email' and 'password'");
    };
    if !is_email(email) {
        return validation("Property 'email' must be an email");
    }
    if password.is_empty() {
        return validation("Property 'password' must not be empty");
    }

    let user = match st.db.user_by_email(email).await {
        Ok(u) => u,
        Err(e) => {
            tracing::error!("[Auth] user lookup failed: {e:#}");
            return error(StatusCode::INTERNAL_SERVER_ERROR, "Internal server error");
        }
    };
    let unauthorized = || error(StatusCode::UNAUTHORIZED, "Invalid credentials");
    let Some(user) = user else {
        return unauthorized();
    };
    let blocking = st.cfg.fault.has(Fault::BlockingBcrypt);
    let ok = if blocking {
        // The seed's bug, unthrottled: every login hashes on the runtime's own threads.
        verify_password(true, password.to_string(), user.password.clone()).await
    } else {
        let _slot = st.bcrypt_slots.acquire().await;
        verify_password(false, password.to_string(), user.password.clone()).await
    };
    if !ok {
        return unauthorized();
    }

    let roles = user.role_list();
    let token = st.tokens.issue(user.id, &user.email, &roles);
    let secure = if st.cfg.production { "; Secure" } else { "" };
    let cookie =
        format!("auth={token}; Max-Age={TOKEN_TTL_SECS}; Path=/; HttpOnly; SameSite=Lax{secure}");
    let body = json!({
        "access_token": token,
        "user": {
            "id": user.id,
            "email": user.email,
            "user_id": user.user_id,
            "roles": roles,
            "is_lopd_accepted": user.is_lopd_accepted != 0,
            "quota_mb": user.quota_mb,
        }
    });
    ([(header::SET_COOKIE, cookie)], Json(body)).into_response()
}
