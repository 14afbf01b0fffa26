//! End to end: the real `tamebi` binary, the scripted model, real HTTP and SSE.
//! Covers text turns, G1 statuses, IDOR, crash isolation, durability, resume and shutdown.
#![expect(clippy::unwrap_used, reason = "helpers of a test file fail the test by panicking")]

use reqwest::Method;
use serde_json::{Value, json};
use std::time::Duration;
use test_harness::orchestrator::{Options, Orchestrator, parts, read_sse, user_turn};
use test_harness::scripted_model::ScriptedModel;

fn start(model: &ScriptedModel) -> Orchestrator {
    Orchestrator::start(Options {
        model_url: model.url(),
        ..Options::default()
    })
}

fn client() -> reqwest::Client {
    reqwest::Client::builder().timeout(Duration::from_secs(60)).build().unwrap()
}

fn types(parts: &[Value]) -> Vec<String> {
    parts.iter().map(|p| p["type"].as_str().unwrap_or("?").to_string()).collect()
}

fn text_of(parts: &[Value]) -> String {
    parts
        .iter()
        .filter(|p| p["type"] == "text-delta")
        .map(|p| p["delta"].as_str().unwrap_or(""))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_text_turn_streams_and_is_stored() {
    let model = ScriptedModel::start();
    model.add_rules(json!([{"match": "hello", "steps": [{"text": "Hi Alice, how can I help?", "chunk_chars": 4}]}]));
    let orch = start(&model);
    let c = client();
    let body = user_turn("conv-1", "m1", "hello there");
    let r = orch
        .request(&c, Method::POST, "/v1/chat", "alice", &body, None)
        .header("x-request-id", "req-abc")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["x-vercel-ai-ui-message-stream"], "v1");
    assert_eq!(r.headers()["content-type"], "text/event-stream");
    let frames = read_sse(r).await;
    assert_eq!(frames.last().map(String::as_str), Some("[DONE]"));
    let p = parts(&frames);
    let t = types(&p);
    assert_eq!(t.first().map(String::as_str), Some("start"));
    assert_eq!(&t[t.len() - 2..], ["finish-step", "finish"]);
    assert!(t.contains(&"text-start".to_string()) && t.contains(&"text-end".to_string()));
    assert_eq!(text_of(&p), "Hi Alice, how can I help?");
    // The model saw the G2 contract and no workspace tools (no Nextcloud bearer was sent).
    let seen = model.requests();
    let last = seen.last().unwrap();
    assert!(last["messages"][0]["content"].as_str().unwrap().contains("<data_handling>"));
    // Only the orchestrator's own memory tools: nothing that reaches the workspace.
    let offered: Vec<&str> = last["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["function"]["name"].as_str())
        .collect();
    assert_eq!(offered, ["memory_list", "memory_write", "memory_forget"]);

    let r = orch
        .request(&c, Method::GET, "/v1/conversations/conv-1", "alice", b"", None)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let conv: Value = r.json().await.unwrap();
    assert_eq!(conv["title"], "hello there");
    assert_eq!(conv["messages"][0]["role"], "user");
    assert_eq!(conv["messages"][1]["parts"][1]["text"], "Hi Alice, how can I help?");
    let list: Value = orch.get_json(&c, "/v1/conversations", "alice").await;
    assert_eq!(list["conversations"][0]["id"], "conv-1");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g1_refuses_every_forgery_with_the_exact_status() {
    let model = ScriptedModel::start();
    let orch = start(&model);
    let c = client();
    let body = user_turn("c", "m", "hi");
    let url = format!("{}/v1/chat", orch.url());
    let now = chrono_now();
    let send = |headers: Vec<(String, String)>, body: Vec<u8>| {
        let mut rb = c.post(&url).body(body);
        for (k, v) in headers {
            rb = rb.header(k, v);
        }
        rb.send()
    };
    let good = Orchestrator::signed_headers_at("POST", "/v1/chat", "alice", &body, now, test_harness::orchestrator::SIGNING_SECRET);
    let with = |name: &str, value: &str| {
        good.iter()
            .map(|(k, v)| {
                if k == name {
                    (k.clone(), value.to_string())
                } else {
                    (k.clone(), v.clone())
                }
            })
            .collect::<Vec<_>>()
    };
    let without = |name: &str| good.iter().filter(|(k, _)| k != name).cloned().collect::<Vec<_>>();

    assert_eq!(
        send(
            with("authorization", "Bearer wrong-proxy-secret-xxxxxxxxxxxxxxxxxxxxx"),
            body.clone()
        )
        .await
        .unwrap()
        .status(),
        401
    );
    assert_eq!(send(without("authorization"), body.clone()).await.unwrap().status(), 401);
    assert_eq!(
        send(with("x-tamebi-signature", &"0".repeat(64)), body.clone())
            .await
            .unwrap()
            .status(),
        401
    );
    // A valid signature over a different body.
    assert_eq!(
        send(good.clone(), user_turn("c", "m", "something else")).await.unwrap().status(),
        401
    );
    // Skew: just past 60 s in the past and in the future. 62, read from the clock right here:
    // the server reads its clock up to a second later, which must not bring a future stamp
    // back to 60.
    for skew in [-62, 62] {
        let now = chrono_now();
        let h = Orchestrator::signed_headers_at(
            "POST",
            "/v1/chat",
            "alice",
            &body,
            now + skew,
            test_harness::orchestrator::SIGNING_SECRET,
        );
        assert_eq!(send(h, body.clone()).await.unwrap().status(), 401, "skew {skew}");
    }
    for h in ["x-tamebi-uid", "x-tamebi-ts", "x-tamebi-signature"] {
        assert_eq!(send(without(h), body.clone()).await.unwrap().status(), 401, "without {h}");
    }
    // Signed with the wrong secret.
    let h = Orchestrator::signed_headers_at("POST", "/v1/chat", "alice", &body, now, "another-signing-secret-0123456789abcdef");
    assert_eq!(send(h, body.clone()).await.unwrap().status(), 401);
    // A uid in the body, properly signed: 400.
    for field in ["uid", "user", "userId"] {
        let b = serde_json::to_vec(
            &json!({"id": "c", field: "bob", "messages": [{"id": "m", "role": "user", "parts": [{"type": "text", "text": "hi"}]}]}),
        )
        .unwrap();
        let r = orch.request(&c, Method::POST, "/v1/chat", "alice", &b, None).send().await.unwrap();
        assert_eq!(r.status(), 400, "{field}");
        let e: Value = r.json().await.unwrap();
        assert_eq!(e["error"]["message"], "The request was not understood.");
        assert!(e["error"]["requestId"].as_str().is_some_and(|s| !s.is_empty()));
    }
    // Errors carry fixed messages only.
    let r = send(without("authorization"), body.clone()).await.unwrap();
    let e: Value = r.json().await.unwrap();
    assert_eq!(e["error"]["message"], "Not signed in.");
    // Health needs no auth.
    assert_eq!(c.get(format!("{}/healthz", orch.url())).send().await.unwrap().status(), 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_users_conversation_is_not_found() {
    let model = ScriptedModel::start();
    let orch = start(&model);
    let c = client();
    orch.chat(&c, "alice", "alice-conv", "m1", "my secret plan").await;
    for (method, path) in [
        (Method::GET, "/v1/conversations/alice-conv"),
        (Method::DELETE, "/v1/conversations/alice-conv"),
    ] {
        let r = orch.request(&c, method.clone(), path, "bob", b"", None).send().await.unwrap();
        assert_eq!(r.status(), 404, "{method} {path}");
    }
    let r = orch
        .request(&c, Method::GET, "/v1/chat/alice-conv/stream", "bob", b"", None)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 204);
    let list: Value = orch.get_json(&c, "/v1/conversations", "bob").await;
    assert_eq!(list["conversations"], json!([]));
    // Bob writing to "alice-conv" creates his own conversation; alice's is untouched.
    orch.chat(&c, "bob", "alice-conv", "m1", "bob here").await;
    let alice: Value = orch.get_json(&c, "/v1/conversations/alice-conv", "alice").await;
    assert_eq!(alice["messages"][0]["parts"][0]["text"], "my secret plan");
    assert_eq!(alice["messages"].as_array().unwrap().len(), 2);
    // Alice deletes hers; bob's stays.
    assert_eq!(
        orch.request(&c, Method::DELETE, "/v1/conversations/alice-conv", "alice", b"", None)
            .send()
            .await
            .unwrap()
            .status(),
        204
    );
    assert_eq!(
        orch.request(&c, Method::GET, "/v1/conversations/alice-conv", "bob", b"", None)
            .send()
            .await
            .unwrap()
            .status(),
        200
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crashed_conversation_does_not_disturb_another() {
    let model = ScriptedModel::start();
    model.add_rules(json!([
        {"match": "slow story", "steps": [{"text": "Once upon a time there was a careful agent.", "chunk_chars": 3, "delay_ms": 30}]},
        {"match": "crash me", "steps": [{"text": "about to FAULT:panic-actor now", "chunk_chars": 100}]}
    ]));
    let orch = start(&model);
    let c = client();
    let slow = orch
        .request(
            &c,
            Method::POST,
            "/v1/chat",
            "alice",
            &user_turn("story", "m1", "slow story please"),
            None,
        )
        .send();
    let crash = orch
        .request(&c, Method::POST, "/v1/chat", "bob", &user_turn("boom", "m1", "crash me"), None)
        .header("x-request-id", "req-crash-1")
        .send();
    let (slow, crash) = tokio::join!(slow, crash);
    let (slow_frames, crash_frames) = tokio::join!(read_sse(slow.unwrap()), read_sse(crash.unwrap()));
    let crash_parts = parts(&crash_frames);
    let err = crash_parts.iter().find(|p| p["type"] == "error").expect("error part");
    assert!(err["errorText"].as_str().unwrap().contains("req-crash-1"));
    assert_eq!(crash_frames.last().map(String::as_str), Some("[DONE]"));
    let slow_parts = parts(&slow_frames);
    assert_eq!(text_of(&slow_parts), "Once upon a time there was a careful agent.");
    assert_eq!(types(&slow_parts).last().map(String::as_str), Some("finish"));
    // The crashed conversation is revived from chat.db on next use.
    model.add_rules(json!([{"match": "again", "steps": [{"text": "Back."}]}]));
    assert_eq!(text_of(&parts(&orch.chat(&c, "bob", "boom", "m2", "again").await)), "Back.");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_mid_turn_loses_nothing_committed() {
    let model = ScriptedModel::start();
    // Step 1 calls a tool that does not exist (an error output: a finished part), step 2
    // streams slowly enough to be killed in the middle.
    model.add_rules(json!([{"match": "durable", "steps": [
        {"text": "Checking first.", "tool_calls": [{"name": "no_such_tool", "arguments": {"x": 1}}]},
        {"text": "This second step is slow and will be cut off by the kill.", "chunk_chars": 2, "delay_ms": 100}
    ]}]));
    let mut orch = start(&model);
    let c = client();
    let mut r = orch
        .request(
            &c,
            Method::POST,
            "/v1/chat",
            "alice",
            &user_turn("dur", "m1", "durable please"),
            None,
        )
        .send()
        .await
        .unwrap();
    // Read until the second step has begun streaming text.
    let mut seen = String::new();
    while !seen.contains("\"delta\":\"Th\"") {
        let chunk = r.chunk().await.unwrap().unwrap_or_else(|| panic!("stream ended early: {seen}"));
        seen.push_str(&String::from_utf8_lossy(&chunk));
    }
    assert!(seen.contains("tool-output-error"));
    orch.kill9_and_restart();
    let conv: Value = orch.get_json(&c, "/v1/conversations/dur", "alice").await;
    let assistant = &conv["messages"][1];
    let parts = assistant["parts"].as_array().unwrap();
    assert!(
        parts.iter().any(|p| p["type"] == "text" && p["text"] == "Checking first."),
        "{assistant}"
    );
    assert!(
        parts
            .iter()
            .any(|p| p["type"] == "dynamic-tool" && p["state"] == "output-error" && p["toolName"] == "no_such_tool"),
        "{assistant}"
    );
    assert_eq!(conv["messages"][0]["parts"][0]["text"], "durable please");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_stream_resumes_exactly_once() {
    let model = ScriptedModel::start();
    let story = "Resumable streams replay what was sent and then continue live.";
    model.add_rules(json!([{"match": "resume", "steps": [{"text": story, "chunk_chars": 3, "delay_ms": 25}]}]));
    let orch = start(&model);
    let c = client();
    let mut r = orch
        .request(&c, Method::POST, "/v1/chat", "alice", &user_turn("res", "m1", "resume test"), None)
        .send()
        .await
        .unwrap();
    let first = r.chunk().await.unwrap().unwrap();
    assert!(!first.is_empty());
    drop(r);
    let r = orch
        .request(&c, Method::GET, "/v1/chat/res/stream", "alice", b"", None)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let frames = read_sse(r).await;
    let p = parts(&frames);
    assert_eq!(text_of(&p), story);
    assert_eq!(types(&p).iter().filter(|t| *t == "start").count(), 1);
    assert_eq!(frames.iter().filter(|f| *f == "[DONE]").count(), 1);
    // Nothing in flight any more.
    let r = orch
        .request(&c, Method::GET, "/v1/chat/res/stream", "alice", b"", None)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 204);
}

fn chrono_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_ends_open_streams_and_flushes() {
    let model = ScriptedModel::start();
    model.add_rules(json!([{"match": "long", "steps": [{"text": "A very long answer that will not finish before the shutdown arrives.", "chunk_chars": 1, "delay_ms": 100}]}]));
    let mut orch = start(&model);
    let c = client();
    let mut r = orch
        .request(
            &c,
            Method::POST,
            "/v1/chat",
            "alice",
            &user_turn("bye", "m1", "long answer please"),
            None,
        )
        .header("x-request-id", "req-term")
        .send()
        .await
        .unwrap();
    let mut seen = String::new();
    while !seen.contains("text-delta") {
        seen.push_str(&String::from_utf8_lossy(&r.chunk().await.unwrap().unwrap()));
    }
    let pid = orch.process().pid();
    std::process::Command::new("kill")
        .arg("-TERM")
        .arg(pid.to_string())
        .status()
        .unwrap();
    while let Some(chunk) = r.chunk().await.unwrap() {
        seen.push_str(&String::from_utf8_lossy(&chunk));
    }
    let frames = test_harness::orchestrator::parse_sse(&seen);
    let p = parts(&frames);
    let err = p.iter().find(|x| x["type"] == "error").expect("a final error part");
    assert!(err["errorText"].as_str().unwrap().contains("req-term"), "{err}");
    assert_eq!(frames.last().map(String::as_str), Some("[DONE]"));
    assert_eq!(
        orch.process().terminate(Duration::from_secs(15)),
        Some(0),
        "clean exit after SIGTERM"
    );
    // The databases were flushed: the user message and the committed reply are on disk.
    let db = rusqlite::Connection::open(orch.data_dir().join("chat.db")).unwrap();
    let n: i64 = db
        .query_row(
            "SELECT count(*) FROM messages WHERE uid = 'alice' AND conversation_id = 'bye'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert!(n >= 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_primary_model_falls_back_once() {
    let model = ScriptedModel::start();
    model.add_rules(json!([
        {"match": "fallback", "model": "primary", "steps": [{"hang": true}]},
        {"match": "fallback", "model": "backup", "steps": [{"text": "The backup model answered."}]}
    ]));
    let orch = Orchestrator::start(Options {
        model_url: model.url(),
        extra_env: vec![
            ("TAMEBI_MODEL".into(), "primary".into()),
            ("TAMEBI_FALLBACK_MODEL".into(), "backup".into()),
            ("TAMEBI_MODEL_FIRST_CHUNK_SECS".into(), "1".into()),
        ],
        ..Options::default()
    });
    let c = client();
    assert_eq!(
        text_of(&parts(&orch.chat(&c, "alice", "fb", "m1", "fallback test").await)),
        "The backup model answered."
    );
    let models: Vec<String> = model
        .requests()
        .iter()
        .map(|r| r["model"].as_str().unwrap_or("").to_string())
        .collect();
    assert_eq!(models, vec!["primary", "backup"]);
}

/// Issue review, item 3: an actor that stops between the handler's lookup and its `StartTurn`
/// (here on purpose, as an idle stop would) is replaced by a fresh one once; the person gets
/// the turn, revived from chat.db, never a 500.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_actor_stopping_before_a_turn_is_replaced_not_a_failure() {
    let model = ScriptedModel::start();
    model.add_rules(json!([
        {"match": "first words", "steps": [{"text": "Noted."}]},
        {"match": "stop-before-turn", "steps": [{"text": "Still here."}]}
    ]));
    let orch = start(&model);
    let c = client();
    assert_eq!(
        text_of(&parts(&orch.chat(&c, "alice", "stale", "m1", "first words").await)),
        "Noted."
    );
    let body = user_turn("stale", "m2", "FAULT:stop-before-turn, then go on");
    let r = orch
        .request(&c, Method::POST, "/v1/chat", "alice", &body, None)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let p = parts(&read_sse(r).await);
    assert_eq!(text_of(&p), "Still here.");
    assert_eq!(types(&p).last().map(String::as_str), Some("finish"));
    // The fresh actor read the history from chat.db: the model saw the first turn.
    let seen = model.requests();
    assert!(seen.last().unwrap().to_string().contains("first words"), "{seen:?}");
    let conv: Value = orch.get_json(&c, "/v1/conversations/stale", "alice").await;
    assert_eq!(conv["messages"].as_array().unwrap().len(), 4, "{conv}");
}

/// Issue review, item 1: a delete racing a new turn of the same (idle) conversation. Whatever
/// the order, once the delete has answered nothing of the deleted conversation comes back: no
/// reply written into it after the delete (a conversation that exists afterwards is a new one,
/// starting with the new user message), and a new conversation under that id was never
/// answered from the deleted history.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delete_racing_a_turn_never_brings_the_conversation_back() {
    let model = ScriptedModel::start();
    model.add_rules(json!([
        {"match": "first words", "steps": [{"text": "Noted."}]},
        {"match": "racing", "steps": [{"text": "A reply that takes a little while.", "chunk_chars": 2, "delay_ms": 5}]}
    ]));
    let orch = Orchestrator::start(Options {
        model_url: model.url(),
        extra_env: vec![("TAMEBI_IDLE_SECS".into(), "1".into())],
        ..Options::default()
    });
    let c = client();
    const ROUNDS: usize = 24;
    // One user per round: a person's own share of running turns (B6) is not what this tests.
    let racer = |i: usize| format!("racer{i:02}");
    for i in 0..ROUNDS {
        orch.chat(&c, &racer(i), &format!("race{i:02}"), "m1", &format!("first words r{i:02}x"))
            .await;
    }
    // Every actor idles out: the turns below find no running conversation.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let rounds = (0..ROUNDS).map(|i| {
        let (orch, c) = (&orch, &c);
        async move {
            let id = format!("race{i:02}");
            let chat = async {
                let body = user_turn(&id, "m2", &format!("racing r{i:02}x"));
                let r = orch
                    .request(c, Method::POST, "/v1/chat", &racer(i), &body, None)
                    .send()
                    .await
                    .unwrap();
                let status = r.status();
                read_sse(r).await;
                status
            };
            let delete = async {
                // Spread over the turn's start, so that some rounds land in every window.
                tokio::time::sleep(Duration::from_micros(300 * i as u64)).await;
                let path = format!("/v1/conversations/{id}");
                orch.request(c, Method::DELETE, &path, &racer(i), b"", None)
                    .send()
                    .await
                    .unwrap()
                    .status()
            };
            let (chat, delete) = tokio::join!(chat, delete);
            (i, chat, delete)
        }
    });
    let results = futures::future::join_all(rounds).await;
    // Let any write still in flight land (a turn cancelled by the delete, an actor stopping).
    tokio::time::sleep(Duration::from_millis(500)).await;
    let requests = model.requests();
    for (i, chat, delete) in results {
        assert_eq!(delete, 204, "round {i}: the conversation existed");
        // Whichever came first, the turn is answered: a turn that asked an actor the delete
        // stopped gets a fresh one, never a 500.
        assert_eq!(chat, 200, "round {i}");
        let r = orch
            .request(&c, Method::GET, &format!("/v1/conversations/race{i:02}"), &racer(i), b"", None)
            .send()
            .await
            .unwrap();
        if r.status() == 404 {
            continue;
        }
        let conv: Value = r.json().await.unwrap();
        let first = &conv["messages"][0];
        assert_eq!(first["role"], "user", "round {i}: a reply came back without its question: {conv}");
        assert!(
            !conv.to_string().contains("first words"),
            "round {i}: deleted messages came back: {conv}"
        );
        // The conversation that exists is a new one: its turn never saw the deleted history.
        let marker = format!("racing r{i:02}x");
        let asked = requests.iter().filter(|q| q.to_string().contains(&marker));
        for q in asked {
            assert!(
                !q.to_string().contains(&format!("first words r{i:02}x")),
                "round {i}: the new conversation was answered from the deleted history"
            );
        }
    }
}

/// A user message under the id of an earlier message of the conversation is refused with
/// 409 and its own code and text (a proxy shows its own text for the code, not "a reply is
/// already being written"); nothing is stored, and the earlier message keeps its text.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reused_message_id_is_refused_with_its_own_code() {
    let model = ScriptedModel::start();
    let orch = start(&model);
    let c = client();
    orch.chat(&c, "alice", "reuse", "m1", "first words").await;
    orch.chat(&c, "alice", "reuse", "m2", "second words").await;
    let r = orch
        .request(
            &c,
            Method::POST,
            "/v1/chat",
            "alice",
            &user_turn("reuse", "m1", "other words"),
            None,
        )
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 409);
    let e: Value = r.json().await.unwrap();
    assert_eq!(e["error"]["code"], "message_id_taken", "{e}");
    assert_eq!(
        e["error"]["message"],
        "Another message of this conversation already has this id. Send the message under a new id."
    );
    let stored: Value = orch.get_json(&c, "/v1/conversations/reuse", "alice").await;
    assert_eq!(stored["messages"][0]["parts"][0]["text"], "first words");
    assert_eq!(stored["messages"].as_array().unwrap().len(), 4, "{stored}");
}

/// Issue #27: a head over 8 KiB, refused by the HTTP parser before any handler, is answered in
/// the documented JSON shape with a request id, which the log carries too (docs/api.md).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_head_over_8_kib_is_refused_in_the_json_shape() {
    let model = ScriptedModel::start();
    let mut orch = start(&model);
    let r = client()
        .get(format!("{}/v1/conversations", orch.url()))
        .header("x-tamebi-credentials", "x".repeat(9 * 1024))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 431);
    assert_eq!(r.headers()["content-type"], "application/json");
    let id = r.headers()["x-request-id"].to_str().unwrap().to_string();
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["error"]["code"], "headers_too_large");
    assert_eq!(body["error"]["message"], "The request headers are too large.");
    assert_eq!(body["error"]["requestId"], id.as_str());
    let logged = test_harness::wait_until(Duration::from_secs(10), || {
        orch.process()
            .logs()
            .lines()
            .any(|l| l.contains("request refused by the HTTP parser") && l.contains(&id))
    });
    assert!(logged, "{}", orch.process().logs());
}

