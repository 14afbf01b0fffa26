//! Who is calling: only "is there a credential, and whose is it". Never "may they".
//!
//! - [`Bearer`] is the inbound `Authorization: Bearer` value. It is forwarded to Nextcloud
//!   unchanged, never logged (its `Debug` is redacted), never stored, and dropped with the
//!   request.
//! - A JWT bearer must name this server's canonical URI in `aud` (Nextcloud does not check
//!   the audience; the signature is Nextcloud's to check, not ours).
//! - The uid comes from Nextcloud (`/ocs/v2.php/cloud/user`) and is cached for 60 s keyed by
//!   sha256(token): the cache holds hashes and uids, never a token.
//! - [`require_caller`] is the axum layer in front of `/mcp`: no bearer, or one Nextcloud
//!   rejects, is 401 with the RFC 9728 `WWW-Authenticate` challenge.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use base64::Engine;
use hmac::{Hmac, KeyInit, Mac};
use sha2::{Digest, Sha256};

use crate::error::Error;
use crate::server::AppState;

/// How long a resolved uid is trusted without asking Nextcloud again.
pub const UID_TTL: Duration = Duration::from_secs(60);
/// Upper bound on cached uids, so a flood of distinct tokens cannot grow memory unboundedly.
const UID_CACHE_MAX: usize = 10_000;

/// The caller's bearer token. Redacted in `Debug`; there is deliberately no `Display`.
#[derive(Clone)]
pub struct Bearer(String);

impl std::fmt::Debug for Bearer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Bearer(<redacted>)")
    }
}

impl Bearer {
    /// Reads `Authorization: Bearer <token>` (scheme case-insensitive).
    pub fn from_headers(headers: &HeaderMap) -> Option<Bearer> {
        let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
        let (scheme, token) = value.trim().split_once(' ')?;
        let token = token.trim();
        (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty() && !token.contains(char::is_whitespace))
            .then(|| Bearer(token.to_string()))
    }

    /// The `Authorization` header to send to Nextcloud: the caller's own, unchanged.
    pub fn headers(&self) -> HeaderMap {
        let mut h = HeaderMap::new();
        if let Ok(mut v) = HeaderValue::from_str(&format!("Bearer {}", self.0)) {
            v.set_sensitive(true);
            h.insert(header::AUTHORIZATION, v);
        }
        h
    }

    /// sha256 of the token: the only form in which it may be used as a key.
    pub fn digest(&self) -> [u8; 32] {
        Sha256::digest(self.0.as_bytes()).into()
    }

    /// HMAC-SHA256 of the token under `key`: a slot name that only this token (and only in
    /// the process holding `key`) can produce.
    /// The key is one SHA-256 block (64 bytes), so HMAC uses it as is.
    pub fn keyed_digest(&self, key: &[u8; 64]) -> [u8; 32] {
        let mut mac = <Hmac<Sha256> as KeyInit>::new(&(*key).into());
        mac.update(self.0.as_bytes());
        mac.finalize().into_bytes().into()
    }

    /// When the token says it expires (a JWT's `exp`), or `None` (opaque, or no usable `exp`).
    /// Unverified, so it is only ever used to shorten how long something is kept, never to
    /// accept the token.
    pub fn stated_expiry(&self) -> Option<SystemTime> {
        let exp = jwt_claims(&self.0)??.get("exp")?.as_u64()?;
        UNIX_EPOCH.checked_add(Duration::from_secs(exp))
    }

    fn as_str(&self) -> &str {
        &self.0
    }
}

/// The authenticated caller of one request: their bearer and the uid Nextcloud gave for it.
/// Lives in the request's extensions and dies with the request.
#[derive(Clone, Debug)]
pub struct Caller {
    bearer: Bearer,
    uid: String,
}

impl Caller {
    pub fn new(bearer: Bearer, uid: String) -> Self {
        Caller { bearer, uid }
    }
    pub fn bearer(&self) -> &Bearer {
        &self.bearer
    }
    pub fn uid(&self) -> &str {
        &self.uid
    }
}

/// What the token's shape says about its audience.
#[derive(Debug, PartialEq, Eq)]
pub enum Audience {
    /// Not a JWT (an app password, an opaque token): Nextcloud alone decides.
    Opaque,
    /// A JWT naming this server.
    Ours,
    /// A JWT minted for someone else (or without a usable `aud`): refused.
    Foreign,
}

