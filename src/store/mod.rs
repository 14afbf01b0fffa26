//! Durable state, as separate SQLite files because their lifecycles differ: erasing a
//! user's chat must never touch the audit trail, and each can be backed up on its own.
//!
//! - [`db`]: one writer thread per file with group commit, plus a reader connection; no
//!   SQLite call ever runs on an async worker thread.
//! - [`chat`]: chat.db: conversations, messages, pending approvals.
//! - [`audit`]: audit.db: tool calls, approvals, dispatches, fingerprint changes.
//! - [`memory`]: memory.db: the facts each user asked the assistant to remember.
//!
//! Every read and write of a conversation is keyed by the signed uid: a conversation id is
//! chosen by the client, so it is never trusted alone.

pub mod audit;
pub mod chat;
pub mod db;
pub mod memory;
