//! Tokens and passwords as the app does them: HS256 JWTs with the app's payload, checked by signature and
//! `sub` only (no DB lookup, like the app's `verifyToken()`), and bcrypt verification.

use axum::http::{header, HeaderMap};
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};

/// Login tokens live 7 days, as do the `auth` cookie's Max-Age.
pub const TOKEN_TTL_SECS: i64 = 7 * 24 * 3600;

#[derive(Debug, Serialize, Deserialize)]
struct Claims {
    /// The users.id; an int from login, a string from the app's `jwt:generate` CLI: both are accepted.
    sub: serde_json::Value,
    #[serde(default)]
    email: Option<String>,
    #[serde(default)]
    roles: Vec<String>,
    #[serde(rename = "isGuest", default)]
    is_guest: bool,
    #[serde(
        rename = "authMethod",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    auth_method: Option<String>,
    #[serde(default)]
    iat: i64,
    exp: i64,
}

/// Who a valid token says the caller is.
#[derive(Debug, Clone)]
pub struct Caller {
    pub id: i32,
    pub roles: Vec<String>,
    pub is_guest: bool,
}

impl Caller {
    pub fn is_admin(&self) -> bool {
        self.roles.iter().any(|r| r == "ROLE_ADMIN")
    }
}

pub struct Tokens {
    encoding: EncodingKey,
    decoding: DecodingKey,
    validation: Validation,
}

impl Tokens {
    pub fn new(secret: &str) -> Tokens {
        let mut validation = Validation::new(Algorithm::HS256);
        // Tokens minted with `--audience`/`--issuer` still verify in the app, which checks neither.
        validation.validate_aud = false;
        validation.leeway = 0;
        Tokens {
            encoding: EncodingKey::from_secret(secret.as_bytes()),
            decoding: DecodingKey::from_secret(secret.as_bytes()),
            validation,
        }
    }

    pub fn issue(&self, id: i32, email: &str, roles: &[String]) -> String {
        let iat = crate::db::now_ms() / 1000;
        let claims = Claims {
            sub: id.into(),
            email: Some(email.to_string()),
            roles: roles.to_vec(),
            is_guest: false,
            auth_method: Some("local".into()),
            iat,
            exp: iat + TOKEN_TTL_SECS,
        };
        jsonwebtoken::encode(&Header::new(Algorithm::HS256), &claims, &self.encoding)
            .expect("HS256 signing cannot fail")
    }

    pub fn verify(&self, token: &str) -> Option<Caller> {
        let data = jsonwebtoken::decode::<Claims>(token, &self.decoding, &self.validation).ok()?;
        let c = data.claims;
        let id = match &c.sub {
            serde_json::Value::Number(n) => i32::try_from(n.as_i64()?).ok()?,
            serde_json::Value::String(s) => s.trim().parse().ok()?,
            _ => return None,
        };
        Some(Caller {
            id,
            roles: c.roles,
            is_guest: c.is_guest,
        })
    }
}

/// `Authorization: Bearer <jwt>`.
pub fn bearer(headers: &HeaderMap) -> Option<&str> {
    let v = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = v.split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
}

/// The `auth` cookie, the fallback most of the app's routes accept.
pub fn auth_cookie(headers: &HeaderMap) -> Option<&str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .find_map(|kv| kv.trim().strip_prefix("auth="))
}

/// bcrypt verify of `$2a$`/`$2b$`/`$2y$` hashes. On the blocking pool, so that a login burst never stalls
/// the runtime; `blocking` (`Fault::BlockingBcrypt`) inline on purpose, like the old bcryptjs on Bun's event loop.
pub async fn verify_password(blocking: bool, password: String, hash: String) -> bool {
    if blocking {
        return bcrypt::verify(&password, &hash).unwrap_or(false);
    }
    tokio::task::spawn_blocking(move || bcrypt::verify(&password, &hash).unwrap_or(false))
        .await
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_string_sub() {
        let t = Tokens::new("k");
        let tok = t.issue(7, "a@b.c", &["ROLE_USER".into(), "ROLE_ADMIN".into()]);
        let c = t.verify(&tok).unwrap();
        assert_eq!(c.id, 7);
        assert!(c.is_admin() && !c.is_guest);
        assert!(Tokens::new("other").verify(&tok).is_none());

        let now = crate::db::now_ms() / 1000;
        let claims =
            serde_json::json!({"sub": "42", "email": "x@y.z", "iat": now, "exp": now + 60});
        let s = jsonwebtoken::encode(&Header::default(), &claims, &EncodingKey::from_secret(b"k"))
            .unwrap();
        assert_eq!(t.verify(&s).unwrap().id, 42);
    }

    #[test]
    fn header_and_cookie() {
        let mut h = HeaderMap::new();
        h.insert(header::AUTHORIZATION, "Bearer abc".parse().unwrap());
        h.insert(header::COOKIE, "x=1; auth=def; y=2".parse().unwrap());
        assert_eq!(bearer(&h), Some("abc"));
        assert_eq!(auth_cookie(&h), Some("def"));
    }

    #[test]
    fn bcrypt_prefixes() {
        let h = bcrypt::hash("pw", 4).unwrap();
        for prefix in ["$2a$", "$2b$", "$2y$"] {
            let v = format!("{prefix}{}", &h[4..]);
            assert!(bcrypt::verify("pw", &v).unwrap(), "{prefix}");
        }
    }
}
