//! The HTTP surface: `fn app(state) -> Router` and thin handlers.
//!
//! - [`identity_layer`]: G1 on every `/v1/*` route (the verification itself lives in
//!   `auth::identity`; this only feeds it the headers and the raw body).
//! - [`chat`]: `POST /v1/chat` and `GET /v1/chat/{id}/stream` (SSE, AI SDK UI message stream).
//! - [`conversations`]: list, read, delete.
//! - [`apps`]: MCP App documents and the relay for frames and the island.
//! - [`memory`]: the user's memory facts, and the erasure of all their data.
//! - `GET /healthz`, unauthenticated.
//!
//! Handlers return `ApiError` for every failure, so users only ever see fixed messages.

pub mod apps;
pub mod chat;
pub mod conversations;
pub mod fairness;
pub mod memory;
pub mod server;
mod sse;

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post};
use axum::{Json, Router};
use std::sync::Arc;
use tokio::sync::Semaphore;

use crate::actors::Services;
use crate::actors::conversation::ConversationMsg;
use crate::actors::conversations::ConversationsMsg;
use crate::auth::identity::{self, Verifier};
use crate::error::Error;

/// Largest request body accepted (the AI SDK client may send the whole history).
pub const MAX_BODY_BYTES: usize = 8 * 1024 * 1024;

#[derive(Clone)]
pub struct AppState {
    pub services: Arc<Services>,
    pub verifier: Verifier,
    pub turn_permits: Arc<Semaphore>,
    /// B6: each user's share of turns.
    pub fairness: fairness::Fairness,
}

/// The router. Tests build it exactly as the binary does.
pub fn app(state: AppState) -> Router {
    let v1 = Router::new()
        .route("/v1/chat", post(chat::post_chat))
        .route("/v1/chat/{id}/stream", get(chat::resume))
        .route("/v1/conversations", get(conversations::list))
        .route("/v1/conversations/{id}", get(conversations::get_one))
        .route("/v1/conversations/{id}", delete(conversations::delete_one))
        .route("/v1/apps/resource", get(apps::resource))
        .route("/v1/apps/tools/call", post(apps::call))
        .route("/v1/apps/tools/dispatch", post(apps::dispatch))
        .route("/v1/memory", get(memory::list))
        .route("/v1/memory/{id}", delete(memory::forget))
        .route("/v1/me/data", delete(memory::erase_me))
        .layer(middleware::from_fn_with_state(state.clone(), identity_layer));
    Router::new().route("/healthz", get(health)).merge(v1).with_state(state)
}

async fn health() -> impl IntoResponse {
    Json(serde_json::json!({"status": "ok"}))
}

/// G1 for every `/v1/*` request: buffers the body (bounded), verifies the signature over
/// it, and hands the verified `Caller` to the handler. Nothing else reads identity headers.
async fn identity_layer(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let request_id = identity::request_id(request.headers());
    let (parts, body) = request.into_parts();
    let bytes: Bytes = match axum::body::to_bytes(body, MAX_BODY_BYTES).await {
        Ok(b) => b,
        Err(_) => return Error::TooLarge.with_request(&request_id).into_response(),
    };
    let now = chrono::Utc::now().timestamp();
    match state.verifier.verify(&parts.headers, &bytes, now, request_id.clone()) {
        Ok(caller) => {
            let mut request = Request::from_parts(parts, Body::from(bytes));
            request.extensions_mut().insert(caller);
            let mut response = next.run(request).await;
            if let Ok(v) = http::HeaderValue::from_str(&request_id) {
                response.headers_mut().insert("x-request-id", v);
            }
            response
        }
        Err(e) if e.is_bad_request() => Error::BadRequest(e.to_string()).with_request(&request_id).into_response(),
        Err(e) => Error::Unauthorized(e.to_string()).with_request(&request_id).into_response(),
    }
}

/// A conversation id chosen by the client: 1–64 characters of `[A-Za-z0-9_-]`.
pub fn valid_conversation_id(id: &str) -> bool {
    !id.is_empty() && id.len() <= 64 && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

const ACTOR_CALL_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

fn conversations_supervisor() -> Result<ractor::ActorRef<ConversationsMsg>, Error> {
    ractor::registry::where_is(crate::actors::root::CONVERSATIONS_NAME)
        .map(Into::into)
        .ok_or_else(|| Error::Internal("conversations supervisor not running".into()))
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

/// The running actor of a conversation, if any.
async fn find_conversation(uid: &str, id: &str) -> Result<Option<ractor::ActorRef<ConversationMsg>>, Error> {
    let (uid, conversation_id) = (uid.to_string(), id.to_string());
    ask(&conversations_supervisor()?, |reply| ConversationsMsg::Find {
        uid,
        conversation_id,
        reply,
    })
    .await
}

/// The actor of a conversation, started if needed.
async fn conversation_actor(uid: &str, id: &str) -> Result<ractor::ActorRef<ConversationMsg>, Error> {
    let (uid, conversation_id) = (uid.to_string(), id.to_string());
    ask(&conversations_supervisor()?, |reply| ConversationsMsg::Get {
        uid,
        conversation_id,
        reply,
    })
    .await?
    .map_err(Error::Internal)
}
