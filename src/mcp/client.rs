//! A per-call MCP client over Streamable HTTP (rmcp), on its server's reqwest connection pool
//! (owned by that server's `ToolServerActor`).
//!
//! rmcp's transport fixes its Authorization header per client, so a client is built for
//! each operation with the bearer meant for that server (or none) and dropped right after:
//! the pool is shared, the credential is not. The request id travels with every call, and the
//! W3C `traceparent` of the `mcp.call` span does too when spans are exported (see
//! `crate::telemetry`).

use http::{HeaderName, HeaderValue};
use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, CallToolResult, ReadResourceRequestParams, ReadResourceResult, Tool};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use std::collections::HashMap;
use std::time::Duration;

use crate::auth::NcBearer;

/// Where and as whom one MCP operation runs.
#[derive(Clone, Debug)]
pub struct CallContext {
    pub url: url::Url,
    /// The token issued for this server's audience; None for a server configured `auth=none`,
    /// which then gets no Authorization header on any request (initialize, list or call).
    pub bearer: Option<NcBearer>,
    pub request_id: String,
    pub traceparent: Option<String>,
    /// The span that asked for this operation (a tool span): the tool-server actor's
    /// `mcp.call` span is its child. Carried here because ractor runs without
    /// `message_span_propogation`, which put a span in every mailbox slot (issue #16).
    pub parent: tracing::Span,
    pub timeout: Duration,
}

#[derive(Debug, thiserror::Error)]
pub enum McpError {
    #[error("tool server unreachable or failed: {0}")]
    Transport(String),
    #[error("tool server timed out")]
    Timeout,
    /// The server answered the request with a JSON-RPC error (an unknown resource, bad params).
    #[error("tool server refused the request: {0}")]
    Refused(String),
    /// The server needs the user's token for its audience and the request carried none.
    #[error("no credential for this server")]
    NoCredential,
}

/// A failed request: the server's own JSON-RPC error is told apart from transport trouble.
fn service_error(e: rmcp::ServiceError) -> McpError {
    match e {
        rmcp::ServiceError::McpError(data) => McpError::Refused(data.message.to_string()),
        other => McpError::Transport(other.to_string()),
    }
}

/// Lists every tool the server offers to this caller.
pub async fn list_tools(http: &reqwest::Client, ctx: &CallContext) -> Result<Vec<Tool>, McpError> {
    with_client(
        http,
        ctx,
        |client| async move { client.list_all_tools().await.map_err(service_error) },
    )
    .await
}

/// Calls one tool.
pub async fn call_tool(
    http: &reqwest::Client,
    ctx: &CallContext,
    name: &str,
    arguments: serde_json::Map<String, serde_json::Value>,
) -> Result<CallToolResult, McpError> {
    let mut params = CallToolRequestParams::new(name.to_string());
    params.arguments = Some(arguments);
    with_client(
        http,
        ctx,
        |client| async move { client.call_tool(params).await.map_err(service_error) },
    )
    .await
}

/// Reads one resource (an MCP App document).
pub async fn read_resource(http: &reqwest::Client, ctx: &CallContext, uri: &str) -> Result<ReadResourceResult, McpError> {
    let params = ReadResourceRequestParams::new(uri.to_string());
    with_client(http, ctx, |client| async move {
        client.read_resource(params).await.map_err(service_error)
    })
    .await
}

async fn with_client<T, F, Fut>(http: &reqwest::Client, ctx: &CallContext, op: F) -> Result<T, McpError>
where
    F: FnOnce(rmcp::service::RunningService<rmcp::RoleClient, ()>) -> Fut,
    Fut: std::future::Future<Output = Result<T, McpError>>,
{
    let mut headers = HashMap::new();
    if let Ok(v) = HeaderValue::from_str(&ctx.request_id) {
        headers.insert(HeaderName::from_static("x-request-id"), v);
    }
    if let Some(tp) = ctx.traceparent.as_deref().and_then(|t| HeaderValue::from_str(t).ok()) {
        headers.insert(HeaderName::from_static("traceparent"), tp);
    }
    let mut config = StreamableHttpClientTransportConfig::with_uri(ctx.url.as_str().to_string()).custom_headers(headers);
    if let Some(bearer) = &ctx.bearer {
        config = config.auth_header(bearer.token().to_string());
    }
    let transport = StreamableHttpClientTransport::with_client(http.clone(), config);
    let work = async {
        let client = ().serve(transport).await.map_err(|e| McpError::Transport(e.to_string()))?;
        let peer_closer = client.cancellation_token();
        let result = op(client).await;
        // The client (and with it the bearer) ends with the call.
        peer_closer.cancel();
        result
    };
    tokio::time::timeout(ctx.timeout, work).await.map_err(|_| McpError::Timeout)?
}
