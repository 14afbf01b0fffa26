//! A SQLite file with one writer thread and group commit.
//!
//! Writes are closures sent to the writer thread; it runs every queued write inside one
//! transaction (each in its own savepoint, so one failure does not undo the others) and
//! answers only after COMMIT, so "written" means durable against a process kill. Reads run
//! on a separate connection in `spawn_blocking`. WAL mode lets them proceed during writes.

use rusqlite::Connection;
use std::path::Path;
use std::sync::{Arc, Mutex};
use tokio::sync::oneshot;

use crate::error::Error;

type Completion = Box<dyn FnOnce(bool) + Send>;
/// A write: runs its SQL, says whether it succeeded, and hands back how to answer its caller.
type Job = Box<dyn FnOnce(&Connection) -> (bool, Completion) + Send>;

/// Most writes committed together in one transaction.
const MAX_BATCH: usize = 256;

/// What the writer thread receives: a write, or `None` to commit what is queued and stop.
type Message = Option<Job>;

/// Handle to one database file. Cloning shares the writer and the reader.
#[derive(Clone)]
pub struct Db {
    jobs: std::sync::mpsc::Sender<Message>,
    reader: Arc<Mutex<Connection>>,
    writer_done: Arc<Mutex<Option<std::thread::JoinHandle<()>>>>,
}

impl Db {
    /// Opens (creating if needed) the file and applies `schema` (idempotent SQL).
    pub fn open(path: &Path, schema: &str) -> Result<Db, Error> {
        let writer = open_conn(path)?;
        writer.execute_batch(schema)?;
        // Checkpoints run on their own thread (below), never inside a user's write.
        writer.pragma_update(None, "wal_autocheckpoint", 0)?;
        let reader = open_conn(path)?;
        let checkpointer = open_conn(path)?;
        let (tx, rx) = std::sync::mpsc::channel::<Message>();
        let (stop_tx, stop_rx) = std::sync::mpsc::channel::<()>();
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        std::thread::Builder::new()
            .name(format!("db-checkpoint-{name}"))
            .spawn(move || checkpoint_loop(checkpointer, stop_rx))
            .map_err(|e| Error::Internal(format!("spawn db checkpointer: {e}")))?;
        let handle = std::thread::Builder::new()
            .name(format!("db-writer-{name}"))
            .spawn(move || {
                writer_loop(writer, rx);
                drop(stop_tx);
            })
            .map_err(|e| Error::Internal(format!("spawn db writer: {e}")))?;
        Ok(Db {
            jobs: tx,
            reader: Arc::new(Mutex::new(reader)),
            writer_done: Arc::new(Mutex::new(Some(handle))),
        })
    }

    /// Runs `f` on the writer thread inside a transaction; resolves after COMMIT.
    pub async fn write<T, F>(&self, f: F) -> Result<T, Error>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> Result<T, Error> + Send + 'static,
    {
        self.write_then(f, || {}).await
    }

    /// [`Db::write`], and `after` runs on the writer thread once the transaction has ended
    /// (committed or not), even when nobody awaits the result any more (a cancelled request):
    /// what must follow every commit, such as dropping a cache of what it changed.
    pub async fn write_then<T, F, A>(&self, f: F, after: A) -> Result<T, Error>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> Result<T, Error> + Send + 'static,
        A: FnOnce() + Send + 'static,
    {
        let (tx, rx) = oneshot::channel::<Result<T, Error>>();
        let job: Job = Box::new(move |conn| {
            let result = f(conn);
            let ok = result.is_ok();
            let done: Completion = Box::new(move |committed| {
                after();
                let result = match (committed, result) {
                    (true, r) => r,
                    (false, _) => Err(Error::Internal("transaction did not commit".into())),
                };
                let _ = tx.send(result);
            });
            (ok, done)
        });
        self.jobs.send(Some(job)).map_err(|_| Error::ShuttingDown)?;
        rx.await.map_err(|_| Error::Internal("db writer stopped".into()))?
    }

    /// Runs `f` on the reader connection off the async threads.
    pub async fn read<T, F>(&self, f: F) -> Result<T, Error>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> Result<T, Error> + Send + 'static,
    {
        let reader = self.reader.clone();
        tokio::task::spawn_blocking(move || {
            let conn = reader.lock().map_err(|_| Error::Internal("reader lock poisoned".into()))?;
            f(&conn)
        })
        .await
        .map_err(|e| Error::Internal(format!("db read task: {e}")))?
    }

