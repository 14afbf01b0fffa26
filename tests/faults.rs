//! Fault tests with real processes (issue #32): what breaks in a deployment, injected for
//! real — a tool server killed with SIGKILL in the middle of a call, a tool server that stays
//! down past its restart limit, and a model that cuts its stream mid-chunk, stalls after its
//! first chunk, rate-limits or answers a web page. Each case ends in the documented part with
//! the request id (or the documented fallback), never a hang; the supervision events are read
//! back from the OTLP export, decoded. docs/testing.md, "Fault tests", lists what is covered
//! here and what elsewhere.
#![expect(clippy::unwrap_used, clippy::panic, reason = "helpers of a test file fail the test by panicking")]

use reqwest::Method;
use serde_json::{Value, json};
use std::time::Duration;
use test_harness::orchestrator::{Options, Orchestrator, parts, read_sse, user_turn};
use test_harness::otlp::{OtlpReceiver, ReceivedSpan};
use test_harness::probe_mcp::ProbeMcp;
use test_harness::scripted_model::ScriptedModel;

/// Long enough for anything here to finish; a test that hangs fails at this bound instead.
const BOUND: Duration = Duration::from_secs(60);

fn client() -> reqwest::Client {
    reqwest::Client::builder().no_proxy().timeout(BOUND).build().unwrap()
}

/// The probe's tools: one that never answers (the call in flight when the server is killed)
/// and one that answers at once. Read-only, so a `trust=reads` server runs them unasked.
fn probe_tools() -> Value {
    json!([
        {"name": "slow_lookup", "description": "Looks something up, slowly.", "inputSchema": {"type": "object"},
         "annotations": {"readOnlyHint": true}, "reply": {"silent": true}},
        {"name": "quick_lookup", "description": "Looks something up.", "inputSchema": {"type": "object"},
         "annotations": {"readOnlyHint": true}, "reply": {"text": "found it"}}
    ])
}

fn otel_env(otlp: &OtlpReceiver) -> Vec<(String, String)> {
    vec![
        ("OTEL_EXPORTER_OTLP_ENDPOINT".into(), otlp.endpoint().to_string()),
        ("OTEL_BSP_SCHEDULE_DELAY".into(), "200".into()),
        ("OTEL_METRIC_EXPORT_INTERVAL".into(), "60000".into()),
    ]
}

/// One turn with its own request id; the parts of its stream (which must end with `[DONE]`).
async fn turn(orch: &Orchestrator, uid: &str, conversation: &str, message_id: &str, text: &str, request_id: &str) -> Vec<Value> {
    let body = user_turn(conversation, message_id, text);
    let response = orch
        .request(&client(), Method::POST, "/v1/chat", uid, &body, None)
        .header("x-request-id", request_id)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let frames = read_sse(response).await;
    assert_eq!(frames.last().map(String::as_str), Some("[DONE]"), "{frames:?}");
    parts(&frames)
}

fn of_type<'a>(parts: &'a [Value], kind: &str) -> Vec<&'a Value> {
    parts.iter().filter(|p| p["type"] == kind).collect()
}

fn text_of(parts: &[Value]) -> String {
    of_type(parts, "text-delta")
        .iter()
        .map(|p| p["delta"].as_str().unwrap_or(""))
        .collect()
}

/// The supervision spans about the probe's tool-server actor, as `(event, reason)`.
fn probe_events(spans: &[ReceivedSpan]) -> Vec<(String, String)> {
    spans
        .iter()
        .filter(|s| s.name.ends_with(" tool-server") && s.attr("tamebi.actor.name") == Some("tool-server:probe"))
        .filter_map(|s| {
            let event = s.attr("tamebi.supervision.event")?.to_string();
            Some((event, s.attr("tamebi.supervision.reason").unwrap_or("").to_string()))
        })
        .collect()
}

