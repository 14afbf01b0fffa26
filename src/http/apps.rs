//! MCP Apps endpoints: frame documents, the frame relay, and the island's dispatch door.
//!
//! - `GET /v1/apps/resource`: the app's HTML with a CSP built from the document itself, for a
//!   frame in a conversation whose assistant may use the app's server.
//! - `POST /v1/apps/tools/call`: what a frame may ask for. Only tools whose visibility
//!   includes "app" and whose G3 policy is read-only data that needs no approval; anything
//!   else is 403. A frame's script can call the moment it loads, and no host can see a click
//!   inside a sandboxed frame, so nothing with an effect is reachable from here — and a call
//!   to a server we do not vouch for is an effect (it sends that server data, issue #27): a
//!   third-party server's tools are relayed only where the operator set `trust=reads`.
//! - `POST /v1/apps/tools/dispatch`: app-only tools with effects (mail send and draft),
//!   called by the island on a click on a button in its own DOM. Never model-visible tools.
//! - `POST /v1/apps/tools/describe`: which of the two doors a frame's `tools/call` needs, so
//!   the island knows before it sends anything whether the person must confirm first.
//!
//! Every call lists the caller's tools with the caller's bearer first: the rules apply to the
//! definitions the server gives this user now, not to a cached copy.
//!
//! An app is shown under a tool result in one conversation, and the island names that
//! conversation with every request (`conversation`). The document is served only for a server
//! the conversation's assistant may use, and the three tool doors take only what the
//! conversation's assistant allows, by its allow-list as the operator's file has it now: an
//! app never reaches a tool its conversation's assistant could not. A request that cannot be
//! tied to an assistant (no conversation named, none of this user's by that id, its assistant
//! removed from the file) is refused and audited: fail closed.

use axum::body::Bytes;
use axum::extract::{RawQuery, State};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use serde::Deserialize;
use serde_json::Value;

use super::AppState;
use crate::approval::Category;
use crate::apps::{APP_MIME, csp};
use crate::assistants::Assistant;
use crate::auth::Caller;
use crate::config::ServerTrust;
use crate::error::{ApiError, Error};
use crate::mcp::client::McpError;
use crate::mcp::registry::{Registry, ToolDef};
use crate::store::audit::{ApprovalState, Entry, EntryBuilder, Kind, Outcome};
use crate::store::key::{ConversationKey, valid_conversation_id};
use sha2::{Digest, Sha256};
use std::sync::Arc;

#[derive(Deserialize)]
struct ToolRequest {
    /// The conversation the app's frame is shown in: its assistant decides what the app may call.
    #[serde(default)]
    conversation: Option<String>,
    server: String,
    name: String,
    #[serde(default)]
    arguments: serde_json::Map<String, Value>,
}

/// A request that passed the checks every door shares: a known server, the caller's
/// credential for it, a conversation whose assistant allows the tool, a tool the server lists.
struct Target {
    def: ToolDef,
    conversation: ConversationKey,
}

/// `?conversation=…&server=…&uri=…`, parsed here rather than by an extractor so that a missing
/// or repeated field is our own 400, never a framework's plain-text rejection. `conversation`
/// is what the tool doors take in their body: the conversation the frame is shown in (its
/// absence is refused, and audited, like theirs).
struct ResourceQuery {
    conversation: Option<String>,
    server: String,
    uri: String,
}

fn resource_query(raw: Option<&str>) -> Result<ResourceQuery, Error> {
    let (mut conversation, mut server, mut uri) = (None, None, None);
    for (key, value) in url::form_urlencoded::parse(raw.unwrap_or("").as_bytes()) {
        let slot = match key.as_ref() {
            "conversation" => &mut conversation,
            "server" => &mut server,
            "uri" => &mut uri,
            _ => continue,
        };
        if slot.replace(value.into_owned()).is_some() {
            return Err(Error::BadRequest(format!("{key} given twice")));
        }
    }
    if conversation.as_deref().is_some_and(|id| !valid_conversation_id(id)) {
        return Err(Error::BadRequest("conversation must be 1-64 characters of [A-Za-z0-9_-]".into()));
    }
    match (server, uri) {
        (Some(server), Some(uri)) => Ok(ResourceQuery { conversation, server, uri }),
        _ => Err(Error::BadRequest("server and uri are required".into())),
    }
}

