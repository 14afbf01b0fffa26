//! The shared replay guard's table (migration 0003): one row per accepted signed request.

use deadpool_postgres::Pool;

use super::{Every, unflushed};
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
}

impl PgReplay {
    pub fn new(pool: Pool) -> PgReplay {
        PgReplay {
            pool,
            prune: Every::new(PRUNE_EVERY_SECS),
        }
    }
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
        // The primary key decides: of two instances inserting the same digest, the second
        // waits for the first to commit and then inserts nothing. A record is never replaced,
        // even once expired (an expired signature is refused by the skew check anyway).
        // Not waiting for the WAL flush: a PostgreSQL crash may forget the last accepted
        // requests, exactly as a restarted single instance forgets its in-memory ones.
        let inserted = unflushed(
            &self.pool,
            "INSERT INTO replay_nonces (digest, expires_at) VALUES ($1, $2) ON CONFLICT (digest) DO NOTHING",
            &[&digest.as_slice(), &expires_at],
        )
        .await?;
        Ok(inserted == 1)
    }
}
