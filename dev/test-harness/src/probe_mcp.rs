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
        let port = free_port();
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

    pub fn clear_calls(&self) {
        self.call(reqwest::Method::DELETE, "/__calls", None);
    }

    /// One blocking HTTP call on a short-lived thread with its own runtime.
    fn call(&self, method: reqwest::Method, path: &str, body: Option<serde_json::Value>) -> serde_json::Value {
        let url = format!("{}{path}", self.base);
        let what = format!("{method} {url}");
        let result = std::thread::scope(|s| {
            s.spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
                rt.block_on(async move {
                    let client = reqwest::Client::builder().timeout(Duration::from_secs(10)).build()?;
                    let mut req = client.request(method, &url);
                    if let Some(b) = body {
                        req = req.json(&b);
                    }
                    let resp = req.send().await?;
                    let status = resp.status();
                    let text = resp.text().await?;
                    anyhow::ensure!(status.is_success(), "status {status}: {text}");
                    Ok(if text.is_empty() {
                        serde_json::Value::Null
                    } else {
                        serde_json::from_str(&text)?
                    })
                })
            })
            .join()
        });
        match result {
            Ok(Ok(v)) => v,
            Ok(Err(e)) => panic!("probe-mcp {what} failed: {e:#}\n{}", self.process.logs()),
            Err(_) => panic!("probe-mcp {what}: the calling thread panicked"),
        }
    }
}
