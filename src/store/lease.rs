//! One owner per conversation: the lease an instance holds while its actor for the
//! conversation lives (issue 15).
//!
//! With PostgreSQL, several instances share the database, and two of them must never run
//! turns of the same conversation at once. Before an instance starts a conversation actor it
//! acquires the conversation's lease row; the actor renews it every third of the lease time
//! and releases it when it stops. An instance that dies (kill -9) stops renewing, and its
//! leases expire within `TAMEBI_LEASE_SECS`; the next instance to acquire one learns which
//! turn was in flight and marks it interrupted in the stored message.
//!
//! The lease is also a fence. Every chat write made with PostgreSQL, and every fact write of a
//! turn (against the lease of the fact's source conversation), checks, in its own
//! transaction, that the conversation's lease row is absent or names this instance (holding
//! the row FOR KEY SHARE; taking a lease over locks it FOR UPDATE, so it waits for a write in
//! progress). An instance that lost a conversation — its lease expired and was taken, or a
//! delete or an erasure on another instance took it — therefore cannot write into it while the
//! lease names another instance, even before its actor notices. The fence compares the owner,
//! not a generation of the lease: once the old owner takes the conversation back, a write of
//! its earlier turn still in flight passes (see the caveat on `postgres::lease::check_fence`).
//! For the fence to hold, a lease row is never deleted while its owner may live: releasing
//! only expires it, and rows are pruned an hour after expiry.
//!
//! With SQLite the files belong to one process, so there is nobody to share with:
//! [`SqliteLeases`] grants every lease (the conversations supervisor already keeps one actor
//! per conversation in the process). It still records the turn in flight, in chat.db, so that
//! after a kill -9 the restarted process marks that turn interrupted exactly as a PostgreSQL
//! takeover does.
//!
//! This module decides who runs a conversation; it never decides what a user may do.

use std::time::Duration;

use super::key::{ConversationKey, UserId};
use crate::error::Error;

/// What acquiring a lease found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Acquired {
    /// This instance owns the conversation now. `interrupted` is the turn that was in flight
    /// when the previous owner stopped renewing (it died, or its actor crashed).
    Granted { interrupted: Option<InterruptedTurn> },
    /// Another instance owns it for about this long (the router should retry there).
    HeldElsewhere { retry_after: Duration },
}

/// A turn whose owner stopped before it ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InterruptedTurn {
    /// The assistant message the turn was writing.
    pub message_id: String,
    /// The request that started it (what the person's client knows it by).
    pub request_id: String,
}

/// The lease operations, whatever the database. `owner` is this instance's id.
#[async_trait::async_trait]
pub trait LeaseStore: Send + Sync {
    /// Takes the lease for `ttl` unless another owner holds an unexpired one.
    async fn acquire(&self, key: &ConversationKey, owner: &str, ttl: Duration) -> Result<Acquired, Error>;

    /// Extends a lease this owner still holds; false when it was lost (expired and taken).
    async fn renew(&self, key: &ConversationKey, owner: &str, ttl: Duration) -> Result<bool, Error>;

    /// Whether this owner holds the lease now, asked before a turn uses what the instance
    /// cached: true when it does with at least a third of `ttl` left (the periodic renewals
    /// keep it so), else whatever a renewal says. PostgreSQL answers the usual case with a read
    /// (issue #33, P9: no write, no transaction of its own); by default it is a renewal.
    async fn confirm(&self, key: &ConversationKey, owner: &str, ttl: Duration) -> Result<bool, Error> {
        self.renew(key, owner, ttl).await
    }

    /// Records the turn in flight (cleared by `turn_ended`). A turn started by a user message
    /// records it in that message's transaction instead, and its final message's commit clears
    /// it (`store::chat::Save::{starts_turn, ends_turn}`).
    async fn turn_started(&self, key: &ConversationKey, owner: &str, turn: &InterruptedTurn) -> Result<(), Error>;

    /// The turn ended normally: nothing to mark interrupted.
    async fn turn_ended(&self, key: &ConversationKey, owner: &str) -> Result<(), Error>;

