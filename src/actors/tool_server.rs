//! `ToolServerActor`: the door to one MCP server. Stateless with respect to identity.
//!
//! Each message carries the bearer, the operation and the trace context; the actor keeps
//! none of them. It must never serialise calls from different users, so every call runs in
//! its own task and answers on its own reply port; the actor's mailbox only dispatches.

use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};
use tokio_util::task::TaskTracker;

use crate::mcp::client::{self, CallContext, McpError};

/// What to do on the server.
#[derive(Debug)]
pub enum ToolOp {
    ListTools,
    CallTool {
        name: String,
        arguments: serde_json::Map<String, serde_json::Value>,
    },
    ReadResource {
        uri: String,
    },
}

#[derive(Debug)]
pub enum ToolOpResult {
    Tools(Vec<rmcp::model::Tool>),
    Called(rmcp::model::CallToolResult),
    Resource(rmcp::model::ReadResourceResult),
}

pub enum ToolServerMsg {
    Call {
        ctx: CallContext,
        op: ToolOp,
        reply: RpcReplyPort<Result<ToolOpResult, McpError>>,
    },
}

/// Configuration lives in the actor; it has no mutable state worth the name.
pub struct ToolServerActor {
    pub http: reqwest::Client,
    pub tasks: TaskTracker,
}

impl Actor for ToolServerActor {
    type Msg = ToolServerMsg;
    type State = ();
    type Arguments = ();

    async fn pre_start(&self, myself: ActorRef<Self::Msg>, _: ()) -> Result<(), ActorProcessingErr> {
        tracing::info!(actor = ?myself.get_name(), "tool server actor started");
        Ok(())
    }

    async fn handle(&self, myself: ActorRef<Self::Msg>, msg: Self::Msg, _state: &mut ()) -> Result<(), ActorProcessingErr> {
        let ToolServerMsg::Call { mut ctx, op, reply } = msg;
        let http = self.http.clone();
        let server = myself.get_name().unwrap_or_default();
        let method = op_name(&op);
        // A child of the tool span that asked (ractor carries the sender's span here).
        let span = tracing::info_span!(
            "mcp.call",
            request_id = %ctx.request_id,
            op = method,
            otel.name = tracing::field::Empty,
            otel.kind = tracing::field::Empty,
            mcp.method.name = tracing::field::Empty,
            gen_ai.tool.name = tracing::field::Empty,
            server.address = tracing::field::Empty,
            error.type = tracing::field::Empty,
            otel.status_code = tracing::field::Empty,
        );
        if crate::telemetry::exporting() {
            record_call(&span, &ctx, &op, method);
            // The MCP server's spans continue this one.
            ctx.traceparent = crate::telemetry::traceparent(&span);
        }
        // A task per call: one user's slow tool never delays another's.
        self.tasks.spawn(tracing::Instrument::instrument(
            async move {
                let started = std::time::Instant::now();
                let result = run(&http, &ctx, op).await;
                let error = result.as_ref().err().map(error_type);
                if let Some(e) = error {
                    let span = tracing::Span::current();
                    span.record("error.type", e);
                    span.record("otel.status_code", "ERROR");
                    crate::telemetry::metrics::error(e);
                }
                let server = server.strip_prefix("tool-server:").unwrap_or(&server);
                crate::telemetry::metrics::tool_call(server, method, started.elapsed(), error);
                let _ = reply.send(result);
            },
            span,
        ));
        Ok(())
    }
}

/// MCP semantic-convention attributes of one call. Never the arguments or the bearer.
fn record_call(span: &tracing::Span, ctx: &CallContext, op: &ToolOp, method: &'static str) {
    span.record("otel.kind", "client");
    span.record("mcp.method.name", method);
    if let ToolOp::CallTool { name, .. } = op {
        span.record("otel.name", format!("{method} {name}"));
        span.record("gen_ai.tool.name", name.as_str());
    } else {
        span.record("otel.name", method);
    }
    if let Some(host) = ctx.url.host_str() {
        span.record("server.address", host);
    }
}

fn error_type(e: &McpError) -> &'static str {
    match e {
        McpError::Transport(_) => "tool.transport",
        McpError::Timeout => "tool.timeout",
        McpError::Refused(_) => "tool.refused",
        McpError::NoCredential => "tool.no_credential",
    }
}

fn op_name(op: &ToolOp) -> &'static str {
    match op {
        ToolOp::ListTools => "tools/list",
        ToolOp::CallTool { .. } => "tools/call",
        ToolOp::ReadResource { .. } => "resources/read",
    }
}

async fn run(http: &reqwest::Client, ctx: &CallContext, op: ToolOp) -> Result<ToolOpResult, McpError> {
    match op {
        ToolOp::ListTools => client::list_tools(http, ctx).await.map(ToolOpResult::Tools),
        ToolOp::CallTool { name, arguments } => client::call_tool(http, ctx, &name, arguments).await.map(ToolOpResult::Called),
        ToolOp::ReadResource { uri } => client::read_resource(http, ctx, &uri).await.map(ToolOpResult::Resource),
    }
}
