//! The fault-injecting proxy (`dev/fault-proxy`) as a test fixture.
//!
//! Starts the real binary on a free port in front of an upstream (the Nextcloud stand-in),
//! and offers a blocking API to set its rules and to read back the requests it saw, so a test
//! can count what reached Nextcloud. It only talks to the proxy's `/__fault/` routes.

use std::process::Command;
use std::time::Duration;

use crate::{Process, free_port, workspace_bin};

/// One request the proxy saw: method, path, and the fault applied to it (if any).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Seen {
    pub method: String,
    pub path: String,
    pub fault: Option<String>,
}

/// A running `fault-proxy`, killed on drop.
pub struct FaultProxy {
    process: Process,
    base: String,
}

impl FaultProxy {
    /// Starts the proxy forwarding to `upstream` (e.g. `Standin::url()`), with no rules.
    pub fn start(upstream: &str) -> FaultProxy {
        let port = free_port();
        let mut cmd = Command::new(workspace_bin("fault-proxy", "fault-proxy", &[]));
        cmd.arg("--bind").arg(format!("127.0.0.1:{port}")).arg("--upstream").arg(upstream);
        let base = format!("http://127.0.0.1:{port}");
        let mut process = Process::spawn("fault-proxy", cmd);
        // The stand-in's status page, through the proxy: it serves once both are up.
        process.wait_http(&format!("{base}/status.php"), Duration::from_secs(30));
        let proxy = FaultProxy { process, base };
        proxy.forget_requests();
        proxy
    }

    /// The URL to use in place of the upstream's (what `NC_URL` takes).
    pub fn url(&self) -> &str {
        &self.base
    }

    /// Replaces the rules: a JSON array of `{method?, path_contains?, action, …, times?}`
    /// (see dev/fault-proxy/src/rules.rs for the actions).
    pub fn set_rules(&self, rules: serde_json::Value) {
        self.call(reqwest::Method::POST, "/__fault/rules", Some(serde_json::json!({ "rules": rules })));
    }

    /// Drops every rule: everything passes through untouched.
    pub fn clear_rules(&self) {
        self.call(reqwest::Method::DELETE, "/__fault/rules", None);
    }

    /// The requests seen since the last `forget_requests`, oldest first.
    pub fn requests(&self) -> Vec<Seen> {
        let answer = self.call(reqwest::Method::GET, "/__fault/requests", None);
        let Some(rows) = answer["requests"].as_array() else {
            panic!("fault-proxy /__fault/requests answered {answer}\n{}", self.process.logs())
        };
        rows.iter()
            .map(|r| Seen {
                method: r["method"].as_str().unwrap_or_default().to_string(),
                path: r["path"].as_str().unwrap_or_default().to_string(),
                fault: r["fault"].as_str().map(str::to_string),
            })
            .collect()
    }

    /// How many requests with `method` were seen (e.g. how many `MOVE`s reached Nextcloud).
    pub fn count(&self, method: &str) -> usize {
        self.requests().iter().filter(|s| s.method == method).count()
    }

    pub fn forget_requests(&self) {
        self.call(reqwest::Method::DELETE, "/__fault/requests", None);
    }

    /// The underlying process (pid, logs).
    pub fn process(&mut self) -> &mut Process {
        &mut self.process
    }

    fn call(&self, method: reqwest::Method, path: &str, body: Option<serde_json::Value>) -> serde_json::Value {
        crate::process::control_call(&self.process, method, &format!("{}{path}", self.base), body)
    }
}
