//! Conversation leases in PostgreSQL (migration 0002), timed by the database clock.

use deadpool_postgres::Pool;
use std::time::Duration;

use super::{Every, NO_FLUSH, unflushed};
use crate::error::Error;
use crate::store::key::{ConversationKey, UserId};
use crate::store::lease::{Acquired, InterruptedTurn, LeaseStore};

pub struct PgLeases {
    pool: Pool,
    prune: Every,
}

impl PgLeases {
    pub fn new(pool: Pool) -> PgLeases {
        PgLeases {
            pool,
            prune: Every::new(PRUNE_EVERY_SECS),
        }
    }

    /// Housekeeping: a failed prune is logged and retried at the next due time; it never
    /// refuses the acquisition that happened to find it due.
    async fn prune_if_due(&self) {
        if self.prune.due(chrono::Utc::now().timestamp()) {
            match unflushed(&self.pool, PRUNE, &[]).await {
                Ok(pruned) => tracing::debug!(pruned, "long-expired conversation leases pruned"),
                Err(e) => tracing::warn!(error = %e, "could not prune expired conversation leases"),
            }
        }
    }
}

// Lease writes do not wait for the WAL flush ([`super::unflushed`]). A lease is soft state:
// if PostgreSQL itself crashed and lost the last lease writes, an owner's next renewal finds
// its row gone or changed and its actor stops, and an interrupted turn loses only its marker.
// A write that depends on a lease (a delete after taking it over) waits for its own flush,
// which flushes the lease write before it too: the WAL is flushed in order.

/// Lease rows expired for an hour (and with no turn to mark) are pruned: their owners stopped
/// long ago (an owner that cannot renew stops within the lease time).
const PRUNE: &str = "DELETE FROM conversation_leases WHERE expires_at < now() - interval '1 hour' AND turn_message_id IS NULL";
/// How often one instance prunes (inline, in the acquisition that finds it due).
const PRUNE_EVERY_SECS: i64 = 300;

/// Records the turn in flight in the owner's lease row (here, or inside a chat write that
/// starts a turn: `store::chat::Save::starts_turn`). $1 uid, $2 conversation, $3 owner,
/// $4 message id, $5 request id.
pub(super) const RECORD_TURN: &str = "UPDATE conversation_leases SET turn_message_id = $4, turn_request_id = $5
     WHERE uid = $1 AND conversation_id = $2 AND owner = $3";

/// The fence (store::lease): a write goes ahead only while the conversation's lease row is
/// absent or names this instance. The row is held FOR KEY SHARE until the transaction ends,
/// so a takeover (FOR UPDATE) waits for this write and every later write sees the new owner.
/// It compares the owner, not a generation of the lease: once the old owner takes the
/// conversation again, a write of its earlier turn still in flight passes, and an instance's
/// own takeover (a delete, an erasure) refuses nothing of its own. Shared by every fenced
/// write: chat (store::postgres::chat) and a turn's fact (store::postgres::memory).
/// `write` names the refused write in the log ("chat write", "fact write"), so an operator (and
/// a test) can tell which fence fired.
pub(super) async fn check_fence(
    tx: &deadpool_postgres::Transaction<'_>,
    key: &ConversationKey,
    instance: &str,
    write: &str,
) -> Result<(), Error> {
    // Prepared once per connection: the fence runs in every chat save.
    let fence = tx
        .prepare_cached("SELECT owner FROM conversation_leases WHERE uid = $1 AND conversation_id = $2 FOR KEY SHARE")
        .await?;
    let owner = tx.query_opt(&fence, &[&key.uid(), &key.id()]).await?;
    match owner.map(|r| r.try_get::<_, String>(0)).transpose()? {
        Some(owner) if owner != instance => {
            tracing::warn!("a {write} into a conversation this instance no longer owns was refused");
            Err(Error::OwnedElsewhere { retry_after_secs: 1 })
        }
        _ => Ok(()),
    }
}

