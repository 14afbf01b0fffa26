//! End to end against a real model server (issue #31): llama.cpp's own `llama-server` with
//! Gemma 3 270M, both installed by scripts/install.d/60-model.sh, behind the real `tamebi`.
//!
//! These tests check the wire, not wisdom: what the orchestrator makes of a real server's
//! stream (text deltas as generated, finish reasons, usage, tool calls, errors), never whether
//! the small model's answer is good. The prompts that need a tool call ask the model to copy
//! one (greedy sampling, fixed seed), so the mechanics are tested, not the model's judgement.
//!
//! Not part of the workspace's `cargo test` (Cargo.toml: `test = false`): scripts/test.d/
//! 15-real-model.sh runs it on its own, one test at a time, so that the model has the CPU.
//! Figures (time to first token, tokens per second) are printed, never asserted.
#![expect(clippy::unwrap_used, clippy::expect_used, reason = "a test fails by panicking")]

use std::path::PathBuf;
use std::time::{Duration, Instant};

use futures::StreamExt;
use reqwest::Method;
use serde_json::{Value, json};
use tamebi::compaction;
use tamebi::model::{ChatMessage, FunctionSpec, ToolCallOut, ToolSpec};
use test_harness::island::{require_node_modules, run_node_json};
use test_harness::llama_server::{self, LlamaServer};
use test_harness::orchestrator::{Options, Orchestrator, user_turn};
use test_harness::probe_mcp::ProbeMcp;
use test_harness::{free_port, wait_until, workspace_root};

const BEARER: &str = "alice-app-password";
/// A whole prompt (system prompt, tools) is read before the first token: tens of seconds on a
/// busy 2-core machine.
const FIRST_CHUNK_SECS: &str = "180";

struct Stack {
    llama: LlamaServer,
    probe: ProbeMcp,
    orch: Orchestrator,
    http: reqwest::Client,
}

/// The tools the model is offered: a read (runs without asking) and an effect (asks first).
fn tools() -> Value {
    json!([
        {"name": "files_list", "description": "Lists the files in a folder of the user's Nextcloud.",
         "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
         "annotations": {"readOnlyHint": true}, "reply": {"text": "report.odt\nnotes.md"}},
        {"name": "files_delete", "description": "Deletes a file in the user's Nextcloud.",
         "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
         "annotations": {"readOnlyHint": false, "destructiveHint": true}}
    ])
}

/// llama-server with `llama`, probe-mcp serving [`tools`], and tamebi pointed at both.
async fn stack(llama: llama_server::Options, env: &[(&str, &str)]) -> Stack {
    stack_with(llama, env, tools()).await
}

/// [`stack`] with probe-mcp serving `tools`.
async fn stack_with(llama: llama_server::Options, env: &[(&str, &str)], tools: Value) -> Stack {
    let env: Vec<(String, String)> = env.iter().map(|(k, v)| ((*k).to_string(), (*v).to_string())).collect();
    tokio::task::spawn_blocking(move || {
        let llama = LlamaServer::start(llama);
        let probe = ProbeMcp::start();
        probe.set_tools(tools);
        let mut extra_env = vec![("TAMEBI_MODEL_FIRST_CHUNK_SECS".to_string(), FIRST_CHUNK_SECS.to_string())];
        extra_env.extend(env);
        // The harness names the model `scripted`: llama-server serves its one model whatever
        // the request names.
        let orch = Orchestrator::start(Options {
            model_url: llama.url(),
            mcp_servers: format!("probe={};trust=reads", probe.url()),
            extra_env,
        });
        let http = reqwest::Client::builder().timeout(Duration::from_secs(300)).build().unwrap();
        Stack { llama, probe, orch, http }
    })
    .await
    .unwrap()
}

/// One part of the orchestrator's answer and when it arrived (since the request was sent).
struct Timed {
    at: Duration,
    part: Value,
}

