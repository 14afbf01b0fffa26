//! The real `tamebi` binary on a free port, with its own data directory.
//!
//! Starts with the test-only fault injection compiled in and enabled, so crash-isolation
//! tests can make one conversation's actor panic. Signs requests exactly as the Nextcloud
//! app does (G1), and reads SSE answers into their `data:` payloads.

use hmac::{Hmac, KeyInit, Mac};
use sha2::{Digest, Sha256};
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

    pub fn process(&mut self) -> &mut Process {
        &mut self.process
    }

    /// kill -9, then start again on the same port and data directory.
    pub fn kill9_and_restart(&mut self) {
        self.process.kill9();
        self.process = spawn(self.port, &self.env);
    }

    /// The G1 headers for `uid` over `body`, signed now.
    pub fn signed_headers(uid: &str, body: &[u8]) -> Vec<(String, String)> {
        let ts = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs() as i64)
            .unwrap_or(0);
        Self::signed_headers_at(uid, body, ts, SIGNING_SECRET)
    }

    pub fn signed_headers_at(uid: &str, body: &[u8], ts: i64, signing_secret: &str) -> Vec<(String, String)> {
        let signed = format!("{uid}\n{ts}\n{}", hex::encode(Sha256::digest(body)));
        let mut mac = Hmac::<Sha256>::new_from_slice(signing_secret.as_bytes()).expect("hmac key");
        mac.update(signed.as_bytes());
        vec![
            ("authorization".into(), format!("Bearer {PROXY_SECRET}")),
            ("x-tamebi-uid".into(), uid.into()),
            ("x-tamebi-ts".into(), ts.to_string()),
            ("x-tamebi-signature".into(), hex::encode(mac.finalize().into_bytes())),
        ]
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

    /// A signed request builder for `uid` (and their Nextcloud bearer, if any).
    pub fn request(
        &self,
        client: &reqwest::Client,
        method: reqwest::Method,
        path: &str,
        uid: &str,
        body: &[u8],
        nc_bearer: Option<&str>,
    ) -> reqwest::RequestBuilder {
        let mut rb = client.request(method, format!("{}{path}", self.url())).body(body.to_vec());
        for (k, v) in Self::signed_headers(uid, body) {
            rb = rb.header(k, v);
        }
        if let Some(b) = nc_bearer {
            rb = rb.header("x-tamebi-nc-authorization", format!("Bearer {b}"));
        }
        if !body.is_empty() {
            rb = rb.header("content-type", "application/json");
        }
        rb
    }
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
