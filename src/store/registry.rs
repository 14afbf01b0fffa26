//! The registry's rows: MCP servers and assistants an admin registered in Nextcloud's admin
//! page, the admin's policy for personal assistants, and the personal assistants people build
//! (issue #30). Both implementations keep them where every instance sees them: SQLite in
//! chat.db (a personal assistant is its owner's data and goes with `erase_user`), PostgreSQL
//! in the tables of migration 0004. Each instance answers a request from its own copy of the
//! rows ([`RegistryCopy`]) while the registry's version says nothing changed.
//!
//! This module stores and returns JSON documents; it never validates them (`registry` does,
//! before anything is written) and it never decides who may see what: a shared assistant is
//! stored with the group it was proposed to, and whether a caller is in that group is the
//! app's signed word on each request (docs/security.md), never a membership kept here.

use serde::{Deserialize, Serialize};

use super::key::UserId;
use crate::error::Error;

/// Which kind of admin entry a row is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind {
    Server,
    Assistant,
    /// The admin's settings (one row, named [`POLICY_ROW`]).
    Policy,
}

/// The name of the one policy row.
pub const POLICY_ROW: &str = "policy";

impl EntryKind {
    pub fn as_str(self) -> &'static str {
        match self {
            EntryKind::Server => "server",
            EntryKind::Assistant => "assistant",
            EntryKind::Policy => "policy",
        }
    }
}

/// How a put treats an existing row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Put {
    /// Only if no row has the name (false: it exists).
    Create,
    /// Only if the row exists (false: it does not).
    Replace,
    /// Either way.
    Upsert,
}

/// One personal assistant, as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PersonalRow {
    pub id: String,
    pub uid: String,
    /// The validated document (`registry::PersonalSpec`) as JSON.
    pub body: String,
    /// The group it was proposed to, if any.
    pub share_group: Option<String>,
    /// Bumped by every edit of the owner.
    pub version: i64,
    /// The version an admin approved; shared only while it equals `version`.
    pub approved_version: Option<i64>,
    pub updated_at: i64,
}

impl PersonalRow {
    /// Whether the group it was proposed to sees it: approved, and not edited since.
    pub fn shared(&self) -> bool {
        self.share_group.is_some() && self.approved_version == Some(self.version)
    }
}

/// What an approval found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Approval {
    Approved,
    /// No such assistant, or it is not proposed to any group.
    NotFound,
    /// The owner edited it after the version the admin looked at.
    Stale,
}

/// The rows every request shares: admin entries by kind, and the personal assistants
/// proposed to a group.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SharedRows {
    pub servers: Vec<(String, String)>,
    pub assistants: Vec<(String, String)>,
    pub policy: Vec<(String, String)>,
    pub proposed: Vec<PersonalRow>,
}

impl SharedRows {
    /// The entries of `kind`, by name.
    pub fn entries(&self, kind: EntryKind) -> &[(String, String)] {
        match kind {
            EntryKind::Server => &self.servers,
            EntryKind::Assistant => &self.assistants,
            EntryKind::Policy => &self.policy,
        }
    }
}

/// What one request reads of the registry: the shared rows and the caller's own assistants,
/// each at least as new as every write acknowledged before the request asked for it.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    pub shared: std::sync::Arc<SharedRows>,
    /// The personal assistants of the uid asked for (none when no uid was given).
    pub own: std::sync::Arc<Vec<PersonalRow>>,
}

/// Most users whose own assistants a [`RegistryCopy`] keeps; past it the per-user part starts over.
const MAX_CACHED_USERS: usize = 10_000;

/// What a [`RegistryCopy`] lacks for one request, for its database to read.
pub struct Missing {
    /// The shared rows.
    pub shared: bool,
    /// This user's own assistants.
    pub own: Option<UserId>,
}

/// What the database read for a [`Missing`]: the parts asked for, `None` for the others.
#[derive(Default)]
pub struct Found {
    pub shared: Option<SharedRows>,
    pub own: Option<Vec<PersonalRow>>,
}

