//! The `mcp-mail` binary: the shared server main (configuration, telemetry, bind, serve until
//! SIGTERM or Ctrl-C). Everything else lives in the library so tests run the real server.

use mcp_resource_server::ServerConfig;

fn main() -> std::process::ExitCode {
    let binary = mcp_resource_server::serve::Binary {
        name: "mcp-mail",
        log_target: "mcp_mail",
    };
    mcp_resource_server::serve::main(binary, mcp_mail::Config::from_env(), mcp_mail::serve)
}
