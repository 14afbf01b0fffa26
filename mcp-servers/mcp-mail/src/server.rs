//! The rmcp handler and the HTTP router.
//!
//! Stateless like mcp-nextcloud: every POST to `/mcp` stands alone, the handler holds only
//! the bridge client, and each tool call takes the caller's bearer from its own request.
//! Tools live in [`crate::tools`], apps in [`crate::apps`]; this file must not grow either.

use std::borrow::Cow;
use std::sync::Arc;

use axum::Router;
use http::HeaderMap;
use rmcp::model::{
    ListResourcesResult, PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult, ServerCapabilities,
    ServerConfig,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, ServerHandler, tool_handler};
use tokio_util::sync::CancellationToken;

use crate::apps;
use crate::bridge::Bridge;
use crate::compose::MAX_BODY_CHARS;
use crate::config::Config;
use crate::error::Error;
use crate::tools::MailTools;

/// The `Authorization` header of the request a tool call belongs to.
fn caller_headers(context: &RequestContext<RoleServer>) -> Option<HeaderMap> {
    let parts = context.extensions.get::<http::request::Parts>()?;
    let value = parts.headers.get(http::header::AUTHORIZATION)?.clone();
    let mut h = HeaderMap::new();
    h.insert(http::header::AUTHORIZATION, value);
    Some(h)
}

/// Tools come from the `#[tool_router]` declarations (list, get and call are generated);
/// resources are the compose app.
#[tool_handler(router = self.tool_router)]
impl ServerHandler for MailTools {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().enable_resources().build())
            .with_server_info(rmcp::model::Implementation::new("mcp-mail", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "The user's mail in Nextcloud Mail, read as the user. mail_compose prepares a mail for the person to \
                 review and send; nothing here sends mail on its own.",
            )
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

/// The HTTP router: `/mcp` and `/healthz`.
pub fn app(config: &Config, shutdown: &CancellationToken) -> Result<Router, Error> {
    let handler = MailTools::new(Bridge::new(&config.nc_url)?, caller_headers);
    let mcp = StreamableHttpService::new(
        move || Ok(handler.clone()),
        Arc::new(NeverSessionManager::default()),
        StreamableHttpServerConfig::default()
            .with_legacy_session_mode(false)
            .with_json_response(true)
            // Room for the largest body: up to 4 bytes a character, doubled by JSON escaping.
            .with_max_request_body_bytes(8 * MAX_BODY_CHARS + 64 * 1024)
            .with_sse_keep_alive(None)
            .with_allowed_hosts(config.host_allowlist())
            .with_cancellation_token(shutdown.child_token()),
    );
    Ok(Router::new().nest_service("/mcp", mcp).route(
        "/healthz",
        axum::routing::get(|| async { axum::Json(serde_json::json!({"status": "ok"})) }),
    ))
}

/// Serves on `listener` until `shutdown` is cancelled, then drains in-flight requests.
pub async fn serve(listener: tokio::net::TcpListener, config: Config, shutdown: CancellationToken) -> Result<(), Error> {
    let router = app(&config, &shutdown)?;
    axum::serve(listener, router)
        .with_graceful_shutdown(async move { shutdown.cancelled_owned().await })
        .await
        .map_err(|e| Error::Retryable(format!("the server stopped: {e}")))
}
