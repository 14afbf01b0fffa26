//! audit.db: what every tool call did, who approved it, and when tool definitions changed.
//!
//! Its own file, because its lifecycle differs from chat.db: erasing a user's conversation
//! must never erase the record of what was done on their behalf. It never holds a bearer,
//! a secret, or tool arguments themselves (only their sha256), nor any tool output.

use rusqlite::{OptionalExtension, params};
use serde::Serialize;
use std::path::Path;

use super::db::Db;
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

/// One audit row.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Entry {
    pub kind: Kind,
    pub uid: String,
    pub conversation_id: Option<String>,
    pub request_id: String,
    pub server: String,
    pub tool: String,
    pub category: String,
    pub approval: ApprovalState,
    pub arguments_sha256: Option<String>,
    /// `ok`, `error`, `not_run`, `refused`, `changed`, …
    pub outcome: String,
    pub duration_ms: Option<i64>,
    /// A short machine-written note (never tool output, never a credential).
    pub detail: Option<String>,
}

/// What observing a fingerprint found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Observed {
    /// The previous fingerprint, when the definition changed just now.
    pub previous: Option<String>,
    /// When the definition last changed, if it ever did since first seen.
    pub last_changed_ms: Option<i64>,
}

#[derive(Clone)]
pub struct AuditLog {
    db: Db,
}

fn label<T: Serialize>(v: &T) -> String {
    serde_json::to_value(v)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

impl AuditLog {
    pub fn open(path: &Path) -> Result<AuditLog, Error> {
        Ok(AuditLog {
            db: Db::open(path, SCHEMA)?,
        })
    }

    /// Appends a row. A failure is logged: auditing must never break the user's turn, but
    /// it must never pass silently either.
    pub async fn record(&self, e: Entry) {
        let kind = label(&e.kind);
        let approval = label(&e.approval);
        let result = self
            .db
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
                        e.category,
                        approval,
                        e.arguments_sha256,
                        e.outcome,
                        e.duration_ms,
                        e.detail
                    ],
                )?;
                Ok(())
            })
            .await;
        if let Err(err) = result {
            tracing::error!(error = %err, "could not write an audit row");
        }
    }

    /// Records `fingerprint` for (server, name); returns the previous one when it changed.
    pub async fn observe_fingerprint(&self, server: &str, name: &str, fingerprint: &str) -> Result<Option<String>, Error> {
        Ok(self.observe(server, name, fingerprint).await?.previous)
    }

    /// Records `fingerprint` and says whether, and when, the definition last changed.
    pub async fn observe(&self, server: &str, name: &str, fingerprint: &str) -> Result<Observed, Error> {
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
                match old {
                    None => {
                        c.execute(
                            "INSERT INTO fingerprints (server, name, fingerprint, first_seen_ms, last_changed_ms) VALUES (?1, ?2, ?3, ?4, ?4)",
                            params![server, name, fp, now],
                        )?;
                        Ok(Observed { previous: None, last_changed_ms: None })
                    }
                    Some((old, first, last)) if old == fp => Ok(Observed { previous: None, last_changed_ms: (last > first).then_some(last) }),
                    Some((old, _, _)) => {
                        c.execute(
                            "UPDATE fingerprints SET fingerprint = ?3, last_changed_ms = ?4 WHERE server = ?1 AND name = ?2",
                            params![server, name, fp, now],
                        )?;
                        Ok(Observed { previous: Some(old), last_changed_ms: Some(now) })
                    }
                }
            })
            .await
    }

    /// Every (server, tool) whose definition was ever listed to a user, by server and name:
    /// what the admin status shows for a server it cannot list itself.
    pub async fn known_tools(&self) -> Result<Vec<(String, String)>, Error> {
        self.db
            .read(|c| {
                let mut st = c.prepare("SELECT server, name FROM fingerprints ORDER BY server, name")?;
                let rows = st.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?.collect::<Result<Vec<_>, _>>()?;
                Ok(rows)
            })
            .await
    }

    /// Every row, oldest first (for operators' exports and tests).
    pub async fn entries(&self) -> Result<Vec<Entry>, Error> {
        self.db
            .read(|c| {
                let mut st = c.prepare(
                    "SELECT kind, uid, conversation_id, request_id, server, tool, category, approval, arguments_sha256, outcome, duration_ms, detail FROM audit ORDER BY seq",
                )?;
                let rows = st
                    .query_map([], |r| {
                        Ok(Entry {
                            kind: parse_kind(&r.get::<_, String>(0)?),
                            uid: r.get(1)?,
                            conversation_id: r.get(2)?,
                            request_id: r.get(3)?,
                            server: r.get(4)?,
                            tool: r.get(5)?,
                            category: r.get(6)?,
                            approval: parse_approval(&r.get::<_, String>(7)?),
                            arguments_sha256: r.get(8)?,
                            outcome: r.get(9)?,
                            duration_ms: r.get(10)?,
                            detail: r.get(11)?,
                        })
                    })?
                    .collect::<Result<Vec<_>, _>>()?;
                Ok(rows)
            })
            .await
    }

    pub async fn close(self) {
        self.db.close().await;
    }
}

fn parse_kind(s: &str) -> Kind {
    match s {
        "tool_call" => Kind::ToolCall,
        "app_call" => Kind::AppCall,
        "app_dispatch" => Kind::AppDispatch,
        "approval_refused" => Kind::ApprovalRefused,
        "app_refused" => Kind::AppRefused,
        "erasure" => Kind::Erasure,
        _ => Kind::FingerprintChanged,
    }
}

fn parse_approval(s: &str) -> ApprovalState {
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

    #[tokio::test]
    async fn rows_and_fingerprints_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let a = AuditLog::open(&dir.path().join("audit.db")).unwrap();
        let e = Entry {
            kind: Kind::ToolCall,
            uid: "alice".into(),
            conversation_id: Some("c1".into()),
            request_id: "r1".into(),
            server: "nextcloud".into(),
            tool: "files_move".into(),
            category: "action".into(),
            approval: ApprovalState::ApprovedByUser,
            arguments_sha256: Some("ab".into()),
            outcome: "ok".into(),
            duration_ms: Some(12),
            detail: None,
        };
        a.record(e.clone()).await;
        assert_eq!(a.entries().await.unwrap(), vec![e]);
        assert_eq!(a.observe_fingerprint("s", "t", "f1").await.unwrap(), None);
        assert_eq!(a.observe_fingerprint("s", "t", "f1").await.unwrap(), None);
        assert_eq!(a.observe_fingerprint("s", "t", "f2").await.unwrap(), Some("f1".into()));
    }
}
