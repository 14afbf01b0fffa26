//! Any of our MCP servers as a test fixture: the real binary on a free loopback port, a clean
//! environment, the Nextcloud it serves, and a wait until `/healthz` answers. It holds no
//! credential: tests send each user's bearer with their own requests. Each server's module
//! (mcp_nextcloud, mcp_mail) names its binary and adds only its own settings.

use std::ffi::OsString;
use std::process::Command;
use std::time::Duration;

use crate::{Process, free_port, workspace_bin};

/// A running MCP server, killed on drop (before its data directory, if it has one).
pub struct McpServer {
    // Field order matters: the process goes before its data directory.
    process: Process,
    _data: Option<tempfile::TempDir>,
    base: String,
}

impl McpServer {
    /// Starts binary `bin` of package `package` for the Nextcloud at `nc_url`, with `own` (the
    /// server's fixed settings) and then `env`, where `{port}` is replaced by its listening
    /// port (for `MCP_PUBLIC_URL`). `data` is a directory that lives as long as the server.
    pub(crate) fn start(
        package: &str,
        bin: &str,
        nc_url: &str,
        own: &[(&str, OsString)],
        env: &[(&str, &str)],
        data: Option<tempfile::TempDir>,
    ) -> McpServer {
        let port = free_port();
        let mut cmd = Command::new(workspace_bin(package, bin, &[]));
        cmd.env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("NC_URL", nc_url)
            .env("MCP_BIND", format!("127.0.0.1:{port}"))
            .env("RUST_LOG", format!("info,rmcp=warn,{}=debug", package.replace('-', "_")));
        for (k, v) in own {
            cmd.env(k, v);
        }
        for (k, v) in env {
            cmd.env(k, v.replace("{port}", &port.to_string()));
        }
        let mut process = Process::spawn(bin, cmd);
        let base = format!("http://127.0.0.1:{port}");
        process.wait_http(&format!("{base}/healthz"), Duration::from_secs(60));
        McpServer {
            process,
            _data: data,
            base,
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
