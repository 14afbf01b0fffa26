//! End to end: assistants (issue #17). The real `tamebi` with a `TAMEBI_ASSISTANTS` file, the
//! scripted model and probe-mcp (which records every call it receives).
//!
//! - an invalid file stops the binary at start: exit code 2, a message naming the line;
//! - `GET /v1/assistants` lists what a user may pick, never the operator's instructions;
//! - a conversation is bound to its assistant: another one later is 409, an unknown one 400;
//! - an assistant restricted to calendar tools is never offered files tools, and a call naming
//!   one anyway (natively or written as text) is an error result, never a call;
//! - its instructions come after the fixed system prompt, its model role picks the model;
//! - `GET /v1/admin/status` needs the app's admin signature and reveals configuration only;
//! - an approved call runs only if the assistant's allow-list still has its tool when it runs;
//! - MCP Apps reach (relay, dispatch, describe) only what their conversation's assistant
//!   allows now, and a request tied to no conversation of the caller's is refused; audited.
#![expect(clippy::unwrap_used, reason = "a test fails by panicking")]

use reqwest::Method;
use serde_json::{Value, json};
use std::time::Duration;
use test_harness::orchestrator::{
    Options, Orchestrator, SIGNING_SECRET, Signing, approve, fresh_nonce, parts, read_sse, unix_now, user_turn,
};
use test_harness::probe_mcp::ProbeMcp;
use test_harness::scripted_model::ScriptedModel;

const FILE: &str = r#"
[[assistant]]
name = "default"
description = "Everything you can reach."
tools = ["*/*"]

[[assistant]]
name = "planner"
description = "Calendar only."
instructions = "PLANNER-MARKER: answer in one sentence."
model = "small"
tools = ["probe/calendar_*"]
"#;

#[test]
fn an_invalid_assistants_file_stops_the_process_with_exit_code_2() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("assistants.toml");
    std::fs::write(
        &file,
        "[[assistant]]\nname = \"a\"\ndescription = \"d\"\ntools = [\n  \"probe/ok_*\",\n  \"no-slash\",\n]\n",
    )
    .unwrap();
    let bin = test_harness::workspace_bin("tamebi", "tamebi", &["fault-injection"]);
    let mut output = std::process::Command::new(bin)
        .env_clear()
        .env("TAMEBI_PROXY_SECRET", "p".repeat(40))
        .env("TAMEBI_SIGNING_SECRET", "s".repeat(40))
        .env("TAMEBI_MODEL_URL", "http://127.0.0.1:9/v1")
        .env("TAMEBI_MODEL", "m")
        .env("TAMEBI_MCP_SERVERS", "probe=http://127.0.0.1:9/mcp")
        .env("TAMEBI_DATA_DIR", dir.path())
        .env("TAMEBI_BIND", "127.0.0.1:0")
        .env("TAMEBI_ASSISTANTS", &file)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // A binary that accepted the file would serve forever: bounded wait, then kill.
    let exited = test_harness::wait_until(Duration::from_secs(30), || output.try_wait().unwrap().is_some());
    if !exited {
        output.kill().unwrap();
    }
    let output = output.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(exited, "the process did not stop at start: {stderr}");
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("TAMEBI_ASSISTANTS"), "{stderr}");
    assert!(stderr.contains("assistants.toml line 6"), "the message names the line: {stderr}");
    assert!(stderr.contains("no-slash"), "{stderr}");
}

struct Stack {
    orch: Orchestrator,
    model: ScriptedModel,
    probe: ProbeMcp,
    http: reqwest::Client,
    /// The `TAMEBI_ASSISTANTS` file: rewrite it and restart to change the operator's setup.
    file: std::path::PathBuf,
    _dir: tempfile::TempDir,
}

async fn stack() -> Stack {
    stack_with(FILE).await
}

