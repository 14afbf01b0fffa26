//! memory.db: the facts each user asked the assistant to remember.
//!
//! Its own file, because its lifecycle differs from chat.db's (a fact outlives the
//! conversation it came from) and from audit.db's (it is erased with the user's data). Every
//! query is keyed by the signed uid. It enforces the limits (count, size) with messages a
//! person and a model can act on; it never decides whether a write is allowed: writes reach
//! it only after the person approved them (G3, in the turn) or from the person's own request.

use rusqlite::params;
use serde::Serialize;
use std::path::Path;

use super::db::Db;
use super::key::{ConversationKey, UserId};
use crate::error::Error;

const SCHEMA: &str = r#"
CREATE TABLE IF NOT EXISTS facts (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    uid TEXT NOT NULL,
    text TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    source_conversation TEXT
);
CREATE INDEX IF NOT EXISTS facts_by_user ON facts (uid, id);
"#;

/// Most facts one user may keep.
pub const MAX_FACTS_PER_USER: usize = 100;
/// Longest fact, in characters.
pub const MAX_FACT_CHARS: usize = 500;

/// One remembered fact.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Fact {
    pub id: i64,
    pub text: String,
    /// Milliseconds since the epoch.
    pub created_at: i64,
    /// The conversation the fact was saved from (none when that is unknown).
    pub source_conversation: Option<String>,
}

/// memory.db's operations, whatever the database.
#[async_trait::async_trait]
pub trait MemoryStore: Send + Sync {
    /// The user's facts, oldest first.
    async fn list(&self, uid: &UserId) -> Result<Vec<Fact>, Error>;

    /// Saves a fact. `BadRequest` (with a message to show as is) when it is empty, too long,
    /// or the user already keeps the most facts allowed.
    async fn write(&self, uid: &UserId, text: &str, source_conversation: Option<&ConversationKey>) -> Result<Fact, Error>;

    /// Forgets one of the user's facts; false when the user has no fact with that id.
    async fn forget(&self, uid: &UserId, id: i64) -> Result<bool, Error>;

    /// Erases every fact of the user, as unrecoverably as the database allows.
    async fn erase_user(&self, uid: &UserId) -> Result<usize, Error>;

    /// Flushes and closes (at shutdown).
    async fn close(&self);
}

/// A fact as it will be stored: trimmed and within the size limit, or the message to show.
pub(crate) fn checked_fact(text: &str) -> Result<String, Error> {
    let text = text.trim().to_string();
    if text.is_empty() {
        return Err(Error::BadRequest("A fact cannot be empty.".into()));
    }
    let chars = text.chars().count();
    if chars > MAX_FACT_CHARS {
        return Err(Error::BadRequest(format!(
            "A fact can be at most {MAX_FACT_CHARS} characters; this one has {chars}. Shorten it."
        )));
    }
    Ok(text)
}

/// The refusal when the user already keeps [`MAX_FACTS_PER_USER`] facts.
pub(crate) fn memory_full() -> Error {
    Error::BadRequest(format!(
        "Memory is full ({MAX_FACTS_PER_USER} facts). Forget a fact before saving another."
    ))
}

/// The source conversation recorded with a fact: only one of the same user's.
pub(crate) fn source_of(uid: &UserId, source: Option<&ConversationKey>) -> Option<String> {
    source.filter(|k| k.user() == uid).map(|k| k.id().to_string())
}

/// memory.db as a SQLite file.
#[derive(Clone)]
pub struct SqliteMemory {
    db: Db,
}

impl SqliteMemory {
    pub fn open(path: &Path) -> Result<SqliteMemory, Error> {
        Ok(SqliteMemory {
            db: Db::open(path, SCHEMA)?,
        })
    }
}

#[async_trait::async_trait]
impl MemoryStore for SqliteMemory {
    async fn list(&self, uid: &UserId) -> Result<Vec<Fact>, Error> {
        let uid = uid.as_str().to_string();
        self.db
            .read(move |c| {
                let mut st = c.prepare("SELECT id, text, created_at, source_conversation FROM facts WHERE uid = ?1 ORDER BY id")?;
                let rows = st
                    .query_map(params![uid], |r| {
                        Ok(Fact {
                            id: r.get(0)?,
                            text: r.get(1)?,
                            created_at: r.get(2)?,
                            source_conversation: r.get(3)?,
                        })
                    })?
                    .collect::<Result<Vec<_>, _>>()?;
                Ok(rows)
            })
            .await
    }

    /// Saves a fact. `BadRequest` (with a message to show as is) when it is empty, too long,
    /// or the user already keeps the most facts allowed.
    async fn write(&self, uid: &UserId, text: &str, source_conversation: Option<&ConversationKey>) -> Result<Fact, Error> {
        let text = checked_fact(text)?;
        let source = source_of(uid, source_conversation);
        let uid = uid.as_str().to_string();
        self.db
            .write(move |c| {
                let count: i64 = c.query_row("SELECT count(*) FROM facts WHERE uid = ?1", params![uid], |r| r.get(0))?;
                if count as usize >= MAX_FACTS_PER_USER {
                    return Err(memory_full());
                }
                let created_at = chrono::Utc::now().timestamp_millis();
                c.execute(
                    "INSERT INTO facts (uid, text, created_at, source_conversation) VALUES (?1, ?2, ?3, ?4)",
                    params![uid, text, created_at, source],
                )?;
                Ok(Fact {
                    id: c.last_insert_rowid(),
                    text,
                    created_at,
                    source_conversation: source,
                })
            })
            .await
    }

    async fn forget(&self, uid: &UserId, id: i64) -> Result<bool, Error> {
        let uid = uid.as_str().to_string();
        self.db
            .write(move |c| Ok(c.execute("DELETE FROM facts WHERE uid = ?1 AND id = ?2", params![uid, id])? > 0))
            .await
    }

    async fn erase_user(&self, uid: &UserId) -> Result<usize, Error> {
        let uid = uid.as_str().to_string();
        let n = self
            .db
            .write(move |c| Ok(c.execute("DELETE FROM facts WHERE uid = ?1", params![uid])?))
            .await?;
        self.db.checkpoint_truncate().await?;
        Ok(n)
    }

    async fn close(&self) {
        self.db.close().await;
    }
}
