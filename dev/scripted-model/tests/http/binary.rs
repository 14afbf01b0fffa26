//! The real binary through the shared harness: flags, the shipped demo rules, the harness's
//! blocking API, and a clean exit on SIGTERM with a stream still open.

use std::time::Duration;

use serde_json::json;
use test_harness::scripted_model::ScriptedModel;

fn demo_file() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("demo.json")
}

#[tokio::test]
async fn the_demo_rules_and_the_harness_api_work_against_the_binary() {
    let model = ScriptedModel::start_with_scripts(&demo_file());
    assert!(model.url().ends_with("/v1"));
    let client = reqwest::Client::new();
    let send = |text: &str| {
        client
            .post(format!("{}/chat/completions", model.url()))
            .json(&crate::common::user(text))
            .send()
    };

    let out = crate::common::read_sse(send("please list my files").await.unwrap()).await;
    let calls = out.tool_calls();
    assert_eq!(calls[0].1, "files_list");
    assert_eq!(calls[0].2, "{\"path\":\"/\"}");

    let out = crate::common::read_sse(send("show me my week").await.unwrap()).await;
    let args: serde_json::Value = serde_json::from_str(&out.tool_calls()[0].2).unwrap();
    let from = chrono::NaiveDate::parse_from_str(args["from"].as_str().unwrap(), "%Y-%m-%d").unwrap();
    let to = chrono::NaiveDate::parse_from_str(args["to"].as_str().unwrap(), "%Y-%m-%d").unwrap();
    assert_eq!((to - from).num_days(), 6);

    model.add_rules(json!([{"match": "list my files", "steps": [{"text": "overridden"}]}]));
    assert_eq!(
        crate::common::read_sse(send("list my files").await.unwrap()).await.text(),
        "overridden"
    );
    model.clear_rules();

    let seen = model.requests();
    assert_eq!(seen.len(), 3);
    assert_eq!(seen[1]["messages"][1]["content"], "show me my week");
    model.clear_requests();
    assert!(model.requests().is_empty());
}

#[tokio::test]
async fn sigterm_ends_open_streams_and_exits_cleanly() {
    let mut model = ScriptedModel::start();
    model.add_rules(json!([{"match": "slow", "steps": [{"text": "a long answer", "chunk_chars": 1, "delay_ms": 60000}]}]));
    let resp = reqwest::Client::new()
        .post(format!("{}/chat/completions", model.url()))
        .json(&crate::common::user("slow"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let code = model.process().terminate(Duration::from_secs(10));
    assert_eq!(code, Some(0), "{}", model.process().logs());
    let out = crate::common::read_sse(resp).await;
    assert!(!out.done, "the stream was cut short by shutdown");
}
