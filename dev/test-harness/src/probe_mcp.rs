//! The `probe-mcp` server (`dev/probe-mcp`) as a test fixture.
//!
//! Starts the real binary on a free loopback port. A test installs the tools it wants served
//! (`set_tools`), points the orchestrator at `url()`, and reads back every `tools/call` the
//! probe received (`calls`) to prove that a call did or did not happen. Blocking API, usable
//! from sync and async tests alike; it only talks to the probe's documented endpoints.

use std::process::Command;
use std::time::Duration;

use crate::{Process, free_port, workspace_bin};

/// A running probe-mcp, killed on drop.
pub struct ProbeMcp {
    process: Process,
    base: String,
}

impl ProbeMcp {
    pub fn start() -> ProbeMcp {
        Self::start_on(free_port())
    }

    /// Starts the probe on `port` (a restart after [`ProbeMcp::kill9`] uses the same one).
    fn start_on(port: u16) -> ProbeMcp {
        let mut cmd = Command::new(workspace_bin("probe-mcp", "probe-mcp", &[]));
        cmd.arg("--bind").arg(format!("127.0.0.1:{port}")).env("RUST_LOG", "info,rmcp=warn");
        let base = format!("http://127.0.0.1:{port}");
        let mut process = Process::spawn("probe-mcp", cmd);
        process.wait_http(&format!("{base}/healthz"), Duration::from_secs(30));
        ProbeMcp { process, base }
    }

    /// The MCP endpoint, `http://127.0.0.1:PORT/mcp` (what `TAMEBI_MCP_SERVERS` takes).
    pub fn url(&self) -> String {
        format!("{}/mcp", self.base)
    }

    pub fn base(&self) -> &str {
        &self.base
    }

    pub fn process(&mut self) -> &mut Process {
        &mut self.process
    }

    /// SIGKILL, as a crashed server dies: open calls break off, nothing is answered.
    pub fn kill9(&mut self) {
        self.process.kill9();
    }

    /// Starts a fresh probe on the same address (its tool set starts empty: set it again).
    pub fn restart(&mut self) {
        let port: u16 = self.base.rsplit(':').next().and_then(|p| p.parse().ok()).expect("the probe's port");
        *self = Self::start_on(port);
    }

    /// Replaces the served tool set: `{"tools": [...]}` or a bare array of MCP tool
    /// definitions, each with an optional `reply` (`{"text"}` or `{"error"}`).
    pub fn set_tools(&self, tools: serde_json::Value) {
        let body = if tools.is_array() {
            serde_json::json!({ "tools": tools })
        } else {
            tools
        };
        self.call(reqwest::Method::POST, "/__tools", Some(body));
    }

    /// Every `tools/call` received since the last `clear_calls`, oldest first:
    /// `{"seq", "name", "arguments", "known", "bearer_sha256"}`.
    pub fn calls(&self) -> Vec<serde_json::Value> {
        match self
            .call(reqwest::Method::GET, "/__calls", None)
            .get_mut("calls")
            .map(serde_json::Value::take)
        {
            Some(serde_json::Value::Array(calls)) => calls,
            other => panic!("probe-mcp /__calls answered {other:?}\n{}", self.process.logs()),
        }
    }

    /// The calls of tool `name` only.
    pub fn calls_of(&self, name: &str) -> Vec<serde_json::Value> {
        self.calls().into_iter().filter(|c| c["name"] == name).collect()
    }

    /// Every HTTP request `/mcp` received since the last `clear_requests`:
    /// `{"http", "rpc" (JSON-RPC method or null), "authorization_sha256" (or null)}`.
    pub fn requests(&self) -> Vec<serde_json::Value> {
        match self
            .call(reqwest::Method::GET, "/__requests", None)
            .get_mut("requests")
            .map(serde_json::Value::take)
        {
            Some(serde_json::Value::Array(requests)) => requests,
            other => panic!("probe-mcp /__requests answered {other:?}\n{}", self.process.logs()),
        }
    }

    pub fn clear_requests(&self) {
        self.call(reqwest::Method::DELETE, "/__requests", None);
    }

    pub fn clear_calls(&self) {
        self.call(reqwest::Method::DELETE, "/__calls", None);
    }

    /// One blocking HTTP call on a short-lived thread with its own runtime.
    fn call(&self, method: reqwest::Method, path: &str, body: Option<serde_json::Value>) -> serde_json::Value {
        crate::process::control_call(&self.process, method, &format!("{}{path}", self.base), body)
    }
}
