//! G1 identity: the one module that resolves who a request acts for.
//!
//! Two secrets prove two different things, and conflating them is how G1 dies:
//! - `Authorization: Bearer <proxy secret>` proves the caller is our Nextcloud app;
//! - `X-Tamebi-Uid`, `X-Tamebi-Ts`, `X-Tamebi-Nonce`, `X-Tamebi-Signature` prove which user it
//!   acts for, and for which one request: an HMAC-SHA256 with the signing secret over
//!   `METHOD \n path \n query \n uid \n ts \n nonce \n hex(sha256(body)) \n hex(sha256(credentials header))`
//!   (the canonical form lives in the `g1-signing` crate), skew at most 60 s, each nonce
//!   accepted once (see [`super::replay`]). The method, path and raw query are inside it
//!   (issue #27): a signature captured on its way to one route is worth nothing on another,
//!   so a signed `GET /v1/conversations` cannot become `DELETE /v1/me/data`, and a body signed
//!   for `/v1/apps/tools/describe` cannot be sent to `/dispatch`. The nonce stops a second use;
//!   the target stops a first use elsewhere.
//!
//! A signature in the earlier form (no target) is refused like any wrong one, but recognised,
//! so that an outdated app gets its own 401 code ([`IdentityError::OutdatedSignature`]) rather
//! than a bare "not signed in". Nothing signed that way is ever accepted.
//!
//! `X-Tamebi-Credentials` carries the user's tokens, one per MCP server audience
//! (`name=token, name=token`). Its hash is inside the signature, so a token can never be paired
//! with another user's signed request; a JWT whose `sub` is not the signed uid is refused too
//! (its payload is decoded only to compare `sub`: verifying the token is Nextcloud's and the MCP
//! server's job). Tokens live for one request (or the turn it starts) and are never stored.
//!
//! Checks run in two halves so that nothing unauthenticated is buffered: [`Verifier::check_headers`]
//! (proxy bearer, header shape, skew, credentials) before the body is read, and
//! [`Verifier::check_body`] (signature over the request's target and body, body uid) after. No
//! other module reads these headers. A uid anywhere at the top of a JSON body is refused with
//! 400: a body uid is an attempt to choose one.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as BASE64URL;
pub use g1_signing::{ADMIN_PURPOSE, Signed, Target};
use http::HeaderMap;
use std::collections::BTreeMap;
use std::fmt;
use subtle::ConstantTimeEq;

use crate::types::{Language, Secret, valid_server_name};

pub const HEADER_UID: &str = "x-tamebi-uid";
pub const HEADER_TS: &str = "x-tamebi-ts";
pub const HEADER_NONCE: &str = "x-tamebi-nonce";
pub const HEADER_SIGNATURE: &str = "x-tamebi-signature";
pub const HEADER_CREDENTIALS: &str = "x-tamebi-credentials";
/// The single-token header of earlier versions. Refused: one token for every server is
/// exactly what per-audience credentials replace, so an outdated app fails loudly.
pub const HEADER_LEGACY_NC_AUTHORIZATION: &str = "x-tamebi-nc-authorization";
pub const HEADER_REQUEST_ID: &str = "x-request-id";
/// On admin routes only: the app's second signature, made after Nextcloud said the signed
/// user is an admin (see [`Verifier::check_admin`]).
pub const HEADER_ADMIN_SIGNATURE: &str = "x-tamebi-admin-signature";

/// Largest clock difference accepted between the PHP app and us.
pub const MAX_SKEW_SECS: i64 = 60;
/// Bounds on the credentials header: entries, and characters per token.
const MAX_CREDENTIALS: usize = 32;
/// All request headers must fit in the server's 8 KiB read buffer (http/server.rs), so one
/// token can never be longer than this anyway.
const MAX_TOKEN_LEN: usize = 4096;

/// One user token for one MCP server. Never printed, never stored.
#[derive(Clone)]
pub struct NcBearer(String);

