//! `index.db`: extracted passages in SQLite FTS5, the state of each file, the `queries`
//! table.
//!
//! Schema, in words: `files` holds one row per Nextcloud file id (etag, mime type, size,
//! extraction status, stale flag); `passages` holds the passages (file id, heading path,
//! body, section offset) and `passages_fts` indexes their heading and body (external
//! content, kept in step by triggers); `queries` holds one row of counts per search.
//!
//! It must never store a user id, a user's path, a share, a token or query text: nothing
//! here can say who may read what, so nothing here can be wrong about it. All SQL is
//! static with bound parameters.

use std::collections::HashMap;
use std::path::Path;

use rusqlite::{Connection, OptionalExtension, params};

use super::chunk::Passage;
use super::error::IndexError;

/// bm25 weights for (heading, body): a word in the heading path says more about a
/// passage than the same word in its text.
const BM25_HEADING: f64 = 4.0;
const BM25_BODY: f64 = 1.0;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS files (
    file_id    INTEGER PRIMARY KEY,          -- Nextcloud oc:fileid
    etag       TEXT NOT NULL,                -- etag the passages were extracted from
    mime       TEXT NOT NULL,                -- content type Nextcloud reported
    size       INTEGER NOT NULL,
    status     TEXT NOT NULL CHECK (status IN ('indexed', 'failed')),
    detail     TEXT,                         -- failure label, never document content
    stale      INTEGER NOT NULL DEFAULT 0,   -- set by the webhook: re-extract before use
    passages   INTEGER NOT NULL DEFAULT 0,
    updated_ms INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS passages (
    id             INTEGER PRIMARY KEY,
    file_id        INTEGER NOT NULL,
    heading        TEXT NOT NULL,
    body           TEXT NOT NULL,
    section_offset INTEGER NOT NULL          -- character offset of the parent section
);
CREATE INDEX IF NOT EXISTS passages_by_file ON passages(file_id);
CREATE VIRTUAL TABLE IF NOT EXISTS passages_fts USING fts5(
    heading, body,
    content = 'passages', content_rowid = 'id',
    tokenize = 'unicode61 remove_diacritics 2'
);
CREATE TRIGGER IF NOT EXISTS passages_ai AFTER INSERT ON passages BEGIN
    INSERT INTO passages_fts(rowid, heading, body) VALUES (new.id, new.heading, new.body);
END;
CREATE TRIGGER IF NOT EXISTS passages_ad AFTER DELETE ON passages BEGIN
    INSERT INTO passages_fts(passages_fts, rowid, heading, body)
    VALUES ('delete', old.id, old.heading, old.body);
END;
CREATE TABLE IF NOT EXISTS queries (
    id          INTEGER PRIMARY KEY,
    at_ms       INTEGER NOT NULL,
    terms       INTEGER NOT NULL,            -- how many words were searched (not which)
    mode        TEXT NOT NULL,               -- all | any: how the words were combined
    candidates  INTEGER NOT NULL,            -- files FTS5 proposed and we asked about
    survivors   INTEGER NOT NULL,            -- files Nextcloud returned to the caller
    returned    INTEGER NOT NULL,            -- passages in the answer
    refreshed   INTEGER NOT NULL,            -- survivors re-extracted (etag changed)
    warmed      INTEGER NOT NULL,            -- files extracted by the warm-up
    outcome     TEXT NOT NULL,               -- ok | failed
    duration_ms INTEGER NOT NULL
);
";

/// What the index knows about one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileState {
    pub etag: String,
    pub failed: bool,
    pub stale: bool,
}

impl FileState {
    /// True when the stored extraction (or failure) is for this etag and not marked stale.
    pub fn is_current(&self, etag: &str) -> bool {
        !self.stale && self.etag == etag
    }
}

/// A ranked passage: its id, file and bm25 score (lower is better).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Hit {
    pub passage_id: i64,
    pub file_id: i64,
    pub score: f64,
}

/// What a passage shows once it is allowed to be shown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shown {
    pub heading: String,
    pub section_offset: i64,
    pub snippet: String,
}

