//! `Services`: what every actor and every turn may use — configuration, the stores, the model
//! client, the tool-server handle, the task tracker and the shutdown token.
//!
//! It holds no user's credential and no actor of a conversation: a turn reaches tool servers
//! through [`ToolServers`] (which passes the caller's bearer along per call, never keeps it).

use std::sync::Arc;

use crate::actors::tool_server::ToolServers;
use crate::config::Config;
use crate::model::ModelClient;

/// What every actor may use. Holds no user's credential.
pub struct Services {
    pub config: Arc<Config>,
    pub store: Arc<dyn crate::store::chat::ChatStore>,
    pub audit: Arc<dyn crate::store::audit::AuditStore>,
    pub memory: Arc<dyn crate::store::memory::MemoryStore>,
    /// One owner per conversation across instances (store::lease).
    pub ownership: crate::store::lease::Ownership,
    pub model: ModelClient,
    pub tool_servers: ToolServers,
    pub tasks: tokio_util::task::TaskTracker,
    pub shutdown: tokio_util::sync::CancellationToken,
    /// The operator's assistants file (`assistants::Assistants::from_config`).
    pub assistants: Arc<crate::assistants::Assistants>,
    /// Servers and assistants managed inside Nextcloud, composed with the file's (issue #30).
    pub registry: Arc<crate::registry::Registry>,
    /// The assistant bindings of the conversations running here (a cache of chat.db's).
    pub bindings: crate::assistants::Bindings,
    /// The turn tasks running here, per user (an erasure waits for a user's to end).
    pub running_turns: crate::actors::running_turns::RunningTurns,
}
