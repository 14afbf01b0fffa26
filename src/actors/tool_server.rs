//! `ToolServerActor`: the door to one MCP server. Stateless with respect to identity.
//!
//! Each message carries the bearer, the operation and the trace context; the actor keeps
//! none of them. It must never serialise calls from different users, so every call runs in
//! its own task and answers on its own reply port; the actor's mailbox only dispatches.

use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::task::TaskTracker;

use crate::auth::Caller;
use crate::config::{McpServer, ServerAuth};
use crate::mcp::client::{self, CallContext, McpError};
use crate::mcp::registry::ToolDef;

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

/// How to reach the tool-server actors by server name.
#[derive(Clone)]
pub struct ToolServers {
    servers: Arc<HashMap<String, McpServer>>,
    timeout: Duration,
}

/// Registry name of a server's actor (so a restarted actor is found again).
pub fn tool_server_actor_name(server: &str) -> String {
    format!("tool-server:{server}")
}

impl ToolServers {
    pub fn new(servers: &[McpServer], timeout: Duration) -> Self {
        ToolServers {
            servers: Arc::new(servers.iter().map(|s| (s.name.clone(), s.clone())).collect()),
            timeout,
        }
    }

    pub fn names(&self) -> Vec<String> {
        let mut n: Vec<String> = self.servers.keys().cloned().collect();
        n.sort();
        n
    }

    pub fn contains(&self, name: &str) -> bool {
        self.servers.contains_key(name)
    }

    /// The definitions `server` listed, as the model and the relay may see them: text from an
    /// `auth=none` server is treated as untrusted (G2), see [`ToolDef::from_untrusted_mcp`].
    pub fn tool_defs(&self, server: &str, tools: &[rmcp::model::Tool]) -> Vec<ToolDef> {
        let untrusted = self.servers.get(server).is_none_or(|s| s.auth == ServerAuth::None);
        tools
            .iter()
            .map(|t| {
                if untrusted {
                    ToolDef::from_untrusted_mcp(server, t)
                } else {
                    ToolDef::from_mcp(server, t)
                }
            })
            .collect()
    }

    /// The configured servers this caller can reach now: every `auth=none` server, and each
    /// `auth=nextcloud` server for which the app sent a token.
    pub fn reachable(&self, caller: &Caller) -> Vec<String> {
        self.names().into_iter().filter(|n| self.can_reach(n, caller)).collect()
    }

    /// Whether `server` is configured and this caller holds what it needs to reach it.
    pub fn can_reach(&self, server: &str, caller: &Caller) -> bool {
        self.servers.get(server).is_some_and(|s| bearer_for(s, caller).is_ok())
    }

    /// Runs one operation on `server` as `caller`, with exactly the credential the server is
    /// configured for: its own token for an `auth=nextcloud` server (without one there is
    /// nothing to do: workspace tools are never called without the user's own credential),
    /// nothing at all for an `auth=none` server.
    pub async fn call(&self, server: &str, caller: &Caller, op: ToolOp) -> Result<ToolOpResult, McpError> {
        let cfg = self
            .servers
            .get(server)
            .ok_or_else(|| McpError::Transport(format!("unknown server {server}")))?;
        let bearer = bearer_for(cfg, caller)?;
        let ctx = CallContext {
            url: cfg.url.clone(),
            bearer,
            request_id: caller.request_id.clone(),
            // Set by the tool-server actor from its `mcp.call` span.
            traceparent: None,
            timeout: self.timeout,
        };
        let cell = ractor::registry::where_is(tool_server_actor_name(server))
            .ok_or_else(|| McpError::Transport("tool server actor not running".into()))?;
        let actor: ractor::ActorRef<ToolServerMsg> = cell.into();
        let (tx, rx) = tokio::sync::oneshot::channel();
        let port: ractor::RpcReplyPort<_> = tx.into();
        actor
            .send_message(ToolServerMsg::Call { ctx, op, reply: port })
            .map_err(|_| McpError::Transport("tool server actor stopped".into()))?;
        // The call itself is bounded by ctx.timeout; this bound only covers a lost reply.
        match tokio::time::timeout(self.timeout + Duration::from_secs(1), rx).await {
            Ok(Ok(result)) => result,
            Ok(Err(_)) => Err(McpError::Transport("tool call dropped".into())),
            Err(_) => Err(McpError::Timeout),
        }
    }
}

/// G1: the credential one server gets. Looked up by the server's own configured name only, so
/// a token sent for one audience never reaches another server.
fn bearer_for(server: &McpServer, caller: &Caller) -> Result<Option<crate::auth::NcBearer>, McpError> {
    match server.auth {
        ServerAuth::None => Ok(None),
        ServerAuth::Nextcloud => caller
            .credentials
            .for_server(&server.name)
            .cloned()
            .map(Some)
            .ok_or(McpError::NoCredential),
    }
}
