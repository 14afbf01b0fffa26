//! G1 identity: the one module that resolves who a request acts for.
//!
//! Two secrets prove two different things, and conflating them is how G1 dies:
//! - `Authorization: Bearer <proxy secret>` proves the caller is our Nextcloud app;
//! - `X-Tamebi-Uid`, `X-Tamebi-Ts`, `X-Tamebi-Signature` (HMAC-SHA256 with the signing secret
//!   over `uid \n ts \n hex(sha256(body))`, skew at most 60 s) prove which user it acts for,
//!   bound to this exact body.
//!
//! `X-Tamebi-Nc-Authorization` is how to reach Nextcloud as that user; it is verified by
//! Nextcloud alone, lives for one request (or the turn it starts) and is never stored.
//!
//! No other module reads these headers. A uid anywhere in a JSON body is refused with 400:
//! a body uid is an attempt to choose one.

use hmac::{Hmac, KeyInit, Mac};
use http::HeaderMap;
use sha2::{Digest, Sha256};
use std::fmt;
use subtle::ConstantTimeEq;

use crate::config::Secret;

pub const HEADER_UID: &str = "x-tamebi-uid";
pub const HEADER_TS: &str = "x-tamebi-ts";
pub const HEADER_SIGNATURE: &str = "x-tamebi-signature";
pub const HEADER_NC_AUTHORIZATION: &str = "x-tamebi-nc-authorization";
pub const HEADER_REQUEST_ID: &str = "x-request-id";

/// Largest clock difference accepted between the PHP app and us.
pub const MAX_SKEW_SECS: i64 = 60;

/// The user's Nextcloud bearer for this request. Never printed, never stored.
#[derive(Clone)]
pub struct NcBearer(String);

impl NcBearer {
    /// The full header value to send to Nextcloud (or an MCP server): `Bearer <token>`.
    pub fn header_value(&self) -> String {
        format!("Bearer {}", self.0)
    }

    /// The bare token, for clients that add the `Bearer ` prefix themselves.
    pub fn token(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for NcBearer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("NcBearer(***)")
    }
}

/// The verified caller of one request.
#[derive(Clone, Debug)]
pub struct Caller {
    pub uid: String,
    pub request_id: String,
    pub nc_bearer: Option<NcBearer>,
}

