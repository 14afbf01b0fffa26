//! A SQLite file with one writer thread and group commit.
//!
//! Writes are closures sent to the writer thread; it runs every queued write inside one
//! transaction (each in its own savepoint, so one failure does not undo the others) and
//! answers only after COMMIT, so "written" means durable against a process kill. Reads run
//! on a separate connection in `spawn_blocking`. WAL mode lets them proceed during writes.
//!
//! At low load a small write on a turn's path ([`Db::write_small`]) may instead commit on the
//! calling thread, on the same writing connection (issue #16: two thread hand-offs fewer per
//! commit). Only when nothing is queued for or running on the writer thread, the connection is
//! free and the file's lock is free (it never waits for either), and the database's load probe
//! says the process is quiet (chat.db: no more turns running than tokio has workers). Under
//! load every write goes through the writer thread's group commit as before. The transaction,
//! its rollback on failure and "answered only after COMMIT" are the same on both paths, and so
//! is the order: a write sent earlier is committed, or queued ahead, before a later one runs.
//! An inline commit never waits for a lock, but it does the file I/O of its own transaction
//! (WAL writes, page reads on a cache miss) on the calling worker; hence small writes only.

use rusqlite::Connection;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::oneshot;

use crate::error::Error;

type Completion = Box<dyn FnOnce(bool) + Send>;
/// A write: runs its SQL, says whether it succeeded, and hands back how to answer its caller.
type Job = Box<dyn FnOnce(&Connection) -> (bool, Completion) + Send>;

/// Most writes committed together in one transaction.
const MAX_BATCH: usize = 256;

/// What the writer thread receives: a write, or `None` to commit what is queued and stop.
type Message = Option<Job>;

/// Says whether the process is quiet enough for a small write to commit inline.
type LoadProbe = Arc<dyn Fn() -> bool + Send + Sync>;

/// How long a write waits for another connection's lock on the file (the writer thread only).
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// Bytes a WAL file keeps once it starts over (SQLite's `journal_size_limit`).
const WAL_SIZE_LIMIT: i64 = 64 * 1024 * 1024;

/// How many turns the process runs now: chat.db's load signal for inline commits. The count
/// is owned by `actors::running_turns::RunningTurns`; the store only reads it.
pub type TurnCount = Arc<dyn Fn() -> usize + Send + Sync>;

