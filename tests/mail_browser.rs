//! Mail end to end in a real Chromium (issue 12): a scripted-model turn searches, reads and
//! composes; the compose app renders in its sandboxed frame; a frame's own request to send
//! and a cancelled confirmation send nothing; Send in the frame followed by the island's own
//! confirmation sends exactly one mail, and the stand-in's SMTP sink holds exactly the
//! fields the frame and the confirmation showed. The dispatch is audited.
//!
//! Stack: the Nextcloud stand-in (mail bridge + SMTP sink), mcp-mail, the scripted model, the
//! `tamebi` orchestrator (`mail=…;auth=nextcloud`) and the island's dev host. Nothing skips.

#![expect(clippy::expect_used, reason = "helpers of a test file fail the test by panicking")]

use std::time::Duration;

use serde_json::{Value, json};
use test_harness::island::{DevHost, check, island_dir, require_chromium, require_node_modules, run_node_json};
use test_harness::mcp_mail::{McpMail, sent_mail};
use test_harness::orchestrator::{Options, Orchestrator};
use test_harness::scripted_model::ScriptedModel;
use test_harness::standin::Standin;
use test_harness::workspace_root;

/// What the demo prompt asks for (dev/scripted-model/demo.json plays the turn).
const PROMPT: &str = "Write a mail to Bob about the budget";

