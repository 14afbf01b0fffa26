//! Shared fixture for the end-to-end tests: a seeded Nextcloud stand-in, a real mcp-nextcloud
//! in front of it, and real rmcp clients (Streamable HTTP over reqwest) carrying a user's
//! bearer. Nothing is mocked.

#![allow(dead_code, reason = "each test file uses a different part of the fixture")]
#![expect(
    clippy::expect_used,
    clippy::unwrap_used,
    clippy::panic,
    reason = "test support: a broken environment is a test failure"
)]

use std::time::Duration;

use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::Value;
use test_harness::mcp_nextcloud::McpNextcloud;
use test_harness::mcp_server::McpServer;
use test_harness::standin::Standin;

pub type Client = RunningService<RoleClient, ()>;

/// A seeded stand-in and an mcp-nextcloud pointed at it.
pub struct Env {
    pub mcp: McpServer,
    pub nc: Standin,
}

impl Env {
    pub async fn start() -> Env {
        tokio::task::spawn_blocking(|| {
            let nc = Standin::start_seeded();
            let mcp = McpNextcloud::start(nc.url());
            Env { mcp, nc }
        })
        .await
        .expect("start the fixture")
    }

    /// An MCP client acting as `uid` (with their app password as bearer).
    pub async fn client(&self, uid: &str) -> Client {
        connect(&self.mcp.url(), self.nc.app_password(uid)).await
    }

    /// Plain HTTP to the stand-in as `uid` (for setting up and checking state directly).
    pub fn nc_http(&self) -> reqwest::Client {
        reqwest::Client::builder()
            .timeout(Duration::from_secs(20))
            .build()
            .expect("http client")
    }

    /// GET a file straight from the stand-in as `uid`: (status, body).
    pub async fn nc_get(&self, uid: &str, path: &str) -> (u16, String) {
        let r = self
            .nc_http()
            .get(self.nc.dav_url(uid, path))
            .header("Authorization", self.nc.bearer(uid))
            .send()
            .await
            .expect("GET");
        let status = r.status().as_u16();
        (status, r.text().await.unwrap_or_default())
    }

    /// PUT a file straight into the stand-in as `uid`.
    pub async fn nc_put(&self, uid: &str, path: &str, body: impl Into<reqwest::Body>) {
        let r = self
            .nc_http()
            .put(self.nc.dav_url(uid, path))
            .header("Authorization", self.nc.bearer(uid))
            .body(body)
            .send()
            .await
            .expect("PUT");
        assert!(r.status().is_success(), "PUT {path}: {}", r.status());
    }

    /// `owner` revokes their share of `path` with `to`, directly at the stand-in.
    pub async fn revoke_share(&self, owner: &str, path: &str, to: &str) {
        let http = self.nc_http();
        let url = format!("{}/ocs/v2.php/apps/files_sharing/api/v1/shares", self.nc.url());
        let ocs = |r: reqwest::RequestBuilder| {
            r.header("Authorization", self.nc.basic(owner))
                .header("OCS-APIRequest", "true")
                .header("Accept", "application/json")
        };
        let shares: Value = ocs(http.get(&url)).send().await.unwrap().json().await.unwrap();
        let id = shares["ocs"]["data"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["share_with"] == to && s["path"] == path)
            .map(|s| s["id"].to_string().trim_matches('"').to_string())
            .expect("the share");
        let r = ocs(http.delete(format!("{url}/{id}"))).send().await.unwrap();
        assert!(r.status().is_success(), "revoking share {id}: {}", r.status());
    }

    /// The stand-in's session counters for `uid` (logins, session_requests, cookies_presented,
    /// other_credential, remember_me_presented).
    /// POSTs `body` to one of the stand-in's own control routes (`/standin/<route>`).
    pub async fn standin_control(&self, route: &str, body: Value) {
        let r = self
            .nc_http()
            .post(format!("{}/standin/{route}", self.nc.url()))
            .json(&body)
            .send()
            .await
            .unwrap();
        assert!(r.status().is_success(), "{route}: {}", r.status());
    }

    pub async fn nc_sessions(&self, uid: &str) -> Value {
        let url = format!("{}/standin/sessions?uid={uid}", self.nc.url());
        self.nc_http().get(url).send().await.unwrap().json().await.unwrap()
    }

    /// A PROPFIND Depth: infinity listing of `uid`'s whole tree (to prove nothing changed).
    pub async fn nc_tree(&self, uid: &str) -> String {
        let r = self
            .nc_http()
            .request(reqwest::Method::from_bytes(b"PROPFIND").unwrap(), self.nc.dav_url(uid, ""))
            .header("Authorization", self.nc.bearer(uid))
            .header("Depth", "infinity")
            .body(r#"<?xml version="1.0"?><d:propfind xmlns:d="DAV:"><d:prop><d:getetag/><d:getcontentlength/></d:prop></d:propfind>"#)
            .send()
            .await
            .expect("PROPFIND");
        let mut lines: Vec<String> = r
            .text()
            .await
            .unwrap_or_default()
            .split("<d:response>")
            .map(str::to_string)
            .collect();
        lines.sort();
        lines.join("\n")
    }
}

/// An MCP client for `url` with `Authorization: Bearer <token>`.
pub async fn connect(url: &str, token: &str) -> Client {
    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(url.to_string()).auth_header(token.to_string()),
    );
    ().serve(transport).await.expect("MCP client connects")
}

/// Calls `name` with `args` (a JSON object).
pub async fn call(client: &Client, name: &str, args: Value) -> CallToolResult {
    let Value::Object(map) = args else {
        panic!("arguments must be an object")
    };
    client
        .call_tool(CallToolRequestParams::new(name.to_string()).with_arguments(map))
        .await
        .unwrap_or_else(|e| panic!("{name}: protocol error {e}"))
}

/// The structured content of a successful call (panics with the text on an error).
pub fn ok(r: &CallToolResult) -> &Value {
    assert_ne!(r.is_error, Some(true), "tool failed: {}", text(r));
    r.structured_content.as_ref().expect("structuredContent")
}

/// The error kind of a failed call (panics if it succeeded).
pub fn err_kind(r: &CallToolResult) -> String {
    assert_eq!(r.is_error, Some(true), "expected an error, got: {}", text(r));
    let sc = r.structured_content.as_ref().expect("structuredContent on an error");
    sc["error"]["kind"].as_str().expect("error.kind").to_string()
}

/// All text content of a result, joined.
pub fn text(r: &CallToolResult) -> String {
    r.content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The `path` of every row in a listing.
pub fn paths(v: &Value) -> Vec<String> {
    v["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .map(|e| e["path"].as_str().unwrap_or_default().to_string())
        .collect()
}