impl NcBearer {
    /// The full header value to send to the server: `Bearer <token>`.
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

/// The caller's tokens by MCP server name, as the app sent them. A server that has no entry
/// gets no token; nothing ever hands one server's token to another.
#[derive(Clone, Default)]
pub struct Credentials(BTreeMap<String, NcBearer>);

impl Credentials {
    /// The token for the MCP server configured under `server`, if the app sent one.
    pub fn for_server(&self, server: &str) -> Option<&NcBearer> {
        self.0.get(server)
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Parses `name=token, name=token`. Names are `[A-Za-z0-9_-]`, tokens RFC 6750 `b64token`
    /// (which cannot contain `,`, `=` except trailing, or spaces), so the split is unambiguous.
    pub fn parse(raw: &str) -> Result<Credentials, IdentityError> {
        let mut map = BTreeMap::new();
        for entry in raw.split(',').map(str::trim).filter(|e| !e.is_empty()) {
            let (name, token) = entry
                .split_once('=')
                .ok_or(IdentityError::Credentials("an entry is not name=token"))?;
            if !valid_server_name(name) {
                return Err(IdentityError::Credentials("server name"));
            }
            if !valid_b64token(token) {
                return Err(IdentityError::Credentials("token shape"));
            }
            if map.insert(name.to_string(), NcBearer(token.to_string())).is_some() {
                return Err(IdentityError::Credentials("a server appears twice"));
            }
            if map.len() > MAX_CREDENTIALS {
                return Err(IdentityError::Credentials("too many entries"));
            }
        }
        Ok(Credentials(map))
    }

    fn tokens(&self) -> impl Iterator<Item = &NcBearer> {
        self.0.values()
    }
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Which servers have a token is useful in logs; the tokens never are.
        f.debug_set().entries(self.0.keys()).finish()
    }
}

/// The verified caller of one request.
#[derive(Clone, Debug)]
pub struct Caller {
    pub uid: String,
    pub request_id: String,
    pub credentials: Credentials,
    /// The person's Nextcloud language (the signed `lang` query parameter, [`language_of`]);
    /// None when the app sent none.
    pub language: Option<Language>,
}

/// The Nextcloud groups the app says the person is in now (the signed `group` query parameters,
/// [`groups_of`]): what decides which shared assistants they see (issue #30). A request
/// extension next to [`Caller`] (which a turn keeps, so it stays small), read by the handlers
/// that need it. Never stored: a request that carries none sees no shared assistant.
#[derive(Clone, Debug, Default)]
pub struct Groups(pub Vec<String>);

/// Why a request was not accepted. Mapped to 401, 400 or 429 by the HTTP layer; the reason is
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
    /// The signature is the earlier form, which did not cover the method, path and query: an
    /// app older than this orchestrator. Refused (it would let the request be moved to any
    /// route); told apart only so the operator sees what to update.
    #[error("signature in the earlier form without method, path and query: the Nextcloud app is outdated")]
    OutdatedSignature,
    #[error("request body names a user ({0})")]
    BodyUid(&'static str),
    #[error("malformed credentials header: {0}")]
    Credentials(&'static str),
    #[error("a credential was issued to another user")]
    ForeignCredential,
    #[error("this signed request was already used")]
    Replayed,
    #[error("too many signed requests in the replay window")]
    ReplayWindowFull,
    #[error("the shared replay records could not be reached")]
    ReplayUnverifiable,
    #[error("missing or wrong admin signature")]
    NotAdmin,
    #[error("a group parameter is empty, too long, has control characters, or there are too many")]
    Groups,
    #[error("the lang parameter is not one BCP 47 language tag")]
    Language,
}

impl IdentityError {
    /// A body uid or a malformed header is a malformed request; replay-window exhaustion is
    /// load; everything else is "not signed in".
    pub fn is_bad_request(&self) -> bool {
        matches!(
            self,
            IdentityError::BodyUid(_) | IdentityError::Credentials(_) | IdentityError::Language | IdentityError::Groups
        )
    }
}

/// What the headers established before the body is read.
#[derive(Debug)]
pub struct SignedHeaders {
    pub uid: String,
    pub ts: i64,
    pub nonce: String,
    signature: Vec<u8>,
    credentials_sha256: String,
    credentials: Credentials,
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

    /// Everything that can be checked without the body, at time `now` (unix seconds): the
    /// proxy bearer, the header shapes, the skew, and that no JWT credential names another
    /// user. Runs before a single body byte is read.
    pub fn check_headers(&self, headers: &HeaderMap, now: i64) -> Result<SignedHeaders, IdentityError> {
        self.check_proxy_bearer(headers)?;
        let uid = single(headers, HEADER_UID)?
            .filter(|u| valid_uid(u))
            .ok_or(IdentityError::MissingHeader("X-Tamebi-Uid"))?;
        let ts: i64 = single(headers, HEADER_TS)?
            .and_then(|t| t.parse().ok())
            .ok_or(IdentityError::MissingHeader("X-Tamebi-Ts"))?;
        let nonce = single(headers, HEADER_NONCE)?
            .filter(|n| valid_nonce(n))
            .ok_or(IdentityError::MissingHeader("X-Tamebi-Nonce"))?;
        let signature = single(headers, HEADER_SIGNATURE)?
            .filter(|s| s.len() == 64)
            .and_then(|s| hex::decode(s).ok())
            .ok_or(IdentityError::MissingHeader("X-Tamebi-Signature"))?;
        if (now - ts).abs() > MAX_SKEW_SECS {
            return Err(IdentityError::Skew);
        }
        if headers.contains_key(HEADER_LEGACY_NC_AUTHORIZATION) {
            return Err(IdentityError::Credentials(
                "X-Tamebi-Nc-Authorization is replaced by X-Tamebi-Credentials",
            ));
        }
        if headers.get(HEADER_CREDENTIALS).is_some_and(|v| v.to_str().is_err()) {
            return Err(IdentityError::Credentials("not visible ASCII"));
        }
        let raw_credentials = single(headers, HEADER_CREDENTIALS)?.unwrap_or("");
        let credentials = Credentials::parse(raw_credentials)?;
        for token in credentials.tokens() {
            if jwt_subject(token.token()).is_some_and(|sub| sub != uid) {
                return Err(IdentityError::ForeignCredential);
            }
        }
        Ok(SignedHeaders {
            uid: uid.to_string(),
            ts,
            nonce: nonce.to_string(),
            signature,
            credentials_sha256: g1_signing::sha256_hex(raw_credentials.as_bytes()),
            credentials,
        })
    }

    /// The second half: the signature over the headers, this request's `target` (its method,
    /// path and raw query as they arrived, [`target_of`]) and this exact body; and no body uid.
    pub fn check_body(&self, signed: SignedHeaders, target: Target<'_>, body: &[u8], request_id: String) -> Result<Caller, IdentityError> {
        let fields = Signed {
            target,
            uid: &signed.uid,
            ts: signed.ts,
            nonce: &signed.nonce,
        };
        let body_sha256 = g1_signing::sha256_hex(body);
        let secret = self.signing_secret.expose().as_bytes();
        let expected = g1_signing::user_signature_from_hashes(secret, &fields, &body_sha256, &signed.credentials_sha256);
        if !same(&expected, &signed.signature) {
            // Only ever a diagnosis: an earlier-form signature is refused all the same.
            let outdated = outdated_signature(secret, &fields, &body_sha256, &signed.credentials_sha256);
            return Err(if same(&outdated, &signed.signature) {
                IdentityError::OutdatedSignature
            } else {
                IdentityError::Signature
            });
        }
        reject_body_uid(body)?;
        let language = language_of(target.query)?;
        // Checked here, with the rest of identity; handed on as a `Groups` extension.
        groups_of(target.query)?;
        Ok(Caller {
            uid: signed.uid,
            request_id,
            credentials: signed.credentials,
            language,
        })
    }

    /// Both halves at once (for callers that already hold the body).
    pub fn verify(
        &self,
        headers: &HeaderMap,
        target: Target<'_>,
        body: &[u8],
        now: i64,
        request_id: String,
    ) -> Result<Caller, IdentityError> {
        let signed = self.check_headers(headers, now)?;
        self.check_body(signed, target, body, request_id)
    }

    /// Admin routes, after [`Verifier::verify`] accepted the request as `uid`'s: the app also
    /// signs `tamebi-admin-v2 \n METHOD \n path \n query \n uid \n ts \n nonce` (the same
    /// target, ts and nonce as the user signature), and only after Nextcloud's group manager
    /// said `uid` is an admin. A user signature can never stand in for it (a different string,
    /// never produced for a user route), and it is bound to this one request by the target and
    /// the nonce. An admin route reveals configuration, never users' content.
    pub fn check_admin(&self, headers: &HeaderMap, target: Target<'_>, uid: &str) -> Result<(), IdentityError> {
        let ts: i64 = single(headers, HEADER_TS)?
            .and_then(|t| t.parse().ok())
            .ok_or(IdentityError::NotAdmin)?;
        let nonce = single(headers, HEADER_NONCE)?.ok_or(IdentityError::NotAdmin)?;
        let given = single(headers, HEADER_ADMIN_SIGNATURE)?
            .filter(|s| s.len() == 64)
            .and_then(|s| hex::decode(s).ok())
            .ok_or(IdentityError::NotAdmin)?;
        let fields = Signed { target, uid, ts, nonce };
        let expected = g1_signing::admin_signature(self.signing_secret.expose().as_bytes(), &fields);
        if same(&expected, &given) {
            Ok(())
        } else {
            Err(IdentityError::NotAdmin)
        }
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

/// What a signature binds a request to, from the request as it arrived: its method, the path
/// exactly as sent (percent-escapes and all) and the raw query ("" when there is none).
/// Nothing is decoded or normalised, so what is verified is what the router matched.
pub fn target_of<'a>(method: &'a http::Method, uri: &'a http::Uri) -> Target<'a> {
    Target {
        method: method.as_str(),
        path: uri.path(),
        query: uri.query().unwrap_or(""),
    }
}

/// Constant time: a signature must not be guessable byte by byte from response timing.
fn same(expected: &[u8], given: &[u8]) -> bool {
    expected.ct_eq(given).unwrap_u8() == 1
}

/// The user signature of earlier versions: `uid \n ts \n nonce \n body hash \n credentials
/// hash`, no target. Computed only after a signature failed, to tell an outdated app apart.
fn outdated_signature(secret: &[u8], fields: &Signed<'_>, body_sha256: &str, credentials_sha256: &str) -> Vec<u8> {
    let old = format!(
        "{}\n{}\n{}\n{body_sha256}\n{credentials_sha256}",
        fields.uid, fields.ts, fields.nonce
    );
    g1_signing::hmac_sha256(secret, old.as_bytes())
}

/// The person's language from the raw query's `lang` parameter (signed like the rest of the
/// query, docs/api.md): None when absent; a refusal (400) when it is given twice, empty or not
/// one BCP 47 tag, so nothing but a tag can ever reach the system prompt.
pub fn language_of(query: &str) -> Result<Option<Language>, IdentityError> {
    let mut found = None;
    for (key, value) in url::form_urlencoded::parse(query.as_bytes()) {
        if key != "lang" {
            continue;
        }
        let language = Language::parse(&value).ok_or(IdentityError::Language)?;
        if found.replace(language).is_some() {
            return Err(IdentityError::Language);
        }
    }
    Ok(found)
}

/// Most `group` parameters one request may carry.
pub const MAX_GROUPS: usize = 256;

/// The person's groups from the raw query's `group` parameters, one per group id (signed like
/// the rest of the query: only the app, which asked Nextcloud's group manager, can have put them
/// there). A group id is 1-255 characters without control characters; more than
/// [`MAX_GROUPS`] of them, or a malformed one, is a refusal (400).
pub fn groups_of(query: &str) -> Result<Vec<String>, IdentityError> {
    let mut groups = Vec::new();
    for (key, value) in url::form_urlencoded::parse(query.as_bytes()) {
        if key != "group" {
            continue;
        }
        if value.is_empty() || value.chars().count() > 255 || value.chars().any(char::is_control) || groups.len() == MAX_GROUPS {
            return Err(IdentityError::Groups);
        }
        if !groups.iter().any(|g| *g == value) {
            groups.push(value.into_owned());
        }
    }
    Ok(groups)
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

/// The `sub` of a token shaped like a JWT (three base64url parts, a JSON object payload), or
/// None for any other token (an app password, an opaque token). Decoding only: whether the
/// token is genuine is for Nextcloud and the MCP server to say.
pub fn jwt_subject(token: &str) -> Option<String> {
    let mut parts = token.split('.');
    let (_, payload, _) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() {
        return None;
    }
    let bytes = BASE64URL.decode(payload.trim_end_matches('=')).ok()?;
    let claims: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
    match claims.get("sub")? {
        serde_json::Value::String(s) => Some(s.clone()),
        // A non-string sub is never a uid; uids are non-empty, so "" never matches one.
        _ => Some(String::new()),
    }
}

fn header<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

/// A signed header given at most once (a second copy could disagree with the signed one).
fn single<'a>(headers: &'a HeaderMap, name: &'static str) -> Result<Option<&'a str>, IdentityError> {
    let mut values = headers.get_all(name).iter();
    let first = values.next();
    if values.next().is_some() {
        return Err(IdentityError::MissingHeader(name));
    }
    Ok(first.and_then(|v| v.to_str().ok()))
}

/// A Nextcloud uid: non-empty, bounded, no control characters (it is used in paths and logs).
fn valid_uid(uid: &str) -> bool {
    !uid.is_empty() && uid.len() <= 255 && !uid.chars().any(char::is_control)
}

/// A nonce: 16–128 characters of `[A-Za-z0-9_-]` (a uuid or random base64url fits).
fn valid_nonce(nonce: &str) -> bool {
    (16..=128).contains(&nonce.len()) && nonce.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// RFC 6750 `b64token`: `[A-Za-z0-9-._~+/]+ "="*`, bounded.
fn valid_b64token(token: &str) -> bool {
    let body = token.trim_end_matches('=');
    !body.is_empty()
        && token.len() <= MAX_TOKEN_LEN
        && body
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b'+' | b'/'))
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
        admin_vectors: Vec<Vector>,
        outdated: Vec<Outdated>,
    }
    #[derive(serde::Deserialize)]
    struct Vector {
        method: String,
        path: String,
        query: String,
        uid: String,
        ts: i64,
        nonce: String,
        #[serde(default)]
        body: String,
        #[serde(default)]
        credentials: String,
        signed_string: String,
        signature: String,
    }
    /// A request signed in the earlier form (no target), by an app older than this verifier.
    #[derive(serde::Deserialize)]
    struct Outdated {
        #[serde(flatten)]
        request: Vector,
        admin_signature: String,
    }

    impl Vector {
        fn target(&self) -> Target<'_> {
            Target {
                method: &self.method,
                path: &self.path,
                query: &self.query,
            }
        }

        /// The headers the app sent for this vector.
        fn headers(&self, v: &Vectors) -> HeaderMap {
            let mut h = HeaderMap::new();
            h.insert(
                "authorization",
                HeaderValue::from_str(&format!("Bearer {}", v.proxy_secret)).unwrap(),
            );
            h.insert(HEADER_UID, HeaderValue::from_bytes(self.uid.as_bytes()).unwrap());
            h.insert(HEADER_TS, HeaderValue::from_str(&self.ts.to_string()).unwrap());
            h.insert(HEADER_NONCE, HeaderValue::from_str(&self.nonce).unwrap());
            h.insert(HEADER_SIGNATURE, HeaderValue::from_str(&self.signature).unwrap());
            if !self.credentials.is_empty() {
                h.insert(HEADER_CREDENTIALS, HeaderValue::from_str(&self.credentials).unwrap());
            }
            h
        }
    }

    const NONCE: &str = "n0nce-0123456789abcdef";
    /// The target most tests sign for.
    const CHAT: Target<'static> = Target {
        method: "POST",
        path: "/v1/chat",
        query: "",
    };

    fn vectors() -> Vectors {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/testdata/g1-vectors.json");
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
    }

    fn verifier(v: &Vectors) -> Verifier {
        Verifier::new(Secret::new(&v.proxy_secret), Secret::new(&v.signing_secret))
    }

    fn signed_with(v: &Vectors, uid: &str, ts: i64, body: &str, credentials: Option<&str>) -> HeaderMap {
        signed_for(v, CHAT, uid, ts, body, credentials)
    }

    fn signed_for(v: &Vectors, target: Target<'_>, uid: &str, ts: i64, body: &str, credentials: Option<&str>) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(
            "authorization",
            HeaderValue::from_str(&format!("Bearer {}", v.proxy_secret)).unwrap(),
        );
        // Header values must be visible ASCII; the vectors' non-ASCII uid is sent as raw bytes.
        h.insert(HEADER_UID, HeaderValue::from_bytes(uid.as_bytes()).unwrap());
        h.insert(HEADER_TS, HeaderValue::from_str(&ts.to_string()).unwrap());
        h.insert(HEADER_NONCE, HeaderValue::from_static(NONCE));
        if let Some(c) = credentials {
            h.insert(HEADER_CREDENTIALS, HeaderValue::from_str(c).unwrap());
        }
        let fields = Signed {
            target,
            uid,
            ts,
            nonce: NONCE,
        };
        let sig = hex::encode(g1_signing::user_signature(
            v.signing_secret.as_bytes(),
            &fields,
            body.as_bytes(),
            credentials.unwrap_or(""),
        ));
        h.insert(HEADER_SIGNATURE, HeaderValue::from_str(&sig).unwrap());
        h
    }