/// Handle to one database file. Cloning shares the writer and the reader.
#[derive(Clone)]
pub struct Db {
    jobs: std::sync::mpsc::Sender<Message>,
    reader: Arc<Mutex<Connection>>,
    /// The writing connection: the writer thread's, lent to an inline commit when it is idle.
    writer: Arc<Mutex<Connection>>,
    /// Writes sent to the writer thread and not yet answered.
    queued: Arc<AtomicUsize>,
    closed: Arc<AtomicBool>,
    /// `None`: every write goes through the writer thread.
    inline_when: Option<LoadProbe>,
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
        let writer = Arc::new(Mutex::new(writer));
        std::thread::Builder::new()
            .name(format!("db-checkpoint-{name}"))
            .spawn({
                let writer = writer.clone();
                move || checkpoint_loop(checkpointer, &writer, stop_rx)
            })
            .map_err(|e| Error::Internal(format!("spawn db checkpointer: {e}")))?;
        let queued = Arc::new(AtomicUsize::new(0));
        let handle = std::thread::Builder::new()
            .name(format!("db-writer-{name}"))
            .spawn({
                let (writer, queued) = (writer.clone(), queued.clone());
                move || {
                    writer_loop(&writer, &queued, rx);
                    drop(stop_tx);
                }
            })
            .map_err(|e| Error::Internal(format!("spawn db writer: {e}")))?;
        Ok(Db {
            jobs: tx,
            reader: Arc::new(Mutex::new(reader)),
            writer,
            queued,
            closed: Arc::new(AtomicBool::new(false)),
            inline_when: None,
            writer_done: Arc::new(Mutex::new(Some(handle))),
        })
    }

    /// Lets [`Db::write_small`] commit on the calling thread while `quiet` says the process is
    /// quiet and the writer thread is idle.
    pub fn with_inline_commits(mut self, quiet: impl Fn() -> bool + Send + Sync + 'static) -> Db {
        self.inline_when = Some(Arc::new(quiet));
        self
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
        let (job, answer) = job_for(f, after);
        self.queue(job)?;
        answer.await.map_err(|_| Error::Internal("db writer stopped".into()))?
    }

    /// [`Db::write`] for a small write on a turn's path (a few rows, no scan): when inline
    /// commits are on and the process is quiet it commits on the calling thread (see the module
    /// doc), otherwise on the writer thread. Either way it resolves after COMMIT, and a failure
    /// rolls back exactly this write.
    pub async fn write_small<T, F>(&self, f: F) -> Result<T, Error>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> Result<T, Error> + Send + 'static,
    {
        let (job, answer) = job_for(f, || {});
        if let Err(job) = self.try_inline(job) {
            self.queue(job)?;
        }
        answer.await.map_err(|_| Error::Internal("db writer stopped".into()))?
    }

    fn queue(&self, job: Job) -> Result<(), Error> {
        self.queued.fetch_add(1, Ordering::AcqRel);
        self.jobs.send(Some(job)).map_err(|_| {
            self.queued.fetch_sub(1, Ordering::AcqRel);
            Error::ShuttingDown
        })
    }

    /// Commits `job` alone on this thread, or hands it back when that would wait for anything
    /// (a queued or running write, the connection, the file's lock) or the process is busy.
    fn try_inline(&self, job: Job) -> Result<(), Job> {
        let quiet = self.inline_when.as_ref().is_some_and(|quiet| quiet());
        if !quiet || self.closed.load(Ordering::Acquire) || self.queued.load(Ordering::Acquire) != 0 {
            return Err(job);
        }
        let Ok(conn) = self.writer.try_lock() else {
            return Err(job);
        };
        // `close` may have run while this thread took the lock (the writer's last checkpoint
        // included): a write after it must fail as on the writer thread, not commit unseen.
        if self.closed.load(Ordering::Acquire) {
            return Err(job);
        }
        // Another connection holding the file's lock (an erasure's TRUNCATE checkpoint) sends
        // the write to the writer thread, which may wait for it; a tokio worker never does.
        let _ = conn.busy_timeout(Duration::ZERO);
        let begun = control(&conn, "BEGIN IMMEDIATE");
        let _ = conn.busy_timeout(BUSY_TIMEOUT);
        if begun.is_err() {
            return Err(job);
        }
        let (ok, done) = job(&conn);
        let committed = end_transaction(&conn, ok, true);
        drop(conn);
        done(committed);
        Ok(())
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
        self.closed.store(true, Ordering::Release);
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
    // A WAL that grew during a burst is cut back to this when it starts over (see
    // `checkpoint_loop`), instead of keeping its largest size on disk for good.
    conn.pragma_update(None, "journal_size_limit", WAL_SIZE_LIMIT)?;
    conn.busy_timeout(BUSY_TIMEOUT)?;
    Ok(conn)
}

/// A write as the writer thread (or an inline commit) runs it, and the answer its caller awaits.
fn job_for<T, F, A>(f: F, after: A) -> (Job, oneshot::Receiver<Result<T, Error>>)
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
    (job, rx)
}

fn writer_loop(writer: &Mutex<Connection>, queued: &AtomicUsize, rx: std::sync::mpsc::Receiver<Message>) {
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
            let jobs = batch.len();
            let answers = run_batch(&lock_writer(writer), batch);
            // Idle again before anyone is answered, so a caller's next write may go inline.
            queued.fetch_sub(jobs, Ordering::AcqRel);
            for (done, committed) in answers {
                done(committed);
            }
        }
    }
    let _ = lock_writer(writer).execute_batch("PRAGMA wal_checkpoint(TRUNCATE);");
}

