//! Talking to Nextcloud as the caller.
//!
//! One shared [`reqwest::Client`] (connection pool, timeouts) serves every user; what makes a
//! request someone's is the bearer attached to it, taken from the inbound MCP request and
//! dropped with it. A [`Session`] pairs the client with one [`Caller`] for one tool call.
//! Statuses map to [`Error`] here, once. This module must never add a credential of its own,
//! retry around a 403/404, or keep a bearer beyond the call. The session cookies Nextcloud
//! hands back are kept per bearer by [`session_cookies`] and sent only with that bearer; every
//! request carries `OCS-APIRequest: true`, which is what lets Nextcloud (30 and later) accept a
//! session for anything but a GET without a browser's CSRF token. A request refused with 401
//! while it carried a cookie is sent once more without it, so the bearer alone decides.
//! [`Nextcloud`] also answers the auth gate's one question, whose bearer this is
//! ([`mcp_resource_server::Identify`]), through the same client and cookies.

pub mod dav;
pub mod paths;
pub mod session_cookies;
pub mod trace;

use std::sync::Arc;
use std::time::Duration;

use http::{HeaderMap, HeaderValue, Method, StatusCode};
use reqwest::{RequestBuilder, Response};
use url::Url;

use crate::error::Error;
use mcp_resource_server::identity::{Identify, IdentifyError, ocs_user_url, parse_ocs_user};
use mcp_resource_server::{Bearer, Caller};
use session_cookies::SessionCookies;

/// The largest response body read into memory (file downloads, DAV answers).
pub const MAX_BODY_BYTES: usize = 64 * 1024 * 1024;

/// The shared Nextcloud client. Cheap to clone.
#[derive(Clone, Debug)]
pub struct Nextcloud {
    http: reqwest::Client,
    base: Url,
    sessions: Arc<SessionCookies>,
}

impl Nextcloud {
    /// A client for the Nextcloud at `base`; one request (answer body included) may take at
    /// most `timeout` (`MCP_NEXTCLOUD_TIMEOUT_SECS`).
    ///
    /// Retries: reqwest's default policy resends only what the server provably never
    /// processed (HTTP/2 REFUSED_STREAM and GOAWAY), and hyper a request whose pooled
    /// connection closed before it was written; nothing else is ever sent twice (issue 32).
    pub fn new(base: Url, timeout: Duration) -> Result<Self, Error> {
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(5))
            .timeout(timeout)
            .pool_idle_timeout(Duration::from_secs(90))
            .pool_max_idle_per_host(64)
            // Redirects could carry the bearer to another origin; Nextcloud's APIs do not need them.
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| Error::Config(format!("cannot build the HTTP client: {e}")))?;
        Ok(Nextcloud {
            http,
            base,
            sessions: Arc::new(SessionCookies::default()),
        })
    }

    /// The caller's bearer, and the header that tells Nextcloud this is an API client: with a
    /// session cookie, Nextcloud's CSRF check (`Request::passesCSRFCheck`) wants a request token
    /// or, since Nextcloud 30, this header; without it a DAV request other than GET, an OCS
    /// call or a Deck call made with the session is refused (401, and Deck logs the session
    /// out). Harmless without a cookie.
    fn credential_headers(bearer: &Bearer) -> HeaderMap {
        let mut headers = bearer.headers();
        headers.insert("OCS-APIRequest", HeaderValue::from_static("true"));
        headers
    }

    /// Sends a request made with `bearer`, with that bearer's session cookie when one is held,
    /// and lets the session map learn from the answer. A 401 to a request that carried a
    /// cookie is tried once more without it (if the body can be sent twice): Nextcloud checks
    /// the session's CSRF rules before anything runs, so a refused session says nothing about
    /// the bearer, and only the bearer's own answer may stand. If that second answer is a
    /// success, Nextcloud refused this bearer's session: it gets none for a while (and if
    /// several users' sessions are refused, nobody gets one for a while: [`SessionCookies::refused`]).
    async fn send_as(&self, bearer: &Bearer, uid: Option<&str>, request: RequestBuilder, what: &str) -> Result<Response, Error> {
        let Some(cookie) = self.sessions.cookie(bearer) else {
            return self.send_observed(bearer, uid, request, what).await;
        };
        let again = request.try_clone();
        let response = self
            .send_observed(bearer, uid, request.header(http::header::COOKIE, cookie), what)
            .await?;
        let (StatusCode::UNAUTHORIZED, Some(again)) = (response.status(), again) else {
            return Ok(response);
        };
        tracing::debug!(what, "nextcloud refused the session cookie; trying the bearer alone");
        let response = self.send_observed(bearer, uid, again, what).await?;
        if response.status().is_success() {
            self.sessions.refused(bearer, uid);
        }
        Ok(response)
    }

    async fn send_observed(&self, bearer: &Bearer, uid: Option<&str>, request: RequestBuilder, what: &str) -> Result<Response, Error> {
        let response = trace::send_builder(request, &self.base, uid, what).await?;
        self.sessions.observe(bearer, response.status(), response.headers());
        Ok(response)
    }

    /// The session cookies held per bearer (tests look at how many).
    pub fn session_cookies(&self) -> &SessionCookies {
        &self.sessions
    }

    pub fn base(&self) -> &Url {
        &self.base
    }

    /// Asks Nextcloud whose bearer this is (`GET /ocs/v2.php/cloud/user`), through the shared
    /// client so the session cookie Nextcloud hands back is kept for this bearer's next calls.
    pub async fn whoami(&self, bearer: &Bearer) -> Result<String, Error> {
        const WHAT: &str = "identifying the caller";
        let request = self
            .http
            .get(ocs_user_url(&self.base))
            .headers(Self::credential_headers(bearer))
            .header(http::header::ACCEPT, "application/json");
        let response = self.send_as(bearer, None, request, WHAT).await?;
        if let Some(e) = Error::from_status(response.status(), WHAT) {
            return Err(e);
        }
        let body = read_bounded(response, MAX_BODY_BYTES, WHAT).await?;
        parse_ocs_user(&body).map_err(|e| Error::Retryable(e.to_string()))
    }

    /// A session acting as `caller` for one tool call.
    pub fn session<'a>(&'a self, caller: &'a Caller) -> Session<'a> {
        Session { nc: self, caller }
    }
}

