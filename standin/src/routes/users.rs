//! `POST /api/v1/users` (ROLE_ADMIN Bearer): `{email, password (4+), roles?}` → 201 `{success, data}`, 409
//! when the email exists. Hashed at the app's bcrypt cost (10, `Bun.password.hash`) on the blocking pool.
//! Faults: `users-500` answers 500 after the insert (the real build's bug), `users-fail` before it.

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Value};

use crate::config::Fault;
use crate::routes::email::is_email;
use crate::routes::login::validation;
use crate::routes::projects::{fail, internal, v1_caller};
use crate::routes::store;
use crate::state::AppState;

/// The app's `Bun.password.hash` default.
pub const BCRYPT_COST: u32 = 10;

pub async fn create(State(st): State<AppState>, headers: HeaderMap, body: Bytes) -> Response {
    let caller = match v1_caller(&st, &headers) {
        Ok(c) => c,
        Err((status, code, message)) => return fail(status, code, message),
    };
    if !caller.is_admin() {
        return fail(StatusCode::FORBIDDEN, "FORBIDDEN", "Admin access required");
    }
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
    if password.chars().count() < 4 {
        return validation("Property 'password' must be at least 4 characters");
    }
    let roles: Vec<String> = match body.get("roles") {
        None | Some(Value::Null) => vec!["ROLE_USER".into()],
        Some(Value::Array(a)) if a.iter().all(Value::is_string) => a
            .iter()
            .filter_map(|r| r.as_str().map(str::to_string))
            .collect(),
        Some(_) => return validation("Property 'roles' must be an array of strings"),
    };
    let conflict = || fail(StatusCode::CONFLICT, "CONFLICT", "User already exists");
    match st.db.user_by_email(email).await {
        Ok(Some(_)) => return conflict(),
        Ok(None) => {}
        Err(e) => return internal(e),
    }
    if st.cfg.fault.has(Fault::UsersFail) {
        return internal(anyhow::anyhow!(
            "the write failed (STANDIN_FAULT=users-fail)"
        ));
    }
    let pw = password.to_string();
    let hash = match tokio::task::spawn_blocking(move || bcrypt::hash(pw, BCRYPT_COST)).await {
        Ok(Ok(h)) => h,
        Ok(Err(e)) => return internal(e.into()),
        Err(e) => return internal(e.into()),
    };
    match store::insert_user(&st.db, email, &hash, &roles).await {
        Ok(_) => {}
        Err(e) if store::is_unique_violation(&e) => return conflict(),
        Err(e) => return internal(e.into()),
    }
    if st.cfg.fault.has(Fault::Users500) {
        // The row is there; the real build then reads an insert id the ORM did not return.
        return internal(anyhow::anyhow!(
            "Unknown column 'NaN' in 'where clause' (STANDIN_FAULT=users-500)"
        ));
    }
    match st.db.user_by_email(email).await {
        Ok(Some(u)) => (
            StatusCode::CREATED,
            Json(json!({"success": true, "data": {
                "id": u.id, "email": u.email, "user_id": u.user_id, "roles": u.role_list(),
                "quota_mb": u.quota_mb, "is_active": true,
            }})),
        )
            .into_response(),
        Ok(None) => internal(anyhow::anyhow!("user {email} vanished after its insert")),
        Err(e) => internal(e),
    }
}
