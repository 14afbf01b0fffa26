//! The `mcp-nextcloud` binary: read the configuration, bind, serve until SIGTERM or Ctrl-C
//! (the shared `main` of every MCP server). Everything else lives in the library so tests
//! run the real server.

use std::process::ExitCode;

use mcp_resource_server::ServerConfig;
use mcp_resource_server::serve::{self, Binary};

fn main() -> ExitCode {
    let binary = Binary {
        name: "mcp-nextcloud",
        log_target: "mcp_nextcloud",
    };
    serve::main(binary, mcp_nextcloud::Config::from_env(), mcp_nextcloud::serve)
}
