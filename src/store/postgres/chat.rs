//! chat in PostgreSQL: the operations of [`ChatStore`] over the tables of migration 0001.

use deadpool_postgres::Pool;
use tokio_postgres::Row;

use super::group_commit::{GroupCommit, Write};
use super::lease::check_fence;
use super::now_ms;
use crate::compaction::Summary;
use crate::error::Error;
use crate::store::chat::{ChatStore, Conversation, ConversationSummary, PendingApproval, Save, stored_origin, stored_role};
use crate::store::key::{ConversationKey, UserId};
use crate::ui_stream::UiMessage;

/// The columns of a pending approval, as `row_to_approval` reads them (a macro, so the
/// statements below are literals: no SQL is built at run time).
macro_rules! approval_columns {
    () => {
        "approval_id, message_id, tool_call_id, server, tool, arguments, arguments_sha256"
    };
}

#[derive(Clone)]
pub struct PgChat {
    pool: Pool,
    /// This instance's lease owner id: the fence every write checks (store::lease).
    instance: String,
    /// The writer tasks that commit saves in groups.
    writes: GroupCommit,
}

impl PgChat {
    /// Starts the group commit's writer tasks: call inside the tokio runtime.
    pub fn new(pool: Pool, instance: String) -> PgChat {
        let writes = GroupCommit::start(pool.clone(), instance.clone());
        PgChat { pool, instance, writes }
    }
}

#[async_trait::async_trait]
impl ChatStore for PgChat {
    async fn save(&self, key: &ConversationKey, message: &UiMessage, save: Save) -> Result<(), Error> {
        let json = serde_json::to_string(message).map_err(|e| Error::Internal(e.to_string()))?;
        // Committed with the saves of other turns queued at the same moment (group_commit).
        self.writes
            .save(Write {
                key: key.clone(),
                message_id: message.id.clone(),
                role: stored_role(message.role),
                json,
                save,
            })
            .await
    }

    async fn assistant_of(&self, key: &ConversationKey) -> Result<Option<Option<String>>, Error> {
        let row = self
            .pool
            .get()
            .await?
            .query_opt(
                "SELECT assistant FROM conversations WHERE uid = $1 AND id = $2",
                &[&key.uid(), &key.id()],
            )
            .await?;
        row.map(|r| r.try_get::<_, Option<String>>(0)).transpose().map_err(Error::from)
    }

    async fn take_approvals(&self, key: &ConversationKey, approval_ids: &[String]) -> Result<Option<Vec<PendingApproval>>, Error> {
        // Fenced like every write: an instance that lost the conversation must not use up (and
        // then run) an approval its new owner would honour. The DELETE takes its rows: two
        // instances racing for the same approval cannot both get it. One statement for every
        // id, in one transaction: when any id is not pending (or is named twice), fewer rows
        // come back than ids were asked for, it rolls back and nothing is taken.
        let mut client = self.pool.get().await?;
        let tx = client.transaction().await?;
        check_fence(&tx, key, &self.instance, "chat write").await?;
        let rows = tx
            .query(
                concat!(
                    "DELETE FROM pending_approvals WHERE uid = $1 AND conversation_id = $2 AND approval_id = ANY($3) RETURNING ",
                    approval_columns!()
                ),
                &[&key.uid(), &key.id(), &approval_ids],
            )
            .await?;
        if rows.len() != approval_ids.len() {
            // Dropping the transaction rolls it back.
            return Ok(None);
        }
        let mut by_id = rows
            .iter()
            .map(|row| row_to_approval(row).map(|a| (a.approval_id.clone(), a)))
            .collect::<Result<std::collections::HashMap<_, _>, _>>()?;
        // In the order asked for (the rows come back in the order the DELETE met them).
        let Some(taken) = approval_ids.iter().map(|id| by_id.remove(id)).collect::<Option<Vec<_>>>() else {
            return Ok(None);
        };
        tx.commit().await?;
        Ok(Some(taken))
    }

    async fn pending_approvals(&self, key: &ConversationKey) -> Result<Vec<PendingApproval>, Error> {
        let rows = self
            .pool
            .get()
            .await?
            .query(
                concat!(
                    "SELECT ",
                    approval_columns!(),
                    " FROM pending_approvals WHERE uid = $1 AND conversation_id = $2 ORDER BY created_at, approval_id"
                ),
                &[&key.uid(), &key.id()],
            )
            .await?;
        rows.iter().map(row_to_approval).collect()
    }

    async fn list(&self, uid: &UserId) -> Result<Vec<ConversationSummary>, Error> {
        let rows = self
            .pool
            .get()
            .await?
            .query(
                "SELECT id, title, created_at, updated_at, origin FROM conversations WHERE uid = $1 ORDER BY updated_at DESC, id LIMIT 500",
                &[&uid.as_str()],
            )
            .await?;
        rows.iter()
            .map(|r| {
                Ok(ConversationSummary {
                    id: r.try_get(0)?,
                    title: r.try_get(1)?,
                    created_at: r.try_get(2)?,
                    updated_at: r.try_get(3)?,
                    origin: stored_origin(r.try_get(4)?),
                })
            })
            .collect()
    }