/// The auth gate asks Nextcloud itself; 401/403/404 mean the token is not (or no longer) good.
impl Identify for Nextcloud {
    async fn whoami(&self, bearer: &Bearer) -> Result<String, IdentifyError> {
        match Nextcloud::whoami(self, bearer).await {
            Ok(uid) => Ok(uid),
            Err(Error::AuthExpired | Error::NotFound) => Err(IdentifyError::Rejected),
            Err(e) => Err(IdentifyError::Unavailable(e.to_string())),
        }
    }
}

/// One caller's view of Nextcloud for the duration of one tool call.
pub struct Session<'a> {
    nc: &'a Nextcloud,
    caller: &'a Caller,
}

impl Session<'_> {
    /// The caller's uid, as Nextcloud reported it.
    pub fn uid(&self) -> &str {
        self.caller.uid()
    }

    /// `<base>/<segments…>`, each segment percent-encoded.
    pub fn url<'s>(&self, segments: impl IntoIterator<Item = &'s str>) -> Url {
        paths::join_segments(&self.nc.base, segments)
    }

    /// `<base>/remote.php/dav/files/<uid>/<path>`.
    pub fn files_url(&self, path: &paths::UserPath) -> Url {
        self.url(
            ["remote.php", "dav", "files", self.uid()]
                .into_iter()
                .chain(path.segments().iter().map(String::as_str)),
        )
    }

    /// Decoded segments of the caller's files root, to turn hrefs back into relative paths.
    pub fn files_prefix(&self) -> Vec<String> {
        paths::url_segments(&self.url(["remote.php", "dav", "files", self.uid()]))
    }

    /// A request with the caller's bearer attached (the bearer's session cookie, if held, is
    /// added when it is sent).
    pub fn request(&self, method: Method, url: Url) -> RequestBuilder {
        self.nc
            .http
            .request(method, url)
            .headers(Nextcloud::credential_headers(self.caller.bearer()))
    }

    /// A request that asks for JSON (OCS and Deck APIs).
    pub fn ocs_request(&self, method: Method, url: Url) -> RequestBuilder {
        self.request(method, url).header(http::header::ACCEPT, "application/json")
    }

    /// Sends `request`; transport failures and non-2xx statuses become [`Error`]s.
    pub async fn send(&self, request: RequestBuilder, what: &str) -> Result<Response, Error> {
        let response = self.nc.send_as(self.caller.bearer(), Some(self.uid()), request, what).await?;
        if let Some(e) = Error::from_status(response.status(), what) {
            tracing::debug!(status = %response.status(), what, "nextcloud refused");
            return Err(e);
        }
        Ok(response)
    }

    /// Sends a request that must not take effect twice (a create, a move) and whose effect
    /// is not read back before its answer is used. Once it may have reached Nextcloud, a lost
    /// or unreadable answer says nothing about whether it happened: such a failure (a transport
    /// error, or a 500/502/504 that may come after the work was done) is [`Error::Unconfirmed`],
    /// wire kind `conflict`, never `retryable`, so nobody is told to simply try again and
    /// double it (issue 32). Nothing here is ever resent. A connection that was never made is
    /// reported the same way: over-cautious, never wrong.
    pub async fn send_once(&self, request: RequestBuilder, what: &str) -> Result<Response, Error> {
        let response = self
            .nc
            .send_as(self.caller.bearer(), Some(self.uid()), request, what)
            .await
            .map_err(|e| Error::answer_lost(what, &e))?;
        let status = response.status();
        match Error::from_status(status, what) {
            None => Ok(response),
            Some(e) if matches!(status.as_u16(), 500 | 502 | 504) => Err(Error::answer_lost(what, &e)),
            Some(e) => {
                tracing::debug!(%status, what, "nextcloud refused");
                Err(e)
            }
        }
    }

    /// [`Session::send_once`], then the JSON answer; an answer that cannot be read is lost too.
    pub async fn send_json_once<T: serde::de::DeserializeOwned>(&self, request: RequestBuilder, what: &str) -> Result<T, Error> {
        let response = self.send_once(request, what).await?;
        let bytes = read_bounded(response, MAX_BODY_BYTES, what)
            .await
            .map_err(|e| Error::answer_lost(what, &e))?;
        serde_json::from_slice(&bytes).map_err(|_| Error::answer_lost(what, &Error::Retryable("the answer was unreadable".into())))
    }

    /// Sends and reads the body as text (bounded).
    pub async fn send_text(&self, request: RequestBuilder, what: &str) -> Result<String, Error> {
        let response = self.send(request, what).await?;
        let bytes = read_bounded(response, MAX_BODY_BYTES, what).await?;
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }

    /// Sends a DAV request and parses the 207 multistatus.
    pub async fn multistatus(&self, request: RequestBuilder, what: &str) -> Result<Vec<dav::Entry>, Error> {
        let text = self.send_text(request, what).await?;
        dav::parse_multistatus(&text).map_err(|e| match e {
            Error::Retryable(m) => Error::Retryable(format!("{what}: {m}")),
            other => other,
        })
    }

    /// Sends and parses a JSON body into `T`.
    pub async fn send_json<T: serde::de::DeserializeOwned>(&self, request: RequestBuilder, what: &str) -> Result<T, Error> {
        let response = self.send(request, what).await?;
        let bytes = read_bounded(response, MAX_BODY_BYTES, what).await?;
        serde_json::from_slice(&bytes).map_err(|_| Error::Retryable(format!("{what}: Nextcloud gave an unreadable answer")))
    }
}

