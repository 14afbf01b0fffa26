//! Nextcloud faults as the model and the person see them (issue 32): the seeded stand-in
//! behind the fault-injecting proxy (`dev/fault-proxy`), the real mcp-nextcloud in front of
//! it, and the orchestrator. A 5xx and a stall past the orchestrator's tool timeout
//! (`TAMEBI_TOOL_TIMEOUT_SECS`, set short here; the 30 s stall exceeds it) each end the call
//! as a `tool-output-error` part, well within the timeout's bound, and the turn goes on (the
//! model gets the error, then finishes). The cases of each fault in detail are in
//! mcp-servers/mcp-nextcloud/tests/faults.rs.
#![expect(clippy::unwrap_used, reason = "helpers of a test file fail the test by panicking")]

use std::time::{Duration, Instant};

use reqwest::Method;
use serde_json::{Value, json};
use test_harness::fault_proxy::FaultProxy;
use test_harness::mcp_nextcloud::McpNextcloud;
use test_harness::orchestrator::{Options, Orchestrator, parts, read_sse, user_turn};
use test_harness::scripted_model::ScriptedModel;
use test_harness::standin::Standin;

const TOOL_TIMEOUT_SECS: u64 = 3;
const STALL_SECS: u64 = 30;

async fn chat(orch: &Orchestrator, cid: &str, text: &str, bearer: &str) -> Vec<Value> {
    let response = orch
        .request(
            &reqwest::Client::new(),
            Method::POST,
            "/v1/chat",
            "alice",
            &user_turn(cid, "m1", text),
            Some(bearer),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    parts(&read_sse(response).await)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_or_stalled_nextcloud_is_a_tool_error_and_the_turn_goes_on() {
    let nc = Standin::start_seeded();
    let proxy = FaultProxy::start(nc.url());
    let mcp = McpNextcloud::start(proxy.url());
    let model = ScriptedModel::start();
    model.add_rules(json!([
        {"match": "list my files", "steps": [
            {"tool_calls": [{"name": "files_list", "arguments": {"path": ""}}]},
            {"text": "I could not list them."}
        ]}
    ]));
    let orch = Orchestrator::start(Options {
        model_url: model.url(),
        mcp_servers: format!("nextcloud={};auth=nextcloud", mcp.url()),
        extra_env: vec![("TAMEBI_TOOL_TIMEOUT_SECS".into(), TOOL_TIMEOUT_SECS.to_string())],
    });
    let bearer = nc.app_password("alice").to_string();

    for (case, rule, says) in [
        ("5xx", json!({"method": "PROPFIND", "action": "status", "status": 503}), "HTTP 503"),
        (
            "stall",
            json!({"method": "PROPFIND", "action": "stall", "secs": STALL_SECS}),
            "did not answer in time",
        ),
    ] {
        proxy.set_rules(json!([rule]));
        let started = Instant::now();
        let answer = chat(&orch, &format!("nc-{case}"), "please list my files", &bearer).await;
        let took = started.elapsed();
        assert!(took < Duration::from_secs(STALL_SECS - 5), "{case}: the turn took {took:?}");
        let error = answer
            .iter()
            .find(|p| p["type"] == "tool-output-error")
            .unwrap_or_else(|| panic!("{case}: no tool error part: {answer:#?}"));
        let text = error["errorText"].as_str().unwrap_or_default();
        assert!(text.contains(says), "{case}: {error}");
        assert!(
            answer.iter().any(|p| p["type"] == "finish") && !answer.iter().any(|p| p["type"] == "error"),
            "{case}: the turn did not go on after the tool error: {answer:#?}"
        );
        eprintln!("{case}: {took:?}, the model and the person see: {text}");
    }
    proxy.clear_rules();
}
