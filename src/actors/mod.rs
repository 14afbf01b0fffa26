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
use crate::config::{Config, McpServer, ServerAuth};
use crate::error::Error;
use crate::mcp::client::{CallContext, McpError};
use crate::mcp::registry::ToolDef;
use crate::model::ModelClient;
use crate::store::chat::ChatStore;
use tool_server::{ToolOp, ToolOpResult, ToolServerMsg};

/// What every actor may use. Holds no user's credential.
pub struct Services {
    pub config: Arc<Config>,
    pub store: ChatStore,
    pub audit: crate::store::audit::AuditLog,
    pub memory: crate::store::memory::MemoryStore,
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

impl From<ractor::MessagingErr<conversation::ConversationMsg>> for Error {
    fn from(e: ractor::MessagingErr<conversation::ConversationMsg>) -> Self {
        Error::Internal(format!("conversation actor unreachable: {e}"))
    }
}
