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
use crate::compaction::Summary;
use crate::error::Error;
use crate::ui_stream::UiMessage;

const SCHEMA: &str = r#"
CREATE TABLE IF NOT EXISTS conversations (
    uid TEXT NOT NULL,
    id TEXT NOT NULL,
    title TEXT NOT NULL DEFAULT '',
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (uid, id)
);
CREATE TABLE IF NOT EXISTS messages (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
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
CREATE INDEX IF NOT EXISTS conversations_by_user ON conversations (uid, updated_at DESC);
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

/// A conversation as listed.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ConversationSummary {
    pub id: String,
    pub title: String,
    pub created_at: i64,
    pub updated_at: i64,
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

#[derive(Clone)]
pub struct ChatStore {
    db: Db,
}

fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

impl ChatStore {
    pub fn open(path: &Path) -> Result<ChatStore, Error> {
        migrate(path)?;
        Ok(ChatStore {
            db: Db::open(path, SCHEMA)?,
        })
    }

    /// Creates the conversation if needed (titled from `title_hint`) and upserts `message`.
    /// Resolves once committed.
    pub async fn save_message(
        &self,
        uid: &str,
        conversation_id: &str,
        message: &UiMessage,
        title_hint: Option<String>,
    ) -> Result<(), Error> {
        self.save(uid, conversation_id, message, title_hint, Vec::new(), None).await
    }

    /// Saves a new user message (titling a new conversation from it and binding it to
    /// `assistant`) and drops any approval still pending in the conversation, in one
    /// transaction: a new message supersedes them. A conversation bound to another assistant
    /// is refused ([`Error::AssistantBound`]) and nothing is written.
    pub async fn save_user_message(&self, uid: &str, conversation_id: &str, message: &UiMessage, assistant: &str) -> Result<(), Error> {
        self.save(
            uid,
            conversation_id,
            message,
            Some(message.text()),
            Vec::new(),
            Some(assistant.to_string()),
        )
        .await
    }

    /// The assistant a conversation is bound to: `None` when the conversation does not exist,
    /// `Some(None)` when it predates assistants (it belongs to the default one).
    pub async fn assistant_of(&self, uid: &str, conversation_id: &str) -> Result<Option<Option<String>>, Error> {
        let (uid, cid) = (uid.to_string(), conversation_id.to_string());
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

    /// Saves the message and records pending approvals in the same transaction, so a
    /// pending approval survives a restart exactly when the request for it was streamed.
    pub async fn save_message_with_approvals(
        &self,
        uid: &str,
        conversation_id: &str,
        message: &UiMessage,
        approvals: Vec<PendingApproval>,
    ) -> Result<(), Error> {
        self.save(uid, conversation_id, message, None, approvals, None).await
    }

    async fn save(
        &self,
        uid: &str,
        conversation_id: &str,
        message: &UiMessage,
        title_hint: Option<String>,
        approvals: Vec<PendingApproval>,
        // A user message: binds a new conversation to this assistant, supersedes approvals.
        user_assistant: Option<String>,
    ) -> Result<(), Error> {
        let (uid, cid) = (uid.to_string(), conversation_id.to_string());
        let json = serde_json::to_string(message).map_err(|e| Error::Internal(e.to_string()))?;
        let (mid, role) = (message.id.clone(), format!("{:?}", message.role).to_lowercase());
        self.db
            .write(move |c| {
                let now = now_ms();
                upsert_conversation(c, &uid, &cid, title_hint.as_deref(), user_assistant.as_deref(), now)?;
                c.execute(
                    "INSERT INTO messages (uid, conversation_id, id, role, message, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)
                     ON CONFLICT (uid, conversation_id, id) DO UPDATE SET message = excluded.message",
                    params![uid, cid, mid, role, json, now],
                )?;
                if user_assistant.is_some() {
                    c.execute("DELETE FROM pending_approvals WHERE uid = ?1 AND conversation_id = ?2", params![uid, cid])?;
                }
                for a in approvals {
                    c.execute(
                        "INSERT INTO pending_approvals (approval_id, uid, conversation_id, message_id, tool_call_id, server, tool, arguments, arguments_sha256, created_at)
                         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
                        params![a.approval_id, uid, cid, a.message_id, a.tool_call_id, a.server, a.tool, a.arguments.to_string(), a.arguments_sha256, now],
                    )?;
                }
                Ok(())
            })
            .await
    }

    /// Removes and returns the pending approval `approval_id` if it belongs to this user's
    /// conversation. At most once: a second call for the same id returns `None`.
    pub async fn take_approval(&self, uid: &str, conversation_id: &str, approval_id: &str) -> Result<Option<PendingApproval>, Error> {
        let (uid, cid, aid) = (uid.to_string(), conversation_id.to_string(), approval_id.to_string());
        self.db
            .write(move |c| {
                let found = c
                    .query_row(
                        "SELECT approval_id, message_id, tool_call_id, server, tool, arguments, arguments_sha256
                         FROM pending_approvals WHERE approval_id = ?1 AND uid = ?2 AND conversation_id = ?3",
                        params![aid, uid, cid],
                        row_to_approval,
                    )
                    .optional()?;
                if found.is_some() {
                    c.execute("DELETE FROM pending_approvals WHERE approval_id = ?1", params![aid])?;
                }
                Ok(found)
            })
            .await
    }

    /// Pending approvals of a conversation (to re-offer or expire them).
    pub async fn pending_approvals(&self, uid: &str, conversation_id: &str) -> Result<Vec<PendingApproval>, Error> {
        let (uid, cid) = (uid.to_string(), conversation_id.to_string());
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

    pub async fn list(&self, uid: &str) -> Result<Vec<ConversationSummary>, Error> {
        let uid = uid.to_string();
        self.db
            .read(move |c| {
                let mut st = c.prepare(
                    "SELECT id, title, created_at, updated_at FROM conversations WHERE uid = ?1 ORDER BY updated_at DESC, id LIMIT 500",
                )?;
                let rows = st
                    .query_map(params![uid], |r| {
                        Ok(ConversationSummary {
                            id: r.get(0)?,
                            title: r.get(1)?,
                            created_at: r.get(2)?,
                            updated_at: r.get(3)?,
                        })
                    })?
                    .collect::<Result<Vec<_>, _>>()?;
                Ok(rows)
            })
            .await
    }

    /// The conversation, or `None` when it does not exist for this uid.
    pub async fn load(&self, uid: &str, conversation_id: &str) -> Result<Option<Conversation>, Error> {
        let (uid, cid) = (uid.to_string(), conversation_id.to_string());
        self.db
            .read(move |c| {
                let Some((title, assistant)) = c
                    .query_row(
                        "SELECT title, assistant FROM conversations WHERE uid = ?1 AND id = ?2",
                        params![uid, cid],
                        |r| Ok((r.get::<_, String>(0)?, r.get::<_, Option<String>>(1)?)),
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
                    messages,
                }))
            })
            .await
    }

    /// Erases the conversation and its messages; true when it existed for this uid.
    pub async fn delete(&self, uid: &str, conversation_id: &str) -> Result<bool, Error> {
        let (uid, cid) = (uid.to_string(), conversation_id.to_string());
        self.db
            .write(move |c| Ok(c.execute("DELETE FROM conversations WHERE uid = ?1 AND id = ?2", params![uid, cid])? > 0))
            .await
    }

    /// Stores a summary of the first `covers_count` messages. A range is summarised once:
    /// storing a second summary for the same range keeps the first (false).
    pub async fn save_summary(&self, uid: &str, conversation_id: &str, summary: &Summary) -> Result<bool, Error> {
        let (uid, cid, s) = (uid.to_string(), conversation_id.to_string(), summary.clone());
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

    /// The summary covering the most messages, if the conversation has one.
    pub async fn latest_summary(&self, uid: &str, conversation_id: &str) -> Result<Option<Summary>, Error> {
        let (uid, cid) = (uid.to_string(), conversation_id.to_string());
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

    /// Erases every conversation of the user with its messages, approvals and summaries,
    /// and makes the bytes unrecoverable from the files (secure delete, WAL truncated).
    /// Returns how many conversations there were.
    pub async fn erase_user(&self, uid: &str) -> Result<usize, Error> {
        let uid = uid.to_string();
        let n = self
            .db
            .write(move |c| {
                // The cascade would do it; explicit deletes do not depend on foreign_keys.
                for table in ["summaries", "pending_approvals", "messages"] {
                    c.execute(&format!("DELETE FROM {table} WHERE uid = ?1"), params![uid])?;
                }
                Ok(c.execute("DELETE FROM conversations WHERE uid = ?1", params![uid])?)
            })
            .await?;
        self.db.checkpoint_truncate().await?;
        Ok(n)
    }

    pub async fn close(self) {
        self.db.close().await;
    }
}

/// Creates or touches the conversation. The assistant is set when the row is created and never
/// changed: a user message naming another one is refused before anything is written.
fn upsert_conversation(
    c: &Connection,
    uid: &str,
    cid: &str,
    title_hint: Option<&str>,
    assistant: Option<&str>,
    now: i64,
) -> Result<(), Error> {
    if let Some(wanted) = assistant {
        let bound: Option<Option<String>> = c
            .query_row(
                "SELECT assistant FROM conversations WHERE uid = ?1 AND id = ?2",
                params![uid, cid],
                |r| r.get(0),
            )
            .optional()?;
        if let Some(Some(bound)) = bound.filter(|b| b.as_deref().is_some_and(|b| b != wanted)) {
            return Err(Error::AssistantBound(bound));
        }
    }
    let title = title_hint.map(title_from).unwrap_or_default();
    c.execute(
        "INSERT INTO conversations (uid, id, title, assistant, created_at, updated_at) VALUES (?1, ?2, ?3, ?4, ?5, ?5)
         ON CONFLICT (uid, id) DO UPDATE SET updated_at = excluded.updated_at,
           title = CASE WHEN conversations.title = '' THEN excluded.title ELSE conversations.title END",
        params![uid, cid, title, assistant, now],
    )?;
    Ok(())
}

/// Schema changes after the first release, each guarded so it runs once: `conversations.assistant`
/// (NULL for conversations created before assistants existed).
fn migrate(path: &Path) -> Result<(), Error> {
    let c = Connection::open(path)?;
    c.execute_batch(SCHEMA)?;
    let has_assistant: bool = c.query_row(
        "SELECT COUNT(*) > 0 FROM pragma_table_info('conversations') WHERE name = 'assistant'",
        [],
        |r| r.get(0),
    )?;
    if !has_assistant {
        c.execute_batch("ALTER TABLE conversations ADD COLUMN assistant TEXT")?;
    }
    Ok(())
}

/// A title from the first user message: its first line, at most 80 characters.
fn title_from(text: &str) -> String {
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
    use crate::ui_stream::{Role, UiPart};

    fn user(id: &str, text: &str) -> UiMessage {
        UiMessage {
            id: id.into(),
            role: Role::User,
            parts: vec![UiPart::Text {
                text: text.into(),
                state: None,
            }],
        }
    }

    #[tokio::test]
    async fn conversations_are_per_user() {
        let dir = tempfile::tempdir().unwrap();
        let s = ChatStore::open(&dir.path().join("chat.db")).unwrap();
        s.save_message(
            "alice",
            "c1",
            &user("m1", "Plan the offsite\nmore"),
            Some("Plan the offsite\nmore".into()),
        )
        .await
        .unwrap();
        s.save_message("bob", "c1", &user("m1", "bob's own"), Some("bob's own".into()))
            .await
            .unwrap();
        assert_eq!(s.list("alice").await.unwrap()[0].title, "Plan the offsite");
        assert_eq!(s.load("bob", "c1").await.unwrap().unwrap().messages[0].text(), "bob's own");
        assert!(s.load("bob", "c2").await.unwrap().is_none());
        assert!(s.delete("bob", "c1").await.unwrap());
        assert!(!s.delete("bob", "c1").await.unwrap());
        assert_eq!(s.load("alice", "c1").await.unwrap().unwrap().messages.len(), 1);
    }

    #[tokio::test]
    async fn a_conversation_keeps_its_assistant() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("chat.db");
        // A chat.db from before assistants: the column is added, old rows have none.
        {
            let c = Connection::open(&path).unwrap();
            c.execute_batch(
                "CREATE TABLE conversations (uid TEXT NOT NULL, id TEXT NOT NULL, title TEXT NOT NULL DEFAULT '',
                 created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, PRIMARY KEY (uid, id));
                 INSERT INTO conversations VALUES ('alice', 'old', 'Old', 1, 1);",
            )
            .unwrap();
        }
        let s = ChatStore::open(&path).unwrap();
        drop(ChatStore::open(&path).unwrap()); // the guarded ALTER runs once
        assert_eq!(s.assistant_of("alice", "old").await.unwrap(), Some(None));
        assert_eq!(s.assistant_of("alice", "new").await.unwrap(), None);
        s.save_user_message("alice", "new", &user("m1", "hi"), "planner").await.unwrap();
        assert_eq!(s.assistant_of("alice", "new").await.unwrap(), Some(Some("planner".into())));
        assert_eq!(s.assistant_of("bob", "new").await.unwrap(), None, "per user");
        s.save_user_message("alice", "new", &user("m2", "again"), "planner").await.unwrap();
        let refused = s.save_user_message("alice", "new", &user("m3", "switch"), "writer").await;
        assert!(
            matches!(refused, Err(Error::AssistantBound(ref b)) if b == "planner"),
            "{refused:?}"
        );
        let c = s.load("alice", "new").await.unwrap().unwrap();
        assert_eq!(c.messages.len(), 2, "nothing of the refused message was written");
        assert_eq!(c.assistant.as_deref(), Some("planner"));
        // An assistant message never sets or changes the binding.
        s.save_message("alice", "new", &user("a1", "reply"), None).await.unwrap();
        assert_eq!(s.assistant_of("alice", "new").await.unwrap(), Some(Some("planner".into())));
    }

    #[tokio::test]
    async fn summaries_are_stored_once_per_range_and_erased_with_the_user() {
        let dir = tempfile::tempdir().unwrap();
        let s = ChatStore::open(&dir.path().join("chat.db")).unwrap();
        let sum = |n: usize, text: &str| Summary {
            covers_count: n,
            covers_until_id: format!("m{n}"),
            text: text.into(),
        };
        assert!(
            !s.save_summary("alice", "c1", &sum(2, "orphan")).await.unwrap(),
            "no conversation, no summary"
        );
        s.save_message("alice", "c1", &user("m1", "hi"), None).await.unwrap();
        s.save_message("bob", "c1", &user("m1", "bob"), None).await.unwrap();
        assert!(s.save_summary("alice", "c1", &sum(2, "first")).await.unwrap());
        assert!(!s.save_summary("alice", "c1", &sum(2, "again")).await.unwrap());
        assert!(s.save_summary("alice", "c1", &sum(6, "later")).await.unwrap());
        assert!(s.save_summary("bob", "c1", &sum(2, "bob's")).await.unwrap());
        assert_eq!(s.latest_summary("alice", "c1").await.unwrap(), Some(sum(6, "later")));
        assert_eq!(s.erase_user("alice").await.unwrap(), 1);
        assert_eq!(s.latest_summary("alice", "c1").await.unwrap(), None);
        assert!(s.load("alice", "c1").await.unwrap().is_none());
        assert_eq!(s.latest_summary("bob", "c1").await.unwrap(), Some(sum(2, "bob's")));
    }

    #[tokio::test]
    async fn approvals_are_taken_once_by_their_owner() {
        let dir = tempfile::tempdir().unwrap();
        let s = ChatStore::open(&dir.path().join("chat.db")).unwrap();
        let a = PendingApproval {
            approval_id: "ap1".into(),
            message_id: "m2".into(),
            tool_call_id: "call_1".into(),
            server: "nextcloud".into(),
            tool: "files_move".into(),
            arguments: serde_json::json!({"from": "a", "to": "b"}),
            arguments_sha256: "x".into(),
        };
        s.save_message_with_approvals("alice", "c1", &user("m2", "x"), vec![a.clone()])
            .await
            .unwrap();
        assert!(s.take_approval("bob", "c1", "ap1").await.unwrap().is_none());
        assert!(s.take_approval("alice", "c2", "ap1").await.unwrap().is_none());
        assert_eq!(s.take_approval("alice", "c1", "ap1").await.unwrap(), Some(a));
        assert!(s.take_approval("alice", "c1", "ap1").await.unwrap().is_none());
    }
}
