//! A client from another ecosystem against mcp-mail: the official Python MCP SDK (the venv
//! scripts/install.d/25-mcp-python.sh installs for mcp-nextcloud's tests, and the same script,
//! mcp-nextcloud/tests/python/list_and_call.py) lists the tools, reads every published schema
//! as a strict draft 2020-12 client does (metaschema, formats asserted, only standard keywords
//! and formats), and calls tools with their integers quoted as small models write them.

use serde_json::{Value, json};
use test_harness::mcp_mail::McpMail;
use test_harness::mcp_server::McpServer;
use test_harness::standin::Standin;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_sdk_reads_every_schema_and_sends_quoted_integers() {
    let (nc, mcp): (Standin, McpServer) = tokio::task::spawn_blocking(|| {
        let nc = Standin::start();
        let mcp = McpMail::start(nc.url(), &[]);
        (nc, mcp)
    })
    .await
    .expect("start the stand-in and mcp-mail");
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../mcp-nextcloud/tests/python");
    let python = dir.join(".venv/bin/python");
    assert!(
        python.exists(),
        "the Python SDK venv is missing: run scripts/install.d/25-mcp-python.sh"
    );
    let calls = json!([
        ["mail_mailboxes", {"account_id": "1"}],
        ["mail_search", {"query": "budget", "limit": "1"}],
        ["mail_read", {"message_id": "1"}],
        ["mail_read", {"message_id": "+1"}],
    ]);
    let out = tokio::process::Command::new(python)
        .arg(dir.join("list_and_call.py"))
        .arg(mcp.url())
        .arg(nc.app_password("alice"))
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
    let v: Value = serde_json::from_slice(&out.stdout).expect("one JSON line");
    assert_eq!(v["tools"].as_array().map(Vec::len), Some(7), "{v}");
    // Every tool's input schema was read, and none uses a schemars-only format (`int64`,
    // `uint32`) or keyword.
    assert!(v["schemas_checked"].as_u64().unwrap() >= 7, "{v}");
    assert_eq!(v["schema_problems"], json!([]), "{v:#}");

    let calls = v["calls"].as_array().unwrap();
    for c in &calls[..3] {
        assert_eq!(c["is_error"], false, "{c}");
    }
    assert!(calls[0]["text"].as_str().unwrap().contains("INBOX"), "{}", calls[0]);
    assert_eq!(calls[1]["structured"]["messages"].as_array().map(Vec::len), Some(1), "{}", calls[1]);
    assert!(
        calls[2]["text"]
            .as_str()
            .unwrap()
            .contains("Subject: Q3 budget: numbers for review"),
        "{}",
        calls[2]
    );
    // Only exactly an integer is read as one: "+1" is refused as the wrong type, as before.
    let refused = &calls[3];
    assert_eq!(refused["is_error"], true, "{refused}");
    assert_eq!(refused["structured"]["error"]["kind"], "invalid_argument", "{refused}");
    assert!(
        refused["text"].as_str().unwrap().contains("invalid type: string \"+1\""),
        "{refused}"
    );
}
