//! G1's signed strings: the exact bytes the Nextcloud app signs and the orchestrator checks
//! (docs/api.md, "Every `/v1/*` request").
//!
//! A user signature binds one request to who (uid), when (ts), which attempt (nonce), where
//! (method, path and raw query) and what (body and credentials header):
//!
//! ```text
//! METHOD \n path \n query \n uid \n ts \n nonce \n hex(sha256(body)) \n hex(sha256(credentials))
//! ```
//!
//! An admin signature is the app's word that the signed user is a Nextcloud admin, for that
//! same request: `tamebi-admin-v2 \n METHOD \n path \n query \n uid \n ts \n nonce`. Its purpose
//! prefix keeps it from ever equalling a user signature's string (a method is never
//! `tamebi-admin-v2`).
//!
//! Owns the canonical form and the HMAC-SHA256 over it, once for every Rust side: the verifier
//! (`src/auth/identity.rs`), the test harness and loadgen. The PHP app and the island's dev
//! host spell it in their own languages; all of them reproduce `testdata/g1-vectors.json`.
//! Must never: read headers, normalise a path or a query (the signature is over the bytes as
//! sent, so what the orchestrator checks is what it routes on), or decide anything.

use hmac::{Hmac, KeyInit, Mac};
use sha2::{Digest, Sha256};

/// The purpose that separates an admin signature from every user signature. `-v2`: the
/// method, path and query joined it (issue #27); a `-v1` admin signature is never accepted.
pub const ADMIN_PURPOSE: &str = "tamebi-admin-v2";

/// Where a request goes: what a signature binds it to besides who, when and what.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Target<'a> {
    /// The request method as sent (upper case: `GET`, `POST`, `DELETE`).
    pub method: &'a str,
    /// The path of the request target exactly as it arrives at the orchestrator: starting with
    /// `/`, percent-escapes as sent, nothing decoded or normalised.
    pub path: &'a str,
    /// The raw query after `?`, exactly as sent (not reordered, not decoded); "" when none.
    pub query: &'a str,
}

impl<'a> Target<'a> {
    /// `method` and an origin-form request target (`/path` or `/path?query`), split at its
    /// first `?` as HTTP does.
    pub fn new(method: &'a str, request_target: &'a str) -> Target<'a> {
        let (path, query) = request_target.split_once('?').unwrap_or((request_target, ""));
        Target { method, path, query }
    }
}

/// Everything a signature covers apart from the body and the credentials header.
#[derive(Debug, Clone, Copy)]
pub struct Signed<'a> {
    pub target: Target<'a>,
    pub uid: &'a str,
    pub ts: i64,
    pub nonce: &'a str,
}

/// Lowercase hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// The string a user signature is made over, from the hex SHA-256 of the raw body and of the
/// exact `X-Tamebi-Credentials` value ("" when the header is absent).
pub fn user_string(s: &Signed<'_>, body_sha256: &str, credentials_sha256: &str) -> String {
    let t = &s.target;
    format!(
        "{}\n{}\n{}\n{}\n{}\n{}\n{body_sha256}\n{credentials_sha256}",
        t.method, t.path, t.query, s.uid, s.ts, s.nonce
    )
}

/// HMAC-SHA256 over [`user_string`] of this body and credentials header value.
pub fn user_signature(signing_secret: &[u8], s: &Signed<'_>, body: &[u8], credentials: &str) -> Vec<u8> {
    user_signature_from_hashes(signing_secret, s, &sha256_hex(body), &sha256_hex(credentials.as_bytes()))
}

/// [`user_signature`] when the hashes are already known (the verifier hashes the credentials
/// header before the body arrives, so it need not keep the header's tokens twice).
pub fn user_signature_from_hashes(signing_secret: &[u8], s: &Signed<'_>, body_sha256: &str, credentials_sha256: &str) -> Vec<u8> {
    hmac_sha256(signing_secret, user_string(s, body_sha256, credentials_sha256).as_bytes())
}

/// The string an admin signature is made over: the purpose, then the same target, uid, ts
/// and nonce as the request's user signature.
pub fn admin_string(s: &Signed<'_>) -> String {
    let t = &s.target;
    format!(
        "{ADMIN_PURPOSE}\n{}\n{}\n{}\n{}\n{}\n{}",
        t.method, t.path, t.query, s.uid, s.ts, s.nonce
    )
}

/// HMAC-SHA256 over [`admin_string`].
pub fn admin_signature(signing_secret: &[u8], s: &Signed<'_>) -> Vec<u8> {
    hmac_sha256(signing_secret, admin_string(s).as_bytes())
}

