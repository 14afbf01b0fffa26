//! End to end: a real AI SDK client understands the orchestrator's stream (issue 2).
//!
//! The raw SSE bodies of two real turns (one text, one tool call through mcp-nextcloud
//! against the Nextcloud stand-in) are handed to `tests/node/read-ui-stream.mjs`, which
//! parses them with the AI SDK's own chunk schema and `readUIMessageStream`, the code
//! `useChat` runs in the browser, and prints the UIMessage it built. Our own SSE parser is
//! not involved anywhere, so a frame our parser tolerates but the SDK rejects fails here.

#![expect(clippy::expect_used, reason = "helpers of a test file fail the test by panicking")]

use std::path::{Path, PathBuf};
use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};
use test_harness::island::{require_node_modules, run_node_json};
use test_harness::mcp_nextcloud::McpNextcloud;
use test_harness::orchestrator::{Options, Orchestrator, user_turn};
use test_harness::scripted_model::ScriptedModel;
use test_harness::standin::Standin;
use test_harness::workspace_root;

const GREETING: &str = "Hello Alice! I can look at your files, calendar and boards.";

fn node_dir() -> PathBuf {
    workspace_root().join("tests/node")
}

/// The UIMessage the AI SDK builds from `sse` (plus the chunk types it accepted).
fn read_with_ai_sdk(sse: &str, scratch: &Path, name: &str) -> (Value, Vec<String>) {
    let file = scratch.join(format!("{name}.sse"));
    std::fs::write(&file, sse).expect("write sse body");
    let dir = node_dir();
    let out = run_node_json(
        &dir,
        "read-ui-stream.mjs",
        &[&file.display().to_string()],
        &[],
        Duration::from_secs(60),
    );
    let types = out["chunkTypes"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_string)
        .collect();
    (out["message"].clone(), types)
}

/// One turn as alice (with her Nextcloud app password as the bearer); the raw SSE body.
async fn turn(orch: &Orchestrator, bearer: &str, conversation: &str, text: &str) -> String {
    let client = reqwest::Client::builder().timeout(Duration::from_secs(60)).build().expect("client");
    let body = user_turn(conversation, "m1", text);
    let response = orch
        .request(&client, Method::POST, "/v1/chat", "alice", &body, Some(bearer))
        .send()
        .await
        .expect("POST /v1/chat");
    assert_eq!(response.status(), 200, "POST /v1/chat");
    assert_eq!(response.headers()["x-vercel-ai-ui-message-stream"], "v1");
    response.text().await.expect("sse body")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_ai_sdk_reads_text_and_tool_turns() {
    require_node_modules(&node_dir(), "ai", "scripts/install.d/45-browser.sh (npm ci in tests/node)");
    let standin = tokio::task::spawn_blocking(Standin::start_seeded).await.expect("stand-in");
    let mcp = McpNextcloud::start(standin.url());
    let model = ScriptedModel::start();
    model.add_rules(json!([
        {"match": "say hello", "steps": [{"text": GREETING, "chunk_chars": 5}]},
        {"match": "list my files", "steps": [
            {"tool_calls": [{"name": "files_list", "arguments": {"path": "/"}}]},
            {"text": "Those are your files.", "chunk_chars": 6}
        ]}
    ]));
    let orch = Orchestrator::start(Options {
        model_url: model.url(),
        mcp_servers: format!("nextcloud={};auth=nextcloud", mcp.url()),
        ..Options::default()
    });
    let bearer = standin.app_password("alice").to_string();
    let scratch = tempfile::tempdir().expect("scratch dir");

    // A text turn: one text part holding exactly the scripted text.
    let sse = turn(&orch, &bearer, "sdk-text", "say hello please").await;
    let (message, types) = read_with_ai_sdk(&sse, scratch.path(), "text");
    assert_eq!(message["role"], "assistant", "{message}");
    let texts: Vec<&Value> = message["parts"]
        .as_array()
        .expect("parts")
        .iter()
        .filter(|p| p["type"] == "text")
        .collect();
    assert_eq!(texts.len(), 1, "{message}");
    assert_eq!(texts[0]["text"], GREETING);
    assert_eq!(texts[0]["state"], "done");
    assert_eq!(types.first().map(String::as_str), Some("start"));
    assert_eq!(types.last().map(String::as_str), Some("finish"));

    // A tool turn: a dynamic-tool part with the call's input and mcp-nextcloud's rows.
    let sse = turn(&orch, &bearer, "sdk-tool", "list my files").await;
    let (message, types) = read_with_ai_sdk(&sse, scratch.path(), "tool");
    let parts = message["parts"].as_array().expect("parts");
    let tool = parts
        .iter()
        .find(|p| p["type"] == "dynamic-tool")
        .unwrap_or_else(|| panic!("no dynamic-tool part in {message}"));
    assert_eq!(tool["toolName"], "files_list");
    assert_eq!(tool["state"], "output-available", "{tool}");
    assert_eq!(tool["input"], json!({"path": "/"}));
    let output = &tool["output"];
    assert_eq!(output["server"], "nextcloud");
    assert_eq!(output["tool"], "files_list");
    assert_eq!(output["_meta"]["ui"]["resourceUri"], "ui://nextcloud/files-table");
    let names: Vec<&str> = output["structuredContent"]["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .filter_map(|e| e["name"].as_str())
        .collect();
    // The seeded fixture's top level for alice, as her own credential sees it.
    for expected in ["Shared-with-bob", "private", "notes.txt"] {
        assert!(names.contains(&expected), "{expected} missing from {names:?}");
    }
    let notes = output["structuredContent"]["entries"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|e| e["name"] == "notes.txt")
        .expect("notes.txt row");
    assert_eq!(notes["is_dir"], false);
    assert_eq!(notes["size"], "alice notes about budget\n".len());
    // The reply after the tool is text again, in the same message.
    let after = parts.iter().rposition(|p| p["type"] == "text").expect("text after the tool");
    assert!(
        after > parts.iter().position(|p| p["type"] == "dynamic-tool").unwrap_or(usize::MAX),
        "{message}"
    );
    assert_eq!(parts[after]["text"], "Those are your files.");
    for t in ["tool-input-start", "tool-input-available", "tool-output-available"] {
        assert!(types.iter().any(|x| x == t), "{t} missing from {types:?}");
    }
}

#[test]
fn a_frame_the_ai_sdk_rejects_fails_the_reader() {
    // The reader is not a rubber stamp: a chunk outside the SDK's schema makes it fail.
    require_node_modules(&node_dir(), "ai", "scripts/install.d/45-browser.sh (npm ci in tests/node)");
    let scratch = tempfile::tempdir().expect("scratch dir");
    let file = scratch.path().join("bad.sse");
    std::fs::write(
        &file,
        "data: {\"type\":\"start\"}\n\ndata: {\"type\":\"tool-output-available\",\"output\":1}\n\ndata: [DONE]\n\n",
    )
    .expect("write");
    let out = std::process::Command::new(test_harness::island::node())
        .current_dir(node_dir())
        .arg("read-ui-stream.mjs")
        .arg(&file)
        .output()
        .expect("run node");
    assert!(!out.status.success(), "the reader accepted a chunk without toolCallId");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("rejected"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
