//! The HTTP surface: one `app(state)` router, thin handlers, and `serve` which runs it on a
//! listener it is given until a shutdown token fires.
//!
//! Handlers only parse, ask `script` what to say and hand the answer to `reply`. No handler
//! may outlive shutdown: hanging and streaming answers all watch the token.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::serve::ListenerExt;
use axum::{Json, Router};
use serde_json::json;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::control::{RequestLog, Scripts};
use crate::error::Error;
use crate::openai::{self, ModelEntry, ModelList, ResponseMeta};
use crate::reply::{self, IdentifiedCall};
use crate::script::{Outcome, Reply, Rule, RuleSet};

/// Requests carry whole conversations with tool results; allow more than axum's 2 MB.
const BODY_LIMIT: usize = 32 * 1024 * 1024;

pub struct AppState {
    scripts: Scripts,
    log: RequestLog,
    responses: AtomicU64,
    calls: AtomicU64,
    shutdown: CancellationToken,
}

impl AppState {
    pub fn new(rules: Vec<Rule>, shutdown: CancellationToken) -> Arc<AppState> {
        Arc::new(AppState {
            scripts: Scripts::new(rules),
            log: RequestLog::default(),
            responses: AtomicU64::new(0),
            calls: AtomicU64::new(0),
            shutdown,
        })
    }

    /// `call_<n>`: unique for the life of this process, so ids never repeat in a conversation.
    fn next_call_id(&self) -> String {
        format!("call_{}", self.calls.fetch_add(1, Ordering::Relaxed) + 1)
    }

    fn next_response_id(&self) -> String {
        format!("chatcmpl-{}", self.responses.fetch_add(1, Ordering::Relaxed) + 1)
    }
}

pub fn app(state: Arc<AppState>) -> Router {
    Router::new()
        .route("/v1/chat/completions", post(chat_completions))
        .route("/v1/models", get(models))
        .route("/__scripts", post(add_scripts).delete(clear_scripts))
        .route("/__requests", get(list_requests).delete(clear_requests))
        .layer(DefaultBodyLimit::max(BODY_LIMIT))
        .with_state(state)
}

/// Serves `app` on `listener` until `shutdown` fires, then ends open streams and returns.
pub async fn serve(listener: TcpListener, rules: Vec<Rule>, shutdown: CancellationToken) -> std::io::Result<()> {
    let state = AppState::new(rules, shutdown.clone());
    // Stream chunks must leave as they are written, as a provider's do: without TCP_NODELAY
    // Nagle's algorithm holds small frames until the peer's delayed ACK (up to 40 ms).
    let listener = listener.tap_io(|tcp| {
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::debug!("TCP_NODELAY not set: {e}");
        }
    });
    axum::serve(listener, app(state))
        .with_graceful_shutdown(shutdown.cancelled_owned())
        .await
}

/// Like [`serve`], and on the same port also HTTP/2 without negotiation (h2c, "prior
/// knowledge"), as vLLM or Ollama behind an HTTP/2 proxy do; at most `max_streams` concurrent
/// streams per HTTP/2 connection (the SETTINGS a client must respect by opening more
/// connections). HTTP/1.1 clients are served as before.
pub async fn serve_h2c(listener: TcpListener, rules: Vec<Rule>, shutdown: CancellationToken, max_streams: u32) -> std::io::Result<()> {
    use hyper_util::rt::{TokioExecutor, TokioIo};
    use hyper_util::server::conn::auto;
    use hyper_util::service::TowerToHyperService;
    let router = app(AppState::new(rules, shutdown.clone()));
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    // Every connection's task, so the drain below waits for the tasks themselves.
    let connections = tokio_util::task::TaskTracker::new();
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder.http2().max_concurrent_streams(max_streams);
    loop {
        let stream = tokio::select! {
            a = listener.accept() => match a {
                Ok((stream, _)) => stream,
                Err(e) => {
                    tracing::warn!("accept failed: {e}");
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                    continue;
                }
            },
            _ = shutdown.cancelled() => break,
        };
        if let Err(e) = stream.set_nodelay(true) {
            tracing::debug!("TCP_NODELAY not set: {e}");
        }
        let connection = builder
            .serve_connection_with_upgrades(TokioIo::new(stream), TowerToHyperService::new(router.clone()))
            .into_owned();
        let watched = graceful.watch(connection);
        connections.spawn(async move {
            if let Err(e) = watched.await {
                tracing::debug!("connection ended: {e}");
            }
        });
    }
    drop(listener);
    connections.close();
    // Streaming answers watch the token and end; give them a moment to say so.
    let _ = tokio::time::timeout(std::time::Duration::from_secs(5), async {
        graceful.shutdown().await;
        connections.wait().await;
    })
    .await;
    Ok(())
}

