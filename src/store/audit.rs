//! audit.db: what every tool call did, who approved it, and when tool definitions changed.
//!
//! Its own file, because its lifecycle differs from chat.db: erasing a user's conversation
//! must never erase the record of what was done on their behalf. It never holds a bearer,
//! a secret, or tool arguments themselves (only their sha256), nor any tool output.

use rusqlite::{OptionalExtension, params};
use serde::Serialize;
use std::path::Path;

use super::db::Db;
use super::key::ConversationKey;
pub use crate::approval::Category;
use crate::auth::Caller;
use crate::error::Error;

const SCHEMA: &str = r#"
CREATE TABLE IF NOT EXISTS audit (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    at_ms INTEGER NOT NULL,
    kind TEXT NOT NULL,
    uid TEXT NOT NULL,
    conversation_id TEXT,
    request_id TEXT NOT NULL,
    server TEXT NOT NULL,
    tool TEXT NOT NULL,
    category TEXT NOT NULL,
    approval TEXT NOT NULL,
    arguments_sha256 TEXT,
    outcome TEXT NOT NULL,
    duration_ms INTEGER,
    detail TEXT
);
CREATE INDEX IF NOT EXISTS audit_by_user ON audit (uid, at_ms);
CREATE TABLE IF NOT EXISTS fingerprints (
    server TEXT NOT NULL,
    name TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    first_seen_ms INTEGER NOT NULL,
    last_changed_ms INTEGER NOT NULL,
    PRIMARY KEY (server, name)
);
"#;

/// What kind of event a row records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// A tool call made by the agent for the user.
    ToolCall,
    /// A read-only tool call relayed for an MCP App frame.
    AppCall,
    /// An app-only tool with effects, dispatched by the user's click in the island.
    AppDispatch,
    /// An approval decision that was refused (unknown, reused, foreign).
    ApprovalRefused,
    /// A relay request refused by the app rules.
    AppRefused,
    /// A tool definition or an app document changed its fingerprint.
    FingerprintChanged,
    /// The user's conversations, summaries and memory were erased (`DELETE /v1/me/data`).
    Erasure,
    /// A change to the registry (servers, assistants, personal assistants, approvals) was
    /// made (`ok`) or refused (`refused`, the rule in `detail`): issue #30.
    Registry,
    /// A turn could not use the assistant it was bound to (removed, no longer shared with the
    /// caller, or no longer allowed), and so did not run with it.
    AssistantRefused,
}

/// How the call was authorised (G3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalState {
    NotNeeded,
    Requested,
    ApprovedByUser,
    DeniedByUser,
    Refused,
}

/// What came of the event. The stored strings are part of the audit format: renaming a
/// variant must not change them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The tool ran and answered.
    Ok,
    /// The tool (or reaching it) failed.
    Error,
    /// Nothing ran: approval was requested, or the person denied it.
    NotRun,
    /// Refused by a rule before anything ran.
    Refused,
    /// The model called a tool that does not exist for it.
    UnknownTool,
    /// The model's arguments were not a JSON object.
    BadArguments,
    /// A definition's fingerprint changed.
    Changed,
    /// The user's data was erased.
    Erased,
}

impl Outcome {
    pub const ALL: [Outcome; 8] = [
        Outcome::Ok,
        Outcome::Error,
        Outcome::NotRun,
        Outcome::Refused,
        Outcome::UnknownTool,
        Outcome::BadArguments,
        Outcome::Changed,
        Outcome::Erased,
    ];

    /// The string stored in the `outcome` column.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::Error => "error",
            Outcome::NotRun => "not_run",
            Outcome::Refused => "refused",
            Outcome::UnknownTool => "unknown_tool",
            Outcome::BadArguments => "bad_arguments",
            Outcome::Changed => "changed",
            Outcome::Erased => "erased",
        }
    }

    pub(crate) fn parse(s: &str) -> Option<Outcome> {
        Outcome::ALL.into_iter().find(|o| o.as_str() == s)
    }
}