async fn stack_with(assistants: &str) -> Stack {
    let (model, probe) = tokio::task::spawn_blocking(|| {
        let probe = ProbeMcp::start();
        probe.set_tools(json!([
            {"name": "calendar_list_events", "description": "Lists events.", "inputSchema": {"type": "object"},
             "annotations": {"readOnlyHint": true}, "reply": {"text": "no events"}},
            {"name": "files_list", "description": "Lists files.", "inputSchema": {"type": "object"},
             "annotations": {"readOnlyHint": true}, "reply": {"text": "secret.txt"}},
            {"name": "files_delete", "description": "Deletes a file.", "inputSchema": {"type": "object"},
             "annotations": {"readOnlyHint": false, "destructiveHint": true}}
        ]));
        (ScriptedModel::start(), probe)
    })
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("assistants.toml");
    std::fs::write(&file, assistants).unwrap();
    let options = Options {
        model_url: model.url(),
        mcp_servers: format!("probe={};trust=reads", probe.url()),
        extra_env: vec![
            ("TAMEBI_ASSISTANTS".into(), file.display().to_string()),
            ("TAMEBI_FALLBACK_MODEL".into(), "small".into()),
            ("TAMEBI_TOOL_CALL_TEXT".into(), "auto".into()),
            ("TAMEBI_FALLBACK_TOOL_CALL_TEXT".into(), "auto".into()),
        ],
    };
    let orch = tokio::task::spawn_blocking(move || Orchestrator::start(options)).await.unwrap();
    let http = reqwest::Client::builder().timeout(Duration::from_secs(60)).build().unwrap();
    Stack {
        orch,
        model,
        probe,
        http,
        file,
        _dir: dir,
    }
}

impl Stack {
    async fn post(&self, cid: &str, mid: &str, assistant: Option<&str>) -> reqwest::Response {
        let mut body: Value = serde_json::from_slice(&user_turn(cid, mid, &format!("{cid} go"))).unwrap();
        if let Some(a) = assistant {
            body["assistant"] = json!(a);
        }
        let body = serde_json::to_vec(&body).unwrap();
        self.orch
            .request(&self.http, Method::POST, "/v1/chat", "alice", &body, None)
            .send()
            .await
            .unwrap()
    }

    /// A GET of the admin route, with the app's admin signature when `admin`.
    async fn admin_status(&self, admin: bool) -> reqwest::Response {
        let (ts, nonce) = (unix_now(), fresh_nonce());
        let mut rb = self.http.get(format!("{}/v1/admin/status", self.orch.url()));
        for (k, v) in Orchestrator::sign(&Signing {
            method: "GET",
            target: "/v1/admin/status",
            uid: "admin",
            body: b"",
            ts,
            nonce: &nonce,
            credentials: "",
            signing_secret: SIGNING_SECRET,
        }) {
            rb = rb.header(k, v);
        }
        if admin {
            let (k, v) = Orchestrator::admin_signature("GET", "/v1/admin/status", "admin", ts, &nonce);
            rb = rb.header(k, v);
        }
        rb.send().await.unwrap()
    }
}

fn of_type<'a>(parts: &'a [Value], t: &str) -> Vec<&'a Value> {
    parts.iter().filter(|p| p["type"] == t).collect()
}

fn tool_names(request: &Value) -> Vec<String> {
    request["tools"]
        .as_array()
        .map(|t| t.iter().map(|t| t["function"]["name"].as_str().unwrap().to_string()).collect())
        .unwrap_or_default()
}