/// The writing connection for the writer thread. A poisoned lock means an inline commit
/// panicked half-way: its transaction is still open and is rolled back, so nothing of it
/// commits with the next batch.
fn lock_writer(writer: &Mutex<Connection>) -> std::sync::MutexGuard<'_, Connection> {
    let conn = writer.lock().unwrap_or_else(|poisoned| {
        // Cleared, or `try_lock` would refuse every later inline commit for good.
        tracing::warn!("db: a write panicked half-way; its transaction is rolled back");
        writer.clear_poison();
        poisoned.into_inner()
    });
    if !conn.is_autocommit() {
        let _ = control(&conn, "ROLLBACK");
    }
    conn
}

/// Folds the WAL back into the database once a second; ends when the writer does.
///
/// The WAL starts over from its beginning (and is cut back to `journal_size_limit`) only when
/// a write begins after a checkpoint reached the end of the log. Under constant writes a
/// checkpoint running beside the writer never does: new frames land while it copies, and the
/// WAL grew without bound (issue #16: 270 MB in 8 s at one turn at a time, every frame a
/// fresh page-cache allocation and more writeback). So a PASSIVE checkpoint first copies
/// what is there without holding anyone up, and a second one copies the few frames written
/// meanwhile while this process's writes wait on the writing connection's lock (never on
/// SQLite's busy handler, which sleeps).
///
/// The second pass holds writes up only when it is short and worth it: the first reached the
/// end of the log as it stood (so only what was written during that pass is left, not what a
/// long reader had held back), and the WAL is past [`RESTART_WAL_FROM_FRAMES`] (a small WAL
/// under light writes starts over by itself, when a write finds nothing left to copy).
fn checkpoint_loop(conn: Connection, writer: &Mutex<Connection>, stop: std::sync::mpsc::Receiver<()>) {
    while let Err(std::sync::mpsc::RecvTimeoutError::Timeout) = stop.recv_timeout(Duration::from_secs(1)) {
        // A round that did not get to the end (another checkpoint, a reader) is simply the
        // next round's to do.
        let _ = checkpoint_to_the_end(&conn, writer, RESTART_WAL_FROM_FRAMES);
    }
}

/// WAL frames (pages; 4 MiB at SQLite's default page size) from which a checkpoint round holds
/// writes up for its second pass.
const RESTART_WAL_FROM_FRAMES: i64 = 1024;

/// One round of `checkpoint_loop`: afterwards every frame is in the database file (unless a
/// reader still uses an older snapshot, or the WAL is below `restart_from` frames), so the
/// next write starts the WAL over. Says whether it got there.
fn checkpoint_to_the_end(conn: &Connection, writer: &Mutex<Connection>, restart_from: i64) -> bool {
    let passive = |c: &Connection| {
        c.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| {
            Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?, r.get::<_, i64>(2)?))
        })
    };
    let Ok((0, log, copied)) = passive(conn) else { return false };
    if copied < log || log < restart_from {
        return false;
    }
    let _writes_wait = lock_writer(writer);
    matches!(passive(conn), Ok((0, log, copied)) if copied == log)
}