    /// Gives the lease up (the actor stopped): it expires now, still naming `owner`.
    async fn release(&self, key: &ConversationKey, owner: &str) -> Result<(), Error>;

    /// Takes every conversation of `uid` for `ttl`, live leases of other instances included
    /// (an erasure: the person's request outranks a running turn, which the fence then stops
    /// from writing), after waiting for writes in progress. Turns in flight are not marked.
    async fn seize_user(&self, uid: &UserId, owner: &str, ttl: Duration) -> Result<(), Error>;

    /// Expires every lease of `uid` that `owner` holds (the erasure is done).
    async fn release_user(&self, uid: &UserId, owner: &str) -> Result<(), Error>;

    /// How long another owner still holds the lease, if one does (requests that need no
    /// actor here — a resume, a delete — are sent to that owner instead).
    async fn held_elsewhere(&self, key: &ConversationKey, owner: &str) -> Result<Option<Duration>, Error>;

    /// Whether a lease lapses unless renewed (false: nobody else could take it, so holders
    /// need not renew at all).
    fn expires(&self) -> bool {
        true
    }
}

/// Leases within one process (SQLite): always granted; the turn in flight is a row of chat.db's
/// `turns_in_flight`, committed before the turn streams, so a process killed mid-turn leaves it
/// behind for its successor.
pub struct SqliteLeases {
    db: super::db::Db,
}

impl SqliteLeases {
    /// On chat.db (`chat`'s file: the markers live and die with the conversations).
    pub fn new(chat: &super::chat::SqliteChat) -> SqliteLeases {
        SqliteLeases { db: chat.db() }
    }
}

#[async_trait::async_trait]
impl LeaseStore for SqliteLeases {
    async fn acquire(&self, key: &ConversationKey, _owner: &str, _ttl: Duration) -> Result<Acquired, Error> {
        use rusqlite::{OptionalExtension, params};
        let (uid, cid) = (key.uid().to_string(), key.id().to_string());
        let left = self
            .db
            .read(move |c| {
                Ok(c.query_row(
                    "SELECT message_id, request_id FROM turns_in_flight WHERE uid = ?1 AND conversation_id = ?2",
                    params![uid, cid],
                    |r| {
                        Ok(InterruptedTurn {
                            message_id: r.get(0)?,
                            request_id: r.get(1)?,
                        })
                    },
                )
                .optional()?)
            })
            .await?;
        // The record stays until the caller has marked the turn (then `turn_ended`): a failure
        // or a crash in between leaves it for the next acquisition, never lost.
        Ok(Acquired::Granted { interrupted: left })
    }

    async fn renew(&self, _key: &ConversationKey, _owner: &str, _ttl: Duration) -> Result<bool, Error> {
        Ok(true)
    }

    async fn turn_started(&self, key: &ConversationKey, _owner: &str, turn: &InterruptedTurn) -> Result<(), Error> {
        let (uid, cid) = (key.uid().to_string(), key.id().to_string());
        let (mid, rid) = (turn.message_id.clone(), turn.request_id.clone());
        self.db.write(move |c| record_turn(c, &uid, &cid, &mid, &rid)).await
    }

    async fn turn_ended(&self, key: &ConversationKey, _owner: &str) -> Result<(), Error> {
        let (uid, cid) = (key.uid().to_string(), key.id().to_string());
        self.db
            .write(move |c| {
                c.prepare_cached("DELETE FROM turns_in_flight WHERE uid = ?1 AND conversation_id = ?2")?
                    .execute(rusqlite::params![uid, cid])?;
                Ok(())
            })
            .await
    }

    async fn release(&self, _key: &ConversationKey, _owner: &str) -> Result<(), Error> {
        Ok(())
    }

    async fn held_elsewhere(&self, _key: &ConversationKey, _owner: &str) -> Result<Option<Duration>, Error> {
        Ok(None)
    }

    fn expires(&self) -> bool {
        false
    }