pub async fn resource(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Extension(groups): Extension<crate::auth::identity::Groups>,
    RawQuery(raw): RawQuery,
) -> Result<Response, ApiError> {
    let rid = caller.request_id.clone();
    let q = resource_query(raw.as_deref()).map_err(|e| e.with_request(&rid))?;
    if !q.uri.starts_with("ui://") || q.uri.len() > 512 || !state.services.tool_servers.contains(&q.server) {
        return Err(Error::NotFound.with_request(&rid));
    }
    require_credential(&state, &caller, &q.server)?;
    // The same rule as the tool doors: an app is shown only in a conversation whose assistant
    // may use its server, so a document of any other server is not served for it.
    let (conversation, assistant) = match conversation_assistant(&state, &caller, &groups, q.conversation.as_deref()).await {
        Ok(bound) => bound,
        Err(why) => {
            audit_refusal(&state, &caller, &q.server, &q.uri, Category::Data, &why).await;
            return Err(Error::Forbidden(why).with_request(&rid));
        }
    };
    if !assistant.allows_server(&q.server) {
        let why = format!("no tool of this server is among those of the assistant {}", assistant.name);
        let row = refusal_row(&caller, &q.server, &q.uri, Category::Data, &why).conversation(&conversation);
        state.services.audit.record(row.build()).await;
        return Err(Error::Forbidden(why).with_request(&rid));
    }
    let r = state
        .services
        .tool_servers
        .read_resource(&q.server, &caller, &q.uri)
        .await
        .map_err(|e| match e {
            // The server does not know that document (or refused the read): not found, not a crash.
            McpError::Refused(_) => Error::NotFound.with_request(&rid),
            e => upstream_error(e).with_request(&rid),
        })?;
    let contents = serde_json::to_value(&r.contents).unwrap_or(Value::Null);
    let html = contents
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| {
            c.get("mimeType")
                .and_then(Value::as_str)
                .is_some_and(|m| m.starts_with("text/html"))
        })
        .and_then(|c| c.get("text").and_then(Value::as_str))
        .ok_or_else(|| Error::NotFound.with_request(&rid))?
        .to_string();
    // App HTML is executable code: a change is logged and audited like a tool definition's.
    let fingerprint = hex::encode(Sha256::digest(html.as_bytes()));
    match state.services.audit.observe_fingerprint(&q.server, &q.uri, &fingerprint).await {
        Ok(Some(old)) => {
            tracing::warn!(server = %q.server, uri = %q.uri, "app document changed");
            state
                .services
                .audit
                .record(
                    Entry::of(Kind::FingerprintChanged, Outcome::Changed, &caller)
                        .tool(&q.server, &q.uri)
                        .category(Category::Data)
                        .detail(format!("{old} -> {fingerprint}"))
                        .build(),
                )
                .await;
        }
        Ok(None) => {}
        Err(e) => tracing::error!(error = %e, "could not check an app fingerprint"),
    }
    let policy = csp::policy_for(&html).map_err(|e| Error::Forbidden(format!("app document refused: {e}")).with_request(&rid))?;
    let mut response = html.into_response();
    let h = response.headers_mut();
    h.insert(http::header::CONTENT_TYPE, http::HeaderValue::from_static(APP_MIME));
    if let Ok(v) = http::HeaderValue::from_str(&policy) {
        h.insert(http::header::CONTENT_SECURITY_POLICY, v);
    }
    h.insert("x-content-type-options", http::HeaderValue::from_static("nosniff"));
    Ok(response)
}

