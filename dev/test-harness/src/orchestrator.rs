//! The real `tamebi` binary on a free port, with its own data directory.
//!
//! Starts with the test-only fault injection compiled in and enabled, so crash-isolation
//! tests can make one conversation's actor panic. Signs requests exactly as the Nextcloud
//! app does (G1, through the shared `g1-signing` crate: method, path and query included), and
//! reads SSE answers into their `data:` payloads.

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use crate::process::{Process, free_port};

pub const PROXY_SECRET: &str = "harness-proxy-secret-0123456789abcdef0123456789";
pub const SIGNING_SECRET: &str = "harness-signing-secret-0123456789abcdef012345678";

pub struct Orchestrator {
    process: Process,
    port: u16,
    data_dir: tempfile::TempDir,
    env: Vec<(String, String)>,
}

/// Options for starting the orchestrator.
#[derive(Default, Clone)]
pub struct Options {
    pub model_url: String,
    /// `name=url,…`
    pub mcp_servers: String,
    pub extra_env: Vec<(String, String)>,
}

impl Orchestrator {
    pub fn start(options: Options) -> Orchestrator {
        let data_dir = tempfile::Builder::new().prefix("tamebi-data-").tempdir().expect("data dir");
        let port = free_port();
        let mut env = vec![
            ("TAMEBI_BIND".to_string(), format!("127.0.0.1:{port}")),
            ("TAMEBI_PROXY_SECRET".into(), PROXY_SECRET.into()),
            ("TAMEBI_SIGNING_SECRET".into(), SIGNING_SECRET.into()),
            ("TAMEBI_MODEL_URL".into(), options.model_url.clone()),
            ("TAMEBI_MODEL".into(), "scripted".into()),
            ("TAMEBI_DATA_DIR".into(), data_dir.path().display().to_string()),
            ("TAMEBI_MCP_SERVERS".into(), options.mcp_servers.clone()),
            ("TAMEBI_FAULT_INJECTION".into(), "1".into()),
            ("TAMEBI_MODEL_FIRST_CHUNK_SECS".into(), "10".into()),
            // Suites run turns for one user faster than a person types; tests/fairness.rs
            // sets the per-user limits it checks through `extra_env`.
            ("TAMEBI_USER_TURNS_PER_MIN".into(), "0".into()),
            ("RUST_LOG".into(), "info".into()),
        ];
        env.extend(options.extra_env);
        let process = spawn(port, &env);
        Orchestrator {
            process,
            port,
            data_dir,
            env,
        }
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub fn data_dir(&self) -> PathBuf {
        self.data_dir.path().to_path_buf()
    }

    pub fn pid(&self) -> u32 {
        self.process.pid()
    }

    pub fn process(&mut self) -> &mut Process {
        &mut self.process
    }

    /// Starts again on the same port and data directory, after the process stopped (e.g.
    /// after `process().terminate(…)`): the restart of a deployment.
    pub fn start_again(&mut self) {
        self.process = spawn(self.port, &self.env);
    }

    /// kill -9, then start again on the same port and data directory.
    pub fn kill9_and_restart(&mut self) {
        self.process.kill9();
        self.process = spawn(self.port, &self.env);
    }

    /// The G1 headers for `uid` over `body`, signed now for `method` and `target`
    /// (`/path?query` as it will be sent), without credentials.
    pub fn signed_headers(method: &str, target: &str, uid: &str, body: &[u8]) -> Vec<(String, String)> {
        Self::signed_headers_at(method, target, uid, body, unix_now(), SIGNING_SECRET)
    }

    /// The G1 headers at time `ts` with `signing_secret`, without credentials (fresh nonce).
    pub fn signed_headers_at(method: &str, target: &str, uid: &str, body: &[u8], ts: i64, signing_secret: &str) -> Vec<(String, String)> {
        Self::sign(&Signing {
            method,
            target,
            uid,
            body,
            ts,
            nonce: &fresh_nonce(),
            credentials: "",
            signing_secret,
        })
    }

    /// The G1 headers exactly as the Nextcloud app builds them (docs/api.md): the proxy bearer,
    /// uid, ts, nonce, the credentials header when non-empty, and the HMAC over
    /// `METHOD \n path \n query \n uid \n ts \n nonce \n hex(sha256(body)) \n hex(sha256(credentials))`.
    pub fn sign(s: &Signing<'_>) -> Vec<(String, String)> {
        let fields = g1_signing::Signed {
            target: g1_signing::Target::new(s.method, s.target),
            uid: s.uid,
            ts: s.ts,
            nonce: s.nonce,
        };
        let signature = g1_signing::user_signature(s.signing_secret.as_bytes(), &fields, s.body, s.credentials);
        let mut headers = vec![
            ("authorization".to_string(), format!("Bearer {PROXY_SECRET}")),
            ("x-tamebi-uid".into(), s.uid.into()),
            ("x-tamebi-ts".into(), s.ts.to_string()),
            ("x-tamebi-nonce".into(), s.nonce.to_string()),
            ("x-tamebi-signature".into(), hex::encode(signature)),
        ];
        if !s.credentials.is_empty() {
            headers.push(("x-tamebi-credentials".into(), s.credentials.to_string()));
        }
        headers
    }

    /// The admin signature header for a request already signed with `nonce` at `ts` for the
    /// same `method` and `target` (docs/api.md, "Admin status").
    pub fn admin_signature(method: &str, target: &str, uid: &str, ts: i64, nonce: &str) -> (String, String) {
        let fields = g1_signing::Signed {
            target: g1_signing::Target::new(method, target),
            uid,
            ts,
            nonce,
        };
        let signature = g1_signing::admin_signature(SIGNING_SECRET.as_bytes(), &fields);
        ("x-tamebi-admin-signature".into(), hex::encode(signature))
    }

    /// A signed GET for `uid`, its answer parsed as JSON (panics on failure: a test helper).
    pub async fn get_json(&self, client: &reqwest::Client, path: &str, uid: &str) -> serde_json::Value {
        let response = self
            .request(client, reqwest::Method::GET, path, uid, b"", None)
            .send()
            .await
            .expect("GET");
        response.json().await.expect("JSON answer")
    }

    /// A signed user turn for `uid`; returns the SSE `data:` payloads of the answer.
    pub async fn chat(&self, client: &reqwest::Client, uid: &str, conversation: &str, message_id: &str, text: &str) -> Vec<String> {
        let body = user_turn(conversation, message_id, text);
        let response = self
            .request(client, reqwest::Method::POST, "/v1/chat", uid, &body, None)
            .send()
            .await
            .expect("POST /v1/chat");
        read_sse(response).await
    }

    /// A signed request builder for `uid`, with their token for the server named `nextcloud`
    /// (the usual configuration), if any.
    pub fn request(
        &self,
        client: &reqwest::Client,
        method: reqwest::Method,
        path: &str,
        uid: &str,
        body: &[u8],
        nc_bearer: Option<&str>,
    ) -> reqwest::RequestBuilder {
        let credentials: Vec<(&str, &str)> = nc_bearer.map(|b| ("nextcloud", b)).into_iter().collect();
        self.request_with_credentials(client, method, path, uid, body, &credentials)
    }

    /// A signed request builder carrying one token per MCP server name.
    pub fn request_with_credentials(
        &self,
        client: &reqwest::Client,
        method: reqwest::Method,
        path: &str,
        uid: &str,
        body: &[u8],
        credentials: &[(&str, &str)],
    ) -> reqwest::RequestBuilder {
        Self::request_at(client, &self.url(), method, path, uid, body, credentials)
    }

    /// A signed request builder to any base URL that forwards to orchestrators (a load
    /// balancer in front of several instances), carrying one token per MCP server name.
    pub fn request_at(
        client: &reqwest::Client,
        base_url: &str,
        method: reqwest::Method,
        path: &str,
        uid: &str,
        body: &[u8],
        credentials: &[(&str, &str)],
    ) -> reqwest::RequestBuilder {
        let (url, target) = url_and_target(base_url, path);
        let header = credentials_header(credentials);
        let headers = Self::sign(&Signing {
            method: method.as_str(),
            target: &target,
            uid,
            body,
            ts: unix_now(),
            nonce: &fresh_nonce(),
            credentials: &header,
            signing_secret: SIGNING_SECRET,
        });
        let mut rb = client.request(method, url).body(body.to_vec());
        for (k, v) in headers {
            rb = rb.header(k, v);
        }
        if !body.is_empty() {
            rb = rb.header("content-type", "application/json");
        }
        rb
    }
}

/// The URL of `path` on `base_url` and its target as reqwest will send it (after its parser's
/// escaping), so the signed path and query are the ones on the wire.
fn url_and_target(base_url: &str, path: &str) -> (reqwest::Url, String) {
    let url = reqwest::Url::parse(&format!("{base_url}{path}")).expect("request URL");
    let target = match url.query() {
        Some(query) => format!("{}?{query}", url.path()),
        None => url.path().to_string(),
    };
    (url, target)
}

/// A request to `base_url` signed as `uid` as the Nextcloud app signs an admin request: the G1
/// headers (no token) plus the admin signature over the same method, target, ts and nonce.
pub fn admin_request_at(
    client: &reqwest::Client,
    base_url: &str,
    method: reqwest::Method,
    path: &str,
    uid: &str,
    body: &[u8],
) -> reqwest::RequestBuilder {
    let (url, target) = url_and_target(base_url, path);
    let (ts, nonce) = (unix_now(), fresh_nonce());
    let mut headers = Orchestrator::sign(&Signing {
        method: method.as_str(),
        target: &target,
        uid,
        body,
        ts,
        nonce: &nonce,
        credentials: "",
        signing_secret: SIGNING_SECRET,
    });
    headers.push(Orchestrator::admin_signature(method.as_str(), &target, uid, ts, &nonce));
    let mut rb = client.request(method, url).body(body.to_vec());
    for (k, v) in headers {
        rb = rb.header(k, v);
    }
    if !body.is_empty() {
        rb = rb.header("content-type", "application/json");
    }
    rb
}

/// What one G1 signature covers.
pub struct Signing<'a> {
    /// The request method, upper case (`"GET"`).
    pub method: &'a str,
    /// The request target as sent: the path, and `?query` when there is one.
    pub target: &'a str,
    pub uid: &'a str,
    pub body: &'a [u8],
    pub ts: i64,
    pub nonce: &'a str,
    /// The exact `X-Tamebi-Credentials` value (`name=token, …`), "" for none.
    pub credentials: &'a str,
    pub signing_secret: &'a str,
}

