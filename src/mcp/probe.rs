//! Whether a configured MCP server answers, asked without any user's credential.
//!
//! For the admin status page. The orchestrator holds no credential of its own for Nextcloud
//! and must not grow one, so the probe sends none: an `auth=none` server is listed as any
//! caller would list it; an `auth=nextcloud` server gets one unauthenticated `initialize`, and
//! its RFC 9728 `401` (with `resource_metadata`) is the proof that it answers. Its tools are
//! only ever listed with a user's own token, inside that user's turn.

use std::time::Duration;

use crate::config::{McpServer, ServerAuth};
use crate::mcp::client::{self, CallContext};

/// How long one probe may take.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(5);

/// What a probe found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reachability {
    /// Listed without a credential (an `auth=none` server): its tool names.
    Listed(Vec<String>),
    /// Answered 401 asking for a user's sign-in; `metadata` when the challenge names RFC 9728
    /// protected-resource metadata.
    SignInRequired { metadata: bool },
    /// Answered something else (an HTTP status): it is there, but not well.
    Answered(u16),
    /// No answer: connection refused, timeout, TLS failure.
    Unreachable,
}

impl Reachability {
    pub fn answers(&self) -> bool {
        !matches!(self, Reachability::Unreachable)
    }
}

/// Probes `server` as described in the module doc. Never sends a credential.
pub async fn probe(http: &reqwest::Client, server: &McpServer, request_id: &str) -> Reachability {
    if server.auth == ServerAuth::None {
        let ctx = CallContext {
            url: server.url.clone(),
            bearer: None,
            request_id: request_id.to_string(),
            traceparent: None,
            parent: tracing::Span::none(),
            timeout: PROBE_TIMEOUT,
        };
        if let Ok(tools) = client::list_tools(http, &ctx).await {
            return Reachability::Listed(tools.iter().map(|t| t.name.to_string()).collect());
        }
    }
    initialize_without_credential(http, &server.url, request_id).await
}

/// One `initialize` with no `Authorization` header; the status says whether anyone is there.
async fn initialize_without_credential(http: &reqwest::Client, url: &url::Url, request_id: &str) -> Reachability {
    let body = serde_json::json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "tamebi-probe", "version": "1"}}
    });
    let sent = http
        .post(url.clone())
        .header(http::header::ACCEPT, "application/json, text/event-stream")
        .header("x-request-id", request_id)
        .json(&body)
        .timeout(PROBE_TIMEOUT)
        .send()
        .await;
    let Ok(response) = sent else {
        return Reachability::Unreachable;
    };
    match response.status().as_u16() {
        401 => Reachability::SignInRequired {
            metadata: response
                .headers()
                .get_all(http::header::WWW_AUTHENTICATE)
                .iter()
                .filter_map(|v| v.to_str().ok())
                .any(|v| v.contains("resource_metadata=")),
        },
        status => Reachability::Answered(status),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::{HeaderMap, StatusCode};
    use std::sync::{Arc, Mutex};

    /// A server that answers every POST like mcp-nextcloud without a token (RFC 9728), and
    /// records whether any request carried an Authorization header.
    async fn needs_sign_in() -> (url::Url, Arc<Mutex<Vec<bool>>>) {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let record = seen.clone();
        let app = axum::Router::new().route(
            "/mcp",
            axum::routing::post(move |headers: HeaderMap| {
                let record = record.clone();
                async move {
                    record.lock().unwrap().push(headers.contains_key(http::header::AUTHORIZATION));
                    (
                        StatusCode::UNAUTHORIZED,
                        [(
                            http::header::WWW_AUTHENTICATE,
                            r#"Bearer resource_metadata="http://x/.well-known/oauth-protected-resource/mcp""#,
                        )],
                    )
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        #[expect(clippy::disallowed_methods, reason = "the test's server lives as long as the test's runtime")]
        tokio::spawn(async move { axum::serve(listener, app).await });
        (url::Url::parse(&format!("http://{addr}/mcp")).unwrap(), seen)
    }

    fn server(url: url::Url, auth: ServerAuth) -> McpServer {
        McpServer {
            name: "s".into(),
            url,
            auth,
            trust: match auth {
                ServerAuth::Nextcloud => crate::config::ServerTrust::Own,
                ServerAuth::None => crate::config::ServerTrust::ThirdParty,
            },
        }
    }

    #[tokio::test]
    async fn a_nextcloud_server_proves_it_answers_without_any_credential() {
        let (url, seen) = needs_sign_in().await;
        let http = reqwest::Client::new();
        let found = probe(&http, &server(url.clone(), ServerAuth::Nextcloud), "r").await;
        assert_eq!(found, Reachability::SignInRequired { metadata: true });
        assert!(found.answers());
        assert_eq!(*seen.lock().unwrap(), vec![false], "one request, without Authorization");
        // An auth=none server that will not list without a token: tried, then told apart.
        let found = probe(&http, &server(url, ServerAuth::None), "r").await;
        assert_eq!(found, Reachability::SignInRequired { metadata: true });
        assert!(seen.lock().unwrap().iter().all(|auth| !auth));
    }

    #[tokio::test]
    async fn nobody_there_is_unreachable() {
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let url = url::Url::parse(&format!("http://127.0.0.1:{port}/mcp")).unwrap();
        let found = probe(&reqwest::Client::new(), &server(url, ServerAuth::Nextcloud), "r").await;
        assert_eq!(found, Reachability::Unreachable);
        assert!(!found.answers());
    }
}