    fn signed(v: &Vectors, uid: &str, ts: i64, body: &str) -> HeaderMap {
        signed_with(v, uid, ts, body, None)
    }

    /// A JWT-shaped token with these claims (unsigned: the verifier never checks it).
    fn jwt(claims: serde_json::Value) -> String {
        let enc = |v: &serde_json::Value| BASE64URL.encode(serde_json::to_vec(v).unwrap());
        format!(
            "{}.{}.c2ln",
            enc(&serde_json::json!({"alg": "RS256", "typ": "at+JWT"})),
            enc(&claims)
        )
    }

    /// Every shared vector verifies exactly as sent, and on no other method, path or query.
    #[test]
    fn shared_vectors_verify_only_at_their_own_target() {
        let v = vectors();
        let ver = verifier(&v);
        assert!(v.vectors.len() >= 10);
        let targets: Vec<Target<'_>> = v.vectors.iter().map(Vector::target).collect();
        for case in &v.vectors {
            let fields = Signed {
                target: case.target(),
                uid: &case.uid,
                ts: case.ts,
                nonce: &case.nonce,
            };
            let hashes = (
                g1_signing::sha256_hex(case.body.as_bytes()),
                g1_signing::sha256_hex(case.credentials.as_bytes()),
            );
            assert_eq!(g1_signing::user_string(&fields, &hashes.0, &hashes.1), case.signed_string);
            assert_eq!(
                hex::encode(g1_signing::user_signature_from_hashes(
                    v.signing_secret.as_bytes(),
                    &fields,
                    &hashes.0,
                    &hashes.1
                )),
                case.signature
            );
            if !case.uid.is_ascii() {
                // Only for the signers' UTF-8 handling: a header value must be visible ASCII
                // (and Nextcloud's uids are), so this uid never arrives as one.
                continue;
            }
            let h = case.headers(&v);
            let body = case.body.as_bytes();
            let verified = ver.verify(&h, case.target(), body, case.ts, "r".into());
            if verified.as_ref().is_err_and(|e| *e == IdentityError::ForeignCredential) {
                // The vector whose JWT names another user: refused before its signature is
                // looked at, wherever it is sent.
                assert!(jwt_subject(case.credentials.trim_start_matches("nextcloud=")).is_some_and(|sub| sub != case.uid));
                continue;
            }
            assert_eq!(verified.map(|c| c.uid).as_deref(), Ok(case.uid.as_str()), "{}", case.signed_string);
            for other in targets.iter().filter(|t| **t != case.target()) {
                assert_eq!(
                    ver.verify(&h, *other, body, case.ts, "r".into()).unwrap_err(),
                    IdentityError::Signature,
                    "{} moved to {other:?}",
                    case.signed_string
                );
            }
        }
    }

