//! Group commit of chat saves on PostgreSQL (issue #33, P9): the saves of many turns that
//! arrive while a commit is in progress are written by one transaction and share one WAL flush.
//!
//! Each save alone costs a transaction whose commit waits for its own flush; on one disk that
//! flush, not the statements, bounds how many turns an instance finishes per second. Here
//! [`WRITERS`] writer tasks each take every save queued for them at that moment (at most
//! [`MAX_BATCH`]),
//! run their statements interleaved on one connection inside one transaction (tokio-postgres
//! pipelines requests issued together, so the batch costs about as many round trips as one
//! save has statements), commit once, and only then answer each caller.
//!
//! What it must never do:
//! - acknowledge a save before the transaction holding it has committed, or change
//!   `synchronous_commit` (durability is the database's setting, not traded for throughput);
//! - let one save's failure decide another's: a save refused by the fence or by its bound
//!   assistant writes nothing (its checks come before its writes), so the others commit; any
//!   database error rolls the whole batch back and every save of it is retried in its own
//!   transaction ([`write_alone`], the same statements), so each gets its own answer;
//! - retry a batch whose COMMIT failed or whose connection broke (its outcome is unknown or the
//!   database is gone): each caller gets the error, and the next batch takes a fresh connection
//!   from the pool, which drops broken ones, so a restarted database is reconnected to.

use deadpool_postgres::{Pool, Transaction};
use std::sync::Arc;
use tokio::sync::{mpsc, oneshot};

use super::lease::check_fence;
use super::now_ms;
use crate::error::Error;
use crate::origin::Origin;
use crate::store::chat::{Save, refused_binding, title_from};
use crate::store::key::ConversationKey;

/// Writer tasks: while one waits for its commit's flush, the other runs its next batch's
/// statements. A conversation's saves always go to the same writer (by a hash of its key), so
/// they commit in the order they were queued.
const WRITERS: usize = 2;

/// Most saves in one transaction: bounds the transaction's locks and the time its callers wait.
const MAX_BATCH: usize = 128;

/// Saves waiting for each writer; a caller beyond it waits to enqueue (back-pressure).
const QUEUE: usize = 512;

/// One chat save, serialised and owned, as [`super::chat::PgChat::save`] hands it over.
pub(super) struct Write {
    pub key: ConversationKey,
    pub message_id: String,
    pub role: &'static str,
    pub json: String,
    pub save: Save,
}

struct Job {
    write: Write,
    done: oneshot::Sender<Result<(), Error>>,
}

/// The queues in front of the writer tasks. The tasks end when the last handle is dropped.
#[derive(Clone)]
pub(super) struct GroupCommit {
    queues: Arc<[mpsc::Sender<Job>]>,
    /// Picks a conversation's writer; one seed per process is enough (only the spread matters).
    hasher: std::collections::hash_map::RandomState,
}

impl GroupCommit {
    /// Starts the writer tasks (inside the tokio runtime) for `instance`'s saves into `pool`.
    pub fn start(pool: Pool, instance: String) -> GroupCommit {
        let instance: Arc<str> = instance.into();
        let queues = (0..WRITERS)
            .map(|_| {
                let (queue, rx) = mpsc::channel(QUEUE);
                // A writer ends once every handle is dropped; at shutdown the stores close after
                // the actors stopped, and each save's caller awaits its answer, so none is
                // left half-written.
                #[expect(
                    clippy::disallowed_methods,
                    reason = "ends with the last handle; idle by the time the stores close"
                )]
                tokio::spawn(writer(pool.clone(), instance.clone(), rx));
                queue
            })
            .collect();
        GroupCommit {
            queues,
            hasher: Default::default(),
        }
    }

    /// Resolves once `write` is committed (or refused, or failed: see the module's doc).
    pub async fn save(&self, write: Write) -> Result<(), Error> {
        use std::hash::BuildHasher;
        let queue = &self.queues[self.hasher.hash_one(&write.key) as usize % self.queues.len()];
        let (done, answer) = oneshot::channel();
        queue
            .send(Job { write, done })
            .await
            .map_err(|_| Error::Internal("the chat writer has stopped".into()))?;
        answer
            .await
            .map_err(|_| Error::Internal("the chat writer stopped before answering".into()))?
    }
}