fn ttl_secs(ttl: Duration) -> f64 {
    ttl.as_secs_f64()
}

#[async_trait::async_trait]
impl LeaseStore for PgLeases {
    async fn acquire(&self, key: &ConversationKey, owner: &str, ttl: Duration) -> Result<Acquired, Error> {
        self.prune_if_due().await;
        let (uid, cid) = (key.uid(), key.id());
        let mut client = self.pool.get().await?;
        let tx = client.transaction().await?;
        // Prepared once per connection: a lease is taken by every conversation a turn starts.
        tx.batch_execute(NO_FLUSH).await?;
        // A row to lock: created (already ours) when there is none. FOR UPDATE also waits for
        // a previous owner's write in progress (writers hold the row FOR KEY SHARE, the fence).
        tx.execute(
            &tx.prepare_cached(
                "INSERT INTO conversation_leases (uid, conversation_id, owner, expires_at)
             VALUES ($1, $2, $3, now() + make_interval(secs => $4))
             ON CONFLICT (uid, conversation_id) DO NOTHING",
            )
            .await?,
            &[&uid, &cid, &owner, &ttl_secs(ttl)],
        )
        .await?;
        let row = tx
            .query_one(
                &tx.prepare_cached(
                    "SELECT owner, EXTRACT(EPOCH FROM (expires_at - now()))::FLOAT8, turn_message_id, turn_request_id
                 FROM conversation_leases WHERE uid = $1 AND conversation_id = $2 FOR UPDATE",
                )
                .await?,
                &[&uid, &cid],
            )
            .await?;
        let (holder, remaining): (String, f64) = (row.try_get(0)?, row.try_get(1)?);
        if holder != owner && remaining > 0.0 {
            tx.commit().await?;
            return Ok(Acquired::HeldElsewhere {
                retry_after: Duration::from_secs_f64(remaining.ceil().max(1.0)),
            });
        }
        // The turn marker stays until the caller has marked the turn (then `turn_ended`): a
        // failure or a crash in between leaves it for the next acquisition, never lost.
        let interrupted = match (row.try_get::<_, Option<String>>(2)?, row.try_get::<_, Option<String>>(3)?) {
            (Some(message_id), Some(request_id)) => Some(InterruptedTurn { message_id, request_id }),
            _ => None,
        };
        tx.execute(
            &tx.prepare_cached(
                "UPDATE conversation_leases SET owner = $3, expires_at = now() + make_interval(secs => $4)
             WHERE uid = $1 AND conversation_id = $2",
            )
            .await?,
            &[&uid, &cid, &owner, &ttl_secs(ttl)],
        )
        .await?;
        tx.commit().await?;
        Ok(Acquired::Granted { interrupted })
    }

    async fn renew(&self, key: &ConversationKey, owner: &str, ttl: Duration) -> Result<bool, Error> {
        let n = unflushed(
            &self.pool,
            "UPDATE conversation_leases SET expires_at = now() + make_interval(secs => $4)
             WHERE uid = $1 AND conversation_id = $2 AND owner = $3",
            &[&key.uid(), &key.id(), &owner, &ttl_secs(ttl)],
        )
        .await?;
        Ok(n == 1)
    }

    async fn confirm(&self, key: &ConversationKey, owner: &str, ttl: Duration) -> Result<bool, Error> {
        let live = {
            let client = self.pool.get().await?;
            // Prepared once per connection: asked before every turn of a running conversation.
            let statement = client
                .prepare_cached(
                    "SELECT 1 FROM conversation_leases WHERE uid = $1 AND conversation_id = $2 AND owner = $3
                     AND expires_at > now() + make_interval(secs => $4)",
                )
                .await?;
            client
                .query_opt(&statement, &[&key.uid(), &key.id(), &owner, &(ttl_secs(ttl) / 3.0)])
                .await?
        };
        match live {
            Some(_) => Ok(true),
            None => self.renew(key, owner, ttl).await,
        }
    }