    async fn seize_user(&self, _uid: &UserId, _owner: &str, _ttl: Duration) -> Result<(), Error> {
        Ok(())
    }

    async fn release_user(&self, _uid: &UserId, _owner: &str) -> Result<(), Error> {
        Ok(())
    }
}

/// Writes the record of the turn in flight into chat.db (here, or inside a chat write that
/// starts a turn: `store::chat::Save::starts_turn`). Cached: it runs on every turn.
pub(super) fn record_turn(c: &rusqlite::Connection, uid: &str, cid: &str, message_id: &str, request_id: &str) -> Result<(), Error> {
    c.prepare_cached("INSERT OR REPLACE INTO turns_in_flight (uid, conversation_id, message_id, request_id) VALUES (?1, ?2, ?3, ?4)")?
        .execute(rusqlite::params![uid, cid, message_id, request_id])?;
    Ok(())
}

/// A fresh id for this instance (at every start, so a restarted instance never mistakes a
/// dead predecessor's lease for its own).
pub fn new_instance_id() -> String {
    format!("inst_{}", uuid::Uuid::new_v4().simple())
}

/// This instance's side of the leases: who it is, and for how long it takes a lease.
#[derive(Clone)]
pub struct Ownership {
    pub leases: std::sync::Arc<dyn LeaseStore>,
    /// This instance's id ([`new_instance_id`]; the chat store fences writes with it too).
    pub owner: String,
    /// `TAMEBI_LEASE_SECS`: how long a lease outlives its owner's last renewal.
    pub ttl: Duration,
}

impl Ownership {
    /// The ownership of the instance whose stores these are.
    pub fn of(stores: &super::Stores, ttl: Duration) -> Ownership {
        Ownership {
            leases: stores.leases.clone(),
            owner: stores.instance.clone(),
            ttl,
        }
    }

    /// How often the owner renews: three chances before the lease would expire.
    pub fn renew_every(&self) -> Duration {
        self.ttl / 3
    }

    /// `OwnedElsewhere` when another instance holds the conversation: a request that would
    /// act on it here without an actor (a resume) must go to that owner.
    pub async fn refuse_if_owned_elsewhere(&self, key: &ConversationKey) -> Result<(), Error> {
        match self.leases.held_elsewhere(key, &self.owner).await? {
            Some(left) => Err(Error::OwnedElsewhere {
                retry_after_secs: left.as_secs().max(1),
            }),
            None => Ok(()),
        }
    }
}

/// The text a person sees on a reply whose server stopped writing it.
pub const INTERRUPTED_MESSAGE: &str = "This reply was interrupted: the server writing it stopped. Send your message again to continue.";

/// Marks the interrupted turn's assistant message in the stored conversation: its open
/// text is closed and a `data-interrupted` part names the request. When nothing of the
/// message was committed yet, the marker alone becomes the message, so the person sees that
/// a reply was lost rather than nothing. Idempotent.
pub async fn mark_interrupted(chat: &dyn super::chat::ChatStore, key: &ConversationKey, turn: &InterruptedTurn) -> Result<(), Error> {
    use crate::ui_stream::{Role, UiMessage, UiPart};
    // A conversation deleted meanwhile stays deleted: a marker must not bring it back.
    let Some(conversation) = chat.load(key).await? else {
        return Ok(());
    };
    let stored = conversation.messages.into_iter().find(|m| m.id == turn.message_id);
    let mut message = stored.unwrap_or_else(|| UiMessage::new(turn.message_id.clone(), Role::Assistant));
    if message.parts.iter().any(|p| matches!(p, UiPart::DataInterrupted { .. })) {
        return Ok(());
    }
    message.close_open_text();
    message.parts.push(UiPart::DataInterrupted {
        data: serde_json::json!({
            "requestId": turn.request_id,
            "message": crate::error::stream_error_text(INTERRUPTED_MESSAGE, &turn.request_id),
        }),
    });
    chat.save_message(key, &message, None).await?;
    tracing::warn!(request_id = %turn.request_id, "a turn interrupted by its owner's stop was marked in the stored message");
    Ok(())
}
