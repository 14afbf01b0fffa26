//! End to end through the orchestrator: files_convert is an effect, so G3 asks first, and a
//! denied approval converts nothing and writes nothing. Real processes only: the `tamebi`
//! binary, the scripted model, mcp-nextcloud with the OnlyOffice stand-in
//! (dev/docserver-standin) behind it, and the seeded Nextcloud stand-in.
#![expect(clippy::unwrap_used, reason = "helpers of a test file fail the test by panicking")]

use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};
use test_harness::docserver::DocServer;
use test_harness::mcp_nextcloud::McpNextcloud;
use test_harness::orchestrator::{Options, Orchestrator, approve, parts, read_sse, user_turn};
use test_harness::scripted_model::ScriptedModel;
use test_harness::standin::Standin;

async fn post(orch: &Orchestrator, c: &reqwest::Client, bearer: &str, body: &[u8]) -> Vec<Value> {
    let r = orch
        .request(c, Method::POST, "/v1/chat", "alice", body, Some(bearer))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    parts(&read_sse(r).await)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_denied_conversion_converts_nothing_and_writes_nothing() {
    let (nc, docs) = tokio::task::spawn_blocking(|| {
        let nc = Standin::start_seeded();
        let docs = DocServer::start(nc.url());
        (nc, docs)
    })
    .await
    .unwrap();
    let loan_port = test_harness::free_port();
    let (bind, base) = (format!("127.0.0.1:{loan_port}"), format!("http://127.0.0.1:{loan_port}"));
    let mcp = McpNextcloud::start_with(
        nc.url(),
        &[
            ("MCP_DOCSERVER_URL", docs.url()),
            ("MCP_DOCSERVER_JWT_SECRET", docs.secret()),
            ("MCP_LOAN_BIND", &bind),
            ("MCP_LOAN_BASE_URL", &base),
        ],
    );
    let c = reqwest::Client::builder().timeout(Duration::from_secs(120)).build().unwrap();
    let docx = std::fs::read(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/office/contract.docx")).unwrap();
    let put = c
        .put(nc.dav_url("alice", "contract.docx"))
        .header("Authorization", nc.bearer("alice"))
        .body(docx)
        .send()
        .await
        .unwrap();
    assert!(put.status().is_success());

    let model = ScriptedModel::start();
    model.add_rules(json!([{"match": "PDF of the contract", "steps": [
        {"tool_calls": [{"name": "files_convert", "arguments": {"path": "contract.docx", "to": "pdf", "target": "contract.pdf"}}]},
        {"text": "Done."}
    ]}]));
    let orch = Orchestrator::start(Options {
        model_url: model.url(),
        mcp_servers: format!("nextcloud={};auth=nextcloud", mcp.url()),
        ..Options::default()
    });
    let bearer = nc.app_password("alice").to_string();
    let asked = post(&orch, &c, &bearer, &user_turn("office", "m1", "make a PDF of the contract")).await;
    let request: Vec<&Value> = asked.iter().filter(|p| p["type"] == "tool-approval-request").collect();
    assert_eq!(request.len(), 1, "files_convert waits for the person: {asked:?}");
    // The card shows the call as it will run: the source, the format and the target path.
    let call = asked
        .iter()
        .find(|p| p["type"] == "tool-input-available")
        .unwrap_or_else(|| panic!("the call's input is shown: {asked:?}"));
    assert_eq!(
        call["input"],
        json!({"path": "contract.docx", "to": "pdf", "target": "contract.pdf"})
    );
    assert!(call["toolName"].as_str().unwrap().ends_with("files_convert"), "{call}");
    let audit = tokio::task::block_in_place(|| docs.audit());
    assert_eq!(audit["requests"], 0, "nothing reaches the document server before a decision");

    let denied = post(&orch, &c, &bearer, &approve("office", &asked, 0, false)).await;
    assert!(denied.iter().any(|p| p["type"] == "tool-output-denied"), "{denied:?}");
    let audit = tokio::task::block_in_place(|| docs.audit());
    assert_eq!(
        audit["requests"], 0,
        "a denied conversion never reaches the document server: {audit}"
    );
    assert_eq!(audit["downloads"], json!([]));
    let pdf = c
        .get(nc.dav_url("alice", "contract.pdf"))
        .header("Authorization", nc.bearer("alice"))
        .send()
        .await
        .unwrap();
    assert_eq!(pdf.status(), 404, "a denied conversion writes nothing");
}