async fn healthz(orch: &Orchestrator) -> Value {
    client()
        .get(format!("{}/healthz", orch.url()))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

/// A tool server killed with SIGKILL while a call is in flight: the turn gets a tool error part
/// carrying its request id, the tool-server actor crashes and is restarted (both exported and
/// decoded from the trace), the next turn works once the server is back, and a conversation
/// streaming at the same time never notices.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_server_killed_mid_call_is_a_crash_and_a_restart_and_nobody_else_notices() {
    let otlp = OtlpReceiver::start();
    let (model, mut probe) = tokio::task::spawn_blocking(|| (ScriptedModel::start(), ProbeMcp::start()))
        .await
        .unwrap();
    probe.set_tools(probe_tools());
    model.add_rules(json!([
        {"match": "look it up", "steps": [
            {"tool_calls": [{"name": "slow_lookup", "arguments": {}}]},
            {"text": "The lookup failed."}]},
        {"match": "try again", "steps": [
            {"tool_calls": [{"name": "quick_lookup", "arguments": {}}]},
            {"text": "The lookup worked."}]},
        {"match": "tell a story", "steps": [
            {"text": "Once upon a time a server was killed, and this story went on regardless.", "chunk_chars": 2, "delay_ms": 40}]}
    ]));
    let options = Options {
        model_url: model.url(),
        mcp_servers: format!("probe={};auth=none;trust=reads", probe.url()),
        extra_env: otel_env(&otlp),
    };
    let orch = tokio::task::spawn_blocking(move || Orchestrator::start(options)).await.unwrap();

    // Bob's conversation streams throughout, on its own, while Alice's call is in flight when
    // the server dies (once the probe recorded it).
    let bystander = turn(&orch, "bob", "story", "m1", "tell a story", "req-story");
    let victim = turn(&orch, "alice", "lookup", "m1", "look it up", "req-kill");
    let kill = tokio::task::spawn_blocking(move || {
        assert!(
            test_harness::wait_until(BOUND, || !probe.calls_of("slow_lookup").is_empty()),
            "the call never reached the probe"
        );
        probe.kill9();
        probe
    });
    let (story, p, probe) = tokio::join!(bystander, victim, kill);
    let probe = probe.unwrap();
    let errors = of_type(&p, "tool-output-error");
    assert_eq!(errors.len(), 1, "{p:?}");
    let error_text = errors[0]["errorText"].as_str().unwrap();
    assert!(error_text.contains("(request id: req-kill)"), "{error_text}");
    assert!(error_text.contains("It is not known whether it did anything"), "{error_text}");
    assert_eq!(text_of(&p), "The lookup failed.");
    assert!(of_type(&p, "error").is_empty(), "the turn itself went on: {p:?}");

    // The actor's crash and restart, as exported and decoded.
    let spans = otlp.wait_for_spans(BOUND, |spans| {
        let events = probe_events(spans);
        events.iter().any(|(e, _)| e == "crashed") && events.iter().any(|(e, _)| e == "restarted")
    });
    let events = probe_events(&spans);
    let crash = events.iter().find(|(e, _)| e == "crashed").unwrap();
    assert!(crash.1.contains("probe is unreachable"), "{events:?}");
    let crashed = spans
        .iter()
        .find(|s| s.name == "crashed tool-server" && s.attr("tamebi.actor.name") == Some("tool-server:probe"))
        .unwrap();
    assert_eq!(crashed.status_code, 2, "a crash is an error in the trace");
    assert!(crashed.events.iter().any(|(name, _)| name == "crashed"));
    // The restarted actor has a start span of its own under the root.
    let starts = spans
        .iter()
        .filter(|s| s.name == "start tool-server" && s.attr("tamebi.actor.name") == Some("tool-server:probe"))
        .count();
    assert!(starts >= 2, "the first start and the restart: {starts}");

    // The server comes back on its address: the next turn works.
    let _probe = tokio::task::spawn_blocking(move || {
        let mut probe = probe;
        probe.restart();
        probe.set_tools(probe_tools());
        probe
    })
    .await
    .unwrap();
    let p = turn(&orch, "alice", "lookup", "m2", "try again", "req-again").await;
    assert_eq!(of_type(&p, "tool-output-available").len(), 1, "{p:?}");
    assert!(of_type(&p, "tool-output-error").is_empty(), "{p:?}");
    assert_eq!(text_of(&p), "The lookup worked.");

    // Bob's story arrived whole, without an error.
    let p = story;
    assert_eq!(
        text_of(&p),
        "Once upon a time a server was killed, and this story went on regardless."
    );
    assert!(of_type(&p, "error").is_empty(), "{p:?}");
    assert_eq!(p.last().unwrap()["type"], "finish");
    assert_eq!(healthz(&orch).await["status"], "ok");
}

