//! The JWT audience check (RFC 8707 / RFC 9068 `aud`): a token minted for another resource
//! is refused here, because the upstream (Nextcloud) does not check the audience itself.
//! The signature is not checked: the upstream checks it on every request the token is used
//! for, and nothing here treats a claim as evidence of anything else.

use base64::Engine;

/// What the token's shape says about its audience.
#[derive(Debug, PartialEq, Eq)]
pub enum Audience {
    /// Not a JWT (an app password, an opaque token): the upstream alone decides.
    Opaque,
    /// A JWT naming this server.
    Ours,
    /// A JWT minted for someone else (or without a usable `aud`): refused.
    Foreign,
}

/// Checks a JWT's `aud` (string or array) against `resource`, ignoring one trailing slash.
pub fn audience(token: &str, resource: &str) -> Audience {
    let claims = match jwt_claims(token) {
        None => return Audience::Opaque,
        Some(None) => return Audience::Foreign,
        Some(Some(claims)) => claims,
    };
    let same = |a: &str| a.trim_end_matches('/') == resource.trim_end_matches('/');
    let ok = match claims.get("aud") {
        Some(serde_json::Value::String(a)) => same(a),
        Some(serde_json::Value::Array(list)) => list.iter().filter_map(|v| v.as_str()).any(same),
        _ => false,
    };
    if ok { Audience::Ours } else { Audience::Foreign }
}

/// A JWT's claims, unverified: `None` when the token is not JWT-shaped (three parts, a JSON
/// header), `Some(None)` when it is but its claims are unreadable. Never evidence of anything
/// but the token's own statements.
pub(crate) fn jwt_claims(token: &str) -> Option<Option<serde_json::Value>> {
    let parts: Vec<&str> = token.split('.').collect();
    if parts.len() != 3 {
        return None;
    }
    let decode = |s: &str| {
        base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(s.trim_end_matches('='))
            .ok()
    };
    let header_is_json = decode(parts[0])
        .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
        .is_some_and(|v| v.is_object());
    if !header_is_json {
        return None;
    }
    Some(decode(parts[1]).and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok()))
}

#[cfg(test)]
pub(crate) fn test_jwt(claims: serde_json::Value) -> String {
    let e = |v: &serde_json::Value| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(serde_json::to_vec(v).unwrap_or_default());
    format!("{}.{}.sig", e(&serde_json::json!({"alg": "RS256", "typ": "at+jwt"})), e(&claims))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn audience_string_or_array() {
        let r = "http://127.0.0.1:8711/mcp";
        assert_eq!(audience(&test_jwt(serde_json::json!({"aud": r})), r), Audience::Ours);
        assert_eq!(audience(&test_jwt(serde_json::json!({"aud": format!("{r}/")})), r), Audience::Ours);
        assert_eq!(audience(&test_jwt(serde_json::json!({"aud": ["x", r]})), r), Audience::Ours);
        assert_eq!(
            audience(&test_jwt(serde_json::json!({"aud": "http://other/mcp"})), r),
            Audience::Foreign
        );
        assert_eq!(audience(&test_jwt(serde_json::json!({"sub": "alice"})), r), Audience::Foreign);
        assert_eq!(audience("app-password-with.two.dots", r), Audience::Opaque);
        assert_eq!(audience("plainAppPassword", r), Audience::Opaque);
    }
}
