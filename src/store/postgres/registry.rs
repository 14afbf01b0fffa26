//! The registry in PostgreSQL: the operations of [`RegistryStore`] over the tables of
//! migration 0005, shared by every instance (a change is seen by the next request anywhere).
//!
//! Every turn reads the registry; each instance keeps a copy of the rows ([`RegistryCopy`],
//! issue #33, P9) so a request costs one small query instead of six. The copy is tagged with
//! the registry token it was read under (migration 0006: a trigger changes the token in the
//! transaction of every write to either table), and a [`RegistryStore::snapshot`] first reads
//! the token, then serves the copy only if its tag is that token. What it must never do: serve rows older than a
//! write acknowledged before the request asked. Hence the token read is never skipped (a
//! notification such as LISTEN/NOTIFY arrives some time after the commit, so it cannot promise
//! that), the rows are always read after the token they are tagged with (so a copy is at least
//! as new as its tag), and a read shared by concurrent requests ([`TokenReads`]) is only ever
//! one that started after the request arrived. A failed read drops the whole copy: after a
//! restarted or replaced database, rows are read again (the random token already makes an
//! older copy unusable; this leaves nothing to reason about).

use deadpool_postgres::Pool;
use std::sync::atomic::{AtomicU64, Ordering};

use super::chat::vacuum;
use super::now_ms;
use crate::error::Error;
use crate::store::key::UserId;
use crate::store::registry::{Approval, EntryKind, Found, Missing, PersonalRow, Put, RegistryCopy, RegistryStore, SharedRows, Snapshot};

pub struct PgRegistry {
    pool: Pool,
    tokens: TokenReads,
    copy: RegistryCopy<String>,
}

/// The registry token, read once for every request that arrived before the read started:
/// under load, one query answers many turns, and none is answered by a read older than it.
#[derive(Default)]
struct TokenReads {
    /// Reads started so far; a read's number is this count once it started.
    started: AtomicU64,
    /// The last read's number and outcome; held while a read runs, so callers queue behind it.
    last: tokio::sync::Mutex<Option<(u64, Result<String, String>)>>,
}

impl TokenReads {
    async fn current(&self, pool: &Pool) -> Result<String, Error> {
        let arrived = self.started.load(Ordering::SeqCst);
        let mut last = self.last.lock().await;
        if let Some((n, outcome)) = last.as_ref()
            && *n > arrived
        {
            // Started (its number was taken) after this caller arrived: it sees every write
            // acknowledged before then. A failure is shared too, so callers queued behind a
            // database that does not answer are not each made to wait for it in turn.
            return outcome
                .clone()
                .map_err(|e| Error::Internal(format!("the registry token could not be read: {e}")));
        }
        let n = self.started.fetch_add(1, Ordering::SeqCst) + 1;
        let read = Self::read(pool).await;
        *last = Some((n, read.as_ref().map(String::clone).map_err(ToString::to_string)));
        read
    }

    async fn read(pool: &Pool) -> Result<String, Error> {
        let client = pool.get().await?;
        let statement = client.prepare_cached("SELECT token::text FROM registry_version").await?;
        Ok(client.query_one(&statement, &[]).await?.try_get(0)?)
    }
}

impl PgRegistry {
    pub fn new(pool: Pool) -> PgRegistry {
        PgRegistry {
            pool,
            tokens: TokenReads::default(),
            copy: RegistryCopy::default(),
        }
    }

    /// [`RegistryStore::snapshot`] once the token is known: the copy's rows if tagged with it,
    /// else what is missing read now (after the token) and kept under it.
    async fn snapshot_at(&self, token: String, uid: Option<&UserId>) -> Result<Snapshot, Error> {
        let read = |missing: Missing| async move {
            let shared = match missing.shared {
                true => Some(self.read_shared().await?),
                false => None,
            };
            let own = match &missing.own {
                Some(uid) => Some(self.personal_of(uid).await?),
                None => None,
            };
            Ok(Found { shared, own })
        };
        self.copy.snapshot(&token, uid, read).await
    }

    /// Every admin entry and every proposed assistant, on one connection (pipelined).
    async fn read_shared(&self) -> Result<SharedRows, Error> {
        let client = self.pool.get().await?;
        let entries = client.prepare_cached("SELECT kind, name, body FROM registry_entries ORDER BY kind, name");
        let proposed = client.prepare_cached(
            "SELECT id, uid, body, share_group, version, approved_version, updated_at FROM personal_assistants \
             WHERE share_group IS NOT NULL ORDER BY id",
        );
        let (entries, proposed) = tokio::try_join!(entries, proposed)?;
        let (entries, proposed) = tokio::try_join!(client.query(&entries, &[]), client.query(&proposed, &[]))?;
        let mut shared = SharedRows {
            proposed: proposed.iter().map(personal_row).collect::<Result<_, _>>()?,
            ..SharedRows::default()
        };
        for r in &entries {
            let (kind, name, body): (String, String, String) = (r.try_get(0)?, r.try_get(1)?, r.try_get(2)?);
            let list = match kind.as_str() {
                "server" => &mut shared.servers,
                "assistant" => &mut shared.assistants,
                "policy" => &mut shared.policy,
                // Written by a newer version of tamebi: nothing this one knows how to use.
                _ => continue,
            };
            list.push((name, body));
        }
        Ok(shared)
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
        rows.iter().map(personal_row).collect()
    }
}

fn personal_row(r: &tokio_postgres::Row) -> Result<PersonalRow, Error> {
    Ok(PersonalRow {
        id: r.try_get(0)?,
        uid: r.try_get(1)?,
        body: r.try_get(2)?,
        share_group: r.try_get(3)?,
        version: r.try_get(4)?,
        approved_version: r.try_get(5)?,
        updated_at: r.try_get(6)?,
    })
}

#[async_trait::async_trait]
impl RegistryStore for PgRegistry {
    async fn snapshot(&self, uid: Option<&UserId>) -> Result<Snapshot, Error> {
        let taken = match self.tokens.current(&self.pool).await {
            Ok(token) => self.snapshot_at(token, uid).await,
            Err(e) => Err(e),
        };
        if taken.is_err() {
            self.copy.clear();
        }
        taken
    }

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