    async fn turn_started(&self, key: &ConversationKey, owner: &str, turn: &InterruptedTurn) -> Result<(), Error> {
        unflushed(
            &self.pool,
            RECORD_TURN,
            &[&key.uid(), &key.id(), &owner, &turn.message_id, &turn.request_id],
        )
        .await?;
        Ok(())
    }

    async fn turn_ended(&self, key: &ConversationKey, owner: &str) -> Result<(), Error> {
        unflushed(
            &self.pool,
            "UPDATE conversation_leases SET turn_message_id = NULL, turn_request_id = NULL
             WHERE uid = $1 AND conversation_id = $2 AND owner = $3",
            &[&key.uid(), &key.id(), &owner],
        )
        .await?;
        Ok(())
    }

    async fn held_elsewhere(&self, key: &ConversationKey, owner: &str) -> Result<Option<Duration>, Error> {
        let row = self
            .pool
            .get()
            .await?
            .query_opt(
                "SELECT EXTRACT(EPOCH FROM (expires_at - now()))::FLOAT8 FROM conversation_leases
                 WHERE uid = $1 AND conversation_id = $2 AND owner <> $3 AND expires_at > now()",
                &[&key.uid(), &key.id(), &owner],
            )
            .await?;
        Ok(match row {
            Some(r) => Some(Duration::from_secs_f64(r.try_get::<_, f64>(0)?.ceil().max(1.0))),
            None => None,
        })
    }

    async fn release(&self, key: &ConversationKey, owner: &str) -> Result<(), Error> {
        // Expired, not deleted: the row keeps naming its last owner (and a turn it left in
        // flight, for the next owner to mark), so a stale writer elsewhere stays fenced out.
        unflushed(
            &self.pool,
            "UPDATE conversation_leases SET expires_at = LEAST(expires_at, now())
             WHERE uid = $1 AND conversation_id = $2 AND owner = $3",
            &[&key.uid(), &key.id(), &owner],
        )
        .await?;
        Ok(())
    }

    async fn seize_user(&self, uid: &UserId, owner: &str, ttl: Duration) -> Result<(), Error> {
        let mut client = self.pool.get().await?;
        let tx = client.transaction().await?;
        tx.batch_execute(NO_FLUSH).await?;
        // A row for every conversation of the user (one nobody runs has none yet), then every
        // row locked FOR UPDATE, which waits for writes in progress under the fence, then
        // taken: while the rows name this instance, no other instance writes into these
        // conversations (an owner check: see check_fence's caveat).
        tx.execute(
            "INSERT INTO conversation_leases (uid, conversation_id, owner, expires_at)
             SELECT uid, id, $2, now() + make_interval(secs => $3) FROM conversations WHERE uid = $1
             ON CONFLICT (uid, conversation_id) DO NOTHING",
            &[&uid.as_str(), &owner, &ttl_secs(ttl)],
        )
        .await?;
        tx.execute("SELECT 1 FROM conversation_leases WHERE uid = $1 FOR UPDATE", &[&uid.as_str()])
            .await?;
        tx.execute(
            "UPDATE conversation_leases SET owner = $2, expires_at = now() + make_interval(secs => $3),
               turn_message_id = NULL, turn_request_id = NULL
             WHERE uid = $1",
            &[&uid.as_str(), &owner, &ttl_secs(ttl)],
        )
        .await?;
        tx.commit().await?;
        Ok(())
    }

    async fn release_user(&self, uid: &UserId, owner: &str) -> Result<(), Error> {
        unflushed(
            &self.pool,
            "UPDATE conversation_leases SET expires_at = LEAST(expires_at, now()) WHERE uid = $1 AND owner = $2",
            &[&uid.as_str(), &owner],
        )
        .await?;
        Ok(())
    }
}