/// `name=token, name=token`, the `X-Tamebi-Credentials` format.
pub fn credentials_header(credentials: &[(&str, &str)]) -> String {
    credentials.iter().map(|(n, t)| format!("{n}={t}")).collect::<Vec<_>>().join(", ")
}

/// A fresh nonce (each signed request needs its own: the orchestrator refuses a replay).
pub fn fresh_nonce() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

pub fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

fn spawn(port: u16, env: &[(String, String)]) -> Process {
    let bin = crate::workspace_bin("tamebi", "tamebi", &["fault-injection"]);
    let mut cmd = Command::new(bin);
    cmd.env_clear();
    if let Ok(path) = std::env::var("PATH") {
        cmd.env("PATH", path);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut p = Process::spawn("tamebi", cmd);
    p.wait_http(&format!("http://127.0.0.1:{port}/healthz"), Duration::from_secs(20));
    p
}

/// A chat request body with one user message.
pub fn user_turn(conversation: &str, message_id: &str, text: &str) -> Vec<u8> {
    serde_json::to_vec(&serde_json::json!({
        "id": conversation,
        "messages": [{"id": message_id, "role": "user", "parts": [{"type": "text", "text": text}]}]
    }))
    .expect("json")
}

/// The tool part a client echoes back with its decision on the `i`-th approval a turn asked
/// for (its `tool-approval-request` parts, in order), built from that turn's streamed `parts`.
pub fn approval_decision(parts: &[serde_json::Value], i: usize, approved: bool) -> serde_json::Value {
    let request = parts
        .iter()
        .filter(|p| p["type"] == "tool-approval-request")
        .nth(i)
        .expect("the turn asked for that approval");
    let call_id = &request["toolCallId"];
    let input = parts
        .iter()
        .find(|p| p["type"] == "tool-input-available" && p["toolCallId"] == *call_id)
        .expect("the input of the call asked about");
    serde_json::json!({"type": "dynamic-tool", "toolName": input["toolName"], "toolCallId": call_id,
                       "state": "approval-responded", "input": input["input"],
                       "approval": {"id": request["approvalId"], "approved": approved}})
}

/// A chat request body deciding on the `i`-th approval a turn of `conversation` asked for
/// (`parts`: that turn's stream): its assistant message, with the decision.
pub fn approve(conversation: &str, parts: &[serde_json::Value], i: usize, approved: bool) -> Vec<u8> {
    let message_id = &parts.iter().find(|p| p["type"] == "start").expect("the turn's start part")["messageId"];
    serde_json::to_vec(&serde_json::json!({
        "id": conversation,
        "messages": [{"id": message_id, "role": "assistant", "parts": [approval_decision(parts, i, approved)]}]
    }))
    .expect("json")
}

/// Reads an SSE body into its `data:` payloads (`[DONE]` included as the string "[DONE]").
pub async fn read_sse(response: reqwest::Response) -> Vec<String> {
    let text = response.text().await.expect("sse body");
    parse_sse(&text)
}

pub fn parse_sse(text: &str) -> Vec<String> {
    text.split("\n\n")
        .filter_map(|frame| frame.strip_prefix("data: "))
        .map(str::to_string)
        .collect()
}

/// The JSON parts of an SSE stream (without `[DONE]`).
pub fn parts(frames: &[String]) -> Vec<serde_json::Value> {
    frames
        .iter()
        .filter(|f| f.as_str() != "[DONE]")
        .filter_map(|f| serde_json::from_str(f).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The harness signs exactly like every other signer: the shared G1 vectors.
    #[test]
    fn reproduces_the_shared_g1_vectors() {
        let raw = std::fs::read_to_string(workspace_root_for_tests().join("testdata/g1-vectors.json")).expect("vectors");
        let doc: serde_json::Value = serde_json::from_str(&raw).expect("json");
        let vectors = doc["vectors"].as_array().expect("vectors array");
        assert!(vectors.len() >= 10);
        let s = |v: &serde_json::Value, k: &str| v[k].as_str().expect(k).to_string();
        for v in vectors {
            let (path, query) = (s(v, "path"), s(v, "query"));
            let target = if query.is_empty() { path } else { format!("{path}?{query}") };
            let headers = Orchestrator::sign(&Signing {
                method: &s(v, "method"),
                target: &target,
                uid: &s(v, "uid"),
                body: s(v, "body").as_bytes(),
                ts: v["ts"].as_i64().expect("ts"),
                nonce: &s(v, "nonce"),
                credentials: &s(v, "credentials"),
                signing_secret: &s(&doc, "signing_secret"),
            });
            let sig = headers.iter().find(|(k, _)| k == "x-tamebi-signature").map(|(_, v)| v.as_str());
            assert_eq!(sig, v["signature"].as_str(), "{v}");
        }
    }

    fn workspace_root_for_tests() -> std::path::PathBuf {
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
    }
}
