//! The gate in front of `/mcp`: no bearer, a bearer minted for another server, or one the
//! upstream rejects is HTTP 401 with the RFC 9728 challenge (`WWW-Authenticate: Bearer
//! resource_metadata="…/.well-known/oauth-protected-resource"`); otherwise the request goes
//! on with its [`Caller`] in its extensions.
//!
//! [`AuthState`] is the gate's own small state (audience, metadata URL, uid cache, the
//! server's [`Identify`]); it knows nothing of tools or of the server's application state.
//! Never: decide what a caller may do, or keep their bearer.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::audience::{Audience, audience};
use crate::caller::{Bearer, Caller};
use crate::config::BaseConfig;
use crate::identity::{Identify, IdentifyError, UidCache};

/// The path of the RFC 9728 protected-resource metadata document.
pub const METADATA_PATH: &str = "/.well-known/oauth-protected-resource";

/// What the gate needs, and nothing else.
pub struct AuthState<I> {
    /// Canonical URI of the MCP endpoint: the audience a JWT must name.
    resource: String,
    /// Where the metadata document is served, named in every challenge.
    metadata_url: String,
    /// The authorization server the metadata document names (Nextcloud).
    authorization_server: String,
    uids: UidCache,
    identify: I,
}

impl<I: Identify> AuthState<I> {
    pub fn new(config: &BaseConfig, identify: I) -> Self {
        AuthState {
            resource: config.resource(),
            metadata_url: format!("{}{METADATA_PATH}", config.public_origin()),
            authorization_server: config.nc_url.as_str().trim_end_matches('/').to_string(),
            uids: UidCache::default(),
            identify,
        }
    }

    /// The canonical resource URI (the JWT audience).
    pub fn resource(&self) -> &str {
        &self.resource
    }

    /// The RFC 9728 protected-resource metadata document.
    pub fn metadata(&self) -> serde_json::Value {
        serde_json::json!({
            "resource": self.resource,
            "authorization_servers": [self.authorization_server],
            "bearer_methods_supported": ["header"],
        })
    }

    /// Resolves the caller of a request, or says why not.
    pub async fn resolve(&self, headers: &HeaderMap) -> Result<Caller, Refusal> {
        let bearer = Bearer::from_headers(headers).ok_or(Refusal::Missing)?;
        if audience(bearer.as_str(), &self.resource) == Audience::Foreign {
            return Err(Refusal::Invalid("the token was not issued for this server"));
        }
        let key = bearer.digest();
        if let Some(uid) = self.uids.get(&key) {
            return Ok(Caller::new(bearer, uid));
        }
        match self.identify.whoami(&bearer).await {
            Ok(uid) => {
                self.uids.put(key, uid.clone());
                Ok(Caller::new(bearer, uid))
            }
            Err(IdentifyError::Rejected) => Err(Refusal::Invalid("Nextcloud did not accept the token")),
            Err(IdentifyError::Unavailable(why)) => Err(Refusal::Unavailable(why)),
        }
    }

