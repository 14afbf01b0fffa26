//! The admin routes of the registry (issue #30), for Nextcloud's admin page:
//! `GET|POST /v1/admin/servers`, `PUT|DELETE /v1/admin/servers/{name}`,
//! `GET|POST /v1/admin/assistants`, `PUT|DELETE /v1/admin/assistants/{name}`,
//! `POST /v1/admin/assistants/{id}/approve`, `GET|PUT /v1/admin/policy`.
//!
//! Every one needs the app's admin signature over the very request (the [`AdminCaller`]
//! extractor) on top of the user signature; the admin acts on configuration, never on anyone's data or with
//! anyone's credential. Entries from `TAMEBI_MCP_SERVERS` and `TAMEBI_ASSISTANTS` are listed
//! read-only (a change to one is a conflict). Every change and every refusal is audited.
//! After a server change this instance's tool-server actors follow at once
//! ([`sync_servers`]); every other instance follows on its next turn.
//!
//! [`AdminCaller`]: super::admin::AdminCaller

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use http::StatusCode;
use serde::Serialize;

use super::AppState;
use super::admin::AdminCaller;
use crate::auth::Caller;
use crate::error::{ApiError, Error};
use crate::registry::{AssistantSpec, PersonalSpec, Policy, ServerSpec, Source, auth_str, is_personal_id};
use crate::store::audit::{Entry, Kind, Outcome};
use crate::store::registry::{Approval, EntryKind, POLICY_ROW, PersonalRow, Put};

/// Makes this instance's tool-server actors those of the registry's active servers (a no-op
/// when they already are). Called before a turn lists tools and after every server change.
pub async fn sync_servers(state: &AppState) -> Result<(), Error> {
    let set = state.services.registry.servers().await?;
    sync_servers_to(state, set.active).await
}

/// [`sync_servers`] to the active servers of a snapshot the caller already holds.
pub async fn sync_servers_to(state: &AppState, desired: Vec<crate::config::McpServer>) -> Result<(), Error> {
    let services = &state.services;
    let mut sorted = desired.clone();
    sorted.sort_by(|a, b| a.name.cmp(&b.name));
    if sorted == services.tool_servers.configs() {
        return Ok(());
    }
    state.actors.reconcile_servers(desired).await
}

/// A registry request: the caller is an admin, and what they change is audited.
struct Admin<'a> {
    state: &'a AppState,
    caller: &'a Caller,
}

impl Admin<'_> {
    async fn audit(&self, outcome: Outcome, what: &str, detail: String) {
        let row = Entry::of(Kind::Registry, outcome, self.caller)
            .tool("registry", what)
            .detail(detail)
            .build();
        self.state.services.audit.record(row).await;
    }

    /// Refuses with `error`, audited with the reason (which goes to audit.db and the log, never
    /// to the caller: the body carries the fixed message of its code).
    async fn refuse(&self, what: &str, error: Error) -> ApiError {
        self.audit(Outcome::Refused, what, error.to_string()).await;
        tracing::info!(request_id = %self.caller.request_id, refused = %error, "registry change refused");
        error.with_request(&self.caller.request_id)
    }

    async fn done(&self, what: &str, detail: String) {
        self.audit(Outcome::Ok, what, detail).await;
    }

    fn fail(&self, e: Error) -> ApiError {
        e.with_request(&self.caller.request_id)
    }
}