    /// Issue #27: the exact headers of a signed `GET /v1/conversations` (empty body, like
    /// every read and delete) are refused on every other method, path and query.
    #[test]
    fn an_empty_body_signature_does_not_move_to_another_route() {
        let v = vectors();
        let ver = verifier(&v);
        let list = Target::new("GET", "/v1/conversations");
        let h = signed_for(&v, list, "alice", 1000, "", None);
        assert!(ver.verify(&h, list, b"", 1000, "r".into()).is_ok());
        for (method, target) in [
            ("DELETE", "/v1/conversations/c1"),
            ("DELETE", "/v1/me/data"),
            ("DELETE", "/v1/memory/f1"),
            ("DELETE", "/v1/conversations"),
            ("GET", "/v1/conversations/c1"),
            ("GET", "/v1/memory"),
            ("GET", "/v1/conversations?limit=1"),
            ("GET", "/v1/conversations/"),
            ("GET", "/v1/%63onversations"),
            ("GET", "/v1/admin/status"),
            ("get", "/v1/conversations"),
        ] {
            assert_eq!(
                ver.verify(&h, Target::new(method, target), b"", 1000, "r".into()).unwrap_err(),
                IdentityError::Signature,
                "{method} {target}"
            );
        }
    }

    /// Issue #27: a body signed for one apps door is refused at the others, and the query of
    /// `/v1/apps/resource` is signed as sent (another value, order or escaping is refused).
    #[test]
    fn bodies_and_queries_are_bound_to_their_route() {
        let v = vectors();
        let ver = verifier(&v);
        let body = r#"{"conversation":"c1","server":"mail","name":"mail_send","arguments":{}}"#;
        let describe = Target::new("POST", "/v1/apps/tools/describe");
        let h = signed_for(&v, describe, "alice", 1000, body, Some("mail=t"));
        assert!(ver.verify(&h, describe, body.as_bytes(), 1000, "r".into()).is_ok());
        for door in ["/v1/apps/tools/dispatch", "/v1/apps/tools/call", "/v1/chat"] {
            assert_eq!(
                ver.verify(&h, Target::new("POST", door), body.as_bytes(), 1000, "r".into())
                    .unwrap_err(),
                IdentityError::Signature,
                "{door}"
            );
        }
        let resource = Target::new("GET", "/v1/apps/resource?server=a&uri=ui%3A%2F%2Fa%2Fx&conversation=c1");
        let h = signed_for(&v, resource, "alice", 1000, "", None);
        assert!(ver.verify(&h, resource, b"", 1000, "r".into()).is_ok());
        for query in [
            "server=a&uri=ui%3A%2F%2Fa%2Fy&conversation=c1",
            "uri=ui%3A%2F%2Fa%2Fx&server=a&conversation=c1",
            "server=a&uri=ui://a/x&conversation=c1",
            "server=a&uri=ui%3a%2f%2fa%2fx&conversation=c1",
            "server=a&uri=ui%3A%2F%2Fa%2Fx",
            "server=a&uri=ui%3A%2F%2Fa%2Fx&conversation=c1&conversation=c2",
            "",
        ] {
            let moved = Target { query, ..resource };
            assert_eq!(
                ver.verify(&h, moved, b"", 1000, "r".into()).unwrap_err(),
                IdentityError::Signature,
                "{query}"
            );
        }
    }