/// Why a request was not accepted. Mapped to 401 or 400 by the HTTP layer; the reason is
/// logged, never sent.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum IdentityError {
    #[error("missing or wrong proxy bearer")]
    ProxyBearer,
    #[error("missing or malformed identity header {0}")]
    MissingHeader(&'static str),
    #[error("timestamp outside the allowed skew")]
    Skew,
    #[error("signature does not match")]
    Signature,
    #[error("request body names a user ({0})")]
    BodyUid(&'static str),
}

impl IdentityError {
    /// A body uid is a malformed request; everything else is "not signed in".
    pub fn is_bad_request(&self) -> bool {
        matches!(self, IdentityError::BodyUid(_))
    }
}

/// Secrets the verifier needs.
#[derive(Clone, Debug)]
pub struct Verifier {
    proxy_secret: Secret,
    signing_secret: Secret,
}

impl Verifier {
    pub fn new(proxy_secret: Secret, signing_secret: Secret) -> Self {
        Verifier {
            proxy_secret,
            signing_secret,
        }
    }

    /// Verifies a request's G1 headers against its raw body at time `now` (unix seconds).
    /// On success returns the caller; `request_id` is the caller's or a fresh one.
    pub fn verify(&self, headers: &HeaderMap, body: &[u8], now: i64, request_id: String) -> Result<Caller, IdentityError> {
        self.check_proxy_bearer(headers)?;
        let uid = header(headers, HEADER_UID)
            .filter(|u| valid_uid(u))
            .ok_or(IdentityError::MissingHeader("X-Tamebi-Uid"))?;
        let ts: i64 = header(headers, HEADER_TS)
            .and_then(|t| t.parse().ok())
            .ok_or(IdentityError::MissingHeader("X-Tamebi-Ts"))?;
        let given = header(headers, HEADER_SIGNATURE)
            .and_then(|s| hex::decode(s).ok())
            .ok_or(IdentityError::MissingHeader("X-Tamebi-Signature"))?;
        if (now - ts).abs() > MAX_SKEW_SECS {
            return Err(IdentityError::Skew);
        }
        let expected = sign(self.signing_secret.expose(), uid, ts, body);
        if expected.as_slice().ct_eq(given.as_slice()).unwrap_u8() != 1 {
            return Err(IdentityError::Signature);
        }
        reject_body_uid(body)?;
        Ok(Caller {
            uid: uid.to_string(),
            request_id,
            nc_bearer: nc_bearer(headers),
        })
    }

    fn check_proxy_bearer(&self, headers: &HeaderMap) -> Result<(), IdentityError> {
        let given = header(headers, "authorization")
            .and_then(|v| v.strip_prefix("Bearer "))
            .ok_or(IdentityError::ProxyBearer)?;
        // Constant time: the proxy secret must not leak through response timing.
        if given.as_bytes().ct_eq(self.proxy_secret.expose().as_bytes()).unwrap_u8() == 1 {
            Ok(())
        } else {
            Err(IdentityError::ProxyBearer)
        }
    }
}

/// HMAC-SHA256 over `uid \n ts \n hex(sha256(body))`. Shared with our signers' tests.
pub fn sign(signing_secret: &str, uid: &str, ts: i64, body: &[u8]) -> Vec<u8> {
    let signed = format!("{uid}\n{ts}\n{}", hex::encode(Sha256::digest(body)));
    // HMAC accepts keys of any length, so this cannot fail; an empty MAC would never verify.
    let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(signing_secret.as_bytes()) else {
        return Vec::new();
    };
    mac.update(signed.as_bytes());
    mac.finalize().into_bytes().to_vec()
}

/// Refuses a JSON object body with a top-level `uid`, `user` or `userId` field.
pub fn reject_body_uid(body: &[u8]) -> Result<(), IdentityError> {
    if body.is_empty() {
        return Ok(());
    }
    // Only the top level is inspected: that is where a caller would try to choose a user.
    // A non-JSON body is the handler's business (it answers 400 itself).
    let Ok(serde_json::Value::Object(map)) = serde_json::from_slice::<serde_json::Value>(body) else {
        return Ok(());
    };
    for key in ["uid", "user", "userId"] {
        if map.contains_key(key) {
            return Err(IdentityError::BodyUid(key));
        }
    }
    Ok(())
}

/// The caller's request id if it is a sane token, otherwise a fresh one.
pub fn request_id(headers: &HeaderMap) -> String {
    header(headers, HEADER_REQUEST_ID)
        .filter(|v| !v.is_empty() && v.len() <= 128 && v.bytes().all(|b| b.is_ascii_graphic()))
        .map(str::to_string)
        .unwrap_or_else(|| uuid::Uuid::new_v4().simple().to_string())
}

fn nc_bearer(headers: &HeaderMap) -> Option<NcBearer> {
    let token = header(headers, HEADER_NC_AUTHORIZATION)?.strip_prefix("Bearer ")?.trim();
    (!token.is_empty() && token.bytes().all(|b| b.is_ascii_graphic())).then(|| NcBearer(token.to_string()))
}

fn header<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

/// A Nextcloud uid: non-empty, bounded, no control characters (it is used in paths and logs).
fn valid_uid(uid: &str) -> bool {
    !uid.is_empty() && uid.len() <= 255 && !uid.chars().any(char::is_control)
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    #[derive(serde::Deserialize)]
    struct Vectors {
        proxy_secret: String,
        signing_secret: String,
        vectors: Vec<Vector>,
    }
    #[derive(serde::Deserialize)]
    struct Vector {
        uid: String,
        ts: i64,
        body: String,
        signature: String,
    }

    fn vectors() -> Vectors {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/testdata/g1-vectors.json");
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
    }

    fn verifier(v: &Vectors) -> Verifier {
        Verifier::new(Secret::new(&v.proxy_secret), Secret::new(&v.signing_secret))
    }

    fn signed(v: &Vectors, uid: &str, ts: i64, body: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(
            "authorization",
            HeaderValue::from_str(&format!("Bearer {}", v.proxy_secret)).unwrap(),
        );
        // Header values must be visible ASCII; the vectors' non-ASCII uid is sent as raw bytes.
        h.insert(HEADER_UID, HeaderValue::from_bytes(uid.as_bytes()).unwrap());
        h.insert(HEADER_TS, HeaderValue::from_str(&ts.to_string()).unwrap());
        let sig = hex::encode(sign(&v.signing_secret, uid, ts, body.as_bytes()));
        h.insert(HEADER_SIGNATURE, HeaderValue::from_str(&sig).unwrap());
        h
    }

    #[test]
    fn shared_vectors_match() {
        let v = vectors();
        assert!(v.vectors.len() >= 5);
        for case in &v.vectors {
            assert_eq!(
                hex::encode(sign(&v.signing_secret, &case.uid, case.ts, case.body.as_bytes())),
                case.signature,
                "{}",
                case.uid
            );
        }
    }

    #[test]
    fn a_correct_request_verifies_with_its_bearer() {
        let v = vectors();
        let mut h = signed(&v, "alice", 1000, "{}");
        h.insert(HEADER_NC_AUTHORIZATION, HeaderValue::from_static("Bearer tok-123"));
        let c = verifier(&v).verify(&h, b"{}", 1030, "rid".into()).unwrap();
        assert_eq!(c.uid, "alice");
        assert_eq!(c.nc_bearer.unwrap().header_value(), "Bearer tok-123");
    }

    #[test]
    fn every_forgery_is_refused() {
        let v = vectors();
        let ver = verifier(&v);
        let ok = signed(&v, "alice", 1000, "{}");

        let mut h = ok.clone();
        h.insert("authorization", HeaderValue::from_static("Bearer wrong"));
        assert_eq!(ver.verify(&h, b"{}", 1000, "r".into()).unwrap_err(), IdentityError::ProxyBearer);
        let mut h = ok.clone();
        h.remove("authorization");
        assert_eq!(ver.verify(&h, b"{}", 1000, "r".into()).unwrap_err(), IdentityError::ProxyBearer);
        // Signature made for another body.
        assert_eq!(
            ver.verify(&ok, b"{\"x\":1}", 1000, "r".into()).unwrap_err(),
            IdentityError::Signature
        );
        // Another uid under the same signature.
        let mut h = ok.clone();
        h.insert(HEADER_UID, HeaderValue::from_static("bob"));
        assert_eq!(ver.verify(&h, b"{}", 1000, "r".into()).unwrap_err(), IdentityError::Signature);
        // Skew: 60 s is fine, 61 s is not, in both directions.
        assert!(ver.verify(&ok, b"{}", 1060, "r".into()).is_ok());
        assert!(ver.verify(&ok, b"{}", 940, "r".into()).is_ok());
        assert_eq!(ver.verify(&ok, b"{}", 1061, "r".into()).unwrap_err(), IdentityError::Skew);
        assert_eq!(ver.verify(&ok, b"{}", 939, "r".into()).unwrap_err(), IdentityError::Skew);
        for missing in [HEADER_UID, HEADER_TS, HEADER_SIGNATURE] {
            let mut h = ok.clone();
            h.remove(missing);
            assert!(matches!(
                ver.verify(&h, b"{}", 1000, "r".into()),
                Err(IdentityError::MissingHeader(_))
            ));
        }
        let mut h = ok.clone();
        h.insert(HEADER_SIGNATURE, HeaderValue::from_static("not-hex"));
        assert!(matches!(
            ver.verify(&h, b"{}", 1000, "r".into()),
            Err(IdentityError::MissingHeader(_))
        ));
        // A signature made with the proxy secret instead of the signing secret.
        let mut h = ok.clone();
        let wrong = hex::encode(sign(&v.proxy_secret, "alice", 1000, b"{}"));
        h.insert(HEADER_SIGNATURE, HeaderValue::from_str(&wrong).unwrap());
        assert_eq!(ver.verify(&h, b"{}", 1000, "r".into()).unwrap_err(), IdentityError::Signature);
    }

    #[test]
    fn body_uid_is_refused_even_when_signed() {
        let v = vectors();
        for body in [r#"{"uid":"bob"}"#, r#"{"user":"bob","id":"c"}"#, r#"{"userId":"x"}"#] {
            let h = signed(&v, "alice", 1000, body);
            let err = verifier(&v).verify(&h, body.as_bytes(), 1000, "r".into()).unwrap_err();
            assert!(err.is_bad_request(), "{body}");
        }
        // Nested fields are message content, not identity claims.
        let body = r#"{"id":"c","messages":[{"user":"x"}]}"#;
        let h = signed(&v, "alice", 1000, body);
        assert!(verifier(&v).verify(&h, body.as_bytes(), 1000, "r".into()).is_ok());
    }

    #[test]
    fn request_ids_are_reused_only_when_sane() {
        let mut h = HeaderMap::new();
        h.insert(HEADER_REQUEST_ID, HeaderValue::from_static("abc-123"));
        assert_eq!(request_id(&h), "abc-123");
        h.insert(HEADER_REQUEST_ID, HeaderValue::from_static("has space"));
        assert_ne!(request_id(&h), "has space");
    }

    #[test]
    fn bearer_never_prints() {
        let b = NcBearer("secret-token".into());
        assert!(!format!("{b:?}").contains("secret-token"));
    }
}
