//! memory.db: the facts each user asked the assistant to remember.
//!
//! Its own file, because its lifecycle differs from chat.db's (a fact outlives the
//! conversation it came from) and from audit.db's (it is erased with the user's data). Every
//! query is keyed by the signed uid. It enforces the limits (count, size) with messages a
//! person and a model can act on; it never decides whether a write is allowed: writes reach
//! it only after the person approved them (G3, in the turn) or from the person's own request.

use rusqlite::params;
use serde::Serialize;
use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

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
    /// or the user already keeps the most facts allowed. On PostgreSQL, a fact from a turn
    /// (`source_conversation` the user's own) is fenced by that conversation's lease:
    /// `OwnedElsewhere` when the lease names another instance (store::postgres::lease).
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
///
/// The facts are read on every turn, so each user's are cached once read. That is safe only
/// because one process alone uses a SQLite memory.db (several instances share PostgreSQL,
/// whose store reads every time) and every write goes through this type: each write drops the
/// cache of its user once its transaction has ended, even if its caller has gone, so a fact
/// the user deleted is never served from here.
#[derive(Clone)]
pub struct SqliteMemory {
    db: Db,
    cache: Arc<Mutex<FactCache>>,
}

/// Users whose facts are cached at most; beyond it the cache starts over (a read refills it).
const MAX_CACHED_USERS: usize = 10_000;

#[derive(Default)]
struct FactCache {
    by_user: HashMap<String, Vec<Fact>>,
    /// Moves on every write: a read that began before a write ended is not cached (it may
    /// predate that write's commit).
    generation: u64,
}

impl SqliteMemory {
    pub fn open(path: &Path) -> Result<SqliteMemory, Error> {
        Ok(SqliteMemory {
            db: Db::open(path, SCHEMA)?,
            cache: Arc::default(),
        })
    }

    fn cache(&self) -> std::sync::MutexGuard<'_, FactCache> {
        self.cache.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Runs a write of `uid`'s facts; their cache is dropped once it has ended.
    async fn write_facts<T, F>(&self, uid: &UserId, f: F) -> Result<T, Error>
    where
        T: Send + 'static,
        F: FnOnce(&rusqlite::Connection) -> Result<T, Error> + Send + 'static,
    {
        let cache = self.cache.clone();
        let uid = uid.as_str().to_string();
        self.db
            .write_then(f, move || {
                let mut cache = cache.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                cache.generation += 1;
                cache.by_user.remove(&uid);
            })
            .await
    }
}

#[async_trait::async_trait]
impl MemoryStore for SqliteMemory {
    async fn list(&self, uid: &UserId) -> Result<Vec<Fact>, Error> {
        let generation = {
            let cache = self.cache();
            if let Some(facts) = cache.by_user.get(uid.as_str()) {
                return Ok(facts.clone());
            }
            cache.generation
        };
        let facts = self.read_facts(uid).await?;
        let mut cache = self.cache();
        if cache.generation == generation {
            if cache.by_user.len() >= MAX_CACHED_USERS {
                cache.by_user.clear();
            }
            cache.by_user.insert(uid.as_str().to_string(), facts.clone());
        }
        Ok(facts)
    }

    /// Saves a fact. `BadRequest` (with a message to show as is) when it is empty, too long,
    /// or the user already keeps the most facts allowed. On PostgreSQL, a fact from a turn
    /// (`source_conversation` the user's own) is fenced by that conversation's lease:
    /// `OwnedElsewhere` when the lease names another instance (store::postgres::lease).
    async fn write(&self, uid: &UserId, text: &str, source_conversation: Option<&ConversationKey>) -> Result<Fact, Error> {
        let text = checked_fact(text)?;
        let source = source_of(uid, source_conversation);
        let owner = uid.as_str().to_string();
        self.write_facts(uid, move |c| {
            let count: i64 = c.query_row("SELECT count(*) FROM facts WHERE uid = ?1", params![owner], |r| r.get(0))?;
            if count as usize >= MAX_FACTS_PER_USER {
                return Err(memory_full());
            }
            let created_at = chrono::Utc::now().timestamp_millis();
            c.execute(
                "INSERT INTO facts (uid, text, created_at, source_conversation) VALUES (?1, ?2, ?3, ?4)",
                params![owner, text, created_at, source],
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
        let owner = uid.as_str().to_string();
        self.write_facts(uid, move |c| {
            Ok(c.execute("DELETE FROM facts WHERE uid = ?1 AND id = ?2", params![owner, id])? > 0)
        })
        .await
    }

    async fn erase_user(&self, uid: &UserId) -> Result<usize, Error> {
        let owner = uid.as_str().to_string();
        let n = self
            .write_facts(uid, move |c| Ok(c.execute("DELETE FROM facts WHERE uid = ?1", params![owner])?))
            .await?;
        self.db.checkpoint_truncate().await?;
        Ok(n)
    }

    async fn close(&self) {
        self.db.close().await;
    }
}

impl SqliteMemory {
    /// The user's facts as memory.db has them now.
    async fn read_facts(&self, uid: &UserId) -> Result<Vec<Fact>, Error> {
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::key::test_user as uid;

    #[tokio::test]
    async fn the_cache_never_serves_what_a_write_changed() {
        let dir = tempfile::tempdir().unwrap();
        let m = SqliteMemory::open(&dir.path().join("memory.db")).unwrap();
        let (alice, bob) = (uid("alice"), uid("bob"));
        let tea = m.write(&alice, "Likes tea", None).await.unwrap();
        assert_eq!(m.list(&alice).await.unwrap(), vec![tea.clone()]);
        // Cached now; a second write shows at once.
        let jazz = m.write(&alice, "Likes jazz", None).await.unwrap();
        assert_eq!(m.list(&alice).await.unwrap(), vec![tea.clone(), jazz.clone()]);
        // A forget whose caller gives up right after sending it still drops the cache once it
        // commits (the next write queues behind it on the same writer).
        let _ = tokio::time::timeout(std::time::Duration::ZERO, m.forget(&alice, tea.id)).await;
        m.write(&bob, "Likes coffee", None).await.unwrap();
        assert_eq!(m.list(&alice).await.unwrap(), vec![jazz]);
        assert_eq!(m.erase_user(&alice).await.unwrap(), 1);
        assert_eq!(m.list(&alice).await.unwrap(), vec![]);
        assert_eq!(m.list(&bob).await.unwrap().len(), 1);
    }
}