pub async fn call(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Extension(groups): Extension<crate::auth::identity::Groups>,
    body: Bytes,
) -> Result<Response, ApiError> {
    let req = parse_or_refuse(&state, &caller, &body).await?;
    let target = tool_for(&state, &caller, &groups, &req).await?;
    let def = &target.def;
    // G3: without the operator's `trust=reads`, every call to a third party asks, and a frame
    // cannot ask anyone (issue #27). Said apart so the audit row tells why.
    if def.trust == ServerTrust::ThirdParty {
        return Err(refuse(
            &state,
            &caller,
            &req,
            &target,
            "a third-party server: its tools run only with the person's approval",
        )
        .await);
    }
    // Fourth point of distrust: frames reach app-visible, read-only tools only.
    if !def.visible_to_app || def.policy.category != Category::Data || def.policy.needs_approval {
        return Err(refuse(&state, &caller, &req, &target, "not a read-only app tool").await);
    }
    run(&state, &caller, req, &target, Kind::AppCall, ApprovalState::NotNeeded).await
}

pub async fn dispatch(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Extension(groups): Extension<crate::auth::identity::Groups>,
    body: Bytes,
) -> Result<Response, ApiError> {
    let req = parse_or_refuse(&state, &caller, &body).await?;
    let mut target = tool_for(&state, &caller, &groups, &req).await?;
    let def = &target.def;
    // Only app-only tools: a model-visible tool goes through the agent and G3, never here.
    if !def.visible_to_app || def.visible_to_model {
        return Err(refuse(&state, &caller, &req, &target, "not an app-only tool").await);
    }
    tracing::info!(request_id = %caller.request_id, server = %req.server, tool = %req.name, "app dispatch approved by the user's click");
    // The click in the island's own DOM is the approval (seed: server=app-dispatch), and
    // what the click approves has an effect, whatever its annotations claim.
    target.def.policy.category = Category::Action;
    run(&state, &caller, req, &target, Kind::AppDispatch, ApprovalState::ApprovedByUser).await
}

/// How the island must handle a frame's request for `{server, name}`:
/// - `relay`: app-visible and read-only; the relay runs it as the frame asked;
/// - `confirm`: app-only with an effect; the island shows its own confirmation and, only on
///   the person's click there, dispatches the confirmed arguments;
/// - `refused`: neither door takes it.
///
/// The answer only steers the island's UI: the relay and dispatch doors check again on their
/// own, so a wrong or forged answer cannot make anything run.
pub async fn describe(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Extension(groups): Extension<crate::auth::identity::Groups>,
    body: Bytes,
) -> Result<Response, ApiError> {
    let req = parse_or_refuse(&state, &caller, &body).await?;
    let Target { def, .. } = tool_for(&state, &caller, &groups, &req).await?;
    let read_only = def.policy.category == Category::Data && !def.policy.needs_approval;
    let handling = match (def.visible_to_app, def.visible_to_model, read_only) {
        (true, _, true) => "relay",
        (true, false, false) => "confirm",
        _ => "refused",
    };
    Ok(Json(serde_json::json!({ "server": def.server, "name": def.name, "handling": handling })).into_response())
}

/// Audits a refused relay request and returns the 403 for it.
async fn refuse(state: &AppState, caller: &Caller, req: &ToolRequest, target: &Target, why: &str) -> ApiError {
    let row = refusal_row(caller, &req.server, &req.name, target.def.policy.category, why).conversation(&target.conversation);
    state.services.audit.record(row.build()).await;
    Error::Forbidden(format!("{}/{}: {why}", req.server, req.name)).with_request(&caller.request_id)
}

/// Every refused relay attempt leaves a row, whatever stopped it (issue 10.7).
async fn audit_refusal(state: &AppState, caller: &Caller, server: &str, tool: &str, category: Category, why: &str) {
    state
        .services
        .audit
        .record(refusal_row(caller, server, tool, category, why).build())
        .await;
}

fn refusal_row(caller: &Caller, server: &str, tool: &str, category: Category, why: &str) -> EntryBuilder {
    Entry::of(Kind::AppRefused, Outcome::Refused, caller)
        .tool(server, tool)
        .category(category)
        .approval(ApprovalState::Refused)
        .detail(why)
}

