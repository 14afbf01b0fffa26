//! The proxy itself: every request not under `/__fault/` goes to the upstream (the Nextcloud
//! stand-in) and its answer comes back, bent by the first matching rule. It must never change
//! a request on its way in (the credential it carries is the caller's, G1), only the answer.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use bytes::Bytes;
use futures::StreamExt;
use http::{HeaderMap, Request, Response, StatusCode, header};
use hyper::body::Incoming;

use crate::Error;
use crate::control;
use crate::rules::{Action, Faults};

/// The largest request or answer body the proxy holds (tests move small files).
const MAX_BODY: usize = 64 * 1024 * 1024;

/// Shared by every connection.
pub struct Proxy {
    pub faults: Faults,
    upstream: String,
    http: reqwest::Client,
}

/// A whole answer from the upstream.
struct Answer {
    status: StatusCode,
    headers: HeaderMap,
    body: Bytes,
}

impl Proxy {
    pub fn new(upstream: &str) -> Result<Proxy, Error> {
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| Error::Setup(format!("HTTP client: {e}")))?;
        Ok(Proxy {
            faults: Faults::default(),
            upstream: upstream.trim_end_matches('/').to_string(),
            http,
        })
    }

    /// One request. An `Err` makes hyper close the connection without an answer, which is
    /// how `drop_answer` and the second half of `reset_mid_body` are done.
    pub async fn handle(self: Arc<Self>, request: Request<Incoming>) -> Result<Response<Body>, Error> {
        let path = request.uri().path().to_string();
        if path.starts_with("/__fault/") {
            return Ok(control::handle(&self.faults, request).await);
        }
        let action = self.faults.decide(request.method().as_str(), &path);
        if let Some(Action::Status { status, forward: false }) = action {
            return Ok(plain(status, "fault-proxy: injected failure\n"));
        }
        let answer = match self.forward(request).await {
            Ok(answer) => answer,
            Err(e) => return Ok(plain(502, &format!("fault-proxy: upstream failed: {e}\n"))),
        };
        match action {
            None => Ok(whole(answer)),
            Some(action) => bend(answer, action).await,
        }
    }

    async fn forward(&self, request: Request<Incoming>) -> Result<Answer, Error> {
        let (parts, body) = request.into_parts();
        let body = axum::body::to_bytes(Body::new(body), MAX_BODY)
            .await
            .map_err(|e| Error::Upstream(format!("request body: {e}")))?;
        let target = parts.uri.path_and_query().map_or("/", |p| p.as_str());
        let mut headers = parts.headers;
        // The Host header stays as the client sent it, as a reverse proxy in front of
        // Nextcloud keeps it: WebDAV's MOVE names its Destination with that host.
        strip_hop_by_hop(&mut headers);
        let response = self
            .http
            .request(parts.method, format!("{}{target}", self.upstream))
            .headers(headers)
            .body(body)
            .send()
            .await
            .map_err(|e| Error::Upstream(e.to_string()))?;
        let status = response.status();
        let mut headers = response.headers().clone();
        strip_hop_by_hop(&mut headers);
        let body = response.bytes().await.map_err(|e| Error::Upstream(e.to_string()))?;
        Ok(Answer { status, headers, body })
    }
}

/// Applies a forwarding action to Nextcloud's answer.
async fn bend(mut answer: Answer, action: Action) -> Result<Response<Body>, Error> {
    match action {
        Action::Status { status, .. } => Ok(plain(status, "fault-proxy: injected failure after forwarding\n")),
        Action::DropAnswer => Err(Error::Injected("answer dropped")),
        Action::Stall { secs } => {
            tokio::time::sleep(Duration::from_secs(secs)).await;
            Ok(whole(answer))
        }
        Action::Truncate => {
            answer.body = answer.body.slice(..answer.body.len() / 2);
            Ok(whole(answer))
        }
        Action::ReplaceBody { body, status } => {
            if let Some(code) = status.and_then(|c| StatusCode::from_u16(c).ok()) {
                answer.status = code;
            }
            answer.body = Bytes::from(body);
            Ok(whole(answer))
        }
        Action::ResetMidBody => Ok(cut(answer)),
    }
}

/// The answer as it came, with a fresh `Content-Length`.
fn whole(answer: Answer) -> Response<Body> {
    let mut response = Response::new(Body::from(answer.body));
    *response.status_mut() = answer.status;
    *response.headers_mut() = answer.headers;
    response
}

/// Status, headers and the full `Content-Length`, then half the body, then a reset.
fn cut(answer: Answer) -> Response<Body> {
    let body = if answer.body.is_empty() {
        Bytes::from_static(b"<?xml version=\"1.0\"?>\n<d:error xmlns:d=\"DAV:\"/>\n")
    } else {
        answer.body
    };
    let half = body.slice(..body.len() / 2);
    // The pause lets the status, headers and half the body leave before the reset; without
    // it hyper may close the connection with them still in its write buffer.
    let reset = async {
        tokio::time::sleep(Duration::from_millis(200)).await;
        Err(Error::Injected("connection reset mid-body"))
    };
    let chunks = futures::stream::once(async { Ok::<_, Error>(half) }).chain(futures::stream::once(reset));
    let mut response = Response::new(Body::from_stream(chunks));
    *response.status_mut() = answer.status;
    *response.headers_mut() = answer.headers;
    response.headers_mut().insert(header::CONTENT_LENGTH, body.len().into());
    response
}

fn plain(status: u16, text: &str) -> Response<Body> {
    let mut response = Response::new(Body::from(text.to_string()));
    *response.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, http::HeaderValue::from_static("text/plain; charset=utf-8"));
    response
}

/// Headers that describe one hop's framing, not the message; each side sets its own.
fn strip_hop_by_hop(headers: &mut HeaderMap) {
    for name in [
        header::CONNECTION,
        header::CONTENT_LENGTH,
        header::TRANSFER_ENCODING,
        header::TE,
        header::TRAILER,
        header::UPGRADE,
        header::PROXY_AUTHORIZATION,
    ] {
        headers.remove(name);
    }
    headers.remove("keep-alive");
}
