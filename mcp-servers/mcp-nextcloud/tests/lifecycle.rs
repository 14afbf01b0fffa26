//! Process lifecycle: an invalid configuration exits with status 2 and a clear message; a
//! running server stops cleanly (status 0) on SIGTERM.

use std::process::Command;
use std::time::Duration;

use test_harness::mcp_nextcloud::McpNextcloud;
use test_harness::workspace_bin;

#[test]
fn invalid_configuration_is_exit_code_2() {
    let bin = workspace_bin("mcp-nextcloud", "mcp-nextcloud", &[]);
    for (env, needle) in [
        (vec![], "NC_URL is required"),
        (vec![("NC_URL", "http://127.0.0.1:1"), ("MCP_BIND", "not-an-address")], "MCP_BIND"),
    ] {
        let mut cmd = Command::new(&bin);
        cmd.env_clear();
        for (k, v) in &env {
            cmd.env(k, v);
        }
        let out = cmd.output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{env:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(needle), "{stderr}");
    }
}

#[test]
fn sigterm_stops_cleanly() {
    // No Nextcloud is needed to start; the server only talks to it per request.
    let mut mcp = McpNextcloud::start("http://127.0.0.1:9");
    assert_eq!(mcp.process().terminate(Duration::from_secs(10)), Some(0));
}