/// Parses a relay request; one that cannot be parsed is still an attempt, and is audited
/// (with whatever server and tool names it carried, cut short) before the 400.
async fn parse_or_refuse(state: &AppState, caller: &Caller, body: &[u8]) -> Result<ToolRequest, ApiError> {
    match parse(body) {
        Ok(req) => Ok(req),
        Err(e) => {
            let raw: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
            let named = |k: &str| {
                raw.get(k)
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .chars()
                    .take(128)
                    .collect::<String>()
            };
            audit_refusal(
                state,
                caller,
                &named("server"),
                &named("name"),
                Category::Action,
                "malformed request",
            )
            .await;
            Err(e.with_request(&caller.request_id))
        }
    }
}

fn parse(body: &[u8]) -> Result<ToolRequest, Error> {
    let req: ToolRequest = serde_json::from_slice(body).map_err(|e| Error::BadRequest(format!("tool request: {e}")))?;
    if req.name.is_empty() || req.name.len() > 128 || req.server.is_empty() {
        return Err(Error::BadRequest("server and name are required".into()));
    }
    if req.conversation.as_deref().is_some_and(|id| !valid_conversation_id(id)) {
        return Err(Error::BadRequest("conversation must be 1-64 characters of [A-Za-z0-9_-]".into()));
    }
    Ok(req)
}

fn require_credential(state: &AppState, caller: &Caller, server: &str) -> Result<(), ApiError> {
    // A Nextcloud-facing server without the user's token for it: there is no workspace to reach.
    if !state.services.tool_servers.can_reach(server, caller) {
        return Err(Error::Unauthorized(format!("no credential for {server}")).with_request(&caller.request_id));
    }
    Ok(())
}

async fn tool_for(
    state: &AppState,
    caller: &Caller,
    groups: &crate::auth::identity::Groups,
    req: &ToolRequest,
) -> Result<Target, ApiError> {
    let rid = &caller.request_id;
    if !state.services.tool_servers.contains(&req.server) {
        // Names are exact: "NEXTCLOUD" is not "nextcloud", and the attempt is on record.
        audit_refusal(state, caller, &req.server, &req.name, Category::Action, "unknown server").await;
        return Err(Error::Forbidden("unknown server".into()).with_request(rid));
    }
    if let Err(e) = require_credential(state, caller, &req.server) {
        audit_refusal(
            state,
            caller,
            &req.server,
            &req.name,
            Category::Action,
            "no credential for this server",
        )
        .await;
        return Err(e);
    }
    let (conversation, assistant) = match conversation_assistant(state, caller, groups, req.conversation.as_deref()).await {
        Ok(bound) => bound,
        Err(why) => {
            audit_refusal(state, caller, &req.server, &req.name, Category::Action, &why).await;
            return Err(Error::Forbidden(why).with_request(rid));
        }
    };
    // The assistant's allow-list, as for the model: a tool outside it is not there for its apps.
    if !assistant.allows(&req.server, &req.name) {
        let why = format!("not among the tools of the assistant {}", assistant.name);
        let row = refusal_row(caller, &req.server, &req.name, Category::Action, &why).conversation(&conversation);
        state.services.audit.record(row.build()).await;
        return Err(Error::Forbidden(format!("{}/{}: {why}", req.server, req.name)).with_request(rid));
    }
    let mut defs: Vec<ToolDef> = match state.services.tool_servers.list_tools(&req.server, caller).await {
        Ok(defs) => defs,
        Err(e) => {
            audit_failure(state, caller, req, "could not list the server's tools").await;
            return Err(upstream_error(e).with_request(rid));
        }
    };
    let template = Entry::of(Kind::FingerprintChanged, Outcome::Changed, caller).build();
    crate::mcp::registry::observe_fingerprints(state.services.audit.as_ref(), &mut defs, &template).await;
    let registry = Registry::new(defs);
    match registry.find(&req.server, &req.name) {
        Some(def) => Ok(Target {
            def: def.clone(),
            conversation,
        }),
        None => {
            audit_refusal(state, caller, &req.server, &req.name, Category::Action, "unknown tool").await;
            Err(Error::Forbidden("unknown tool".into()).with_request(rid))
        }
    }
}