async fn error_shape(r: reqwest::Response, status: u16) -> Value {
    assert_eq!(r.status(), status);
    let body: Value = r.json().await.unwrap();
    assert!(
        body["error"]["message"].is_string() && body["error"]["requestId"].is_string(),
        "{body}"
    );
    body
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn assistants_bind_conversations_and_filter_tools() {
    let s = stack().await;

    let listed = s.orch.get_json(&s.http, "/v1/assistants", "alice").await;
    assert_eq!(listed["default"], "default");
    let names: Vec<&str> = listed["assistants"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, vec!["default", "planner"]);
    assert_eq!(listed["assistants"][1]["tools"], json!(["probe/calendar_*"]));
    assert!(
        !listed.to_string().contains("PLANNER-MARKER"),
        "instructions are the operator's: {listed}"
    );

    // The planner is offered calendar tools only. The model names files tools anyway, natively
    // and written as text: each is an error result, nothing reaches the server.
    // The planner's model role is the fallback model, "small" (the scripted model serves the
    // names its rules give).
    s.model.add_rules(json!([{"match": "asst-cal", "model": "small", "steps": [
        {"tool_calls": [{"name": "files_list", "arguments": {}}, {"name": "calendar_list_events", "arguments": {}}]},
        {"tool_calls": [{"name": "files_delete", "arguments": {"path": "/secret.txt"}}], "as_text": "hermes"},
        {"text": "Your calendar is empty."}
    ]}]));
    let r = s.post("asst-cal", "m1", Some("planner")).await;
    assert_eq!(r.status(), 200);
    let p = parts(&read_sse(r).await);
    let sent = s.model.requests();
    assert_eq!(sent.len(), 3, "{p:?}");
    for request in &sent {
        assert_eq!(tool_names(request), vec!["calendar_list_events"], "only the allow-list is offered");
        assert_eq!(request["model"], "small", "the planner's model role");
        let system = request["messages"][0]["content"].as_str().unwrap();
        let marker = system.find("PLANNER-MARKER").expect("the instructions are in the system prompt");
        assert!(
            system.find("data_handling").is_some_and(|d| d < marker),
            "instructions come after the fixed rules"
        );
    }
    let errors = of_type(&p, "tool-output-error");
    assert_eq!(errors.len(), 2, "{p:?}");
    assert!(
        errors
            .iter()
            .any(|e| e["errorText"].as_str().unwrap().contains("no tool named files_list"))
    );
    assert!(
        errors
            .iter()
            .any(|e| e["errorText"].as_str().unwrap().contains("no tool named files_delete"))
    );
    assert!(of_type(&p, "tool-approval-request").is_empty(), "nothing to approve: {p:?}");
    assert!(s.probe.calls_of("files_list").is_empty() && s.probe.calls_of("files_delete").is_empty());
    assert_eq!(s.probe.calls_of("calendar_list_events").len(), 1);

    // Bound: another assistant later is refused (409, nothing written); the same one or none is fine.
    let refused = error_shape(s.post("asst-cal", "m2", Some("default")).await, 409).await;
    assert!(
        refused["error"]["message"].as_str().unwrap().contains("another assistant"),
        "{refused}"
    );
    assert_eq!(refused["error"]["code"], "assistant_bound", "{refused}");
    let stored = s.orch.get_json(&s.http, "/v1/conversations/asst-cal", "alice").await;
    assert_eq!(stored["assistant"], "planner");
    assert!(
        !stored.to_string().contains("\"m2\""),
        "the refused message was not stored: {stored}"
    );
    s.model.clear_requests();
    s.model
        .add_rules(json!([{"match": "asst-cal", "model": "small", "steps": [{"text": "Still the planner."}]}]));
    let r = s.post("asst-cal", "m3", None).await;
    assert_eq!(r.status(), 200);
    read_sse(r).await;
    assert_eq!(
        tool_names(&s.model.requests()[0]),
        vec!["calendar_list_events"],
        "the binding outlives the request"
    );

    // Unknown: 400 in the error shape. The default assistant: every tool, the primary model.
    error_shape(s.post("asst-x", "m1", Some("no-such-assistant")).await, 400).await;
    s.model.clear_requests();
    s.model
        .add_rules(json!([{"match": "asst-all", "steps": [{"text": "Everything."}]}]));
    let r = s.post("asst-all", "m1", None).await;
    assert_eq!(r.status(), 200);
    read_sse(r).await;
    let request = &s.model.requests()[0];
    let mut offered = tool_names(request);
    offered.retain(|t| !t.starts_with("memory_"));
    assert_eq!(offered, vec!["calendar_list_events", "files_list", "files_delete"]);
    assert_eq!(request["model"], "scripted");
    assert!(!request["messages"][0]["content"].as_str().unwrap().contains("PLANNER-MARKER"));
    let stored = s.orch.get_json(&s.http, "/v1/conversations/asst-all", "alice").await;
    assert_eq!(stored["assistant"], "default");

    // Admin status: refused without the admin signature, configuration only with it.
    error_shape(s.admin_status(false).await, 403).await;
    let r = s.admin_status(true).await;
    assert_eq!(r.status(), 200);
    let status: Value = r.json().await.unwrap();
    let server = &status["servers"][0];
    assert_eq!(server["name"], "probe");
    assert_eq!(server["answers"], true);
    assert_eq!(server["state"], "listed");
    assert_eq!(server["toolCount"], 3);
    assert_eq!(server["calls"]["reachable"], true, "{server}");
    assert_eq!(server["calls"]["circuit"], "closed", "{server}");
    let planner = status["assistants"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["name"] == "planner")
        .unwrap();
    assert_eq!(planner["toolCount"], 1);
    assert_eq!(planner["servers"], json!(["probe"]));
    assert_eq!(planner["model"], "fallback");
    assert_eq!(planner["hasInstructions"], true);
    let text = status.to_string();
    for private in ["PLANNER-MARKER", "asst-cal", "alice", "calendar is empty"] {
        assert!(!text.contains(private), "the admin route revealed {private}: {text}");
    }
}

/// The approval test's operator setup: first the cleaner may delete files, then it may not.
const CLEANER_MAY_DELETE: &str = "[[assistant]]\nname = \"cleaner\"\ndescription = \"Files.\"\ntools = [\"probe/files_*\"]\n";
const CLEANER_MAY_NOT_DELETE: &str = "[[assistant]]\nname = \"cleaner\"\ndescription = \"Files.\"\ntools = [\"probe/files_list\"]\n";

type AuditRow = (String, String, String, String, Option<String>);

/// audit.db rows of one conversation: (kind, tool, approval, outcome, detail).
fn audit_of(s: &Stack, cid: &str) -> Vec<AuditRow> {
    audit_where(s, "conversation_id", cid)
}

/// audit.db rows whose `column` is `value`: (kind, tool, approval, outcome, detail).
fn audit_where(s: &Stack, column: &str, value: &str) -> Vec<AuditRow> {
    let c = rusqlite::Connection::open_with_flags(s.orch.data_dir().join("audit.db"), rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
    let mut st = c
        .prepare(&format!(
            "SELECT kind, tool, approval, outcome, detail FROM audit WHERE {column} = ?1 ORDER BY seq"
        ))
        .unwrap();
    st.query_map([value], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approved_call_is_rechecked_against_the_allow_list_of_now() {
    let mut s = stack_with(CLEANER_MAY_DELETE).await;
    s.model.add_rules(json!([{"match": "asst-narrow", "steps": [
        {"tool_calls": [{"name": "files_delete", "arguments": {"path": "/secret.txt"}}]},
        {"text": "Understood."}
    ]}]));
    let r = s.post("asst-narrow", "m1", Some("cleaner")).await;
    assert_eq!(r.status(), 200);
    let p = parts(&read_sse(r).await);
    let asked = of_type(&p, "tool-approval-request");
    assert_eq!(asked.len(), 1, "files_delete waits for approval: {p:?}");
    let call_id = asked[0]["toolCallId"].clone();
    let body = approve("asst-narrow", &p, 0, true);

    // The operator narrows the cleaner while the call waits; the person then approves it.
    std::fs::write(&s.file, CLEANER_MAY_NOT_DELETE).unwrap();
    tokio::task::block_in_place(|| s.orch.kill9_and_restart());
    let r = s
        .orch
        .request(&s.http, Method::POST, "/v1/chat", "alice", &body, None)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let p = parts(&read_sse(r).await);
    assert!(s.probe.calls_of("files_delete").is_empty(), "the withdrawn tool ran: {p:?}");
    let errors = of_type(&p, "tool-output-error");
    assert_eq!(errors.len(), 1, "{p:?}");
    assert_eq!(errors[0]["toolCallId"], call_id);
    let text = errors[0]["errorText"].as_str().unwrap();
    assert!(
        text.contains("no longer has the tool files_delete") && text.contains("not run"),
        "{text}"
    );
    // The model reads the refusal as data, inside the envelope.
    let sent = s.model.requests();
    let last = sent.last().unwrap();
    let tool_message = last["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool" && m["tool_call_id"] == call_id)
        .unwrap_or_else(|| panic!("the model is told about the refused call: {last}"));
    let content = tool_message["content"].as_str().unwrap();
    assert!(
        content.starts_with("<untrusted_data") && content.contains("no longer has the tool files_delete"),
        "the refusal reaches the model enveloped: {content}"
    );
    let rows = audit_of(&s, "asst-narrow");
    assert!(
        rows.iter().any(|(kind, tool, approval, outcome, detail)| kind == "tool_call"
            && tool == "files_delete"
            && approval == "approved_by_user"
            && outcome == "refused"
            && detail.as_deref().is_some_and(|d| d.contains("cleaner"))),
        "{rows:?}"
    );
    assert!(
        !rows
            .iter()
            .any(|(_, tool, _, outcome, _)| tool == "files_delete" && outcome == "ok"),
        "{rows:?}"
    );
}

/// The probe's tools for the apps test: two read-only tools any frame may relay, and two
/// app-only tools with effects (dispatch only), one per half of the planner's allow-list.
fn app_tools() -> Value {
    let app_only = json!({"ui": {"visibility": ["app"]}});
    json!([
        {"name": "calendar_list_events", "description": "Lists events.", "inputSchema": {"type": "object"},
         "annotations": {"readOnlyHint": true}, "reply": {"text": "no events"}},
        {"name": "files_list", "description": "Lists files.", "inputSchema": {"type": "object"},
         "annotations": {"readOnlyHint": true}, "reply": {"text": "secret.txt"}},
        {"name": "calendar_send_invite", "description": "Sends an invitation.", "inputSchema": {"type": "object"},
         "_meta": app_only, "reply": {"text": "sent"}},
        {"name": "files_share", "description": "Shares a file.", "inputSchema": {"type": "object"},
         "_meta": app_only, "reply": {"text": "shared"}}
    ])
}

impl Stack {
    /// A frame's request through one of the apps doors: (status, request id, body).
    async fn app(&self, door: &str, uid: &str, conversation: Option<&str>, tool: &str) -> (u16, String, Value) {
        let mut body = json!({"server": "probe", "name": tool, "arguments": {"marker": conversation}});
        if let Some(c) = conversation {
            body["conversation"] = json!(c);
        }
        let rid = format!("app-{}", fresh_nonce());
        let r = self
            .orch
            .request(
                &self.http,
                Method::POST,
                &format!("/v1/apps/tools/{door}"),
                uid,
                &serde_json::to_vec(&body).unwrap(),
                None,
            )
            .header("x-request-id", &rid)
            .send()
            .await
            .unwrap();
        let status = r.status().as_u16();
        (status, rid, r.json().await.unwrap_or_default())
    }

    /// A frame's request that must be refused: 403, an `app_refused` row for it whose detail
    /// says why, and the tool never reached.
    async fn app_refused(&self, door: &str, uid: &str, conversation: Option<&str>, tool: &str, why: &str) {
        let before = self.probe.calls_of(tool).len();
        let (status, rid, _) = self.app(door, uid, conversation, tool).await;
        assert_eq!(status, 403, "{door} {tool} from {conversation:?} as {uid}");
        let rows = audit_where(self, "request_id", &rid);
        assert!(
            rows.iter().any(|(kind, t, approval, outcome, detail)| kind == "app_refused"
                && t == tool
                && approval == "refused"
                && outcome == "refused"
                && detail.as_deref().is_some_and(|d| d.contains(why))),
            "{door} {tool} from {conversation:?}: {rows:?}"
        );
        assert_eq!(self.probe.calls_of(tool).len(), before, "{door} {tool} reached the server");
    }

    /// A conversation bound to `assistant`, made by one plain turn.
    async fn conversation(&self, cid: &str, assistant: &str) {
        self.model.add_rules(json!([{"match": cid, "steps": [{"text": "Hello."}]}]));
        let r = self.post(cid, "m1", Some(assistant)).await;
        assert_eq!(r.status(), 200);
        read_sse(r).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apps_reach_only_what_their_conversations_assistant_allows() {
    let mut s = stack().await;
    let tools = app_tools();
    tokio::task::block_in_place(|| s.probe.set_tools(tools));
    s.conversation("app-plan", "planner").await;
    s.conversation("app-all", "default").await;

    // The planner's frame: its calendar tools through the relay, dispatch and describe ...
    let (status, _, body) = s.app("call", "alice", Some("app-plan"), "calendar_list_events").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(s.probe.calls_of("calendar_list_events").len(), 1);
    let (status, _, body) = s.app("describe", "alice", Some("app-plan"), "calendar_send_invite").await;
    assert_eq!((status, body["handling"].as_str()), (200, Some("confirm")), "{body}");
    let (status, _, body) = s.app("dispatch", "alice", Some("app-plan"), "calendar_send_invite").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(s.probe.calls_of("calendar_send_invite").len(), 1);
    // ... and nothing outside its allow-list, through any door.
    for door in ["call", "describe"] {
        s.app_refused(door, "alice", Some("app-plan"), "files_list", "assistant planner")
            .await;
    }
    s.app_refused("dispatch", "alice", Some("app-plan"), "files_share", "assistant planner")
        .await;
    let rows = audit_of(&s, "app-plan");
    assert!(
        rows.iter().any(|(kind, tool, ..)| kind == "app_refused" && tool == "files_share"),
        "the refusal is on the conversation's record: {rows:?}"
    );
    assert!(
        rows.iter().any(|(kind, tool, approval, outcome, _)| kind == "app_dispatch"
            && tool == "calendar_send_invite"
            && approval == "approved_by_user"
            && outcome == "ok"),
        "{rows:?}"
    );
    // The default assistant's frame reaches the files tools.
    let (status, _, body) = s.app("call", "alice", Some("app-all"), "files_list").await;
    assert_eq!(status, 200, "{body}");
    let (status, _, body) = s.app("dispatch", "alice", Some("app-all"), "files_share").await;
    assert_eq!(status, 200, "{body}");

    // Fail closed: a request tied to no conversation, an unknown one, another user's.
    s.app_refused("call", "alice", None, "files_list", "not tied to a conversation")
        .await;
    s.app_refused("dispatch", "alice", None, "files_share", "not tied to a conversation")
        .await;
    s.app_refused("describe", "alice", None, "calendar_list_events", "not tied to a conversation")
        .await;
    s.app_refused("call", "alice", Some("app-none"), "files_list", "no such conversation")
        .await;
    s.app_refused("call", "bob", Some("app-all"), "files_list", "no such conversation")
        .await;
    let (status, _, _) = s.app("call", "alice", Some("../app-all"), "files_list").await;
    assert_eq!(status, 400, "a malformed conversation id");

    // The allow-list of now: the operator narrows the planner to files_list, then removes
    // the default assistant (its conversation cannot be tied to any assistant any more).
    std::fs::write(
        &s.file,
        "[[assistant]]\nname = \"planner\"\ndescription = \"Files list only.\"\ntools = [\"probe/files_list\"]\n",
    )
    .unwrap();
    tokio::task::block_in_place(|| s.orch.kill9_and_restart());
    s.app_refused("call", "alice", Some("app-plan"), "calendar_list_events", "assistant planner")
        .await;
    s.app_refused("dispatch", "alice", Some("app-plan"), "calendar_send_invite", "assistant planner")
        .await;
    let (status, _, body) = s.app("call", "alice", Some("app-plan"), "files_list").await;
    assert_eq!(status, 200, "{body}");
    s.app_refused("call", "alice", Some("app-all"), "files_list", "no longer configured")
        .await;
}

/// Review item 4: a tool server that does not answer in time is a 504 and one that cannot be
/// reached a 502, at the relay and the dispatch door alike, with the fixed JSON message the
/// island can show; never a bare 500. (A dispatch's 5xx stays "outcome unknown" in the island.)
/// The case that matters most: a server that lists its tools and then hangs on the call
/// itself (the probe's silent tools), where the call has left and its outcome is unknown.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_or_unreachable_tool_server_is_504_or_502_never_500() {
    // Accepts connections and never answers a byte.
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let silent_addr = silent.local_addr().unwrap();
    let holder = tokio_util::task::TaskTracker::new().spawn(async move {
        let mut held = Vec::new();
        while let Ok((connection, _)) = silent.accept().await {
            held.push(connection);
        }
    });
    // A port nobody listens on any more.
    let gone_addr = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
    let hangs = tokio::task::spawn_blocking(|| {
        let probe = ProbeMcp::start();
        probe.set_tools(json!([
            {"name": "slow_read", "description": "Reads slowly.", "inputSchema": {"type": "object"},
             "annotations": {"readOnlyHint": true}, "reply": {"silent": true}},
            {"name": "slow_send", "description": "Sends slowly.", "inputSchema": {"type": "object"},
             "_meta": {"ui": {"visibility": ["app"]}}, "reply": {"silent": true}}
        ]));
        probe
    })
    .await
    .unwrap();
    let model = ScriptedModel::start();
    model.add_rules(json!([{"match": "hello", "steps": [{"text": "Hi."}]}]));
    let orch = Orchestrator::start(Options {
        model_url: model.url(),
        mcp_servers: format!(
            "silent=http://{silent_addr}/mcp;auth=none;trust=reads,gone=http://{gone_addr}/mcp;auth=none;trust=reads,hangs={};auth=none;trust=reads",
            hangs.url()
        ),
        extra_env: vec![("TAMEBI_TOOL_TIMEOUT_SECS".into(), "1".into())],
    });
    let http = reqwest::Client::builder().timeout(Duration::from_secs(30)).build().unwrap();
    orch.chat(&http, "alice", "upstream", "m1", "hello").await;
    for (server, status, message) in [
        ("silent", 504, "The tool did not answer in time."),
        ("gone", 502, "The tool could not be reached or gave no usable answer."),
        ("hangs", 504, "The tool did not answer in time."),
    ] {
        for door in ["call", "dispatch"] {
            let name = match (server, door) {
                ("hangs", "call") => "slow_read",
                ("hangs", _) => "slow_send",
                _ => "anything",
            };
            let body = json!({"conversation": "upstream", "server": server, "name": name, "arguments": {}});
            let r = orch
                .request(
                    &http,
                    Method::POST,
                    &format!("/v1/apps/tools/{door}"),
                    "alice",
                    &serde_json::to_vec(&body).unwrap(),
                    None,
                )
                .send()
                .await
                .unwrap();
            assert_eq!(r.status().as_u16(), status, "{server} via {door}");
            let answer: Value = r.json().await.unwrap();
            let shown = answer["error"]["message"].as_str().unwrap_or_default();
            assert!(shown.starts_with(message), "{server} via {door}: {answer}");
            let code = if status == 504 { "tool_timeout" } else { "tool_unreachable" };
            assert_eq!(answer["error"]["code"], code, "{server} via {door}: {answer}");
            assert!(answer["error"]["requestId"].is_string(), "{answer}");
        }
    }
    // The hanging server listed its tools and received both calls: the 504s were the calls'
    // own timeouts, not a failed tools/list.
    let calls = tokio::task::spawn_blocking(move || hangs.calls()).await.unwrap();
    let names: Vec<&str> = calls.iter().filter_map(|c| c["name"].as_str()).collect();
    assert_eq!(names, ["slow_read", "slow_send"], "{calls:?}");
    holder.abort();
}

/// Review item 5: an app's document is served under the same rule as its tool doors. The
/// frame names its conversation (`?conversation=`); the document is read only when that
/// conversation's assistant may use the app's server. No conversation, an unknown one, another
/// user's, or an assistant without that server: 403, audited, and the server is never asked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_app_document_is_served_only_for_its_conversations_assistant() {
    let file = format!("{FILE}\n[[assistant]]\nname = \"elsewhere\"\ndescription = \"Other servers only.\"\ntools = [\"other*/*\"]\n");
    let s = stack_with(&file).await;
    s.conversation("doc-all", "default").await;
    s.conversation("doc-elsewhere", "elsewhere").await;
    let reads = || s.probe.requests().iter().filter(|r| r["rpc"] == "resources/read").count();
    let resource = |uid: &'static str, conversation: Option<&str>| {
        let mut path = "/v1/apps/resource?server=probe&uri=ui%3A%2F%2Fprobe%2Fview".to_string();
        if let Some(c) = conversation {
            path.push_str(&format!("&conversation={c}"));
        }
        let rid = format!("doc-{}", fresh_nonce());
        let request = s
            .orch
            .request(&s.http, Method::GET, &path, uid, b"", None)
            .header("x-request-id", &rid);
        async move { (request.send().await.unwrap().status().as_u16(), rid) }
    };
    // The default assistant's conversation: asked for (the probe has no such document: 404).
    let (status, _) = resource("alice", Some("doc-all")).await;
    assert_eq!(status, 404);
    let asked = tokio::task::block_in_place(reads);
    assert_eq!(asked, 1, "the server was asked once");
    for (uid, conversation, why) in [
        ("alice", Some("doc-elsewhere"), "no tool of this server"),
        ("alice", None, "not tied to a conversation"),
        ("alice", Some("doc-none"), "no such conversation"),
        ("bob", Some("doc-all"), "no such conversation"),
    ] {
        let (status, rid) = resource(uid, conversation).await;
        assert_eq!(status, 403, "{uid} {conversation:?}");
        let rows = audit_where(&s, "request_id", &rid);
        assert!(
            rows.iter().any(|(kind, _, _, outcome, detail)| kind == "app_refused"
                && outcome == "refused"
                && detail.as_deref().is_some_and(|d| d.contains(why))),
            "{uid} {conversation:?}: {rows:?}"
        );
    }
    assert_eq!(tokio::task::block_in_place(reads), asked, "a refused document was read");
    let (status, _) = resource("alice", Some("../doc-all")).await;
    assert_eq!(status, 400, "a malformed conversation id");
}
