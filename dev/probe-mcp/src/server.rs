//! The rmcp handler, the HTTP router and the serve loop.
//!
//! Same rmcp setup as mcp-nextcloud: Streamable HTTP, stateless (no session), JSON answers,
//! so every POST stands alone and the orchestrator's per-call clients work unchanged. The
//! handler is rebuilt per request by rmcp's factory and reads the shared state, so a tool
//! set installed between two turns is what the next `tools/list` serves.
//!
//! Routes: `/mcp` (MCP, any bearer), `POST|GET /__tools`, `GET|DELETE /__calls`,
//! `GET|DELETE /__requests` (every HTTP request to `/mcp`: its JSON-RPC method and a hash of
//! its Authorization header, if any — so a test can prove a server got no credential at all,
//! not even on initialize or tools/list), `/healthz`.

use std::borrow::Cow;
use std::sync::{Arc, RwLock};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, Implementation, ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig,
    Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, ServerHandler};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::calls::CallLog;
use crate::catalogue::{self, ProbeTool};
use crate::error::Error;

/// What every request shares: the installed tools, the call log and the request log.
#[derive(Default)]
pub struct Shared {
    tools: RwLock<Vec<ProbeTool>>,
    pub calls: CallLog,
    requests: std::sync::Mutex<Vec<Value>>,
}

impl Shared {
    fn definitions(&self) -> Vec<Tool> {
        self.tools
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .map(|t| t.definition.clone())
            .collect()
    }

    fn find(&self, name: &str) -> Option<ProbeTool> {
        self.tools
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .find(|t| t.definition.name == name)
            .cloned()
    }

    fn replace(&self, tools: Vec<ProbeTool>) {
        *self.tools.write().unwrap_or_else(|e| e.into_inner()) = tools;
    }
}

#[derive(Clone)]
struct Handler {
    shared: Arc<Shared>,
}

impl ServerHandler for Handler {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("probe-mcp", env!("CARGO_PKG_VERSION")))
            .with_instructions("Test equipment: tools are installed by the test that runs this server.")
    }

    async fn list_tools(&self, _: Option<PaginatedRequestParams>, _: RequestContext<RoleServer>) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.shared.definitions()))
    }

    async fn call_tool(&self, request: CallToolRequestParams, context: RequestContext<RoleServer>) -> Result<CallToolResponse, ErrorData> {
        let bearer = context
            .extensions
            .get::<http::request::Parts>()
            .and_then(|p| p.headers.get(http::header::AUTHORIZATION))
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .map(str::to_string);
        let arguments = request.arguments.unwrap_or_default();
        let tool = self.shared.find(&request.name);
        // Recorded before answering, known or not: the log is the proof of what reached us.
        self.shared
            .calls
            .record(&request.name, Value::Object(arguments.clone()), tool.is_some(), bearer.as_deref());
        tracing::info!(tool = %request.name, known = tool.is_some(), "tools/call");
        let result = match tool.map(|t| t.answer(&arguments)) {
            Some(Some(result)) => result,
            // A silent tool: recorded above, never answered (the caller's timeout decides).
            Some(None) => std::future::pending().await,
            None => catalogue::unknown_tool(&request.name),
        };
        Ok(result.into())
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [rmcp::model::ProtocolVersion]> {
        Cow::Owned(rmcp::model::ProtocolVersion::KNOWN_VERSIONS.to_vec())
    }
}

/// The router over `shared`. `/mcp` is cancelled with `shutdown`.
pub fn app(shared: Arc<Shared>, shutdown: CancellationToken) -> Router {
    let for_mcp = shared.clone();
    let mcp = StreamableHttpService::new(
        move || Ok(Handler { shared: for_mcp.clone() }),
        Arc::new(NeverSessionManager::default()),
        StreamableHttpServerConfig::default()
            .with_legacy_session_mode(false)
            .with_json_response(true)
            .with_sse_keep_alive(None)
            .with_cancellation_token(shutdown.child_token()),
    );
    let mcp = Router::new()
        .fallback_service(mcp)
        .layer(axum::middleware::from_fn_with_state(shared.clone(), record_request));
    Router::new()
        .route("/__tools", get(get_tools).post(post_tools))
        .route("/__calls", get(get_calls).delete(delete_calls))
        .route("/__requests", get(get_requests).delete(delete_requests))
        .route("/healthz", get(|| async { axum::Json(json!({"status": "ok"})) }))
        .nest_service("/mcp", mcp)
        .with_state(shared)
}

/// Records every request to `/mcp` (JSON-RPC method, sha256 of any Authorization header).
async fn record_request(State(shared): State<Arc<Shared>>, request: axum::extract::Request, next: axum::middleware::Next) -> Response {
    use sha2::Digest;
    let (parts, body) = request.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, 4 * 1024 * 1024).await else {
        return http::StatusCode::PAYLOAD_TOO_LARGE.into_response();
    };
    let rpc = serde_json::from_slice::<Value>(&bytes)
        .ok()
        .and_then(|v| v.get("method").and_then(Value::as_str).map(str::to_string));
    let authorization = parts
        .headers
        .get(http::header::AUTHORIZATION)
        .map(|v| hex::encode(sha2::Sha256::digest(v.as_bytes())));
    shared
        .requests
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(json!({"http": parts.method.as_str(), "rpc": rpc, "authorization_sha256": authorization}));
    next.run(axum::extract::Request::from_parts(parts, axum::body::Body::from(bytes)))
        .await
}

async fn get_requests(State(shared): State<Arc<Shared>>) -> Response {
    let requests = shared.requests.lock().unwrap_or_else(|e| e.into_inner()).clone();
    axum::Json(json!({"requests": requests})).into_response()
}

async fn delete_requests(State(shared): State<Arc<Shared>>) -> http::StatusCode {
    shared.requests.lock().unwrap_or_else(|e| e.into_inner()).clear();
    http::StatusCode::NO_CONTENT
}

async fn post_tools(State(shared): State<Arc<Shared>>, body: Bytes) -> Result<Response, Error> {
    let tools = catalogue::parse(&body)?;
    let count = tools.len();
    shared.replace(tools);
    tracing::info!(count, "tool set installed");
    Ok(axum::Json(json!({"tools": count})).into_response())
}

async fn get_tools(State(shared): State<Arc<Shared>>) -> Response {
    axum::Json(json!({"tools": shared.definitions()})).into_response()
}

async fn get_calls(State(shared): State<Arc<Shared>>) -> Response {
    axum::Json(json!({"calls": shared.calls.all()})).into_response()
}

async fn delete_calls(State(shared): State<Arc<Shared>>) -> http::StatusCode {
    shared.calls.clear();
    http::StatusCode::NO_CONTENT
}

/// Serves on `listener` until `shutdown` is cancelled, then drains in-flight requests.
pub async fn serve(listener: tokio::net::TcpListener, shutdown: CancellationToken) -> Result<(), Error> {
    let router = app(Arc::new(Shared::default()), shutdown.clone());
    axum::serve(listener, router)
        .with_graceful_shutdown(async move { shutdown.cancelled_owned().await })
        .await?;
    Ok(())
}
