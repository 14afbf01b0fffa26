//! memory in PostgreSQL: the operations of [`MemoryStore`] over the tables of migration 0001.
//!
//! A fact written from a turn is fenced like a chat write (store::lease): it goes ahead only
//! while its source conversation's lease row is absent or names this instance, so an instance
//! whose conversations an erasure seized elsewhere writes no fact while the lease names that
//! other instance (an owner check, not a generation: see `lease::check_fence`).

use deadpool_postgres::Pool;
use std::sync::Arc;

use super::batch::Batched;
use super::chat::vacuum;
use super::lease::check_fence;
use super::now_ms;
use crate::error::Error;
use crate::store::key::{ConversationKey, UserId};
use crate::store::memory::{Fact, MAX_FACTS_PER_USER, MemoryStore, checked_fact, memory_full, source_of};

/// Takes the per-user lock on a user's facts, held until the transaction ends. Every change
/// of a user's facts that must not interleave with another takes it: a write (count and
/// insert) and an erasure (which so orders after any write whose transaction holds it,
/// including one whose COMMIT is already on its way).
pub(crate) const LOCK_USER_FACTS: &str = "SELECT pg_advisory_xact_lock(hashtextextended('facts:' || $1, 0))";

#[derive(Clone)]
pub struct PgMemory {
    pool: Pool,
    /// This instance's lease owner id: the fence a turn's fact write checks (store::lease).
    instance: String,
    /// Every turn reads its user's facts: the reads of turns starting together are one query.
    lists: Arc<Batched<String, Vec<Fact>>>,
}

impl PgMemory {
    pub fn new(pool: Pool, instance: String) -> PgMemory {
        PgMemory {
            lists: Arc::new(Batched::start(pool.clone(), list_all)),
            pool,
            instance,
        }
    }
}

/// The facts of every uid of `batch`, by id, read by one statement that started after each of
/// them asked (so each sees every write acknowledged before it asked).
async fn list_all(pool: Pool, batch: Vec<String>) -> Result<Vec<Vec<Fact>>, Error> {
    let client = pool.get().await?;
    let statement = client
        .prepare_cached("SELECT uid, id, text, created_at, source_conversation FROM facts WHERE uid = ANY($1) ORDER BY uid, id")
        .await?;
    let rows = client.query(&statement, &[&batch]).await?;
    let mut by_uid: std::collections::HashMap<String, Vec<Fact>> = std::collections::HashMap::new();
    for r in &rows {
        by_uid.entry(r.try_get(0)?).or_default().push(Fact {
            id: r.try_get(1)?,
            text: r.try_get(2)?,
            created_at: r.try_get(3)?,
            source_conversation: r.try_get(4)?,
        });
    }
    // A uid asked for twice in one batch gets the same facts both times.
    Ok(batch.iter().map(|uid| by_uid.get(uid).cloned().unwrap_or_default()).collect())
}

#[async_trait::async_trait]
impl MemoryStore for PgMemory {
    async fn list(&self, uid: &UserId) -> Result<Vec<Fact>, Error> {
        self.lists.call(uid.as_str().to_string()).await
    }

    async fn write(&self, uid: &UserId, text: &str, source_conversation: Option<&ConversationKey>) -> Result<Fact, Error> {
        let text = checked_fact(text)?;
        let source = source_of(uid, source_conversation);
        let mut client = self.pool.get().await?;
        let tx = client.transaction().await?;
        // A turn's fact is fenced by its conversation's lease, held FOR KEY SHARE until commit:
        // an erasure that seized the user's leases (FOR UPDATE) waits for this write, whose
        // fact its later pass then deletes, and a later write of another instance is refused
        // while the lease names the erasing one (an owner check: see check_fence). Only the
        // user's own conversation counts as a source (source_of), so only it is checked.
        if let Some(key) = source_conversation.filter(|_| source.is_some()) {
            check_fence(&tx, key, &self.instance, "fact write").await?;
        }
        // Two instances saving for one user at once must not both pass the limit: the
        // count and the insert run under a per-user lock held until commit.
        tx.execute(LOCK_USER_FACTS, &[&uid.as_str()]).await?;
        let count: i64 = tx
            .query_one("SELECT count(*) FROM facts WHERE uid = $1", &[&uid.as_str()])
            .await?
            .try_get(0)?;
        if usize::try_from(count).unwrap_or(usize::MAX) >= MAX_FACTS_PER_USER {
            return Err(memory_full());
        }
        let created_at = now_ms();
        let id: i64 = tx
            .query_one(
                "INSERT INTO facts (uid, text, created_at, source_conversation) VALUES ($1, $2, $3, $4) RETURNING id",
                &[&uid.as_str(), &text, &created_at, &source],
            )
            .await?
            .try_get(0)?;
        tx.commit().await?;
        Ok(Fact {
            id,
            text,
            created_at,
            source_conversation: source,
        })
    }

    async fn forget(&self, uid: &UserId, id: i64) -> Result<bool, Error> {
        let n = self
            .pool
            .get()
            .await?
            .execute("DELETE FROM facts WHERE uid = $1 AND id = $2", &[&uid.as_str(), &id])
            .await?;
        Ok(n > 0)
    }

    async fn erase_user(&self, uid: &UserId) -> Result<usize, Error> {
        let mut client = self.pool.get().await?;
        let tx = client.transaction().await?;
        // A write of this user's still under way (a cancelled turn's, its COMMIT already sent)
        // holds the lock: the delete waits for it and then sees its row. One that starts
        // after this commits is refused by the fence only where its conversation's lease names
        // another instance: another instance's turn, until that instance takes the
        // conversation again (the fence checks the owner, not a generation, so a write of an
        // earlier turn still in flight there then passes). On this instance, whose leases the
        // erasure holds (http::memory::erase_me), nothing is refused: its own turns are
        // covered only by the erasure's bounded wait for the turns it cancelled.
        tx.execute(LOCK_USER_FACTS, &[&uid.as_str()]).await?;
        let n = tx.execute("DELETE FROM facts WHERE uid = $1", &[&uid.as_str()]).await?;
        tx.commit().await?;
        vacuum(&client, &["facts"]).await;
        Ok(usize::try_from(n).unwrap_or(usize::MAX))
    }

    async fn close(&self) {
        self.pool.close();
    }
}
