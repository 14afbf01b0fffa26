//! The one stack every attack case runs against, started once per test binary: a seeded
//! Nextcloud stand-in, mcp-nextcloud in front of it, probe-mcp (marked Nextcloud-facing, so
//! it gets the user's token like a second first-party server), two more probe-mcps playing
//! third-party servers (`weather`, `auth=none;trust=reads`: the operator let its read-only
//! tools run unasked; `outside`, plain `auth=none`: every call asks), the scripted model
//! (whose text tool calls the orchestrator reads, `TAMEBI_TOOL_CALL_TEXT=auto`) and the real
//! orchestrator pointed at all of them. Plus the read-only views a case needs to
//! prove an effect did NOT happen: WebDAV/CalDAV/Deck/OCS state as alice sees it, the
//! probe's call log, audit.db, and what the model was sent.

use anyhow::{Context, Result, bail, ensure};
use reqwest::Method;
use serde_json::{Value, json};
use std::time::Duration;
use test_harness::mcp_mail::McpMail;
use test_harness::mcp_nextcloud::McpNextcloud;
use test_harness::mcp_server::McpServer;
use test_harness::orchestrator::{Options, Orchestrator, approval_decision, parse_sse, parts, user_turn};
use test_harness::probe_mcp::ProbeMcp;
use test_harness::scripted_model::ScriptedModel;
use test_harness::standin::Standin;

/// The conversation (of alice's, with the default assistant) that app requests name.
pub const APP_CONVERSATION: &str = "apps-frame";

pub struct Stack {
    // Drop order: the orchestrator first, the stand-in last.
    pub orch: Orchestrator,
    pub model: ScriptedModel,
    pub probe: ProbeMcp,
    /// A third-party server configured `auth=none;trust=reads`: it must never see a credential.
    pub weather: ProbeMcp,
    /// A third-party server configured `auth=none` (nobody vouched for it): no call reaches it
    /// without the person's approval (issue #27).
    pub outside: ProbeMcp,
    /// Kept alive for the orchestrator; tests reach Nextcloud through it only via the agent.
    pub _mcp: McpServer,
    /// mcp-mail in front of the stand-in's mail bridge (server name `mail`).
    pub mail: McpServer,
    pub nc: Standin,
    pub http: reqwest::Client,
    pub board: Board,
}

/// alice's seeded Deck board.
#[derive(Debug, Clone, Copy)]
pub struct Board {
    pub id: u64,
    pub todo: u64,
    pub done: u64,
}

/// One streamed turn, decoded.
#[derive(Debug, Default)]
pub struct Turn {
    pub status: u16,
    pub parts: Vec<Value>,
    pub message_id: String,
    /// (approvalId, toolCallId) in order.
    pub approvals: Vec<(String, String)>,
}

impl Turn {
    /// The (toolName, input) of a tool call in this turn.
    pub fn call(&self, tool_call_id: &str) -> Option<(String, Value)> {
        self.parts
            .iter()
            .find(|p| p["type"] == "tool-input-available" && p["toolCallId"] == tool_call_id)
            .map(|p| (p["toolName"].as_str().unwrap_or("").to_string(), p["input"].clone()))
    }

    pub fn tool_name_of_approval(&self, i: usize) -> String {
        self.approvals
            .get(i)
            .and_then(|(_, c)| self.call(c))
            .map(|(n, _)| n)
            .unwrap_or_default()
    }

    /// The part types for tool results (`tool-output-available` etc.) of `tool_name`.
    pub fn outputs_of(&self, tool_name: &str) -> Vec<String> {
        let ids: Vec<&Value> = self
            .parts
            .iter()
            .filter(|p| p["type"] == "tool-input-available" && p["toolName"] == tool_name)
            .map(|p| &p["toolCallId"])
            .collect();
        self.parts
            .iter()
            .filter(|p| p["type"].as_str().is_some_and(|t| t.starts_with("tool-output")) && ids.contains(&&p["toolCallId"]))
            .map(|p| p["type"].as_str().unwrap_or("").to_string())
            .collect()
    }

    /// The approval-requested call as the tool part a client echoes back with its decision
    /// (the harness's [`approval_decision`]). A turn that did not ask for that approval is an
    /// error, a finding of the case, not a panic that would end the whole suite.
    pub fn decision(&self, i: usize, approved: bool) -> Result<Value> {
        let asked = self.approvals.get(i).is_some_and(|(_, call_id)| self.call(call_id).is_some());
        ensure!(asked, "the turn asked for no approval #{i} (with its call): {:?}", self.parts);
        Ok(approval_decision(&self.parts, i, approved))
    }
}

