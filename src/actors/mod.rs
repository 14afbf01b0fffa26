//! The supervision tree.
//!
//! ```text
//! RootSupervisor
//! ├── ConversationsSupervisor ── ConversationActor (one per (uid, conversation))
//! └── ToolServersSupervisor   ── ToolServerActor (one per configured MCP server)
//! ```
//!
//! A conversation actor owns its turn loop, the running turn's stream and its approval
//! waits; it holds the caller's bearer only inside the turn that brought it. Idle actors
//! stop and are revived from chat.db. A crash is a supervision event: traced, the client
//! gets an error part with its request id, every other conversation carries on. Every
//! supervisor handles every supervision event explicitly (ractor's default would stop the
//! parent when a child exits).

pub mod conversation;
pub mod conversations;
pub mod root;
pub mod tool_server;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use crate::auth::Caller;
use crate::config::{Config, McpServer};
use crate::error::Error;
use crate::mcp::client::{CallContext, McpError};
use crate::model::ModelClient;
use crate::store::chat::ChatStore;
use tool_server::{ToolOp, ToolOpResult, ToolServerMsg};

/// What every actor may use. Holds no user's credential.
pub struct Services {
    pub config: Arc<Config>,
    pub store: ChatStore,
    pub audit: crate::store::audit::AuditLog,
    pub model: ModelClient,
    pub tool_servers: ToolServers,
    pub tasks: tokio_util::task::TaskTracker,
    pub shutdown: tokio_util::sync::CancellationToken,
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

    /// Runs one operation on `server` as `caller`. Without a bearer there is nothing to do:
    /// workspace tools are never called without the user's own credential.
    pub async fn call(&self, server: &str, caller: &Caller, op: ToolOp) -> Result<ToolOpResult, McpError> {
        let cfg = self
            .servers
            .get(server)
            .ok_or_else(|| McpError::Transport(format!("unknown server {server}")))?;
        let bearer = caller
            .nc_bearer
            .clone()
            .ok_or_else(|| McpError::Transport("no workspace credential".into()))?;
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

impl From<ractor::MessagingErr<conversation::ConversationMsg>> for Error {
    fn from(e: ractor::MessagingErr<conversation::ConversationMsg>) -> Self {
        Error::Internal(format!("conversation actor unreachable: {e}"))
    }
}