/// A tool server that stays down crashes its actor on every call; past the restart limit it
/// is taken out of service, not the process: the person is told plainly which server is
/// unavailable and gets a reply without its tools, the operator sees an error in the log, the
/// `restart-limit-reached` event in the trace and a degraded `/healthz` naming it, and once the
/// window has passed the server is tried again and its tools are back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_server_past_its_restart_limit_is_unavailable_and_the_process_keeps_serving() {
    const WINDOW_SECS: u64 = 8;
    let otlp = OtlpReceiver::start();
    let (model, mut probe) = tokio::task::spawn_blocking(|| (ScriptedModel::start(), ProbeMcp::start()))
        .await
        .unwrap();
    probe.set_tools(probe_tools());
    model.add_rules(json!([
        {"match": "use the tool", "steps": [
            {"tool_calls": [{"name": "quick_lookup", "arguments": {}}]},
            {"text": "Tool used."}]}
    ]));
    let mut env = otel_env(&otlp);
    env.push(("TAMEBI_RESTART_WINDOW_SECS".into(), WINDOW_SECS.to_string()));
    let options = Options {
        model_url: model.url(),
        mcp_servers: format!("probe={};auth=none;trust=reads", probe.url()),
        extra_env: env,
    };
    let mut orch = tokio::task::spawn_blocking(move || Orchestrator::start(options)).await.unwrap();
    let probe = tokio::task::spawn_blocking(move || {
        probe.kill9();
        probe
    })
    .await
    .unwrap();

    // Every turn lists the server's tools, finds it gone and crashes its actor; the turns
    // themselves answer (without its tools) until the limit is passed.
    let mut turns = 0;
    while healthz(&orch).await["status"] == "ok" {
        turns += 1;
        assert!(turns <= 10, "no restart limit after {turns} turns");
        let p = turn(
            &orch,
            "alice",
            &format!("down-{turns}"),
            "m1",
            "hello",
            &format!("req-down-{turns}"),
        )
        .await;
        assert_eq!(p.last().unwrap()["type"], "finish", "{p:?}");
        // The crash is reported after the turn's listing failed; give it a moment to land.
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let health = healthz(&orch).await;
    assert_eq!(health["status"], "degraded", "{health}");
    let down = &health["unavailableToolServers"][0];
    assert_eq!(down["server"], "probe", "{health}");
    assert!(down["reason"].as_str().unwrap().contains("probe is unreachable"), "{health}");
    assert!(down["retryAtUnixMs"].as_i64().unwrap() > down["sinceUnixMs"].as_i64().unwrap());

    // What the person sees: a reply, and plainly which server's tools are missing.
    model.clear_requests();
    let p = turn(&orch, "carol", "while-down", "m1", "hello there", "req-while-down").await;
    let note = of_type(&p, "data-tools-unavailable");
    assert_eq!(note.len(), 1, "{p:?}");
    assert_eq!(note[0]["data"]["servers"], json!(["probe"]));
    assert!(note[0]["data"]["message"].as_str().unwrap().contains("probe"));
    assert_eq!(text_of(&p), "You said: hello there");
    let offered: Vec<String> = model.requests()[0]["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["function"]["name"].as_str().map(str::to_string))
        .collect();
    assert!(
        offered.iter().all(|n| !n.contains("lookup")),
        "withdrawn tools offered: {offered:?}"
    );
    // The stored message does not keep the live note.
    let conv = orch.get_json(&client(), "/v1/conversations/while-down", "carol").await;
    assert!(!conv.to_string().contains("data-tools-unavailable"), "{conv}");

    // What the operator sees: the log and the trace.
    assert!(
        orch.process().logs().contains("tool server restart limit reached"),
        "an error in the log"
    );
    let spans = otlp.wait_for_spans(BOUND, |spans| probe_events(spans).iter().any(|(e, _)| e == "restart-limit-reached"));
    let events = probe_events(&spans);
    let crashes = events.iter().filter(|(e, _)| e == "crashed").count();
    let restarts = events.iter().filter(|(e, _)| e == "restarted").count();
    assert_eq!((crashes, restarts), (6, 5), "{events:?}");
    let limit = spans.iter().find(|s| s.name == "restart-limit-reached tool-server").unwrap();
    assert_eq!(limit.status_code, 2);

    // The server comes back; after the window it is tried again and its tools return.
    let _probe = tokio::task::spawn_blocking(move || {
        let mut probe = probe;
        probe.restart();
        probe.set_tools(probe_tools());
        probe
    })
    .await
    .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(WINDOW_SECS) + BOUND;
    while healthz(&orch).await["status"] != "ok" {
        assert!(std::time::Instant::now() < deadline, "never retried");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let p = turn(&orch, "alice", "after", "m1", "use the tool", "req-after").await;
    assert_eq!(of_type(&p, "tool-output-available").len(), 1, "{p:?}");
    assert!(of_type(&p, "data-tools-unavailable").is_empty());
    assert_eq!(text_of(&p), "Tool used.");
}

/// The model failing in the four ways real providers do. Each ends in the documented `error`
/// part with the request id — or, for a rate limit the fallback model can absorb, in the
/// fallback's answer — and never in a hang (every read is bounded by [`BOUND`]).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn model_faults_end_in_the_documented_part_never_a_hang() {
    let model = tokio::task::spawn_blocking(ScriptedModel::start).await.unwrap();
    model.add_rules(json!([
        {"match": "cut mid chunk", "steps": [
            {"text": "Half an answer and then", "abort_after_chars": 8, "mid_chunk": true, "chunk_chars": 4}]},
        {"match": "stall please", "steps": [{"text": "I will stop here", "stall_after_chars": 6, "chunk_chars": 3}]},
        {"match": "rate limited once", "model": "primary", "steps": [
            {"error": {"status": 429, "message": "slow down", "retry_after_secs": 7}}]},
        {"match": "rate limited once", "model": "backup", "steps": [{"text": "The backup answered."}]},
        {"match": "rate limited everywhere", "steps": [
            {"error": {"status": 429, "message": "slow down", "retry_after_secs": 7}}]},
        {"match": "portal page", "steps": [{"html": "<html><body><h1>Sign in to the Wi-Fi</h1></body></html>"}]}
    ]));
    let options = Options {
        model_url: model.url(),
        extra_env: vec![
            ("TAMEBI_MODEL".into(), "primary".into()),
            ("TAMEBI_FALLBACK_MODEL".into(), "backup".into()),
            ("TAMEBI_MODEL_IDLE_SECS".into(), "2".into()),
        ],
        ..Options::default()
    };
    let orch = tokio::task::spawn_blocking(move || Orchestrator::start(options)).await.unwrap();
    let error_of = |p: &[Value]| -> String {
        let errors = of_type(p, "error");
        assert_eq!(errors.len(), 1, "{p:?}");
        errors[0]["errorText"].as_str().unwrap().to_string()
    };

    let p = turn(&orch, "alice", "cut", "m1", "cut mid chunk", "req-cut").await;
    assert_eq!(text_of(&p), "Half an ", "what arrived before the cut is kept");
    assert_eq!(error_of(&p), "Something went wrong. Please try again. (request id: req-cut)");

    let started = std::time::Instant::now();
    let p = turn(&orch, "alice", "stall", "m1", "stall please", "req-stall").await;
    assert_eq!(text_of(&p), "I will");
    assert_eq!(error_of(&p), "Something went wrong. Please try again. (request id: req-stall)");
    // Ended by the idle bound, not by the whole call's (300 s): printed, not asserted.
    println!("stalled stream ended after {:?} (TAMEBI_MODEL_IDLE_SECS=2)", started.elapsed());

    let p = turn(&orch, "alice", "rate1", "m1", "rate limited once", "req-rate1").await;
    assert_eq!(text_of(&p), "The backup answered.", "the documented fallback: {p:?}");
    assert!(of_type(&p, "error").is_empty());

    let p = turn(&orch, "alice", "rate2", "m1", "rate limited everywhere", "req-rate2").await;
    assert_eq!(error_of(&p), "Too many requests. Please wait a moment. (request id: req-rate2)");

    let p = turn(&orch, "alice", "html", "m1", "portal page", "req-html").await;
    assert_eq!(error_of(&p), "Something went wrong. Please try again. (request id: req-html)");
    assert!(!format!("{p:?}").contains("Wi-Fi"), "the page never reaches the person");

    // The provider's trouble is in the log under each request id.
    let mut orch = orch;
    let logs = orch.process().logs();
    for needle in ["stream stalled", "rate-limiting", "answered text/html"] {
        assert!(logs.contains(needle), "{needle} missing from the log");
    }
    // And the orchestrator still answers normally.
    let p = turn(&orch, "alice", "fine", "m1", "all good?", "req-fine").await;
    assert_eq!(text_of(&p), "You said: all good?");
}

/// Conversations for the SIGTERM test: 1,000, one user each (as many people as streams).
const STREAMS: usize = 1000;

/// The text each stream shows before its model stalls (and the shutdown arrives).
const BEFORE_STALL: &str = "Here is what";

/// Opens the stream of conversation `i`, counts it in `ready` once its first text arrived
/// (the turn is then past its committed tool call), and reads it to its end.
async fn held_stream(
    http: reqwest::Client,
    base: String,
    i: usize,
    opening: std::sync::Arc<tokio::sync::Semaphore>,
    ready: std::sync::Arc<std::sync::atomic::AtomicUsize>,
) -> (usize, String) {
    let permit = opening.acquire_owned().await.unwrap();
    let body = user_turn(&format!("c{i}"), "m1", "remember and talk");
    let mut response = Orchestrator::request_at(&http, &base, Method::POST, "/v1/chat", &format!("u{i}"), &body, &[])
        .header("x-request-id", format!("req-{i}"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200, "stream {i}");
    let mut seen = String::new();
    while !seen.contains("\"text-delta\"") {
        let chunk = response
            .chunk()
            .await
            .unwrap()
            .unwrap_or_else(|| panic!("stream {i} ended early: {seen}"));
        seen.push_str(&String::from_utf8_lossy(&chunk));
    }
    drop(permit);
    ready.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    while let Some(chunk) = response.chunk().await.unwrap() {
        seen.push_str(&String::from_utf8_lossy(&chunk));
    }
    (i, seen)
}

/// SIGTERM with 1,000 streams open: every stream ends with the documented marker (the
/// "service is restarting" error part with its request id, then `[DONE]`) that tells the
/// client to come back; the process exits cleanly; after a restart every conversation
/// answers its resume (`GET /v1/chat/{id}/stream`: nothing in flight any more), still holds
/// everything committed (the user message, the finished tool call), carries the interrupted
/// reply's marker and goes on with a new turn.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_with_a_thousand_open_streams_ends_each_resumably_and_loses_nothing() {
    use futures::StreamExt;
    let limit = test_harness::process::raise_nofile_limit();
    // The orchestrator holds two descriptors per stream (the client's, the model's).
    assert!(
        limit >= 2 * STREAMS as u64 + 512,
        "the open-file hard limit ({limit}) is too low for {STREAMS} streams: raise it (ulimit -Hn)"
    );
    let model = tokio::task::spawn_blocking(ScriptedModel::start).await.unwrap();
    model.add_rules(json!([
        {"match": "remember and talk", "steps": [
            {"tool_calls": [{"name": "memory_list", "arguments": {}}]},
            {"text": format!("{BEFORE_STALL} so far, and more would come"), "stall_after_chars": BEFORE_STALL.len()}]}
    ]));
    let options = Options {
        model_url: model.url(),
        extra_env: vec![("TAMEBI_SHUTDOWN_SECS".into(), "20".into())],
        ..Options::default()
    };
    let mut orch = tokio::task::spawn_blocking(move || Orchestrator::start(options)).await.unwrap();
    let http = reqwest::Client::builder().no_proxy().timeout(BOUND).build().unwrap();
    let base = orch.url();

    let started = std::time::Instant::now();
    let opening = std::sync::Arc::new(tokio::sync::Semaphore::new(64));
    let ready = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let mut streams = tokio::task::JoinSet::new();
    for i in 0..STREAMS {
        streams.spawn(held_stream(http.clone(), base.clone(), i, opening.clone(), ready.clone()));
    }
    let deadline = std::time::Instant::now() + BOUND;
    while ready.load(std::sync::atomic::Ordering::SeqCst) < STREAMS {
        assert!(
            std::time::Instant::now() < deadline,
            "only {} streams opened",
            ready.load(std::sync::atomic::Ordering::SeqCst)
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    println!("{STREAMS} streams open after {:?}", started.elapsed());

    let term = std::time::Instant::now();
    let pid = orch.pid();
    std::process::Command::new("kill")
        .arg("-TERM")
        .arg(pid.to_string())
        .status()
        .unwrap();
    let mut ended = 0;
    while let Some(stream) = streams.join_next().await {
        let (i, body) = stream.unwrap();
        ended += 1;
        let frames = test_harness::orchestrator::parse_sse(&body);
        assert_eq!(frames.last().map(String::as_str), Some("[DONE]"), "stream {i}: {frames:?}");
        let p = parts(&frames);
        assert_eq!(
            error_of_stream(&p, i),
            format!("The service is restarting. Please try again in a moment. (request id: req-{i})")
        );
        assert_eq!(of_type(&p, "tool-output-available").len(), 1, "stream {i}: {p:?}");
        assert_eq!(text_of(&p), BEFORE_STALL, "stream {i}");
    }
    assert_eq!(ended, STREAMS);
    let code = tokio::task::block_in_place(|| orch.process().terminate(Duration::from_secs(40)));
    assert_eq!(code, Some(0), "a clean exit after SIGTERM");
    println!("every stream ended and the process exited {:?} after SIGTERM", term.elapsed());

    let restart = std::time::Instant::now();
    tokio::task::block_in_place(|| orch.start_again());
    let orch = &orch;
    let checks = futures::stream::iter(0..STREAMS)
        .map(|i| {
            let http = http.clone();
            async move { resumed(orch, &http, i).await }
        })
        .buffer_unordered(32)
        .collect::<Vec<()>>()
        .await;
    assert_eq!(checks.len(), STREAMS);
    println!(
        "{STREAMS} conversations resumed and continued after the restart in {:?}",
        restart.elapsed()
    );
}

/// The one `error` part of stream `i`.
fn error_of_stream(p: &[Value], i: usize) -> String {
    let errors = of_type(p, "error");
    assert_eq!(errors.len(), 1, "stream {i}: {p:?}");
    errors[0]["errorText"].as_str().unwrap().to_string()
}

/// Conversation `i` after the restart: its resume answers, its committed parts are there, it
/// goes on, and its cut reply carries the interrupted marker with the cut turn's request id.
async fn resumed(orch: &Orchestrator, http: &reqwest::Client, i: usize) {
    let (uid, conversation) = (format!("u{i}"), format!("c{i}"));
    let r = orch
        .request(http, Method::GET, &format!("/v1/chat/{conversation}/stream"), &uid, b"", None)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 204, "conversation {i}: nothing in flight after the restart");
    let conv = orch.get_json(http, &format!("/v1/conversations/{conversation}"), &uid).await;
    let messages = conv["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 2, "conversation {i}: {conv}");
    assert_eq!(messages[0]["role"], "user");
    let tool = messages[1]["parts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["type"] == "dynamic-tool")
        .unwrap_or_else(|| panic!("conversation {i}: the committed tool call is lost: {conv}"));
    assert_eq!(tool["toolName"], "memory_list");
    assert_eq!(tool["state"], "output-available", "conversation {i}: {tool}");

    let body = user_turn(&conversation, "m2", "go on");
    let r = orch
        .request(http, Method::POST, "/v1/chat", &uid, &body, None)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200, "conversation {i}");
    let p = parts(&read_sse(r).await);
    assert_eq!(text_of(&p), "You said: go on", "conversation {i}: {p:?}");
    let conv = orch.get_json(http, &format!("/v1/conversations/{conversation}"), &uid).await;
    let interrupted = conv["messages"][1]["parts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["type"] == "data-interrupted")
        .cloned()
        .unwrap_or_else(|| panic!("conversation {i}: no interrupted marker: {conv}"));
    assert_eq!(interrupted["data"]["requestId"], format!("req-{i}"), "{interrupted}");
}
