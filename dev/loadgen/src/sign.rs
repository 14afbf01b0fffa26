//! G1 request signing, exactly as docs/api.md states it: the proxy secret as a bearer, and
//! an HMAC-SHA256 over `uid + "\n" + ts + "\n" + hex(sha256(body))` with the signing secret.
//!
//! Pure functions only; verified against testdata/g1-vectors.json. It never decides who the
//! user is beyond what the caller passes in.

use hmac::{Hmac, KeyInit, Mac};
use sha2::{Digest, Sha256};

/// The G1 headers for one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signed {
    pub authorization: String,
    pub uid: String,
    pub ts: String,
    pub signature: String,
}

/// Lowercase hex HMAC-SHA256(signing_secret, uid + "\n" + ts + "\n" + hex(sha256(body))).
pub fn signature(signing_secret: &[u8], uid: &str, ts: i64, body: &[u8]) -> String {
    let body_hash = hex::encode(Sha256::digest(body));
    let mut mac = match Hmac::<Sha256>::new_from_slice(signing_secret) {
        Ok(mac) => mac,
        // HMAC takes keys of any length; this arm cannot be reached.
        Err(_) => return String::new(),
    };
    mac.update(format!("{uid}\n{ts}\n{body_hash}").as_bytes());
    hex::encode(mac.finalize().into_bytes())
}

/// Everything the orchestrator checks for G1.
pub fn sign(proxy_secret: &str, signing_secret: &str, uid: &str, ts: i64, body: &[u8]) -> Signed {
    Signed {
        authorization: format!("Bearer {proxy_secret}"),
        uid: uid.to_string(),
        ts: ts.to_string(),
        signature: signature(signing_secret.as_bytes(), uid, ts, body),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reproduces_every_shared_vector() {
        let raw = include_str!("../../../testdata/g1-vectors.json");
        let doc: serde_json::Value = serde_json::from_str(raw).unwrap();
        let secret = doc["signing_secret"].as_str().unwrap();
        let vectors = doc["vectors"].as_array().unwrap();
        assert!(vectors.len() >= 5);
        for v in vectors {
            let uid = v["uid"].as_str().unwrap();
            let ts = v["ts"].as_i64().unwrap();
            let body = v["body"].as_str().unwrap().as_bytes();
            assert_eq!(hex::encode(Sha256::digest(body)), v["body_sha256"].as_str().unwrap());
            let s = sign(doc["proxy_secret"].as_str().unwrap(), secret, uid, ts, body);
            assert_eq!(s.signature, v["signature"].as_str().unwrap(), "vector for {uid} at {ts}");
            assert_eq!(s.authorization, format!("Bearer {}", doc["proxy_secret"].as_str().unwrap()));
        }
    }

    #[test]
    fn any_change_changes_the_signature() {
        let base = signature(b"k", "alice", 1, b"{}");
        assert_ne!(base, signature(b"k", "alicf", 1, b"{}"));
        assert_ne!(base, signature(b"k", "alice", 2, b"{}"));
        assert_ne!(base, signature(b"k", "alice", 1, b"{ }"));
        assert_ne!(base, signature(b"K", "alice", 1, b"{}"));
        assert_eq!(base.len(), 64);
        assert!(base.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)));
    }
}