/// One row of the `queries` table.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct QueryRecord {
    pub terms: usize,
    pub mode: &'static str,
    pub candidates: usize,
    pub survivors: usize,
    pub returned: usize,
    pub refreshed: usize,
    pub warmed: usize,
    pub failed: bool,
    pub duration_ms: u64,
}

/// The index database. Synchronous: callers run it on a blocking thread.
pub struct Store {
    conn: Connection,
}

fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

fn to_i64(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

impl Store {
    /// Opens (creating if needed) the index at `path`, in WAL mode.
    pub fn open(path: &Path) -> Result<Store, IndexError> {
        let conn = Connection::open(path)?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        conn.busy_timeout(std::time::Duration::from_secs(5))?;
        Store::init(conn)
    }

    /// A private in-memory index (tests and benchmarks).
    pub fn open_in_memory() -> Result<Store, IndexError> {
        Store::init(Connection::open_in_memory()?)
    }

    fn init(conn: Connection) -> Result<Store, IndexError> {
        conn.execute_batch(SCHEMA)?;
        Ok(Store { conn })
    }

    /// The known state of each of `ids` (ids the index has never seen are absent).
    pub fn file_states(&self, ids: &[i64]) -> Result<HashMap<i64, FileState>, IndexError> {
        let json = serde_json::to_string(ids).map_err(|e| IndexError::Task(e.to_string()))?;
        let mut stmt = self.conn.prepare_cached(
            "SELECT file_id, etag, status = 'failed', stale FROM files
             WHERE file_id IN (SELECT value FROM json_each(?1))",
        )?;
        let rows = stmt.query_map([json], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                FileState {
                    etag: r.get(1)?,
                    failed: r.get(2)?,
                    stale: r.get(3)?,
                },
            ))
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Replaces a file's passages with a fresh extraction. Returns the id range of the new
    /// passages (`None` when the document has no text).
    pub fn replace_file(
        &mut self,
        file_id: i64,
        etag: &str,
        mime: &str,
        size: u64,
        passages: &[Passage],
    ) -> Result<Option<std::ops::RangeInclusive<i64>>, IndexError> {
        let tx = self.conn.savepoint()?;
        tx.execute("DELETE FROM passages WHERE file_id = ?1", [file_id])?;
        let mut first = None;
        let mut last = 0;
        {
            let mut ins = tx.prepare_cached("INSERT INTO passages (file_id, heading, body, section_offset) VALUES (?1, ?2, ?3, ?4)")?;
            for p in passages {
                ins.execute(params![file_id, p.heading, p.body, to_i64(p.section_offset)])?;
                last = tx.last_insert_rowid();
                first.get_or_insert(last);
            }
        }
        tx.execute(
            "INSERT INTO files (file_id, etag, mime, size, status, detail, stale, passages, updated_ms)
             VALUES (?1, ?2, ?3, ?4, 'indexed', NULL, 0, ?5, ?6)
             ON CONFLICT(file_id) DO UPDATE SET etag = excluded.etag, mime = excluded.mime,
                 size = excluded.size, status = 'indexed', detail = NULL, stale = 0,
                 passages = excluded.passages, updated_ms = excluded.updated_ms",
            params![file_id, etag, mime, to_i64(size as usize), to_i64(passages.len()), now_ms()],
        )?;
        tx.commit()?;
        Ok(first.map(|first| first..=last))
    }

    /// Records that this etag of a file could not be extracted: its old passages go, and
    /// it is not tried again until its etag changes or it is marked stale.
    pub fn record_failure(&mut self, file_id: i64, etag: &str, mime: &str, size: u64, detail: &str) -> Result<(), IndexError> {
        let tx = self.conn.savepoint()?;
        tx.execute("DELETE FROM passages WHERE file_id = ?1", [file_id])?;
        tx.execute(
            "INSERT INTO files (file_id, etag, mime, size, status, detail, stale, passages, updated_ms)
             VALUES (?1, ?2, ?3, ?4, 'failed', ?5, 0, 0, ?6)
             ON CONFLICT(file_id) DO UPDATE SET etag = excluded.etag, mime = excluded.mime,
                 size = excluded.size, status = 'failed', detail = excluded.detail, stale = 0,
                 passages = 0, updated_ms = excluded.updated_ms",
            params![file_id, etag, mime, to_i64(size as usize), detail, now_ms()],
        )?;
        tx.commit()?;
        Ok(())
    }

    /// Webhook: the file changed. Its passages stay searchable as candidates but are
    /// re-extracted before anything of them is returned. True when the file was known.
    pub fn mark_stale(&self, file_id: i64) -> Result<bool, IndexError> {
        Ok(self.conn.execute("UPDATE files SET stale = 1 WHERE file_id = ?1", [file_id])? > 0)
    }

    /// Webhook: the file is gone. Its passages and row are removed. True when known.
    pub fn mark_gone(&mut self, file_id: i64) -> Result<bool, IndexError> {
        let tx = self.conn.savepoint()?;
        tx.execute("DELETE FROM passages WHERE file_id = ?1", [file_id])?;
        let n = tx.execute("DELETE FROM files WHERE file_id = ?1", [file_id])?;
        tx.commit()?;
        Ok(n > 0)
    }

    /// How many passages match `expr`, counting at most `cap + 1` rows (so a very common
    /// word costs a bounded scan).
    pub fn match_count_capped(&self, expr: &str, cap: usize) -> Result<usize, IndexError> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT count(*) FROM (SELECT 1 FROM passages_fts WHERE passages_fts MATCH ?1 LIMIT ?2)")?;
        let n: i64 = stmt.query_row(params![expr, to_i64(cap + 1)], |r| r.get(0))?;
        Ok(usize::try_from(n).unwrap_or(0))
    }

    /// The best `limit` passages for `expr` by bm25, among at most `scan_cap` matching
    /// rows. The cap is what keeps a query for very common words fast: without it bm25
    /// would be computed for every matching row of the corpus.
    pub fn rank(&self, expr: &str, scan_cap: usize, limit: usize) -> Result<Vec<Hit>, IndexError> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT s.id, p.file_id, s.score FROM (
                 SELECT rowid AS id, bm25(passages_fts, ?3, ?4) AS score
                 FROM passages_fts WHERE passages_fts MATCH ?1 LIMIT ?2
             ) AS s JOIN passages AS p ON p.id = s.id
             ORDER BY s.score LIMIT ?5",
        )?;
        let rows = stmt.query_map(params![expr, to_i64(scan_cap), BM25_HEADING, BM25_BODY, to_i64(limit)], |r| {
            Ok(Hit {
                passage_id: r.get(0)?,
                file_id: r.get(1)?,
                score: r.get(2)?,
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// The newest `limit` passages matching `expr`, without bm25 (for queries made only of
    /// words in nearly every passage). Scores rise with age so the order survives sorting.
    pub fn newest(&self, expr: &str, limit: usize) -> Result<Vec<Hit>, IndexError> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT s.id, p.file_id FROM (
                 SELECT rowid AS id FROM passages_fts WHERE passages_fts MATCH ?1
                 ORDER BY rowid DESC LIMIT ?2
             ) AS s JOIN passages AS p ON p.id = s.id
             ORDER BY s.id DESC",
        )?;
        let rows = stmt.query_map(params![expr, to_i64(limit)], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?)))?;
        let mut out = Vec::with_capacity(limit);
        for (i, row) in rows.enumerate() {
            let (passage_id, file_id) = row?;
            out.push(Hit {
                passage_id,
                file_id,
                score: i as f64,
            });
        }
        Ok(out)
    }

    /// Passages matching `expr` among the rowids `ids` (a freshly re-extracted file).
    pub fn rank_within(&self, expr: &str, ids: std::ops::RangeInclusive<i64>, file_id: i64) -> Result<Vec<Hit>, IndexError> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT rowid, bm25(passages_fts, ?4, ?5) FROM passages_fts
             WHERE passages_fts MATCH ?1 AND rowid BETWEEN ?2 AND ?3",
        )?;
        let rows = stmt.query_map(params![expr, ids.start(), ids.end(), BM25_HEADING, BM25_BODY], |r| {
            Ok(Hit {
                passage_id: r.get(0)?,
                file_id,
                score: r.get(1)?,
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Heading, offset and a highlighted snippet of one passage, if it still exists.
    pub fn show(&self, expr: &str, passage_id: i64) -> Result<Option<Shown>, IndexError> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT p.heading, p.section_offset, snippet(passages_fts, 1, '**', '**', '…', 32)
             FROM passages_fts JOIN passages AS p ON p.id = passages_fts.rowid
             WHERE passages_fts MATCH ?1 AND passages_fts.rowid = ?2",
        )?;
        Ok(stmt
            .query_row(params![expr, passage_id], |r| {
                Ok(Shown {
                    heading: r.get(0)?,
                    section_offset: r.get(1)?,
                    snippet: r.get(2)?,
                })
            })
            .optional()?)
    }

    pub fn record_query(&self, q: &QueryRecord) -> Result<(), IndexError> {
        self.conn
            .prepare_cached(
                "INSERT INTO queries (at_ms, terms, mode, candidates, survivors, returned, refreshed,
                                  warmed, outcome, duration_ms)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
            )?
            .execute(params![
                now_ms(),
                to_i64(q.terms),
                q.mode,
                to_i64(q.candidates),
                to_i64(q.survivors),
                to_i64(q.returned),
                to_i64(q.refreshed),
                to_i64(q.warmed),
                if q.failed { "failed" } else { "ok" },
                i64::try_from(q.duration_ms).unwrap_or(i64::MAX),
            ])?;
        Ok(())
    }

    /// The most recent `n` rows of the `queries` table, newest first.
    pub fn recent_queries(&self, n: usize) -> Result<Vec<QueryRecord>, IndexError> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT terms, mode, candidates, survivors, returned, refreshed, warmed, outcome, duration_ms
             FROM queries ORDER BY id DESC LIMIT ?1",
        )?;
        let rows = stmt.query_map([to_i64(n)], |r| {
            let count = |i: usize| r.get::<_, i64>(i).map(|v| usize::try_from(v).unwrap_or(0));
            Ok(QueryRecord {
                terms: count(0)?,
                mode: if r.get::<_, String>(1)? == "any" { "any" } else { "all" },
                candidates: count(2)?,
                survivors: count(3)?,
                returned: count(4)?,
                refreshed: count(5)?,
                warmed: count(6)?,
                failed: r.get::<_, String>(7)? == "failed",
                duration_ms: u64::try_from(r.get::<_, i64>(8)?).unwrap_or(0),
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Counts of files and passages (for tests, benchmarks and operators).
    pub fn counts(&self) -> Result<(usize, usize), IndexError> {
        let files: i64 = self.conn.query_row("SELECT count(*) FROM files", [], |r| r.get(0))?;
        let passages: i64 = self.conn.query_row("SELECT count(*) FROM passages", [], |r| r.get(0))?;
        Ok((usize::try_from(files).unwrap_or(0), usize::try_from(passages).unwrap_or(0)))
    }

    /// Runs `f` in one transaction (bulk loading in benchmarks).
    pub fn bulk<T>(&mut self, f: impl FnOnce(&mut Store) -> Result<T, IndexError>) -> Result<T, IndexError> {
        self.conn.execute_batch("BEGIN")?;
        match f(self) {
            Ok(v) => {
                self.conn.execute_batch("COMMIT")?;
                Ok(v)
            }
            Err(e) => {
                let _ = self.conn.execute_batch("ROLLBACK");
                Err(e)
            }
        }
    }

    /// Merges FTS5 segments (after a bulk load).
    pub fn optimize(&self) -> Result<(), IndexError> {
        self.conn
            .execute("INSERT INTO passages_fts(passages_fts) VALUES ('optimize')", [])?;
        Ok(())
    }
}

#[cfg(test)]
mod tests;
