//! The HTTP surface: `fn app(state) -> Router` and thin handlers.
//!
//! - [`identity_layer`]: G1 on every `/v1/*` route (the verification itself lives in
//!   `auth::identity`; this only feeds it the headers, then the raw body, then remembers the
//!   nonce). Nothing is read from an unauthenticated request's body.
//! - [`error_shape_layer`]: every error leaving the router has the fixed JSON shape and a
//!   request id, whoever produced it (a handler, an extractor's rejection, a 404 or 405).
//! - [`chat`]: `POST /v1/chat` and `GET /v1/chat/{id}/stream` (SSE, AI SDK UI message stream).
//! - [`conversations`]: list, read, delete.
//! - [`assistants`]: the assistants a user may pick, and the conversation binding rule.
//! - [`talk`]: a room turn for a mention in a Talk room (no credentials, no tools, no memory).
//! - [`admin`]: configuration status for Nextcloud admins (admin-signed, never users' content).
//! - [`apps`]: MCP App documents and the relay for frames and the island.
//! - [`memory`]: the user's memory facts, and the erasure of all their data.
//! - `GET /healthz`, unauthenticated.
//!
//! Handlers return `ApiError` for every failure, so users only ever see fixed messages.

pub mod admin;
pub mod apps;
pub mod assistants;
pub mod chat;
pub mod conversations;
pub mod fairness;
pub mod memory;
pub mod personal;
pub mod registry;
pub mod server;
mod sse;
pub mod talk;

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post, put};
use axum::{Json, Router};
use std::sync::Arc;
use tokio::sync::Semaphore;

use crate::actors::conversation::ConversationMsg;
use crate::actors::conversations::ConversationsMsg;
use crate::auth::identity::{self, IdentityError, Verifier};
use crate::auth::replay::ReplayGuard;
use crate::error::{Error, error_response};
use crate::services::Services;
use crate::store::key::ConversationKey;

/// Largest request body accepted (the AI SDK client may send the whole history).
pub const MAX_BODY_BYTES: usize = 8 * 1024 * 1024;
/// How long a signed caller may take to send its body. Our app sends bodies at once; a
/// caller that trickles one holds a connection and a buffer for nothing.
pub const BODY_READ_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(15);

#[derive(Clone)]
pub struct AppState {
    pub services: Arc<Services>,
    /// Where the running actors are (never a process-global name).
    pub actors: crate::actors::Directory,
    pub verifier: Verifier,
    pub turn_permits: Arc<Semaphore>,
    /// B6: each user's share of turns.
    pub fairness: fairness::Fairness,
    /// G1: nonces of signed requests still inside their validity window.
    pub replay: Arc<ReplayGuard>,
}

/// The router. Tests build it exactly as the binary does.
pub fn app(state: AppState) -> Router {
    let v1 = Router::new()
        .route("/v1/chat", post(chat::post_chat))
        .route("/v1/chat/{id}/stream", get(chat::resume))
        .route("/v1/chat/{id}/stop", post(chat::stop))
        .route("/v1/conversations", get(conversations::list))
        .route("/v1/conversations/{id}", get(conversations::get_one))
        .route("/v1/conversations/{id}", delete(conversations::delete_one))
        .route("/v1/apps/resource", get(apps::resource))
        .route("/v1/apps/tools/call", post(apps::call))
        .route("/v1/apps/tools/dispatch", post(apps::dispatch))
        .route("/v1/apps/tools/describe", post(apps::describe))
        .route("/v1/memory", get(memory::list))
        .route("/v1/memory/{id}", delete(memory::forget))
        .route("/v1/me/data", delete(memory::erase_me))
        .route("/v1/assistants", get(assistants::list).post(personal::create))
        .route("/v1/assistants/{id}", put(personal::update).delete(personal::delete))
        .route("/v1/assistants/{id}/share", post(personal::share))
        .route("/v1/admin/status", get(admin::status))
        .route("/v1/admin/servers", get(registry::list_servers).post(registry::create_server))
        .route(
            "/v1/admin/servers/{name}",
            put(registry::update_server).delete(registry::delete_server),
        )
        .route(
            "/v1/admin/assistants",
            get(registry::list_assistants).post(registry::create_assistant),
        )
        .route(
            "/v1/admin/assistants/{name}",
            put(registry::update_assistant).delete(registry::delete_assistant),
        )
        .route("/v1/admin/assistants/{name}/approve", post(registry::approve))
        .route("/v1/admin/policy", get(registry::get_policy).put(registry::put_policy))
        .route("/v1/talk/turn", post(talk::turn))
        .layer(middleware::from_fn_with_state(state.clone(), identity_layer));
    Router::new()
        .route("/healthz", get(health))
        .merge(v1)
        .fallback(not_found)
        .layer(middleware::from_fn(error_shape_layer))
        .with_state(state)
}

