//! chat.db: conversations, their messages (as AI SDK UI messages), pending approvals and
//! compaction summaries (each with the range of messages it stands for).
//!
//! Every query filters on the signed uid. A conversation is identified by (uid, id): bob's
//! "c1" and alice's "c1" are different rows, so a guessed id can never reach another user's
//! conversation (no IDOR), and "another user's" is indistinguishable from "unknown".

use rusqlite::{Connection, OptionalExtension, params};
use serde::Serialize;
use std::path::Path;

use super::db::Db;
use super::key::{ConversationKey, UserId};
use crate::compaction::Summary;
use crate::error::Error;
use crate::origin::Origin;
use crate::ui_stream::{Role, UiMessage};

/// chat.db as of [`LAYOUT_VERSION`]. Laid out for the two commits of every turn (issue #16):
/// each writes as few b-tree pages (WAL frames) as it can.
/// - `conversations` and `turns_in_flight` are WITHOUT ROWID: a row lives in its primary key's
///   b-tree alone, not in a table plus an index on the key.
/// - `messages.seq` is the rowid without AUTOINCREMENT, so an insert does not also rewrite
///   `sqlite_sequence`. A new row still gets a seq above every row in the table (the largest
///   plus one), which is all `seq` is for: the order of a conversation's messages. A seq can be
///   handed out again only after the rows above it were deleted, and messages go only with their
///   whole conversation, so no remaining message ever sees a reused seq.
/// - No index on `(uid, updated_at)`: bumping `updated_at` rewrites the conversation row's page
///   only; listing sorts one user's conversations (found through the primary key) instead.
const SCHEMA: &str = r#"
CREATE TABLE IF NOT EXISTS conversations (
    uid TEXT NOT NULL,
    id TEXT NOT NULL,
    title TEXT NOT NULL DEFAULT '',
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    assistant TEXT,
    origin TEXT,
    PRIMARY KEY (uid, id)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS messages (
    seq INTEGER PRIMARY KEY,
    uid TEXT NOT NULL,
    conversation_id TEXT NOT NULL,
    id TEXT NOT NULL,
    role TEXT NOT NULL,
    message TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    UNIQUE (uid, conversation_id, id),
    FOREIGN KEY (uid, conversation_id) REFERENCES conversations (uid, id) ON DELETE CASCADE
);
CREATE TABLE IF NOT EXISTS pending_approvals (
    approval_id TEXT PRIMARY KEY,
    uid TEXT NOT NULL,
    conversation_id TEXT NOT NULL,
    message_id TEXT NOT NULL,
    tool_call_id TEXT NOT NULL,
    server TEXT NOT NULL,
    tool TEXT NOT NULL,
    arguments TEXT NOT NULL,
    arguments_sha256 TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    FOREIGN KEY (uid, conversation_id) REFERENCES conversations (uid, id) ON DELETE CASCADE
);
-- The turn each conversation has in flight (store::lease::SqliteLeases): a row left behind by a
-- killed process names the reply to mark interrupted when the conversation is next used.
CREATE TABLE IF NOT EXISTS turns_in_flight (
    uid TEXT NOT NULL,
    conversation_id TEXT NOT NULL,
    message_id TEXT NOT NULL,
    request_id TEXT NOT NULL,
    PRIMARY KEY (uid, conversation_id)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS summaries (
    uid TEXT NOT NULL,
    conversation_id TEXT NOT NULL,
    covers_count INTEGER NOT NULL,
    covers_until_id TEXT NOT NULL,
    text TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (uid, conversation_id, covers_count),
    FOREIGN KEY (uid, conversation_id) REFERENCES conversations (uid, id) ON DELETE CASCADE
);
"#;

/// The layout [`SCHEMA`] describes, kept in chat.db's `user_version`. 0: a file from before
/// this version was kept (with or without `conversations.assistant`; no build wrote 1, and 0
/// and 1 are migrated alike); 2: the per-turn layout; 3: 2 plus `conversations.origin` (issue
/// #29, a nullable column added in place).
const LAYOUT_VERSION: i64 = 3;

/// A conversation as listed.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ConversationSummary {
    pub id: String,
    pub title: String,
    pub created_at: i64,
    pub updated_at: i64,
    /// The app whose Smart Picker started it; absent for one started on the Tamebi page.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub origin: Option<Origin>,
}

/// A conversation with its messages, oldest first.
#[derive(Debug, Clone, Serialize)]
pub struct Conversation {
    pub id: String,
    pub title: String,
    /// The assistant it was created with; none for conversations from before assistants
    /// (they belong to the default assistant).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub assistant: Option<String>,
    /// The app whose Smart Picker started it; absent for one started on the Tamebi page.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub origin: Option<Origin>,
    pub messages: Vec<UiMessage>,
}

/// The exact call an approval stands for (G3). What runs after approval is this record,
/// never arguments echoed back by the client.
#[derive(Debug, Clone, PartialEq)]
pub struct PendingApproval {
    pub approval_id: String,
    pub message_id: String,
    pub tool_call_id: String,
    pub server: String,
    pub tool: String,
    pub arguments: serde_json::Value,
    pub arguments_sha256: String,
}

/// One write of a message: what else happens in the same transaction.
#[derive(Debug, Clone, Default)]
pub struct Save {
    /// Titles a conversation that has no title yet.
    pub title_hint: Option<String>,
    /// Approvals the message asks for, recorded with it (G3).
    pub approvals: Vec<PendingApproval>,
    /// Set for a user message: binds a new conversation to this assistant (a conversation
    /// bound to another one is refused with [`Error::AssistantBound`] and nothing is
    /// written), and drops the approvals still pending in the conversation.
    pub user_assistant: Option<String>,
    /// Set with a user message from the Smart Picker: where a conversation this message
    /// creates was started. Written only when the row is created, never changed later.
    pub user_origin: Option<Origin>,
    /// The message is its turn's final version: the record of the turn in flight that writes
    /// it (store::lease) goes in the same transaction, so a turn's end costs no commit of its
    /// own and a crash can never leave a complete reply marked interrupted. Only a record
    /// naming this message goes; a later turn's record stays.
    pub ends_turn: bool,
    /// The message starts a turn: its record in flight (store::lease) is written in the same
    /// transaction, so a turn's start costs no commit of its own.
    pub starts_turn: Option<crate::store::lease::InterruptedTurn>,
}

/// chat.db's operations, whatever the database. Every write resolves only once committed:
/// "saved" means another instance reading the database sees it.
#[async_trait::async_trait]
pub trait ChatStore: Send + Sync {
    /// Creates the conversation if needed and upserts `message`, with what `save` adds, in
    /// one transaction.
    async fn save(&self, key: &ConversationKey, message: &UiMessage, save: Save) -> Result<(), Error>;

    /// Creates the conversation if needed (titled from `title_hint`) and upserts `message`.
    async fn save_message(&self, key: &ConversationKey, message: &UiMessage, title_hint: Option<String>) -> Result<(), Error> {
        let save = Save {
            title_hint,
            ..Save::default()
        };
        self.save(key, message, save).await
    }

    /// Saves a new user message (titling a new conversation from it and binding it to
    /// `assistant`) and drops any approval still pending in the conversation, in one
    /// transaction: a new message supersedes them. A conversation bound to another assistant
    /// is refused ([`Error::AssistantBound`]) and nothing is written.
    async fn save_user_message(&self, key: &ConversationKey, message: &UiMessage, assistant: &str) -> Result<(), Error> {
        let save = Save {
            title_hint: Some(message.text()),
            user_assistant: Some(assistant.to_string()),
            ..Save::default()
        };
        self.save(key, message, save).await
    }

    /// The assistant a conversation is bound to: `None` when the conversation does not exist,
    /// `Some(None)` when it predates assistants (it belongs to the default one).
    async fn assistant_of(&self, key: &ConversationKey) -> Result<Option<Option<String>>, Error>;

    /// Saves the message and records pending approvals in the same transaction, so a
    /// pending approval survives a restart exactly when the request for it was streamed.
    async fn save_message_with_approvals(
        &self,
        key: &ConversationKey,
        message: &UiMessage,
        approvals: Vec<PendingApproval>,
    ) -> Result<(), Error> {
        let save = Save {
            approvals,
            ..Save::default()
        };
        self.save(key, message, save).await
    }

    /// Removes and returns the pending approval `approval_id` if it belongs to this user's
    /// conversation. At most once: a second call for the same id returns `None`.
    async fn take_approval(&self, key: &ConversationKey, approval_id: &str) -> Result<Option<PendingApproval>, Error> {
        Ok(self
            .take_approvals(key, &[approval_id.to_string()])
            .await?
            .and_then(|mut taken| taken.pop()))
    }

    /// Removes and returns the pending approvals `approval_ids` (in that order) of this user's
    /// conversation, all in one transaction: all of them or none (`None` when any is not
    /// pending, and then nothing is taken). A continuation decides on every approval its
    /// message asked for at once (the conversation actor refuses a partial set before this),
    /// so none may be used up while another is refused.
    async fn take_approvals(&self, key: &ConversationKey, approval_ids: &[String]) -> Result<Option<Vec<PendingApproval>>, Error>;

    /// Pending approvals of a conversation, oldest first.
    async fn pending_approvals(&self, key: &ConversationKey) -> Result<Vec<PendingApproval>, Error>;

    /// The user's conversations, most recently updated first (at most 500).
    async fn list(&self, uid: &UserId) -> Result<Vec<ConversationSummary>, Error>;

    /// The conversation, or `None` when it does not exist for this uid.
    async fn load(&self, key: &ConversationKey) -> Result<Option<Conversation>, Error>;

    /// Erases the conversation and its messages; true when it existed for this uid.
    async fn delete(&self, key: &ConversationKey) -> Result<bool, Error>;

    /// Stores a summary of the first `covers_count` messages. A range is summarised once:
    /// storing a second summary for the same range keeps the first (false).
    async fn save_summary(&self, key: &ConversationKey, summary: &Summary) -> Result<bool, Error>;

    /// The summary covering the most messages, if the conversation has one.
    async fn latest_summary(&self, key: &ConversationKey) -> Result<Option<Summary>, Error>;

    /// Erases every conversation of the user with its messages, approvals and summaries,
    /// and makes the bytes unrecoverable as far as the database allows. Returns how many
    /// conversations there were.
    async fn erase_user(&self, uid: &UserId) -> Result<usize, Error>;

    /// Flushes and closes (at shutdown).
    async fn close(&self);
}

/// Largest stored message (JSON bytes) a turn's save may commit inline (`Db::write_small`).
const INLINE_MESSAGE_BYTES: usize = 16 * 1024;

/// chat.db as a SQLite file.
#[derive(Clone)]
pub struct SqliteChat {
    db: Db,
}

fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

impl SqliteChat {
    /// Opens (creating and migrating as needed) chat.db; `turns_running` is the process's count
    /// of running turns (`actors::running_turns`), the load signal of its inline commits.
    pub fn open(path: &Path, turns_running: super::db::TurnCount) -> Result<SqliteChat, Error> {
        migrate(path)?;
        // A turn's two commits go inline while the process runs no more turns than tokio has
        // workers (issue #16): at low load that saves two thread hand-offs per commit; under
        // load they queue for the writer thread's group commit, and no worker does SQLite work.
        let workers = tokio::runtime::Handle::try_current()
            .map(|rt| rt.metrics().num_workers())
            .unwrap_or_else(|_| std::thread::available_parallelism().map_or(1, |n| n.get()));
        Ok(SqliteChat {
            db: Db::open(path, SCHEMA)?.with_inline_commits(move || turns_running() <= workers),
        })
    }

    /// chat.db for a test that runs no turns against it.
    #[cfg(test)]
    pub fn open_without_turns(path: &Path) -> Result<SqliteChat, Error> {
        SqliteChat::open(path, std::sync::Arc::new(|| 0))
    }

    /// The file's handle, for what else lives in chat.db (the turns in flight).
    pub fn db(&self) -> Db {
        self.db.clone()
    }
}

#[async_trait::async_trait]
impl ChatStore for SqliteChat {
    async fn save(&self, key: &ConversationKey, message: &UiMessage, save: Save) -> Result<(), Error> {
        let Save {
            title_hint,
            approvals,
            user_assistant,
            user_origin,
            ends_turn,
            starts_turn,
        } = save;
        let (uid, cid) = (key.uid().to_string(), key.id().to_string());
        let json = serde_json::to_string(message).map_err(|e| Error::Internal(e.to_string()))?;
        let (mid, role) = (message.id.clone(), stored_role(message.role));
        // A few rows by key: at low load it commits on this thread (`Db::write_small`), unless
        // the message is large (tool outputs: more pages to write, and secure_delete zeroes
        // the ones it replaces), which the writer thread takes as any other write.
        let small = json.len() <= INLINE_MESSAGE_BYTES;
        let write = move |c: &rusqlite::Connection| -> Result<(), Error> {
            let now = now_ms();
            let created = Created {
                assistant: user_assistant.as_deref(),
                origin: user_origin.map(Origin::as_str),
            };
            upsert_conversation(c, &uid, &cid, title_hint.as_deref(), created, now)?;
            // Cached statements: these run twice per turn, so they are parsed once per
            // connection.
            c.prepare_cached(
                "INSERT INTO messages (uid, conversation_id, id, role, message, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)
                     ON CONFLICT (uid, conversation_id, id) DO UPDATE SET message = excluded.message",
            )?
            .execute(params![uid, cid, mid, role, json, now])?;
            if user_assistant.is_some() {
                c.prepare_cached("DELETE FROM pending_approvals WHERE uid = ?1 AND conversation_id = ?2")?
                    .execute(params![uid, cid])?;
            }
            if let Some(turn) = starts_turn {
                super::lease::record_turn(c, &uid, &cid, &turn.message_id, &turn.request_id)?;
            }
            if ends_turn {
                // The marker lives in this file (store::lease::SqliteLeases).
                c.prepare_cached("DELETE FROM turns_in_flight WHERE uid = ?1 AND conversation_id = ?2 AND message_id = ?3")?
                    .execute(params![uid, cid, mid])?;
            }
            for a in approvals {
                c.execute(
                        "INSERT INTO pending_approvals (approval_id, uid, conversation_id, message_id, tool_call_id, server, tool, arguments, arguments_sha256, created_at)
                         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
                        params![a.approval_id, uid, cid, a.message_id, a.tool_call_id, a.server, a.tool, a.arguments.to_string(), a.arguments_sha256, now],
                    )?;
            }
            Ok(())
        };
        if small {
            self.db.write_small(write).await
        } else {
            self.db.write(write).await
        }
    }

    async fn assistant_of(&self, key: &ConversationKey) -> Result<Option<Option<String>>, Error> {
        let (uid, cid) = (key.uid().to_string(), key.id().to_string());
        self.db
            .read(move |c| {
                Ok(c.query_row(
                    "SELECT assistant FROM conversations WHERE uid = ?1 AND id = ?2",
                    params![uid, cid],
                    |r| r.get::<_, Option<String>>(0),
                )
                .optional()?)
            })
            .await
    }

    async fn take_approvals(&self, key: &ConversationKey, approval_ids: &[String]) -> Result<Option<Vec<PendingApproval>>, Error> {
        let (uid, cid, ids) = (key.uid().to_string(), key.id().to_string(), approval_ids.to_vec());
        self.db
            .write(move |c| {
                // One transaction (Db::write): every id is looked up before any is deleted.
                let mut taken = Vec::with_capacity(ids.len());
                for aid in &ids {
                    let found = c
                        .query_row(
                            "SELECT approval_id, message_id, tool_call_id, server, tool, arguments, arguments_sha256
                             FROM pending_approvals WHERE approval_id = ?1 AND uid = ?2 AND conversation_id = ?3",
                            params![aid, uid, cid],
                            row_to_approval,
                        )
                        .optional()?;
                    match found {
                        Some(a) if !taken.iter().any(|t: &PendingApproval| t.approval_id == a.approval_id) => taken.push(a),
                        _ => return Ok(None),
                    }
                }
                for aid in &ids {
                    c.execute(
                        "DELETE FROM pending_approvals WHERE approval_id = ?1 AND uid = ?2 AND conversation_id = ?3",
                        params![aid, uid, cid],
                    )?;
                }
                Ok(Some(taken))
            })
            .await
    }

    async fn pending_approvals(&self, key: &ConversationKey) -> Result<Vec<PendingApproval>, Error> {
        let (uid, cid) = (key.uid().to_string(), key.id().to_string());
        self.db
            .read(move |c| {
                let mut st = c.prepare(
                    "SELECT approval_id, message_id, tool_call_id, server, tool, arguments, arguments_sha256
                     FROM pending_approvals WHERE uid = ?1 AND conversation_id = ?2 ORDER BY created_at",
                )?;
                let rows = st.query_map(params![uid, cid], row_to_approval)?.collect::<Result<Vec<_>, _>>()?;
                Ok(rows)
            })
            .await
    }

    async fn list(&self, uid: &UserId) -> Result<Vec<ConversationSummary>, Error> {
        let uid = uid.as_str().to_string();
        self.db
            .read(move |c| {
                let mut st = c.prepare(
                    "SELECT id, title, created_at, updated_at, origin FROM conversations WHERE uid = ?1 ORDER BY updated_at DESC, id LIMIT 500",
                )?;
                let rows = st
                    .query_map(params![uid], |r| {
                        Ok(ConversationSummary {
                            id: r.get(0)?,
                            title: r.get(1)?,
                            created_at: r.get(2)?,
                            updated_at: r.get(3)?,
                            origin: stored_origin(r.get(4)?),
                        })
                    })?
                    .collect::<Result<Vec<_>, _>>()?;
                Ok(rows)
            })
            .await
    }

    async fn load(&self, key: &ConversationKey) -> Result<Option<Conversation>, Error> {
        let (uid, cid) = (key.uid().to_string(), key.id().to_string());
        self.db
            .read(move |c| {
                let Some((title, assistant, origin)) = c
                    .query_row(
                        "SELECT title, assistant, origin FROM conversations WHERE uid = ?1 AND id = ?2",
                        params![uid, cid],
                        |r| {
                            Ok((
                                r.get::<_, String>(0)?,
                                r.get::<_, Option<String>>(1)?,
                                r.get::<_, Option<String>>(2)?,
                            ))
                        },
                    )
                    .optional()?
                else {
                    return Ok(None);
                };
                let mut st = c.prepare("SELECT message FROM messages WHERE uid = ?1 AND conversation_id = ?2 ORDER BY seq")?;
                let mut messages = Vec::new();
                for json in st.query_map(params![uid, cid], |r| r.get::<_, String>(0))? {
                    let msg: UiMessage = serde_json::from_str(&json?).map_err(|e| Error::Internal(format!("stored message: {e}")))?;
                    messages.push(msg);
                }
                Ok(Some(Conversation {
                    id: cid,
                    title,
                    assistant,
                    origin: stored_origin(origin),
                    messages,
                }))
            })
            .await
    }

    async fn delete(&self, key: &ConversationKey) -> Result<bool, Error> {
        let (uid, cid) = (key.uid().to_string(), key.id().to_string());
        self.db
            .write(move |c| Ok(c.execute("DELETE FROM conversations WHERE uid = ?1 AND id = ?2", params![uid, cid])? > 0))
            .await
    }

    async fn save_summary(&self, key: &ConversationKey, summary: &Summary) -> Result<bool, Error> {
        let (uid, cid, s) = (key.uid().to_string(), key.id().to_string(), summary.clone());
        self.db
            .write(move |c| {
                let n = c.execute(
                    "INSERT INTO summaries (uid, conversation_id, covers_count, covers_until_id, text, created_at)
                     SELECT ?1, ?2, ?3, ?4, ?5, ?6 WHERE EXISTS (SELECT 1 FROM conversations WHERE uid = ?1 AND id = ?2)
                     ON CONFLICT (uid, conversation_id, covers_count) DO NOTHING",
                    params![uid, cid, s.covers_count as i64, s.covers_until_id, s.text, now_ms()],
                )?;
                Ok(n > 0)
            })
            .await
    }

    async fn latest_summary(&self, key: &ConversationKey) -> Result<Option<Summary>, Error> {
        let (uid, cid) = (key.uid().to_string(), key.id().to_string());
        self.db
            .read(move |c| {
                Ok(c.query_row(
                    "SELECT covers_count, covers_until_id, text FROM summaries WHERE uid = ?1 AND conversation_id = ?2
                     ORDER BY covers_count DESC LIMIT 1",
                    params![uid, cid],
                    |r| {
                        Ok(Summary {
                            covers_count: usize::try_from(r.get::<_, i64>(0)?).unwrap_or(0),
                            covers_until_id: r.get(1)?,
                            text: r.get(2)?,
                        })
                    },
                )
                .optional()?)
            })
            .await
    }

    async fn erase_user(&self, uid: &UserId) -> Result<usize, Error> {
        let uid = uid.as_str().to_string();
        let n = self
            .db
            .write(move |c| {
                // The cascade would do it; explicit deletes do not depend on foreign_keys.
                for table in ["summaries", "pending_approvals", "messages", "turns_in_flight"] {
                    c.execute(&format!("DELETE FROM {table} WHERE uid = ?1"), params![uid])?;
                }
                Ok(c.execute("DELETE FROM conversations WHERE uid = ?1", params![uid])?)
            })
            .await?;
        self.db.checkpoint_truncate().await?;
        Ok(n)
    }

    async fn close(&self) {
        self.db.close().await;
    }
}

/// What a user message sets on a conversation it creates.
#[derive(Clone, Copy)]
struct Created<'a> {
    assistant: Option<&'a str>,
    origin: Option<&'a str>,
}

