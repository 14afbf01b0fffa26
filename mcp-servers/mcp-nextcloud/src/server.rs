//! The MCP handler, the HTTP router and the serve loop.
//!
//! rmcp's StreamableHttpService runs stateless (no session): every POST stands alone, so any
//! client works and any request can go to any instance. The auth layer in front of `/mcp`
//! resolves the [`Caller`]; rmcp hands the request's `http::request::Parts` (with that
//! caller in its extensions) to the handler. Routes live in [`app`], tools in
//! [`crate::tools`]; this file must not grow tool logic.
//!
//! Shutdown order: the token stops rmcp's streams and axum stops accepting, then in-flight
//! requests drain.

use std::borrow::Cow;
use std::sync::Arc;

use axum::Router;
use axum::extract::State;
use axum::response::IntoResponse;
use axum::routing::get;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, Implementation, ListResourcesResult, ListToolsResult, PaginatedRequestParams,
    ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, ServerHandler};
use tokio_util::sync::CancellationToken;

use crate::auth::{self, Caller, UidCache};
use crate::config::Config;
use crate::error::Error;
use crate::index::Index;
use crate::nextcloud::Nextcloud;
use crate::{apps, tools};

/// What every request shares. Holds no credential.
pub struct AppState {
    pub config: Config,
    pub nextcloud: Arc<Nextcloud>,
    pub uids: UidCache,
    /// Canonical URI of the MCP endpoint (the JWT audience).
    pub resource: String,
    /// Origin of the public URL (where the well-known document lives).
    pub public_origin: String,
    /// The document index behind files_grep (no user id in it; see crate::index).
    pub index: Index,
}

impl AppState {
    pub fn new(config: Config) -> Result<Self, Error> {
        let nextcloud = Arc::new(Nextcloud::new(config.nc_url.clone())?);
        let index = Index::open(&config.index_path).map_err(|e| {
            Error::Config(format!(
                "cannot open the document index MCP_INDEX_PATH={}: {e}",
                config.index_path.display()
            ))
        })?;
        Ok(AppState {
            index,
            resource: config.resource(),
            public_origin: config.public_origin(),
            nextcloud,
            uids: UidCache::default(),
            config,
        })
    }
}

/// The rmcp handler. Stateless: built per request by the service factory.
#[derive(Clone)]
pub struct Handler {
    nextcloud: Arc<Nextcloud>,
    index: Index,
}

impl ServerHandler for Handler {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().enable_resources().build())
            .with_server_info(Implementation::new("mcp-nextcloud", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "Nextcloud files, calendar, contacts and Deck boards, acting strictly as the calling user. \
                 Paths are relative to the user's own root; ids returned by one tool are what the next takes.",
            )
    }

    async fn list_tools(&self, _: Option<PaginatedRequestParams>, _: RequestContext<RoleServer>) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(tools::definitions()))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        tools::definition(name)
    }

    async fn call_tool(&self, request: CallToolRequestParams, context: RequestContext<RoleServer>) -> Result<CallToolResponse, ErrorData> {
        // The auth layer put the caller into the HTTP request; rmcp passes its parts along.
        let caller = context
            .extensions
            .get::<http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<Caller>())
            .cloned();
        let Some(caller) = caller else {
            return Ok(tools::error_result(&Error::AuthExpired).into());
        };
        let arguments = request.arguments.unwrap_or_default();
        let name: &str = &request.name;
        tracing::info!(tool = name, uid = caller.uid(), "tool call");
        let span = tool_span(&context, name);
        let result =
            tracing::Instrument::instrument(tools::call(&self.nextcloud, &self.index, &caller, name, arguments), span.clone()).await;
        if result.is_error == Some(true) {
            span.record("error.type", "tool_error");
        }
        Ok(result.into())
    }

    async fn list_resources(
        &self,
        _: Option<PaginatedRequestParams>,
        _: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        Ok(ListResourcesResult::with_all_items(apps::list()))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        match apps::read(&request.uri) {
            Some(contents) => Ok(ReadResourceResult::new(vec![contents]).into()),
            None => Err(ErrorData::resource_not_found(format!("no resource {}", request.uri), None)),
        }
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [rmcp::model::ProtocolVersion]> {
        Cow::Owned(rmcp::model::ProtocolVersion::KNOWN_VERSIONS.to_vec())
    }
}

