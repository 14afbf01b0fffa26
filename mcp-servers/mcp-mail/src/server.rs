//! The rmcp handler and the HTTP router.
//!
//! Stateless like mcp-nextcloud, on the same shared parts (crate mcp-resource-server): every
//! POST to `/mcp` stands alone behind the 401 gate (RFC 9728 challenge, JWT audience must be
//! this server's MCP_PUBLIC_URL, never mcp-nextcloud's); the handler holds only the bridge
//! client, and each tool call takes the caller's bearer from its own request.
//! Tools live in [`crate::tools`], apps in [`crate::apps`]; this file must not grow either.

use std::borrow::Cow;
use std::sync::Arc;

use mcp_resource_server::{AuthState, OcsIdentify, arguments, mcp, tool_result};
use rmcp::handler::server::tool::ToolCallContext;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ListResourcesResult, ListToolsResult, PaginatedRequestParams, ReadResourceRequestParams,
    ReadResourceResponse, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData, ServerHandler};
use tokio_util::sync::CancellationToken;

use crate::apps;
use crate::bridge::Bridge;
use crate::compose::MAX_BODY_CHARS;
use crate::config::Config;
use crate::error::Error;
use crate::tools::{MailTools, error_result};

/// Tools come from the `#[tool_router]` declarations; resources are the compose app. Calls go
/// through the router, and every failure is a tool result in the shared error shape, the
/// arguments rmcp cannot read included (as in mcp-nextcloud), never a protocol error.
impl ServerHandler for MailTools {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().enable_resources().build())
            .with_server_info(rmcp::model::Implementation::new("mcp-mail", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "The user's mail in Nextcloud Mail, read as the user. mail_compose prepares a mail for the person to \
                 review and send; nothing here sends mail on its own.",
            )
    }

    async fn list_tools(&self, _: Option<PaginatedRequestParams>, _: RequestContext<RoleServer>) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tool_router.list_all()))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.tool_router.get(name).cloned()
    }

    async fn call_tool(
        &self,
        mut request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let Some(tool) = self.tool_router.get(&request.name) else {
            return Ok(error_result(&Error::invalid(format!("there is no tool named {:?}", request.name.as_ref()))).into());
        };
        // `"message_id": "5"` reads as 5 where the published schema says integer.
        arguments::integers_from_strings(tool, &mut request);
        let result = match self.tool_router.call(ToolCallContext::new(self, request, context)).await {
            Ok(CallToolResponse::Complete(result)) => result,
            Ok(other) => return Ok(other),
            Err(e) => error_result(&Error::invalid(tool_result::unreadable_arguments(&e.message))),
        };
        Ok(match tool_result::unshaped_error(&result) {
            Some(text) => error_result(&Error::invalid(tool_result::unreadable_arguments(text))),
            None => result,
        }
        .into())
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

/// Serves on `listener` until `shutdown` is cancelled, then drains in-flight requests:
/// `/mcp` behind the shared 401 gate, the RFC 9728 document and `/healthz`.
pub async fn serve(listener: tokio::net::TcpListener, config: Config, shutdown: CancellationToken) -> Result<(), Error> {
    let auth = Arc::new(AuthState::new(&config.base, OcsIdentify::new(&config.base.nc_url)?));
    let handler = MailTools::new(Bridge::new(&config.base.nc_url, config.bridge_timeout)?);
    // Room for the largest body: up to 4 bytes a character, doubled by JSON escaping.
    let max_body = 8 * MAX_BODY_CHARS + 64 * 1024;
    let service = mcp::stateless_service(move || Ok(handler.clone()), &config.base, max_body, &shutdown);
    let router = mcp_resource_server::serve::router(auth, service);
    Ok(mcp_resource_server::serve::serve(listener, router, shutdown).await?)
}