/// One audit.db row.
#[derive(Debug, Clone)]
pub struct AuditRow {
    pub seq: i64,
    pub kind: String,
    pub uid: String,
    pub conversation_id: Option<String>,
    pub request_id: String,
    pub server: String,
    pub tool: String,
    pub category: String,
    pub approval: String,
    pub arguments_sha256: Option<String>,
    pub outcome: String,
    pub detail: Option<String>,
}

impl Stack {
    pub async fn start() -> Stack {
        let (nc, mcp, mail, probe, weather, outside, model) = tokio::task::spawn_blocking(|| {
            let nc = Standin::start_seeded();
            let mcp = McpNextcloud::start(nc.url());
            let mail = McpMail::start(nc.url(), &[]);
            let probe = ProbeMcp::start();
            probe.set_tools(crate::policy::probe_tools());
            let weather = ProbeMcp::start();
            weather.set_tools(crate::credentials::weather_tools());
            let outside = ProbeMcp::start();
            outside.set_tools(crate::third_party::outside_tools());
            (nc, mcp, mail, probe, weather, outside, ScriptedModel::start())
        })
        .await
        .expect("start stand-in, mcp-nextcloud, mcp-mail, probe-mcps, scripted model");
        let options = Options {
            model_url: model.url(),
            mcp_servers: format!(
                "nextcloud={};auth=nextcloud,mail={};auth=nextcloud,probe={};auth=nextcloud,weather={};auth=none;trust=reads,outside={};auth=none",
                mcp.url(),
                mail.url(),
                probe.url(),
                weather.url(),
                outside.url()
            ),
            // Calls a model writes as text go through the same registry and G3 as native ones;
            // the suite proves it for third-party servers (third_party::text_*).
            extra_env: vec![("TAMEBI_TOOL_CALL_TEXT".into(), "auto".into())],
        };
        let orch = tokio::task::spawn_blocking(move || Orchestrator::start(options))
            .await
            .expect("start the orchestrator");
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(60))
            .build()
            .expect("http client");
        let mut stack = Stack {
            orch,
            model,
            probe,
            weather,
            outside,
            _mcp: mcp,
            mail,
            nc,
            http,
            board: Board { id: 0, todo: 0, done: 0 },
        };
        stack.board = stack.find_board().await.expect("alice's seeded Deck board");
        stack.mkcol("alice", "escape").await.expect("MKCOL escape/");
        // The conversation alice's app frames are shown in (relay requests name it).
        stack.script(APP_CONVERSATION, json!([{"text": "Here is your app."}]));
        let turn = stack.chat("alice", APP_CONVERSATION, APP_CONVERSATION).await.expect("a turn");
        assert_eq!(turn.status, 200, "the app frames' conversation");
        stack
    }

    // ----- the orchestrator, as the Nextcloud app would call it -----

    /// A user turn as `uid` (with their app password as the Nextcloud bearer).
    pub async fn chat(&self, uid: &str, cid: &str, text: &str) -> Result<Turn> {
        let body = user_turn(cid, &format!("m-{}", uuid_like()), text);
        self.post_chat(uid, &body).await
    }

    /// What the Nextcloud app sends for `uid`: one token per Nextcloud-facing server (the
    /// stand-in accepts the app password as a bearer for every audience), none for `weather`
    /// or `outside`.
    pub fn credentials(&self, uid: &str) -> Vec<(&'static str, String)> {
        let pw = self.nc.app_password(uid).to_string();
        vec![("nextcloud", pw.clone()), ("mail", pw.clone()), ("probe", pw)]
    }

    /// A signed request builder for `uid` with their credentials, as the app would send it.
    pub fn signed(&self, method: Method, path: &str, uid: &str, body: &[u8]) -> reqwest::RequestBuilder {
        let creds = self.credentials(uid);
        let refs: Vec<(&str, &str)> = creds.iter().map(|(n, t)| (*n, t.as_str())).collect();
        self.orch.request_with_credentials(&self.http, method, path, uid, body, &refs)
    }

    pub async fn post_chat(&self, uid: &str, body: &[u8]) -> Result<Turn> {
        let r = self.signed(Method::POST, "/v1/chat", uid, body).send().await?;
        let status = r.status().as_u16();
        if status != 200 {
            let _ = r.text().await;
            return Ok(Turn { status, ..Turn::default() });
        }
        // Read the body ourselves: a stream cut short is a finding to report, not a panic.
        let started = std::time::Instant::now();
        let text = r
            .text()
            .await
            .with_context(|| format!("the event stream broke after {} ms", started.elapsed().as_millis()))?;
        let p = parts(&parse_sse(&text));
        let message_id = p
            .iter()
            .find(|x| x["type"] == "start")
            .and_then(|x| x["messageId"].as_str())
            .unwrap_or("")
            .to_string();
        let approvals = p
            .iter()
            .filter(|x| x["type"] == "tool-approval-request")
            .map(|x| {
                (
                    x["approvalId"].as_str().unwrap_or("").to_string(),
                    x["toolCallId"].as_str().unwrap_or("").to_string(),
                )
            })
            .collect();
        Ok(Turn {
            status,
            parts: p,
            message_id,
            approvals,
        })
    }

    /// Sends approval decisions (tool parts) on the assistant message `message_id`.
    pub async fn decide(&self, uid: &str, cid: &str, message_id: &str, tool_parts: Vec<Value>) -> Result<Turn> {
        let body = serde_json::to_vec(&json!({"id": cid, "messages": [{"id": message_id, "role": "assistant", "parts": tool_parts}]}))?;
        self.post_chat(uid, &body).await
    }

    /// A signed call to the apps endpoints: (status, request id used). A body that names no
    /// conversation is sent from a frame of [`APP_CONVERSATION`] (the default assistant's).
    pub async fn apps(&self, path: &str, uid: &str, mut body: Value) -> Result<(u16, String)> {
        if let Some(fields) = body.as_object_mut() {
            fields.entry("conversation").or_insert_with(|| json!(APP_CONVERSATION));
        }
        let rid = format!("req-{}", uuid_like());
        let body = serde_json::to_vec(&body)?;
        let r = self
            .signed(Method::POST, path, uid, &body)
            .header("x-request-id", &rid)
            .send()
            .await?;
        Ok((r.status().as_u16(), rid))
    }

    /// Installs a scripted-model rule selected by `marker` in the user text.
    pub fn script(&self, marker: &str, steps: Value) {
        self.model.add_rules(json!([{"match": marker, "steps": steps}]));
    }

    /// Every model request whose last user message contains `marker`.
    pub fn model_requests(&self, marker: &str) -> Vec<Value> {
        self.model
            .requests()
            .into_iter()
            .filter(|r| {
                r["messages"]
                    .as_array()
                    .and_then(|m| m.iter().rev().find(|m| m["role"] == "user"))
                    .and_then(|m| m["content"].as_str())
                    .is_some_and(|t| t.contains(marker))
            })
            .collect()
    }

    // ----- audit.db, read-only -----

    pub fn audit(&self) -> Result<Vec<AuditRow>> {
        let path = self.orch.data_dir().join("audit.db");
        let c = rusqlite::Connection::open_with_flags(&path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .with_context(|| format!("open {}", path.display()))?;
        let mut st = c.prepare("SELECT seq, kind, uid, conversation_id, request_id, server, tool, category, approval, arguments_sha256, outcome, detail FROM audit ORDER BY seq")?;
        let rows = st
            .query_map([], |r| {
                Ok(AuditRow {
                    seq: r.get(0)?,
                    kind: r.get(1)?,
                    uid: r.get(2)?,
                    conversation_id: r.get(3)?,
                    request_id: r.get(4)?,
                    server: r.get(5)?,
                    tool: r.get(6)?,
                    category: r.get(7)?,
                    approval: r.get(8)?,
                    arguments_sha256: r.get(9)?,
                    outcome: r.get(10)?,
                    detail: r.get(11)?,
                })
            })?
            .collect::<Result<Vec<_>, _>>()?;
        Ok(rows)
    }

    pub fn audit_of(&self, cid: &str) -> Result<Vec<AuditRow>> {
        Ok(self
            .audit()?
            .into_iter()
            .filter(|r| r.conversation_id.as_deref() == Some(cid))
            .collect())
    }

    // ----- Nextcloud state as alice (or bob) sees it -----

    fn nc(&self, method: Method, url: String, uid: &str) -> reqwest::RequestBuilder {
        self.http.request(method, url).header("Authorization", self.nc.basic(uid))
    }

    pub async fn put_file(&self, uid: &str, path: &str, body: impl Into<reqwest::Body>) -> Result<()> {
        let r = self.nc(Method::PUT, self.nc.dav_url(uid, path), uid).body(body).send().await?;
        ensure!(r.status().is_success(), "PUT {path}: {}", r.status());
        Ok(())
    }

    pub async fn mkcol(&self, uid: &str, path: &str) -> Result<()> {
        let r = self
            .nc(Method::from_bytes(b"MKCOL")?, self.nc.dav_url(uid, path), uid)
            .send()
            .await?;
        ensure!(r.status().is_success() || r.status() == 405, "MKCOL {path}: {}", r.status());
        Ok(())
    }

    /// (status, body) of a file.
    pub async fn get_file(&self, uid: &str, path: &str) -> Result<(u16, String)> {
        let r = self.nc(Method::GET, self.nc.dav_url(uid, path), uid).send().await?;
        Ok((r.status().as_u16(), r.text().await?))
    }

    /// A PROPFIND Depth: infinity of `uid`'s whole tree with etags, responses sorted.
    pub async fn tree(&self, uid: &str) -> Result<String> {
        self.propfind(self.nc.dav_url(uid, ""), uid, "infinity").await
    }

    /// A PROPFIND Depth: 1 of `uid`'s personal calendar with etags, responses sorted.
    pub async fn calendar(&self, uid: &str) -> Result<String> {
        self.propfind(format!("{}/remote.php/dav/calendars/{uid}/personal/", self.nc.url()), uid, "1")
            .await
    }

    async fn propfind(&self, url: String, uid: &str, depth: &str) -> Result<String> {
        let r = self
            .nc(Method::from_bytes(b"PROPFIND")?, url, uid)
            .header("Depth", depth)
            .body(r#"<?xml version="1.0"?><d:propfind xmlns:d="DAV:"><d:prop><d:getetag/><d:getcontentlength/></d:prop></d:propfind>"#)
            .send()
            .await?;
        ensure!(r.status().as_u16() == 207, "PROPFIND: {}", r.status());
        let text = r.text().await?;
        let mut responses: Vec<&str> = text.split("response>").collect();
        responses.sort_unstable();
        Ok(responses.join("\n"))
    }

    fn deck(&self, method: Method, path: &str, uid: &str) -> reqwest::RequestBuilder {
        self.nc(method, format!("{}/index.php/apps/deck/api/v1.0{path}", self.nc.url()), uid)
            .header("OCS-APIRequest", "true")
            .header("Accept", "application/json")
    }

    async fn find_board(&self) -> Result<Board> {
        let boards: Value = self.deck(Method::GET, "/boards", "alice").send().await?.json().await?;
        let id = boards
            .as_array()
            .and_then(|b| b.iter().find(|b| b["title"] == "Agent Board"))
            .and_then(|b| b["id"].as_u64())
            .context("no Agent Board")?;
        let stacks: Value = self
            .deck(Method::GET, &format!("/boards/{id}/stacks"), "alice")
            .send()
            .await?
            .json()
            .await?;
        let stack = |t: &str| {
            stacks
                .as_array()
                .and_then(|s| s.iter().find(|s| s["title"] == t))
                .and_then(|s| s["id"].as_u64())
        };
        Ok(Board {
            id,
            todo: stack("To do").context("no To do")?,
            done: stack("Done").context("no Done")?,
        })
    }

    /// Every card on alice's board as (stack id, card id, title), sorted.
    pub async fn deck_cards(&self) -> Result<Vec<(u64, u64, String)>> {
        let stacks: Value = self
            .deck(Method::GET, &format!("/boards/{}/stacks", self.board.id), "alice")
            .send()
            .await?
            .json()
            .await?;
        let mut cards = Vec::new();
        for s in stacks.as_array().context("stacks")? {
            for c in s["cards"].as_array().into_iter().flatten() {
                cards.push((
                    s["id"].as_u64().unwrap_or(0),
                    c["id"].as_u64().unwrap_or(0),
                    c["title"].as_str().unwrap_or("").to_string(),
                ));
            }
        }
        cards.sort();
        Ok(cards)
    }

    pub async fn add_card(&self, title: &str, description: &str) -> Result<u64> {
        let r = self
            .deck(
                Method::POST,
                &format!("/boards/{}/stacks/{}/cards", self.board.id, self.board.todo),
                "alice",
            )
            .json(&json!({"title": title, "type": "plain", "order": 5, "description": description}))
            .send()
            .await?;
        ensure!(r.status().is_success(), "create card: {}", r.status());
        let v: Value = r.json().await?;
        v["id"].as_u64().context("card id")
    }

    /// alice's shares (OCS), as JSON rows.
    pub async fn shares(&self, uid: &str) -> Result<Vec<Value>> {
        let r = self
            .nc(
                Method::GET,
                format!("{}/ocs/v2.php/apps/files_sharing/api/v1/shares", self.nc.url()),
                uid,
            )
            .header("OCS-APIRequest", "true")
            .header("Accept", "application/json")
            .send()
            .await?;
        ensure!(r.status().is_success(), "shares: {}", r.status());
        let v: Value = r.json().await?;
        match v["ocs"]["data"].as_array() {
            Some(rows) => Ok(rows.clone()),
            None => bail!("unexpected shares answer {v}"),
        }
    }

    pub async fn put_dav(&self, uid: &str, url_path: &str, content_type: &str, body: String) -> Result<()> {
        let r = self
            .nc(Method::PUT, format!("{}{url_path}", self.nc.url()), uid)
            .header("Content-Type", content_type)
            .body(body)
            .send()
            .await?;
        ensure!(r.status().is_success(), "PUT {url_path}: {}", r.status());
        Ok(())
    }
}

/// A short unique suffix.
pub fn uuid_like() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!("{:x}{}", t, N.fetch_add(1, Ordering::Relaxed))
}
