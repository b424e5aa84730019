//! JWTs minted offline, in the app's login payload shape, signed HS256 with the stack's API_JWT_SECRET.
//! The app's `verifyToken()` checks only the signature and `sub` (contract §1), so a load run can open
//! WebSockets without paying a bcrypt login per user.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use hmac::{Hmac, Mac};
use sha2::Sha256;

/// `{sub:<users.id>, email, roles:["ROLE_USER"], isGuest:false, authMethod:"local", iat, exp}`.
pub fn mint(secret: &[u8], user_id: i64, email: &str, iat: i64, ttl_s: i64) -> String {
    let header = URL_SAFE_NO_PAD.encode(br#"{"alg":"HS256","typ":"JWT"}"#);
    let payload = serde_json::json!({
        "sub": user_id,
        "email": email,
        "roles": ["ROLE_USER"],
        "isGuest": false,
        "authMethod": "local",
        "iat": iat,
        "exp": iat + ttl_s,
    });
    let payload = URL_SAFE_NO_PAD.encode(payload.to_string());
    let input = format!("{header}.{payload}");
    let mut mac = Hmac::<Sha256>::new_from_slice(secret).expect("HMAC takes any key length");
    mac.update(input.as_bytes());
    let sig = URL_SAFE_NO_PAD.encode(mac.finalize().into_bytes());
    format!("{input}.{sig}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payload_and_signature() {
        let t = mint(b"secret", 42, "a@x.org", 1_700_000_000, 3600);
        let parts: Vec<&str> = t.split('.').collect();
        assert_eq!(parts.len(), 3);
        let payload: serde_json::Value =
            serde_json::from_slice(&URL_SAFE_NO_PAD.decode(parts[1]).unwrap()).unwrap();
        assert_eq!(
            payload,
            serde_json::json!({"sub": 42, "email": "a@x.org", "roles": ["ROLE_USER"], "isGuest": false,
                "authMethod": "local", "iat": 1_700_000_000, "exp": 1_700_003_600})
        );
        let mut mac = Hmac::<Sha256>::new_from_slice(b"secret").unwrap();
        mac.update(format!("{}.{}", parts[0], parts[1]).as_bytes());
        mac.verify_slice(&URL_SAFE_NO_PAD.decode(parts[2]).unwrap())
            .unwrap();
    }
}
