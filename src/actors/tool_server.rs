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

    async fn handle(&self, _myself: ActorRef<Self::Msg>, msg: Self::Msg, _state: &mut ()) -> Result<(), ActorProcessingErr> {
        let ToolServerMsg::Call { ctx, op, reply } = msg;
        let http = self.http.clone();
        let span = tracing::info_span!("mcp.call", request_id = %ctx.request_id, op = op_name(&op));
        // A task per call: one user's slow tool never delays another's.
        self.tasks.spawn(tracing::Instrument::instrument(
            async move {
                let result = run(&http, &ctx, op).await;
                let _ = reply.send(result);
            },
            span,
        ));
        Ok(())
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
