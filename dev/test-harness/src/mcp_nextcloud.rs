//! The `mcp-nextcloud` server as a test fixture.
//!
//! Starts the real binary on a free loopback port against a given Nextcloud (the stand-in in
//! tests), with its index in a fresh temporary directory, and waits until it serves. It holds
//! no credential: tests send each user's bearer with their own requests.

use crate::mcp_server::McpServer;

/// A running mcp-nextcloud (an [`McpServer`]), killed on drop.
pub struct McpNextcloud;

impl McpNextcloud {
    /// Starts mcp-nextcloud for the Nextcloud at `nc_url` with default settings.
    pub fn start(nc_url: &str) -> McpServer {
        Self::start_with(nc_url, &[])
    }

    /// Starts it with extra environment variables (`MCP_PUBLIC_URL`, `MCP_WEBHOOK_SECRET`, …).
    /// `{port}` in a value is replaced by the port it will listen on.
    pub fn start_with(nc_url: &str, env: &[(&str, &str)]) -> McpServer {
        let data = tempfile::Builder::new()
            .prefix("tamebi-mcp-nextcloud-")
            .tempdir()
            .expect("data dir");
        let own = [("MCP_INDEX_PATH", data.path().join("index.db").into_os_string())];
        McpServer::start("mcp-nextcloud", "mcp-nextcloud", nc_url, &own, env, Some(data))
    }
}
