//! Durable state behind three store traits — [`chat::ChatStore`], [`audit::AuditStore`],
//! [`memory::MemoryStore`] — with two implementations:
//!
//! - SQLite (the default): separate files because their lifecycles differ (erasing a user's
//!   chat must never touch the audit trail, and each can be backed up on its own). [`db`] is
//!   one writer thread per file with group commit plus a reader connection. Only chat.db's
//!   message saves of up to 16 KiB may commit on an async worker, and only while the process
//!   is quiet ([`db::Db::write_small`]); every other SQLite call runs off the async workers.
//! - PostgreSQL ([`postgres`]), when `TAMEBI_DATABASE_URL` is a `postgres://` URL: one
//!   database shared by several orchestrator instances (docs/scale-out.md).
//!
//! - [`key`]: the keys every query is made with, built only from a verified caller.
//! - [`chat`]: conversations, messages, pending approvals, summaries.
//! - [`audit`]: tool calls, approvals, dispatches, fingerprint changes.
//! - [`memory`]: the facts each user asked the assistant to remember.
//! - [`registry`]: servers, assistants and personal assistants managed inside Nextcloud.
//! - [`lease`]: one owner per conversation across instances, and the write fence.
//! - [`replay`]: G1's replay records shared across instances (PostgreSQL only).
//!
//! Every read and write of a conversation is keyed by the signed uid: a conversation id is
//! chosen by the client, so it is never trusted alone. Both implementations pass the same
//! suite (`suite`, run against SQLite files and a throwaway PostgreSQL cluster).

pub mod audit;
pub mod chat;
pub mod db;
pub mod key;
pub mod lease;
pub mod memory;
pub mod postgres;
pub mod registry;
pub mod replay;
#[cfg(test)]
mod suite;

use std::path::Path;
use std::sync::Arc;

use crate::config::{ConfigError, Database};
use crate::error::Error;

/// Where the stores live.
#[derive(Debug, Clone)]
pub enum Backend {
    /// chat.db, audit.db and memory.db in this directory.
    Sqlite(std::path::PathBuf),
    /// A PostgreSQL database, and how the connection to it is protected.
    Postgres(postgres::Target),
}

impl Backend {
    /// The store's piece of the configuration, checked at start (before anything listens).
    /// `TAMEBI_DATABASE_URL` unset keeps the SQLite files in `data_dir`; a `postgres://` (or
    /// `postgresql://`) URL selects PostgreSQL. Anything else is refused, so a typo never
    /// silently falls back to a local file that other instances cannot see. Its `sslmode`
    /// (disable, require, verify-full) and `TAMEBI_DATABASE_CA_FILE` are validated here too
    /// ([`postgres::Target`]).
    pub fn from_config(database: &Database, data_dir: &Path) -> Result<Backend, ConfigError> {
        let Some(url) = &database.url else {
            if database.ca_file.is_some() {
                return Err(ConfigError::Invalid {
                    var: "TAMEBI_DATABASE_CA_FILE",
                    why: "is only for TLS to PostgreSQL (TAMEBI_DATABASE_URL is unset)".into(),
                });
            }
            return Ok(Backend::Sqlite(data_dir.to_path_buf()));
        };
        let url = url.expose();
        let invalid = |why: &str| ConfigError::Invalid {
            var: "TAMEBI_DATABASE_URL",
            why: why.into(),
        };
        if !(url.starts_with("postgres://") || url.starts_with("postgresql://")) {
            return Err(invalid("must be a postgres:// URL (unset it to keep the SQLite files)"));
        }
        // Parsed now, so a malformed URL stops the start with this message (never echoing it:
        // it may hold a password).
        let target = postgres::Target::parse(url, database.ca_file.clone()).map_err(|why| invalid(&why))?;
        Ok(Backend::Postgres(target))
    }
}

/// The three stores of one process. Cloning shares them.
#[derive(Clone)]
pub struct Stores {
    pub chat: Arc<dyn chat::ChatStore>,
    pub audit: Arc<dyn audit::AuditStore>,
    pub memory: Arc<dyn memory::MemoryStore>,
    /// Who runs which conversation (shared only with PostgreSQL).
    pub leases: Arc<dyn lease::LeaseStore>,
    /// What admins and people registered inside Nextcloud (issue #30).
    pub registry: Arc<dyn registry::RegistryStore>,
    /// G1's replay records shared by every instance (PostgreSQL); `None` with SQLite, whose
    /// single instance keeps them in memory (`auth::replay`).
    pub replay: Option<Arc<dyn replay::SeenRequests>>,
    /// This instance's id: its name on leases, and what its chat writes and its turns' fact
    /// writes are fenced by.
    pub instance: String,
}

