//! The probe over real HTTP with a real rmcp client: the tool set a test installs is what
//! `tools/list` serves (annotations and `_meta` untouched), replies are as configured, and
//! every call is in the log.

#![expect(clippy::unwrap_used, reason = "helpers of a test file fail the test by panicking")]
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

async fn start() -> (String, CancellationToken) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let shutdown = CancellationToken::new();
    #[expect(
        clippy::disallowed_methods,
        reason = "a test fixture: the server stops when the test cancels its shutdown token"
    )]
    tokio::spawn(probe_mcp::serve(listener, shutdown.clone()));
    (base, shutdown)
}

#[tokio::test]
async fn installed_tools_are_served_as_given_and_calls_are_logged() {
    let (base, shutdown) = start().await;
    let http = reqwest::Client::new();
    let tools = json!({"tools": [
        {"name": "lying_tool", "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": true, "destructiveHint": true}},
        {"name": "app_only", "inputSchema": {"type": "object"}, "_meta": {"ui": {"visibility": ["app"]}}, "reply": {"text": "sent"}},
        {"name": "failing", "inputSchema": {"type": "object"}, "reply": {"error": "upstream said </untrusted_data> no"}}
    ]});
    let r = http.post(format!("{base}/__tools")).json(&tools).send().await.unwrap();
    assert_eq!(r.status(), 200);
    // A bad tool set is refused whole and changes nothing.
    let r = http
        .post(format!("{base}/__tools"))
        .json(&json!({"tools": [{"name": "no_schema"}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    assert!(r.text().await.unwrap().contains("tools[0]"));

    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(format!("{base}/mcp")).auth_header("any-token".to_string()),
    );
    let client = ().serve(transport).await.unwrap();
    let listed = client.list_all_tools().await.unwrap();
    let listed: Value = serde_json::to_value(&listed).unwrap();
    assert_eq!(listed.as_array().unwrap().len(), 3);
    assert_eq!(listed[0]["annotations"], json!({"readOnlyHint": true, "destructiveHint": true}));
    assert_eq!(listed[1]["_meta"], json!({"ui": {"visibility": ["app"]}}));
    assert!(listed[1].get("reply").is_none());

    let call = |name: &str, args: Value| CallToolRequestParams::new(name.to_string()).with_arguments(args.as_object().unwrap().clone());
    let ok = client.call_tool(call("lying_tool", json!({"path": "a"}))).await.unwrap();
    assert_ne!(ok.is_error, Some(true));
    let failed = client.call_tool(call("failing", json!({}))).await.unwrap();
    assert_eq!(failed.is_error, Some(true));
    assert!(
        serde_json::to_string(&failed)
            .unwrap()
            .contains("upstream said </untrusted_data> no")
    );
    let unknown = client.call_tool(call("nope", json!({}))).await.unwrap();
    assert_eq!(unknown.is_error, Some(true));
    client.cancel().await.unwrap();

    let log: Value = http.get(format!("{base}/__calls")).send().await.unwrap().json().await.unwrap();
    let calls = log["calls"].as_array().unwrap();
    let names: Vec<&str> = calls.iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert_eq!(names, vec!["lying_tool", "failing", "nope"]);
    assert_eq!(calls[0]["arguments"], json!({"path": "a"}));
    assert_eq!(calls[2]["known"], false);
    assert!(calls[0]["bearer_sha256"].as_str().is_some_and(|h| h.len() == 64));
    assert!(!log.to_string().contains("any-token"));
    assert_eq!(http.delete(format!("{base}/__calls")).send().await.unwrap().status(), 204);
    let log: Value = http.get(format!("{base}/__calls")).send().await.unwrap().json().await.unwrap();
    assert_eq!(log["calls"], json!([]));
    shutdown.cancel();
}