/// One writer: takes whatever is queued (waiting for the first save), commits it, repeats.
async fn writer(pool: Pool, instance: Arc<str>, mut rx: mpsc::Receiver<Job>) {
    let mut batch = Vec::new();
    while rx.recv_many(&mut batch, MAX_BATCH).await > 0 {
        commit_batch(&pool, &instance, std::mem::take(&mut batch)).await;
    }
}

/// How a batch ended when it did not commit.
enum Unwritten {
    /// A statement failed on a live connection: each save is retried alone.
    Retry,
    /// No connection, a broken one, or a failed COMMIT: each save gets this error.
    Failed(Error),
}

async fn commit_batch(pool: &Pool, instance: &str, mut batch: Vec<Job>) {
    if batch.len() == 1
        && let Some(job) = batch.pop()
    {
        let answer = write_alone(pool, instance, &job.write).await;
        let _ = job.done.send(answer);
        return;
    }
    match together(pool, instance, &batch).await {
        Ok(answers) => {
            for (job, answer) in batch.into_iter().zip(answers) {
                let _ = job.done.send(answer);
            }
        }
        Err(Unwritten::Retry) => {
            // Concurrently, each on its own pooled connection, as before group commit.
            futures::future::join_all(batch.into_iter().map(|job| async move {
                let answer = write_alone(pool, instance, &job.write).await;
                let _ = job.done.send(answer);
            }))
            .await;
        }
        Err(Unwritten::Failed(e)) => {
            tracing::warn!(error = %e, saves = batch.len(), "a batch of chat saves was not committed");
            let said = e.to_string();
            let mut first = Some(e);
            for job in batch {
                let e = first
                    .take()
                    .unwrap_or_else(|| Error::Internal(format!("the chat save was not committed: {said}")));
                let _ = job.done.send(Err(e));
            }
        }
    }
}

/// A refusal decided before any of the save's writes: the batch's transaction stays usable.
fn refused(answer: &Result<(), Error>) -> bool {
    matches!(answer, Err(Error::AssistantBound(_) | Error::OwnedElsewhere { .. }))
}

/// All of `batch` in one transaction: each save's answer once it has committed.
async fn together(pool: &Pool, instance: &str, batch: &[Job]) -> Result<Vec<Result<(), Error>>, Unwritten> {
    let mut client = pool.get().await.map_err(|e| Unwritten::Failed(e.into()))?;
    let tx = client.transaction().await.map_err(|e| Unwritten::Failed(e.into()))?;
    let answers = apply_all(&tx, instance, batch).await;
    if answers.iter().any(|a| a.is_err() && !refused(a)) {
        let broken = tx.client().is_closed();
        drop(tx); // rolls back
        if broken {
            let cause = answers
                .into_iter()
                .filter(|a| !refused(a))
                .find_map(Result::err)
                .unwrap_or_else(|| Error::Internal("the connection to the database broke".into()));
            return Err(Unwritten::Failed(cause));
        }
        return Err(Unwritten::Retry);
    }
    tx.commit().await.map_err(|e| Unwritten::Failed(e.into()))?;
    Ok(answers)
}

/// Every save of `batch` inside `tx`, issued together so the connection pipelines them; the
/// saves of one conversation one after another, in the order they were queued (a message's
/// place in its conversation is the order of its first insert).
async fn apply_all(tx: &Transaction<'_>, instance: &str, batch: &[Job]) -> Vec<Result<(), Error>> {
    let mut groups: Vec<Vec<usize>> = Vec::new();
    let mut group_of = std::collections::HashMap::new();
    for (i, job) in batch.iter().enumerate() {
        let conversation = (job.write.key.uid(), job.write.key.id());
        let g = *group_of.entry(conversation).or_insert_with(|| {
            groups.push(Vec::new());
            groups.len() - 1
        });
        groups[g].push(i);
    }
    let done = futures::future::join_all(groups.into_iter().map(|group| async move {
        let mut answers = Vec::with_capacity(group.len());
        for i in group {
            answers.push((i, apply(tx, instance, &batch[i].write).await));
        }
        answers
    }))
    .await;
    let mut answers: Vec<Option<Result<(), Error>>> = (0..batch.len()).map(|_| None).collect();
    for (i, answer) in done.into_iter().flatten() {
        answers[i] = Some(answer);
    }
    answers
        .into_iter()
        .map(|a| a.unwrap_or_else(|| Err(Error::Internal("a chat save was not run".into()))))
        .collect()
}

