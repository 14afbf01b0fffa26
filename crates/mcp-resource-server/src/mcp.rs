//! The rmcp glue every server repeats otherwise.
//!
//! - [`stateless_service`]: rmcp's Streamable HTTP service run stateless (no session, JSON
//!   answers, no keep-alive stream): every POST stands alone, so any client works and any
//!   request can go to any instance.
//! - [`caller`]: the [`Caller`] the auth layer attached, read from a request context (rmcp
//!   hands the HTTP request's `Parts`, extensions included, to the handler).
//!   [`Caller`] is also an rmcp extractor: a `#[tool]` function takes `caller: Caller` as an
//!   argument, beside `Parameters<T>`.
//! - [`tool_span`]: the span of one tool call, parented to the HTTP request's span.

use std::sync::Arc;

use rmcp::handler::server::common::FromContextPart;
use rmcp::handler::server::tool::ToolCallContext;
use rmcp::service::{RequestContext, RoleServer};
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, ServerHandler};
use tokio_util::sync::CancellationToken;

use crate::caller::Caller;
use crate::config::BaseConfig;

/// The stateless MCP service type every server mounts at `/mcp`.
pub type Service<H> = StreamableHttpService<H, NeverSessionManager>;

/// A stateless Streamable HTTP service whose handler `factory` builds per request.
/// `max_request_body` bounds one JSON-RPC request; `shutdown` ends open streams.
pub fn stateless_service<H: ServerHandler + Send + 'static>(
    factory: impl Fn() -> Result<H, std::io::Error> + Send + Sync + 'static,
    config: &BaseConfig,
    max_request_body: usize,
    shutdown: &CancellationToken,
) -> Service<H> {
    StreamableHttpService::new(
        factory,
        Arc::new(NeverSessionManager::default()),
        StreamableHttpServerConfig::default()
            .with_legacy_session_mode(false)
            .with_json_response(true)
            .with_max_request_body_bytes(max_request_body)
            .with_sse_keep_alive(None)
            .with_allowed_hosts(config.host_allowlist())
            .with_cancellation_token(shutdown.child_token()),
    )
}

/// The caller the auth layer attached to this request, if any (none only when the service
/// is mounted without the gate, which [`crate::serve::router`] never does).
pub fn caller(context: &RequestContext<RoleServer>) -> Option<Caller> {
    context
        .extensions
        .get::<http::request::Parts>()
        .and_then(|parts| parts.extensions.get::<Caller>())
        .cloned()
}

/// A `#[tool]` function's `caller: Caller` argument. Refused at the protocol level when the
/// gate did not run (a server should check [`caller`] first and answer with its own error).
impl<S> FromContextPart<ToolCallContext<'_, S>> for Caller {
    fn from_context_part(context: &mut ToolCallContext<'_, S>) -> Result<Self, ErrorData> {
        caller(&context.request_context).ok_or_else(|| ErrorData::invalid_request("the request carries no authenticated caller", None))
    }
}

/// The span of one tool call, a child of the HTTP request's span (rmcp runs the handler
/// outside the request's task, so the parent is taken from the request's extensions). Carries
/// the tool name only: never the arguments, the result or the caller's bearer. Record
/// `error.type` on it when the call fails.
pub fn tool_span(context: &RequestContext<RoleServer>, name: &str) -> tracing::Span {
    if !telemetry_otlp::exporting() {
        return tracing::Span::none();
    }
    let parent = context
        .extensions
        .get::<http::request::Parts>()
        .and_then(|parts| parts.extensions.get::<telemetry_otlp::RequestSpan>())
        .map(|r| r.0.clone());
    let span = tracing::info_span!(
        "mcp.tool",
        otel.name = %format!("tools/call {name}"),
        mcp.method.name = "tools/call",
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = %name,
        error.type = tracing::field::Empty,
    );
    if let Some(parent) = parent {
        telemetry_otlp::set_parent_span(&span, &parent);
    }
    span
}