    /// An app that still signs the earlier form is refused with its own reason (and code), and
    /// only a genuine earlier-form signature gets that reason.
    #[test]
    fn an_outdated_signature_is_refused_and_named() {
        let v = vectors();
        let ver = verifier(&v);
        assert!(!v.outdated.is_empty());
        for old in &v.outdated {
            let case = &old.request;
            let h = case.headers(&v);
            assert_eq!(
                ver.verify(&h, case.target(), case.body.as_bytes(), case.ts, "r".into())
                    .unwrap_err(),
                IdentityError::OutdatedSignature,
                "{}",
                case.signed_string
            );
            // The old form signed no target, so it is refused the same way on every route.
            assert_eq!(
                ver.verify(&h, Target::new("DELETE", "/v1/me/data"), case.body.as_bytes(), case.ts, "r".into())
                    .unwrap_err(),
                IdentityError::OutdatedSignature
            );
            // Another body under it is just a wrong signature.
            assert_eq!(
                ver.verify(&h, case.target(), b"{\"x\":1}", case.ts, "r".into()).unwrap_err(),
                IdentityError::Signature
            );
            // Its admin signature never makes an admin either.
            let mut h = case.headers(&v);
            h.insert(HEADER_ADMIN_SIGNATURE, HeaderValue::from_str(&old.admin_signature).unwrap());
            assert_eq!(ver.check_admin(&h, case.target(), &case.uid), Err(IdentityError::NotAdmin));
            // 401 like every wrong signature, never a bad request.
            assert!(!IdentityError::OutdatedSignature.is_bad_request());
        }
    }