/// Checks a JWT's `aud` (string or array) against `resource`. The signature is not checked
/// here: Nextcloud checks it on every request the token is used for.
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
/// but the token's own statements; the signature is Nextcloud's to check.
fn jwt_claims(token: &str) -> Option<Option<serde_json::Value>> {
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

/// uid by sha256(token), for [`UID_TTL`].
#[derive(Default)]
pub struct UidCache {
    entries: Mutex<HashMap<[u8; 32], (String, Instant)>>,
}

impl UidCache {
    pub fn get(&self, key: &[u8; 32]) -> Option<String> {
        let map = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        map.get(key).filter(|(_, at)| at.elapsed() < UID_TTL).map(|(uid, _)| uid.clone())
    }

    pub fn put(&self, key: [u8; 32], uid: String) {
        let mut map = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        if map.len() >= UID_CACHE_MAX {
            map.retain(|_, (_, at)| at.elapsed() < UID_TTL);
            if map.len() >= UID_CACHE_MAX {
                map.clear();
            }
        }
        map.insert(key, (uid, Instant::now()));
    }
}

/// Resolves the caller of a request, or says why not.
pub async fn resolve(state: &AppState, headers: &HeaderMap) -> Result<Caller, Refusal> {
    let bearer = Bearer::from_headers(headers).ok_or(Refusal::Missing)?;
    if audience(bearer.as_str(), &state.resource) == Audience::Foreign {
        return Err(Refusal::Invalid("the token was not issued for this server"));
    }
    let key = bearer.digest();
    if let Some(uid) = state.uids.get(&key) {
        return Ok(Caller::new(bearer, uid));
    }
    match state.nextcloud.whoami(&bearer).await {
        Ok(uid) => {
            state.uids.put(key, uid.clone());
            Ok(Caller::new(bearer, uid))
        }
        Err(Error::AuthExpired | Error::NotFound) => Err(Refusal::Invalid("Nextcloud did not accept the token")),
        Err(e) => Err(Refusal::Unavailable(e.to_string())),
    }
}

/// Why a request has no caller.
#[derive(Debug)]
pub enum Refusal {
    Missing,
    Invalid(&'static str),
    Unavailable(String),
}

/// The axum layer in front of `/mcp`: attaches the [`Caller`] or answers 401.
pub async fn require_caller(State(state): State<Arc<AppState>>, mut request: Request, next: Next) -> Response {
    match resolve(&state, request.headers()).await {
        Ok(caller) => {
            request.extensions_mut().insert(caller);
            next.run(request).await
        }
        Err(refusal) => refusal_response(&state, refusal),
    }
}

fn refusal_response(state: &AppState, refusal: Refusal) -> Response {
    let metadata = format!("{}/.well-known/oauth-protected-resource", state.public_origin);
    let (status, challenge, message) = match refusal {
        Refusal::Missing => (
            StatusCode::UNAUTHORIZED,
            format!(r#"Bearer resource_metadata="{metadata}""#),
            "a bearer token is required".to_string(),
        ),
        Refusal::Invalid(why) => (
            StatusCode::UNAUTHORIZED,
            format!(r#"Bearer resource_metadata="{metadata}", error="invalid_token", error_description="{why}""#),
            why.to_string(),
        ),
        Refusal::Unavailable(why) => {
            tracing::warn!(%why, "cannot identify the caller");
            return (
                StatusCode::SERVICE_UNAVAILABLE,
                axum::Json(serde_json::json!({"error": "Nextcloud is unavailable; try again later"})),
            )
                .into_response();
        }
    };
    let mut response = (status, axum::Json(serde_json::json!({ "error": message }))).into_response();
    if let Ok(v) = HeaderValue::from_str(&challenge) {
        response.headers_mut().insert(header::WWW_AUTHENTICATE, v);
    }
    response
}

/// The RFC 9728 protected-resource metadata document.
pub fn resource_metadata(resource: &str, authorization_server: &str) -> serde_json::Value {
    serde_json::json!({
        "resource": resource,
        "authorization_servers": [authorization_server.trim_end_matches('/')],
        "bearer_methods_supported": ["header"],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn jwt(claims: serde_json::Value) -> String {
        let e = |v: &serde_json::Value| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(serde_json::to_vec(v).unwrap());
        format!("{}.{}.sig", e(&serde_json::json!({"alg": "RS256", "typ": "at+jwt"})), e(&claims))
    }

    #[test]
    fn audience_string_or_array() {
        let r = "http://127.0.0.1:8711/mcp";
        assert_eq!(audience(&jwt(serde_json::json!({"aud": r})), r), Audience::Ours);
        assert_eq!(audience(&jwt(serde_json::json!({"aud": ["x", r]})), r), Audience::Ours);
        assert_eq!(audience(&jwt(serde_json::json!({"aud": "http://other/mcp"})), r), Audience::Foreign);
        assert_eq!(audience(&jwt(serde_json::json!({"sub": "alice"})), r), Audience::Foreign);
        assert_eq!(audience("app-password-with.two.dots", r), Audience::Opaque);
        assert_eq!(audience("plainAppPassword", r), Audience::Opaque);
    }

    #[test]
    fn bearer_parsing_and_redaction() {
        let mut h = HeaderMap::new();
        h.insert(header::AUTHORIZATION, HeaderValue::from_static("bearer  s3cret "));
        let b = Bearer::from_headers(&h).unwrap();
        assert_eq!(format!("{b:?}"), "Bearer(<redacted>)");
        assert!(!format!("{:?}", Caller::new(b.clone(), "alice".into())).contains("s3cret"));
        h.insert(header::AUTHORIZATION, HeaderValue::from_static("Basic abc"));
        assert!(Bearer::from_headers(&h).is_none());
    }

    #[test]
    fn cache_keys_are_hashes() {
        let cache = UidCache::default();
        let b = Bearer("tok".into());
        cache.put(b.digest(), "alice".into());
        assert_eq!(cache.get(&b.digest()).as_deref(), Some("alice"));
        assert_eq!(cache.get(&Bearer("other".into()).digest()), None);
    }
}