async fn not_found(request: Request) -> Response {
    Error::NotFound
        .with_request(&identity::request_id(request.headers()))
        .into_response()
}

/// Gives every error response the fixed shape (docs/api.md): axum's own answers — a query or
/// path that does not deserialize, a wrong method, an unknown route — come with plain text or
/// nothing, and must not reach a client like that.
async fn error_shape_layer(request: Request, next: Next) -> Response {
    let fallback_id = identity::request_id(request.headers());
    let response = next.run(request).await;
    let status = response.status();
    let is_json = response
        .headers()
        .get(http::header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"application/json"));
    if !(status.is_client_error() || status.is_server_error()) || is_json {
        return response;
    }
    let request_id = response
        .headers()
        .get("x-request-id")
        .and_then(|v| v.to_str().ok())
        .map_or(fallback_id, str::to_string);
    tracing::info!(request_id = %request_id, status = status.as_u16(), "framework error given the fixed shape");
    let allow = response.headers().get(http::header::ALLOW).cloned();
    let mut shaped = error_response(status, &request_id);
    if let Some(allow) = allow {
        shaped.headers_mut().insert(http::header::ALLOW, allow);
    }
    shaped
}

/// `ok`, or `degraded` naming each tool server out of service (its restart limit was reached;
/// `actors::root`). Still 200: the process serves every conversation, only those tools are
/// missing, and a load balancer must not take the instance out for it. Server names are the
/// operator's configuration, never anything of a user.
async fn health(State(state): State<AppState>) -> impl IntoResponse {
    let unavailable = state.services.tool_servers.unavailable();
    if unavailable.is_empty() {
        return Json(serde_json::json!({"status": "ok"}));
    }
    Json(serde_json::json!({"status": "degraded", "unavailableToolServers": unavailable}))
}

/// G1 for every `/v1/*` request, in an order that never buffers for a stranger: the proxy
/// bearer, header shapes, skew and credentials are checked before a body byte is read; a
/// declared `Content-Length` over the limit is refused at once; the body must then arrive
/// within [`BODY_READ_TIMEOUT`] and the limit; only then is the signature over it and the
/// request's method, path and query checked, and the nonce remembered. Nothing else reads identity headers.
async fn identity_layer(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let request_id = identity::request_id(request.headers());
    let (parts, body) = request.into_parts();
    let now = chrono::Utc::now().timestamp();
    let signed = match state.verifier.check_headers(&parts.headers, now) {
        Ok(signed) => signed,
        Err(e) => return refusal(e, &request_id),
    };
    if declared_length(&parts.headers).is_some_and(|n| n > MAX_BODY_BYTES as u64) {
        return Error::TooLarge.with_request(&request_id).into_response();
    }
    let bytes: Bytes = match tokio::time::timeout(BODY_READ_TIMEOUT, axum::body::to_bytes(body, MAX_BODY_BYTES)).await {
        Ok(Ok(b)) => b,
        Ok(Err(_)) => return Error::TooLarge.with_request(&request_id).into_response(),
        Err(_) => return Error::BodyTimeout.with_request(&request_id).into_response(),
    };
    let (nonce, ts) = (signed.nonce.clone(), signed.ts);
    // The target as it arrived, before anything could rewrite it: what the router matched is
    // what was signed (issue #27).
    let target = identity::target_of(&parts.method, &parts.uri);
    let caller = match state.verifier.check_body(signed, target, &bytes, request_id.clone()) {
        Ok(caller) => caller,
        Err(e) => return refusal(e, &request_id),
    };
    // Only a correctly signed request may occupy the replay memory.
    if let Err(e) = state.replay.first_use(&nonce, ts, now).await {
        return refusal(e, &request_id);
    }
    // Valid: check_body refused a request whose `group` parameters are not.
    let groups = identity::Groups(identity::groups_of(target.query).unwrap_or_default());
    let mut request = Request::from_parts(parts, Body::from(bytes));
    request.extensions_mut().insert(caller);
    request.extensions_mut().insert(groups);
    let mut response = next.run(request).await;
    if let Ok(v) = http::HeaderValue::from_str(&request_id) {
        response.headers_mut().insert("x-request-id", v);
    }
    response
}

