//! G1: the identity headers (`Authorization`, `X-Tamebi-Uid/Ts/Nonce/Signature`,
//! `X-Tamebi-Credentials`, the admin signature) as `auth::identity` reads them.
//!
//! Half the inputs are signed correctly over fuzzed fields, so the checks behind the
//! signature (credentials, JWT subjects, body uid, `lang`, `group`) are reached too.
//! Properties: nothing panics; a request is accepted only when its signature is the HMAC of
//! exactly what was sent (recomputed here with `g1-signing`, the canonical form the PHP app
//! shares) and its proxy bearer is right, and then as the uid its header names.
#![no_main]

use arbitrary::Arbitrary;
use http::{HeaderMap, HeaderName, HeaderValue};
use libfuzzer_sys::fuzz_target;
use tamebi::auth::identity::{self, Credentials, Target, Verifier};
use tamebi::types::Secret;

const PROXY: &str = "proxy-secret-for-fuzzing";
const SIGNING: &str = "signing-secret-for-fuzzing";
const NOW: i64 = 1_760_000_000;

const NAMES: [&str; 10] = [
    "authorization",
    identity::HEADER_UID,
    identity::HEADER_TS,
    identity::HEADER_NONCE,
    identity::HEADER_SIGNATURE,
    identity::HEADER_CREDENTIALS,
    identity::HEADER_LEGACY_NC_AUTHORIZATION,
    identity::HEADER_REQUEST_ID,
    identity::HEADER_ADMIN_SIGNATURE,
    "x-other",
];

#[derive(Arbitrary, Debug)]
struct Input<'a> {
    /// Sign the fields below as the app would.
    sign: bool,
    right_bearer: bool,
    uid: &'a str,
    skew: i8,
    nonce: &'a str,
    credentials: Option<&'a str>,
    method: &'a str,
    request_target: &'a str,
    body: &'a [u8],
    /// Raw headers added on top (index into NAMES, value bytes).
    extra: Vec<(u8, &'a [u8])>,
}

fn set(h: &mut HeaderMap, name: &str, value: &[u8]) {
    if let (Ok(n), Ok(v)) = (HeaderName::from_bytes(name.as_bytes()), HeaderValue::from_bytes(value)) {
        h.append(n, v);
    }
}

fn get<'h>(h: &'h HeaderMap, name: &str) -> Option<&'h str> {
    h.get(name).and_then(|v| v.to_str().ok())
}

fuzz_target!(|input: Input<'_>| {
    let verifier = Verifier::new(Secret::new(PROXY), Secret::new(SIGNING));
    let target = Target::new(input.method, input.request_target);
    let ts = NOW + i64::from(input.skew);
    let mut h = HeaderMap::new();
    let bearer = if input.right_bearer { PROXY } else { "wrong" };
    set(&mut h, "authorization", format!("Bearer {bearer}").as_bytes());
    if input.sign {
        let fields = g1_signing::Signed {
            target,
            uid: input.uid,
            ts,
            nonce: input.nonce,
        };
        let sig = g1_signing::user_signature(SIGNING.as_bytes(), &fields, input.body, input.credentials.unwrap_or(""));
        set(&mut h, identity::HEADER_UID, input.uid.as_bytes());
        set(&mut h, identity::HEADER_TS, ts.to_string().as_bytes());
        set(&mut h, identity::HEADER_NONCE, input.nonce.as_bytes());
        set(&mut h, identity::HEADER_SIGNATURE, hex::encode(sig).as_bytes());
        if let Some(c) = input.credentials {
            set(&mut h, identity::HEADER_CREDENTIALS, c.as_bytes());
        }
    }
    for (i, value) in &input.extra {
        set(&mut h, NAMES[usize::from(*i) % NAMES.len()], value);
    }

    let verified = verifier.verify(&h, target, input.body, NOW, identity::request_id(&h));
    if let Ok(caller) = &verified {
        // Accepted: the bearer was right and the signature is the HMAC of what was sent.
        assert_eq!(get(&h, "authorization"), Some(format!("Bearer {PROXY}").as_str()));
        let uid = get(&h, identity::HEADER_UID).expect("accepted without a uid");
        assert_eq!(caller.uid, uid);
        let ts: i64 = get(&h, identity::HEADER_TS)
            .and_then(|t| t.parse().ok())
            .expect("accepted without a ts");
        assert!((NOW - ts).abs() <= identity::MAX_SKEW_SECS);
        let fields = g1_signing::Signed {
            target,
            uid,
            ts,
            nonce: get(&h, identity::HEADER_NONCE).expect("accepted without a nonce"),
        };
        let creds = get(&h, identity::HEADER_CREDENTIALS).unwrap_or("");
        let expected = hex::encode(g1_signing::user_signature(SIGNING.as_bytes(), &fields, input.body, creds));
        assert_eq!(get(&h, identity::HEADER_SIGNATURE).map(str::to_ascii_lowercase), Some(expected));
        // The admin check never passes on a user signature.
        let sig = get(&h, identity::HEADER_SIGNATURE).unwrap_or("").to_string();
        let mut admin = h.clone();
        admin.remove(identity::HEADER_ADMIN_SIGNATURE);
        set(&mut admin, identity::HEADER_ADMIN_SIGNATURE, sig.as_bytes());
        assert!(verifier.check_admin(&admin, target, &caller.uid).is_err());
    }
    if input.sign && input.right_bearer && verified.is_err() {
        // A rightly signed request is refused only for a reason the client can see.
        let e = verified.err().expect("checked");
        assert!(!matches!(e, identity::IdentityError::ProxyBearer) || !input.extra.is_empty());
    }

    // The pieces on their own, as other routes use them.
    if let Some(raw) = input.credentials {
        if let Ok(c) = Credentials::parse(raw) {
            for entry in raw.split(',').map(str::trim).filter(|e| !e.is_empty()) {
                let (name, token) = entry.split_once('=').expect("parsed without '='");
                assert_eq!(c.for_server(name).map(|t| t.token()), Some(token));
            }
        }
    }
    let _ = identity::jwt_subject(input.nonce);
    let _ = identity::language_of(target.query);
    let _ = identity::groups_of(target.query);
    let _ = identity::reject_body_uid(input.body);
});