/// Creates or touches the conversation. The assistant and the origin are set when the row is
/// created and never changed: a user message naming another assistant is refused before
/// anything is written; a later message's origin is not looked at.
fn upsert_conversation(
    c: &Connection,
    uid: &str,
    cid: &str,
    title_hint: Option<&str>,
    created: Created<'_>,
    now: i64,
) -> Result<(), Error> {
    let Created { assistant, origin } = created;
    if let Some(wanted) = assistant {
        let bound: Option<Option<String>> = c
            .prepare_cached("SELECT assistant FROM conversations WHERE uid = ?1 AND id = ?2")?
            .query_row(params![uid, cid], |r| r.get(0))
            .optional()?;
        if let Some(bound) = refused_binding(bound.flatten(), wanted) {
            return Err(Error::AssistantBound(bound));
        }
    }
    let title = title_hint.map(title_from).unwrap_or_default();
    c.prepare_cached(
        "INSERT INTO conversations (uid, id, title, assistant, origin, created_at, updated_at) VALUES (?1, ?2, ?3, ?4, ?6, ?5, ?5)
         ON CONFLICT (uid, id) DO UPDATE SET updated_at = excluded.updated_at,
           title = CASE WHEN conversations.title = '' THEN excluded.title ELSE conversations.title END",
    )?
    .execute(params![uid, cid, title, assistant, now, origin])?;
    Ok(())
}