/// Reads a body up to `max` bytes; longer bodies are refused rather than truncated silently.
pub async fn read_bounded(mut response: Response, max: usize, what: &str) -> Result<Vec<u8>, Error> {
    let mut out = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(|e| Error::from_transport(&e, what))? {
        if out.len() + chunk.len() > max {
            return Err(Error::InvalidArgument(format!("{what}: the answer is larger than {max} bytes")));
        }
        out.extend_from_slice(&chunk);
    }
    Ok(out)
}

/// A custom HTTP method (PROPFIND, SEARCH, REPORT, MOVE).
pub fn method(name: &'static str) -> Method {
    Method::from_bytes(name.as_bytes()).unwrap_or(Method::GET)
}

/// Headers for an XML request body with the given depth.
pub fn dav_headers(depth: Option<&'static str>) -> HeaderMap {
    let mut h = HeaderMap::new();
    h.insert(
        http::header::CONTENT_TYPE,
        HeaderValue::from_static("application/xml; charset=utf-8"),
    );
    if let Some(d) = depth {
        h.insert("Depth", HeaderValue::from_static(d));
    }
    h
}

/// Whether `status` says a PUT created (201) rather than replaced (204/200).
pub fn created(status: StatusCode) -> bool {
    status == StatusCode::CREATED
}
