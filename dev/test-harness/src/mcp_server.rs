//! What starting any of our MCP servers as a fixture shares: the real binary on a free loopback
//! port, a clean environment, the Nextcloud it serves, and a wait until `/healthz` answers.
//! Each server's fixture (mcp_nextcloud, mcp_mail) adds only its own settings.

use std::ffi::OsString;
use std::process::Command;
use std::time::Duration;

use crate::{Process, free_port, workspace_bin};

/// A started server: the process and `http://127.0.0.1:PORT`.
pub(crate) struct Started {
    pub process: Process,
    pub base: String,
}

/// Starts binary `bin` of package `package` for the Nextcloud at `nc_url`, with `own` (the
/// server's fixed settings) and then `env`, where `{port}` is replaced by its listening port.
pub(crate) fn start(package: &str, bin: &str, nc_url: &str, own: &[(&str, OsString)], env: &[(&str, &str)]) -> Started {
    let port = free_port();
    let mut cmd = Command::new(workspace_bin(package, bin, &[]));
    let crate_name = package.replace('-', "_");
    cmd.env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("NC_URL", nc_url)
        .env("MCP_BIND", format!("127.0.0.1:{port}"))
        .env("RUST_LOG", format!("info,rmcp=warn,{crate_name}=debug"));
    for (k, v) in own {
        cmd.env(k, v);
    }
    for (k, v) in env {
        cmd.env(k, v.replace("{port}", &port.to_string()));
    }
    let mut process = Process::spawn(bin, cmd);
    let base = format!("http://127.0.0.1:{port}");
    process.wait_http(&format!("{base}/healthz"), Duration::from_secs(60));
    Started { process, base }
}
