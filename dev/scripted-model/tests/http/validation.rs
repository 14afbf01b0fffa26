//! Malformed requests get a 400 (or 404 for an unknown model) in OpenAI's error shape.

#![expect(clippy::unwrap_used, reason = "test helpers fail the test by panicking")]

use crate::common::start;
use serde_json::{Value, json};

async fn refused(s: &crate::common::Server, body: Value, status: u16, needle: &str) {
    let resp = s.post(body.clone()).await;
    assert_eq!(resp.status(), status, "for {body}");
    let err: Value = resp.json().await.unwrap();
    let message = err["error"]["message"].as_str().unwrap();
    assert!(message.contains(needle), "{message:?} should mention {needle:?}");
    assert_eq!(err["error"]["type"], "invalid_request_error");
    assert!(err["error"].get("param").is_some() && err["error"].get("code").is_some());
}

#[tokio::test]
async fn malformed_requests_are_refused_clearly() {
    let s = start(json!({"rules": []})).await;
    let user = json!({"role": "user", "content": "hi"});
    refused(&s, json!({"messages": [user]}), 400, "model").await;
    refused(&s, json!({"model": "gpt-9", "messages": [user]}), 404, "gpt-9").await;
    refused(&s, json!({"model": "scripted", "messages": []}), 400, "messages").await;
    refused(
        &s,
        json!({"model": "scripted", "messages": [user, {"role": "tool", "tool_call_id": "call_1", "content": "x"}]}),
        400,
        "preceding message",
    )
    .await;
    refused(
        &s,
        json!({"model": "scripted", "messages": [user,
            {"role": "assistant", "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "a", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "call_2", "content": "x"}]}),
        400,
        "call_2",
    )
    .await;
    refused(
        &s,
        json!({"model": "scripted", "messages": [user,
            {"role": "assistant", "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "a", "arguments": "{\"path\": "}}]},
            {"role": "tool", "tool_call_id": "call_1", "content": "x"}]}),
        400,
        "not valid JSON",
    )
    .await;
    refused(
        &s,
        json!({"model": "scripted", "messages": [user,
            {"role": "assistant", "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "a", "arguments": "{}"}}]},
            {"role": "user", "content": "next"}]}),
        400,
        "call_1",
    )
    .await;
    refused(
        &s,
        json!({"model": "scripted", "tools": [{"type": "function", "function": {"name": "nextcloud.files"}}], "messages": [user]}),
        400,
        "nextcloud.files",
    )
    .await;
    refused(
        &s,
        json!({"model": "scripted", "stream_options": {"include_usage": true}, "messages": [user]}),
        400,
        "stream_options",
    )
    .await;

    let resp = s
        .client
        .post(format!("{}/v1/chat/completions", s.base))
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 400);
    let err: Value = resp.json().await.unwrap();
    assert!(err["error"]["message"].as_str().unwrap().contains("parse"));
    s.stop().await;
}