/// An instance's copy of the registry's rows, tagged with the registry version they were read
/// under (PostgreSQL: the token its triggers change in every write's transaction; SQLite: a
/// count every acknowledged write raises first). Every turn reads the registry, and the rows
/// change only when someone edits them, so a request whose version matches the tag costs a
/// lock and two reference counts instead of a trip to the database.
///
/// What it must never do: serve rows older than a write acknowledged before the request
/// asked. That rests on its callers taking the version before anything is read and passing
/// it here: rows are then always read after the version they are tagged with, so a copy is at
/// least as new as its tag, and a write acknowledged later has a version of its own.
pub struct RegistryCopy<T> {
    rows: std::sync::Mutex<CopiedRows<T>>,
}

struct CopiedRows<T> {
    tag: Option<T>,
    shared: Option<std::sync::Arc<SharedRows>>,
    own: std::collections::HashMap<String, std::sync::Arc<Vec<PersonalRow>>>,
}

impl<T> Default for RegistryCopy<T> {
    fn default() -> Self {
        RegistryCopy {
            rows: std::sync::Mutex::new(CopiedRows {
                tag: None,
                shared: None,
                own: std::collections::HashMap::new(),
            }),
        }
    }
}

impl<T: PartialEq + Clone> RegistryCopy<T> {
    /// The registry as of version `tag`: the copy's rows where they were read under it, the
    /// rest read by `read` now (after `tag` was taken) and kept under it.
    pub async fn snapshot<F, Fut>(&self, tag: &T, uid: Option<&UserId>, read: F) -> Result<Snapshot, Error>
    where
        F: FnOnce(Missing) -> Fut,
        Fut: std::future::Future<Output = Result<Found, Error>>,
    {
        let (shared, own) = {
            let rows = self.tagged(tag);
            (rows.shared.clone(), uid.and_then(|u| rows.own.get(u.as_str()).cloned()))
        };
        let missing = Missing {
            shared: shared.is_none(),
            own: uid.filter(|_| own.is_none()).cloned(),
        };
        if !missing.shared && missing.own.is_none() {
            return Ok(Snapshot {
                shared: shared.unwrap_or_default(),
                own: own.unwrap_or_default(),
            });
        }
        let found = read(missing).await?;
        let mut rows = self.tagged(tag);
        let shared = match (shared, found.shared) {
            (Some(shared), _) => shared,
            (None, read) => {
                let shared = std::sync::Arc::new(read.unwrap_or_default());
                rows.shared = Some(shared.clone());
                shared
            }
        };
        let own = match (uid, own, found.own) {
            (_, Some(own), _) => own,
            (Some(uid), None, Some(read)) => {
                let own = std::sync::Arc::new(read);
                if rows.own.len() >= MAX_CACHED_USERS {
                    rows.own.clear();
                }
                rows.own.insert(uid.as_str().to_string(), own.clone());
                own
            }
            _ => std::sync::Arc::default(),
        };
        Ok(Snapshot { shared, own })
    }

    /// Forgets every row (a failed read: nothing is left to reason about).
    pub fn clear(&self) {
        let mut rows = self.lock();
        rows.tag = None;
        rows.shared = None;
        rows.own.clear();
    }

