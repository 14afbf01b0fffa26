//! The `mcp-mail` server as a test fixture, and the stand-in's SMTP sink as tests read it.
//!
//! Starts the real binary on a free loopback port against a given Nextcloud (the stand-in,
//! whose mail bridge it calls) and waits until it serves. It holds no credential: tests send
//! each user's bearer with their own requests.

use std::time::Duration;

use crate::mcp_server::McpServer;

/// A running mcp-mail, killed on drop.
pub struct McpMail;

impl McpMail {
    /// Starts mcp-mail for the Nextcloud at `nc_url`; `{port}` in an `env` value is replaced
    /// by the port it will listen on (for `MCP_PUBLIC_URL`).
    pub fn start(nc_url: &str, env: &[(&str, &str)]) -> McpServer {
        McpServer::start("mcp-mail", "mcp-mail", nc_url, &[], env, None)
    }
}

/// Every message the stand-in's SMTP sink has accepted, oldest first
/// (`GET {nc_url}/standin/smtp-sink`, the stand-in's own test door).
pub async fn sent_mail(nc_url: &str) -> Vec<serde_json::Value> {
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()
        .expect("http client");
    let r = client
        .get(format!("{nc_url}/standin/smtp-sink"))
        .send()
        .await
        .expect("read the SMTP sink");
    assert!(r.status().is_success(), "the SMTP sink answered {}", r.status());
    let v: serde_json::Value = r.json().await.expect("SMTP sink JSON");
    v["messages"].as_array().cloned().unwrap_or_default()
}
