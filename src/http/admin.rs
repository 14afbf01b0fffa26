//! `GET /v1/admin/status`: the configuration an admin sees on Nextcloud's settings page.
//!
//! Signed like every route (G1), plus the app's admin signature ([`Verifier::check_admin`]),
//! which it makes only after Nextcloud's group manager said the signed user is an admin. A
//! Nextcloud admin is not an admin of anyone's data: this route reveals configuration (the
//! assistants, the MCP servers, whether they answer, how many tools they offer), never a user's
//! conversations, memory or audit rows, and it uses no user's credential.
//!
//! Tool counts: an `auth=none` server is listed on the spot; an `auth=nextcloud` server only
//! ever lists tools to a user, so its count is what the latest user's listing showed (the
//! tool-server actor's health) or, after a restart, every tool users' listings ever recorded
//! (the fingerprints), labelled as such. What users' calls found (reachable, circuit, the
//! kind of the last error) comes from the same health, never with a message or a user.
//!
//! [`Verifier::check_admin`]: crate::auth::identity::Verifier::check_admin

use axum::Json;
use axum::extract::{FromRequestParts, State};
use http::request::Parts;
use http::{HeaderMap, Method, Uri};
use serde::Serialize;
use std::collections::BTreeSet;

use super::AppState;
use crate::actors::tool_server::Health;
use crate::auth::Caller;
use crate::auth::identity;
use crate::config::{McpServer, ServerAuth, ServerTrust};
use crate::error::{ApiError, Error};
use crate::mcp::probe::{self, Reachability};
use crate::types::ModelRole;

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AdminStatus {
    pub assistants: Vec<AssistantStatus>,
    pub servers: Vec<ServerStatus>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AssistantStatus {
    pub name: String,
    pub description: String,
    pub model: ModelRole,
    pub tools: Vec<String>,
    /// Whether the operator gave it instructions (their text stays in the file).
    pub has_instructions: bool,
    /// Servers (and the orchestrator's own `tamebi`) at least one known tool of which it may offer.
    pub servers: Vec<String>,
    /// How many of the known tools it may offer.
    pub tool_count: usize,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerStatus {
    pub name: String,
    pub auth: &'static str,
    /// `own` (auth=nextcloud: annotations decide approval), `reads` (a third party whose
    /// read-only tools the operator lets run unasked) or `none` (every call asks).
    pub trust: &'static str,
    pub answers: bool,
    /// `listed`, `sign-in-required`, `answered` or `unreachable`.
    pub state: &'static str,
    /// The HTTP status of an unexpected answer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub http_status: Option<u16>,
    /// Whether a 401 named RFC 9728 protected-resource metadata.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resource_metadata: Option<bool>,
    /// Tools offered: listed now (`listed`), in the latest user's listing (`last-listing`), or
    /// ever seen in users' listings (`seen`); none known: null.
    pub tool_count: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_count_source: Option<&'static str>,
    /// What users' recent calls found, from the server's actor (no network, no user).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub calls: Option<CallHealth>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CallHealth {
    pub reachable: bool,
    pub circuit: crate::actors::tool_server::Circuit,
    pub consecutive_unreachable: u32,
    /// The kind of the last failure (`tool.timeout`, …); its message stays in the logs.
    pub last_error: Option<&'static str>,
}

pub async fn status(State(state): State<AppState>, AdminCaller(caller): AdminCaller) -> Result<Json<AdminStatus>, ApiError> {
    let rid = caller.request_id.clone();
    // Servers registered on another instance run here too before their health is read.
    super::registry::sync_servers(&state).await.map_err(|e| e.with_request(&rid))?;
    let services = &state.services;
    let known = services.audit.known_tools().await.map_err(|e| e.with_request(&rid))?;
    // A client of its own: no pool shared with users' calls, nothing that could carry a token.
    let http = reqwest::Client::builder()
        .connect_timeout(probe::PROBE_TIMEOUT)
        .build()
        .map_err(|e| Error::Internal(format!("probe client: {e}")).with_request(&rid))?;
    let running = services.tool_servers.configs();
    let probes = futures::future::join_all(running.iter().map(|s| probe::probe(&http, s, &rid))).await;
    let health = services.tool_servers.health_all().await;
    let mut tools: Vec<(String, String)> = Vec::new();
    let mut servers = Vec::new();
    for (server, found) in running.iter().zip(probes) {
        let seen: Vec<String> = known.iter().filter(|(s, _)| *s == server.name).map(|(_, t)| t.clone()).collect();
        let last = health.iter().find(|h| h.server == server.name);
        let status = server_status(server, &found, seen.len(), last);
        let names = match found {
            Reachability::Listed(names) => names,
            _ => seen,
        };
        tools.extend(names.into_iter().map(|t| (server.name.clone(), t)));
        servers.push(status);
    }
    tools.extend(
        crate::memory::tool_defs()
            .into_iter()
            .map(|d| (crate::types::LOCAL_SERVER.to_string(), d.name)),
    );
    let operator = services.registry.operator_assistants().await.map_err(|e| e.with_request(&rid))?;
    let assistants = operator
        .iter()
        .map(|a| {
            let allowed: Vec<&(String, String)> = tools.iter().filter(|(s, t)| a.allows(s, t)).collect();
            AssistantStatus {
                name: a.name.clone(),
                description: a.description.clone(),
                model: a.model,
                tools: a.tools.iter().map(ToString::to_string).collect(),
                has_instructions: !a.instructions.trim().is_empty(),
                servers: allowed
                    .iter()
                    .map(|(s, _)| s.clone())
                    .collect::<BTreeSet<_>>()
                    .into_iter()
                    .collect(),
                tool_count: allowed.len(),
            }
        })
        .collect();
    tracing::info!(request_id = %rid, "admin status served");
    Ok(Json(AdminStatus { assistants, servers }))
}

/// The caller of a `/v1/admin/*` route: the signed user, and the app's admin signature over this
/// very request checked. Every admin handler takes it, so a request with a user signature alone
/// is refused (403) before the handler runs.
pub struct AdminCaller(pub Caller);

impl FromRequestParts<AppState> for AdminCaller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        // The identity layer put the verified caller here; a route without it is a wiring bug.
        let Some(caller) = parts.extensions.get::<Caller>().cloned() else {
            let id = parts
                .headers
                .get(identity::HEADER_REQUEST_ID)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("");
            return Err(Error::Internal("admin route outside the identity layer".into()).with_request(id));
        };
        require_admin(state, &caller, &parts.method, &parts.uri, &parts.headers)?;
        Ok(AdminCaller(caller))
    }
}

