//! Goal B6 end to end: each user's share of turns (running at once, and a token bucket) is
//! enforced with 429, `Retry-After` and the fixed error shape; other users are unaffected.
#![expect(clippy::unwrap_used, reason = "helpers of a test file fail the test by panicking")]

use reqwest::Method;
use serde_json::{Value, json};
use std::time::Duration;
use test_harness::orchestrator::{Options, Orchestrator, read_sse, user_turn};
use test_harness::scripted_model::ScriptedModel;

fn start(model: &ScriptedModel, env: &[(&str, &str)]) -> Orchestrator {
    Orchestrator::start(Options {
        model_url: model.url(),
        extra_env: env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
        ..Options::default()
    })
}

fn client() -> reqwest::Client {
    reqwest::Client::builder().timeout(Duration::from_secs(60)).build().unwrap()
}

async fn post(orch: &Orchestrator, uid: &str, conv: &str, msg: &str, text: &str) -> reqwest::Response {
    let body = user_turn(conv, msg, text);
    orch.request(&client(), Method::POST, "/v1/chat", uid, &body, None)
        .send()
        .await
        .unwrap()
}

async fn refusal(r: reqwest::Response) -> (u64, Value) {
    assert_eq!(r.status(), 429);
    let retry: u64 = r.headers()["retry-after"].to_str().unwrap().parse().unwrap();
    let body: Value = r.json().await.unwrap();
    assert!(body["error"]["requestId"].as_str().is_some_and(|s| !s.is_empty()), "{body}");
    assert_eq!(body["error"]["retryAfter"], json!(retry));
    (retry, body)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_user_with_too_many_running_turns_gets_429_and_others_do_not() {
    let model = ScriptedModel::start();
    // "slow" replies take about two seconds, so they are still running while we go on.
    model.add_rules(json!([{"match": "slow", "steps": [{"text": "a slow answer", "chunk_chars": 1, "delay_ms": 150}]}]));
    let orch = start(&model, &[("TAMEBI_USER_MAX_TURNS", "2"), ("TAMEBI_USER_TURNS_PER_MIN", "0")]);

    let first = post(&orch, "alice", "c1", "m1", "slow one").await;
    let second = post(&orch, "alice", "c2", "m1", "slow two").await;
    assert_eq!((first.status().as_u16(), second.status().as_u16()), (200, 200));
    let (retry, body) = refusal(post(&orch, "alice", "c3", "m1", "slow three").await).await;
    assert_eq!(retry, 1);
    assert!(body["error"]["message"].as_str().unwrap().contains("several replies"), "{body}");
    assert_eq!(body["error"]["code"], "too_many_running", "{body}");
    // bob has his own share.
    let bob = post(&orch, "bob", "c1", "m1", "hello").await;
    assert_eq!(bob.status(), 200);
    assert_eq!(read_sse(bob).await.last().map(String::as_str), Some("[DONE]"));
    // When alice's turns finish, her share is back.
    read_sse(first).await;
    read_sse(second).await;
    let again = post(&orch, "alice", "c3", "m2", "hello again").await;
    assert_eq!(again.status(), 200);
    assert_eq!(read_sse(again).await.last().map(String::as_str), Some("[DONE]"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_user_over_the_turn_rate_gets_429_with_retry_after() {
    let model = ScriptedModel::start();
    let orch = start(&model, &[("TAMEBI_USER_TURN_BURST", "3"), ("TAMEBI_USER_TURNS_PER_MIN", "6")]);
    for i in 0..3 {
        let r = post(&orch, "alice", "c1", &format!("m{i}"), "hello").await;
        assert_eq!(r.status(), 200, "turn {i}");
        read_sse(r).await;
    }
    // The bucket is empty; one turn comes back every 10 s.
    let (retry, body) = refusal(post(&orch, "alice", "c1", "m9", "hello").await).await;
    assert!((1..=10).contains(&retry), "{retry}");
    assert!(body["error"]["message"].as_str().unwrap().contains("faster than allowed"), "{body}");
    assert_eq!(body["error"]["code"], "too_fast", "{body}");
    let bob = post(&orch, "bob", "c1", "m1", "hello").await;
    assert_eq!(bob.status(), 200);
    read_sse(bob).await;
}

/// A client that goes away does not free its turn's share: the turn keeps running, and so
/// its slot stays taken until it has ended (the admission is the turn task's, not the stream's).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_client_frees_no_slot_while_its_turn_runs() {
    let model = ScriptedModel::start();
    // About four seconds of reply, a token every 150 ms: the server notices the gone client fast.
    model.add_rules(json!([{"match": "slow", "steps": [{"text": "a much slower answer, this", "chunk_chars": 1, "delay_ms": 150}]}]));
    let orch = start(&model, &[("TAMEBI_USER_MAX_TURNS", "1"), ("TAMEBI_USER_TURNS_PER_MIN", "0")]);

    let first = post(&orch, "alice", "c1", "m1", "slow one").await;
    assert_eq!(first.status(), 200);
    drop(first);
    // Time for the server to see the closed connection and drop its stream.
    tokio::time::sleep(Duration::from_millis(600)).await;
    let (_, body) = refusal(post(&orch, "alice", "c2", "m1", "hello").await).await;
    assert_eq!(body["error"]["code"], "too_many_running", "{body}");
    // Once the dropped client's turn has ended, the share is back.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let again = loop {
        let r = post(&orch, "alice", "c2", "m1", "hello").await;
        if r.status() != 429 {
            break r;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the dropped client's turn never released its slot"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(again.status(), 200);
    assert_eq!(read_sse(again).await.last().map(String::as_str), Some("[DONE]"));
}