fn parse<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, Error> {
    serde_json::from_slice(body).map_err(|e| Error::BadRequest(format!("body: {e}")))
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ServerView {
    #[serde(flatten)]
    entry: crate::registry::ServerEntry,
    /// Whether this instance runs its actor now.
    running: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    health: Option<crate::actors::tool_server::Health>,
    /// The tools it lists (to pick allow-list patterns from).
    tools: Vec<String>,
}

pub async fn list_servers(State(state): State<AppState>, AdminCaller(caller): AdminCaller) -> Result<Response, ApiError> {
    let admin = Admin {
        state: &state,
        caller: &caller,
    };
    sync_servers(&state).await.map_err(|e| admin.fail(e))?;
    let services = &state.services;
    let set = services.registry.servers().await.map_err(|e| admin.fail(e))?;
    let known = services.audit.known_tools().await.map_err(|e| admin.fail(e))?;
    // A client of its own, as the status route's: nothing that could carry a token.
    let http = reqwest::Client::builder()
        .connect_timeout(crate::mcp::probe::PROBE_TIMEOUT)
        .build()
        .map_err(|e| admin.fail(Error::Internal(format!("probe client: {e}"))))?;
    let mut servers = Vec::new();
    for entry in set.entries {
        let running = services.tool_servers.contains(&entry.spec.name) && !entry.conflict;
        let health = if running {
            services.tool_servers.health(&entry.spec.name).await
        } else {
            None
        };
        // What the admin picks patterns from: an auth=none server lists its tools on the spot;
        // an auth=nextcloud one lists only to a user, so what users' listings recorded.
        let mut tools: Vec<String> = known
            .iter()
            .filter(|(s, _)| *s == entry.spec.name)
            .map(|(_, t)| t.clone())
            .collect();
        if let Some(server) = set
            .active
            .iter()
            .find(|s| s.name == entry.spec.name && s.auth == crate::config::ServerAuth::None)
            && let crate::mcp::probe::Reachability::Listed(names) = crate::mcp::probe::probe(&http, server, &caller.request_id).await
        {
            tools = names;
        }
        tools.sort();
        tools.dedup();
        servers.push(ServerView {
            entry,
            running,
            health,
            tools,
        });
    }
    Ok(Json(serde_json::json!({ "servers": servers })).into_response())
}

pub async fn create_server(State(state): State<AppState>, AdminCaller(caller): AdminCaller, body: Bytes) -> Result<Response, ApiError> {
    let admin = Admin {
        state: &state,
        caller: &caller,
    };
    put_server(&admin, None, &body).await
}

pub async fn update_server(
    State(state): State<AppState>,
    AdminCaller(caller): AdminCaller,
    Path(name): Path<String>,
    body: Bytes,
) -> Result<Response, ApiError> {
    let admin = Admin {
        state: &state,
        caller: &caller,
    };
    put_server(&admin, Some(&name), &body).await
}

/// Stores one admin entry: a new one (201; a taken name is a conflict) or a replacement of an
/// existing one (200; none is 404). Refusals are audited.
async fn write_entry<T: Serialize>(
    admin: &Admin<'_>,
    kind: EntryKind,
    name: &str,
    entry: &T,
    replace: bool,
    what: &str,
) -> Result<StatusCode, ApiError> {
    let json = serde_json::to_string(entry).map_err(|e| admin.fail(Error::Internal(e.to_string())))?;
    let mode = if replace { Put::Replace } else { Put::Create };
    let written = admin
        .state
        .services
        .registry
        .store()
        .put_entry(kind, name, &json, mode)
        .await
        .map_err(|e| admin.fail(e))?;
    match (written, replace) {
        (true, true) => Ok(StatusCode::OK),
        (true, false) => Ok(StatusCode::CREATED),
        (false, true) => Err(admin.refuse(what, Error::NotFound).await),
        (false, false) => Err(admin.refuse(what, Error::RegistryConflict("the name is taken".into())).await),
    }
}

/// Creates (`path_name` None) or replaces one admin server.
async fn put_server(admin: &Admin<'_>, path_name: Option<&str>, body: &[u8]) -> Result<Response, ApiError> {
    let services = &admin.state.services;
    let spec: ServerSpec = match parse(body) {
        Ok(s) => s,
        Err(e) => return Err(admin.refuse("server", e).await),
    };
    let what = format!("server {}", spec.name);
    if let Some(name) = path_name.filter(|n| *n != spec.name) {
        return Err(admin
            .refuse(
                &what,
                Error::BadRequest(format!("the body names {:?}, the path {name:?}", spec.name)),
            )
            .await);
    }
    let server = match spec.to_server() {
        Ok(s) => s,
        Err(why) => return Err(admin.refuse(&what, Error::BadRequest(why)).await),
    };
    if services.config.mcp_servers.iter().any(|s| s.name == server.name) {
        return Err(admin
            .refuse(
                &what,
                Error::RegistryConflict("defined in TAMEBI_MCP_SERVERS: read-only here".into()),
            )
            .await);
    }
    // Stored as the parser normalised it (the URL as parsed), so every instance reads the same.
    let stored = crate::registry::ServerSpec {
        url: server.url.to_string(),
        ..spec
    };
    let status = write_entry(admin, EntryKind::Server, &server.name, &stored, path_name.is_some(), &what).await?;
    admin
        .done(
            &what,
            format!(
                "{} {} auth={}",
                if path_name.is_some() { "updated" } else { "registered" },
                server.url,
                auth_str(server.auth)
            ),
        )
        .await;
    sync_servers(admin.state).await.map_err(|e| admin.fail(e))?;
    Ok((status, Json(serde_json::json!({ "server": stored }))).into_response())
}

pub async fn delete_server(
    State(state): State<AppState>,
    AdminCaller(caller): AdminCaller,
    Path(name): Path<String>,
) -> Result<Response, ApiError> {
    let admin = Admin {
        state: &state,
        caller: &caller,
    };
    let what = format!("server {name}");
    if state.services.config.mcp_servers.iter().any(|s| s.name == name) {
        return Err(admin
            .refuse(
                &what,
                Error::RegistryConflict("defined in TAMEBI_MCP_SERVERS: read-only here".into()),
            )
            .await);
    }
    let removed = state
        .services
        .registry
        .store()
        .delete_entry(EntryKind::Server, &name)
        .await
        .map_err(|e| admin.fail(e))?;
    if !removed {
        return Err(admin.refuse(&what, Error::NotFound).await);
    }
    admin.done(&what, "removed".into()).await;
    sync_servers(&state).await.map_err(|e| admin.fail(e))?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct OperatorView {
    name: String,
    description: String,
    instructions: String,
    model: crate::types::ModelRole,
    tools: Vec<String>,
    source: Source,
}

/// A personal assistant an admin is asked to approve: all it would do, exactly.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ProposalView {
    pub id: String,
    pub owner: String,
    pub group: Option<String>,
    pub version: i64,
    pub approved: bool,
    pub approved_version: Option<i64>,
    #[serde(flatten)]
    pub spec: PersonalSpec,
}

impl ProposalView {
    pub fn of(row: &PersonalRow) -> Option<ProposalView> {
        Some(ProposalView {
            id: row.id.clone(),
            owner: row.uid.clone(),
            group: row.share_group.clone(),
            version: row.version,
            approved: row.shared(),
            approved_version: row.approved_version,
            spec: serde_json::from_str(&row.body).ok()?,
        })
    }
}

pub async fn list_assistants(State(state): State<AppState>, AdminCaller(caller): AdminCaller) -> Result<Response, ApiError> {
    let admin = Admin {
        state: &state,
        caller: &caller,
    };
    let registry = &state.services.registry;
    let stored: Vec<String> = registry
        .store()
        .entries(EntryKind::Assistant)
        .await
        .map_err(|e| admin.fail(e))?
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    let assistants: Vec<OperatorView> = registry
        .operator_assistants()
        .await
        .map_err(|e| admin.fail(e))?
        .iter()
        .map(|a| OperatorView {
            name: a.name.clone(),
            description: a.description.clone(),
            instructions: a.instructions.clone(),
            model: a.model,
            tools: a.tools.iter().map(ToString::to_string).collect(),
            // The file's (or the built-in default, when there is no file) are read-only here.
            source: if !registry.file_defines(&a.name) && stored.contains(&a.name) {
                Source::Admin
            } else {
                Source::Environment
            },
        })
        .collect();
    let proposed: Vec<ProposalView> = registry
        .store()
        .proposed()
        .await
        .map_err(|e| admin.fail(e))?
        .iter()
        .filter_map(ProposalView::of)
        .collect();
    let policy = registry.policy().await.map_err(|e| admin.fail(e))?;
    Ok(Json(serde_json::json!({ "assistants": assistants, "proposed": proposed, "policy": policy })).into_response())
}

pub async fn create_assistant(State(state): State<AppState>, AdminCaller(caller): AdminCaller, body: Bytes) -> Result<Response, ApiError> {
    let admin = Admin {
        state: &state,
        caller: &caller,
    };
    put_assistant(&admin, None, &body).await
}

pub async fn update_assistant(
    State(state): State<AppState>,
    AdminCaller(caller): AdminCaller,
    Path(name): Path<String>,
    body: Bytes,
) -> Result<Response, ApiError> {
    let admin = Admin {
        state: &state,
        caller: &caller,
    };
    put_assistant(&admin, Some(&name), &body).await
}

async fn put_assistant(admin: &Admin<'_>, path_name: Option<&str>, body: &[u8]) -> Result<Response, ApiError> {
    let registry = &admin.state.services.registry;
    let spec: AssistantSpec = match parse(body) {
        Ok(s) => s,
        Err(e) => return Err(admin.refuse("assistant", e).await),
    };
    let what = format!("assistant {}", spec.name);
    if let Some(name) = path_name.filter(|n| *n != spec.name) {
        return Err(admin
            .refuse(
                &what,
                Error::BadRequest(format!("the body names {:?}, the path {name:?}", spec.name)),
            )
            .await);
    }
    if registry.file_defines(&spec.name) {
        return Err(admin
            .refuse(
                &what,
                Error::RegistryConflict("defined in TAMEBI_ASSISTANTS: read-only here".into()),
            )
            .await);
    }
    if is_personal_id(&spec.name) {
        return Err(admin
            .refuse(
                &what,
                Error::BadRequest("names of the form u-<32 hex digits> are personal assistants' ids".into()),
            )
            .await);
    }
    if let Err(why) = registry.check_assistant(&spec).await {
        return Err(admin.refuse(&what, Error::BadRequest(why)).await);
    }
    let status = write_entry(admin, EntryKind::Assistant, &spec.name, &spec, path_name.is_some(), &what).await?;
    admin.done(&what, format!("tools {}", spec.tools.join(" "))).await;
    Ok((status, Json(serde_json::json!({ "assistant": spec }))).into_response())
}

pub async fn delete_assistant(
    State(state): State<AppState>,
    AdminCaller(caller): AdminCaller,
    Path(name): Path<String>,
) -> Result<Response, ApiError> {
    let admin = Admin {
        state: &state,
        caller: &caller,
    };
    let what = format!("assistant {name}");
    let registry = &state.services.registry;
    if registry.file_defines(&name) {
        return Err(admin
            .refuse(
                &what,
                Error::RegistryConflict("defined in TAMEBI_ASSISTANTS: read-only here".into()),
            )
            .await);
    }
    let removed = registry
        .store()
        .delete_entry(EntryKind::Assistant, &name)
        .await
        .map_err(|e| admin.fail(e))?;
    if !removed {
        return Err(admin.refuse(&what, Error::NotFound).await);
    }
    admin.done(&what, "removed".into()).await;
    Ok(StatusCode::NO_CONTENT.into_response())
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct ApproveBody {
    /// The version the admin looked at: an edit since then is not approved with it.
    version: i64,
}

pub async fn approve(
    State(state): State<AppState>,
    AdminCaller(caller): AdminCaller,
    Path(id): Path<String>,
    body: Bytes,
) -> Result<Response, ApiError> {
    let admin = Admin {
        state: &state,
        caller: &caller,
    };
    let what = format!("approval {id}");
    let req: ApproveBody = match parse(&body) {
        Ok(r) => r,
        Err(e) => return Err(admin.refuse(&what, e).await),
    };
    let store = state.services.registry.store();
    match store.approve(&id, req.version).await.map_err(|e| admin.fail(e))? {
        Approval::Approved => {}
        Approval::NotFound => return Err(admin.refuse(&what, Error::NotFound).await),
        Approval::Stale => {
            return Err(admin
                .refuse(&what, Error::RegistryConflict("edited by its owner since that version".into()))
                .await);
        }
    }
    let row = store.personal(&id).await.map_err(|e| admin.fail(e))?;
    admin
        .done(
            &what,
            format!(
                "version {} for group {}",
                req.version,
                row.as_ref().and_then(|r| r.share_group.clone()).unwrap_or_default()
            ),
        )
        .await;
    Ok(Json(serde_json::json!({ "assistant": row.as_ref().and_then(ProposalView::of) })).into_response())
}

pub async fn get_policy(State(state): State<AppState>, AdminCaller(caller): AdminCaller) -> Result<Response, ApiError> {
    let admin = Admin {
        state: &state,
        caller: &caller,
    };
    let policy = state.services.registry.policy().await.map_err(|e| admin.fail(e))?;
    Ok(Json(serde_json::json!({ "policy": policy })).into_response())
}

pub async fn put_policy(State(state): State<AppState>, AdminCaller(caller): AdminCaller, body: Bytes) -> Result<Response, ApiError> {
    let admin = Admin {
        state: &state,
        caller: &caller,
    };
    let policy: Policy = match parse(&body) {
        Ok(p) => p,
        Err(e) => return Err(admin.refuse("policy", e).await),
    };
    if let Err(why) = crate::registry::patterns(&policy.personal_tools) {
        return Err(admin.refuse("policy", Error::BadRequest(why)).await);
    }
    let json = serde_json::to_string(&policy).map_err(|e| admin.fail(Error::Internal(e.to_string())))?;
    state
        .services
        .registry
        .store()
        .put_entry(EntryKind::Policy, POLICY_ROW, &json, Put::Upsert)
        .await
        .map_err(|e| admin.fail(e))?;
    admin
        .done(
            "policy",
            format!(
                "personal tools {}; fallback to default {}",
                policy.personal_tools.join(" "),
                policy.fallback_to_default
            ),
        )
        .await;
    Ok(Json(serde_json::json!({ "policy": policy })).into_response())
}
