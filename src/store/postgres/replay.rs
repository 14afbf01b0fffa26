//! The shared replay guard's table (migration 0003): one row per accepted signed request.

use deadpool_postgres::Pool;

use super::batch::Batched;
use super::{Every, unflushed, unflushed_query};
use crate::error::Error;
use crate::store::replay::SeenRequests;

/// How long after its expiry a record is kept. Instances' clocks differ a little; a record
/// pruned by a fast clock while a slow one still accepts its signature would reopen the
/// window, so records stay well past the skew any sane deployment has.
const PRUNE_GRACE_SECS: i64 = 300;
/// How often one instance prunes (inline, in the request that finds it due).
const PRUNE_EVERY_SECS: i64 = 30;

pub struct PgReplay {
    pool: Pool,
    prune: Every,
    /// The records of requests arriving together, inserted by one statement.
    inserts: Batched<([u8; 32], i64), bool>,
}

impl PgReplay {
    pub fn new(pool: Pool) -> PgReplay {
        PgReplay {
            inserts: Batched::start(pool.clone(), insert_all),
            pool,
            prune: Every::new(PRUNE_EVERY_SECS),
        }
    }
}

/// Inserts every record of `batch` in one statement; for each, whether it was the first.
///
/// The primary key decides: of two instances inserting the same digest, the second waits for
/// the first to commit and then inserts nothing. A record is never replaced, even once expired
/// (an expired signature is refused by the skew check anyway). The statement returns the
/// digests it inserted; a digest twice in one batch is sent once, and only its first request
/// is told "first". Digests are sent sorted, so two instances' statements lock shared digests
/// in the same order and never deadlock.
async fn insert_all(pool: Pool, batch: Vec<([u8; 32], i64)>) -> Result<Vec<bool>, Error> {
    let mut sent: Vec<&([u8; 32], i64)> = batch.iter().collect();
    sent.sort_unstable_by_key(|a| a.0);
    sent.dedup_by(|a, b| a.0 == b.0);
    let digests: Vec<&[u8]> = sent.iter().map(|(d, _)| d.as_slice()).collect();
    let expiries: Vec<i64> = sent.iter().map(|(_, e)| *e).collect();
    let rows = unflushed_query(
        &pool,
        "INSERT INTO replay_nonces (digest, expires_at) SELECT * FROM unnest($1::bytea[], $2::bigint[])
         ON CONFLICT (digest) DO NOTHING RETURNING digest",
        &[&digests, &expiries],
    )
    .await?;
    let mut inserted = std::collections::HashSet::with_capacity(rows.len());
    for row in &rows {
        inserted.insert(row.try_get::<_, Vec<u8>>(0)?);
    }
    // The first request of each inserted digest takes it; a later one of the same is a replay.
    Ok(batch.iter().map(|(digest, _)| inserted.remove(digest.as_slice())).collect())
}

#[async_trait::async_trait]
impl SeenRequests for PgReplay {
    async fn first_seen(&self, digest: &[u8; 32], expires_at: i64, now: i64) -> Result<bool, Error> {
        if self.prune.due(now) {
            // Housekeeping: a failed prune is logged, never a refusal of this request.
            let pruned = unflushed(
                &self.pool,
                "DELETE FROM replay_nonces WHERE expires_at < $1",
                &[&(now - PRUNE_GRACE_SECS)],
            )
            .await;
            match pruned {
                Ok(pruned) => tracing::debug!(pruned, "expired replay records pruned"),
                Err(e) => tracing::warn!(error = %e, "could not prune expired replay records"),
            }
        }
        // Batched with the requests arriving at the same moment ([`insert_all`]). Not waiting
        // for the WAL flush: a PostgreSQL crash may forget the last accepted requests, exactly
        // as a restarted single instance forgets its in-memory ones.
        self.inserts.call((*digest, expires_at)).await
    }
}