    #[test]
    fn a_correct_request_verifies_with_its_credentials() {
        let v = vectors();
        let h = signed_with(&v, "alice", 1000, "{}", Some("nextcloud=tok-123, mail=tok.456=="));
        let c = verifier(&v).verify(&h, CHAT, b"{}", 1030, "rid".into()).unwrap();
        assert_eq!(c.uid, "alice");
        assert_eq!(c.credentials.for_server("nextcloud").unwrap().header_value(), "Bearer tok-123");
        assert_eq!(c.credentials.for_server("mail").unwrap().token(), "tok.456==");
        // Names are exact: no case folding, no fallback to another server's token.
        assert!(c.credentials.for_server("NEXTCLOUD").is_none());
        assert!(c.credentials.for_server("weather").is_none());
    }

    #[test]
    fn every_forgery_is_refused() {
        let v = vectors();
        let ver = verifier(&v);
        let ok = signed(&v, "alice", 1000, "{}");

        let mut h = ok.clone();
        h.insert("authorization", HeaderValue::from_static("Bearer wrong"));
        assert_eq!(
            ver.verify(&h, CHAT, b"{}", 1000, "r".into()).unwrap_err(),
            IdentityError::ProxyBearer
        );
        let mut h = ok.clone();
        h.remove("authorization");
        assert_eq!(
            ver.verify(&h, CHAT, b"{}", 1000, "r".into()).unwrap_err(),
            IdentityError::ProxyBearer
        );
        // Signature made for another body.
        assert_eq!(
            ver.verify(&ok, CHAT, b"{\"x\":1}", 1000, "r".into()).unwrap_err(),
            IdentityError::Signature
        );
        // Another uid, or another nonce, under the same signature.
        let mut h = ok.clone();
        h.insert(HEADER_UID, HeaderValue::from_static("bob"));
        assert_eq!(ver.verify(&h, CHAT, b"{}", 1000, "r".into()).unwrap_err(), IdentityError::Signature);
        let mut h = ok.clone();
        h.insert(HEADER_NONCE, HeaderValue::from_static("another-nonce-0123456789"));
        assert_eq!(ver.verify(&h, CHAT, b"{}", 1000, "r".into()).unwrap_err(), IdentityError::Signature);
        // Skew: 60 s is fine, 61 s is not, in both directions.
        assert!(ver.verify(&ok, CHAT, b"{}", 1060, "r".into()).is_ok());
        assert!(ver.verify(&ok, CHAT, b"{}", 940, "r".into()).is_ok());
        assert_eq!(ver.verify(&ok, CHAT, b"{}", 1061, "r".into()).unwrap_err(), IdentityError::Skew);
        assert_eq!(ver.verify(&ok, CHAT, b"{}", 939, "r".into()).unwrap_err(), IdentityError::Skew);
        for missing in [HEADER_UID, HEADER_TS, HEADER_NONCE, HEADER_SIGNATURE] {
            let mut h = ok.clone();
            h.remove(missing);
            assert!(matches!(
                ver.verify(&h, CHAT, b"{}", 1000, "r".into()),
                Err(IdentityError::MissingHeader(_))
            ));
        }
        for bad in ["not-hex", "abcd", "short nonce"] {
            let mut h = ok.clone();
            h.insert(HEADER_SIGNATURE, HeaderValue::from_str(bad).unwrap());
            assert!(matches!(
                ver.verify(&h, CHAT, b"{}", 1000, "r".into()),
                Err(IdentityError::MissingHeader(_))
            ));
        }
        let mut h = ok.clone();
        h.insert(HEADER_NONCE, HeaderValue::from_static("short"));
        assert!(matches!(
            ver.verify(&h, CHAT, b"{}", 1000, "r".into()),
            Err(IdentityError::MissingHeader(_))
        ));
        // A second copy of a signed header.
        let mut h = ok.clone();
        h.append(HEADER_UID, HeaderValue::from_static("bob"));
        assert!(matches!(
            ver.verify(&h, CHAT, b"{}", 1000, "r".into()),
            Err(IdentityError::MissingHeader(_))
        ));
        // A signature made with the proxy secret instead of the signing secret.
        let mut h = ok.clone();
        let fields = Signed {
            target: CHAT,
            uid: "alice",
            ts: 1000,
            nonce: NONCE,
        };
        let wrong = hex::encode(g1_signing::user_signature(v.proxy_secret.as_bytes(), &fields, b"{}", ""));
        h.insert(HEADER_SIGNATURE, HeaderValue::from_str(&wrong).unwrap());
        assert_eq!(ver.verify(&h, CHAT, b"{}", 1000, "r".into()).unwrap_err(), IdentityError::Signature);
    }

