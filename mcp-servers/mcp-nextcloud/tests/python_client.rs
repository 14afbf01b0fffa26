//! A client from another ecosystem: the official Python MCP SDK (pinned, installed by
//! scripts/install.d/25-mcp-python.sh) lists the tools and calls files_list over Streamable
//! HTTP with a bearer.

mod common;

use common::Env;

#[tokio::test(flavor = "multi_thread")]
async fn python_sdk_lists_tools_and_calls_files_list() {
    let env = Env::start().await;
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python");
    let python = dir.join(".venv/bin/python");
    assert!(
        python.exists(),
        "the Python SDK venv is missing: run scripts/install.d/25-mcp-python.sh"
    );
    let out = tokio::process::Command::new(python)
        .arg(dir.join("list_and_call.py"))
        .arg(env.mcp.url())
        .arg(env.nc.app_password("bob"))
        .output()
        .await
        .expect("run python");
    assert!(
        out.status.success(),
        "python failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON line");
    let tools: Vec<&str> = v["tools"].as_array().unwrap().iter().map(|t| t.as_str().unwrap()).collect();
    for t in ["files_list", "files_read", "calendar_events", "deck_move_card"] {
        assert!(tools.contains(&t), "{tools:?}");
    }
    assert_eq!(v["is_error"], false);
    let paths: Vec<&str> = v["paths"].as_array().unwrap().iter().map(|p| p.as_str().unwrap()).collect();
    assert!(paths.contains(&"bob-todo.txt") && paths.contains(&"Shared-with-bob"), "{paths:?}");
    assert!(!paths.iter().any(|p| p.contains("secret")));
}