/// A stored origin; a name this build does not know (a newer build wrote it) reads as none.
pub(crate) fn stored_origin(name: Option<String>) -> Option<Origin> {
    name.as_deref().and_then(Origin::parse)
}

/// The assistant that refuses a user message for `wanted`: the one the conversation is
/// already bound to, when it is another.
pub(crate) fn refused_binding(bound: Option<String>, wanted: &str) -> Option<String> {
    bound.filter(|b| b != wanted)
}

/// Brings chat.db to [`LAYOUT_VERSION`] in place, losing nothing; a new file gets [`SCHEMA`] as
/// it is. Guarded by `user_version`, so a file is migrated once; each step is one transaction.
fn migrate(path: &Path) -> Result<(), Error> {
    // `open_conn`: secure_delete on, so the old tables this drops leave no user text in freed
    // pages (an erasure later only zeroes what the new tables hold).
    let mut c = crate::store::db::open_conn(path)?;
    let version: i64 = c.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    if version > LAYOUT_VERSION {
        // An older build must not write into a layout it does not know.
        return Err(Error::Internal(format!(
            "{} has chat.db layout {version}, newer than this build's ({LAYOUT_VERSION}): run a newer Tamebi",
            path.display()
        )));
    }
    if version == LAYOUT_VERSION {
        return Ok(());
    }
    if version == 2 {
        // 2 → 3: one nullable column, added in place (existing conversations have no origin).
        let tx = c.transaction()?;
        tx.execute_batch("ALTER TABLE conversations ADD COLUMN origin TEXT")?;
        tx.pragma_update(None, "user_version", LAYOUT_VERSION)?;
        return Ok(tx.commit()?);
    }
    if !table_exists(&c, "conversations")? {
        let tx = c.transaction()?;
        tx.execute_batch(SCHEMA)?;
        tx.pragma_update(None, "user_version", LAYOUT_VERSION)?;
        return Ok(tx.commit()?);
    }
    // From before assistants: the column the copy below reads (NULL: the default assistant).
    let has_assistant: bool = c.query_row(
        "SELECT COUNT(*) > 0 FROM pragma_table_info('conversations') WHERE name = 'assistant'",
        [],
        |r| r.get(0),
    )?;
    if !has_assistant {
        c.execute_batch("ALTER TABLE conversations ADD COLUMN assistant TEXT")?;
    }
    relayout(&mut c)
}

