//! The test-only control endpoints: runtime rules, the request log and the model list.

use crate::common::{start, user};
use serde_json::{Value, json};

#[tokio::test]
async fn runtime_rules_take_precedence_until_cleared() {
    let s = start(json!({"rules": [{"match": "week", "steps": [{"text": "from file"}]}]})).await;
    assert_eq!(s.stream(user("my week")).await.text(), "from file");

    let url = format!("{}/__scripts", s.base);
    let resp = s
        .client
        .post(&url)
        .json(&json!({"rules": [{"match": "week", "steps": [{"text": "runtime"}]}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(s.stream(user("my week")).await.text(), "runtime");

    // Bad rules are refused with a reason and change nothing.
    let resp = s
        .client
        .post(&url)
        .json(&json!({"rules": [{"match": "week", "steps": [{"txet": "typo"}]}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 400);
    let err: Value = resp.json().await.unwrap();
    assert!(err["error"]["message"].as_str().unwrap().contains("txet"));
    assert_eq!(s.stream(user("my week")).await.text(), "runtime");

    assert_eq!(s.client.delete(&url).send().await.unwrap().status(), 204);
    assert_eq!(s.stream(user("my week")).await.text(), "from file");
    s.stop().await;
}

#[tokio::test]
async fn the_request_log_records_bodies_with_their_arrival_time() {
    let s = start(json!({"rules": []})).await;
    let log = format!("{}/__requests", s.base);
    s.stream(user("one")).await;
    let _ = s.post(json!({"model": "scripted"})).await; // refused, still logged
    let v: Value = s.client.get(&log).send().await.unwrap().json().await.unwrap();
    let entries = v["requests"].as_array().unwrap();
    assert_eq!(entries.len(), 2);
    assert_eq!(entries[0]["body"]["messages"][1]["content"], "one");
    assert!(chrono::DateTime::parse_from_rfc3339(entries[0]["receivedAt"].as_str().unwrap()).is_ok());
    assert_eq!(entries[1]["body"], json!({"model": "scripted"}));

    assert_eq!(s.client.delete(&log).send().await.unwrap().status(), 204);
    let v: Value = s.client.get(&log).send().await.unwrap().json().await.unwrap();
    assert_eq!(v["requests"], json!([]));
    s.stop().await;
}

#[tokio::test]
async fn models_lists_scripted_and_the_models_rules_name() {
    let s = start(json!({"rules": [{"match": "", "model": "big", "steps": [{"text": "x"}]}]})).await;
    s.client
        .post(format!("{}/__scripts", s.base))
        .json(&json!({"rules": [{"match": "", "model": "small", "steps": [{"text": "x"}]}]}))
        .send()
        .await
        .unwrap();
    let v: Value = s
        .client
        .get(format!("{}/v1/models", s.base))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(v["object"], "list");
    let ids: Vec<&str> = v["data"].as_array().unwrap().iter().map(|m| m["id"].as_str().unwrap()).collect();
    assert_eq!(ids, vec!["scripted", "small", "big"]);
    s.stop().await;
}
