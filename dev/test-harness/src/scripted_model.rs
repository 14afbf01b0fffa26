//! The scripted model server (`dev/scripted-model`) as a test fixture.
//!
//! Starts the real binary on a free port and offers a blocking API to script it and to read
//! back what it was sent, so a test can use it from plain or async code alike. It only talks
//! to the server's documented endpoints; it never reaches into its state.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use crate::{Process, free_port, workspace_bin};

/// A running `scripted-model`, killed on drop.
pub struct ScriptedModel {
    process: Process,
    base: String,
}

impl ScriptedModel {
    /// Starts the server with no rules (it answers `You said: <last user text>`).
    pub fn start() -> ScriptedModel {
        Self::spawn(None, None)
    }

    /// Starts the server with `--scripts FILE` (e.g. the shipped `demo.json`).
    pub fn start_with_scripts(file: &Path) -> ScriptedModel {
        Self::spawn(Some(file), None)
    }

    /// Starts the server speaking HTTP/2 without negotiation (h2c) as well as HTTP/1.1, with at
    /// most `max_streams` concurrent streams per HTTP/2 connection (`--http2-max-streams`).
    pub fn start_h2c(max_streams: u32) -> ScriptedModel {
        Self::spawn(None, Some(max_streams))
    }

    fn spawn(scripts: Option<&Path>, http2_max_streams: Option<u32>) -> ScriptedModel {
        let port = free_port();
        let mut cmd = Command::new(workspace_bin("scripted-model", "scripted-model", &[]));
        cmd.arg("--bind").arg(format!("127.0.0.1:{port}"));
        if let Some(file) = scripts {
            cmd.arg("--scripts").arg(file);
        }
        if let Some(n) = http2_max_streams {
            cmd.arg("--http2-max-streams").arg(n.to_string());
        }
        let base = format!("http://127.0.0.1:{port}");
        let mut process = Process::spawn("scripted-model", cmd);
        process.wait_http(&format!("{base}/v1/models"), Duration::from_secs(30));
        ScriptedModel { process, base }
    }

    /// The OpenAI base URL, ending in `/v1` (what `TAMEBI_MODEL_URL` takes).
    pub fn url(&self) -> String {
        format!("{}/v1", self.base)
    }

    /// The server root, for the test-only `/__scripts` and `/__requests` endpoints.
    pub fn base(&self) -> &str {
        &self.base
    }

    /// The underlying process (pid, logs, terminate).
    pub fn process(&mut self) -> &mut Process {
        &mut self.process
    }

    /// Adds rules in front of all others; `rules` is `{"rules": [...]}` or a bare array.
    pub fn add_rules(&self, rules: serde_json::Value) {
        let body = if rules.is_array() {
            serde_json::json!({ "rules": rules })
        } else {
            rules
        };
        self.call(reqwest::Method::POST, "/__scripts", Some(body));
    }

    /// Drops every rule added with `add_rules`.
    pub fn clear_rules(&self) {
        self.call(reqwest::Method::DELETE, "/__scripts", None);
    }

    /// Bodies of the requests received so far (the last 1,000), oldest first.
    pub fn requests(&self) -> Vec<serde_json::Value> {
        self.request_log()
            .into_iter()
            .filter_map(|mut e| e.get_mut("body").map(serde_json::Value::take))
            .collect()
    }

    /// The raw log entries `{"receivedAt", "body", "httpVersion"}`, oldest first.
    pub fn request_log(&self) -> Vec<serde_json::Value> {
        let mut answer = self.call(reqwest::Method::GET, "/__requests", None);
        match answer.get_mut("requests").map(serde_json::Value::take) {
            Some(serde_json::Value::Array(entries)) => entries,
            other => panic!("scripted-model /__requests answered {other:?}\n{}", self.process.logs()),
        }
    }

    /// Forgets the requests received so far.
    pub fn clear_requests(&self) {
        self.call(reqwest::Method::DELETE, "/__requests", None);
    }

    /// One blocking HTTP call on a short-lived thread with its own runtime, so it works
    /// from sync tests and from inside an async test alike. Panics with the logs on failure.
    fn call(&self, method: reqwest::Method, path: &str, body: Option<serde_json::Value>) -> serde_json::Value {
        crate::process::control_call(&self.process, method, &format!("{}{path}", self.base), body)
    }
}
