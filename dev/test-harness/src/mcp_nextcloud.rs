//! The `mcp-nextcloud` server as a test fixture.
//!
//! Starts the real binary on a free loopback port against a given Nextcloud (the stand-in in
//! tests), with its index in a fresh temporary directory, and waits until it serves. It holds
//! no credential: tests send each user's bearer with their own requests.

use crate::Process;

/// A running mcp-nextcloud, killed on drop.
pub struct McpNextcloud {
    // Field order matters: the process goes before its data directory.
    process: Process,
    _data: tempfile::TempDir,
    base: String,
}

impl McpNextcloud {
    /// Starts mcp-nextcloud for the Nextcloud at `nc_url` with default settings.
    pub fn start(nc_url: &str) -> McpNextcloud {
        Self::start_with(nc_url, &[])
    }

    /// Starts it with extra environment variables (`MCP_PUBLIC_URL`, `MCP_WEBHOOK_SECRET`, …).
    /// `{port}` in a value is replaced by the port it will listen on.
    pub fn start_with(nc_url: &str, env: &[(&str, &str)]) -> McpNextcloud {
        let data = tempfile::Builder::new()
            .prefix("tamebi-mcp-nextcloud-")
            .tempdir()
            .expect("data dir");
        let own = [("MCP_INDEX_PATH", data.path().join("index.db").into_os_string())];
        let started = crate::mcp_server::start("mcp-nextcloud", "mcp-nextcloud", nc_url, &own, env);
        McpNextcloud {
            process: started.process,
            _data: data,
            base: started.base,
        }
    }

    /// The MCP endpoint, `http://127.0.0.1:PORT/mcp`.
    pub fn url(&self) -> String {
        format!("{}/mcp", self.base)
    }

    /// `http://127.0.0.1:PORT` (for `/healthz` and `/.well-known/…`).
    pub fn base_url(&self) -> &str {
        &self.base
    }

    /// The underlying process (logs, terminate).
    pub fn process(&mut self) -> &mut Process {
        &mut self.process
    }
}
