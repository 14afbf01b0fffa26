//! The shared half of G1's replay guard: which signed requests some instance already
//! accepted, when several instances share a PostgreSQL database.
//!
//! `auth::replay` owns the guard and the decision; this store only answers "first time seen?"
//! for an opaque digest, atomically across every instance (a unique key in the database, so
//! of two instances racing with the same request exactly one is told "first"). With SQLite
//! there is one instance and no shared store: the guard keeps its nonces in memory.
//!
//! It never sees a uid, a body, a signature or a credential: only a hash and an expiry.

use crate::error::Error;

/// "Was this request seen before?", shared by every instance of one database.
#[async_trait::async_trait]
pub trait SeenRequests: Send + Sync {
    /// Records `digest` as seen until unix second `expires_at`. True when no instance had
    /// recorded it yet (this is the first use), false when one had (a replay). `now` is the
    /// caller's clock, the one its skew check used; records long past their expiry are pruned.
    async fn first_seen(&self, digest: &[u8; 32], expires_at: i64, now: i64) -> Result<bool, Error>;
}