/// The tables whose layout changed, rebuilt as [`SCHEMA`] says, rows and `seq`s copied as they
/// are (SQLite's own recipe for a table change: foreign keys off, the old tables renamed away
/// without rewriting what refers to them, the new ones created, filled, the old ones dropped).
/// Everything happens in one transaction: a crash leaves the old file untouched. Renaming the
/// old tables away first (which SQLite's recipe warns about) is safe here because
/// `legacy_alter_table` keeps references unrewritten and chat.db has no triggers or views.
fn relayout(c: &mut Connection) -> Result<(), Error> {
    const REBUILT: [(&str, &str); 3] = [
        ("conversations", "uid, id, title, created_at, updated_at, assistant"),
        ("messages", "seq, uid, conversation_id, id, role, message, created_at"),
        ("turns_in_flight", "uid, conversation_id, message_id, request_id"),
    ];
    c.pragma_update(None, "foreign_keys", "OFF")?;
    c.pragma_update(None, "legacy_alter_table", "ON")?;
    let tx = c.transaction()?;
    let mut present = Vec::new();
    for (table, columns) in REBUILT {
        if table_exists(&tx, table)? {
            tx.execute_batch(&format!("ALTER TABLE {table} RENAME TO old_{table}"))?;
            present.push((table, columns));
        }
    }
    tx.execute_batch(SCHEMA)?;
    for (table, columns) in &present {
        tx.execute_batch(&format!("INSERT INTO {table} ({columns}) SELECT {columns} FROM old_{table}"))?;
    }
    // Children first; each old table's indexes go with it (conversations_by_user too).
    for (table, _) in present.iter().rev() {
        tx.execute_batch(&format!("DROP TABLE old_{table}"))?;
    }
    // Step 10 of SQLite's recipe: the copied rows must still satisfy every foreign key.
    let broken: i64 = tx.query_row("SELECT COUNT(*) FROM pragma_foreign_key_check", [], |r| r.get(0))?;
    if broken > 0 {
        return Err(Error::Internal(format!(
            "chat.db layout upgrade: {broken} rows break a foreign key; the file is left as it was"
        )));
    }
    tx.pragma_update(None, "user_version", LAYOUT_VERSION)?;
    tx.commit()?;
    c.pragma_update(None, "legacy_alter_table", "OFF")?;
    c.pragma_update(None, "foreign_keys", "ON")?;
    Ok(())
}

