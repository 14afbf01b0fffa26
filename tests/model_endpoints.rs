//! End to end: several model endpoints (issue #17). `TAMEBI_MODEL_URL` lists one endpoint
//! that refuses connections, one that accepts and never answers, and the scripted model.
//! The turn is served by the third within the first-chunk timeout; on the next turn the
//! circuit breaker skips the two dead ones (seen in connection counts, not in timing).
//! And the operator's token bounds: per call (sent as `max_tokens`) and per turn.
#![expect(clippy::unwrap_used, reason = "a test fails by panicking")]

use reqwest::Method;
use serde_json::json;
use std::net::TcpListener;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use test_harness::orchestrator::{Options, Orchestrator, parts, read_sse, user_turn};
use test_harness::probe_mcp::ProbeMcp;
use test_harness::scripted_model::ScriptedModel;

/// A TCP listener that accepts connections, counts them, and never answers.
fn hanging_endpoint() -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let count = Arc::new(AtomicUsize::new(0));
    let seen = count.clone();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming().flatten() {
            seen.fetch_add(1, Ordering::SeqCst);
            held.push(stream);
        }
    });
    (format!("http://127.0.0.1:{port}/v1"), count)
}

/// A loopback port with nothing listening on it.
fn refusing_endpoint() -> String {
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    format!("http://127.0.0.1:{port}/v1")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dead_endpoints_are_passed_over_then_skipped() {
    let begun = std::time::Instant::now();
    let model = tokio::task::spawn_blocking(ScriptedModel::start).await.unwrap();
    model.add_rules(json!([{"match": "endpoint", "steps": [{"text": "Served."}]}]));
    let (hanging, connections) = hanging_endpoint();
    let urls = format!("{},{hanging},{}", refusing_endpoint(), model.url());
    let options = Options {
        model_url: urls,
        extra_env: vec![
            ("TAMEBI_MODEL_FIRST_CHUNK_SECS".into(), "2".into()),
            ("TAMEBI_MODEL_BACKOFF_SECS".into(), "600".into()),
        ],
        ..Options::default()
    };
    let orch = tokio::task::spawn_blocking(move || Orchestrator::start(options)).await.unwrap();
    let http = reqwest::Client::builder().timeout(Duration::from_secs(60)).build().unwrap();
    println!("stack started in {} ms", begun.elapsed().as_millis());

    let turn = |cid: &'static str| {
        let body = user_turn(cid, &format!("m-{cid}"), "which endpoint answers?");
        let rb = orch.request(&http, Method::POST, "/v1/chat", "alice", &body, None);
        async move {
            let r = rb.send().await.unwrap();
            assert_eq!(r.status(), 200);
            parts(&read_sse(r).await)
        }
    };
    let text = |p: &[serde_json::Value]| -> String {
        p.iter()
            .filter(|x| x["type"] == "text-delta")
            .map(|x| x["delta"].as_str().unwrap_or("").to_string())
            .collect()
    };

    let started = std::time::Instant::now();
    let first = turn("endpoint-1").await;
    println!("first turn (through both dead endpoints): {} ms", started.elapsed().as_millis());
    assert_eq!(text(&first), "Served.", "{first:?}");
    assert_eq!(connections.load(Ordering::SeqCst), 1, "the hanging endpoint was tried once");
    assert_eq!(model.requests().len(), 1);

    let started = std::time::Instant::now();
    let second = turn("endpoint-2").await;
    println!("second turn (dead endpoints skipped): {} ms", started.elapsed().as_millis());
    assert_eq!(text(&second), "Served.", "{second:?}");
    assert_eq!(
        connections.load(Ordering::SeqCst),
        1,
        "the breaker did not skip the hanging endpoint on the next turn"
    );
    assert_eq!(model.requests().len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_stops_at_the_operators_token_bound() {
    let (model, probe) = tokio::task::spawn_blocking(|| {
        let probe = ProbeMcp::start();
        probe.set_tools(
            json!([{"name": "probe_lookup", "description": "Looks something up.", "inputSchema": {"type": "object"},
                                "annotations": {"readOnlyHint": true}, "reply": {"text": "found"}}]),
        );
        (ScriptedModel::start(), probe)
    })
    .await
    .unwrap();
    // The first call reports 5,000 tokens used; the turn's bound is 1,000.
    model.add_rules(json!([{"match": "bounded", "steps": [
        {"tool_calls": [{"name": "probe_lookup", "arguments": {}}], "usage": {"prompt_tokens": 5000}},
        {"text": "A second call that must not happen."}
    ]}]));
    let options = Options {
        model_url: model.url(),
        mcp_servers: format!("probe={};trust=reads", probe.url()),
        extra_env: vec![
            ("TAMEBI_TURN_MAX_TOKENS".into(), "1000".into()),
            ("TAMEBI_MODEL_MAX_TOKENS".into(), "64".into()),
        ],
    };
    let orch = tokio::task::spawn_blocking(move || Orchestrator::start(options)).await.unwrap();
    let http = reqwest::Client::builder().timeout(Duration::from_secs(60)).build().unwrap();
    let body = user_turn("bounded", "m-bounded", "bounded lookup");
    let r = orch
        .request(&http, Method::POST, "/v1/chat", "alice", &body, Some("app-password"))
        .send()
        .await
        .unwrap();
    let p = parts(&read_sse(r).await);
    assert_eq!(probe.calls_of("probe_lookup").len(), 1, "the first step's call ran: {p:?}");
    let sent = model.requests();
    assert_eq!(sent.len(), 1, "a model call past the turn's token bound: {p:?}");
    assert_eq!(sent[0]["max_tokens"], 64);
    assert_eq!(sent[0]["stream_options"], json!({"include_usage": true}));
    let error = p.iter().find(|x| x["type"] == "error").unwrap();
    assert!(error["errorText"].as_str().unwrap().contains("token limit"), "{error}");
}

/// Issue #16: with `TAMEBI_MODEL_HTTP2=prior-knowledge` model streams travel over HTTP/2 (h2c),
/// several on one connection, and more connections are opened when the provider's per-connection
/// stream limit is reached (here 2, with 5 streams open at once): every turn completes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn model_streams_are_multiplexed_over_http2() {
    let model = tokio::task::spawn_blocking(|| ScriptedModel::start_h2c(2)).await.unwrap();
    // Slow enough that all five streams are open at the same time.
    model
        .add_rules(json!([{"match": "multiplexed", "steps": [{"text": "over one of few connections", "chunk_chars": 4, "delay_ms": 50}]}]));
    let options = Options {
        model_url: model.url(),
        extra_env: vec![
            ("TAMEBI_MODEL_HTTP2".into(), "prior-knowledge".into()),
            ("TAMEBI_MODEL_STREAMS_PER_CONNECTION".into(), "2".into()),
        ],
        ..Options::default()
    };
    let orch = Arc::new(tokio::task::spawn_blocking(move || Orchestrator::start(options)).await.unwrap());
    let http = reqwest::Client::builder().timeout(Duration::from_secs(60)).build().unwrap();
    let mut turns = tokio::task::JoinSet::new();
    for i in 0..5 {
        let (orch, http) = (orch.clone(), http.clone());
        turns.spawn(async move {
            let cid = format!("h2-{i}");
            let body = user_turn(&cid, &format!("m-{cid}"), "multiplexed please");
            let r = orch
                .request(&http, Method::POST, "/v1/chat", "alice", &body, None)
                .send()
                .await
                .unwrap();
            assert_eq!(r.status(), 200);
            parts(&read_sse(r).await)
        });
    }
    while let Some(p) = turns.join_next().await {
        let p = p.unwrap();
        let text: String = p
            .iter()
            .filter(|x| x["type"] == "text-delta")
            .map(|x| x["delta"].as_str().unwrap_or("").to_string())
            .collect();
        assert_eq!(text, "over one of few connections", "{p:?}");
    }
    let log = model.request_log();
    assert_eq!(log.len(), 5);
    assert!(log.iter().all(|e| e["httpVersion"] == "HTTP/2.0"), "{log:?}");
}
