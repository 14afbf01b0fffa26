//! The PostgreSQL implementation of the stores, used when `TAMEBI_DATABASE_URL` names a
//! `postgres://` database: chat, audit and memory in one database, shared by every
//! orchestrator instance (docs/scale-out.md).
//!
//! - [`connect`]: the connection pool (deadpool over tokio-postgres) and the migrations.
//! - [`chat`], [`audit`], [`memory`]: the same operations as the SQLite files, with the same
//!   tables, columns and stored strings.
//! - [`lease`]: who runs which conversation; [`replay`]: G1's replay records, shared.
//!
//! Migrations are SQL files in `migrations/`, numbered, compiled into the binary and applied
//! at start in order, each once, under an advisory lock so two instances starting together
//! do not race. A migration is never edited once released: a change is a new file.
//!
//! Every query is keyed by the signed uid, exactly as in SQLite. This module never decides
//! what a user may do; it stores what the turn and the person did.

pub mod audit;
pub mod chat;
pub mod lease;
pub mod memory;
pub mod replay;

use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod};
use tokio_postgres::NoTls;

use crate::error::Error;

/// The migrations, in order: (version, name, SQL).
const MIGRATIONS: &[(i32, &str, &str)] = &[
    (1, "initial", include_str!("migrations/0001_initial.sql")),
    (2, "leases", include_str!("migrations/0002_leases.sql")),
    (3, "replay_and_fencing", include_str!("migrations/0003_replay_and_fencing.sql")),
];

/// Key of the advisory lock that serialises migrations across instances ("tamebi" in ASCII).
const MIGRATION_LOCK: i64 = 0x7461_6d65_6269;

/// Most connections one instance holds. Writes are short transactions; more connections
/// than this only queue inside PostgreSQL instead of here.
const POOL_SIZE: usize = 16;

/// A pool of connections to the database at `url`, migrated to the current version.
pub async fn connect(url: &str) -> Result<Pool, Error> {
    let config: tokio_postgres::Config = url.parse().map_err(|e| Error::Internal(format!("TAMEBI_DATABASE_URL: {e}")))?;
    let manager = Manager::from_config(
        config,
        NoTls,
        ManagerConfig {
            recycling_method: RecyclingMethod::Fast,
        },
    );
    let pool = Pool::builder(manager)
        .max_size(POOL_SIZE)
        .runtime(deadpool_postgres::Runtime::Tokio1)
        .wait_timeout(Some(std::time::Duration::from_secs(10)))
        .create_timeout(Some(std::time::Duration::from_secs(10)))
        .build()
        .map_err(|e| Error::Internal(format!("postgres pool: {e}")))?;
    migrate(&pool).await?;
    Ok(pool)
}

/// Applies every migration not applied yet, all in one transaction (PostgreSQL DDL is
/// transactional: a failed migration leaves the schema as it was).
pub async fn migrate(pool: &Pool) -> Result<(), Error> {
    let mut client = pool.get().await?;
    let tx = client.transaction().await?;
    // Held until this transaction ends: a second instance waits, then finds all applied.
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK]).await?;
    tx.batch_execute(
        "CREATE TABLE IF NOT EXISTS schema_migrations (
             version INTEGER PRIMARY KEY,
             name TEXT NOT NULL,
             applied_at TIMESTAMPTZ NOT NULL DEFAULT now()
         )",
    )
    .await?;
    let applied: Vec<i32> = tx
        .query("SELECT version FROM schema_migrations", &[])
        .await?
        .iter()
        .map(|r| r.get(0))
        .collect();
    if let Some(newest) = applied.iter().max()
        && *newest > MIGRATIONS.last().map_or(0, |m| m.0)
    {
        return Err(Error::Internal(format!(
            "the database is at schema version {newest}, newer than this binary knows: upgrade tamebi"
        )));
    }
    for (version, name, sql) in MIGRATIONS {
        if applied.contains(version) {
            continue;
        }
        tx.batch_execute(sql).await?;
        tx.execute("INSERT INTO schema_migrations (version, name) VALUES ($1, $2)", &[version, name])
            .await?;
        tracing::info!(version, name, "database migration applied");
    }
    tx.commit().await?;
    Ok(())
}

/// Milliseconds since the epoch, the unit every timestamp column holds.
fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

/// Lease and replay writes do not wait for the WAL flush: both are soft state whose loss in a
/// PostgreSQL crash costs little (see their modules), and not waiting takes a disk flush off
/// every signed request, conversation start, turn start and end, and renewal.
const NO_FLUSH: &str = "SET LOCAL synchronous_commit TO OFF";

/// Runs one statement in its own transaction without waiting for the flush; the number of
/// rows it changed.
async fn unflushed(pool: &Pool, sql: &str, params: &[&(dyn tokio_postgres::types::ToSql + Sync)]) -> Result<u64, Error> {
    let mut client = pool.get().await?;
    let tx = client.transaction().await?;
    tx.batch_execute(NO_FLUSH).await?;
    let n = tx.execute(sql, params).await?;
    tx.commit().await?;
    Ok(n)
}

/// A chore due at most once per period (unix seconds), claimed by one caller at a time.
struct Every {
    period: i64,
    last: std::sync::atomic::AtomicI64,
}

impl Every {
    fn new(period: i64) -> Every {
        Every {
            period,
            last: std::sync::atomic::AtomicI64::new(0),
        }
    }

    /// True for exactly one caller once the period has passed since the last claim.
    fn due(&self, now: i64) -> bool {
        use std::sync::atomic::Ordering;
        let last = self.last.load(Ordering::Relaxed);
        now - last >= self.period && self.last.compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed).is_ok()
    }
}
