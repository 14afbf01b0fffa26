//! What an operator sees in an OTLP backend, read back from a real OTLP/HTTP receiver (the
//! harness decodes every export with the opentelemetry-proto crate): one trace per turn from
//! the HTTP request through the model and tool calls into mcp-nextcloud and its Nextcloud
//! requests; the supervision tree and its events as they happen; metrics; no credential, uid,
//! message text or tool output anywhere; and the last spans flushed on SIGTERM.
#![expect(clippy::unwrap_used, clippy::panic, reason = "helpers of a test file fail the test by panicking")]

use reqwest::Method;
use serde_json::{Value, json};
use std::time::Duration;
use test_harness::mcp_nextcloud::McpNextcloud;
use test_harness::orchestrator::{Options, Orchestrator, PROXY_SECRET, SIGNING_SECRET, parts, read_sse, user_turn};
use test_harness::otlp::{OtlpReceiver, ReceivedSpan};
use test_harness::scripted_model::ScriptedModel;
use test_harness::standin::Standin;

const WAIT: Duration = Duration::from_secs(30);

fn client() -> reqwest::Client {
    reqwest::Client::builder().no_proxy().build().unwrap()
}

/// Export settings for a test: short batch and metric intervals, so spans arrive while the
/// process runs (the standard OpenTelemetry SDK variables).
fn otel_env(otlp: &OtlpReceiver, batch_delay_ms: u32, metric_interval_ms: u32) -> Vec<(String, String)> {
    vec![
        ("OTEL_EXPORTER_OTLP_ENDPOINT".into(), otlp.endpoint().to_string()),
        ("OTEL_BSP_SCHEDULE_DELAY".into(), batch_delay_ms.to_string()),
        ("OTEL_METRIC_EXPORT_INTERVAL".into(), metric_interval_ms.to_string()),
    ]
}

/// A signed chat turn with a request id and (optionally) the user's Nextcloud bearer.
async fn chat(orch: &Orchestrator, uid: &str, conversation: &str, text: &str, request_id: &str, bearer: Option<&str>) -> Vec<Value> {
    let response = orch
        .request(
            &client(),
            Method::POST,
            "/v1/chat",
            uid,
            &user_turn(conversation, "m1", text),
            bearer,
        )
        .header("x-request-id", request_id)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    parts(&read_sse(response).await)
}

fn by_name<'a>(spans: &'a [ReceivedSpan], service: &str, name: &str) -> Vec<&'a ReceivedSpan> {
    spans.iter().filter(|s| s.service == service && s.name == name).collect()
}

fn turn_span<'a>(spans: &'a [ReceivedSpan], request_id: &str) -> Option<&'a ReceivedSpan> {
    spans
        .iter()
        .find(|s| s.service == "tamebi" && s.name == "turn" && s.attr("request_id") == Some(request_id))
}

fn span_by_id<'a>(spans: &'a [ReceivedSpan], id: &str) -> &'a ReceivedSpan {
    spans
        .iter()
        .find(|s| s.span_id == id)
        .unwrap_or_else(|| panic!("no span {id} among {:#?}", names(spans)))
}

