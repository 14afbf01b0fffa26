//! A client from another ecosystem: the official Python MCP SDK (pinned, installed by
//! scripts/install.d/25-mcp-python.sh) lists the tools over Streamable HTTP with a bearer,
//! reads every published schema as a strict draft 2020-12 client does (metaschema, formats
//! asserted, only standard keywords and formats: see tests/python/list_and_call.py), and calls
//! tools, one with its integers quoted as small models write them.

mod common;

use common::Env;
use serde_json::{Value, json};

/// Runs tests/python/list_and_call.py as `uid` with `calls`; its one JSON answer.
#[expect(clippy::expect_used, reason = "test helper")]
async fn python(env: &Env, uid: &str, calls: Value) -> Value {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python");
    let python = dir.join(".venv/bin/python");
    assert!(
        python.exists(),
        "the Python SDK venv is missing: run scripts/install.d/25-mcp-python.sh"
    );
    let out = tokio::process::Command::new(python)
        .arg(dir.join("list_and_call.py"))
        .arg(env.mcp.url())
        .arg(env.nc.app_password(uid))
        .arg(calls.to_string())
        .output()
        .await
        .expect("run python");
    assert!(
        out.status.success(),
        "python failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("one JSON line")
}

#[tokio::test(flavor = "multi_thread")]
async fn python_sdk_reads_every_schema_and_calls_tools() {
    let env = Env::start().await;
    let v = python(
        &env,
        "bob",
        json!([
            ["files_list", {"path": ""}],
            ["files_read", {"path": "bob-todo.txt", "offset": "1", "limit": "4"}],
            ["files_read", {"path": "bob-todo.txt", "limit": "4.0"}],
        ]),
    )
    .await;
    let tools: Vec<&str> = v["tools"].as_array().unwrap().iter().map(|t| t.as_str().unwrap()).collect();
    for t in ["files_list", "files_read", "calendar_events", "deck_move_card"] {
        assert!(tools.contains(&t), "{tools:?}");
    }
    // Every tool's input and output schema was read, and none uses a schemars-only format
    // (`uint64`, `uint`, `int64`) or keyword.
    assert_eq!(v["schemas_checked"], 2 * tools.len(), "{v}");
    assert_eq!(v["schema_problems"], json!([]), "{v:#}");

    let calls = v["calls"].as_array().unwrap();
    let listed = &calls[0];
    assert_eq!(listed["is_error"], false, "{listed}");
    let paths: Vec<&str> = listed["structured"]["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["path"].as_str().unwrap())
        .collect();
    assert!(paths.contains(&"bob-todo.txt") && paths.contains(&"Shared-with-bob"), "{paths:?}");
    assert!(!paths.iter().any(|p| p.contains("secret")));

    // "1" and "4" were read as the integers 1 and 4 (the file holds "bob todo\n").
    let read = &calls[1];
    assert_eq!(read["is_error"], false, "{read}");
    assert_eq!(read["structured"]["offset"], 1, "{read}");
    assert_eq!(read["structured"]["next_offset"], 5, "{read}");
    assert_eq!(read["structured"]["text"], "ob t", "{read}");
    // A quoted number that is not exactly an integer is refused as before.
    let refused = &calls[2];
    assert_eq!(refused["is_error"], true, "{refused}");
    assert_eq!(refused["structured"]["error"]["kind"], "invalid_argument", "{refused}");
    assert!(
        refused["text"].as_str().unwrap().contains("invalid type: string \"4.0\""),
        "{refused}"
    );
}
