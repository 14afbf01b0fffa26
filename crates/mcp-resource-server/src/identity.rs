//! Whose bearer is this: asked upstream, cached briefly by a hash of the token.
//!
//! - [`Identify`] is what a server plugs in: one question to its upstream, "whose token is
//!   this". mcp-nextcloud answers it with its own client (which keeps session cookies);
//!   [`OcsIdentify`] is a ready answer for servers without one (`GET
//!   /ocs/v2.php/cloud/user` with the caller's bearer, no redirects).
//! - [`UidCache`] keeps the answer for [`UID_TTL`], keyed by sha256(token): it holds hashes
//!   and uids, never a token.
//!
//! Must never: keep a bearer, or answer from anything but the upstream's word.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use url::Url;

use crate::caller::Bearer;
use crate::error::Error;

/// How long a resolved uid is trusted without asking upstream again.
pub const UID_TTL: Duration = Duration::from_secs(60);
/// Upper bound on cached uids, so a flood of distinct tokens cannot grow memory unboundedly.
const UID_CACHE_MAX: usize = 10_000;

/// Why no uid could be had for a bearer.
#[derive(Debug, thiserror::Error)]
pub enum IdentifyError {
    /// The upstream did not accept the token (401, 403, 404): the caller gets 401.
    #[error("the token was not accepted")]
    Rejected,
    /// The upstream could not be asked (down, slow, garbled): the caller gets 503.
    #[error("{0}")]
    Unavailable(String),
}

/// Asks the upstream whose bearer this is. Implemented by each server's upstream client.
pub trait Identify: Send + Sync + 'static {
    /// The uid the upstream gives for `bearer`.
    fn whoami(&self, bearer: &Bearer) -> impl Future<Output = Result<String, IdentifyError>> + Send;
}

/// `<base>/ocs/v2.php/cloud/user`: the Nextcloud endpoint that names a token's user.
pub fn ocs_user_url(base: &Url) -> Url {
    let mut url = base.clone();
    url.set_query(None);
    url.set_fragment(None);
    if let Ok(mut path) = url.path_segments_mut() {
        path.pop_if_empty();
        path.extend(["ocs", "v2.php", "cloud", "user"]);
    }
    url
}

/// The uid in an OCS `cloud/user` answer (`{"ocs": {"data": {"id": …}}}`), refused when empty
/// or when it could escape a path segment.
pub fn parse_ocs_user(body: &[u8]) -> Result<String, IdentifyError> {
    #[derive(serde::Deserialize)]
    struct Ocs {
        ocs: OcsBody,
    }
    #[derive(serde::Deserialize)]
    struct OcsBody {
        data: OcsUser,
    }
    #[derive(serde::Deserialize)]
    struct OcsUser {
        id: String,
    }
    let body: Ocs = serde_json::from_slice(body)
        .map_err(|_| IdentifyError::Unavailable("Nextcloud's user endpoint gave an unreadable answer".into()))?;
    let uid = body.ocs.data.id;
    if uid.is_empty() || uid.contains('/') {
        return Err(IdentifyError::Unavailable("Nextcloud returned an unusable user id".into()));
    }
    Ok(uid)
}

/// [`Identify`] by Nextcloud's OCS user endpoint, with a client of its own.
pub struct OcsIdentify {
    http: reqwest::Client,
    url: Url,
}

impl OcsIdentify {
    /// For the Nextcloud at `nc_url`.
    pub fn new(nc_url: &Url) -> Result<Self, Error> {
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(5))
            .timeout(Duration::from_secs(30))
            // A redirect could carry the bearer to another origin.
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| Error::Config(format!("cannot build the HTTP client: {e}")))?;
        Ok(OcsIdentify {
            http,
            url: ocs_user_url(nc_url),
        })
    }
}