fn refusal(e: IdentityError, request_id: &str) -> Response {
    let error = match e {
        IdentityError::ReplayWindowFull => Error::Overloaded,
        // G1 fails closed when the shared replay records cannot answer; a 503 with a delay
        // tells the PHP app (which passes Retry-After on) that this passes.
        IdentityError::ReplayUnverifiable => Error::Unavailable {
            reason: e.to_string(),
            retry_after_secs: 1,
        },
        // Its own code, so the operator of an outdated Nextcloud app sees what to update.
        IdentityError::OutdatedSignature => Error::SignatureOutdated,
        e if e.is_bad_request() => Error::BadRequest(e.to_string()),
        e => Error::Unauthorized(e.to_string()),
    };
    error.with_request(request_id).into_response()
}

/// The declared body length, when there is a (well-formed) one.
fn declared_length(headers: &http::HeaderMap) -> Option<u64> {
    headers
        .get(http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse().ok())
}

pub use crate::store::key::valid_conversation_id;

const ACTOR_CALL_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

fn conversations_supervisor(state: &AppState) -> Result<ractor::ActorRef<ConversationsMsg>, Error> {
    state.actors.conversations()
}

/// Asks `actor` and waits (bounded) for its answer.
pub(crate) async fn ask<M, T>(actor: &ractor::ActorRef<M>, message: impl FnOnce(ractor::RpcReplyPort<T>) -> M) -> Result<T, Error>
where
    M: ractor::Message,
    T: Send + 'static,
{
    actor
        .call(message, Some(ACTOR_CALL_TIMEOUT))
        .await
        .map_err(|e| Error::Internal(e.to_string()))?
        .success_or(Error::Internal("actor did not answer".into()))
}

/// Asks the actor of a conversation, started if needed: `running` when the caller already
/// has it (a running conversation reached without the supervisor, issue #16), otherwise the
/// supervisor's. An actor that stops before it answers (an idle stop between the lookup and
/// the message: the message is then refused, or dropped unread from its mailbox) is not an
/// error the user sees: once it has fully stopped, the supervisor starts a fresh one, which
/// is asked once more. `message` is therefore built up to twice.
pub(crate) async fn ask_conversation<T>(
    state: &AppState,
    key: &ConversationKey,
    running: Option<ractor::ActorRef<ConversationMsg>>,
    message: impl Fn(ractor::RpcReplyPort<T>) -> ConversationMsg,
) -> Result<T, Error>
where
    T: Send + 'static,
{
    let actor = match running {
        Some(actor) => actor,
        None => conversation_actor(state, key.clone()).await?,
    };
    match actor.call(&message, Some(ACTOR_CALL_TIMEOUT)).await {
        Ok(ractor::rpc::CallResult::Success(answer)) => return Ok(answer),
        Ok(ractor::rpc::CallResult::Timeout) => return Err(Error::Internal("actor did not answer in time".into())),
        Ok(ractor::rpc::CallResult::SenderError) | Err(ractor::MessagingErr::SendErr(_)) => {}
        Err(e) => return Err(Error::Internal(e.to_string())),
    }
    // Stopped (or stopping) before it answered. Its exit reaches the supervisor before `wait`
    // returns, so the supervisor no longer hands it out, and its lease is given back.
    tracing::debug!("a conversation actor stopped before answering; asking a fresh one");
    if actor.wait(Some(ACTOR_CALL_TIMEOUT)).await.is_err() {
        return Err(Error::Internal("a stopping conversation actor did not stop in time".into()));
    }
    ask(&conversation_actor(state, key.clone()).await?, message).await
}

/// The running actor of a conversation, if any.
async fn find_conversation(state: &AppState, key: &ConversationKey) -> Result<Option<ractor::ActorRef<ConversationMsg>>, Error> {
    let key = key.clone();
    ask(&conversations_supervisor(state)?, |reply| ConversationsMsg::Find { key, reply }).await
}

/// The actor of a conversation, started if needed.
async fn conversation_actor(state: &AppState, key: ConversationKey) -> Result<ractor::ActorRef<ConversationMsg>, Error> {
    ask(&conversations_supervisor(state)?, |reply| ConversationsMsg::Get { key, reply }).await?
}