    /// Copies every committed page back into the database file and truncates the WAL to
    /// zero bytes, so no older page image survives in it (used after an erasure, with
    /// `secure_delete` on, so deleted bytes are gone from disk and not only unreachable).
    pub async fn checkpoint_truncate(&self) -> Result<(), Error> {
        self.read(|c| {
            for _ in 0..100 {
                let (busy, _log, _done): (i64, i64, i64) =
                    c.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
                if busy == 0 {
                    return Ok(());
                }
                // Another checkpoint or a reader is in the way: it finishes within moments.
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            Err(Error::Internal("the WAL could not be checkpointed".into()))
        })
        .await
    }

    /// Stops the writer after it has committed everything queued, and waits for it.
    /// Used at shutdown; every clone's later writes then fail with `ShuttingDown`.
    pub async fn close(&self) {
        let _ = self.jobs.send(None);
        let handle = self.writer_done.lock().ok().and_then(|mut h| h.take());
        if let Some(h) = handle {
            let _ = tokio::task::spawn_blocking(move || h.join()).await;
        }
    }
}

/// A connection set up as every connection to a Tamebi database must be (also the one a
/// migration uses: a table it drops must leave zeros behind, not a user's text).
pub(crate) fn open_conn(path: &Path) -> Result<Connection, Error> {
    let conn = Connection::open(path)?;
    // WAL + NORMAL: a committed transaction survives a process kill (only an OS crash can
    // lose the last ones); readers never block the writer.
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    conn.pragma_update(None, "foreign_keys", "ON")?;
    // Deleted content is overwritten with zeros, not merely unlinked: an erasure must leave
    // nothing of the user in freed pages (the WAL is dealt with by `checkpoint_truncate`).
    conn.pragma_update(None, "secure_delete", "ON")?;
    conn.busy_timeout(std::time::Duration::from_secs(5))?;
    Ok(conn)
}

fn writer_loop(conn: Connection, rx: std::sync::mpsc::Receiver<Message>) {
    // Ends on `close` (after committing what was queued before it) or when every sender is
    // gone; the receiver then drops, so later writes fail with `ShuttingDown`.
    let mut stopping = false;
    while !stopping && let Ok(first) = rx.recv() {
        let mut batch: Vec<Job> = first.into_iter().collect();
        stopping = batch.is_empty();
        while batch.len() < MAX_BATCH {
            match rx.try_recv() {
                Ok(Some(job)) => batch.push(job),
                Ok(None) => stopping = true,
                Err(_) => break,
            }
        }
        if !batch.is_empty() {
            run_batch(&conn, batch);
        }
    }
    let _ = conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE);");
}

/// Folds the WAL back into the database once a second, PASSIVE so it never waits for (or
/// blocks) the writer; ends when the writer does.
fn checkpoint_loop(conn: Connection, stop: std::sync::mpsc::Receiver<()>) {
    while let Err(std::sync::mpsc::RecvTimeoutError::Timeout) = stop.recv_timeout(std::time::Duration::from_secs(1)) {
        let _ = conn.execute_batch("PRAGMA wal_checkpoint(PASSIVE);");
    }
}

fn run_batch(conn: &Connection, batch: Vec<Job>) {
    if control(conn, "BEGIN IMMEDIATE").is_err() {
        for job in batch {
            // Run each alone so its caller still gets an answer.
            let (_, done) = job(conn);
            done(true);
        }
        return;
    }
    // A lone write (every write at low load) needs no savepoint: if it fails, the whole
    // transaction is rolled back, which undoes exactly that write.
    let alone = batch.len() == 1;
    let mut completions = Vec::with_capacity(batch.len());
    let mut failed_alone = false;
    for job in batch {
        let savepoint_ok = !alone && control(conn, "SAVEPOINT job").is_ok();
        let (ok, done) = job(conn);
        if savepoint_ok {
            // A failed write is undone alone; its neighbours in the batch still commit.
            if !ok {
                let _ = control(conn, "ROLLBACK TO job");
            }
            let _ = control(conn, "RELEASE job");
        }
        failed_alone = alone && !ok;
        completions.push(done);
    }
    // A failed lone write answers its error (the job reported it), not "did not commit".
    let committed = if failed_alone {
        let _ = control(conn, "ROLLBACK");
        true
    } else {
        let committed = control(conn, "COMMIT").is_ok();
        if !committed {
            let _ = control(conn, "ROLLBACK");
        }
        committed
    };
    for done in completions {
        done(committed);
    }
}

/// A transaction-control statement, parsed once per connection (the writer runs these
/// around every batch).
fn control(conn: &Connection, sql: &str) -> rusqlite::Result<()> {
    conn.prepare_cached(sql)?.execute([]).map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn concurrent_writes_commit_and_are_readable() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(&dir.path().join("t.db"), "CREATE TABLE IF NOT EXISTS t (n INTEGER NOT NULL);").unwrap();
        let mut tasks = Vec::new();
        for n in 0..200 {
            let db = db.clone();
            #[expect(clippy::disallowed_methods, reason = "every handle is awaited below")]
            tasks.push(tokio::spawn(async move {
                db.write(move |c| Ok(c.execute("INSERT INTO t (n) VALUES (?1)", [n])?)).await
            }));
        }
        for t in tasks {
            assert_eq!(t.await.unwrap().unwrap(), 1);
        }
        let count: i64 = db
            .read(|c| Ok(c.query_row("SELECT count(*) FROM t", [], |r| r.get(0))?))
            .await
            .unwrap();
        assert_eq!(count, 200);
        // A failing write does not undo its batch neighbours.
        let bad = db.write(|c| Ok(c.execute("INSERT INTO missing VALUES (1)", [])?)).await;
        assert!(bad.is_err());
        // A lone write that fails half-way leaves nothing and answers its own error.
        let half = db
            .write(|c| {
                c.execute("INSERT INTO t (n) VALUES (-1)", [])?;
                Ok(c.execute("INSERT INTO missing VALUES (1)", [])?)
            })
            .await;
        assert!(half.unwrap_err().to_string().contains("missing"));
        let after = db.write(|c| Ok(c.execute("INSERT INTO t (n) VALUES (200)", [])?)).await;
        assert_eq!(after.unwrap(), 1);
        db.close().await;
        let reopened = Connection::open(dir.path().join("t.db")).unwrap();
        let count: i64 = reopened.query_row("SELECT count(*) FROM t", [], |r| r.get(0)).unwrap();
        assert_eq!(count, 201);
        let negative: i64 = reopened.query_row("SELECT count(*) FROM t WHERE n < 0", [], |r| r.get(0)).unwrap();
        assert_eq!(negative, 0);
    }
}