/// An orchestrator whose turns stop after `grace_secs` without a reader
/// (`TAMEBI_TURN_ORPHAN_GRACE_SECS`).
fn start_with_grace(model: &ScriptedModel, grace_secs: u32) -> Orchestrator {
    Orchestrator::start(Options {
        model_url: model.url(),
        extra_env: vec![("TAMEBI_TURN_ORPHAN_GRACE_SECS".into(), grace_secs.to_string())],
        ..Options::default()
    })
}

/// Reads `r` until its body holds a `text-delta`, then drops it (the client goes away).
async fn leave_after_first_delta(mut r: reqwest::Response) {
    let mut seen = String::new();
    while !seen.contains("\"text-delta\"") {
        seen.push_str(&String::from_utf8_lossy(&r.chunk().await.unwrap().unwrap()));
    }
}

/// Waits (up to `patience`) until the stored reply of conversation `cid` has a part of type
/// `part` (read through `GET /v1/conversations/{id}`, which, unlike a resume, reads no stream).
async fn until_stored(orch: &Orchestrator, c: &reqwest::Client, cid: &str, part: &str, patience: Duration) -> Option<Value> {
    let deadline = std::time::Instant::now() + patience;
    while std::time::Instant::now() < deadline {
        let conv: Value = orch.get_json(c, &format!("/v1/conversations/{cid}"), "alice").await;
        let has = conv["messages"][1]["parts"]
            .as_array()
            .is_some_and(|parts| parts.iter().any(|p| p["type"] == part));
        if has {
            return Some(conv);
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    None
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_nobody_reads_is_stopped_after_the_grace_and_its_partial_answer_kept() {
    let model = ScriptedModel::start();
    // 200 characters at one per 100 ms: 20 s, far past the 2 s grace.
    let story = "An answer nobody waits for any more. ".repeat(6);
    model.add_rules(json!([{"match": "orphan", "steps": [{"text": story, "chunk_chars": 1, "delay_ms": 100}]}]));
    let orch = start_with_grace(&model, 2);
    let c = client();
    let r = orch
        .request(&c, Method::POST, "/v1/chat", "alice", &user_turn("orph", "m1", "orphan test"), None)
        .header("x-request-id", "req-orphan")
        .send()
        .await
        .unwrap();
    leave_after_first_delta(r).await;
    let left = std::time::Instant::now();
    // No resume: the turn ends after the grace, long before the model would have finished.
    let conv = until_stored(&orch, &c, "orph", "data-interrupted", Duration::from_secs(12))
        .await
        .expect("the turn went on without a reader");
    println!(
        "orphaned turn stopped {:.1} s after its client left (grace 2 s)",
        left.elapsed().as_secs_f64()
    );
    // The turn's end follows its last commit at once: nothing in flight any more (a resume
    // now cannot revive it; the stop is committed).
    let mut in_flight = true;
    for _ in 0..25 {
        let r = orch
            .request(&c, Method::GET, "/v1/chat/orph/stream", "alice", b"", None)
            .send()
            .await
            .unwrap();
        if r.status() == 204 {
            in_flight = false;
            break;
        }
        drop(r);
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(!in_flight, "the stopped turn still counts as running");
    assert_cut_short(
        &conv["messages"][1],
        &story,
        "req-orphan",
        "This reply was stopped: it was no longer being read (the page was closed or lost its connection). Send your message again to continue.",
    );
    // The conversation goes on: the next message gets its turn.
    model.add_rules(json!([{"match": "again", "steps": [{"text": "Here again."}]}]));
    let r = orch
        .request(&c, Method::POST, "/v1/chat", "alice", &user_turn("orph", "m2", "again"), None)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(text_of(&parts_of(r).await), "Here again.");
}

async fn parts_of(r: reqwest::Response) -> Vec<Value> {
    parts(&read_sse(r).await)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resume_within_the_grace_keeps_the_turn_going_to_its_end() {
    let model = ScriptedModel::start();
    // 100 characters at one per 100 ms: 10 s, of which the client reads none for 4 s in all,
    // never for the whole 3 s grace at once.
    let story = "Resumed in time, this answer is written to its very last word without a stop. ".repeat(2);
    let story = &story[..100];
    model.add_rules(json!([{"match": "comeback", "steps": [{"text": story, "chunk_chars": 1, "delay_ms": 100}]}]));
    let orch = start_with_grace(&model, 3);
    let c = client();
    let r = orch
        .request(
            &c,
            Method::POST,
            "/v1/chat",
            "alice",
            &user_turn("back", "m1", "comeback test"),
            None,
        )
        .send()
        .await
        .unwrap();
    leave_after_first_delta(r).await;
    let resume = || orch.request(&c, Method::GET, "/v1/chat/back/stream", "alice", b"", None).send();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let r = resume().await.unwrap();
    assert_eq!(r.status(), 200, "the turn is still running");
    leave_after_first_delta(r).await;
    // Read for a moment, then away again: the first 2 s without a reader do not count any more.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let r = resume().await.unwrap();
    assert_eq!(r.status(), 200, "the turn is still running after 4 s without a reader in all");
    let p = parts_of(r).await;
    assert_eq!(text_of(&p), story);
    assert_eq!(types(&p).last().map(String::as_str), Some("finish"), "{:?}", types(&p));
    assert!(!p.iter().any(|x| x["type"] == "error" || x["type"] == "data-interrupted"), "{p:?}");
    let conv: Value = orch.get_json(&c, "/v1/conversations/back", "alice").await;
    let stored = conv["messages"][1]["parts"].as_array().unwrap().clone();
    assert!(!stored.iter().any(|x| x["type"] == "data-interrupted"), "{stored:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_waiting_for_an_approval_is_not_stopped_for_want_of_a_reader() {
    let model = ScriptedModel::start();
    model.add_rules(json!([{"match": "remember my drink", "steps": [
        {"tool_calls": [{"name": "memory_write", "arguments": {"fact": "Likes tea"}}]},
        {"text": "Saved."}
    ]}]));
    let orch = start_with_grace(&model, 2);
    let c = client();
    let mut r = orch
        .request(
            &c,
            Method::POST,
            "/v1/chat",
            "alice",
            &user_turn("wait", "m1", "Please remember my drink"),
            None,
        )
        .send()
        .await
        .unwrap();
    // The client leaves at the first chunk, before the approval request reaches it, and stays
    // away well past the grace.
    assert!(!r.chunk().await.unwrap().unwrap().is_empty());
    drop(r);
    until_stored(&orch, &c, "wait", "dynamic-tool", Duration::from_secs(10))
        .await
        .expect("the call was stored");
    tokio::time::sleep(Duration::from_secs(4)).await;
    let conv: Value = orch.get_json(&c, "/v1/conversations/wait", "alice").await;
    let asked = conv["messages"][1]["parts"].as_array().unwrap().clone();
    assert!(
        asked
            .iter()
            .any(|p| p["type"] == "dynamic-tool" && p["state"] == "approval-requested"),
        "the approval still waits: {asked:?}"
    );
    assert!(!asked.iter().any(|p| p["type"] == "data-interrupted"), "{asked:?}");
    // Decided long after the grace: the call runs and the turn ends as any other.
    let approval = json!({"type": "dynamic-tool", "toolName": "memory_write",
        "toolCallId": asked.iter().find(|p| p["type"] == "dynamic-tool").unwrap()["toolCallId"],
        "state": "approval-responded", "input": {"fact": "Likes tea"},
        "approval": {"id": asked.iter().find(|p| p["type"] == "dynamic-tool").unwrap()["approval"]["id"], "approved": true}});
    let body = serde_json::to_vec(&json!({"id": "wait", "messages": [
        {"id": conv["messages"][1]["id"], "role": "assistant", "parts": [approval]}
    ]}))
    .unwrap();
    let r = orch
        .request(&c, Method::POST, "/v1/chat", "alice", &body, None)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let p = parts_of(r).await;
    assert!(p.iter().any(|x| x["type"] == "tool-output-available"), "{p:?}");
    assert_eq!(text_of(&p), "Saved.");
    let facts: Value = orch.get_json(&c, "/v1/memory", "alice").await;
    assert_eq!(facts["facts"][0]["text"], "Likes tea", "{facts}");
}

/// `POST /v1/chat/{id}/stop` for `uid`.
async fn stop(orch: &Orchestrator, c: &reqwest::Client, uid: &str, cid: &str) -> reqwest::StatusCode {
    orch.request(c, Method::POST, &format!("/v1/chat/{cid}/stop"), uid, b"", None)
        .send()
        .await
        .unwrap()
        .status()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_ends_the_turn_at_once_keeps_its_partial_answer_and_frees_the_conversation() {
    let model = ScriptedModel::start();
    // 200 characters at one per 100 ms: 20 s, and the default 30 s grace never passes here,
    // since the client keeps reading: only the stop can end it early.
    let story = "An answer its person stops half-way through. ".repeat(5);
    let story = &story[..200];
    model.add_rules(json!([{"match": "stop me", "steps": [{"text": story, "chunk_chars": 1, "delay_ms": 100}]}]));
    let orch = start(&model);
    let c = client();
    let mut r = orch
        .request(&c, Method::POST, "/v1/chat", "alice", &user_turn("halt", "m1", "stop me"), None)
        .header("x-request-id", "req-stop")
        .send()
        .await
        .unwrap();
    let mut seen = String::new();
    while !seen.contains("\"text-delta\"") {
        seen.push_str(&String::from_utf8_lossy(&r.chunk().await.unwrap().unwrap()));
    }
    assert_eq!(stop(&orch, &c, "alice", "halt").await, 204);
    // The client still reading gets the rest: the stop's part, the error, and the end.
    seen.push_str(&r.text().await.unwrap());
    let streamed = parts(&test_harness::orchestrator::parse_sse(&seen));
    let kinds = types(&streamed);
    assert!(!kinds.iter().any(|k| k == "finish"), "{kinds:?}");
    assert!(kinds.iter().any(|k| k == "data-interrupted"), "{kinds:?}");
    let streamed_text = text_of(&streamed);
    assert!(
        streamed_text.len() < story.len(),
        "the answer went on to its end: {streamed_text:?}"
    );
    // The 204 came once the turn was over: the next message is taken at once, no 409.
    model.add_rules(json!([{"match": "again", "steps": [{"text": "Here again."}]}]));
    let r = orch
        .request(&c, Method::POST, "/v1/chat", "alice", &user_turn("halt", "m2", "again"), None)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(text_of(&parts_of(r).await), "Here again.");
    // The partial answer is stored, closed, with the part that says who stopped it.
    let conv: Value = orch.get_json(&c, "/v1/conversations/halt", "alice").await;
    assert_cut_short(
        &conv["messages"][1],
        story,
        "req-stop",
        "You stopped this reply. Send your message again to continue.",
    );
    assert_eq!(conv["messages"][3]["parts"][1]["text"], "Here again.", "{conv}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_without_a_running_turn_is_204_and_another_users_conversation_404() {
    let model = ScriptedModel::start();
    let orch = start(&model);
    let c = client();
    orch.chat(&c, "alice", "done", "m1", "hello").await;
    // Nothing runs: idempotent, as often as it is pressed, and nothing is added.
    let before: Value = orch.get_json(&c, "/v1/conversations/done", "alice").await;
    assert_eq!(stop(&orch, &c, "alice", "done").await, 204);
    assert_eq!(stop(&orch, &c, "alice", "done").await, 204);
    let after: Value = orch.get_json(&c, "/v1/conversations/done", "alice").await;
    assert_eq!(before, after);
    // No oracle: another user's conversation answers exactly as one that does not exist.
    assert_eq!(stop(&orch, &c, "bob", "done").await, 404);
    assert_eq!(stop(&orch, &c, "alice", "never-was").await, 404);
    assert_eq!(stop(&orch, &c, "alice", "not%20an%20id").await, 404);
    // And nothing of alice's changed by bob's attempt: her next message is answered.
    assert_eq!(
        orch.chat(&c, "alice", "done", "m2", "again").await.last().map(String::as_str),
        Some("[DONE]")
    );
}

/// A stored answer that was stopped mid-reply: its text is a non-empty beginning of `story`,
/// closed, and its last part is the `data-interrupted` part with `request_id` and `message`.
fn assert_cut_short(answer: &Value, story: &str, request_id: &str, message: &str) {
    let parts = answer["parts"].as_array().unwrap();
    let text: String = parts
        .iter()
        .filter(|p| p["type"] == "text")
        .map(|p| p["text"].as_str().unwrap())
        .collect();
    assert!(!text.is_empty() && text.len() < story.len(), "a partial answer: {answer}");
    assert!(story.starts_with(&text), "{text:?}");
    assert!(parts.iter().all(|p| p["type"] != "text" || p["state"] == "done"), "{answer}");
    let stopped = parts.last().unwrap();
    assert_eq!(stopped["type"], "data-interrupted", "{answer}");
    assert_eq!(stopped["data"]["requestId"], request_id);
    assert_eq!(stopped["data"]["message"], format!("{message} (request id: {request_id})"));
}
