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

#[derive(Clone)]
pub struct MemoryStore {
    db: Db,
}

impl MemoryStore {
    pub fn open(path: &Path) -> Result<MemoryStore, Error> {
        Ok(MemoryStore {
            db: Db::open(path, SCHEMA)?,
        })
    }

    /// The user's facts, oldest first.
    pub async fn list(&self, uid: &str) -> Result<Vec<Fact>, Error> {
        let uid = uid.to_string();
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
    pub async fn write(&self, uid: &str, text: &str, source_conversation: Option<&str>) -> Result<Fact, Error> {
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
        let (uid, source) = (uid.to_string(), source_conversation.map(str::to_string));
        self.db
            .write(move |c| {
                let count: i64 = c.query_row("SELECT count(*) FROM facts WHERE uid = ?1", params![uid], |r| r.get(0))?;
                if count as usize >= MAX_FACTS_PER_USER {
                    return Err(Error::BadRequest(format!(
                        "Memory is full ({MAX_FACTS_PER_USER} facts). Forget a fact before saving another."
                    )));
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

    /// Forgets one of the user's facts; false when the user has no fact with that id.
    pub async fn forget(&self, uid: &str, id: i64) -> Result<bool, Error> {
        let uid = uid.to_string();
        self.db
            .write(move |c| Ok(c.execute("DELETE FROM facts WHERE uid = ?1 AND id = ?2", params![uid, id])? > 0))
            .await
    }

    /// Erases every fact of the user and makes the bytes unrecoverable from the files
    /// (secure delete is on for every connection; the WAL is checkpointed and truncated).
    pub async fn erase_user(&self, uid: &str) -> Result<usize, Error> {
        let uid = uid.to_string();
        let n = self
            .db
            .write(move |c| Ok(c.execute("DELETE FROM facts WHERE uid = ?1", params![uid])?))
            .await?;
        self.db.checkpoint_truncate().await?;
        Ok(n)
    }

    pub async fn close(self) {
        self.db.close().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn facts_are_per_user_and_limited() {
        let dir = tempfile::tempdir().unwrap();
        let m = MemoryStore::open(&dir.path().join("memory.db")).unwrap();
        let f = m.write("alice", "  Prefers meetings after 10:00 ", Some("c1")).await.unwrap();
        assert_eq!(f.text, "Prefers meetings after 10:00");
        m.write("bob", "bob's", None).await.unwrap();
        assert_eq!(m.list("alice").await.unwrap(), vec![f.clone()]);
        assert!(!m.forget("bob", f.id).await.unwrap(), "bob cannot forget alice's fact");
        assert!(m.write("alice", " ", None).await.unwrap_err().to_string().contains("empty"));
        let long = "x".repeat(MAX_FACT_CHARS + 1);
        assert!(m.write("alice", &long, None).await.unwrap_err().to_string().contains("at most 500"));
        for i in 1..MAX_FACTS_PER_USER {
            m.write("alice", &format!("fact {i}"), None).await.unwrap();
        }
        assert!(
            m.write("alice", "one more", None)
                .await
                .unwrap_err()
                .to_string()
                .contains("Memory is full")
        );
        assert!(m.forget("alice", f.id).await.unwrap());
        assert!(!m.forget("alice", f.id).await.unwrap());
        assert_eq!(m.erase_user("alice").await.unwrap(), MAX_FACTS_PER_USER - 1);
        assert_eq!(m.list("bob").await.unwrap().len(), 1);
    }
}