async fn chat_completions(State(state): State<Arc<AppState>>, version: axum::http::Version, body: Bytes) -> Response {
    state.log.record(&body, version);
    match answer(&state, &body).await {
        Ok(response) => response,
        Err(e) => e.into_response(),
    }
}

async fn answer(state: &AppState, body: &[u8]) -> Result<Response, Error> {
    let request = openai::parse_request(body)?;
    let convo = openai::validate(&request)?;
    if !state.scripts.models().contains(&convo.model) {
        return Err(Error::ModelNotFound(convo.model));
    }
    let reply = match state.scripts.decide(&convo) {
        Outcome::Reply(reply) => reply,
        Outcome::Fail {
            status,
            message,
            retry_after_secs,
        } => {
            return Err(Error::Scripted {
                status,
                message,
                retry_after_secs,
            });
        }
        Outcome::Hang => return Ok(reply::hang(&state.shutdown).await),
        Outcome::Html(body) => return Ok(reply::html_response(body)),
    };
    let calls = identify(state, &reply);
    let meta = ResponseMeta {
        id: state.next_response_id(),
        created: chrono::Utc::now().timestamp(),
        model: convo.model.clone(),
        include_usage: convo.include_usage,
    };
    let usage = reply::usage_for(&reply, &calls, convo.prompt_tokens);
    if !reply.pacing.first_byte_delay.is_zero() {
        tokio::select! {
            () = tokio::time::sleep(reply.pacing.first_byte_delay) => {}
            () = state.shutdown.cancelled() => return Ok(StatusCode::SERVICE_UNAVAILABLE.into_response()),
        }
    }
    if convo.stream {
        let plan = reply::stream_plan(&reply, &calls, &meta, usage);
        return Ok(reply::sse_response(plan, state.shutdown.clone()));
    }
    let body = reply::completion_body(&reply, &calls, &meta, usage);
    let pieces = reply::split_chars(&reply.text, reply.pacing.chunk_chars).len() as u32;
    let pauses = reply.pacing.delay * pieces.saturating_sub(1);
    Ok(reply::json_response(body, pauses, reply.abort_after_chars, &state.shutdown).await)
}

fn identify(state: &AppState, reply: &Reply) -> Vec<IdentifiedCall> {
    (0u64..)
        .zip(&reply.calls)
        .map(|(position, c)| IdentifiedCall {
            id: c.id.clone().unwrap_or_else(|| state.next_call_id()),
            index: c.index.unwrap_or(position),
            name: c.name.clone(),
            arguments: match &c.arguments {
                serde_json::Value::String(raw) => raw.clone(),
                other => other.to_string(),
            },
        })
        .collect()
}

async fn models(State(state): State<Arc<AppState>>) -> Json<ModelList> {
    let data = state
        .scripts
        .models()
        .into_iter()
        .map(|id| ModelEntry {
            id,
            object: "model",
            created: 0,
            owned_by: "scripted-model",
        })
        .collect();
    Json(ModelList { object: "list", data })
}

async fn add_scripts(State(state): State<Arc<AppState>>, body: Bytes) -> Result<Json<serde_json::Value>, Error> {
    let set = RuleSet::parse(&body)?;
    let added = set.rules.len();
    state.scripts.prepend(set.rules);
    Ok(Json(json!({"added": added})))
}

async fn clear_scripts(State(state): State<Arc<AppState>>) -> StatusCode {
    state.scripts.clear_runtime();
    StatusCode::NO_CONTENT
}

async fn list_requests(State(state): State<Arc<AppState>>) -> Json<serde_json::Value> {
    Json(json!({"requests": state.log.snapshot()}))
}

async fn clear_requests(State(state): State<Arc<AppState>>) -> StatusCode {
    state.log.clear();
    StatusCode::NO_CONTENT
}