/// The conversation an app request names and the assistant it is bound to now. Err (the
/// audited reason) when the request cannot be tied to an assistant: fail closed.
async fn conversation_assistant(
    state: &AppState,
    caller: &Caller,
    groups: &crate::auth::identity::Groups,
    conversation: Option<&str>,
) -> Result<(ConversationKey, Arc<Assistant>), String> {
    let Some(id) = conversation else {
        return Err("not tied to a conversation".into());
    };
    let key = ConversationKey::new(caller, id).map_err(|_| "not tied to a conversation".to_string())?;
    let services = &state.services;
    let assistants = match services.registry.for_caller(caller, groups).await {
        Ok(a) => a,
        Err(e) => {
            tracing::error!(error = %e, "could not read the registry; refusing the app request");
            return Err("the conversation's assistant could not be read".into());
        }
    };
    match super::assistants::bound_assistant(&assistants, services.store.as_ref(), &key).await {
        Ok(Some(assistant)) => Ok((key, assistant)),
        // Another user's id is simply not found: keys carry the uid.
        Ok(None) => Err("no such conversation".into()),
        Err(Error::AssistantGone(name)) => Err(format!("the conversation's assistant {name} is no longer configured")),
        Err(e) => {
            tracing::error!(error = %e, "could not read a conversation's assistant; refusing the app request");
            Err("the conversation's assistant could not be read".into())
        }
    }
}

/// A relay attempt that failed before it could run: audited as an error, not a refusal.
async fn audit_failure(state: &AppState, caller: &Caller, req: &ToolRequest, why: &str) {
    let row = Entry::of(Kind::AppRefused, Outcome::Error, caller)
        .tool(&req.server, &req.name)
        .category(Category::Action)
        .arguments_sha256(crate::turn::arguments_hash(&Value::Object(req.arguments.clone())))
        .detail(why)
        .build();
    state.services.audit.record(row).await;
}

async fn run(
    state: &AppState,
    caller: &Caller,
    req: ToolRequest,
    target: &Target,
    kind: Kind,
    approval: ApprovalState,
) -> Result<Response, ApiError> {
    let rid = &caller.request_id;
    let started = std::time::Instant::now();
    let row = Entry::of(kind, Outcome::Ok, caller)
        .conversation(&target.conversation)
        .tool(&req.server, &req.name)
        .category(target.def.policy.category)
        .approval(approval)
        .arguments_sha256(crate::turn::arguments_hash(&Value::Object(req.arguments.clone())));
    let result = state
        .services
        .tool_servers
        .call_tool(&req.server, caller, &req.name, req.arguments)
        .await;
    let outcome = match &result {
        Ok(r) if r.is_error != Some(true) => Outcome::Ok,
        _ => Outcome::Error,
    };
    let row = row.duration_ms(started.elapsed().as_millis() as i64).outcome(outcome).build();
    state.services.audit.record(row).await;
    // A tool's own failure (mcp-mail's outcome_unknown among them) is a result with
    // `isError`, answered 200 as the tool wrote it; only a call that got no usable answer
    // is an HTTP error.
    let r = result.map_err(|e| upstream_error(e).with_request(rid))?;
    Ok(Json(r).into_response())
}

/// A tool server's failure as a status the island can act on: 504 when it did not answer in
/// time, 502 when it could not be reached or its answer was unusable. Both mean "not known
/// whether it was done" (the island answers a dispatch's frame with -32002), never a 500.
fn upstream_error(e: McpError) -> Error {
    match e {
        McpError::Timeout => Error::UpstreamTimeout,
        McpError::NoCredential => Error::Unauthorized(e.to_string()),
        McpError::Transport(_) | McpError::Refused(_) => Error::Upstream(e.to_string()),
    }
}
