//! MCP Apps endpoints: frame documents, the frame relay, and the island's dispatch door.
//!
//! - `GET /v1/apps/resource`: the app's HTML with a CSP built from the document itself.
//! - `POST /v1/apps/tools/call`: what a frame may ask for. Only tools whose visibility
//!   includes "app" and whose G3 policy is read-only data; anything else is 403. A frame's
//!   script can call the moment it loads, and no host can see a click inside a sandboxed
//!   frame, so nothing with an effect is reachable from here.
//! - `POST /v1/apps/tools/dispatch`: app-only tools with effects (mail send and draft),
//!   called by the island on a click on a button in its own DOM. Never model-visible tools.
//!
//! Every call lists the caller's tools with the caller's bearer first: the rules apply to the
//! definitions the server gives this user now, not to a cached copy.

use axum::body::Bytes;
use axum::extract::{Query, State};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use serde::Deserialize;
use serde_json::Value;

use super::AppState;
use crate::actors::tool_server::{ToolOp, ToolOpResult};
use crate::apps::{APP_MIME, csp};
use crate::approval::Category;
use crate::auth::Caller;
use crate::error::{ApiError, Error};
use crate::mcp::registry::{Registry, ToolDef};

#[derive(Deserialize)]
pub struct ResourceQuery {
    server: String,
    uri: String,
}

#[derive(Deserialize)]
struct ToolRequest {
    server: String,
    name: String,
    #[serde(default)]
    arguments: serde_json::Map<String, Value>,
}

pub async fn resource(State(state): State<AppState>, Extension(caller): Extension<Caller>, Query(q): Query<ResourceQuery>) -> Result<Response, ApiError> {
    let rid = caller.request_id.clone();
    if !q.uri.starts_with("ui://") || q.uri.len() > 512 || !state.services.tool_servers.contains(&q.server) {
        return Err(Error::NotFound.with_request(&rid));
    }
    require_bearer(&caller)?;
    let result = state
        .services
        .tool_servers
        .call(&q.server, &caller, ToolOp::ReadResource { uri: q.uri.clone() })
        .await
        .map_err(|e| Error::Internal(e.to_string()).with_request(&rid))?;
    let ToolOpResult::Resource(r) = result else { return Err(Error::Internal("unexpected answer".into()).with_request(&rid)) };
    let contents = serde_json::to_value(&r.contents).unwrap_or(Value::Null);
    let html = contents
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| c.get("mimeType").and_then(Value::as_str).is_some_and(|m| m.starts_with("text/html")))
        .and_then(|c| c.get("text").and_then(Value::as_str))
        .ok_or_else(|| Error::NotFound.with_request(&rid))?
        .to_string();
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

pub async fn call(State(state): State<AppState>, Extension(caller): Extension<Caller>, body: Bytes) -> Result<Response, ApiError> {
    let rid = caller.request_id.clone();
    let req = parse(&body).map_err(|e| e.with_request(&rid))?;
    let def = tool_for(&state, &caller, &req).await?;
    // Fourth point of distrust: frames reach app-visible, read-only tools only.
    if !def.visible_to_app || def.policy.category != Category::Data || def.policy.needs_approval {
        return Err(Error::Forbidden(format!("{}/{} is not a read-only app tool", req.server, req.name)).with_request(&rid));
    }
    run(&state, &caller, req).await
}

pub async fn dispatch(State(state): State<AppState>, Extension(caller): Extension<Caller>, body: Bytes) -> Result<Response, ApiError> {
    let rid = caller.request_id.clone();
    let req = parse(&body).map_err(|e| e.with_request(&rid))?;
    let def = tool_for(&state, &caller, &req).await?;
    // Only app-only tools: a model-visible tool goes through the agent and G3, never here.
    if !def.visible_to_app || def.visible_to_model {
        return Err(Error::Forbidden(format!("{}/{} is not an app-only tool", req.server, req.name)).with_request(&rid));
    }
    tracing::info!(request_id = %rid, server = %req.server, tool = %req.name, "app dispatch approved by the user's click");
    run(&state, &caller, req).await
}

fn parse(body: &[u8]) -> Result<ToolRequest, Error> {
    let req: ToolRequest = serde_json::from_slice(body).map_err(|e| Error::BadRequest(format!("tool request: {e}")))?;
    if req.name.is_empty() || req.name.len() > 128 || req.server.is_empty() {
        return Err(Error::BadRequest("server and name are required".into()));
    }
    Ok(req)
}

fn require_bearer(caller: &Caller) -> Result<(), ApiError> {
    // Without the user's own credential there is no workspace to reach.
    if caller.nc_bearer.is_none() {
        return Err(Error::Unauthorized("no workspace credential".into()).with_request(&caller.request_id));
    }
    Ok(())
}

async fn tool_for(state: &AppState, caller: &Caller, req: &ToolRequest) -> Result<ToolDef, ApiError> {
    let rid = &caller.request_id;
    if !state.services.tool_servers.contains(&req.server) {
        return Err(Error::Forbidden("unknown server".into()).with_request(rid));
    }
    require_bearer(caller)?;
    let listed = state
        .services
        .tool_servers
        .call(&req.server, caller, ToolOp::ListTools)
        .await
        .map_err(|e| Error::Internal(e.to_string()).with_request(rid))?;
    let ToolOpResult::Tools(tools) = listed else { return Err(Error::Internal("unexpected answer".into()).with_request(rid)) };
    let registry = Registry::new(tools.iter().map(|t| ToolDef::from_mcp(&req.server, t)).collect());
    registry.find(&req.server, &req.name).cloned().ok_or_else(|| Error::Forbidden("unknown tool".into()).with_request(rid))
}

async fn run(state: &AppState, caller: &Caller, req: ToolRequest) -> Result<Response, ApiError> {
    let rid = &caller.request_id;
    let result = state
        .services
        .tool_servers
        .call(&req.server, caller, ToolOp::CallTool { name: req.name, arguments: req.arguments })
        .await
        .map_err(|e| Error::Internal(e.to_string()).with_request(rid))?;
    let ToolOpResult::Called(r) = result else { return Err(Error::Internal("unexpected answer".into()).with_request(rid)) };
    Ok(Json(r).into_response())
}