impl Identify for OcsIdentify {
    async fn whoami(&self, bearer: &Bearer) -> Result<String, IdentifyError> {
        let response = self
            .http
            .get(self.url.clone())
            .headers(bearer.headers())
            .header("OCS-APIRequest", "true")
            .header(http::header::ACCEPT, "application/json")
            .send()
            .await
            .map_err(|e| IdentifyError::Unavailable(format!("reaching Nextcloud failed: {}", e.without_url())))?;
        match response.status().as_u16() {
            200..=299 => {}
            401 | 403 | 404 => return Err(IdentifyError::Rejected),
            code => return Err(IdentifyError::Unavailable(format!("Nextcloud answered HTTP {code}"))),
        }
        let body = response
            .bytes()
            .await
            .map_err(|_| IdentifyError::Unavailable("Nextcloud's user endpoint broke off its answer".into()))?;
        parse_ocs_user(&body)
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn bearer(token: &str) -> Bearer {
        let mut h = http::HeaderMap::new();
        h.insert(http::header::AUTHORIZATION, format!("Bearer {token}").parse().unwrap());
        Bearer::from_headers(&h).unwrap()
    }

    #[test]
    fn cache_keys_are_hashes() {
        let cache = UidCache::default();
        cache.put(bearer("tok").digest(), "alice".into());
        assert_eq!(cache.get(&bearer("tok").digest()).as_deref(), Some("alice"));
        assert_eq!(cache.get(&bearer("other").digest()), None);
    }

    #[test]
    fn ocs_user_answers() {
        assert_eq!(parse_ocs_user(br#"{"ocs":{"data":{"id":"alice"}}}"#).unwrap(), "alice");
        assert!(matches!(
            parse_ocs_user(br#"{"ocs":{"data":{"id":"a/b"}}}"#),
            Err(IdentifyError::Unavailable(_))
        ));
        assert!(matches!(parse_ocs_user(b"<html>"), Err(IdentifyError::Unavailable(_))));
        let base = Url::parse("https://cloud.example.com/nextcloud/").unwrap();
        assert_eq!(
            ocs_user_url(&base).as_str(),
            "https://cloud.example.com/nextcloud/ocs/v2.php/cloud/user"
        );
    }

    /// A real HTTP exchange with a small stand-in for the OCS endpoint: the bearer goes out
    /// unchanged, 401 is a rejection, a redirect is not followed (it could carry the bearer
    /// elsewhere), and a dead upstream is "unavailable", not "rejected".
    #[tokio::test]
    async fn ocs_identify_over_http() {
        use axum::http::{HeaderMap, StatusCode};
        use axum::response::IntoResponse;

        async fn user(headers: HeaderMap) -> axum::response::Response {
            match headers.get("authorization").and_then(|v| v.to_str().ok()) {
                Some("Bearer alice-token") if headers.contains_key("ocs-apirequest") => {
                    axum::Json(serde_json::json!({"ocs": {"data": {"id": "alice"}}})).into_response()
                }
                Some("Bearer moved") => (StatusCode::FOUND, [("location", "http://elsewhere.test/")]).into_response(),
                _ => StatusCode::UNAUTHORIZED.into_response(),
            }
        }
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let router = axum::Router::new().route("/nc/ocs/v2.php/cloud/user", axum::routing::get(user));
        let ocs = OcsIdentify::new(&Url::parse(&format!("http://{addr}/nc/")).unwrap()).unwrap();
        let checks = async {
            assert_eq!(ocs.whoami(&bearer("alice-token")).await.unwrap(), "alice");
            assert!(matches!(ocs.whoami(&bearer("wrong")).await, Err(IdentifyError::Rejected)));
            assert!(matches!(ocs.whoami(&bearer("moved")).await, Err(IdentifyError::Unavailable(_))));
        };
        // The stand-in serves beside the checks (no task to spawn) and stops with them.
        tokio::select! {
            result = axum::serve(listener, router) => panic!("the stand-in stopped: {result:?}"),
            () = checks => {}
        }

        let dead = OcsIdentify::new(&Url::parse("http://127.0.0.1:9/").unwrap()).unwrap();
        assert!(matches!(
            dead.whoami(&bearer("alice-token")).await,
            Err(IdentifyError::Unavailable(_))
        ));
    }
}
