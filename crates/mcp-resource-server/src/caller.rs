//! Who is calling: the inbound credential and the uid upstream gave for it. Never "may they".
//!
//! - [`Bearer`] is the inbound `Authorization: Bearer` value. It is forwarded upstream
//!   unchanged, never logged (its `Debug` is redacted, there is no `Display`), never stored,
//!   and dropped with the request. Where it must key something, only a digest of it does.
//! - [`Caller`] pairs it with the uid; the auth layer puts one into each request's
//!   extensions, and it dies with the request.
//!
//! A leaf: imports nothing from the rest of the crate but the unverified claim reader.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use hmac::{Hmac, KeyInit, Mac};
use http::{HeaderMap, HeaderValue, header};
use sha2::{Digest, Sha256};

use crate::audience::jwt_claims;

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

    /// The `Authorization` header to send upstream: the caller's own, unchanged, marked
    /// sensitive so HTTP tooling does not print it.
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
    pub fn keyed_digest(&self, key: &[u8; 64]) -> [u8; 32] {
        keyed_digest(key, &[self.0.as_bytes()])
    }

    /// When the token says it expires (a JWT's `exp`), or `None` (opaque, or no usable `exp`).
    /// Unverified, so it is only ever used to shorten how long something is kept, never to
    /// accept the token.
    pub fn stated_expiry(&self) -> Option<SystemTime> {
        let exp = jwt_claims(&self.0)??.get("exp")?.as_u64()?;
        UNIX_EPOCH.checked_add(Duration::from_secs(exp))
    }

    pub(crate) fn as_str(&self) -> &str {
        &self.0
    }
}

/// The authenticated caller of one request: their bearer and the uid upstream gave for it.
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

/// HMAC-SHA256 under a process key of `parts` one after the other: how a process names
/// something secret (a bearer, a uid) without keeping it, in a form only it can produce. A
/// caller that hashes several kinds of names under one key keeps them apart by a prefix part.
/// The key is one SHA-256 block (64 bytes), so HMAC uses it as is.
pub fn keyed_digest(key: &[u8; 64], parts: &[&[u8]]) -> [u8; 32] {
    let mut mac = <Hmac<Sha256> as KeyInit>::new(&(*key).into());
    for part in parts {
        mac.update(part);
    }
    mac.finalize().into_bytes().into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_parsing_and_redaction() {
        let mut h = HeaderMap::new();
        h.insert(header::AUTHORIZATION, HeaderValue::from_static("bearer  s3cret "));
        let b = Bearer::from_headers(&h).unwrap();
        assert_eq!(format!("{b:?}"), "Bearer(<redacted>)");
        assert!(!format!("{:?}", Caller::new(b.clone(), "alice".into())).contains("s3cret"));
        assert_eq!(b.headers()[header::AUTHORIZATION], "Bearer s3cret");
        assert!(b.headers()[header::AUTHORIZATION].is_sensitive());
        h.insert(header::AUTHORIZATION, HeaderValue::from_static("Basic abc"));
        assert!(Bearer::from_headers(&h).is_none());
        h.insert(header::AUTHORIZATION, HeaderValue::from_static("Bearer a b"));
        assert!(Bearer::from_headers(&h).is_none());
    }

    #[test]
    fn digests_differ_by_key() {
        let b = Bearer("tok".into());
        assert_ne!(b.keyed_digest(&[1; 64]), b.keyed_digest(&[2; 64]));
        assert_ne!(b.keyed_digest(&[1; 64]), b.digest());
        // The parts are one message: only a caller's own prefix part keeps kinds of names apart.
        assert_eq!(b.keyed_digest(&[1; 64]), keyed_digest(&[1; 64], &[b"t", b"ok"]));
        assert_ne!(b.keyed_digest(&[1; 64]), keyed_digest(&[1; 64], &[b"\0uid\0", b"tok"]));
        assert_eq!(Bearer("opaque".into()).stated_expiry(), None);
    }
}
