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

use crate::error::Error;

impl From<ractor::MessagingErr<conversation::ConversationMsg>> for Error {
    fn from(e: ractor::MessagingErr<conversation::ConversationMsg>) -> Self {
        Error::Internal(format!("conversation actor unreachable: {e}"))
    }
}
