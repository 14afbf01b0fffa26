//! The MCP handler, the HTTP router and the serve loop.
//!
//! The shared parts (the auth gate with its RFC 9728 document, the stateless Streamable
//! HTTP service, the serve loop with graceful shutdown) come from [`mcp_resource_server`];
//! this file wires this server's handler, state and webhook into them. The gate resolves the
//! [`mcp_resource_server::Caller`]; rmcp hands the request's `http::request::Parts` (with
//! that caller in its extensions) to the handler. Tools live in [`crate::tools`], built
//! once into [`AppState::tools`] and shared by every request's handler; this file must not
//! grow tool logic.

use std::borrow::Cow;
use std::sync::Arc;

use axum::Router;
use mcp_resource_server::{AuthState, mcp};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, Implementation, ListResourcesResult, ListToolsResult, PaginatedRequestParams,
    ReadResourceRequestParams, ReadResourceResponse, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData, ServerHandler};
use tokio_util::sync::CancellationToken;

use crate::apps;
use crate::config::Config;
use crate::convert::Converter;
use crate::error::Error;
use crate::index::Index;
use crate::nextcloud::Nextcloud;
use crate::output::error_result;
use crate::tools::{self, Tools};

/// What every request shares. Holds no credential.
pub struct AppState {
    pub config: Config,
    pub nextcloud: Arc<Nextcloud>,
    /// The document index behind files_grep (no user id in it; see crate::index).
    pub index: Index,
    /// The tool catalogue, built once.
    pub tools: Arc<Tools>,
    /// files_convert's loans and document server client, when a document server is configured.
    pub converter: Option<Arc<Converter>>,
}

impl AppState {
    pub fn new(config: Config) -> Result<Self, Error> {
        let nextcloud = Arc::new(Nextcloud::new(config.base.nc_url.clone(), config.nextcloud_timeout)?);
        let index = Index::open(&config.index_path).map_err(|e| {
            Error::Config(format!(
                "cannot open the document index MCP_INDEX_PATH={}: {e}",
                config.index_path.display()
            ))
        })?;
        let converter = config.docserver.as_ref().map(Converter::new).transpose()?.map(Arc::new);
        let tools = Arc::new(Tools::new(nextcloud.clone(), index.clone(), converter.clone()));
        Ok(AppState {
            index,
            nextcloud,
            tools,
            converter,
            config,
        })
    }
}

/// The rmcp handler. Stateless: built per request by the service factory.
#[derive(Clone)]
pub struct Handler {
    tools: Arc<Tools>,
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
        Ok(ListToolsResult::with_all_items(self.tools.definitions()))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.tools.definition(name)
    }

    async fn call_tool(&self, request: CallToolRequestParams, context: RequestContext<RoleServer>) -> Result<CallToolResponse, ErrorData> {
        // The auth gate put the caller into the HTTP request; rmcp passes its parts along.
        let Some(caller) = mcp::caller(&context) else {
            return Ok(error_result(&Error::AuthExpired).into());
        };
        let name = request.name.clone();
        tracing::info!(tool = %name, uid = caller.uid(), "tool call");
        let span = mcp::tool_span(&context, &name);
        let result = tracing::Instrument::instrument(self.tools.call(request, context), span.clone()).await;
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
        Ok(ListResourcesResult::with_all_items(mcp_resource_server::apps::list(apps::APPS)))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        mcp_resource_server::apps::read_resource(apps::APPS, &request)
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [rmcp::model::ProtocolVersion]> {
        Cow::Owned(rmcp::model::ProtocolVersion::KNOWN_VERSIONS.to_vec())
    }
}

/// The HTTP router: the shared routes (`/mcp` behind the auth gate, the RFC 9728 document,
/// `/healthz`) and `POST /webhooks/nextcloud` (shared-secret, see crate::index::webhook).
pub fn app(state: Arc<AppState>, shutdown: &CancellationToken) -> Router {
    // The gate asks Nextcloud through the same client, so session cookies are shared.
    let auth = Arc::new(AuthState::new(&state.config.base, (*state.nextcloud).clone()));
    let tools = state.tools.clone();
    let service = mcp::stateless_service(
        move || Ok(Handler { tools: tools.clone() }),
        &state.config.base,
        // Room for files_write's largest content even when JSON escaping doubles it.
        4 * tools::files::MAX_WRITE_BYTES,
        shutdown,
    );
    mcp_resource_server::serve::router(auth, service).merge(crate::index::webhook::router(crate::index::webhook::WebhookState {
        index: state.index.clone(),
        secret: state.config.webhook_secret.as_deref().map(Into::into),
    }))
}

/// Serves on `listener` until `shutdown` is cancelled, then drains in-flight requests. With
/// a document server configured, the loan listener (`MCP_LOAN_BIND`) serves beside it, on
/// its own socket: the document server reaches the loans, never the MCP endpoint's routes,
/// and MCP clients never reach a loan through the MCP port.
pub async fn serve(listener: tokio::net::TcpListener, config: Config, shutdown: CancellationToken) -> Result<(), Error> {
    let loan_bind = config.docserver.as_ref().map(|d| d.loan_bind);
    let state = Arc::new(AppState::new(config)?);
    #[expect(
        clippy::disallowed_methods,
        reason = "the loan listener's task is awaited below, after shutdown is cancelled: it never outlives serve"
    )]
    let loans = match (loan_bind, state.converter.as_ref()) {
        (Some(bind), Some(converter)) => {
            let listener = tokio::net::TcpListener::bind(bind)
                .await
                .map_err(|e| Error::Config(format!("cannot listen on MCP_LOAN_BIND={bind}: {e}")))?;
            tracing::info!(addr = %bind, "loan listener for the document server");
            let router = converter.loans.router();
            let stop = shutdown.clone();
            Some(tokio::spawn(async move {
                axum::serve(listener, router).with_graceful_shutdown(stop.cancelled_owned()).await
            }))
        }
        _ => None,
    };
    let router = app(state, &shutdown);
    let served = mcp_resource_server::serve::serve(listener, router, shutdown.clone()).await;
    shutdown.cancel();
    if let Some(task) = loans {
        let _ = task.await;
    }
    Ok(served?)
}
