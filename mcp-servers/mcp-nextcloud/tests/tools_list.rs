//! The tool catalogue is a contract: the orchestrator derives approval from the annotations
//! (G3), hosts render apps from `_meta.ui`, and models see the names, descriptions and
//! schemas; the orchestrator fingerprints each definition and quarantines a changed one.
//! `tests/fixtures/tools_list.json` is the `tools/list` answer captured before the tools moved
//! to rmcp's `#[tool_router]`; the running server must answer exactly that over real HTTP,
//! with two normalisations: key order, and the order of the tools (rmcp's router lists them
//! sorted by name; MCP gives the list's order no meaning and the orchestrator keys tools by
//! name). Each tool's definition must be identical. Changed deliberately since: schemars'
//! integer formats (`uint64`, `uint`, `int64`, `uint32`) are gone, a `u32` carries its
//! `maximum` instead (#34, standard JSON Schema only; tests/python_client.rs checks that). files_read
//! reads spreadsheets and presentations, with `sheet` and `row` for a sheet past its cut, and
//! files_grep's description names them (#28). A deliberate change to a tool updates the
//! fixture in the same commit (a failing run writes the actual answer to the target's tmp dir).

mod common;

use common::Env;
use serde_json::{Value, json};

#[tokio::test(flavor = "multi_thread")]
async fn tools_list_is_unchanged() {
    let env = Env::start().await;
    let request = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}});
    let response = env
        .nc_http()
        .post(env.mcp.url())
        .header("Content-Type", "application/json")
        .header("Accept", "application/json, text/event-stream")
        .header("MCP-Protocol-Version", "2025-06-18")
        .header("Authorization", env.nc.bearer("alice"))
        .json(&request)
        .send()
        .await
        .expect("POST tools/list");
    assert_eq!(response.status(), 200);
    let body: Value = response.json().await.expect("a JSON-RPC answer");
    let actual = by_name(&body["result"]);

    let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tools_list.json");
    let expected: Value = serde_json::from_str(&std::fs::read_to_string(&fixture).expect("read the fixture")).expect("fixture is JSON");
    let expected = by_name(&expected);
    if actual != expected {
        let out = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("tools_list.actual.json");
        std::fs::write(&out, serde_json::to_string_pretty(&body["result"]).expect("encode")).expect("write the actual answer");
        panic!(
            "tools/list differs from {}; the actual answer is in {}",
            fixture.display(),
            out.display()
        );
    }
    // Not vacuous: the fixture holds every tool, with schemas and annotations.
    assert_eq!(expected["tools"].as_object().map(serde_json::Map::len), Some(15));
}

/// A `tools/list` result with its tools keyed by name (everything else as it is).
#[expect(clippy::expect_used, reason = "test helper")]
fn by_name(result: &Value) -> Value {
    let mut out = result.clone();
    let tools = result["tools"].as_array().expect("a tools array");
    let keyed: serde_json::Map<String, Value> = tools
        .iter()
        .map(|t| (t["name"].as_str().expect("a tool name").to_string(), t.clone()))
        .collect();
    assert_eq!(keyed.len(), tools.len(), "tool names are unique");
    out["tools"] = Value::Object(keyed);
    out
}
