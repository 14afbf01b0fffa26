//! Shared fixture for the HTTP tests: the real server on port 0 in this process, a reqwest
//! client, and an SSE reader built on eventsource-stream.

#![expect(clippy::unwrap_used, reason = "test fixtures fail the test by panicking")]

use std::time::Duration;

use eventsource_stream::Eventsource;
use futures::StreamExt;
use serde_json::{Value, json};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

pub struct Server {
    pub base: String,
    pub shutdown: CancellationToken,
    pub handle: JoinHandle<std::io::Result<()>>,
    pub client: reqwest::Client,
}

/// Starts the server with `rules` (`{"rules": [...]}`) loaded as if from `--scripts`.
pub async fn start(rules: Value) -> Server {
    let rules = scripted_model::script::RuleSet::parse(rules.to_string().as_bytes()).unwrap().rules;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let shutdown = CancellationToken::new();
    #[expect(clippy::disallowed_methods, reason = "the handle is kept in Server and awaited when it stops")]
    let handle = tokio::spawn(scripted_model::serve(listener, rules, shutdown.clone()));
    let client = reqwest::Client::builder().timeout(Duration::from_secs(20)).build().unwrap();
    Server {
        base,
        shutdown,
        handle,
        client,
    }
}

impl Server {
    pub async fn post(&self, body: Value) -> reqwest::Response {
        self.client
            .post(format!("{}/v1/chat/completions", self.base))
            .json(&body)
            .send()
            .await
            .unwrap()
    }

    /// Streams a request and collects it.
    pub async fn stream(&self, body: Value) -> Streamed {
        let resp = self.post(body).await;
        assert_eq!(resp.status(), 200, "{:?}", resp.text().await);
        read_sse(resp).await
    }

    pub async fn stop(self) {
        self.shutdown.cancel();
        tokio::time::timeout(Duration::from_secs(10), self.handle)
            .await
            .unwrap()
            .unwrap()
            .unwrap();
    }
}

/// What a streamed answer contained.
#[derive(Debug, Default)]
pub struct Streamed {
    pub chunks: Vec<Value>,
    pub done: bool,
    /// The body broke off (connection cut) before it ended.
    pub broken: bool,
}

impl Streamed {
    pub fn text(&self) -> String {
        self.chunks
            .iter()
            .filter_map(|c| c["choices"][0]["delta"]["content"].as_str())
            .collect()
    }

    pub fn finish_reason(&self) -> Option<String> {
        self.chunks
            .iter()
            .find_map(|c| c["choices"][0]["finish_reason"].as_str().map(str::to_string))
    }

    /// Tool calls reassembled the way a client does: by index, id/name from the first
    /// delta, arguments concatenated.
    pub fn tool_calls(&self) -> Vec<(String, String, String)> {
        let mut calls: Vec<(String, String, String)> = Vec::new();
        for c in &self.chunks {
            for d in c["choices"][0]["delta"]["tool_calls"].as_array().into_iter().flatten() {
                let i = d["index"].as_u64().unwrap() as usize;
                if calls.len() <= i {
                    calls.resize(i + 1, Default::default());
                }
                if let Some(id) = d["id"].as_str() {
                    calls[i].0 = id.into();
                }
                if let Some(name) = d["function"]["name"].as_str() {
                    calls[i].1 = name.into();
                }
                calls[i].2 += d["function"]["arguments"].as_str().unwrap_or("");
            }
        }
        calls
    }
}

pub async fn read_sse(resp: reqwest::Response) -> Streamed {
    assert_eq!(resp.headers()["content-type"], "text/event-stream");
    let mut events = resp.bytes_stream().eventsource();
    let mut out = Streamed::default();
    while let Some(event) = events.next().await {
        match event {
            Ok(e) if e.data == "[DONE]" => out.done = true,
            Ok(e) => {
                assert!(!out.done, "data after [DONE]");
                out.chunks.push(serde_json::from_str(&e.data).unwrap());
            }
            Err(_) => {
                out.broken = true;
                break;
            }
        }
    }
    out
}

pub fn user(text: &str) -> Value {
    json!({"model": "scripted", "stream": true, "stream_options": {"include_usage": true},
           "messages": [{"role": "system", "content": "sys"}, {"role": "user", "content": text}]})
}