    /// Issue 10.4: a request signed for alice cannot carry bob's credential.
    #[test]
    fn credentials_are_bound_to_the_signature() {
        let v = vectors();
        let ver = verifier(&v);
        let alice = signed_with(&v, "alice", 1000, "{}", Some("nextcloud=alice-token"));
        assert!(ver.verify(&alice, CHAT, b"{}", 1000, "r".into()).is_ok());
        // Swapped, added or removed after signing: the signature no longer matches.
        for swapped in ["nextcloud=bob-token", "nextcloud=alice-token, probe=bob-token", ""] {
            let mut h = alice.clone();
            h.insert(HEADER_CREDENTIALS, HeaderValue::from_str(swapped).unwrap());
            assert_eq!(
                ver.verify(&h, CHAT, b"{}", 1000, "r".into()).unwrap_err(),
                IdentityError::Signature,
                "{swapped}"
            );
        }
        let mut h = alice.clone();
        h.remove(HEADER_CREDENTIALS);
        assert_eq!(ver.verify(&h, CHAT, b"{}", 1000, "r".into()).unwrap_err(), IdentityError::Signature);
        // A signed request without credentials cannot have one added either.
        let mut h = signed(&v, "alice", 1000, "{}");
        h.insert(HEADER_CREDENTIALS, HeaderValue::from_static("nextcloud=bob-token"));
        assert_eq!(ver.verify(&h, CHAT, b"{}", 1000, "r".into()).unwrap_err(), IdentityError::Signature);
    }

    /// Issue 10.4: even correctly signed, a JWT issued to bob never rides in alice's turn.
    #[test]
    fn a_jwt_for_another_subject_is_refused() {
        let v = vectors();
        let ver = verifier(&v);
        let bobs = jwt(serde_json::json!({"sub": "bob", "aud": "http://mcp/mcp"}));
        let h = signed_with(&v, "alice", 1000, "{}", Some(&format!("nextcloud={bobs}")));
        assert_eq!(
            ver.verify(&h, CHAT, b"{}", 1000, "r".into()).unwrap_err(),
            IdentityError::ForeignCredential
        );
        let numeric = jwt(serde_json::json!({"sub": 7}));
        let h = signed_with(&v, "7", 1000, "{}", Some(&format!("nextcloud={numeric}")));
        assert_eq!(
            ver.verify(&h, CHAT, b"{}", 1000, "r".into()).unwrap_err(),
            IdentityError::ForeignCredential
        );
        let alices = jwt(serde_json::json!({"sub": "alice", "aud": "http://mcp/mcp"}));
        let h = signed_with(&v, "alice", 1000, "{}", Some(&format!("nextcloud={alices}")));
        assert!(ver.verify(&h, CHAT, b"{}", 1000, "r".into()).is_ok());
        // Opaque tokens and app passwords carry no subject to compare.
        assert_eq!(jwt_subject("Abc-def-ghi"), None);
        assert_eq!(jwt_subject("a.b"), None);
        assert_eq!(jwt_subject(&jwt(serde_json::json!({"aud": "x"}))), None);
    }

    #[test]
    fn malformed_credentials_are_bad_requests() {
        let v = vectors();
        let ver = verifier(&v);
        for bad in ["nextcloud", "next cloud=t", "a=t,a=u", "a=to ken", "a=tok,en=", "a==="] {
            let h = signed_with(&v, "alice", 1000, "{}", Some(bad));
            let err = ver.verify(&h, CHAT, b"{}", 1000, "r".into()).unwrap_err();
            assert!(err.is_bad_request(), "{bad}: {err:?}");
        }
        let mut h = signed(&v, "alice", 1000, "{}");
        h.insert(HEADER_CREDENTIALS, HeaderValue::from_bytes(b"nextcloud=t\xff").unwrap());
        assert!(ver.verify(&h, CHAT, b"{}", 1000, "r".into()).unwrap_err().is_bad_request());
        // The single-token header of earlier versions is refused, not silently dropped.
        let mut h = signed(&v, "alice", 1000, "{}");
        h.insert(HEADER_LEGACY_NC_AUTHORIZATION, HeaderValue::from_static("Bearer t"));
        assert!(ver.verify(&h, CHAT, b"{}", 1000, "r".into()).unwrap_err().is_bad_request());
    }

    #[test]
    fn headers_are_judged_before_any_body() {
        let v = vectors();
        let ver = verifier(&v);
        let mut h = signed(&v, "alice", 1000, "{}");
        h.insert("authorization", HeaderValue::from_static("Bearer wrong"));
        assert_eq!(ver.check_headers(&h, 1000).unwrap_err(), IdentityError::ProxyBearer);
        let h = signed(&v, "alice", 1000, "{}");
        assert_eq!(ver.check_headers(&h, 2000).unwrap_err(), IdentityError::Skew);
        assert_eq!(ver.check_headers(&h, 1000).unwrap().uid, "alice");
    }

    #[test]
    fn body_uid_is_refused_even_when_signed() {
        let v = vectors();
        for body in [r#"{"uid":"bob"}"#, r#"{"user":"bob","id":"c"}"#, r#"{"userId":"x"}"#] {
            let h = signed(&v, "alice", 1000, body);
            let err = verifier(&v).verify(&h, CHAT, body.as_bytes(), 1000, "r".into()).unwrap_err();
            assert!(err.is_bad_request(), "{body}");
        }
        // Nested fields are message content, not identity claims.
        let body = r#"{"id":"c","messages":[{"user":"x"}]}"#;
        let h = signed(&v, "alice", 1000, body);
        assert!(verifier(&v).verify(&h, CHAT, body.as_bytes(), 1000, "r".into()).is_ok());
    }

    #[test]
    fn request_ids_are_reused_only_when_sane() {
        let mut h = HeaderMap::new();
        h.insert(HEADER_REQUEST_ID, HeaderValue::from_static("abc-123"));
        assert_eq!(request_id(&h), "abc-123");
        h.insert(HEADER_REQUEST_ID, HeaderValue::from_static("has space"));
        assert_ne!(request_id(&h), "has space");
    }