    fn refusal_response(&self, refusal: Refusal) -> Response {
        let metadata = &self.metadata_url;
        let (challenge, message) = match refusal {
            Refusal::Missing => (
                format!(r#"Bearer resource_metadata="{metadata}""#),
                "a bearer token is required".to_string(),
            ),
            Refusal::Invalid(why) => (
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
        let mut response = (StatusCode::UNAUTHORIZED, axum::Json(serde_json::json!({ "error": message }))).into_response();
        if let Ok(v) = HeaderValue::from_str(&challenge) {
            response.headers_mut().insert(header::WWW_AUTHENTICATE, v);
        }
        response
    }
}

/// Why a request has no caller.
#[derive(Debug)]
pub enum Refusal {
    /// No usable `Authorization: Bearer` header: 401 with the bare challenge.
    Missing,
    /// A bearer that is foreign or rejected: 401 with `error="invalid_token"`.
    Invalid(&'static str),
    /// The upstream could not be asked: 503, so clients retry instead of re-authenticating.
    Unavailable(String),
}

/// The axum middleware: attaches the [`Caller`] or answers 401 (or 503).
pub async fn require_caller<I: Identify>(State(state): State<Arc<AuthState<I>>>, mut request: Request, next: Next) -> Response {
    match state.resolve(request.headers()).await {
        Ok(caller) => {
            request.extensions_mut().insert(caller);
            next.run(request).await
        }
        Err(refusal) => state.refusal_response(refusal),
    }
}

/// `router` with the gate in front of every route it has.
pub fn protect<I: Identify>(router: axum::Router, state: Arc<AuthState<I>>) -> axum::Router {
    router.layer(axum::middleware::from_fn_with_state(state, require_caller::<I>))
}

/// The metadata document at its well-known path (and below it, per RFC 9728 §3.1).
pub fn metadata_routes<I: Identify>(state: Arc<AuthState<I>>) -> axum::Router {
    let document = state.metadata();
    let serve = move || {
        let document = document.clone();
        async move { axum::Json(document) }
    };
    axum::Router::new()
        .route(METADATA_PATH, axum::routing::get(serve.clone()))
        .route(&format!("{METADATA_PATH}/{{*rest}}"), axum::routing::get(serve))
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use tower::ServiceExt;

    use super::*;
    use crate::audience::test_jwt;

    /// Knows one token, counts how often it is asked.
    struct OneUser {
        asked: AtomicUsize,
    }

    impl Identify for OneUser {
        async fn whoami(&self, bearer: &Bearer) -> Result<String, IdentifyError> {
            self.asked.fetch_add(1, Ordering::SeqCst);
            match bearer.as_str() {
                "down" => Err(IdentifyError::Unavailable("down".into())),
                t if t == "alice-token" || t.contains('.') => Ok("alice".into()),
                _ => Err(IdentifyError::Rejected),
            }
        }
    }

    fn gate() -> (Arc<AuthState<OneUser>>, axum::Router) {
        let config = BaseConfig::from_lookup(
            &|k| match k {
                "NC_URL" => Some("http://nc.test/".into()),
                "MCP_PUBLIC_URL" => Some("https://mcp.test/mcp".into()),
                _ => None,
            },
            "127.0.0.1:8712",
        )
        .unwrap();
        let state = Arc::new(AuthState::new(
            &config,
            OneUser {
                asked: AtomicUsize::new(0),
            },
        ));
        let echo = axum::Router::new().route(
            "/mcp",
            axum::routing::post(|request: Request| async move {
                request
                    .extensions()
                    .get::<Caller>()
                    .map(|c| c.uid().to_string())
                    .unwrap_or_default()
            }),
        );
        let router = protect(echo, state.clone()).merge(metadata_routes(state.clone()));
        (state, router)
    }

    async fn post(router: &axum::Router, auth: Option<&str>) -> Response {
        let mut request = Request::post("/mcp");
        if let Some(a) = auth {
            request = request.header(header::AUTHORIZATION, a);
        }
        router
            .clone()
            .oneshot(request.body(axum::body::Body::empty()).unwrap())
            .await
            .unwrap()
    }

    fn challenge(r: &Response) -> String {
        r.headers()[header::WWW_AUTHENTICATE].to_str().unwrap().to_string()
    }

    #[tokio::test]
    async fn refusals_carry_the_rfc9728_challenge() {
        let (state, router) = gate();
        let metadata = r#"resource_metadata="https://mcp.test/.well-known/oauth-protected-resource""#;

        let r = post(&router, None).await;
        assert_eq!(r.status(), 401);
        assert_eq!(challenge(&r), format!("Bearer {metadata}"));

        let r = post(&router, Some("Bearer wrong")).await;
        assert_eq!(r.status(), 401);
        assert!(challenge(&r).contains(metadata) && challenge(&r).contains(r#"error="invalid_token""#));

        let foreign = test_jwt(serde_json::json!({"aud": "https://other.test/mcp"}));
        let r = post(&router, Some(&format!("Bearer {foreign}"))).await;
        assert_eq!(r.status(), 401);
        assert!(challenge(&r).contains("not issued for this server"));

        assert_eq!(post(&router, Some("Bearer down")).await.status(), 503);
        // The foreign JWT never reached upstream: wrong + down were asked, nothing else.
        assert_eq!(state.identify.asked.load(Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn accepted_callers_are_cached_and_attached() {
        let (state, router) = gate();
        for _ in 0..2 {
            let r = post(&router, Some("Bearer alice-token")).await;
            assert_eq!(r.status(), 200);
            let body = axum::body::to_bytes(r.into_body(), 1024).await.unwrap();
            assert_eq!(&body[..], b"alice");
        }
        let ours = test_jwt(serde_json::json!({"aud": "https://mcp.test/mcp"}));
        assert_eq!(post(&router, Some(&format!("Bearer {ours}"))).await.status(), 200);
        assert_eq!(
            state.identify.asked.load(Ordering::SeqCst),
            2,
            "the second alice-token call is cached"
        );
    }

    #[tokio::test]
    async fn metadata_document() {
        let (_, router) = gate();
        for path in [METADATA_PATH, "/.well-known/oauth-protected-resource/mcp"] {
            let r = router
                .clone()
                .oneshot(Request::get(path).body(axum::body::Body::empty()).unwrap())
                .await
                .unwrap();
            assert_eq!(r.status(), 200);
            let body = axum::body::to_bytes(r.into_body(), 4096).await.unwrap();
            let doc: serde_json::Value = serde_json::from_slice(&body).unwrap();
            assert_eq!(
                doc,
                serde_json::json!({
                    "resource": "https://mcp.test/mcp",
                    "authorization_servers": ["http://nc.test"],
                    "bearer_methods_supported": ["header"],
                })
            );
        }
    }
}
