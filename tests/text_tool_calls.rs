//! End to end: tool calls a model writes as text (issue #17). The real `tamebi` with
//! `TAMEBI_TOOL_CALL_TEXT=auto`, the scripted model writing each text form, and probe-mcp
//! recording every call it receives. A text call goes through the same registry, G3 policy
//! and approval as a native one; a fenced example is shown and never run.
#![expect(clippy::unwrap_used, reason = "a test fails by panicking")]

use reqwest::Method;
use serde_json::{Value, json};
use std::time::Duration;
use test_harness::orchestrator::{Options, Orchestrator, parts, read_sse, user_turn};
use test_harness::probe_mcp::ProbeMcp;
use test_harness::scripted_model::ScriptedModel;

struct Stack {
    orch: Orchestrator,
    model: ScriptedModel,
    probe: ProbeMcp,
    http: reqwest::Client,
}

const FORMS: [&str; 5] = ["hermes", "bare", "mistral", "mistral_args", "llama"];

async fn stack() -> Stack {
    let (model, probe) = tokio::task::spawn_blocking(|| {
        let probe = ProbeMcp::start();
        probe.set_tools(json!([
            {"name": "probe_destroy", "description": "Removes a target.", "inputSchema": {"type": "object"},
             "annotations": {"readOnlyHint": false, "destructiveHint": true}},
            {"name": "probe_lookup", "description": "Looks something up.", "inputSchema": {"type": "object"},
             "annotations": {"readOnlyHint": true}, "reply": {"text": "found it"}}
        ]));
        (ScriptedModel::start(), probe)
    })
    .await
    .unwrap();
    let options = Options {
        model_url: model.url(),
        mcp_servers: format!("probe={};trust=reads", probe.url()),
        extra_env: vec![("TAMEBI_TOOL_CALL_TEXT".into(), "auto".into())],
    };
    let orch = tokio::task::spawn_blocking(move || Orchestrator::start(options)).await.unwrap();
    let http = reqwest::Client::builder().timeout(Duration::from_secs(60)).build().unwrap();
    Stack { orch, model, probe, http }
}

impl Stack {
    /// One user turn in conversation `cid` (whose id also selects the script); its parts.
    async fn turn(&self, cid: &str, steps: Value) -> Vec<Value> {
        self.model.add_rules(json!([{"match": cid, "steps": steps}]));
        let body = user_turn(cid, &format!("m-{cid}"), &format!("{cid} go"));
        let r = self
            .orch
            .request(&self.http, Method::POST, "/v1/chat", "alice", &body, Some("alice-app-password"))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
        parts(&read_sse(r).await)
    }

    fn runs(&self, tool: &str, target: &str) -> usize {
        self.probe
            .calls_of(tool)
            .iter()
            .filter(|c| c["arguments"]["target"] == target)
            .count()
    }
}

fn of_type<'a>(parts: &'a [Value], t: &str) -> Vec<&'a Value> {
    parts.iter().filter(|p| p["type"] == t).collect()
}

fn visible_text(parts: &[Value]) -> String {
    of_type(parts, "text-delta")
        .iter()
        .map(|p| p["delta"].as_str().unwrap_or(""))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn text_tool_calls_take_the_native_path() {
    let s = stack().await;

    // Every form: an effect tool written as text stops at approval and does not run. The
    // scripted reply arrives one character per chunk, so every position is a chunk boundary
    // on the wire (model::text_calls' unit tests split each form in two at every position).
    for form in FORMS {
        let cid = format!("text-{}", form.replace('_', "-"));
        let p = s
            .turn(
                &cid,
                json!([{"text": "I will remove it.\n", "tool_calls": [{"name": "probe_destroy", "arguments": {"target": cid}}], "as_text": form, "chunk_chars": 1},
                       {"text": "Done."}]),
            )
            .await;
        let approvals = of_type(&p, "tool-approval-request");
        assert_eq!(approvals.len(), 1, "{form}: no approval asked: {p:?}");
        let input = of_type(&p, "tool-input-available");
        assert_eq!(input.len(), 1, "{form}: {p:?}");
        assert_eq!(input[0]["toolName"], "probe_destroy");
        assert_eq!(input[0]["input"], json!({"target": cid}));
        assert_eq!(input[0]["toolCallId"], approvals[0]["toolCallId"]);
        assert!(
            input[0]["toolCallId"].as_str().unwrap().starts_with("call_"),
            "{form}: ids are ours"
        );
        assert_eq!(s.runs("probe_destroy", &cid), 0, "{form}: the effect ran without approval");
        let text = visible_text(&p);
        assert_eq!(text.trim_end(), "I will remove it.", "{form}: the call stayed in the visible text");
    }

    // A read-only tool written as text runs, like a native read-only call.
    let p = s
        .turn(
            "text-lookup",
            json!([{"tool_calls": [{"name": "probe_lookup", "arguments": {"target": "text-lookup"}}], "as_text": "hermes"},
                   {"text": "Looked it up."}]),
        )
        .await;
    assert_eq!(s.runs("probe_lookup", "text-lookup"), 1, "{p:?}");
    assert_eq!(of_type(&p, "tool-output-available").len(), 1, "{p:?}");
    assert!(visible_text(&p).contains("Looked it up."));

    // A fenced example, and one in an inline code span, are shown and not executed.
    let example = "Here is what a call looks like:\n```\n<tool_call>\n{\"name\": \"probe_destroy\", \"arguments\": {\"target\": \"text-fenced\"}}\n</tool_call>\n```\nor inline: `[TOOL_CALLS][{\"name\": \"probe_destroy\", \"arguments\": {\"target\": \"text-fenced\"}}]`.";
    let p = s.turn("text-fenced", json!([{"text": example, "chunk_chars": 3}])).await;
    assert_eq!(visible_text(&p), example);
    assert!(of_type(&p, "tool-input-available").is_empty(), "{p:?}");
    assert!(of_type(&p, "tool-approval-request").is_empty(), "{p:?}");
    assert_eq!(s.runs("probe_destroy", "text-fenced"), 0);

    // An unknown tool name is an error, not a guess at a similar tool.
    let p = s
        .turn(
            "text-unknown",
            json!([{"tool_calls": [{"name": "probe_destroy_all", "arguments": {"target": "text-unknown"}}], "as_text": "llama"},
                   {"text": "Done."}]),
        )
        .await;
    let errors = of_type(&p, "tool-output-error");
    assert_eq!(errors.len(), 1, "{p:?}");
    assert!(errors[0]["errorText"].as_str().unwrap().contains("no tool named probe_destroy_all"));
    assert!(s.probe.calls().is_empty() || s.probe.calls().iter().all(|c| c["name"] != "probe_destroy_all"));
    assert_eq!(s.runs("probe_destroy", "text-unknown"), 0);
}
