//! One chat turn against the orchestrator (`POST /v1/chat`, G1-signed), read as the AI SDK
//! UI message stream it answers with, and one request replayed directly against the model.
//!
//! A turn is done at `data: [DONE]`; it failed on a non-200 status, an `error` part, a broken
//! connection or a stream that ends without `[DONE]`. This module only measures; it never
//! retries (a retry would hide exactly the errors we count).

use std::time::{Duration, Instant};

use eventsource_stream::Eventsource;
use futures::StreamExt;
use serde_json::json;

use crate::sign;

/// Where turns go and how they are signed.
#[derive(Clone)]
pub struct Target {
    pub client: reqwest::Client,
    /// Clients bound to further loopback source addresses (`--source-addresses`); empty when
    /// `client` carries everything.
    pub spread: std::sync::Arc<[reqwest::Client]>,
    pub url: String,
    pub proxy_secret: String,
    pub signing_secret: String,
}

impl Target {
    /// The target for the `n`th stream: its client taken in turn from the spread ones.
    pub fn nth(&self, n: usize) -> Target {
        let mut t = self.clone();
        if !self.spread.is_empty() {
            t.client = self.spread[n % self.spread.len()].clone();
        }
        t
    }
}

/// Timings of one successful response, from just before the request was sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timing {
    /// First text delta (the time to first token a person sees).
    pub first_text: Option<Duration>,
    /// `[DONE]`.
    pub total: Duration,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    Status(u16),
    ErrorPart(String),
    Transport(String),
    NoDone,
}

impl Failure {
    /// A short label to count failures by.
    pub fn kind(&self) -> String {
        match self {
            Failure::Status(s) => format!("http {s}"),
            Failure::ErrorPart(_) => "error part".into(),
            Failure::Transport(_) => "transport".into(),
            Failure::NoDone => "ended without [DONE]".into(),
        }
    }
}

/// The AI SDK chat request body for one new user message.
pub fn chat_body(conversation: &str, message_id: &str, text: &str) -> Vec<u8> {
    json!({
        "id": conversation,
        "messages": [{"id": message_id, "role": "user", "parts": [{"type": "text", "text": text}]}]
    })
    .to_string()
    .into_bytes()
}

/// Sends one signed turn and reads it to the end. `on_open` runs once the first text delta
/// has arrived (open-streams mode uses it to know a stream is established).
pub async fn turn(
    target: &Target,
    uid: &str,
    conversation: &str,
    message_id: &str,
    text: &str,
    on_open: impl FnOnce(),
) -> Result<Timing, Failure> {
    let body = chat_body(conversation, message_id, text);
    let ts = unix_now();
    let nonce = uuid::Uuid::new_v4().simple().to_string();
    let url = url::Url::parse(&format!("{}/v1/chat", target.url)).map_err(|e| Failure::Transport(e.to_string()))?;
    let request = sign::Request {
        method: "POST",
        url: &url,
        uid,
        ts,
        nonce: &nonce,
        body: &body,
        credentials: "",
    };
    let g1 = sign::sign(&target.proxy_secret, &target.signing_secret, &request);
    let start = Instant::now();
    let resp = target
        .client
        .post(url.clone())
        .header("authorization", g1.authorization)
        .header("x-tamebi-uid", g1.uid)
        .header("x-tamebi-ts", g1.ts)
        .header("x-tamebi-nonce", g1.nonce)
        .header("x-tamebi-signature", g1.signature)
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .map_err(|e| Failure::Transport(e.to_string()))?;
    if resp.status() != reqwest::StatusCode::OK {
        return Err(Failure::Status(resp.status().as_u16()));
    }
    read_ui_stream(resp, start, on_open).await
}

async fn read_ui_stream(resp: reqwest::Response, start: Instant, on_open: impl FnOnce()) -> Result<Timing, Failure> {
    let mut events = resp.bytes_stream().eventsource();
    let mut first_text = None;
    let mut on_open = Some(on_open);
    while let Some(event) = events.next().await {
        let event = event.map_err(|e| Failure::Transport(e.to_string()))?;
        if event.data == "[DONE]" {
            return Ok(Timing {
                first_text,
                total: start.elapsed(),
            });
        }
        let part: serde_json::Value = serde_json::from_str(&event.data).map_err(|e| Failure::Transport(format!("bad frame: {e}")))?;
        match part["type"].as_str() {
            Some("error") => {
                return Err(Failure::ErrorPart(part["errorText"].as_str().unwrap_or("").to_string()));
            }
            Some("text-delta") if first_text.is_none() => {
                first_text = Some(start.elapsed());
                if let Some(f) = on_open.take() {
                    f();
                }
            }
            _ => {}
        }
    }
    Err(Failure::NoDone)
}

/// Sends one chat-completions body straight to the model and times it the same way: first
/// content delta, then `[DONE]`.
pub async fn model_request(client: &reqwest::Client, model_root: &str, body: &serde_json::Value) -> Result<Timing, Failure> {
    let start = Instant::now();
    let resp = client
        .post(format!("{model_root}/v1/chat/completions"))
        .json(body)
        .send()
        .await
        .map_err(|e| Failure::Transport(e.to_string()))?;
    if resp.status() != reqwest::StatusCode::OK {
        return Err(Failure::Status(resp.status().as_u16()));
    }
    let mut events = resp.bytes_stream().eventsource();
    let mut first_text = None;
    while let Some(event) = events.next().await {
        let event = event.map_err(|e| Failure::Transport(e.to_string()))?;
        if event.data == "[DONE]" {
            return Ok(Timing {
                first_text,
                total: start.elapsed(),
            });
        }
        if first_text.is_none() {
            let chunk: serde_json::Value = serde_json::from_str(&event.data).map_err(|e| Failure::Transport(format!("bad chunk: {e}")))?;
            if chunk["choices"][0]["delta"]["content"].as_str().is_some_and(|c| !c.is_empty()) {
                first_text = Some(start.elapsed());
            }
        }
    }
    Err(Failure::NoDone)
}

pub fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_body_is_the_ai_sdk_chat_request() {
        let body: serde_json::Value = serde_json::from_slice(&chat_body("c-1", "m-1", "hi")).unwrap();
        assert_eq!(
            body,
            json!({"id": "c-1", "messages": [{"id": "m-1", "role": "user", "parts": [{"type": "text", "text": "hi"}]}]})
        );
        assert!(body.get("uid").is_none(), "G1: the uid travels only in the signed header");
    }
}