fn require_admin(state: &AppState, caller: &Caller, method: &Method, uri: &Uri, headers: &HeaderMap) -> Result<(), ApiError> {
    // The same target the identity layer verified the user signature over (this router is
    // merged, never nested, so the URI is the one that arrived).
    let target = identity::target_of(method, uri);
    if state.verifier.check_admin(headers, target, &caller.uid).is_err() {
        tracing::warn!(request_id = %caller.request_id, "admin route without an admin signature refused");
        return Err(Error::Forbidden("admin route without an admin signature".into()).with_request(&caller.request_id));
    }
    Ok(())
}

fn server_status(server: &McpServer, found: &Reachability, seen: usize, health: Option<&Health>) -> ServerStatus {
    let (state, http_status, resource_metadata) = match found {
        Reachability::Listed(_) => ("listed", None, None),
        Reachability::SignInRequired { metadata } => ("sign-in-required", None, Some(*metadata)),
        Reachability::Answered(code) => ("answered", Some(*code), None),
        Reachability::Unreachable => ("unreachable", None, None),
    };
    let (tool_count, tool_count_source) = match found {
        Reachability::Listed(names) => (Some(names.len()), Some("listed")),
        _ if health.is_some_and(|h| h.tool_count.is_some()) => (health.and_then(|h| h.tool_count), Some("last-listing")),
        _ if seen > 0 => (Some(seen), Some("seen")),
        _ => (None, None),
    };
    ServerStatus {
        name: server.name.clone(),
        auth: match server.auth {
            ServerAuth::Nextcloud => "nextcloud",
            ServerAuth::None => "none",
        },
        trust: match server.trust {
            ServerTrust::Own => "own",
            ServerTrust::Reads => "reads",
            ServerTrust::ThirdParty => "none",
        },
        answers: found.answers(),
        state,
        http_status,
        resource_metadata,
        tool_count,
        tool_count_source,
        calls: health.map(|h| CallHealth {
            reachable: h.reachable,
            circuit: h.circuit,
            consecutive_unreachable: h.consecutive_unreachable,
            last_error: h.last_error.as_ref().map(|e| e.kind),
        }),
    }
}