/// The demo's mail_compose arguments: (subject, body), read from the demo script itself so
/// this test proves the demo `scripts/dev` plays.
fn demo_mail() -> (String, String) {
    let path = workspace_root().join("dev/scripted-model/demo.json");
    let demo: Value = serde_json::from_slice(&std::fs::read(&path).expect("demo.json")).expect("demo.json is JSON");
    let rule = demo["rules"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|r| r["match"].as_str().is_some_and(|m| PROMPT.contains(m)))
        .expect("a demo rule for the mail prompt");
    let compose = rule["steps"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|s| s["tool_calls"].as_array().cloned().unwrap_or_default())
        .find(|c| c["name"] == "mail_compose")
        .expect("the demo composes a mail");
    let text = |k: &str| compose["arguments"][k].as_str().expect("a string argument").to_string();
    (text("subject"), text("body"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compose_confirm_and_send_in_chromium() {
    require_chromium();
    require_node_modules(
        &island_dir(),
        "playwright-core",
        "scripts/install.d/40-island.sh (npm ci in island/)",
    );

    let standin = tokio::task::spawn_blocking(Standin::start).await.expect("stand-in");
    let mail = McpMail::start(standin.url(), &[]);
    let model = ScriptedModel::start_with_scripts(&workspace_root().join("dev/scripted-model/demo.json"));
    let (subject, body) = demo_mail();
    let orch = Orchestrator::start(Options {
        model_url: model.url(),
        mcp_servers: format!("mail={};auth=nextcloud", mail.url()),
        ..Options::default()
    });
    let host = DevHost::start_with_servers(
        &orch.url(),
        standin.url(),
        &[("alice", standin.app_password("alice")), ("bob", standin.app_password("bob"))],
        &["mail"],
    );

    let artifacts = workspace_root().join("test-artifacts/mail-browser");
    let report = tokio::task::spawn_blocking({
        let env = vec![
            ("BASE_URL", host.url().to_string()),
            ("ARTIFACTS", artifacts.display().to_string()),
            ("PATH", std::env::var("PATH").unwrap_or_default()),
            ("TZ", "UTC".to_string()),
        ];
        move || run_node_json(&island_dir(), "browser-tests/mail.mjs", &[], &env, Duration::from_secs(240))
    })
    .await
    .expect("browser run");
    eprintln!("browser report: {report:#}");

    // The turn searched, read and composed; the compose app shows the mail as it will go out.
    let c = check(&report, "compose_frame_renders");
    assert_eq!(c["tools"], json!(["mail_search", "mail_read", "mail_compose"]));
    assert_eq!(c["sandbox"], "allow-scripts");
    assert_eq!(c["src"], "/apps/tamebi/frame?server=mail&uri=ui%3A%2F%2Fmail%2Fcompose");
    assert_eq!(
        c["shown"],
        json!({"from": "Alice Adams <alice@example.com>", "to": "bob@example.com", "subject": subject, "body": body})
    );

    // The frame asking by itself: the island asks the person, nothing reaches the dispatch door.
    let c = check(&report, "frame_request_alone_sends_nothing");
    assert!(
        c["cardText"].as_str().is_some_and(|t| t.contains("archive@attacker.example.net")),
        "{c}"
    );
    assert_eq!(c["whileAsking"], json!(["/apps/tamebi/api/apps/tools/describe"]), "{c}");
    assert_eq!(c["after"], json!(["/apps/tamebi/api/apps/tools/describe"]), "{c}");
    assert!(
        c["reply"]["error"]["message"].as_str().is_some_and(|m| m.contains("Cancelled")),
        "{c}"
    );

    // Send in the frame, Cancel in the island: nothing dispatched.
    let c = check(&report, "cancel_in_the_island_sends_nothing");
    assert_eq!(
        c["confirmation"],
        json!({"to": "bob@example.com", "subject": subject, "body": body}),
        "{c}"
    );
    assert_eq!(c["dispatched"], json!([]), "{c}");
    assert_eq!(c["frameStatus"], "Not sent.");

    // Send in the frame, Send in the island: exactly the confirmed arguments, once.
    let c = check(&report, "confirm_in_the_island_sends");
    assert_eq!(
        c["confirmation"],
        json!({"to": "bob@example.com", "subject": subject, "body": body}),
        "{c}"
    );
    // The island names the frame's conversation (the orchestrator lets the frame reach only what
    // that conversation's assistant allows; the dispatch ran, so alice has that conversation).
    let frame_conversation = c["dispatched"][0]["conversation"].as_str().unwrap_or_default().to_string();
    assert!(!frame_conversation.is_empty(), "{c}");
    assert_eq!(
        c["dispatched"],
        json!([{"conversation": frame_conversation, "server": "mail", "name": "mail_send", "arguments": {
            "account_id": 1, "to": ["bob@example.com"], "cc": [], "bcc": [], "subject": subject, "body": body, "in_reply_to": 1}}])
    );
    assert_eq!(c["frameStatus"], "Sent.");

    // The SMTP sink holds exactly one message, with exactly the shown fields.
    let sink = sent_mail(standin.url()).await;
    assert_eq!(sink.len(), 1, "{sink:#?}");
    let m = &sink[0];
    assert_eq!(m["from"], "Alice Adams <alice@example.com>");
    assert_eq!(m["to"], "bob@example.com");
    assert_eq!(m["cc"], "");
    assert_eq!(m["rcpt_to"], json!(["bob@example.com"]));
    assert_eq!(m["subject"], subject.as_str());
    assert_eq!(m["body"], format!("{body}\n"));
    assert_eq!(m["in_reply_to"], "<budget-q3@example.com>");

    // The dispatch is on record: who, which tool, the arguments' hash, the result.
    let db = rusqlite::Connection::open_with_flags(orch.data_dir().join("audit.db"), rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
        .expect("audit.db");
    type Row = (String, String, String, Option<String>, String, Option<String>);
    let rows: Vec<Row> = db
        .prepare("SELECT kind, uid, tool, arguments_sha256, outcome, conversation_id FROM audit WHERE tool = 'mail_send' ORDER BY seq")
        .expect("query")
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?)))
        .expect("rows")
        .collect::<Result<_, _>>()
        .expect("rows");
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(
        (rows[0].0.as_str(), rows[0].1.as_str(), rows[0].4.as_str()),
        ("app_dispatch", "alice", "ok")
    );
    assert_eq!(
        rows[0].5.as_deref(),
        Some(frame_conversation.as_str()),
        "the dispatch is on the conversation's record"
    );
    // The hash is of exactly the arguments the person confirmed and the island dispatched.
    let confirmed = &c["dispatched"][0]["arguments"];
    assert_eq!(
        rows[0].3.as_deref(),
        Some(tamebi::turn::arguments_hash(confirmed).as_str()),
        "{rows:?}"
    );
}