/// One turn, read as it arrives: every part with its arrival time, and the raw SSE body.
async fn timed_turn(s: &Stack, cid: &str, text: &str) -> (Vec<Timed>, String) {
    let body = user_turn(cid, &format!("m-{cid}"), text);
    let sent = Instant::now();
    let response = s
        .orch
        .request(&s.http, Method::POST, "/v1/chat", "alice", &body, Some(BEARER))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let mut bytes = response.bytes_stream();
    let (mut raw, mut pending, mut parts) = (String::new(), String::new(), Vec::new());
    while let Some(chunk) = bytes.next().await {
        let chunk = String::from_utf8(chunk.unwrap().to_vec()).unwrap();
        raw.push_str(&chunk);
        pending.push_str(&chunk);
        while let Some(end) = pending.find("\n\n") {
            let frame: String = pending.drain(..end + 2).collect();
            if let Some(data) = frame.trim_end().strip_prefix("data: ")
                && let Ok(part) = serde_json::from_str::<Value>(data)
            {
                parts.push(Timed { at: sent.elapsed(), part });
            }
        }
    }
    (parts, raw)
}

fn of_type<'a>(parts: &'a [Timed], t: &str) -> Vec<&'a Timed> {
    parts.iter().filter(|p| p.part["type"] == t).collect()
}

fn types(parts: &[Timed]) -> Vec<String> {
    parts.iter().map(|p| p.part["type"].as_str().unwrap_or("?").to_string()).collect()
}

fn text_of(parts: &[Timed]) -> String {
    of_type(parts, "text-delta")
        .iter()
        .map(|p| p.part["delta"].as_str().unwrap())
        .collect()
}

/// The UIMessage and the finish reason the AI SDK reads from `raw` (its own chunk schema).
fn read_with_ai_sdk(raw: &str, name: &str) -> Value {
    let dir: PathBuf = workspace_root().join("tests/node");
    require_node_modules(&dir, "ai", "scripts/install.d/45-browser.sh (npm ci in tests/node)");
    let scratch = tempfile::tempdir().unwrap();
    let file = scratch.path().join(format!("{name}.sse"));
    std::fs::write(&file, raw).unwrap();
    run_node_json(
        &dir,
        "read-ui-stream.mjs",
        &[&file.display().to_string()],
        &[],
        Duration::from_secs(60),
    )
}

/// The one `error` part of a turn that failed, checked for the documented shape.
fn error_text(parts: &[Timed]) -> String {
    let errors = of_type(parts, "error");
    assert_eq!(errors.len(), 1, "{:?}", types(parts));
    assert_eq!(
        parts.last().unwrap().part["type"],
        "error",
        "the error ends the turn: {:?}",
        types(parts)
    );
    let text = errors[0].part["errorText"].as_str().unwrap().to_string();
    assert!(text.contains("(request id: "), "{text}");
    text
}