/// Runs `batch` in one transaction; returns each caller's answer and whether it committed.
fn run_batch(conn: &Connection, batch: Vec<Job>) -> Vec<(Completion, bool)> {
    if control(conn, "BEGIN IMMEDIATE").is_err() {
        // Run each alone so its caller still gets an answer.
        return batch.into_iter().map(|job| (job(conn).1, true)).collect();
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
    let committed = end_transaction(conn, !failed_alone, alone);
    completions.into_iter().map(|done| (done, committed)).collect()
}

/// Commits the open transaction, or rolls back a lone write that failed (`ok` false, `alone`);
/// says whether the callers' results stand. A failed lone write answers its own error (the
/// job reported it), not "did not commit".
fn end_transaction(conn: &Connection, ok: bool, alone: bool) -> bool {
    if alone && !ok {
        let _ = control(conn, "ROLLBACK");
        return true;
    }
    let committed = control(conn, "COMMIT").is_ok();
    if !committed {
        let _ = control(conn, "ROLLBACK");
    }
    committed
}

/// A transaction-control statement, parsed once per connection (the writer runs these
/// around every batch).
fn control(conn: &Connection, sql: &str) -> rusqlite::Result<()> {
    conn.prepare_cached(sql)?.execute([]).map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A write that inserts a row (n = -1) and then fails.
    fn fails_half_way(c: &Connection) -> Result<usize, Error> {
        c.execute("INSERT INTO t (n) VALUES (-1)", [])?;
        Ok(c.execute("INSERT INTO missing VALUES (1)", [])?)
    }

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
        let half = db.write(fails_half_way).await;
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

    /// Frames in the WAL since it last started over (checkpointing them, so only as the last look).
    fn wal_frames(path: &Path) -> i64 {
        let c = Connection::open(path).unwrap();
        c.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| r.get(1)).unwrap()
    }

    fn wal_size(path: &Path) -> u64 {
        std::fs::metadata(path.with_extension("db-wal")).map_or(0, |m| m.len())
    }

    /// Issue #16: after a checkpoint round the next write starts the WAL over, instead of
    /// appending to a log that only grows while writes keep coming.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_checkpoint_round_lets_the_wal_start_over() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.db");
        let db = Db::open(&path, "CREATE TABLE IF NOT EXISTS t (n INTEGER NOT NULL);").unwrap();
        // Writes keep coming during the round, as under load: a checkpoint beside them alone
        // never reaches the end of the log.
        let round_done = Arc::new(AtomicBool::new(false));
        let writing = {
            let (db, round_done) = (db.clone(), round_done.clone());
            #[expect(clippy::disallowed_methods, reason = "awaited below")]
            tokio::spawn(async move {
                let mut n = 0;
                while !round_done.load(Ordering::Acquire) || n < 200 {
                    db.write(move |c| Ok(c.execute("INSERT INTO t (n) VALUES (?1)", [n])?))
                        .await
                        .unwrap();
                    n += 1;
                }
            })
        };
        while wal_size(&path) < 100 * 1024 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let checkpointer = open_conn(&path).unwrap();
        let writer = db.writer.clone();
        // Another checkpoint (this Db's own, once a second) may be under way: then try again.
        let reached = tokio::task::spawn_blocking(move || (0..50).any(|_| checkpoint_to_the_end(&checkpointer, &writer, 0)))
            .await
            .unwrap();
        assert!(reached, "no checkpoint round got to the end of the log");
        round_done.store(true, Ordering::Release);
        writing.await.unwrap();
        db.write(|c| Ok(c.execute("INSERT INTO t (n) VALUES (-2)", [])?)).await.unwrap();
        let total: i64 = db
            .read(|c| Ok(c.query_row("SELECT count(*) FROM t", [], |r| r.get(0))?))
            .await
            .unwrap();
        let after = wal_frames(&path);
        assert!(
            after < total,
            "the WAL went on to {after} frames for {total} rows instead of starting over"
        );
        db.close().await;
    }

    /// Which thread ran a write: the writer thread has its own name, a tokio worker another.
    fn on_writer_thread() -> bool {
        std::thread::current().name().is_some_and(|n| n.starts_with("db-writer-"))
    }

    /// The adaptive switch (issue #16) takes both paths: inline while the probe says quiet and
    /// the writer is idle, the writer thread otherwise; both commit, and both roll back exactly
    /// the failed write.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn small_writes_commit_inline_only_when_quiet() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.db");
        let quiet = Arc::new(AtomicBool::new(true));
        let db = Db::open(&path, "CREATE TABLE IF NOT EXISTS t (n INTEGER NOT NULL);")
            .unwrap()
            .with_inline_commits({
                let quiet = quiet.clone();
                move || quiet.load(Ordering::SeqCst)
            });
        let insert = |n: i64| move |c: &Connection| Ok((c.execute("INSERT INTO t (n) VALUES (?1)", [n])?, on_writer_thread()));

        // Quiet and idle: on the calling thread.
        let (rows, on_writer) = db.write_small(insert(1)).await.unwrap();
        assert_eq!((rows, on_writer), (1, false));
        // A plain write always goes to the writer thread.
        assert!(db.write(insert(2)).await.unwrap().1);
        // Busy by the probe: the writer thread.
        quiet.store(false, Ordering::SeqCst);
        assert!(db.write_small(insert(3)).await.unwrap().1);
        quiet.store(true, Ordering::SeqCst);
        // Busy because a write is queued for (here: running on) the writer thread.
        let (started_tx, started_rx) = std::sync::mpsc::channel::<()>();
        let (release_tx, release_rx) = std::sync::mpsc::channel::<()>();
        let slow = db.clone();
        #[expect(clippy::disallowed_methods, reason = "awaited below")]
        let slow = tokio::spawn(async move {
            slow.write(move |c| {
                started_tx.send(()).unwrap();
                release_rx.recv().unwrap();
                Ok(c.execute("INSERT INTO t (n) VALUES (4)", [])?)
            })
            .await
        });
        tokio::task::spawn_blocking(move || started_rx.recv().unwrap()).await.unwrap();
        let queued = db.clone();
        #[expect(clippy::disallowed_methods, reason = "awaited below")]
        let queued = tokio::spawn(async move { queued.write_small(insert(5)).await });
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!queued.is_finished(), "a small write went inline while the writer was busy");
        release_tx.send(()).unwrap();
        assert_eq!(slow.await.unwrap().unwrap(), 1);
        assert!(queued.await.unwrap().unwrap().1);
        // Idle again: inline again.
        assert!(!db.write_small(insert(6)).await.unwrap().1);
        // A write counted as queued (sent, not yet run) keeps the next one behind it, in order,
        // even with the connection free.
        db.queued.fetch_add(1, Ordering::AcqRel);
        let behind = db
            .write_small(|c| Ok((c.execute("DELETE FROM t WHERE n = 6", [])?, on_writer_thread())))
            .await;
        db.queued.fetch_sub(1, Ordering::AcqRel);
        assert!(behind.unwrap().1, "a small write went inline past a queued one");
        assert!(!db.write_small(insert(6)).await.unwrap().1);

        // An inline write that fails half-way leaves nothing and answers its own error.
        let half = db.write_small(fails_half_way).await;
        assert!(half.unwrap_err().to_string().contains("missing"));
        // The connection is usable afterwards on both paths.
        assert!(!db.write_small(insert(7)).await.unwrap().1);
        assert!(db.write(insert(8)).await.unwrap().1);

        // Another connection holding the file's write lock: never waited for inline, the
        // writer thread waits for it instead.
        let other = open_conn(&path).unwrap();
        other.execute_batch("BEGIN IMMEDIATE").unwrap();
        let blocked = db.clone();
        #[expect(clippy::disallowed_methods, reason = "awaited below")]
        let blocked = tokio::spawn(async move { blocked.write_small(insert(9)).await });
        // Released only once the inline attempt has given up and the write is queued for the
        // writer thread (not after a fixed sleep: a slow machine must not find the file free).
        while db.queued.load(Ordering::Acquire) == 0 {
            tokio::task::yield_now().await;
        }
        other.execute_batch("COMMIT").unwrap();
        assert!(blocked.await.unwrap().unwrap().1);

        db.close().await;
        assert!(matches!(db.write_small(insert(10)).await, Err(Error::ShuttingDown)));
        let reopened = Connection::open(&path).unwrap();
        let mut st = reopened.prepare("SELECT n FROM t ORDER BY n").unwrap();
        let all: Vec<i64> = st.query_map([], |r| r.get(0)).unwrap().map(Result::unwrap).collect();
        assert_eq!(all, vec![1, 2, 3, 4, 5, 6, 7, 8, 9]);
    }
}
