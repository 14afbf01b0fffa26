//! End to end: a long conversation stays inside the context budget. The real `tamebi`
//! binary, the scripted model (reporting usage), probe-mcp serving a 20 KB tool result.
//! The assertions are on what the scripted model received.
#![expect(clippy::unwrap_used, reason = "helpers of a test file fail the test by panicking")]

use reqwest::Method;
use serde_json::{Value, json};
use std::time::Duration;
use test_harness::orchestrator::{Options, Orchestrator, parts, read_sse, user_turn};
use test_harness::postgres::PgCluster;
use test_harness::probe_mcp::ProbeMcp;
use test_harness::scripted_model::ScriptedModel;

const WINDOW: u64 = 32_768;
/// What tamebi keeps free for the answer: an eighth of the window.
const PROMPT_BUDGET: u64 = WINDOW - WINDOW / 8;
const SUMMARY_MARK: &str = "Summarise the earlier part of this conversation";

fn client() -> reqwest::Client {
    reqwest::Client::builder().timeout(Duration::from_secs(60)).build().unwrap()
}

/// One user turn with a Nextcloud bearer (so the probe's tools are offered); its parts.
async fn turn(orch: &Orchestrator, c: &reqwest::Client, conversation: &str, n: usize, text: &str) -> Vec<Value> {
    let body = user_turn(conversation, &format!("m{n}"), text);
    let r = orch
        .request(c, Method::POST, "/v1/chat", "alice", &body, Some("nc-token"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    parts(&read_sse(r).await)
}

fn last_user_text(request: &Value) -> String {
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .and_then(|m| m["content"].as_str())
        .unwrap_or("")
        .to_string()
}

fn is_summary_call(request: &Value) -> bool {
    last_user_text(request).starts_with(SUMMARY_MARK)
}

/// The conservative measure of a request: every character of every message's content, tool
/// call and tool definition, three to a token (providers count about four on such text).
fn request_tokens(request: &Value) -> u64 {
    let mut chars = 0usize;
    for m in request["messages"].as_array().unwrap() {
        chars += m["content"].as_str().map_or(0, str::len);
        for call in m["tool_calls"].as_array().into_iter().flatten() {
            chars += call.to_string().len();
        }
    }
    chars += request.get("tools").map_or(0, |t| t.to_string().len());
    (chars as u64).div_ceil(3)
}

/// "messages 1 to N": the last message a summary request covers.
fn summary_range_end(request: &Value) -> usize {
    let text = last_user_text(request);
    let after = text.split(" to ").nth(1).unwrap();
    after.split(')').next().unwrap().parse().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_300_turn_conversation_stays_in_budget_summarises_once_per_event_and_survives_a_restart() {
    let probe = ProbeMcp::start();
    let document = "Quarterly figures, line by line. ".repeat(620); // ~20 KB
    assert!(document.len() >= 20_000);
    probe.set_tools(json!([{
        "name": "files_read", "description": "Read a file", "inputSchema": {"type": "object"},
        "annotations": {"readOnlyHint": true}, "reply": {"text": document}
    }]));
    let model = ScriptedModel::start();
    model.add_rules(json!([
        {"match": SUMMARY_MARK, "steps": [{"summarise_user_lines": true}]},
        {"match": "What is the project code name", "steps": [{"text_from_template": "The code name is {{word_after:code name is }}."}]},
        {"match": "read document", "steps": [
            {"tool_calls": [{"name": "files_read", "arguments": {"path": "/report.txt"}}]},
            {"text": "I read it."}
        ]}
    ]));
    let mut orch = Orchestrator::start(Options {
        model_url: model.url(),
        mcp_servers: format!("nextcloud={};auth=nextcloud", probe.url()),
        extra_env: vec![("TAMEBI_CONTEXT_TOKENS".into(), WINDOW.to_string())],
    });
    let c = client();
    let mut compactions = 0usize;
    let started = std::time::Instant::now();
    for n in 0..300 {
        if n % 100 == 0 {
            eprintln!("turn {n} after {} ms", started.elapsed().as_millis());
        }
        let text = if n == 0 {
            "Note: the project code name is BLUEHERON. Now please read document 0.".to_string()
        } else {
            format!("Turn {n}: read document {n}.")
        };
        let p = turn(&orch, &c, "long", n, &text).await;
        assert!(p.iter().any(|x| x["type"] == "tool-output-available"), "turn {n}: {p:?}");
        assert!(!p.iter().any(|x| x["type"] == "error"), "turn {n}: {p:?}");
        compactions += p.iter().filter(|x| x["type"] == "data-compaction").count();
    }
    eprintln!("300 turns after {} ms", started.elapsed().as_millis());
    let requests = model.requests();
    eprintln!("requests read after {} ms", started.elapsed().as_millis());
    assert!(requests.len() >= 600, "{}", requests.len());
    for (i, r) in requests.iter().enumerate() {
        let t = request_tokens(r);
        assert!(t <= PROMPT_BUDGET, "request {i} holds ~{t} tokens, over the budget {PROMPT_BUDGET}");
    }
    // Without compaction the last request would hold 300 results of 20 KB.
    let summaries: Vec<&Value> = requests.iter().filter(|r| is_summary_call(r)).collect();
    assert!(compactions >= 2, "only {compactions} compactions in 300 turns");
    assert_eq!(summaries.len(), compactions, "exactly one summary call per compaction event");
    let ends: Vec<usize> = summaries.iter().map(|r| summary_range_end(r)).collect();
    assert!(ends.windows(2).all(|w| w[0] < w[1]), "a range is never summarised twice: {ends:?}");
    // A summary request is bounded and carries its material inside the envelope.
    for s in &summaries {
        assert!(request_tokens(s) <= PROMPT_BUDGET);
        assert!(last_user_text(s).contains("<untrusted_data source=\"conversation\" id=\""));
    }
    // chat.db keeps every tool result whole; only what the model sees was cleared.
    let stored = orch.get_json(&c, "/v1/conversations/long", "alice").await;
    let first_result = &stored["messages"][1]["parts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["type"] == "dynamic-tool")
        .unwrap()["output"]["content"][0]["text"];
    assert_eq!(first_result.as_str().unwrap().len(), document.len());
    // Older results became stubs naming the tool. Not asked of the very last request: right
    // after a summary there may be no older result left to clear (seen in about one run of 15).
    let stubs = |r: &Value| {
        r["messages"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| {
                m["role"] == "tool"
                    && m["content"]
                        .as_str()
                        .unwrap()
                        .contains("Result cleared to save context: files_read")
            })
            .count()
    };
    let with_stubs = requests.iter().filter(|r| !is_summary_call(r) && stubs(r) >= 1).count();
    eprintln!("{with_stubs} of {} requests carry stubs", requests.len());
    assert!(
        with_stubs >= 300,
        "older results are stubs naming the tool in only {with_stubs} requests"
    );

    // A restart: the conversation actor revives with its summary from chat.db.
    eprintln!("checks after {} ms", started.elapsed().as_millis());
    orch.kill9_and_restart();
    model.clear_requests();
    eprintln!("restarted after {} ms", started.elapsed().as_millis());
    let p = turn(&orch, &c, "long", 300, "What is the project code name?").await;
    let answer: String = p
        .iter()
        .filter(|x| x["type"] == "text-delta")
        .map(|x| x["delta"].as_str().unwrap())
        .collect();
    assert_eq!(answer, "The code name is BLUEHERON.");
    let seen = model.requests();
    let asked = seen.iter().find(|r| !is_summary_call(r)).unwrap();
    let messages = asked["messages"].as_array().unwrap();
    let system = messages[0]["content"].as_str().unwrap();
    assert!(
        system.contains("<untrusted_data source=\"summary\" id=\""),
        "the summary reaches the model enveloped"
    );
    // The early message itself is no longer in the view: the answer came from the summary.
    assert!(
        messages[1..]
            .iter()
            .all(|m| !m["content"].as_str().unwrap_or("").contains("BLUEHERON")),
        "the first message should have been summarised away"
    );
    // Revived, not regenerated: any summary call now covers a new range only.
    for s in seen.iter().filter(|r| is_summary_call(r)) {
        assert!(summary_range_end(s) > *ends.last().unwrap());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_summary_call_leaves_the_turn_on_rung_one() {
    let probe = ProbeMcp::start();
    probe.set_tools(json!([{
        "name": "files_read", "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": true},
        "reply": {"text": "z".repeat(6_000)}
    }]));
    let model = ScriptedModel::start();
    model.add_rules(json!([
        {"match": SUMMARY_MARK, "steps": [{"error": {"status": 500, "message": "summariser down"}}]},
        {"match": "read", "steps": [{"tool_calls": [{"name": "files_read", "arguments": {"path": "/a"}}]}, {"text": "ok"}]}
    ]));
    let mut orch = Orchestrator::start(Options {
        model_url: model.url(),
        mcp_servers: format!("nextcloud={};auth=nextcloud", probe.url()),
        extra_env: vec![("TAMEBI_CONTEXT_TOKENS".into(), "4096".into())],
    });
    let c = client();
    for n in 0..30 {
        let p = turn(&orch, &c, "f", n, &format!("read file {n}")).await;
        assert!(!p.iter().any(|x| x["type"] == "error"), "turn {n} failed: {p:?}");
        assert!(!p.iter().any(|x| x["type"] == "data-compaction"));
    }
    let requests = model.requests();
    assert!(requests.iter().any(is_summary_call), "a summary was attempted");
    for r in requests.iter().filter(|r| !is_summary_call(r)) {
        assert!(request_tokens(r) <= 4096 - 512, "{}", request_tokens(r));
    }
    let logs = orch.process().logs();
    assert!(
        logs.contains("summary call failed; continuing with tool-result clearing only"),
        "{logs}"
    );
}

/// The stock AI SDK client (`readUIMessageStream`, what `useChat` runs) accepts the
/// `data-compaction` part and keeps it in the message it builds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_ai_sdk_client_reads_the_compaction_part() {
    let node = test_harness::workspace_root().join("tests/node");
    test_harness::island::require_node_modules(&node, "ai", "scripts/install.d/45-browser.sh (npm ci in tests/node)");
    let model = ScriptedModel::start();
    model.add_rules(json!([{"match": SUMMARY_MARK, "steps": [{"summarise_user_lines": true}]}]));
    let orch = Orchestrator::start(Options {
        model_url: model.url(),
        extra_env: vec![("TAMEBI_CONTEXT_TOKENS".into(), "2048".into())],
        ..Options::default()
    });
    let c = client();
    let scratch = tempfile::tempdir().unwrap();
    for n in 0..12 {
        let text = format!("Entry {n}: {}", "a long line about the week ahead. ".repeat(12));
        let body = user_turn("sdk", &format!("m{n}"), &text);
        let r = orch
            .request(&c, Method::POST, "/v1/chat", "alice", &body, None)
            .send()
            .await
            .unwrap();
        let sse = r.text().await.unwrap();
        if !sse.contains("\"type\":\"data-compaction\"") {
            continue;
        }
        let file = scratch.path().join("turn.sse");
        std::fs::write(&file, &sse).unwrap();
        let out = test_harness::island::run_node_json(
            &node,
            "read-ui-stream.mjs",
            &[&file.display().to_string()],
            &[],
            Duration::from_secs(60),
        );
        let parts = out["message"]["parts"].as_array().unwrap();
        let part = parts
            .iter()
            .find(|p| p["type"] == "data-compaction")
            .expect("the SDK kept the part");
        assert!(part["data"]["summarisedMessages"].as_u64().unwrap() >= 2, "{part}");
        return;
    }
    panic!("no compaction happened in 12 long turns");
}

// Issue #27: a 14-turn conversation at a 6,000-token window made 8 summary calls, each
// summarising little. The fixture (the same as src/compaction.rs's unit test and
// benches/compaction.rs): a short user note and an answer of 1,700 characters per turn.
const ISSUE_WINDOW: u64 = 6_000;
const ISSUE_TURNS: usize = 14;
/// The target for this fixture: at most one summary call per this many turns.
const TURNS_PER_SUMMARY: usize = 4;
const PREVIOUS_SUMMARY: &str = "Summary of the messages before these:";

fn issue_note(n: usize) -> String {
    let note = "the figures for the north region moved again this week. ".repeat(3);
    format!("Turn {n}: {}", &note[..120])
}

fn issue_model() -> ScriptedModel {
    let answer = "Noted; the trend continues and nothing needs doing yet. ".repeat(31);
    let model = ScriptedModel::start();
    model.add_rules(json!([
        {"match": SUMMARY_MARK, "steps": [{"summarise_user_lines": true}]},
        {"match": "Turn ", "steps": [{"text": &answer[..1_700]}]}
    ]));
    model
}

/// "messages A to B": the first and last message (1-based) a summary request covers.
fn summary_range(request: &Value) -> (usize, usize) {
    let text = last_user_text(request);
    let inner = text.split("(messages ").nth(1).unwrap().split(')').next().unwrap();
    let (a, b) = inner.split_once(" to ").unwrap();
    (a.parse().unwrap(), b.parse().unwrap())
}

/// What the scripted summariser answered to `request` (its `user:` lines), i.e. the summary
/// the orchestrator stored from it (short enough here not to be cut).
fn scripted_summary(request: &Value) -> String {
    last_user_text(request)
        .lines()
        .map(|l| l.trim().trim_start_matches("- ").trim())
        .filter(|l| l.starts_with("user: "))
        .map(|l| format!("- {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Summary call `request`, following `previous` (None for the first), is incremental: its
/// material is the previous summary, then exactly the messages after the previous range.
fn assert_incremental(request: &Value, previous: Option<&Value>) {
    let (first, last) = summary_range(request);
    let text = last_user_text(request);
    assert!(text.contains("<untrusted_data source=\"conversation\" id=\""), "enveloped (G2)");
    let since = match previous {
        None => {
            assert_eq!(first, 1);
            assert!(!text.contains(PREVIOUS_SUMMARY));
            text.as_str()
        }
        Some(p) => {
            assert_eq!(first, summary_range(p).1 + 1, "starts where the previous summary ended");
            let head = format!("{PREVIOUS_SUMMARY}\n{}\n", scripted_summary(p));
            assert!(text.contains(&head), "the previous summary is in the request: {text}");
            let at = text.find(&head).unwrap_or_default();
            &text[at + head.len()..]
        }
    };
    // User message n (of turn t) is message 2t + 1.
    for t in 0..64 {
        let m = 2 * t + 1;
        assert_eq!(
            since.contains(&format!("user: Turn {t}: ")),
            (first..=last).contains(&m),
            "turn {t} (message {m}) in a summary of messages {first} to {last}: {since}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fourteen_turns_at_6000_tokens_summarise_rarely_and_incrementally() {
    let model = issue_model();
    let orch = Orchestrator::start(Options {
        model_url: model.url(),
        extra_env: vec![("TAMEBI_CONTEXT_TOKENS".into(), ISSUE_WINDOW.to_string())],
        ..Options::default()
    });
    let c = client();
    let mut compactions = 0;
    for n in 0..ISSUE_TURNS {
        let p = turn_without_workspace(&orch, &c, "issue27", n, &issue_note(n)).await;
        assert!(!p.iter().any(|x| x["type"] == "error"), "turn {n}: {p:?}");
        compactions += p.iter().filter(|x| x["type"] == "data-compaction").count();
    }
    let requests = model.requests();
    let summaries: Vec<usize> = (0..requests.len()).filter(|&i| is_summary_call(&requests[i])).collect();
    eprintln!(
        "{} summary calls in {ISSUE_TURNS} turns: {:?}",
        summaries.len(),
        summaries.iter().map(|&i| summary_range(&requests[i])).collect::<Vec<_>>()
    );
    assert!(!summaries.is_empty(), "the conversation outgrew half the window");
    assert_eq!(summaries.len(), compactions);
    assert!(
        summaries.len() <= ISSUE_TURNS.div_ceil(TURNS_PER_SUMMARY),
        "{} summary calls in {ISSUE_TURNS} turns (target: at most one per {TURNS_PER_SUMMARY})",
        summaries.len()
    );
    for (k, &i) in summaries.iter().enumerate() {
        assert_incremental(&requests[i], k.checked_sub(1).map(|j| &requests[summaries[j]]));
        // Hysteresis: the turn's request right after the summary is well under the trigger
        // (half the window). The target is a quarter where the kept tail allows; in a window
        // this small the system prompt, the tools and the tail alone are about that much.
        let after = &requests[i + 1];
        assert!(!is_summary_call(after));
        assert!(
            request_tokens(after) <= ISSUE_WINDOW / 2 * 3 / 4,
            "{} tokens after summary {k}",
            request_tokens(after)
        );
    }
    for r in &requests {
        assert!(request_tokens(r) <= ISSUE_WINDOW - ISSUE_WINDOW / 8);
    }
}

/// A turn without a Nextcloud bearer (no workspace tools); its parts. Retried while another
/// instance still holds the conversation (503 with `Retry-After`).
async fn turn_without_workspace(orch: &Orchestrator, c: &reqwest::Client, conversation: &str, n: usize, text: &str) -> Vec<Value> {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let body = user_turn(conversation, &format!("m{n}"), text);
        let r = orch
            .request(c, Method::POST, "/v1/chat", "alice", &body, None)
            .send()
            .await
            .unwrap();
        if r.status() == 200 {
            return parts(&read_sse(r).await);
        }
        let status = r.status();
        let wait = r.headers().get("retry-after").and_then(|v| v.to_str().ok()?.parse().ok());
        match wait {
            Some(secs) if std::time::Instant::now() < deadline => tokio::time::sleep(Duration::from_secs(secs)).await,
            _ => {
                let text = r.text().await.unwrap_or_default();
                assert_eq!(status, 200, "turn {n}: {text}");
                return Vec::new();
            }
        }
    }
}

/// Summaries persist: a conversation taken over by another instance (PostgreSQL) carries on
/// from the stored summary, incrementally, instead of summarising from the start again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_conversation_revived_on_another_instance_continues_its_summary() {
    let Some(pg) = PgCluster::start_or_skip() else { return };
    let url = pg.create_database("compaction").unwrap();
    let model = issue_model();
    let start = || {
        Orchestrator::start(Options {
            model_url: model.url(),
            extra_env: vec![
                ("TAMEBI_CONTEXT_TOKENS".into(), ISSUE_WINDOW.to_string()),
                ("TAMEBI_DATABASE_URL".into(), url.clone()),
                ("TAMEBI_LEASE_SECS".into(), "2".into()),
            ],
            ..Options::default()
        })
    };
    let c = client();
    let mut a = start();
    let mut n = 0;
    while !model.requests().iter().any(is_summary_call) {
        assert!(n < ISSUE_TURNS, "no summary on the first instance in {n} turns");
        turn_without_workspace(&a, &c, "moved", n, &issue_note(n)).await;
        n += 1;
    }
    let on_a: Vec<Value> = model.requests().into_iter().filter(is_summary_call).collect();
    let last_on_a = on_a.last().unwrap().clone();
    assert_eq!(a.process().terminate(Duration::from_secs(20)), Some(0));
    model.clear_requests();

    let b = start();
    let mut more = 0;
    let revived = loop {
        assert!(more < 2 * TURNS_PER_SUMMARY, "no summary on the second instance in {more} turns");
        turn_without_workspace(&b, &c, "moved", n, &issue_note(n)).await;
        n += 1;
        more += 1;
        if let Some(s) = model.requests().into_iter().find(is_summary_call) {
            break s;
        }
    };
    // The first summary on B starts from A's stored one and covers only what came after it.
    assert_incremental(&revived, Some(&last_on_a));
}