/// One save in its own transaction.
pub(super) async fn write_alone(pool: &Pool, instance: &str, write: &Write) -> Result<(), Error> {
    let mut client = pool.get().await?;
    let tx = client.transaction().await?;
    apply(&tx, instance, write).await?;
    tx.commit().await?;
    Ok(())
}

/// The statements of one save inside `tx`. The fence and the binding check come first and
/// write nothing, so a refusal leaves `tx` as it found it.
async fn apply(tx: &Transaction<'_>, instance: &str, w: &Write) -> Result<(), Error> {
    let (uid, cid) = (w.key.uid(), w.key.id());
    let save = &w.save;
    let title = save.title_hint.as_deref().map(title_from).unwrap_or_default();
    let now = now_ms();
    let assistant = save.user_assistant.as_deref();
    let origin = save.user_origin.map(Origin::as_str);
    check_fence(tx, &w.key, instance, "chat write").await?;
    if let Some(wanted) = assistant {
        // The binding is set once; the row lock keeps a concurrent first message honest.
        let bound = tx
            .query_opt(
                &tx.prepare_cached("SELECT assistant FROM conversations WHERE uid = $1 AND id = $2 FOR UPDATE")
                    .await?,
                &[&uid, &cid],
            )
            .await?
            .map(|r| r.try_get::<_, Option<String>>(0))
            .transpose()?
            .flatten();
        if let Some(bound) = refused_binding(bound, wanted) {
            return Err(Error::AssistantBound(bound));
        }
    }
    tx.execute(
        &tx.prepare_cached(
            "INSERT INTO conversations (uid, id, title, assistant, origin, created_at, updated_at) VALUES ($1, $2, $3, $4, $6, $5, $5)
             ON CONFLICT (uid, id) DO UPDATE SET updated_at = excluded.updated_at,
               title = CASE WHEN conversations.title = '' THEN excluded.title ELSE conversations.title END",
        )
        .await?,
        &[&uid, &cid, &title, &assistant, &now, &origin],
    )
    .await?;
    tx.execute(
        &tx.prepare_cached(
            "INSERT INTO messages (uid, conversation_id, id, role, message, created_at) VALUES ($1, $2, $3, $4, $5, $6)
             ON CONFLICT (uid, conversation_id, id) DO UPDATE SET message = excluded.message",
        )
        .await?,
        &[&uid, &cid, &w.message_id, &w.role, &w.json, &now],
    )
    .await?;
    if assistant.is_some() {
        tx.execute(
            &tx.prepare_cached("DELETE FROM pending_approvals WHERE uid = $1 AND conversation_id = $2")
                .await?,
            &[&uid, &cid],
        )
        .await?;
    }
    if let Some(turn) = &save.starts_turn {
        // The marker lives in this instance's lease row (store::postgres::lease).
        tx.execute(
            &tx.prepare_cached(super::lease::RECORD_TURN).await?,
            &[&uid, &cid, &instance, &turn.message_id, &turn.request_id],
        )
        .await?;
    }
    if save.ends_turn {
        // The marker lives in this instance's lease row (store::postgres::lease), held
        // FOR KEY SHARE by the fence above.
        tx.execute(
            &tx.prepare_cached(
                "UPDATE conversation_leases SET turn_message_id = NULL, turn_request_id = NULL
                 WHERE uid = $1 AND conversation_id = $2 AND owner = $3 AND turn_message_id = $4",
            )
            .await?,
            &[&uid, &cid, &instance, &w.message_id],
        )
        .await?;
    }
    for a in &save.approvals {
        tx.execute(
            &tx.prepare_cached(
                "INSERT INTO pending_approvals (approval_id, uid, conversation_id, message_id, tool_call_id, server, tool, arguments, arguments_sha256, created_at)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
            )
            .await?,
            &[
                &a.approval_id,
                &uid,
                &cid,
                &a.message_id,
                &a.tool_call_id,
                &a.server,
                &a.tool,
                &a.arguments.to_string(),
                &a.arguments_sha256,
                &now,
            ],
        )
        .await?;
    }
    Ok(())
}
