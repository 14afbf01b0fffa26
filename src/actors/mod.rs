//! The supervision tree.
//!
//! ```text
//! RootSupervisor
//! ├── ConversationsSupervisor ── ConversationActor (one per (uid, conversation))
//! └── ToolServerActor (one per configured MCP server)
//! ```
//!
//! A conversation actor owns its turn loop, the running turn's stream and its approval
//! waits; it never holds the caller's bearer (only the turn task does, for the turn). The
//! turn (`crate::turn`) knows nothing of actors: it publishes its frames into the turn's
//! `crate::stream_log` (which clients read) and sends `TurnEvent`s (commits, the end) to
//! whoever runs it (`turn::TurnEvents`): the conversation actor's mailbox. Idle actors stop and are revived from chat.db. A
//! crash is a supervision event: traced, the client gets an error part with its request id,
//! every other conversation carries on. Every supervisor handles every supervision event
//! explicitly (ractor's default would stop the parent when a child exits).
//!
//! A tool-server actor owns what belongs to its server — connection pool, health, converted
//! tool definitions — and never a credential; `tool_server::ToolServers` is the typed door to
//! it (one method per operation, each a bounded ractor `call`). It fails when its server is
//! gone; the root restarts it, and past the restart limit takes only that server out of
//! service for a while (`root`), never the process.
//!
//! No actor has a process-global name: the root supervisor hands each child's reference to
//! the application state ([`Directory`] for the conversations supervisor, `ToolServers` for
//! the tool-server actors), so two orchestrators can run in one process.

pub mod conversation;
pub mod conversations;
pub mod root;
pub mod running_turns;
pub mod tool_server;

use ractor::ActorRef;
use std::sync::{Arc, RwLock};

use crate::error::Error;
use crate::store::key::ConversationKey;
use conversation::ConversationMsg;
use conversations::{ConversationsMsg, Running};

/// Where the application finds the conversations supervisor. Kept in the application state,
/// never in ractor's process-global registry (so two orchestrators can share a process); the
/// root supervisor fills it at start and after every restart.
#[derive(Clone, Default)]
pub struct Directory {
    conversations: Arc<RwLock<Option<Supervisor>>>,
    /// The root supervisor (it adds and removes tool-server actors, issue #30).
    root: Arc<RwLock<Option<ActorRef<root::RootMsg>>>>,
}

/// The conversations supervisor and its running children.
type Supervisor = (ActorRef<ConversationsMsg>, Running);

impl Directory {
    /// The running conversations supervisor.
    pub fn conversations(&self) -> Result<ActorRef<ConversationsMsg>, Error> {
        self.conversations
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .as_ref()
            .map(|(actor, _)| actor.clone())
            .ok_or_else(|| Error::Internal("conversations supervisor not running".into()))
    }

    /// The actor of a running conversation, read without asking the supervisor (none when it
    /// is not running, or the supervisor is not).
    pub fn running_conversation(&self, key: &ConversationKey) -> Option<ActorRef<ConversationMsg>> {
        let guard = self.conversations.read().unwrap_or_else(std::sync::PoisonError::into_inner);
        guard.as_ref().and_then(|(_, running)| running.get(key))
    }

    pub(crate) fn set_root(&self, actor: ActorRef<root::RootMsg>) {
        *self.root.write().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(actor);
    }

    /// Makes the running tool-server actors those of `servers`; answers once they started.
    pub async fn reconcile_servers(&self, servers: Vec<crate::config::McpServer>) -> Result<(), Error> {
        let root = self
            .root
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
            .ok_or_else(|| Error::Internal("root supervisor not running".into()))?;
        match root
            .call(
                |reply| root::RootMsg::Reconcile { servers, reply },
                Some(std::time::Duration::from_secs(30)),
            )
            .await
        {
            Ok(ractor::rpc::CallResult::Success(())) => Ok(()),
            _ => Err(Error::Internal("the root supervisor did not reconcile the tool servers".into())),
        }
    }

    pub(crate) fn set_conversations(&self, actor: ActorRef<ConversationsMsg>, running: Running) {
        *self.conversations.write().unwrap_or_else(std::sync::PoisonError::into_inner) = Some((actor, running));
    }
}

impl From<ractor::MessagingErr<conversation::ConversationMsg>> for Error {
    fn from(e: ractor::MessagingErr<conversation::ConversationMsg>) -> Self {
        Error::Internal(format!("conversation actor unreachable: {e}"))
    }
}