    async fn load(&self, key: &ConversationKey) -> Result<Option<Conversation>, Error> {
        let client = self.pool.get().await?;
        // Read by every conversation an actor starts: prepared once per connection.
        let Some(head) = client
            .query_opt(
                &client
                    .prepare_cached("SELECT title, assistant, origin FROM conversations WHERE uid = $1 AND id = $2")
                    .await?,
                &[&key.uid(), &key.id()],
            )
            .await?
        else {
            return Ok(None);
        };
        let rows = client
            .query(
                &client
                    .prepare_cached("SELECT message FROM messages WHERE uid = $1 AND conversation_id = $2 ORDER BY seq")
                    .await?,
                &[&key.uid(), &key.id()],
            )
            .await?;
        let mut messages = Vec::with_capacity(rows.len());
        for r in &rows {
            let json: &str = r.try_get(0)?;
            messages.push(serde_json::from_str(json).map_err(|e| Error::Internal(format!("stored message: {e}")))?);
        }
        Ok(Some(Conversation {
            id: key.id().to_string(),
            title: head.try_get(0)?,
            assistant: head.try_get(1)?,
            origin: stored_origin(head.try_get(2)?),
            messages,
        }))
    }

    async fn delete(&self, key: &ConversationKey) -> Result<bool, Error> {
        let n = self
            .pool
            .get()
            .await?
            .execute("DELETE FROM conversations WHERE uid = $1 AND id = $2", &[&key.uid(), &key.id()])
            .await?;
        Ok(n > 0)
    }

    async fn save_summary(&self, key: &ConversationKey, summary: &Summary) -> Result<bool, Error> {
        let covers = i64::try_from(summary.covers_count).map_err(|_| Error::Internal("summary range too large".into()))?;
        // Fenced like every write (store::lease).
        let mut client = self.pool.get().await?;
        let tx = client.transaction().await?;
        check_fence(&tx, key, &self.instance, "chat write").await?;
        let n = tx
            .execute(
                "INSERT INTO summaries (uid, conversation_id, covers_count, covers_until_id, text, created_at)
                 SELECT $1::TEXT, $2::TEXT, $3::BIGINT, $4::TEXT, $5::TEXT, $6::BIGINT
                 WHERE EXISTS (SELECT 1 FROM conversations WHERE uid = $1 AND id = $2)
                 ON CONFLICT (uid, conversation_id, covers_count) DO NOTHING",
                &[&key.uid(), &key.id(), &covers, &summary.covers_until_id, &summary.text, &now_ms()],
            )
            .await?;
        tx.commit().await?;
        Ok(n > 0)
    }

    async fn latest_summary(&self, key: &ConversationKey) -> Result<Option<Summary>, Error> {
        let row = self
            .pool
            .get()
            .await?
            .query_opt(
                "SELECT covers_count, covers_until_id, text FROM summaries WHERE uid = $1 AND conversation_id = $2
                 ORDER BY covers_count DESC LIMIT 1",
                &[&key.uid(), &key.id()],
            )
            .await?;
        row.map(|r| {
            Ok(Summary {
                covers_count: usize::try_from(r.try_get::<_, i64>(0)?).unwrap_or(0),
                covers_until_id: r.try_get(1)?,
                text: r.try_get(2)?,
            })
        })
        .transpose()
    }

    async fn erase_user(&self, uid: &UserId) -> Result<usize, Error> {
        let mut client = self.pool.get().await?;
        let tx = client.transaction().await?;
        for table in ["summaries", "pending_approvals", "messages"] {
            tx.execute(&format!("DELETE FROM {table} WHERE uid = $1"), &[&uid.as_str()]).await?;
        }
        let n = tx.execute("DELETE FROM conversations WHERE uid = $1", &[&uid.as_str()]).await?;
        tx.commit().await?;
        // Dead rows stay in the table files until vacuumed; reclaim them now (an erasure is
        // rare). What PostgreSQL guarantees beyond this is in docs/scale-out.md.
        vacuum(&client, &["summaries", "pending_approvals", "messages", "conversations"]).await;
        Ok(usize::try_from(n).unwrap_or(usize::MAX))
    }

    async fn close(&self) {
        self.pool.close();
    }
}

/// VACUUM cannot run inside a transaction; a failure is logged (the rows are already gone
/// from every query, only their dead tuples wait for autovacuum).
pub(super) async fn vacuum(client: &deadpool_postgres::Client, tables: &[&str]) {
    if let Err(e) = client.batch_execute(&format!("VACUUM {}", tables.join(", "))).await {
        tracing::warn!(error = %e, "VACUUM after an erasure failed; autovacuum will reclaim the rows");
    }
}

fn row_to_approval(r: &Row) -> Result<PendingApproval, Error> {
    let args: &str = r.try_get(5)?;
    Ok(PendingApproval {
        approval_id: r.try_get(0)?,
        message_id: r.try_get(1)?,
        tool_call_id: r.try_get(2)?,
        server: r.try_get(3)?,
        tool: r.try_get(4)?,
        arguments: serde_json::from_str(args).unwrap_or(serde_json::Value::Null),
        arguments_sha256: r.try_get(6)?,
    })
}
