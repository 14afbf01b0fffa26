//! Logs, traces and metrics of the orchestrator.
//!
//! Logs are readable text on stderr. With `OTEL_EXPORTER_OTLP_ENDPOINT` set, spans and
//! metrics are also exported over OTLP/HTTP (the pipeline lives in the shared
//! `telemetry-otlp` crate, so every binary we ship exports the same way):
//!
//! - one trace per turn: the HTTP request, the `turn`, each model call (`gen_ai.*`), each tool
//!   call and, through the W3C `traceparent` sent with every MCP request, the MCP server's own
//!   spans;
//! - the supervision tree ([`tree`]): a start span per actor under its supervisor's, and a
//!   span per supervision event as it happens;
//! - the service's metrics ([`metrics`]).
//!
//! Without an endpoint nothing of this runs: no OpenTelemetry layer, no instruments, no
//! traceparent. This module must never put a bearer, a secret, a message text or a tool
//! output into a span or a metric; the uid only when the operator enables it
//! (`TAMEBI_TRACE_USER_ID`).

pub mod metrics;
pub mod tree;

use std::time::Duration;

pub use telemetry_otlp::{exporting, traceparent};

/// Keeps the exporters alive; `shutdown` flushes them (last step of shutdown).
pub struct Telemetry {
    inner: telemetry_otlp::Telemetry,
}

pub use telemetry_otlp::TelemetryError;

/// Installs the global subscriber and, with an endpoint, the OTLP pipelines and instruments.
pub fn init(otlp_endpoint: Option<&str>, log_filter: &str) -> Result<Telemetry, TelemetryError> {
    let inner = telemetry_otlp::init(telemetry_otlp::Settings {
        service_name: "tamebi",
        endpoint: otlp_endpoint,
        log_filter,
        export_targets: &["tamebi"],
    })?;
    if exporting() {
        metrics::install();
    }
    Ok(Telemetry { inner })
}

impl Telemetry {
    /// Flushes spans and metrics and stops the exporters (blocks up to about `timeout` each).
    pub fn shutdown(self, timeout: Duration) {
        self.inner.shutdown(timeout);
    }
}

/// Wraps the router with the HTTP server span when spans are exported; returns it unchanged
/// otherwise, so the request path costs nothing extra without an endpoint.
pub fn http_layer(router: axum::Router) -> axum::Router {
    if exporting() {
        router.layer(axum::middleware::from_fn(telemetry_otlp::trace_http))
    } else {
        router
    }
}

/// The span of one turn: a child of the HTTP request that started it, linked to the
/// conversation actor that runs it. The uid is an attribute only when the operator opted in.
pub fn turn_span(request_id: &str, conversation_id: &str, uid: &str, actor: &tree::ActorTrace, trace_user_id: bool) -> tracing::Span {
    let span = tracing::info_span!(
        "turn",
        request_id = %request_id,
        tamebi.conversation.id = tracing::field::Empty,
        tamebi.actor.id = tracing::field::Empty,
        enduser.id = tracing::field::Empty,
        error.type = tracing::field::Empty,
        otel.status_code = tracing::field::Empty,
    );
    if exporting() {
        span.record("tamebi.conversation.id", conversation_id);
        actor.link(&span);
        if trace_user_id {
            span.record("enduser.id", uid);
        }
    }
    span
}

/// The span of one tool call as the model asked for it (its MCP request is a child span).
/// Carries the tool and server names and the approval state (G3: `store::audit::ApprovalState`,
/// recorded by its serialized name), never arguments or output. Taken as any `Serialize` so
/// that telemetry, which the store's own layers use, never imports the store.
pub fn tool_span(server: &str, tool: &str, approval: impl serde::Serialize) -> tracing::Span {
    let span = tracing::info_span!(
        "tool",
        server = %server,
        tool = %tool,
        otel.name = tracing::field::Empty,
        gen_ai.operation.name = tracing::field::Empty,
        gen_ai.tool.name = tracing::field::Empty,
        tamebi.mcp.server = tracing::field::Empty,
        tamebi.approval = tracing::field::Empty,
    );
    if exporting() {
        span.record("otel.name", format!("execute_tool {tool}"));
        span.record("gen_ai.operation.name", "execute_tool");
        span.record("gen_ai.tool.name", tool);
        span.record("tamebi.mcp.server", server);
        let approval = serde_json::to_value(approval).ok();
        span.record("tamebi.approval", approval.as_ref().and_then(|v| v.as_str()).unwrap_or("unknown"));
    }
    span
}