/// One audit row. Built with [`Entry::of`] and the builder's setters, so every row names
/// the verified caller it was made for.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Entry {
    pub kind: Kind,
    pub uid: String,
    pub conversation_id: Option<String>,
    pub request_id: String,
    pub server: String,
    pub tool: String,
    /// G3's category of the tool; none for rows that are not about one tool (an erasure).
    pub category: Option<Category>,
    pub approval: ApprovalState,
    pub arguments_sha256: Option<String>,
    pub outcome: Outcome,
    pub duration_ms: Option<i64>,
    /// A short machine-written note (never tool output, never a credential).
    pub detail: Option<String>,
}

/// Builds an [`Entry`]: what is not set stays empty (approval `not_needed`).
#[derive(Debug, Clone)]
#[must_use = "an audit entry is only recorded by AuditLog::record"]
pub struct EntryBuilder(Entry);

impl Entry {
    /// A row of `kind` with `outcome`, for the verified caller of this request.
    pub fn of(kind: Kind, outcome: Outcome, caller: &Caller) -> EntryBuilder {
        EntryBuilder(Entry {
            kind,
            uid: caller.uid.clone(),
            conversation_id: None,
            request_id: caller.request_id.clone(),
            server: String::new(),
            tool: String::new(),
            category: None,
            approval: ApprovalState::NotNeeded,
            arguments_sha256: None,
            outcome,
            duration_ms: None,
            detail: None,
        })
    }
}

impl EntryBuilder {
    pub fn conversation(mut self, key: &ConversationKey) -> Self {
        self.0.conversation_id = Some(key.id().to_string());
        self
    }

    /// The tool the row is about.
    pub fn tool(mut self, server: &str, tool: &str) -> Self {
        self.0.server = server.to_string();
        self.0.tool = tool.to_string();
        self
    }

    pub fn category(mut self, category: Category) -> Self {
        self.0.category = Some(category);
        self
    }

    pub fn approval(mut self, approval: ApprovalState) -> Self {
        self.0.approval = approval;
        self
    }

    pub fn arguments_sha256(mut self, sha256: String) -> Self {
        self.0.arguments_sha256 = Some(sha256);
        self
    }

    pub fn outcome(mut self, outcome: Outcome) -> Self {
        self.0.outcome = outcome;
        self
    }

    pub fn duration_ms(mut self, ms: i64) -> Self {
        self.0.duration_ms = Some(ms);
        self
    }

    pub fn detail(mut self, detail: impl Into<String>) -> Self {
        self.0.detail = Some(detail.into());
        self
    }

    pub fn build(self) -> Entry {
        self.0
    }
}

/// What observing a fingerprint found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Observed {
    /// The previous fingerprint, when the definition changed just now.
    pub previous: Option<String>,
    /// When the definition last changed, if it ever did since first seen.
    pub last_changed_ms: Option<i64>,
}

/// audit.db's operations, whatever the database.
#[async_trait::async_trait]
pub trait AuditStore: Send + Sync {
    /// Appends a row; resolves once committed.
    async fn append(&self, e: Entry) -> Result<(), Error>;

    /// Appends a row. A failure is logged: auditing must never break the user's turn, but
    /// it must never pass silently either.
    async fn record(&self, e: Entry) {
        if let Err(err) = self.append(e).await {
            tracing::error!(error = %err, "could not write an audit row");
        }
    }

    /// Records `fingerprint` and says whether, and when, the definition last changed.
    async fn observe(&self, server: &str, name: &str, fingerprint: &str) -> Result<Observed, Error>;

    /// Records `fingerprint` for (server, name); returns the previous one when it changed.
    async fn observe_fingerprint(&self, server: &str, name: &str, fingerprint: &str) -> Result<Option<String>, Error> {
        Ok(self.observe(server, name, fingerprint).await?.previous)
    }