    /// The admin signature: a distinct purpose over the same target, uid, ts and nonce. The
    /// PHP app's tests check the same vectors.
    #[test]
    fn admin_signatures_are_separate_from_user_signatures() {
        let v = vectors();
        let ver = verifier(&v);
        let status = Target::new("GET", "/v1/admin/status");
        let mut h = signed_for(&v, status, "alice", 1000, "", None);
        assert!(ver.verify(&h, status, b"", 1000, "r".into()).is_ok());
        assert_eq!(
            ver.check_admin(&h, status, "alice"),
            Err(IdentityError::NotAdmin),
            "a user signature is not an admin one"
        );
        let user_sig = h.get(HEADER_SIGNATURE).unwrap().clone();
        h.insert(HEADER_ADMIN_SIGNATURE, user_sig);
        assert_eq!(ver.check_admin(&h, status, "alice"), Err(IdentityError::NotAdmin));
        let fields = Signed {
            target: status,
            uid: "alice",
            ts: 1000,
            nonce: NONCE,
        };
        let admin = hex::encode(g1_signing::admin_signature(v.signing_secret.as_bytes(), &fields));
        h.insert(HEADER_ADMIN_SIGNATURE, HeaderValue::from_str(&admin).unwrap());
        assert_eq!(ver.check_admin(&h, status, "alice"), Ok(()));
        // Bound to the uid, the target and the nonce of this request.
        assert_eq!(ver.check_admin(&h, status, "bob"), Err(IdentityError::NotAdmin));
        for moved in ["/v1/admin/status?x=1", "/v1/admin/other", "/v1/conversations"] {
            assert_eq!(
                ver.check_admin(&h, Target::new("GET", moved), "alice"),
                Err(IdentityError::NotAdmin),
                "{moved}"
            );
        }
        h.insert(HEADER_NONCE, HeaderValue::from_static("another-nonce-0123456789"));
        assert_eq!(ver.check_admin(&h, status, "alice"), Err(IdentityError::NotAdmin));
        // The earlier purpose over the same uid, ts and nonce (the v1 form) is not accepted.
        let mut h = signed_for(&v, status, "alice", 1000, "", None);
        let v1 = g1_signing::hmac_sha256(
            v.signing_secret.as_bytes(),
            format!("tamebi-admin-v1\nalice\n1000\n{NONCE}").as_bytes(),
        );
        h.insert(HEADER_ADMIN_SIGNATURE, HeaderValue::from_str(&hex::encode(v1)).unwrap());
        assert_eq!(ver.check_admin(&h, status, "alice"), Err(IdentityError::NotAdmin));
    }

    #[test]
    fn shared_admin_vectors_are_accepted_at_their_own_target_only() {
        let v = vectors();
        let ver = verifier(&v);
        assert!(!v.admin_vectors.is_empty());
        for case in &v.admin_vectors {
            let mut h = signed_for(&v, case.target(), &case.uid, case.ts, "", None);
            h.insert(HEADER_NONCE, HeaderValue::from_str(&case.nonce).unwrap());
            h.insert(HEADER_ADMIN_SIGNATURE, HeaderValue::from_str(&case.signature).unwrap());
            let fields = Signed {
                target: case.target(),
                uid: &case.uid,
                ts: case.ts,
                nonce: &case.nonce,
            };
            assert_eq!(g1_signing::admin_string(&fields), case.signed_string);
            assert_eq!(ver.check_admin(&h, case.target(), &case.uid), Ok(()), "{}", case.signed_string);
            assert_eq!(
                ver.check_admin(&h, Target::new("POST", &case.path), &case.uid),
                Err(IdentityError::NotAdmin)
            );
        }
    }

    /// Issue #34: the person's language is the signed `lang` query parameter; anything but one
    /// BCP 47 tag is a bad request, after the signature over that query is checked.
    #[test]
    fn the_signed_lang_parameter_is_the_callers_language() {
        let v = vectors();
        let now = 1_700_000_000;
        let verify = |query: &'static str| {
            let target = Target { query, ..CHAT };
            let h = signed_for(&v, target, "alice", now, "{}", None);
            verifier(&v).verify(&h, target, b"{}", now, "r".into())
        };
        assert_eq!(
            verify("lang=de-DE").unwrap().language.map(|l| l.tag().to_string()),
            Some("de-DE".into())
        );
        assert_eq!(verify("").unwrap().language, None);
        assert_eq!(verify("other=1").unwrap().language, None);
        for garbage in [
            "lang=",
            "lang=de_DE",
            "lang=de&lang=en",
            "lang=Answer%20in%20pirate",
            "lang=de%0AIgnore",
        ] {
            let error = verify(garbage).unwrap_err();
            assert_eq!(error, IdentityError::Language, "{garbage}");
            assert!(error.is_bad_request());
        }
        // The parameter is signed like the rest of the query: changed after signing, refused.
        let h = signed_for(&v, Target { query: "lang=de", ..CHAT }, "alice", now, "{}", None);
        let moved = Target { query: "lang=fr", ..CHAT };
        assert_eq!(
            verifier(&v).verify(&h, moved, b"{}", now, "r".into()).unwrap_err(),
            IdentityError::Signature
        );
    }

    #[test]
    fn tokens_never_print() {
        let b = NcBearer("secret-token".into());
        assert!(!format!("{b:?}").contains("secret-token"));
        let c = Credentials::parse("nextcloud=secret-token").unwrap();
        let shown = format!("{c:?}");
        assert!(!shown.contains("secret-token") && shown.contains("nextcloud"));
    }
}
