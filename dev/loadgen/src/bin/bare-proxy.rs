//! `bare-proxy`: the reference for the orchestrator's per-turn overhead (issue #16).
//!
//! The least an SSE chat proxy can do: `POST /v1/chat` with the AI SDK body, one streamed
//! chat-completions request to the same model, each content delta re-framed as a UI-stream
//! `text-delta`, then `[DONE]`. No identity check, no storage, no actors, no tools: whatever
//! the orchestrator costs on top of this is its own. Benchmark-only; binds loopback.
//!
//!     bare-proxy --bind 127.0.0.1:8701 --model-url http://127.0.0.1:8790/v1

use std::convert::Infallible;

use anyhow::Context;
use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::serve::ListenerExt;
use clap::Parser;
use eventsource_stream::Eventsource;
use futures::StreamExt;
use serde_json::{Value, json};

#[derive(Parser)]
struct Args {
    /// Loopback address to listen on.
    #[arg(long, default_value = "127.0.0.1:8701")]
    bind: std::net::SocketAddr,
    /// The model's OpenAI base URL (ending in /v1).
    #[arg(long)]
    model_url: String,
}

#[derive(Clone)]
struct Proxy {
    client: reqwest::Client,
    completions: String,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    anyhow::ensure!(args.bind.ip().is_loopback(), "--bind must be a loopback address");
    let proxy = Proxy {
        client: reqwest::Client::builder().no_proxy().http1_only().build()?,
        completions: format!("{}/chat/completions", args.model_url.trim_end_matches('/')),
    };
    let app = Router::new().route("/v1/chat", post(chat)).with_state(proxy);
    let listener = tokio::net::TcpListener::bind(args.bind).await.context("bind")?;
    println!("listening on http://{}", listener.local_addr()?);
    // Same socket option as the orchestrator: without it every frame waits for a delayed ACK.
    axum::serve(listener.tap_io(|tcp| drop(tcp.set_nodelay(true))), app)
        .await
        .context("serve")?;
    Ok(())
}

async fn chat(State(proxy): State<Proxy>, body: Bytes) -> Response {
    let Ok(request) = serde_json::from_slice::<Value>(&body) else {
        return (StatusCode::BAD_REQUEST, "not JSON").into_response();
    };
    let text: String = request["messages"]
        .as_array()
        .and_then(|m| m.last())
        .and_then(|m| m["parts"].as_array())
        .map(|parts| parts.iter().filter_map(|p| p["text"].as_str()).collect())
        .unwrap_or_default();
    let upstream = proxy
        .client
        .post(&proxy.completions)
        .json(&json!({"model": "scripted", "stream": true, "messages": [{"role": "user", "content": text}]}))
        .send()
        .await;
    let upstream = match upstream {
        Ok(r) if r.status().is_success() => r,
        _ => return (StatusCode::BAD_GATEWAY, "model unreachable").into_response(),
    };
    let frames = upstream.bytes_stream().eventsource().map(|event| {
        let frame = match event {
            Ok(e) if e.data == "[DONE]" => "data: [DONE]\n\n".to_string(),
            Ok(e) => serde_json::from_str::<Value>(&e.data)
                .ok()
                .and_then(|chunk| chunk["choices"][0]["delta"]["content"].as_str().map(str::to_string))
                .filter(|delta| !delta.is_empty())
                .map(|delta| format!("data: {}\n\n", json!({"type": "text-delta", "id": "t0", "delta": delta})))
                .unwrap_or_default(),
            Err(_) => format!("data: {}\n\n", json!({"type": "error", "errorText": "model stream broke"})),
        };
        Ok::<Bytes, Infallible>(Bytes::from(frame))
    });
    Response::builder()
        .header(header::CONTENT_TYPE, "text/event-stream")
        .header("x-vercel-ai-ui-message-stream", "v1")
        .body(Body::from_stream(frames))
        .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}
