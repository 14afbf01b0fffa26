//! Two orchestrators in one process (issue #18): actor references live in each one's
//! application state, never under process-global names, so neither finds the other's
//! supervisors or tool-server actors, and stopping one leaves the other serving.
//!
//! Both run `tamebi::serve` in this test's runtime against the real scripted model and two
//! real probe MCP servers configured under the same server name.
#![expect(clippy::unwrap_used, reason = "helpers of a test file fail the test by panicking")]

use reqwest::Method;
use serde_json::json;
use std::collections::HashMap;
use std::time::Duration;
use test_harness::orchestrator::{Orchestrator, PROXY_SECRET, SIGNING_SECRET, parts, read_sse, user_turn};
use test_harness::probe_mcp::ProbeMcp;
use test_harness::scripted_model::ScriptedModel;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

struct InProcess {
    url: String,
    shutdown: CancellationToken,
    served: tokio::task::JoinHandle<Result<(), tamebi::error::Error>>,
    _data: tempfile::TempDir,
}

async fn start(model_url: &str, probe_url: &str) -> InProcess {
    let data = tempfile::tempdir().unwrap();
    let vars: HashMap<String, String> = [
        ("TAMEBI_PROXY_SECRET", PROXY_SECRET.to_string()),
        ("TAMEBI_SIGNING_SECRET", SIGNING_SECRET.to_string()),
        ("TAMEBI_MODEL_URL", model_url.to_string()),
        ("TAMEBI_MODEL", "scripted".to_string()),
        ("TAMEBI_DATA_DIR", data.path().display().to_string()),
        // The same server name in both: one global name per server could not be had twice.
        ("TAMEBI_MCP_SERVERS", format!("probe={probe_url};auth=none;trust=reads")),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    let config = tamebi::config::Config::from_vars(&vars).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let shutdown = CancellationToken::new();
    let served = TaskTracker::new().spawn(tamebi::serve(config, listener, shutdown.clone()));
    let client = reqwest::Client::new();
    for _ in 0..100 {
        if client.get(format!("{url}/healthz")).send().await.is_ok_and(|r| r.status() == 200) {
            break;
        }
        assert!(!served.is_finished(), "the orchestrator at {url} stopped while starting");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    InProcess {
        url,
        shutdown,
        served,
        _data: data,
    }
}

async fn chat(http: &reqwest::Client, o: &InProcess, conversation: &str, text: &str) -> String {
    let body = user_turn(conversation, &format!("m-{conversation}"), text);
    let mut rb = http
        .request(Method::POST, format!("{}/v1/chat", o.url))
        .header("content-type", "application/json")
        .body(body.clone());
    for (k, v) in Orchestrator::signed_headers("POST", "/v1/chat", "alice", &body) {
        rb = rb.header(k, v);
    }
    let response = rb.send().await.unwrap();
    assert_eq!(response.status(), 200, "{}", o.url);
    let parts = parts(&read_sse(response).await);
    assert!(parts.iter().any(|p| p["type"] == "finish"), "{parts:?}");
    parts
        .iter()
        .filter(|p| p["type"] == "text-delta")
        .filter_map(|p| p["delta"].as_str())
        .collect()
}

/// Shuts one orchestrator down and waits (bounded) for `serve` to return Ok.
async fn stop(o: InProcess) {
    o.shutdown.cancel();
    let served = tokio::time::timeout(Duration::from_secs(30), o.served).await;
    assert!(served.is_ok(), "the orchestrator at {} did not stop in time", o.url);
    served.unwrap().unwrap().unwrap();
}

fn listings(probe: &ProbeMcp) -> usize {
    probe.requests().iter().filter(|r| r["rpc"] == "tools/list").count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_orchestrators_run_in_one_process_without_sharing_actors() {
    let (model, probes) = tokio::task::spawn_blocking(|| (ScriptedModel::start(), [ProbeMcp::start(), ProbeMcp::start()]))
        .await
        .unwrap();
    for (i, probe) in probes.iter().enumerate() {
        probe.set_tools(
            json!([{"name": format!("lookup_{i}"), "description": "Looks up.", "inputSchema": {"type": "object"},
                                "annotations": {"readOnlyHint": true}, "reply": {"text": "found"}}]),
        );
    }
    let first = start(&model.url(), &probes[0].url()).await;
    let second = start(&model.url(), &probes[1].url()).await;
    assert!(!first.served.is_finished() && !second.served.is_finished(), "both started");
    let http = reqwest::Client::builder().timeout(Duration::from_secs(60)).build().unwrap();

    assert_eq!(chat(&http, &first, "c-first", "hello first").await, "You said: hello first");
    assert_eq!(chat(&http, &second, "c-second", "hello second").await, "You said: hello second");
    // Each orchestrator's own tool-server actor listed its own server.
    let seen = tokio::task::spawn_blocking(move || {
        let seen = (listings(&probes[0]), listings(&probes[1]));
        (seen, probes)
    });
    let ((first_listed, second_listed), _probes) = seen.await.unwrap();
    assert!(first_listed >= 1 && second_listed >= 1, "listings: {first_listed}, {second_listed}");

    // Stopping one leaves the other whole: its actors were never the other's.
    stop(first).await;
    assert_eq!(chat(&http, &second, "c-after", "still here").await, "You said: still here");
    stop(second).await;
    drop(model);
}