    /// The copy, made `tag`'s (emptied if it was another's).
    fn tagged(&self, tag: &T) -> std::sync::MutexGuard<'_, CopiedRows<T>> {
        let mut rows = self.lock();
        if rows.tag.as_ref() != Some(tag) {
            rows.tag = Some(tag.clone());
            rows.shared = None;
            rows.own.clear();
        }
        rows
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, CopiedRows<T>> {
        // A panic elsewhere while holding it leaves nothing half-written that matters: the
        // copy is only ever replaced whole or extended.
        self.rows.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// The registry's operations, whatever the database.
#[async_trait::async_trait]
pub trait RegistryStore: Send + Sync {
    /// Every row a request reads, in one call: the shared rows, and `uid`'s own assistants.
    /// Reads them all by default; both databases answer from the instance's [`RegistryCopy`]
    /// instead, checked against a registry version (SQLite: a count in memory, PostgreSQL:
    /// the database's registry token, store::postgres::registry).
    async fn snapshot(&self, uid: Option<&UserId>) -> Result<Snapshot, Error> {
        let shared = SharedRows {
            servers: self.entries(EntryKind::Server).await?,
            assistants: self.entries(EntryKind::Assistant).await?,
            policy: self.entries(EntryKind::Policy).await?,
            proposed: self.proposed().await?,
        };
        let own = match uid {
            Some(uid) => self.personal_of(uid).await?,
            None => Vec::new(),
        };
        Ok(Snapshot {
            shared: std::sync::Arc::new(shared),
            own: std::sync::Arc::new(own),
        })
    }
    /// Every entry of `kind`: (name, JSON), by name.
    async fn entries(&self, kind: EntryKind) -> Result<Vec<(String, String)>, Error>;
    /// Writes one entry; false when `mode` refused (see [`Put`]).
    async fn put_entry(&self, kind: EntryKind, name: &str, body: &str, mode: Put) -> Result<bool, Error>;
    async fn delete_entry(&self, kind: EntryKind, name: &str) -> Result<bool, Error>;

    /// The personal assistants `uid` owns.
    async fn personal_of(&self, uid: &UserId) -> Result<Vec<PersonalRow>, Error>;
    /// Every personal assistant proposed to a group (approved or waiting).
    async fn proposed(&self) -> Result<Vec<PersonalRow>, Error>;
    async fn personal(&self, id: &str) -> Result<Option<PersonalRow>, Error>;
    /// A new personal assistant (version 1, not shared).
    async fn create_personal(&self, uid: &UserId, id: &str, body: &str) -> Result<(), Error>;
    /// The owner's edit: a new version, which needs approval again. False: not theirs / none.
    async fn update_personal(&self, uid: &UserId, id: &str, body: &str) -> Result<bool, Error>;
    /// The owner proposes it to `group` (None withdraws it); a proposal is not approved yet.
    async fn share_personal(&self, uid: &UserId, id: &str, group: Option<&str>) -> Result<bool, Error>;
    async fn delete_personal(&self, uid: &UserId, id: &str) -> Result<bool, Error>;
    /// An admin approves `version` of a proposed assistant.
    async fn approve(&self, id: &str, version: i64) -> Result<Approval, Error>;
    /// Every personal assistant of `uid` (`DELETE /v1/me/data`).
    async fn erase_user(&self, uid: &UserId) -> Result<usize, Error>;
}

fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

/// The registry's tables in chat.db (idempotent; created when the store opens).
const SQLITE_SCHEMA: &str = r#"
CREATE TABLE IF NOT EXISTS registry_entries (
    kind TEXT NOT NULL,
    name TEXT NOT NULL,
    body TEXT NOT NULL,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (kind, name)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS personal_assistants (
    id TEXT PRIMARY KEY,
    uid TEXT NOT NULL,
    body TEXT NOT NULL,
    share_group TEXT,
    version INTEGER NOT NULL,
    approved_version INTEGER,
    updated_at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS personal_assistants_uid ON personal_assistants (uid);
"#;

/// The registry in chat.db, with the instance's copy of its rows.
///
/// SQLite means one orchestrator process, and every write to these tables is one of this
/// type's, so the copy's version is a count in memory: each write raises it once its
/// transaction has ended and before its caller is answered ([`super::db::Db::write_then`]), and a
/// snapshot takes it before looking at the copy. A request therefore never sees rows older
/// than a write acknowledged before it asked, and while nothing changes it never leaves the
/// async worker (issue #33, P1b: the read was a thread hop and five statements per turn).
pub struct SqliteRegistry {
    db: super::db::Db,
    version: std::sync::Arc<std::sync::atomic::AtomicU64>,
    copy: RegistryCopy<u64>,
}

const PERSONAL_COLUMNS: &str = "id, uid, body, share_group, version, approved_version, updated_at";

fn personal_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<PersonalRow> {
    Ok(PersonalRow {
        id: r.get(0)?,
        uid: r.get(1)?,
        body: r.get(2)?,
        share_group: r.get(3)?,
        version: r.get(4)?,
        approved_version: r.get(5)?,
        updated_at: r.get(6)?,
    })
}

impl SqliteRegistry {
    /// On chat.db (`chat`'s file: personal assistants are the person's data, like their chats).
    pub async fn open(chat: &super::chat::SqliteChat) -> Result<SqliteRegistry, Error> {
        let db = chat.db();
        db.write(|c| Ok(c.execute_batch(SQLITE_SCHEMA)?)).await?;
        Ok(SqliteRegistry {
            db,
            version: std::sync::Arc::default(),
            copy: RegistryCopy::default(),
        })
    }

    /// A write to the registry's tables; answered only after the version has moved on, so no
    /// request arriving after the answer can be served a copy read before the write.
    async fn write<T, F>(&self, f: F) -> Result<T, Error>
    where
        T: Send + 'static,
        F: FnOnce(&rusqlite::Connection) -> Result<T, Error> + Send + 'static,
    {
        let version = self.version.clone();
        // Raised whether or not the transaction committed: a copy is only ever dropped for
        // nothing, never kept past a change.
        let moved_on = move || {
            version.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        };
        self.db.write_then(f, moved_on).await
    }

    async fn personal_where(&self, clause: &'static str, arg: String) -> Result<Vec<PersonalRow>, Error> {
        self.db.read(move |c| personal_rows(c, clause, &arg)).await
    }
}

/// The statements below are read on every request, so they are prepared once per connection
/// (`prepare_cached`) rather than parsed again each time.
fn personal_rows(c: &rusqlite::Connection, clause: &'static str, arg: &str) -> Result<Vec<PersonalRow>, Error> {
    let mut stmt = c.prepare_cached(&format!(
        "SELECT {PERSONAL_COLUMNS} FROM personal_assistants WHERE {clause} ORDER BY id"
    ))?;
    let rows = stmt.query_map([arg], personal_row)?.collect::<Result<Vec<_>, _>>()?;
    Ok(rows)
}

fn entry_rows(c: &rusqlite::Connection, kind: EntryKind) -> Result<Vec<(String, String)>, Error> {
    let mut stmt = c.prepare_cached("SELECT name, body FROM registry_entries WHERE kind = ?1 ORDER BY name")?;
    let rows = stmt
        .query_map([kind.as_str()], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(rows)
}

/// [`RegistryStore::proposed`]'s clause (the `?1 = ?1` takes the one argument every clause has).
const PROPOSED: &str = "share_group IS NOT NULL AND ?1 = ?1";

#[async_trait::async_trait]
impl RegistryStore for SqliteRegistry {
    /// From the copy while the version is unchanged; otherwise what is missing in one trip to
    /// the reader connection (a thread hop per table would cost more than the reads).
    async fn snapshot(&self, uid: Option<&UserId>) -> Result<Snapshot, Error> {
        let version = self.version.load(std::sync::atomic::Ordering::SeqCst);
        let read = |missing: Missing| {
            self.db.read(move |c| {
                let shared = if missing.shared {
                    Some(SharedRows {
                        servers: entry_rows(c, EntryKind::Server)?,
                        assistants: entry_rows(c, EntryKind::Assistant)?,
                        policy: entry_rows(c, EntryKind::Policy)?,
                        proposed: personal_rows(c, PROPOSED, "")?,
                    })
                } else {
                    None
                };
                let own = match missing.own {
                    Some(uid) => Some(personal_rows(c, "uid = ?1", uid.as_str())?),
                    None => None,
                };
                Ok(Found { shared, own })
            })
        };
        let taken = self.copy.snapshot(&version, uid, read).await;
        if taken.is_err() {
            self.copy.clear();
        }
        taken
    }

    async fn entries(&self, kind: EntryKind) -> Result<Vec<(String, String)>, Error> {
        self.db.read(move |c| entry_rows(c, kind)).await
    }

    async fn put_entry(&self, kind: EntryKind, name: &str, body: &str, mode: Put) -> Result<bool, Error> {
        let (name, body) = (name.to_string(), body.to_string());
        self.write(move |c| {
            let exists: bool = c.query_row(
                "SELECT EXISTS (SELECT 1 FROM registry_entries WHERE kind = ?1 AND name = ?2)",
                rusqlite::params![kind.as_str(), name],
                |r| r.get(0),
            )?;
            if (mode == Put::Create && exists) || (mode == Put::Replace && !exists) {
                return Ok(false);
            }
            c.execute(
                "INSERT INTO registry_entries (kind, name, body, updated_at) VALUES (?1, ?2, ?3, ?4)
                     ON CONFLICT (kind, name) DO UPDATE SET body = excluded.body, updated_at = excluded.updated_at",
                rusqlite::params![kind.as_str(), name, body, now_ms()],
            )?;
            Ok(true)
        })
        .await
    }

    async fn delete_entry(&self, kind: EntryKind, name: &str) -> Result<bool, Error> {
        let name = name.to_string();
        self.write(move |c| {
            Ok(c.execute(
                "DELETE FROM registry_entries WHERE kind = ?1 AND name = ?2",
                rusqlite::params![kind.as_str(), name],
            )? > 0)
        })
        .await
    }

    async fn personal_of(&self, uid: &UserId) -> Result<Vec<PersonalRow>, Error> {
        self.personal_where("uid = ?1", uid.as_str().to_string()).await
    }

    async fn proposed(&self) -> Result<Vec<PersonalRow>, Error> {
        self.personal_where(PROPOSED, String::new()).await
    }

    async fn personal(&self, id: &str) -> Result<Option<PersonalRow>, Error> {
        Ok(self.personal_where("id = ?1", id.to_string()).await?.pop())
    }

    async fn create_personal(&self, uid: &UserId, id: &str, body: &str) -> Result<(), Error> {
        let (uid, id, body) = (uid.as_str().to_string(), id.to_string(), body.to_string());
        self.write(move |c| {
            c.execute(
                "INSERT INTO personal_assistants (id, uid, body, version, updated_at) VALUES (?1, ?2, ?3, 1, ?4)",
                rusqlite::params![id, uid, body, now_ms()],
            )?;
            Ok(())
        })
        .await
    }

    async fn update_personal(&self, uid: &UserId, id: &str, body: &str) -> Result<bool, Error> {
        let (uid, id, body) = (uid.as_str().to_string(), id.to_string(), body.to_string());
        self.write(move |c| {
            Ok(c.execute(
                "UPDATE personal_assistants SET body = ?3, version = version + 1, updated_at = ?4 WHERE uid = ?1 AND id = ?2",
                rusqlite::params![uid, id, body, now_ms()],
            )? > 0)
        })
        .await
    }

    async fn share_personal(&self, uid: &UserId, id: &str, group: Option<&str>) -> Result<bool, Error> {
        let (uid, id, group) = (uid.as_str().to_string(), id.to_string(), group.map(str::to_string));
        self.write(move |c| {
            // A new group is a new proposal: whatever was approved for the old one is not.
            Ok(c.execute(
                "UPDATE personal_assistants SET share_group = ?3, approved_version = NULL, updated_at = ?4
                     WHERE uid = ?1 AND id = ?2",
                rusqlite::params![uid, id, group, now_ms()],
            )? > 0)
        })
        .await
    }

    async fn delete_personal(&self, uid: &UserId, id: &str) -> Result<bool, Error> {
        let (uid, id) = (uid.as_str().to_string(), id.to_string());
        self.write(move |c| {
            Ok(c.execute(
                "DELETE FROM personal_assistants WHERE uid = ?1 AND id = ?2",
                rusqlite::params![uid, id],
            )? > 0)
        })
        .await
    }

    async fn approve(&self, id: &str, version: i64) -> Result<Approval, Error> {
        let id = id.to_string();
        self.write(move |c| {
            let found: Option<(i64, Option<String>)> = rusqlite::OptionalExtension::optional(c.query_row(
                "SELECT version, share_group FROM personal_assistants WHERE id = ?1",
                [&id],
                |r| Ok((r.get(0)?, r.get(1)?)),
            ))?;
            Ok(match found {
                None | Some((_, None)) => Approval::NotFound,
                Some((current, _)) if current != version => Approval::Stale,
                Some(_) => {
                    c.execute(
                        "UPDATE personal_assistants SET approved_version = ?2 WHERE id = ?1",
                        rusqlite::params![id, version],
                    )?;
                    Approval::Approved
                }
            })
        })
        .await
    }

    async fn erase_user(&self, uid: &UserId) -> Result<usize, Error> {
        let uid = uid.as_str().to_string();
        let n = self
            .write(move |c| Ok(c.execute("DELETE FROM personal_assistants WHERE uid = ?1", [uid])?))
            .await?;
        // As chat.db's own erasure does: nothing of the deleted text stays in the WAL.
        self.db.checkpoint_truncate().await?;
        Ok(n)
    }
}
