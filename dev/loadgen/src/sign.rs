//! G1 request signing, exactly as docs/api.md states it: the proxy secret as a bearer, and
//! an HMAC-SHA256 with the signing secret over
//! `uid + "\n" + ts + "\n" + nonce + "\n" + hex(sha256(body)) + "\n" + hex(sha256(credentials))`,
//! where `credentials` is the exact `X-Tamebi-Credentials` value ("" when none is sent).
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
    /// Each request needs its own: the orchestrator refuses a nonce it has seen.
    pub nonce: String,
    pub signature: String,
}

/// What one signature covers.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    pub uid: &'a str,
    pub ts: i64,
    pub nonce: &'a str,
    pub body: &'a [u8],
    /// The `X-Tamebi-Credentials` header value, "" when the header is not sent.
    pub credentials: &'a str,
}

/// Lowercase hex HMAC-SHA256 over the signed string above.
pub fn signature(signing_secret: &[u8], r: &Request<'_>) -> String {
    let body_hash = hex::encode(Sha256::digest(r.body));
    let credentials_hash = hex::encode(Sha256::digest(r.credentials.as_bytes()));
    let mut mac = match Hmac::<Sha256>::new_from_slice(signing_secret) {
        Ok(mac) => mac,
        // HMAC takes keys of any length; this arm cannot be reached.
        Err(_) => return String::new(),
    };
    mac.update(format!("{}\n{}\n{}\n{body_hash}\n{credentials_hash}", r.uid, r.ts, r.nonce).as_bytes());
    hex::encode(mac.finalize().into_bytes())
}

/// Everything the orchestrator checks for G1.
pub fn sign(proxy_secret: &str, signing_secret: &str, r: &Request<'_>) -> Signed {
    Signed {
        authorization: format!("Bearer {proxy_secret}"),
        uid: r.uid.to_string(),
        ts: r.ts.to_string(),
        nonce: r.nonce.to_string(),
        signature: signature(signing_secret.as_bytes(), r),
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
        assert!(vectors.len() >= 6);
        for v in vectors {
            let r = Request {
                uid: v["uid"].as_str().unwrap(),
                ts: v["ts"].as_i64().unwrap(),
                nonce: v["nonce"].as_str().unwrap(),
                body: v["body"].as_str().unwrap().as_bytes(),
                credentials: v["credentials"].as_str().unwrap(),
            };
            assert_eq!(hex::encode(Sha256::digest(r.body)), v["body_sha256"].as_str().unwrap());
            let s = sign(doc["proxy_secret"].as_str().unwrap(), secret, &r);
            assert_eq!(s.signature, v["signature"].as_str().unwrap(), "vector for {} at {}", r.uid, r.ts);
            assert_eq!(s.authorization, format!("Bearer {}", doc["proxy_secret"].as_str().unwrap()));
        }
    }

    #[test]
    fn any_change_changes_the_signature() {
        let r = Request {
            uid: "alice",
            ts: 1,
            nonce: "n0000000000000000",
            body: b"{}",
            credentials: "",
        };
        let base = signature(b"k", &r);
        assert_ne!(base, signature(b"k", &Request { uid: "alicf", ..r }));
        assert_ne!(base, signature(b"k", &Request { ts: 2, ..r }));
        assert_ne!(
            base,
            signature(
                b"k",
                &Request {
                    nonce: "n0000000000000001",
                    ..r
                }
            )
        );
        assert_ne!(base, signature(b"k", &Request { body: b"{ }", ..r }));
        assert_ne!(
            base,
            signature(
                b"k",
                &Request {
                    credentials: "nextcloud=t",
                    ..r
                }
            )
        );
        assert_ne!(base, signature(b"K", &r));
        assert_eq!(base.len(), 64);
        assert!(base.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)));
    }
}
