//! The registry in PostgreSQL: the operations of [`RegistryStore`] over the tables of
//! migration 0005, shared by every instance (a change is seen by the next request anywhere).

use deadpool_postgres::Pool;

use super::chat::vacuum;
use super::now_ms;
use crate::error::Error;
use crate::store::key::UserId;
use crate::store::registry::{Approval, EntryKind, PersonalRow, Put, RegistryStore};

pub struct PgRegistry {
    pool: Pool,
}

impl PgRegistry {
    pub fn new(pool: Pool) -> PgRegistry {
        PgRegistry { pool }
    }

    async fn personal_where(&self, clause: &str, arg: &str) -> Result<Vec<PersonalRow>, Error> {
        let rows = self
            .pool
            .get()
            .await?
            .query(
                &format!(
                    "SELECT id, uid, body, share_group, version, approved_version, updated_at FROM personal_assistants \
                     WHERE {clause} ORDER BY id"
                ),
                &[&arg],
            )
            .await?;
        rows.iter()
            .map(|r| {
                Ok(PersonalRow {
                    id: r.try_get(0)?,
                    uid: r.try_get(1)?,
                    body: r.try_get(2)?,
                    share_group: r.try_get(3)?,
                    version: r.try_get(4)?,
                    approved_version: r.try_get(5)?,
                    updated_at: r.try_get(6)?,
                })
            })
            .collect()
    }
}

#[async_trait::async_trait]
impl RegistryStore for PgRegistry {
    async fn entries(&self, kind: EntryKind) -> Result<Vec<(String, String)>, Error> {
        let rows = self
            .pool
            .get()
            .await?
            .query(
                "SELECT name, body FROM registry_entries WHERE kind = $1 ORDER BY name",
                &[&kind.as_str()],
            )
            .await?;
        rows.iter().map(|r| Ok((r.try_get(0)?, r.try_get(1)?))).collect()
    }

    async fn put_entry(&self, kind: EntryKind, name: &str, body: &str, mode: Put) -> Result<bool, Error> {
        let client = self.pool.get().await?;
        let n = match mode {
            Put::Create => {
                client
                    .execute(
                        "INSERT INTO registry_entries (kind, name, body, updated_at) VALUES ($1, $2, $3, $4) \
                         ON CONFLICT (kind, name) DO NOTHING",
                        &[&kind.as_str(), &name, &body, &now_ms()],
                    )
                    .await?
            }
            Put::Replace => {
                client
                    .execute(
                        "UPDATE registry_entries SET body = $3, updated_at = $4 WHERE kind = $1 AND name = $2",
                        &[&kind.as_str(), &name, &body, &now_ms()],
                    )
                    .await?
            }
            Put::Upsert => {
                client
                    .execute(
                        "INSERT INTO registry_entries (kind, name, body, updated_at) VALUES ($1, $2, $3, $4) \
                         ON CONFLICT (kind, name) DO UPDATE SET body = excluded.body, updated_at = excluded.updated_at",
                        &[&kind.as_str(), &name, &body, &now_ms()],
                    )
                    .await?
            }
        };
        Ok(n > 0)
    }

    async fn delete_entry(&self, kind: EntryKind, name: &str) -> Result<bool, Error> {
        let n = self
            .pool
            .get()
            .await?
            .execute(
                "DELETE FROM registry_entries WHERE kind = $1 AND name = $2",
                &[&kind.as_str(), &name],
            )
            .await?;
        Ok(n > 0)
    }

    async fn personal_of(&self, uid: &UserId) -> Result<Vec<PersonalRow>, Error> {
        self.personal_where("uid = $1", uid.as_str()).await
    }

    async fn proposed(&self) -> Result<Vec<PersonalRow>, Error> {
        self.personal_where("share_group IS NOT NULL AND $1 = ''", "").await
    }

    async fn personal(&self, id: &str) -> Result<Option<PersonalRow>, Error> {
        Ok(self.personal_where("id = $1", id).await?.pop())
    }

    async fn create_personal(&self, uid: &UserId, id: &str, body: &str) -> Result<(), Error> {
        self.pool
            .get()
            .await?
            .execute(
                "INSERT INTO personal_assistants (id, uid, body, version, updated_at) VALUES ($1, $2, $3, 1, $4)",
                &[&id, &uid.as_str(), &body, &now_ms()],
            )
            .await?;
        Ok(())
    }

    async fn update_personal(&self, uid: &UserId, id: &str, body: &str) -> Result<bool, Error> {
        let n = self
            .pool
            .get()
            .await?
            .execute(
                "UPDATE personal_assistants SET body = $3, version = version + 1, updated_at = $4 WHERE uid = $1 AND id = $2",
                &[&uid.as_str(), &id, &body, &now_ms()],
            )
            .await?;
        Ok(n > 0)
    }

    async fn share_personal(&self, uid: &UserId, id: &str, group: Option<&str>) -> Result<bool, Error> {
        let n = self
            .pool
            .get()
            .await?
            .execute(
                "UPDATE personal_assistants SET share_group = $3, approved_version = NULL, updated_at = $4 \
                 WHERE uid = $1 AND id = $2",
                &[&uid.as_str(), &id, &group, &now_ms()],
            )
            .await?;
        Ok(n > 0)
    }

    async fn delete_personal(&self, uid: &UserId, id: &str) -> Result<bool, Error> {
        let n = self
            .pool
            .get()
            .await?
            .execute("DELETE FROM personal_assistants WHERE uid = $1 AND id = $2", &[&uid.as_str(), &id])
            .await?;
        Ok(n > 0)
    }

    async fn approve(&self, id: &str, version: i64) -> Result<Approval, Error> {
        let client = self.pool.get().await?;
        // One statement: the version compared is the version approved (an edit in between
        // makes it match no row).
        let n = client
            .execute(
                "UPDATE personal_assistants SET approved_version = $2 WHERE id = $1 AND version = $2 AND share_group IS NOT NULL",
                &[&id, &version],
            )
            .await?;
        if n > 0 {
            return Ok(Approval::Approved);
        }
        let found = client
            .query_opt(
                "SELECT 1 FROM personal_assistants WHERE id = $1 AND share_group IS NOT NULL",
                &[&id],
            )
            .await?;
        Ok(if found.is_some() { Approval::Stale } else { Approval::NotFound })
    }

    async fn erase_user(&self, uid: &UserId) -> Result<usize, Error> {
        let client = self.pool.get().await?;
        let n = client
            .execute("DELETE FROM personal_assistants WHERE uid = $1", &[&uid.as_str()])
            .await?;
        vacuum(&client, &["personal_assistants"]).await;
        Ok(usize::try_from(n).unwrap_or(usize::MAX))
    }
}