/// Sums the token counts llama-server logged for its finished requests (prompt + generated).
fn logged_tokens(llama: &LlamaServer) -> u64 {
    let logs = llama.logs();
    logs.lines()
        .filter(|l| l.contains("prompt eval time =") || l.contains("       eval time ="))
        .filter_map(|l| l.rsplit_once(" tokens (")?.0.rsplit_once("/ ")?.1.trim().parse::<u64>().ok())
        .sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_answer_streams_to_the_ai_sdk_as_it_is_generated() {
    let s = stack(llama_server::Options::default(), &[("TAMEBI_MODEL_MAX_TOKENS", "48")]).await;
    let (parts, raw) = timed_turn(&s, "story", "Write a long story about a lighthouse keeper and her cat.").await;
    let deltas = of_type(&parts, "text-delta");
    assert!(deltas.len() >= 10, "a 48-token answer in many deltas: {:?}", types(&parts));
    // As generated: the deltas arrive spread over the generation, not in one burst at its end.
    let (first, last) = (deltas[0].at, deltas[deltas.len() - 1].at);
    let mut arrivals: Vec<u128> = deltas.iter().map(|d| d.at.as_millis()).collect();
    arrivals.dedup();
    assert!(arrivals.len() >= 5, "deltas arrived at {arrivals:?} ms");
    let generated = (last - first).as_secs_f64();
    println!(
        "real model through tamebi: time to first token {:.0} ms, {} deltas in {:.0} ms ({:.1} deltas/s)",
        first.as_secs_f64() * 1000.0,
        deltas.len(),
        generated * 1000.0,
        (deltas.len() - 1) as f64 / generated.max(1e-3)
    );

    // The stock AI SDK client reads the same body: the same text, and the provider's
    // `length` (the call hit TAMEBI_MODEL_MAX_TOKENS) as its `finishReason`.
    let sdk = read_with_ai_sdk(&raw, "story");
    let text: String = sdk["message"]["parts"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["type"] == "text")
        .map(|p| p["text"].as_str().unwrap())
        .collect();
    assert_eq!(text, text_of(&parts));
    assert_eq!(sdk["finishReason"], "length", "{sdk}");
}

/// A grammar (llama.cpp's GBNF) that admits exactly `text`: the real server still generates
/// and streams it token by token, and reports what it counted, but the small model's judgement
/// (whether to call, which tool) is taken out of the test.
fn only(text: &str) -> String {
    let literal: String = text
        .chars()
        .map(|c| match c {
            '"' => "\\\"".to_string(),
            '\\' => "\\\\".to_string(),
            '\n' => "\\n".to_string(),
            c => c.to_string(),
        })
        .collect();
    format!("root ::= \"{literal}\"\n")
}

/// A call in the Hermes form, as a model writes it in its text.
fn hermes_call(name: &str, arguments: &str) -> String {
    format!("<tool_call>{{\"name\": \"{name}\", \"arguments\": {arguments}}}</tool_call>")
}

/// llama-server held to answer with `text`, its tools left to tamebi: without `--jinja` its
/// legacy Gemma template ignores the request's tools and never parses a call, so the call
/// reaches tamebi as text (`TAMEBI_TOOL_CALL_TEXT=auto` reads it).
fn writes_only(text: &str) -> llama_server::Options {
    llama_server::Options {
        jinja: false,
        grammar: Some(only(text)),
        ..Default::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_turn_token_bound_counts_what_the_real_server_reports() {
    // Only a read is offered, so the call runs and the turn would ask the model again.
    let read_only = Value::Array(
        tools()
            .as_array()
            .unwrap()
            .iter()
            .filter(|t| t["name"] == "files_list")
            .cloned()
            .collect(),
    );
    let mut s = stack_with(
        writes_only(&hermes_call("files_list", "{\"path\": \"/\"}")),
        &[
            ("TAMEBI_TOOL_CALL_TEXT", "auto"),
            ("TAMEBI_TURN_MAX_TOKENS", "1"),
            ("TAMEBI_MODEL_MAX_TOKENS", "64"),
        ],
        read_only,
    )
    .await;
    let (parts, _) = timed_turn(&s, "bound", "List the files in my home folder.").await;
    // The first call ran (it asked for files_list, which ran); the second was refused.
    assert_eq!(s.probe.calls_of("files_list").len(), 1, "{:?}", types(&parts));
    assert!(error_text(&parts).contains("token limit"), "{:?}", types(&parts));
    let logs = s.orch_logs();
    let used: u64 = logs
        .split("the turn used ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next()?.parse().ok())
        .unwrap_or_else(|| panic!("no token bound in the log:\n{logs}"));
    // What the turn counted is what the server counted: usage came from its chunks.
    assert_eq!(used, logged_tokens(&s.llama), "{}", s.llama.logs());
}

/// Issue #31: with `TAMEBI_TOOL_CALL_TEXT=auto`, a call the real server streams as text takes
/// the path a scripted call takes: a read runs with exactly the input the stream showed, an
/// effect asks for approval and does not run (G3), a call naming no tool is an error result,
/// and a call whose JSON is broken is shown as text; the turn ends cleanly every time.
/// One step per turn (`TAMEBI_MAX_STEPS=1`): the grammar would make the model call again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_written_as_text_take_the_scripted_calls_path() {
    let env = [
        ("TAMEBI_TOOL_CALL_TEXT", "auto"),
        ("TAMEBI_MAX_STEPS", "1"),
        ("TAMEBI_MODEL_MAX_TOKENS", "64"),
    ];
    let cases = [
        ("list", hermes_call("files_list", "{\"path\": \"/\"}")),
        ("delete", hermes_call("files_delete", "{\"path\": \"/report.odt\"}")),
        ("unknown", hermes_call("files_shred", "{\"path\": \"/\"}")),
        (
            "broken",
            "<tool_call>{\"name\": \"files_list\", \"arguments\": {\"path\": \"/\"</tool_call>".to_string(),
        ),
    ];
    for (cid, answer) in cases {
        let s = stack(writes_only(&answer), &env).await;
        let (parts, raw) = timed_turn(&s, cid, "List the files in my home folder.").await;
        let inputs = of_type(&parts, "tool-input-available");
        let with_id = |t: &str, id: &Value| of_type(&parts, t).into_iter().filter(|p| p.part["toolCallId"] == *id).count();
        match cid {
            "list" => {
                assert_eq!(inputs.len(), 1, "{:?}", types(&parts));
                let id = &inputs[0].part["toolCallId"];
                assert!(id.as_str().unwrap().starts_with("call_"), "ids are ours: {id}");
                assert_eq!(inputs[0].part["input"], json!({"path": "/"}));
                assert_eq!(with_id("tool-output-available", id), 1, "{:?}", types(&parts));
                assert_eq!(s.probe.calls_of("files_list")[0]["arguments"], json!({"path": "/"}));
                assert!(!text_of(&parts).contains("tool_call"), "the call is not shown as text");
            }
            "delete" => {
                assert_eq!(inputs.len(), 1, "{:?}", types(&parts));
                assert_eq!(
                    with_id("tool-approval-request", &inputs[0].part["toolCallId"]),
                    1,
                    "{:?}",
                    types(&parts)
                );
                assert!(s.probe.calls_of("files_delete").is_empty(), "an effect ran without approval");
            }
            "unknown" => {
                assert_eq!(inputs.len(), 1, "{:?}", types(&parts));
                assert_eq!(
                    with_id("tool-output-error", &inputs[0].part["toolCallId"]),
                    1,
                    "{:?}",
                    types(&parts)
                );
                assert!(s.probe.calls().is_empty(), "nothing ran");
            }
            _ => {
                assert!(inputs.is_empty(), "a broken call is never guessed at: {:?}", types(&parts));
                assert_eq!(text_of(&parts), answer, "shown as the text it is");
                assert!(s.probe.calls().is_empty(), "nothing ran");
            }
        }
        // Every turn ends cleanly, and the stock client reads it.
        assert_eq!(types(&parts).last().map(String::as_str), Some("finish"), "{:?}", types(&parts));
        assert!(read_with_ai_sdk(&raw, cid)["finishReason"].is_string());
    }
}

/// Asks the model to copy a call in the Hermes form, which llama.cpp's own tool-call parser reads
/// (its grammar then holds the call to the tools offered and their schemas).
const COPY_A_LIST_CALL: &str =
    "Copy this line exactly and write nothing else:\n<tool_call>{\"name\": \"files_list\", \"arguments\": {\"path\": \"/\"}}</tool_call>";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "llama.cpp (b1-571d0d5) replaces a server-wide grammar with its own lazy tool-call grammar whenever a request carries tools under --jinja, and a lazy grammar engages only once the model itself writes <tool_call>, which Gemma 3 270M does not under tamebi's real system prompt; forcing it needs tool_choice \"required\" (non-lazy grammar), which tamebi does not send. Run with --ignored against a model that calls tools"]
async fn calls_from_llama_cpps_tool_calling_take_the_scripted_calls_path() {
    let s = stack(llama_server::Options::default(), &[("TAMEBI_MODEL_MAX_TOKENS", "64")]).await;

    // Which tool the small model picks is its business; that each call it makes takes the path
    // a scripted call takes is ours: a read runs with exactly the input the stream showed and
    // its result is shown; an effect asks for approval and does not run (G3).
    let mut calls = 0;
    for (cid, prompt) in [("list", COPY_A_LIST_CALL), ("delete", COPY_A_DELETE_CALL)] {
        let (parts, raw) = timed_turn(&s, cid, prompt).await;
        for input in of_type(&parts, "tool-input-available") {
            calls += 1;
            let id = &input.part["toolCallId"];
            assert!(id.as_str().unwrap().starts_with("call_"), "ids are ours: {id}");
            let with_id = |t: &str| of_type(&parts, t).into_iter().filter(|p| p.part["toolCallId"] == *id).count();
            match input.part["toolName"].as_str().unwrap() {
                "files_list" => {
                    assert_eq!(with_id("tool-output-available"), 1, "{:?}", types(&parts));
                    let runs = s.probe.calls_of("files_list");
                    assert!(runs.iter().any(|r| r["arguments"] == input.part["input"]), "{runs:?}");
                }
                "files_delete" => {
                    assert_eq!(with_id("tool-approval-request"), 1, "{:?}", types(&parts));
                    assert!(s.probe.calls_of("files_delete").is_empty(), "an effect ran without approval");
                }
                other => assert!(other.starts_with("memory_"), "a call to a tool never offered: {other}"),
            }
        }
        // Every turn ends cleanly, and the stock client reads it.
        let last = types(&parts).last().cloned();
        assert_eq!(last.as_deref(), Some("finish"), "{:?}", types(&parts));
        assert!(read_with_ai_sdk(&raw, cid)["finishReason"].is_string());
    }
    assert!(calls > 0, "the model made no call to check");
}

const COPY_A_DELETE_CALL: &str = "Copy this line exactly and write nothing else:\n<tool_call>{\"name\": \"files_delete\", \"arguments\": {\"path\": \"/report.odt\"}}</tool_call>";

/// Asks for a long answer in conversation `cid`, reads until the first text arrives (the real
/// server is generating then), and drops the stream: the client has left.
async fn start_a_long_answer_and_leave(s: &Stack, cid: &str) {
    let body = user_turn(cid, &format!("m-{cid}"), "Count from 1 to 2000, one number per line.");
    let response = s
        .orch
        .request(&s.http, Method::POST, "/v1/chat", "alice", &body, Some(BEARER))
        .send()
        .await
        .unwrap();
    let mut bytes = response.bytes_stream();
    let mut seen = String::new();
    while !seen.contains("\"text-delta\"") {
        seen.push_str(&String::from_utf8_lossy(&bytes.next().await.unwrap().unwrap()));
    }
    assert!(s.llama.generating(), "the server is generating the answer");
    drop(bytes);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_a_conversation_mid_answer_stops_the_real_server_generating() {
    let s = stack(llama_server::Options::default(), &[("TAMEBI_MODEL_MAX_TOKENS", "3000")]).await;
    start_a_long_answer_and_leave(&s, "long").await;
    let deleted = s
        .orch
        .request(&s.http, Method::DELETE, "/v1/conversations/long", "alice", b"", None)
        .send()
        .await
        .unwrap();
    assert_eq!(deleted.status(), 204);
    let llama = &s.llama;
    let stopped = tokio::task::block_in_place(|| wait_until(Duration::from_secs(10), || !llama.generating()));
    assert!(stopped, "the server went on generating after the turn stopped\n{}", s.llama.logs());
}

/// Issue #31's cancellation: the client goes away mid-answer and nobody resumes, with no
/// DELETE; after the orphan grace the orchestrator drops the model stream, llama-server stops
/// generating, and the conversation keeps the partial answer, marked stopped.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_leaves_mid_answer_stops_the_real_server_generating() {
    const GRACE_SECS: u64 = 3;
    let grace = GRACE_SECS.to_string();
    let s = stack(
        llama_server::Options::default(),
        &[("TAMEBI_MODEL_MAX_TOKENS", "3000"), ("TAMEBI_TURN_ORPHAN_GRACE_SECS", &grace)],
    )
    .await;
    start_a_long_answer_and_leave(&s, "left").await;
    let left = Instant::now();
    let llama = &s.llama;
    let stopped = tokio::task::block_in_place(|| wait_until(Duration::from_secs(GRACE_SECS + 10), || !llama.generating()));
    assert!(stopped, "the server went on generating for nobody\n{}", s.llama.logs());
    println!(
        "real server stopped generating {:.1} s after the client left (grace {GRACE_SECS} s)",
        left.elapsed().as_secs_f64()
    );
    // The partial answer is in the history, with the stop and its request id (committed as
    // the stream is dropped: moments after, at most).
    let mut conv = Value::Null;
    for _ in 0..50 {
        conv = s.orch.get_json(&s.http, "/v1/conversations/left", "alice").await;
        if conv["messages"][1]["parts"]
            .as_array()
            .is_some_and(|p| p.iter().any(|p| p["type"] == "data-interrupted"))
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let parts = conv["messages"][1]["parts"].as_array().cloned().unwrap_or_default();
    let text: String = parts
        .iter()
        .filter(|p| p["type"] == "text")
        .map(|p| p["text"].as_str().unwrap())
        .collect();
    // What the model wrote is its business; that what it had written is kept is ours.
    assert!(!text.is_empty(), "the partial answer was kept: {conv}");
    let stopped = parts.last().unwrap();
    assert_eq!(stopped["type"], "data-interrupted", "{conv}");
    assert!(
        stopped["data"]["message"]
            .as_str()
            .unwrap()
            .starts_with("This reply was stopped: it was no longer being read"),
        "{stopped}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_over_the_real_window_is_the_documented_error() {
    // The server's window is smaller than the one tamebi is told, so the request overflows it.
    let s = stack(
        llama_server::Options {
            context: 512,
            ..Default::default()
        },
        &[("TAMEBI_CONTEXT_TOKENS", "32768")],
    )
    .await;
    let long = "Please read this note carefully. ".repeat(200);
    let (parts, _) = timed_turn(&s, "overflow", &long).await;
    error_text(&parts);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_still_loading_and_a_server_killed_mid_stream_are_the_documented_error() {
    // Loading: llama-server answers 503 until the model is in memory. Started without waiting,
    // a turn sent at once meets the 503 (or, on a fast machine, a loaded model: then it answers).
    let port = free_port();
    let options = llama_server::Options::default();
    let mut llama = tokio::task::spawn_blocking(move || LlamaServer::spawn(&options, port))
        .await
        .unwrap();
    let probe = ProbeMcp::start();
    probe.set_tools(tools());
    let orch = Orchestrator::start(Options {
        model_url: llama.url(),
        mcp_servers: format!("probe={};trust=reads", probe.url()),
        extra_env: vec![
            ("TAMEBI_MODEL_MAX_TOKENS".into(), "3000".into()),
            ("TAMEBI_MODEL_FIRST_CHUNK_SECS".into(), FIRST_CHUNK_SECS.into()),
        ],
    });
    let http = reqwest::Client::builder().timeout(Duration::from_secs(300)).build().unwrap();
    let loading = http.get(format!("{}/health", llama.base())).send().await.unwrap().status();
    let s = Stack { llama, probe, orch, http };
    if loading == 503 {
        let (parts, _) = timed_turn(&s, "loading", "Say hello.").await;
        error_text(&parts);
    } else {
        println!("llama-server loaded before the first request ({loading}); the 503 case was not met");
    }
    llama = s.llama;
    tokio::task::block_in_place(|| llama.wait_loaded(Duration::from_secs(120)));
    let s = Stack { llama, ..s };

    // Killed mid-stream: the turn ends with the error part, not a hang and not a 500.
    let body = user_turn("killed", "m-killed", "Count from 1 to 2000, one number per line.");
    let response = s
        .orch
        .request(&s.http, Method::POST, "/v1/chat", "alice", &body, Some(BEARER))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let mut bytes = response.bytes_stream();
    let mut raw = String::new();
    while !raw.contains("\"text-delta\"") {
        raw.push_str(&String::from_utf8_lossy(&bytes.next().await.unwrap().unwrap()));
    }
    let mut s = s;
    s.llama.process().kill9();
    let rest = tokio::time::timeout(Duration::from_secs(60), async {
        while let Some(chunk) = bytes.next().await {
            raw.push_str(&String::from_utf8_lossy(&chunk.unwrap()));
        }
    })
    .await;
    assert!(rest.is_ok(), "the stream hung after the model server died: {raw}");
    let parts: Vec<Timed> = test_harness::orchestrator::parts(&test_harness::orchestrator::parse_sse(&raw))
        .into_iter()
        .map(|part| Timed { at: Duration::ZERO, part })
        .collect();
    error_text(&parts);
}

impl Stack {
    fn orch_logs(&mut self) -> String {
        self.orch.process().logs()
    }
}

/// Conversations of the kinds a turn sends, each as the provider messages tamebi builds.
fn fixture_conversations() -> Vec<(&'static str, Vec<ChatMessage>)> {
    let system = ChatMessage::System {
        content: "You are Tamebi, an assistant inside the user's Nextcloud. Use the tools to read files, \
                  calendars, contacts and boards. Today is 2026-12-02."
            .into(),
    };
    let call = |i: usize, name: &str, args: Value| ChatMessage::Assistant {
        content: None,
        tool_calls: vec![ToolCallOut::new(format!("call_{i:032x}"), name.into(), &args)],
    };
    let result = |i: usize, content: String| ChatMessage::Tool {
        tool_call_id: format!("call_{i:032x}"),
        content,
    };
    let user = |s: &str| ChatMessage::User { content: s.into() };
    let answer = |s: &str| ChatMessage::Assistant {
        content: Some(s.into()),
        tool_calls: vec![],
    };
    // The issue-#27 fixture of tests/compaction.rs: notes, a document read, an answer.
    let mut notes = vec![system.clone()];
    for i in 0..4 {
        notes.push(user(&format!(
            "Turn {i}: {}",
            "the figures for the north region moved again this week. ".repeat(10)
        )));
        notes.push(call(i, "files_read", json!({"path": format!("/notes/{i}.md")})));
        notes.push(result(i, "d".repeat(800)));
        notes.push(answer(&"Noted; the trend continues and nothing needs doing yet. ".repeat(4)));
    }
    // A folder listing: names, sizes, dates and etags (digits and hex tokenise densely).
    let listing: Vec<Value> = (0..15)
        .map(|i| {
            json!({"name": format!("Rechnung-2026-{:03}.pdf", i * 7), "size": 10_000 + i * 7919,
                   "modified": format!("2026-11-{:02}T{:02}:{:02}:00Z", 1 + i % 28, i % 24, (i * 13) % 60),
                   "etag": format!("{:016x}", (i as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15)), "mime": "application/pdf"})
        })
        .collect();
    let files = vec![
        system.clone(),
        user("Welche Rechnungen liegen im Ordner /Buchhaltung?"),
        call(1, "files_list", json!({"path": "/Buchhaltung"})),
        result(1, serde_json::to_string(&listing).unwrap()),
        answer("Im Ordner liegen 40 Rechnungen, die neueste vom 28. November."),
    ];
    // A calendar: iCalendar text with its timestamps and UIDs.
    let events: String = (0..8)
        .map(|i| {
            format!(
                "BEGIN:VEVENT\r\nUID:{:08x}-{:04x}-4{:03x}-a{:03x}-{:012x}\r\nDTSTART:202612{:02}T{:02}0000Z\r\nDTEND:202612{:02}T{:02}3000Z\r\nSUMMARY:Abstimmung Projekt Nordlicht {i}\r\nLOCATION:Raum {}\r\nEND:VEVENT\r\n",
                i * 2_654_435_761_u64 % 0xffff_ffff, i * 40_503 % 0xffff, i * 977 % 0xfff, i * 613 % 0xfff, i * 1_000_003,
                1 + i % 28, 8 + i % 9, 1 + i % 28, 8 + i % 9, 100 + i
            )
        })
        .collect();
    let calendar = vec![
        system.clone(),
        user("What is on my calendar in December?"),
        call(2, "calendar_events", json!({"from": "2026-12-01", "to": "2026-12-31"})),
        result(2, format!("BEGIN:VCALENDAR\r\nVERSION:2.0\r\n{events}END:VCALENDAR\r\n")),
        answer("You have 20 meetings about Projekt Nordlicht in December."),
    ];
    // Prose in German with its umlauts and ß, and code.
    let prose = "Die Prüfung der Maßnahmen für das Geschäftsjahr ergab, dass die Übergänge zwischen den \
                 Abteilungen häufig zu Verzögerungen führen. Größere Änderungen sind nötig. ";
    let code =
        "fn parse(input: &str) -> Result<Vec<u32>, ParseIntError> {\n    input.split(',').map(|s| s.trim().parse::<u32>()).collect()\n}\n";
    let mixed = vec![
        system,
        user(&prose.repeat(4)),
        answer(&prose.repeat(2)),
        user(&format!("Explain this code:\n```rust\n{}```", code)),
        answer(&format!("It splits on commas and parses each number: {}", code.repeat(3))),
    ];
    vec![
        ("notes (issue #27)", notes),
        ("folder listing", files),
        ("calendar", calendar),
        ("German prose and code", mixed),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_token_estimate_is_never_far_below_the_real_tokenizer() {
    let llama = tokio::task::spawn_blocking(|| {
        LlamaServer::start(llama_server::Options {
            context: 8192,
            ..Default::default()
        })
    })
    .await
    .unwrap();
    let http = reqwest::Client::new();
    let spec = |name: &str, description: &str| ToolSpec {
        kind: "function",
        function: FunctionSpec {
            name: name.into(),
            description: description.into(),
            parameters: std::sync::Arc::new(json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]})),
        },
    };
    let specs = vec![
        spec("files_list", "Lists the files in a folder of the user's Nextcloud."),
        spec("files_read", "Reads a file of the user's Nextcloud."),
        spec("calendar_events", "Lists the events of the user's calendars in a time range."),
    ];
    for (name, messages) in fixture_conversations() {
        let estimate = compaction::estimate_tokens(&messages) + compaction::tools_tokens(&specs);
        // The server's own count of exactly this request, template and tools included.
        let answer: Value = http
            .post(format!("{}/chat/completions", llama.url()))
            .json(&json!({"model": llama_server::MODEL, "messages": messages, "tools": specs, "max_tokens": 1}))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let real = answer["usage"]["prompt_tokens"].as_u64().unwrap_or_else(|| panic!("{answer}"));
        let ratio = estimate as f64 / real as f64;
        println!("token estimate, {name}: ours {estimate}, llama.cpp's Gemma 3 tokenizer {real} (ours/real {ratio:.2})");
        assert!(
            ratio >= 0.9,
            "{name}: our estimate {estimate} is more than 10% below the real {real}"
        );
    }
}

/// Time to the first text and tokens per second, through tamebi and straight from the server,
/// beside the scripted model's time to the first text through tamebi: printed, never asserted
/// (docs/performance.md, "A real model", quotes them).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn figures_time_to_first_token_and_tokens_per_second() {
    const PROMPT: &str = "Write a long story about a lighthouse keeper and her cat.";
    const ROUNDS: usize = 5;
    let s = stack(llama_server::Options::default(), &[("TAMEBI_MODEL_MAX_TOKENS", "128")]).await;
    let (mut through, mut direct, mut rate) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..ROUNDS {
        let (parts, _) = timed_turn(&s, &format!("figures-{round}"), PROMPT).await;
        through.push(of_type(&parts, "text-delta")[0].at.as_secs_f64() * 1000.0);
        let (first, per_second) = direct_call(&s.http, &s.llama.url(), PROMPT).await;
        direct.push(first);
        rate.push(per_second);
    }
    let scripted = tokio::task::spawn_blocking(test_harness::scripted_model::ScriptedModel::start)
        .await
        .unwrap();
    scripted.add_rules(json!([{"match": "lighthouse", "steps": [{"text": "Once upon a time ".repeat(40), "chunk_chars": 4}]}]));
    let orch = tokio::task::spawn_blocking({
        let url = scripted.url();
        move || {
            Orchestrator::start(Options {
                model_url: url,
                ..Default::default()
            })
        }
    })
    .await
    .unwrap();
    let scripted_stack = Stack { orch, ..s };
    let mut scripted_first = Vec::new();
    for round in 0..ROUNDS {
        let (parts, _) = timed_turn(&scripted_stack, &format!("scripted-{round}"), PROMPT).await;
        scripted_first.push(of_type(&parts, "text-delta")[0].at.as_secs_f64() * 1000.0);
    }
    println!(
        "figures over {ROUNDS} rounds, {} cores (median, min-max):",
        std::thread::available_parallelism().map_or(0, usize::from)
    );
    println!("  Gemma 3 270M through tamebi: time to first text {}", spread(&through, "ms"));
    println!(
        "  Gemma 3 270M straight from llama-server: time to first token {}",
        spread(&direct, "ms")
    );
    println!("  Gemma 3 270M generation: {}", spread(&rate, "tokens/s"));
    println!(
        "  scripted model through tamebi: time to first text {}",
        spread(&scripted_first, "ms")
    );
}

/// One streamed call straight to llama-server: (ms to the first content, the server's own
/// tokens per second from the `timings` of its last chunk).
async fn direct_call(http: &reqwest::Client, url: &str, prompt: &str) -> (f64, f64) {
    let body = json!({"model": llama_server::MODEL, "stream": true, "max_tokens": 128,
                      "messages": [{"role": "user", "content": prompt}]});
    let sent = Instant::now();
    let response = http.post(format!("{url}/chat/completions")).json(&body).send().await.unwrap();
    let mut bytes = response.bytes_stream();
    let (mut first, mut per_second, mut pending) = (None, None, String::new());
    while let Some(chunk) = bytes.next().await {
        pending.push_str(&String::from_utf8_lossy(&chunk.unwrap()));
        while let Some(end) = pending.find("\n\n") {
            let frame: String = pending.drain(..end + 2).collect();
            let Some(chunk) = frame
                .trim_end()
                .strip_prefix("data: ")
                .and_then(|d| serde_json::from_str::<Value>(d).ok())
            else {
                continue;
            };
            if first.is_none() && chunk["choices"][0]["delta"]["content"].as_str().is_some_and(|c| !c.is_empty()) {
                first = Some(sent.elapsed().as_secs_f64() * 1000.0);
            }
            if let Some(rate) = chunk["timings"]["predicted_per_second"].as_f64() {
                per_second = Some(rate);
            }
        }
    }
    (first.expect("no content"), per_second.expect("no timings in the stream"))
}

/// "median (min-max) unit" of `values`.
fn spread(values: &[f64], unit: &str) -> String {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    format!("{:.1} {unit} ({:.1}-{:.1})", v[v.len() / 2], v[0], v[v.len() - 1])
}