    /// Every (server, tool) whose definition was ever listed to a user, by server and name:
    /// what the admin status shows for a server it cannot list itself.
    async fn known_tools(&self) -> Result<Vec<(String, String)>, Error>;

    /// Every row, oldest first (for operators' exports and tests).
    async fn entries(&self) -> Result<Vec<Entry>, Error>;

    /// Flushes and closes (at shutdown).
    async fn close(&self);
}

/// The column values of a row, as stored (the same strings in every database).
pub(crate) struct Columns {
    pub kind: String,
    pub category: &'static str,
    pub approval: String,
    pub outcome: &'static str,
}

impl Entry {
    pub(crate) fn columns(&self) -> Columns {
        Columns {
            kind: label(&self.kind),
            category: self.category.map_or("", Category::as_str),
            approval: label(&self.approval),
            outcome: self.outcome.as_str(),
        }
    }
}

/// audit.db as a SQLite file.
#[derive(Clone)]
pub struct SqliteAudit {
    db: Db,
}

fn label<T: Serialize>(v: &T) -> String {
    serde_json::to_value(v)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

impl SqliteAudit {
    pub fn open(path: &Path) -> Result<SqliteAudit, Error> {
        Ok(SqliteAudit {
            db: Db::open(path, SCHEMA)?,
        })
    }
}

#[async_trait::async_trait]
impl AuditStore for SqliteAudit {
    async fn append(&self, e: Entry) -> Result<(), Error> {
        let Columns {
            kind,
            category,
            approval,
            outcome,
        } = e.columns();
        self.db
            .write(move |c| {
                c.execute(
                    "INSERT INTO audit (at_ms, kind, uid, conversation_id, request_id, server, tool, category, approval, arguments_sha256, outcome, duration_ms, detail)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
                    params![
                        chrono::Utc::now().timestamp_millis(),
                        kind,
                        e.uid,
                        e.conversation_id,
                        e.request_id,
                        e.server,
                        e.tool,
                        category,
                        approval,
                        e.arguments_sha256,
                        outcome,
                        e.duration_ms,
                        e.detail
                    ],
                )?;
                Ok(())
            })
            .await
    }

    async fn observe(&self, server: &str, name: &str, fingerprint: &str) -> Result<Observed, Error> {
        let (server, name, fp) = (server.to_string(), name.to_string(), fingerprint.to_string());
        self.db
            .write(move |c| {
                let now = chrono::Utc::now().timestamp_millis();
                let old: Option<(String, i64, i64)> = c
                    .query_row(
                        "SELECT fingerprint, first_seen_ms, last_changed_ms FROM fingerprints WHERE server = ?1 AND name = ?2",
                        params![server, name],
                        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
                    )
                    .optional()?;
                let (observed, write) = compare_fingerprint(old, &fp, now);
                match write {
                    Some(FingerprintWrite::Insert) => c.execute(
                        "INSERT INTO fingerprints (server, name, fingerprint, first_seen_ms, last_changed_ms) VALUES (?1, ?2, ?3, ?4, ?4)",
                        params![server, name, fp, now],
                    )?,
                    Some(FingerprintWrite::Update) => c.execute(
                        "UPDATE fingerprints SET fingerprint = ?3, last_changed_ms = ?4 WHERE server = ?1 AND name = ?2",
                        params![server, name, fp, now],
                    )?,
                    None => 0,
                };
                Ok(observed)
            })
            .await
    }

    async fn known_tools(&self) -> Result<Vec<(String, String)>, Error> {
        self.db
            .read(|c| {
                let mut st = c.prepare("SELECT server, name FROM fingerprints ORDER BY server, name")?;
                let rows = st.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?.collect::<Result<Vec<_>, _>>()?;
                Ok(rows)
            })
            .await
    }

    async fn entries(&self) -> Result<Vec<Entry>, Error> {
        self.db
            .read(|c| {
                let mut st = c.prepare(&format!("SELECT {ENTRY_COLUMNS} FROM audit ORDER BY seq"))?;
                let rows = st
                    .query_map([], |r| {
                        Ok(Entry {
                            kind: parse_kind(&r.get::<_, String>(0)?),
                            uid: r.get(1)?,
                            conversation_id: r.get(2)?,
                            request_id: r.get(3)?,
                            server: r.get(4)?,
                            tool: r.get(5)?,
                            category: parse_category(&r.get::<_, String>(6)?),
                            approval: parse_approval(&r.get::<_, String>(7)?),
                            arguments_sha256: r.get(8)?,
                            outcome: Outcome::parse(&r.get::<_, String>(9)?).unwrap_or(Outcome::Error),
                            duration_ms: r.get(10)?,
                            detail: r.get(11)?,
                        })
                    })?
                    .collect::<Result<Vec<_>, _>>()?;
                Ok(rows)
            })
            .await
    }

    async fn close(&self) {
        self.db.close().await;
    }
}

/// What to write after reading a definition's stored fingerprint.
pub(crate) enum FingerprintWrite {
    /// First seen: a new row.
    Insert,
    /// Changed: the new fingerprint and the time of the change.
    Update,
}

/// Compares `fingerprint` with the stored (fingerprint, first seen, last changed), if any.
pub(crate) fn compare_fingerprint(stored: Option<(String, i64, i64)>, fingerprint: &str, now: i64) -> (Observed, Option<FingerprintWrite>) {
    match stored {
        None => (
            Observed {
                previous: None,
                last_changed_ms: None,
            },
            Some(FingerprintWrite::Insert),
        ),
        Some((old, first, last)) if old == fingerprint => (
            Observed {
                previous: None,
                last_changed_ms: (last > first).then_some(last),
            },
            None,
        ),
        Some((old, _, _)) => (
            Observed {
                previous: Some(old),
                last_changed_ms: Some(now),
            },
            Some(FingerprintWrite::Update),
        ),
    }
}

/// The columns [`AuditStore::entries`] reads, in the order both databases map them.
pub(crate) const ENTRY_COLUMNS: &str =
    "kind, uid, conversation_id, request_id, server, tool, category, approval, arguments_sha256, outcome, duration_ms, detail";

pub(crate) fn parse_kind(s: &str) -> Kind {
    match s {
        "tool_call" => Kind::ToolCall,
        "app_call" => Kind::AppCall,
        "app_dispatch" => Kind::AppDispatch,
        "approval_refused" => Kind::ApprovalRefused,
        "app_refused" => Kind::AppRefused,
        "erasure" => Kind::Erasure,
        "registry" => Kind::Registry,
        "assistant_refused" => Kind::AssistantRefused,
        _ => Kind::FingerprintChanged,
    }
}

pub(crate) fn parse_category(s: &str) -> Option<Category> {
    [Category::Data, Category::Action].into_iter().find(|c| c.as_str() == s)
}

pub(crate) fn parse_approval(s: &str) -> ApprovalState {
    match s {
        "not_needed" => ApprovalState::NotNeeded,
        "requested" => ApprovalState::Requested,
        "approved_by_user" => ApprovalState::ApprovedByUser,
        "denied_by_user" => ApprovalState::DeniedByUser,
        _ => ApprovalState::Refused,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outcomes_are_stored_as_before() {
        // The strings audit.db has always held: operators' queries depend on them.
        assert_eq!(
            Outcome::ALL.map(Outcome::as_str),
            [
                "ok",
                "error",
                "not_run",
                "refused",
                "unknown_tool",
                "bad_arguments",
                "changed",
                "erased"
            ]
        );
        assert!(
            Outcome::ALL
                .into_iter()
                .all(|o| label(&o) == o.as_str() && Outcome::parse(o.as_str()) == Some(o))
        );
    }
}