impl Stores {
    /// Opens (creating and migrating as needed) the stores of `backend`. `turns_running` is the
    /// process's count of running turns (`actors::running_turns`): SQLite's chat.db commits a
    /// turn's small writes inline while it is low (`db::Db::write_small`).
    pub async fn open(backend: &Backend, turns_running: db::TurnCount) -> Result<Stores, Error> {
        match backend {
            Backend::Sqlite(dir) => Self::open_sqlite(dir, turns_running).await,
            Backend::Postgres(target) => {
                let pool = postgres::connect(target).await?;
                let instance = lease::new_instance_id();
                Ok(Stores {
                    chat: Arc::new(postgres::chat::PgChat::new(pool.clone(), instance.clone())),
                    audit: Arc::new(postgres::audit::PgAudit::new(pool.clone())),
                    memory: Arc::new(postgres::memory::PgMemory::new(pool.clone(), instance.clone())),
                    leases: Arc::new(postgres::lease::PgLeases::new(pool.clone())),
                    registry: Arc::new(postgres::registry::PgRegistry::new(pool.clone())),
                    replay: Some(Arc::new(postgres::replay::PgReplay::new(pool))),
                    instance,
                })
            }
        }
    }

    async fn open_sqlite(dir: &Path, turns_running: db::TurnCount) -> Result<Stores, Error> {
        std::fs::create_dir_all(dir).map_err(|e| Error::Internal(format!("data dir {}: {e}", dir.display())))?;
        let chat = chat::SqliteChat::open(&dir.join("chat.db"), turns_running)?;
        Ok(Stores {
            leases: Arc::new(lease::SqliteLeases::new(&chat)),
            registry: Arc::new(registry::SqliteRegistry::open(&chat).await?),
            chat: Arc::new(chat),
            audit: Arc::new(audit::SqliteAudit::open(&dir.join("audit.db"))?),
            memory: Arc::new(memory::SqliteMemory::open(&dir.join("memory.db"))?),
            replay: None,
            instance: lease::new_instance_id(),
        })
    }

    /// Flushes every pending write and closes (at shutdown, after the actors stopped).
    pub async fn close(&self) {
        self.chat.close().await;
        self.audit.close().await;
        self.memory.close().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::test_vars::{base, with};

    fn backend(k: &str, v: &str) -> Result<Backend, ConfigError> {
        let c = with(k, v)?;
        Backend::from_config(&c.database, &c.data_dir)
    }

    #[test]
    fn the_database_url_and_its_tls_are_validated() {
        let c = crate::config::Config::from_vars(&base()).unwrap();
        assert!(matches!(
            Backend::from_config(&c.database, &c.data_dir).unwrap(),
            Backend::Sqlite(_)
        ));
        let err = backend("TAMEBI_DATABASE_URL", "mysql://db/t").unwrap_err().to_string();
        assert!(err.contains("TAMEBI_DATABASE_URL") && err.contains("postgres://"), "{err}");
        let err = backend("TAMEBI_DATABASE_URL", "postgres://u:hunter2@db.example/t?sslmode=prefer")
            .unwrap_err()
            .to_string();
        assert!(err.contains("sslmode=prefer is not supported") && !err.contains("hunter2"), "{err}");
        let err = backend("TAMEBI_DATABASE_CA_FILE", "/etc/ssl/ca.pem").unwrap_err().to_string();
        assert!(err.starts_with("TAMEBI_DATABASE_CA_FILE is invalid"), "{err}");
        let b = backend("TAMEBI_DATABASE_URL", "postgres://db.example/t?sslmode=disable").unwrap();
        assert!(matches!(b, Backend::Postgres(t) if t.tls == postgres::Tls::Off));
    }

    #[test]
    fn the_database_url_never_prints() {
        let c = with("TAMEBI_DATABASE_URL", "postgres://u:hunter2@db.example/t").unwrap();
        assert!(!format!("{c:?}").contains("hunter2"), "the configuration holds it as a Secret");
    }
}
