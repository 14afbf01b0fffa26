//! `Services`: what every actor and every turn may use — configuration, the stores, the model
//! client, the tool-server handle, the task tracker and the shutdown token.
//!
//! It holds no user's credential and no actor of a conversation: a turn reaches tool servers
//! through [`ToolServers`] (which passes the caller's bearer along per call, never keeps it).

use std::sync::Arc;

use crate::actors::tool_server::ToolServers;
use crate::config::Config;
use crate::model::ModelClient;
use crate::store::chat::ChatStore;

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