fn table_exists(c: &Connection, table: &str) -> Result<bool, Error> {
    Ok(c.query_row(
        "SELECT COUNT(*) > 0 FROM sqlite_master WHERE type = 'table' AND name = ?1",
        [table],
        |r| r.get(0),
    )?)
}

/// The string a role is stored as. Explicit, so renaming a variant never changes stored data.
pub(crate) fn stored_role(role: Role) -> &'static str {
    match role {
        Role::System => "system",
        Role::User => "user",
        Role::Assistant => "assistant",
    }
}

/// A title from the first user message: its first line, at most 80 characters.
pub(crate) fn title_from(text: &str) -> String {
    let line = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("").trim();
    let mut title: String = line.chars().take(80).collect();
    if line.chars().count() > 80 {
        title.push('…');
    }
    title
}

fn row_to_approval(r: &rusqlite::Row<'_>) -> rusqlite::Result<PendingApproval> {
    let args: String = r.get(5)?;
    Ok(PendingApproval {
        approval_id: r.get(0)?,
        message_id: r.get(1)?,
        tool_call_id: r.get(2)?,
        server: r.get(3)?,
        tool: r.get(4)?,
        arguments: serde_json::from_str(&args).unwrap_or(serde_json::Value::Null),
        arguments_sha256: r.get(6)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    // What the stores do is proven once for both databases in `store::suite`.

    /// chat.db's inline commits follow the process's one count of running turns (RunningTurns):
    /// inline while no more turns run than tokio has workers, through the writer thread beyond.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn inline_commits_follow_the_running_turns() {
        let dir = tempfile::tempdir().unwrap();
        let turns = crate::actors::running_turns::RunningTurns::default();
        let counted = turns.clone();
        let s = SqliteChat::open(&dir.path().join("chat.db"), std::sync::Arc::new(move || counted.count())).unwrap();
        let db = s.db();
        let on_writer_thread = || db.write_small(|_| Ok(std::thread::current().name().is_some_and(|n| n.starts_with("db-writer-"))));
        assert!(!on_writer_thread().await.unwrap(), "quiet: inline");
        let two = [turns.started("alice"), turns.started("bob")];
        assert!(!on_writer_thread().await.unwrap(), "as many turns as workers: still inline");
        let third = turns.started("alice");
        assert!(on_writer_thread().await.unwrap(), "more turns than workers: the writer thread");
        drop((two, third));
        assert!(!on_writer_thread().await.unwrap(), "quiet again: inline");
    }

    #[test]
    fn roles_are_stored_as_before() {
        // The strings chat.db has always held (they were once derived from the variant names).
        assert_eq!(
            [Role::System, Role::User, Role::Assistant].map(stored_role),
            ["system", "user", "assistant"]
        );
    }

    #[tokio::test]
    async fn a_chat_db_from_before_assistants_gets_the_column() {
        use crate::store::key::test_key as key;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("chat.db");
        {
            let c = Connection::open(&path).unwrap();
            c.execute_batch(
                "CREATE TABLE conversations (uid TEXT NOT NULL, id TEXT NOT NULL, title TEXT NOT NULL DEFAULT '',
                 created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, PRIMARY KEY (uid, id));
                 INSERT INTO conversations VALUES ('alice', 'old', 'Old', 1, 1);",
            )
            .unwrap();
        }
        let s = SqliteChat::open_without_turns(&path).unwrap();
        drop(SqliteChat::open_without_turns(&path).unwrap()); // the guarded ALTER runs once
        assert_eq!(s.assistant_of(&key("alice", "old")).await.unwrap(), Some(None));
    }

    /// Issue #29: a file of layout 2 gains `conversations.origin` in place, its conversations
    /// keep everything and have no origin; a new one started from the Smart Picker keeps its.
    #[tokio::test]
    async fn a_chat_db_of_layout_2_gains_the_origin_column() {
        use crate::store::key::{test_key as key, test_user};
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("chat.db");
        {
            let c = Connection::open(&path).unwrap();
            // Layout 2 is SCHEMA without the origin column.
            c.execute_batch(&SCHEMA.replace("    origin TEXT,\n", "")).unwrap();
            c.execute_batch("INSERT INTO conversations VALUES ('alice', 'old', 'Old', 1, 1, 'default'); PRAGMA user_version = 2;")
                .unwrap();
        }
        let s = SqliteChat::open_without_turns(&path).unwrap();
        drop(SqliteChat::open_without_turns(&path).unwrap()); // the ALTER runs once
        let old = s.load(&key("alice", "old")).await.unwrap().unwrap();
        assert_eq!(
            (old.title.as_str(), old.assistant.as_deref(), old.origin),
            ("Old", Some("default"), None)
        );
        let msg = UiMessage {
            id: "m1".into(),
            role: Role::User,
            parts: vec![crate::ui_stream::UiPart::Text {
                text: "hi".into(),
                state: None,
            }],
        };
        let save = Save {
            title_hint: Some("hi".into()),
            user_assistant: Some("default".into()),
            user_origin: Some(Origin::Talk),
            ..Save::default()
        };
        s.save(&key("alice", "new"), &msg, save).await.unwrap();
        let listed: Vec<_> = s
            .list(&test_user("alice"))
            .await
            .unwrap()
            .into_iter()
            .map(|c| (c.id, c.origin))
            .collect();
        assert!(
            listed.contains(&("new".into(), Some(Origin::Talk))) && listed.contains(&("old".into(), None)),
            "{listed:?}"
        );
        let version: i64 = Connection::open(&path)
            .unwrap()
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .unwrap();
        assert_eq!(version, LAYOUT_VERSION);
    }

    /// chat.db as every release before the per-turn layout created it (user_version 0).
    const SCHEMA_BEFORE_LAYOUT: &str = "
        CREATE TABLE conversations (uid TEXT NOT NULL, id TEXT NOT NULL, title TEXT NOT NULL DEFAULT '',
            created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, assistant TEXT, PRIMARY KEY (uid, id));
        CREATE TABLE messages (seq INTEGER PRIMARY KEY AUTOINCREMENT, uid TEXT NOT NULL, conversation_id TEXT NOT NULL,
            id TEXT NOT NULL, role TEXT NOT NULL, message TEXT NOT NULL, created_at INTEGER NOT NULL,
            UNIQUE (uid, conversation_id, id),
            FOREIGN KEY (uid, conversation_id) REFERENCES conversations (uid, id) ON DELETE CASCADE);
        CREATE TABLE pending_approvals (approval_id TEXT PRIMARY KEY, uid TEXT NOT NULL, conversation_id TEXT NOT NULL,
            message_id TEXT NOT NULL, tool_call_id TEXT NOT NULL, server TEXT NOT NULL, tool TEXT NOT NULL,
            arguments TEXT NOT NULL, arguments_sha256 TEXT NOT NULL, created_at INTEGER NOT NULL,
            FOREIGN KEY (uid, conversation_id) REFERENCES conversations (uid, id) ON DELETE CASCADE);
        CREATE INDEX conversations_by_user ON conversations (uid, updated_at DESC);
        CREATE TABLE turns_in_flight (uid TEXT NOT NULL, conversation_id TEXT NOT NULL, message_id TEXT NOT NULL,
            request_id TEXT NOT NULL, PRIMARY KEY (uid, conversation_id));
        CREATE TABLE summaries (uid TEXT NOT NULL, conversation_id TEXT NOT NULL, covers_count INTEGER NOT NULL,
            covers_until_id TEXT NOT NULL, text TEXT NOT NULL, created_at INTEGER NOT NULL,
            PRIMARY KEY (uid, conversation_id, covers_count),
            FOREIGN KEY (uid, conversation_id) REFERENCES conversations (uid, id) ON DELETE CASCADE);";

    fn user_message(id: &str, text: &str) -> String {
        serde_json::json!({"id": id, "role": "user", "parts": [{"type": "text", "text": text}]}).to_string()
    }

    #[tokio::test]
    async fn an_erasure_after_the_layout_upgrade_leaves_none_of_the_old_text_on_disk() {
        const MARKER: &str = "zq-marker-of-alice-zq";
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("chat.db");
        {
            let c = Connection::open(&path).unwrap();
            c.execute_batch(SCHEMA_BEFORE_LAYOUT).unwrap();
            c.execute_batch("INSERT INTO conversations VALUES ('alice', 'a1', 'First', 1, 30, NULL);")
                .unwrap();
            // Enough rows to fill pages of their own, which the upgrade's DROP TABLE frees.
            for seq in 1..=200 {
                let id = format!("m-{seq}");
                c.execute(
                    "INSERT INTO messages (seq, uid, conversation_id, id, role, message, created_at) VALUES (?1, 'alice', 'a1', ?2, 'user', ?3, 1)",
                    params![seq, id, user_message(&id, &format!("{MARKER} {seq}"))],
                )
                .unwrap();
            }
        }
        let s = SqliteChat::open_without_turns(&path).unwrap();
        assert_eq!(s.erase_user(&crate::store::key::test_user("alice")).await.unwrap(), 1);
        s.close().await;
        let mut bytes = std::fs::read(&path).unwrap();
        bytes.extend(std::fs::read(dir.path().join("chat.db-wal")).unwrap_or_default());
        let found = bytes.windows(MARKER.len()).filter(|w| *w == MARKER.as_bytes()).count();
        assert_eq!(found, 0, "an erased user's text is still in chat.db's bytes");
    }

    #[test]
    fn a_chat_db_from_a_newer_build_is_refused_not_written() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("chat.db");
        Connection::open(&path)
            .unwrap()
            .pragma_update(None, "user_version", LAYOUT_VERSION + 1)
            .unwrap();
        let Err(e) = SqliteChat::open_without_turns(&path) else {
            panic!("a newer layout was opened")
        };
        assert!(e.to_string().contains("newer than this build"), "{e}");
        let c = Connection::open(&path).unwrap();
        assert!(!table_exists(&c, "conversations").unwrap(), "the refused file was written");
    }

    #[tokio::test]
    async fn a_chat_db_from_before_the_per_turn_layout_is_upgraded_in_place_losing_nothing() {
        use crate::store::key::test_key as key;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("chat.db");
        {
            let c = Connection::open(&path).unwrap();
            c.execute_batch("PRAGMA journal_mode = WAL; PRAGMA foreign_keys = ON;").unwrap();
            c.execute_batch(SCHEMA_BEFORE_LAYOUT).unwrap();
            c.execute_batch(
                "INSERT INTO conversations VALUES ('alice', 'a1', 'First', 1, 30, 'default'), ('alice', 'a2', 'Second', 2, 20, NULL),
                    ('bob', 'a1', 'Bob''s', 3, 10, 'research');",
            )
            .unwrap();
            // seqs with a gap (5 was deleted once) and an order that is not the ids' order.
            let rows = [
                (1, "alice", "a1", "m-b", "one"),
                (2, "bob", "a1", "m-x", "bob"),
                (3, "alice", "a1", "m-a", "two"),
                (6, "alice", "a2", "m-c", "other"),
            ];
            for (seq, uid, cid, id, text) in rows {
                c.execute(
                    "INSERT INTO messages (seq, uid, conversation_id, id, role, message, created_at) VALUES (?1, ?2, ?3, ?4, 'user', ?5, 1)",
                    params![seq, uid, cid, id, user_message(id, text)],
                )
                .unwrap();
            }
            c.execute_batch(
                "INSERT INTO pending_approvals VALUES ('ap1', 'alice', 'a1', 'm-a', 'tc1', 'nextcloud', 'files_delete', '{\"path\":\"/x\"}', 'h', 5);
                 INSERT INTO turns_in_flight VALUES ('alice', 'a2', 'm-c', 'req-1');
                 INSERT INTO summaries VALUES ('alice', 'a1', 1, 'm-b', 'summary', 7);",
            )
            .unwrap();
        }
        let s = SqliteChat::open_without_turns(&path).unwrap();
        drop(SqliteChat::open_without_turns(&path).unwrap()); // a second open migrates nothing

        let texts = |c: Conversation| c.messages.iter().map(UiMessage::text).collect::<Vec<_>>();
        assert_eq!(texts(s.load(&key("alice", "a1")).await.unwrap().unwrap()), ["one", "two"]);
        assert_eq!(texts(s.load(&key("bob", "a1")).await.unwrap().unwrap()), ["bob"]);
        let listed: Vec<_> = s
            .list(&crate::store::key::test_user("alice"))
            .await
            .unwrap()
            .into_iter()
            .map(|c| (c.id, c.title, c.updated_at))
            .collect();
        assert_eq!(listed, [("a1".into(), "First".into(), 30), ("a2".into(), "Second".into(), 20)]);
        assert_eq!(s.assistant_of(&key("alice", "a1")).await.unwrap(), Some(Some("default".into())));
        assert_eq!(s.assistant_of(&key("alice", "a2")).await.unwrap(), Some(None));
        let pending = s.pending_approvals(&key("alice", "a1")).await.unwrap();
        assert_eq!(pending.len(), 1);
        assert_eq!(pending[0].arguments, serde_json::json!({"path": "/x"}));
        assert_eq!(s.latest_summary(&key("alice", "a1")).await.unwrap().unwrap().text, "summary");
        let leases = crate::store::lease::SqliteLeases::new(&s);
        let found = crate::store::lease::LeaseStore::acquire(&leases, &key("alice", "a2"), "me", std::time::Duration::from_secs(1)).await;
        let crate::store::lease::Acquired::Granted { interrupted: Some(turn) } = found.unwrap() else {
            panic!("the turn in flight was lost");
        };
        assert_eq!((turn.message_id.as_str(), turn.request_id.as_str()), ("m-c", "req-1"));

        // A new message follows every older one; the foreign keys still cascade.
        let later = UiMessage::new("m-0".into(), Role::Assistant);
        s.save_message(&key("alice", "a1"), &later, None).await.unwrap();
        let ids: Vec<_> = s
            .load(&key("alice", "a1"))
            .await
            .unwrap()
            .unwrap()
            .messages
            .into_iter()
            .map(|m| m.id)
            .collect();
        assert_eq!(ids, ["m-b", "m-a", "m-0"]);
        assert!(s.delete(&key("alice", "a1")).await.unwrap());
        s.close().await;

        let c = Connection::open(&path).unwrap();
        let count = |sql: &str| c.query_row(sql, [], |r| r.get::<_, i64>(0)).unwrap();
        assert_eq!(count("SELECT seq FROM messages WHERE id = 'm-c'"), 6);
        assert_eq!(
            count("SELECT COUNT(*) FROM messages WHERE uid = 'alice' AND conversation_id = 'a1'"),
            0
        );
        assert_eq!(count("SELECT COUNT(*) FROM pending_approvals"), 0);
        assert_eq!(count("SELECT COUNT(*) FROM summaries"), 0);
        assert_eq!(count("SELECT COUNT(*) FROM messages"), 2);
        assert_eq!(count("PRAGMA user_version"), LAYOUT_VERSION);
        let layout: Vec<String> = c
            .prepare("SELECT name || ': ' || COALESCE(sql, '') FROM sqlite_master ORDER BY name")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        let of = |name: &str| {
            layout
                .iter()
                .find(|l| l.starts_with(&format!("{name}: ")))
                .cloned()
                .unwrap_or_default()
        };
        assert!(of("conversations").ends_with("WITHOUT ROWID"), "{layout:?}");
        assert!(of("turns_in_flight").ends_with("WITHOUT ROWID"), "{layout:?}");
        assert!(!of("messages").contains("AUTOINCREMENT"), "{layout:?}");
        assert!(
            !layout
                .iter()
                .any(|l| l.starts_with("old_") || l.starts_with("conversations_by_user")),
            "{layout:?}"
        );
        assert!(of("pending_approvals").contains("REFERENCES conversations (uid, id)"), "{layout:?}");
        let orphans: Vec<String> = c
            .prepare("PRAGMA foreign_key_check")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert!(orphans.is_empty(), "{orphans:?}");
    }

    #[tokio::test]
    async fn a_new_chat_db_gets_the_per_turn_layout() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("chat.db");
        SqliteChat::open_without_turns(&path).unwrap().close().await;
        let c = Connection::open(&path).unwrap();
        assert_eq!(
            c.query_row("PRAGMA user_version", [], |r| r.get::<_, i64>(0)).unwrap(),
            LAYOUT_VERSION
        );
        let sql: String = c
            .query_row("SELECT sql FROM sqlite_master WHERE name = 'conversations'", [], |r| r.get(0))
            .unwrap();
        assert!(sql.ends_with("WITHOUT ROWID"), "{sql}");
    }

    #[test]
    fn titles_are_the_first_line_cut_short() {
        assert_eq!(title_from("\n  Plan the offsite \nmore"), "Plan the offsite");
        assert_eq!(title_from(&"x".repeat(81)), format!("{}…", "x".repeat(80)));
    }
}