/// HMAC-SHA256 of `message`. HMAC takes keys of any length, so the key cannot be refused; if
/// it ever were, the answer is empty, which never equals a 32-byte signature (fail closed).
pub fn hmac_sha256(key: &[u8], message: &[u8]) -> Vec<u8> {
    let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(key) else {
        return Vec::new();
    };
    mac.update(message);
    mac.finalize().into_bytes().to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vectors() -> serde_json::Value {
        let raw = include_str!("../../../testdata/g1-vectors.json");
        serde_json::from_str(raw).unwrap()
    }

    fn signed(v: &serde_json::Value) -> Signed<'_> {
        Signed {
            target: Target {
                method: v["method"].as_str().unwrap(),
                path: v["path"].as_str().unwrap(),
                query: v["query"].as_str().unwrap(),
            },
            uid: v["uid"].as_str().unwrap(),
            ts: v["ts"].as_i64().unwrap(),
            nonce: v["nonce"].as_str().unwrap(),
        }
    }

    #[test]
    fn every_user_vector_is_reproduced() {
        let doc = vectors();
        let secret = doc["signing_secret"].as_str().unwrap().as_bytes();
        let cases = doc["vectors"].as_array().unwrap();
        assert!(cases.len() >= 10);
        for v in cases {
            let s = signed(v);
            let (body, credentials) = (v["body"].as_str().unwrap(), v["credentials"].as_str().unwrap());
            assert_eq!(sha256_hex(body.as_bytes()), v["body_sha256"].as_str().unwrap());
            assert_eq!(sha256_hex(credentials.as_bytes()), v["credentials_sha256"].as_str().unwrap());
            assert_eq!(
                user_string(&s, &sha256_hex(body.as_bytes()), &sha256_hex(credentials.as_bytes())),
                v["signed_string"].as_str().unwrap()
            );
            assert_eq!(
                hex::encode(user_signature(secret, &s, body.as_bytes(), credentials)),
                v["signature"].as_str().unwrap(),
                "{v}"
            );
        }
    }

    #[test]
    fn every_admin_vector_is_reproduced() {
        let doc = vectors();
        let secret = doc["signing_secret"].as_str().unwrap().as_bytes();
        let cases = doc["admin_vectors"].as_array().unwrap();
        assert!(!cases.is_empty());
        for v in cases {
            let s = signed(v);
            assert_eq!(admin_string(&s), v["signed_string"].as_str().unwrap());
            assert_eq!(hex::encode(admin_signature(secret, &s)), v["signature"].as_str().unwrap(), "{v}");
        }
    }

    /// Issue #27: the same uid, ts, nonce, body and credentials on another method, path or
    /// query is another signature; so is an admin string for the same request.
    #[test]
    fn the_target_is_inside_the_signature() {
        let base = Signed {
            target: Target::new("GET", "/v1/conversations"),
            uid: "alice",
            ts: 1,
            nonce: "n0000000000000000",
        };
        let sig = |s: &Signed<'_>| user_signature(b"k", s, b"", "");
        let at = |method, target| Signed {
            target: Target::new(method, target),
            ..base
        };
        let reference = sig(&base);
        assert_eq!(reference.len(), 32);
        for other in [
            at("DELETE", "/v1/conversations"),
            at("DELETE", "/v1/conversations/c1"),
            at("DELETE", "/v1/me/data"),
            at("GET", "/v1/conversations?a=1"),
            at("GET", "/v1/conversations/"),
            at("get", "/v1/conversations"),
        ] {
            assert_ne!(sig(&other), reference, "{:?}", other.target);
        }
        // The query is raw: order and escapes count.
        let q1 = sig(&at("GET", "/v1/apps/resource?server=a&uri=ui%3A%2F%2Fa"));
        assert_ne!(q1, sig(&at("GET", "/v1/apps/resource?uri=ui%3A%2F%2Fa&server=a")));
        assert_ne!(q1, sig(&at("GET", "/v1/apps/resource?server=a&uri=ui://a")));
        // A `?` with nothing after it is the empty query, like no `?` at all.
        assert_eq!(Target::new("GET", "/v1/x?"), Target::new("GET", "/v1/x"));
        assert_ne!(admin_signature(b"k", &base), reference);
    }

    #[test]
    fn a_request_target_splits_at_its_first_question_mark() {
        assert_eq!(
            Target::new("GET", "/v1/apps/resource?server=a&uri=ui%3A%2F%2Fa%3Fb?c"),
            Target {
                method: "GET",
                path: "/v1/apps/resource",
                query: "server=a&uri=ui%3A%2F%2Fa%3Fb?c"
            }
        );
        assert_eq!(Target::new("DELETE", "/v1/me/data").query, "");
    }
}
