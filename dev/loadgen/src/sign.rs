//! G1 request signing, exactly as docs/api.md states it: the proxy secret as a bearer, and
//! an HMAC-SHA256 with the signing secret over
//! `METHOD \n path \n query \n uid \n ts \n nonce \n hex(sha256(body)) \n hex(sha256(credentials))`
//! (the canonical form is the shared `g1-signing` crate's), where path and query are the URL's
//! exactly as sent and `credentials` the exact `X-Tamebi-Credentials` value ("" when none).
//!
//! Pure functions only; verified against testdata/g1-vectors.json. It never decides who the
//! user is beyond what the caller passes in.

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
    /// The request method, upper case.
    pub method: &'a str,
    /// The URL the request goes to: its path and query, as the client sends them, are signed.
    pub url: &'a url::Url,
    pub uid: &'a str,
    pub ts: i64,
    pub nonce: &'a str,
    pub body: &'a [u8],
    /// The `X-Tamebi-Credentials` header value, "" when the header is not sent.
    pub credentials: &'a str,
}

/// Lowercase hex HMAC-SHA256 over the signed string above.
pub fn signature(signing_secret: &[u8], r: &Request<'_>) -> String {
    let fields = g1_signing::Signed {
        target: g1_signing::Target {
            method: r.method,
            path: r.url.path(),
            query: r.url.query().unwrap_or(""),
        },
        uid: r.uid,
        ts: r.ts,
        nonce: r.nonce,
    };
    hex::encode(g1_signing::user_signature(signing_secret, &fields, r.body, r.credentials))
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
        assert!(vectors.len() >= 10);
        for v in vectors {
            let query = v["query"].as_str().unwrap();
            let mut url = url::Url::parse("http://127.0.0.1:8700").unwrap();
            url.set_path(v["path"].as_str().unwrap());
            url.set_query((!query.is_empty()).then_some(query));
            let r = Request {
                method: v["method"].as_str().unwrap(),
                url: &url,
                uid: v["uid"].as_str().unwrap(),
                ts: v["ts"].as_i64().unwrap(),
                nonce: v["nonce"].as_str().unwrap(),
                body: v["body"].as_str().unwrap().as_bytes(),
                credentials: v["credentials"].as_str().unwrap(),
            };
            let s = sign(doc["proxy_secret"].as_str().unwrap(), secret, &r);
            assert_eq!(s.signature, v["signature"].as_str().unwrap(), "vector {v}");
            assert_eq!(s.authorization, format!("Bearer {}", doc["proxy_secret"].as_str().unwrap()));
        }
    }

    #[test]
    fn any_change_changes_the_signature() {
        let chat = url::Url::parse("http://o:8700/v1/chat").unwrap();
        let r = Request {
            method: "POST",
            url: &chat,
            uid: "alice",
            ts: 1,
            nonce: "n0000000000000000",
            body: b"{}",
            credentials: "",
        };
        let base = signature(b"k", &r);
        assert_ne!(base, signature(b"k", &Request { uid: "alicf", ..r }));
        assert_ne!(base, signature(b"k", &Request { ts: 2, ..r }));
        let n = Request {
            nonce: "n0000000000000001",
            ..r
        };
        assert_ne!(base, signature(b"k", &n));
        assert_ne!(base, signature(b"k", &Request { body: b"{ }", ..r }));
        let c = Request {
            credentials: "nextcloud=t",
            ..r
        };
        assert_ne!(base, signature(b"k", &c));
        assert_ne!(base, signature(b"k", &Request { method: "PUT", ..r }));
        let elsewhere = url::Url::parse("http://o:8700/v1/apps/tools/call").unwrap();
        assert_ne!(base, signature(b"k", &Request { url: &elsewhere, ..r }));
        let queried = url::Url::parse("http://o:8700/v1/chat?x=1").unwrap();
        assert_ne!(base, signature(b"k", &Request { url: &queried, ..r }));
        // Only the path and query are signed: another host with the same path signs the same.
        let other_host = url::Url::parse("http://p:9000/v1/chat").unwrap();
        assert_eq!(base, signature(b"k", &Request { url: &other_host, ..r }));
        assert_ne!(base, signature(b"K", &r));
        assert_eq!(base.len(), 64);
        assert!(base.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)));
    }
}
