//! The document index behind `files_grep` (issue 5): full-text search inside documents
//! that cannot leak.
//!
//! What it owns: `index.db` (SQLite FTS5, WAL) holding extracted text keyed by Nextcloud
//! file id and etag, the extraction of documents into text with their heading structure,
//! the splitting of that text into passages, the search flow and the webhook that marks
//! rows stale.
//!
//! What it must never do: know who may read what. There is no user id, no user path and
//! no share information anywhere in `index.db`. The corpus is ranked as a whole and every
//! candidate is put back to Nextcloud under the caller's own token (one WebDAV SEARCH by
//! file ids per page); whatever Nextcloud does not return to the caller is dropped before
//! any of its text is looked at. A failed verification fails closed. It never fetches
//! anything without a caller's token: the index warms only through searches of people who
//! can open the files, and the webhook only marks rows.
//!
//! Modules:
//! - [`store`]: the SQLite schema, passages, file states, the `queries` table.
//! - [`extract`]: bytes → text + headings, per format (shared with `files_read`).
//! - [`chunk`]: hierarchical splitting of extracted text into passages.
//! - [`query`]: turning any user text into a safe FTS5 query.
//! - [`dav`]: the WebDAV SEARCH bodies the index sends and the multistatus it reads.
//! - [`warm`]: discovering the caller's unknown or stale files and extracting some.
//! - [`search`]: the `files_grep` flow (warm, rank, verify, refresh, record).
//! - [`tool`]: the `files_grep` MCP tool's arguments and answer shape (declared in `crate::tools::files`).
//! - [`webhook`]: `POST /webhooks/nextcloud`, which only marks rows stale or gone.

pub mod chunk;
pub mod dav;
pub mod error;
pub mod extract;
pub mod query;
pub mod search;
pub mod store;
pub mod tool;
pub mod warm;
pub mod webhook;

pub use error::IndexError;
pub use search::{GrepRequest, GrepResult, Passage};
pub use store::Store;

use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Limits of one `files_grep` call. Plain values so tests and benchmarks can set them.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Time the warm-up may spend extracting the caller's unknown files.
    pub warm_time: Duration,
    /// Bytes the warm-up may download per call.
    pub warm_bytes: usize,
    /// Most matching rows bm25 is computed for (keeps a very common word fast).
    pub scan_cap: usize,
    /// A word matching more rows than this is dropped when rarer words remain.
    pub common_cap: usize,
    /// Candidate passages taken from the ranking.
    pub candidate_passages: usize,
    /// File ids verified per SEARCH round trip.
    pub verify_page: usize,
    /// Most verification round trips per call.
    pub max_pages: usize,
    /// Most passages returned from one file.
    pub per_file: usize,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            warm_time: Duration::from_millis(1500),
            warm_bytes: 32 * 1024 * 1024,
            scan_cap: 8_000,
            common_cap: 10_000,
            candidate_passages: 400,
            verify_page: 50,
            max_pages: 4,
            per_file: 3,
        }
    }
}

/// A shared handle on the index: the store behind a lock, used only from blocking
/// threads (SQLite work never runs on the async executor).
#[derive(Clone)]
pub struct Index {
    store: Arc<Mutex<Store>>,
    pub settings: Settings,
}

impl Index {
    pub fn new(store: Store, settings: Settings) -> Index {
        Index {
            store: Arc::new(Mutex::new(store)),
            settings,
        }
    }

    /// Opens `index.db` at `path` (creating its folder) with default settings.
    pub fn open(path: &std::path::Path) -> Result<Index, IndexError> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| IndexError::Task(format!("cannot create {}: {e}", dir.display())))?;
        }
        Ok(Index::new(Store::open(path)?, Settings::default()))
    }

    /// Runs `f` with the store on a blocking thread.
    pub async fn with<T, F>(&self, f: F) -> Result<T, IndexError>
    where
        T: Send + 'static,
        F: FnOnce(&mut Store) -> Result<T, IndexError> + Send + 'static,
    {
        let store = Arc::clone(&self.store);
        tokio::task::spawn_blocking(move || {
            // A panic while holding the lock cannot leave SQLite half-written (every
            // write is a transaction), so a poisoned lock is still usable.
            let mut guard = store.lock().unwrap_or_else(|e| e.into_inner());
            f(&mut guard)
        })
        .await
        .map_err(|e| IndexError::Task(e.to_string()))?
    }
}