/// The span of one tool call, a child of the HTTP request's span (rmcp runs the handler
/// outside the request's task, so the parent is taken from the request's extensions). Carries
/// the tool name only: never the arguments, the result or the caller's bearer.
fn tool_span(context: &RequestContext<RoleServer>, name: &str) -> tracing::Span {
    if !telemetry_otlp::exporting() {
        return tracing::Span::none();
    }
    let parent = context
        .extensions
        .get::<http::request::Parts>()
        .and_then(|parts| parts.extensions.get::<telemetry_otlp::RequestSpan>())
        .map(|r| r.0.clone());
    let span = tracing::info_span!(
        "mcp.tool",
        otel.name = %format!("tools/call {name}"),
        mcp.method.name = "tools/call",
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = %name,
        error.type = tracing::field::Empty,
    );
    if let Some(parent) = parent {
        telemetry_otlp::set_parent_span(&span, &parent);
    }
    span
}

/// The HTTP router: `/mcp` (behind the auth layer), the RFC 9728 document, `/healthz`,
/// and `POST /webhooks/nextcloud` (shared-secret, see crate::index::webhook).
pub fn app(state: Arc<AppState>, shutdown: CancellationToken) -> Router {
    let nextcloud = state.nextcloud.clone();
    let index = state.index.clone();
    let mcp = StreamableHttpService::new(
        move || {
            Ok(Handler {
                nextcloud: nextcloud.clone(),
                index: index.clone(),
            })
        },
        Arc::new(NeverSessionManager::default()),
        StreamableHttpServerConfig::default()
            .with_legacy_session_mode(false)
            .with_json_response(true)
            // Room for files_write's largest content even when JSON escaping doubles it.
            .with_max_request_body_bytes(4 * tools::files::MAX_WRITE_BYTES)
            .with_sse_keep_alive(None)
            .with_allowed_hosts(state.config.host_allowlist())
            .with_cancellation_token(shutdown.child_token()),
    );
    let mcp_routes = Router::new()
        .nest_service("/mcp", mcp)
        .layer(axum::middleware::from_fn_with_state(state.clone(), auth::require_caller));
    let router = Router::new()
        .route("/.well-known/oauth-protected-resource", get(protected_resource))
        .route("/.well-known/oauth-protected-resource/{*rest}", get(protected_resource))
        .route("/healthz", get(|| async { axum::Json(serde_json::json!({"status": "ok"})) }))
        .merge(mcp_routes)
        .merge(crate::index::webhook::router(crate::index::webhook::WebhookState {
            index: state.index.clone(),
            secret: state.config.webhook_secret.as_deref().map(Into::into),
        }))
        .with_state(state);
    // A server span per request, continuing the caller's `traceparent` (only when exporting).
    if telemetry_otlp::exporting() {
        router.layer(axum::middleware::from_fn(telemetry_otlp::trace_http))
    } else {
        router
    }
}

async fn protected_resource(State(state): State<Arc<AppState>>) -> impl IntoResponse {
    axum::Json(auth::resource_metadata(&state.resource, state.config.nc_url.as_str()))
}

/// Serves on `listener` until `shutdown` is cancelled, then drains in-flight requests.
pub async fn serve(listener: tokio::net::TcpListener, config: Config, shutdown: CancellationToken) -> Result<(), Error> {
    let state = Arc::new(AppState::new(config)?);
    let router = app(state, shutdown.clone());
    axum::serve(listener, router)
        .with_graceful_shutdown(async move { shutdown.cancelled_owned().await })
        .await
        .map_err(|e| Error::Retryable(format!("the server stopped: {e}")))
}