fn names(spans: &[ReceivedSpan]) -> Vec<String> {
    spans.iter().map(|s| format!("{}:{} ({})", s.service, s.name, s.span_id)).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_is_one_trace_and_the_supervision_tree_is_visible() {
    let otlp = OtlpReceiver::start();
    let nc = Standin::start_seeded();
    let endpoint = otlp.endpoint().to_string();
    let mcp = McpNextcloud::start_with(
        nc.url(),
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str()),
            ("OTEL_BSP_SCHEDULE_DELAY", "200"),
            ("OTEL_METRIC_EXPORT_INTERVAL", "500"),
        ],
    );
    let model = ScriptedModel::start();
    model.add_rules(json!([
        {"match": "read my secret file", "steps": [
            {"tool_calls": [{"name": "files_read", "arguments": {"path": "/private/secret.txt"}}], "usage": {"prompt_tokens": 123, "completion_tokens": 45}},
            {"text": "Done reading."}
        ]},
        {"match": "crash me", "steps": [{"text": "about to FAULT:panic-actor now", "chunk_chars": 100}]}
    ]));
    let mut orch = Orchestrator::start(Options {
        model_url: model.url(),
        mcp_servers: format!("nextcloud={};auth=nextcloud", mcp.url()),
        extra_env: otel_env(&otlp, 200, 500),
    });
    let alice_bearer = nc.app_password("alice").to_string();

    // A turn that calls a tool.
    let answer = chat(
        &orch,
        "alice",
        "otel-conv-1",
        "please read my secret file",
        "req-otel-1",
        Some(&alice_bearer),
    )
    .await;
    let output = answer
        .iter()
        .find(|p| p["type"] == "tool-output-available")
        .unwrap_or_else(|| panic!("the tool ran: {answer:#?}"));
    assert!(
        output.to_string().contains("payroll figures"),
        "the tool output is what the test later searches for"
    );

    let spans = otlp.wait_for_spans(WAIT, |spans| {
        turn_span(spans, "req-otel-1").is_some_and(|t| {
            spans
                .iter()
                .any(|s| s.service == "mcp-nextcloud" && s.name.starts_with("GET ") && s.trace_id == t.trace_id)
                // The tool call's own server spans, not only the listing's (they may come in a later batch).
                && spans
                    .iter()
                    .any(|s| s.service == "mcp-nextcloud" && s.name == "tools/call files_read" && s.trace_id == t.trace_id)
                && spans
                    .iter()
                    .filter(|s| s.trace_id == t.trace_id && s.name.starts_with("chat "))
                    .count()
                    >= 2
        })
    });
    assert_eq!(otlp.undecodable(), 0, "every export is valid OTLP protobuf");
    let turn = turn_span(&spans, "req-otel-1").unwrap_or_else(|| panic!("no turn span: {:#?}", names(&spans)));
    let trace: Vec<&ReceivedSpan> = spans.iter().filter(|s| s.trace_id == turn.trace_id).collect();
    let in_trace = |service: &str, name: &str| -> Vec<&ReceivedSpan> {
        trace.iter().copied().filter(|s| s.service == service && s.name == name).collect()
    };

    // HTTP request → turn.
    let http = span_by_id(&spans, &turn.parent_span_id);
    assert_eq!(http.name, "POST /v1/chat");
    assert_eq!(http.kind, 2, "a server span");
    // Numbers are exported as OTLP integers, as the semantic conventions say (issue #27).
    assert_eq!(http.int_attr("http.response.status_code"), Some(200));
    assert_eq!(turn.attr("tamebi.conversation.id"), Some("otel-conv-1"));

    // Model calls with gen_ai.* attributes.
    let model_calls = in_trace("tamebi", "chat scripted");
    assert_eq!(model_calls.len(), 2, "{:#?}", names(&spans));
    for call in &model_calls {
        assert_eq!(call.parent_span_id, turn.span_id);
        assert_eq!(call.attr("gen_ai.request.model"), Some("scripted"));
        assert_eq!(call.attr("gen_ai.operation.name"), Some("chat"));
        assert!(call.attr("tamebi.model.time_to_first_token_ms").is_some(), "{call:#?}");
    }
    let tool_step = model_calls
        .iter()
        .find(|c| c.attr("gen_ai.response.finish_reasons") == Some("tool_calls"))
        .expect("the tool-calling step");
    assert_eq!(tool_step.int_attr("gen_ai.usage.input_tokens"), Some(123), "{tool_step:#?}");
    assert_eq!(tool_step.int_attr("gen_ai.usage.output_tokens"), Some(45), "{tool_step:#?}");

    // Tool call → MCP request → mcp-nextcloud's spans → the Nextcloud request.
    let tool = in_trace("tamebi", "execute_tool files_read");
    assert_eq!(tool.len(), 1, "{:#?}", names(&spans));
    assert_eq!(tool[0].parent_span_id, turn.span_id);
    assert_eq!(tool[0].attr("tamebi.approval"), Some("not_needed"));
    let mcp_call = in_trace("tamebi", "tools/call files_read");
    assert_eq!(mcp_call.len(), 1);
    assert_eq!(mcp_call[0].parent_span_id, tool[0].span_id);
    assert_eq!(mcp_call[0].kind, 3, "a client span");
    let server_requests: Vec<&&ReceivedSpan> = trace
        .iter()
        .filter(|s| s.service == "mcp-nextcloud" && s.name == "POST /mcp" && s.parent_span_id == mcp_call[0].span_id)
        .collect();
    assert!(
        !server_requests.is_empty(),
        "mcp-nextcloud continued the traceparent: {:#?}",
        names(&spans)
    );
    let mcp_tool = in_trace("mcp-nextcloud", "tools/call files_read");
    assert_eq!(mcp_tool.len(), 1, "{:#?}", names(&spans));
    assert!(server_requests.iter().any(|s| s.span_id == mcp_tool[0].parent_span_id));
    let nc_get = trace
        .iter()
        .find(|s| s.service == "mcp-nextcloud" && s.name.starts_with("GET ") && s.parent_span_id == mcp_tool[0].span_id)
        .unwrap_or_else(|| panic!("a Nextcloud request span: {:#?}", names(&spans)));
    assert_eq!(nc_get.attr("url.template"), Some("/remote.php/dav/files/{user}/{path}"));
    assert_eq!(nc_get.int_attr("http.response.status_code"), Some(200));
    assert_eq!(nc_get.attr("http.request.method"), Some("GET"));
    let services: std::collections::BTreeSet<&str> = trace.iter().map(|s| s.service.as_str()).collect();
    assert_eq!(services.into_iter().collect::<Vec<_>>(), ["mcp-nextcloud", "tamebi"]);

    // The supervision tree: root → conversations → this conversation's actor, linked from the turn.
    let roots = by_name(&spans, "tamebi", "start root");
    assert_eq!(roots.len(), 1);
    assert!(roots[0].parent_span_id.is_empty(), "the root supervisor starts the tree's trace");
    let sup = by_name(&spans, "tamebi", "start conversations");
    assert_eq!(sup.len(), 1);
    assert_eq!(sup[0].parent_span_id, roots[0].span_id);
    let tool_server = by_name(&spans, "tamebi", "start tool-server");
    assert_eq!(tool_server.len(), 1);
    assert_eq!(tool_server[0].parent_span_id, roots[0].span_id);
    assert_eq!(tool_server[0].attr("tamebi.actor.name"), Some("tool-server:nextcloud"));
    assert_eq!(turn.links.len(), 1, "the turn links to its actor");
    let actor = span_by_id(&spans, &turn.links[0].1);
    assert_eq!(actor.name, "start conversation");
    assert_eq!(
        actor.parent_span_id, sup[0].span_id,
        "the conversation actor starts under the conversations supervisor"
    );
    assert_eq!(actor.trace_id, roots[0].trace_id);
    assert!(actor.attr("tamebi.actor.id").is_some());
    assert!(actor.events.iter().any(|(name, _)| name == "spawned"));

    // A crash is a supervision event, exported as it happens, and the server keeps serving.
    let crashed = chat(&orch, "bob", "otel-boom", "crash me", "req-otel-crash", None).await;
    assert!(crashed.iter().any(|p| p["type"] == "error"), "{crashed:#?}");
    let spans = otlp.wait_for_spans(WAIT, |spans| spans.iter().any(|s| s.name == "crashed conversation"));
    let crash = by_name(&spans, "tamebi", "crashed conversation");
    assert_eq!(crash.len(), 1, "{:#?}", names(&spans));
    assert_eq!(crash[0].attr("tamebi.supervision.event"), Some("crashed"));
    assert!(
        crash[0].attr("tamebi.supervision.reason").unwrap_or("").contains("fault injection"),
        "{:#?}",
        crash[0]
    );
    assert!(crash[0].events.iter().any(|(name, _)| name == "crashed"));
    assert_eq!(crash[0].status_code, 2);
    let bobs_actor = span_by_id(&spans, &crash[0].parent_span_id);
    assert_eq!(bobs_actor.name, "start conversation");
    assert_eq!(bobs_actor.parent_span_id, sup[0].span_id);
    assert_ne!(bobs_actor.span_id, actor.span_id, "the event sits under the actor that crashed");
    let after = chat(&orch, "alice", "otel-conv-2", "still there?", "req-otel-after", None).await;
    assert!(after.iter().any(|p| p["type"] == "finish"), "{after:#?}");

    // Metrics arrive.
    let wanted = [
        "tamebi.turns.in_flight",
        "tamebi.sse.streams.open",
        "tamebi.actors.alive",
        "tamebi.supervision.events",
        "tamebi.errors",
        "gen_ai.client.operation.duration",
        "mcp.client.operation.duration",
        "http.server.request.duration",
    ];
    let arrived = test_harness::wait_until(WAIT, || {
        let metrics = otlp.metrics();
        wanted.iter().all(|w| metrics.iter().any(|m| m.service == "tamebi" && m.name == *w))
            && metrics.iter().any(|m| {
                m.name == "tamebi.supervision.events"
                    && m.points
                        .iter()
                        .any(|p| p.get("tamebi.supervision.event").map(String::as_str) == Some("crashed"))
            })
    });
    let metric_names: std::collections::BTreeSet<String> =
        otlp.metrics().into_iter().map(|m| format!("{}:{}", m.service, m.name)).collect();
    assert!(arrived, "metrics missing; got {metric_names:#?}");
    assert!(
        metric_names.contains("mcp-nextcloud:http.server.request.duration"),
        "{metric_names:#?}"
    );

    // No number anywhere is exported as a string (a backend could not sum or compare it), in
    // any process; `error.type` is a string by the semantic conventions ("404").
    let digit_strings: Vec<String> = otlp.digit_strings().into_iter().filter(|s| !s.contains(" error.type=")).collect();
    assert!(digit_strings.is_empty(), "numbers exported as strings: {digit_strings:#?}");

    // Nothing exported carries a credential, the uid (not enabled), the message or the tool output.
    let forbidden = [
        alice_bearer.as_str(),
        nc.app_password("bob"),
        PROXY_SECRET,
        SIGNING_SECRET,
        "Bearer ",
        "Basic ",
        "alice",
        "please read my secret file",
        "payroll figures",
        "secret.txt",
        "Done reading.",
    ];
    let strings = otlp.all_strings();
    for needle in forbidden {
        let hits: Vec<&String> = strings.iter().filter(|s| s.contains(needle)).collect();
        assert!(hits.is_empty(), "{needle:?} was exported: {hits:?}");
        assert!(!otlp.raw_contains(needle), "{needle:?} is in an export body");
    }
    assert_eq!(orch.process().terminate(Duration::from_secs(30)), Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_flushes_the_last_turns_spans_and_metrics() {
    let otlp = OtlpReceiver::start();
    let model = ScriptedModel::start();
    // A minute between batches: only the shutdown flush can deliver this turn in time.
    let mut orch = Orchestrator::start(Options {
        model_url: model.url(),
        mcp_servers: String::new(),
        extra_env: otel_env(&otlp, 60_000, 60_000),
    });
    let answer = chat(&orch, "alice", "last-words", "last words", "req-otel-last", None).await;
    assert!(answer.iter().any(|p| p["type"] == "finish"));
    assert!(
        turn_span(&otlp.spans(), "req-otel-last").is_none(),
        "nothing is exported before the batch is due"
    );
    assert_eq!(orch.process().terminate(Duration::from_secs(30)), Some(0), "a clean exit");
    // The process has exited: whatever it flushed has been received.
    let spans = otlp.spans();
    let last = turn_span(&spans, "req-otel-last").unwrap_or_else(|| panic!("the last turn was flushed: {:#?}", names(&spans)));
    assert!(spans.iter().any(|s| s.name == "chat scripted" && s.parent_span_id == last.span_id));
    let metrics = otlp.metrics();
    assert!(
        metrics
            .iter()
            .any(|m| m.service == "tamebi" && m.name == "gen_ai.client.operation.duration"),
        "metrics were flushed too"
    );
    assert_eq!(otlp.undecodable(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_uid_only_when_enabled_and_an_idle_stop_is_an_event() {
    let otlp = OtlpReceiver::start();
    let model = ScriptedModel::start();
    let mut env = otel_env(&otlp, 100, 60_000);
    env.push(("TAMEBI_TRACE_USER_ID".into(), "1".into()));
    env.push(("TAMEBI_IDLE_SECS".into(), "1".into()));
    let orch = Orchestrator::start(Options {
        model_url: model.url(),
        mcp_servers: String::new(),
        extra_env: env,
    });
    chat(&orch, "carol", "uid-on", "hello", "req-otel-uid", None).await;
    let spans = otlp.wait_for_spans(WAIT, |s| turn_span(s, "req-otel-uid").is_some());
    let t = turn_span(&spans, "req-otel-uid").expect("turn span");
    assert_eq!(t.attr("enduser.id"), Some("carol"));
    // The actor stops after a second without a turn: an event under its start span.
    let actor = t.links[0].1.clone();
    let spans = otlp.wait_for_spans(WAIT, |s| {
        s.iter().any(|s| s.parent_span_id == actor && s.name == "idle-stopped conversation")
    });
    let idle = spans
        .iter()
        .find(|s| s.parent_span_id == actor && s.name == "idle-stopped conversation")
        .unwrap_or_else(|| panic!("no idle stop under {actor}: {:#?}", names(&spans)));
    assert_eq!(idle.attr("tamebi.supervision.event"), Some("idle-stopped"));
    assert!(idle.events.iter().any(|(name, _)| name == "idle-stopped"));
}
