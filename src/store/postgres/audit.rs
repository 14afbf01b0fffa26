//! audit in PostgreSQL: the operations of [`AuditStore`] over the tables of migration 0001.

use deadpool_postgres::Pool;

use super::now_ms;
use crate::error::Error;
use crate::store::audit::{
    AuditStore, ENTRY_COLUMNS, Entry, FingerprintWrite, Observed, Outcome, compare_fingerprint, parse_approval, parse_category, parse_kind,
};

#[derive(Clone)]
pub struct PgAudit {
    pool: Pool,
}

impl PgAudit {
    pub fn new(pool: Pool) -> PgAudit {
        PgAudit { pool }
    }
}

#[async_trait::async_trait]
impl AuditStore for PgAudit {
    async fn append(&self, e: Entry) -> Result<(), Error> {
        let c = e.columns();
        self.pool
            .get()
            .await?
            .execute(
                "INSERT INTO audit (at_ms, kind, uid, conversation_id, request_id, server, tool, category, approval, arguments_sha256, outcome, duration_ms, detail)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)",
                &[
                    &now_ms(),
                    &c.kind,
                    &e.uid,
                    &e.conversation_id,
                    &e.request_id,
                    &e.server,
                    &e.tool,
                    &c.category,
                    &c.approval,
                    &e.arguments_sha256,
                    &c.outcome,
                    &e.duration_ms,
                    &e.detail,
                ],
            )
            .await?;
        Ok(())
    }

    async fn observe(&self, server: &str, name: &str, fingerprint: &str) -> Result<Observed, Error> {
        let now = now_ms();
        let mut client = self.pool.get().await?;
        let tx = client.transaction().await?;
        // Several instances may list the same server at once: the row is created once, then
        // read under a row lock, so exactly one of them sees (and audits) a change.
        tx.execute(
            "INSERT INTO fingerprints (server, name, fingerprint, first_seen_ms, last_changed_ms) VALUES ($1, $2, $3, $4, $4)
             ON CONFLICT (server, name) DO NOTHING",
            &[&server, &name, &fingerprint, &now],
        )
        .await?;
        let row = tx
            .query_one(
                "SELECT fingerprint, first_seen_ms, last_changed_ms FROM fingerprints WHERE server = $1 AND name = $2 FOR UPDATE",
                &[&server, &name],
            )
            .await?;
        let stored: (String, i64, i64) = (row.try_get(0)?, row.try_get(1)?, row.try_get(2)?);
        let (observed, write) = compare_fingerprint(Some(stored), fingerprint, now);
        if let Some(FingerprintWrite::Update) = write {
            tx.execute(
                "UPDATE fingerprints SET fingerprint = $3, last_changed_ms = $4 WHERE server = $1 AND name = $2",
                &[&server, &name, &fingerprint, &now],
            )
            .await?;
        }
        tx.commit().await?;
        Ok(observed)
    }

    async fn known_tools(&self) -> Result<Vec<(String, String)>, Error> {
        let rows = self
            .pool
            .get()
            .await?
            .query("SELECT server, name FROM fingerprints ORDER BY server, name", &[])
            .await?;
        rows.iter().map(|r| Ok((r.try_get(0)?, r.try_get(1)?))).collect()
    }

    async fn entries(&self) -> Result<Vec<Entry>, Error> {
        let rows = self
            .pool
            .get()
            .await?
            .query(&format!("SELECT {ENTRY_COLUMNS} FROM audit ORDER BY seq"), &[])
            .await?;
        rows.iter()
            .map(|r| {
                Ok(Entry {
                    kind: parse_kind(r.try_get(0)?),
                    uid: r.try_get(1)?,
                    conversation_id: r.try_get(2)?,
                    request_id: r.try_get(3)?,
                    server: r.try_get(4)?,
                    tool: r.try_get(5)?,
                    category: parse_category(r.try_get(6)?),
                    approval: parse_approval(r.try_get(7)?),
                    arguments_sha256: r.try_get(8)?,
                    outcome: Outcome::parse(r.try_get(9)?).unwrap_or(Outcome::Error),
                    duration_ms: r.try_get(10)?,
                    detail: r.try_get(11)?,
                })
            })
            .collect()
    }

    async fn close(&self) {
        self.pool.close();
    }
}
