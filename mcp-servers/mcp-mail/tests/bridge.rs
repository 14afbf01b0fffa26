//! mcp-mail end to end: the real binary in front of the Nextcloud stand-in's mail bridge
//! (its fixture mailboxes for alice and bob and its SMTP sink), called by a real rmcp client
//! carrying one user's bearer. Nothing is mocked.

#![expect(clippy::expect_used, clippy::unwrap_used, reason = "a broken environment fails the test")]

use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Value, json};
use test_harness::mcp_mail::{McpMail, sent_mail};
use test_harness::mcp_server::McpServer;
use test_harness::standin::Standin;

type Client = RunningService<RoleClient, ()>;

async fn stack(builder: fn() -> Standin) -> (Standin, McpServer) {
    tokio::task::spawn_blocking(move || {
        let nc = builder();
        let mcp = McpMail::start(nc.url(), &[]);
        (nc, mcp)
    })
    .await
    .expect("start the stand-in and mcp-mail")
}

async fn connect(url: &str, token: &str) -> Client {
    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(url.to_string()).auth_header(token.to_string()),
    );
    ().serve(transport).await.expect("MCP client connects")
}

async fn call(client: &Client, name: &'static str, args: Value) -> CallToolResult {
    let args = args.as_object().cloned().unwrap_or_default();
    client
        .call_tool(CallToolRequestParams::new(name).with_arguments(args))
        .await
        .expect("tools/call")
}

fn text(r: &CallToolResult) -> String {
    r.content.iter().filter_map(|c| c.as_text().map(|t| t.text.clone())).collect()
}

fn error_kind(r: &CallToolResult) -> Option<String> {
    (r.is_error == Some(true)).then(|| {
        r.structured_content.as_ref().unwrap()["error"]["kind"]
            .as_str()
            .unwrap()
            .to_string()
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_composes_and_sends_as_the_caller() {
    let (nc, mcp) = stack(Standin::start).await;
    let alice = connect(&mcp.url(), nc.app_password("alice")).await;

    // The catalogue: five model tools, two app-only ones, the compose app.
    let tools = alice.list_all_tools().await.unwrap();
    let mut names: Vec<String> = tools.iter().map(|t| t.name.to_string()).collect();
    names.sort();
    assert_eq!(
        names,
        [
            "mail_accounts",
            "mail_compose",
            "mail_mailboxes",
            "mail_read",
            "mail_save_draft",
            "mail_search",
            "mail_send"
        ]
    );
    let resources = alice.list_all_resources().await.unwrap();
    assert_eq!(resources.iter().map(|r| r.uri.as_str()).collect::<Vec<_>>(), ["ui://mail/compose"]);

    let accounts = call(&alice, "mail_accounts", json!({})).await;
    assert_eq!(
        accounts.structured_content.as_ref().unwrap()["accounts"][0]["email"],
        "alice@example.com"
    );
    let boxes = call(&alice, "mail_mailboxes", json!({"account_id": 1})).await;
    assert!(text(&boxes).contains("INBOX"), "{}", text(&boxes));

    let found = call(&alice, "mail_search", json!({"query": "budget"})).await;
    let ids: Vec<i64> = found.structured_content.as_ref().unwrap()["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_i64().unwrap())
        .collect();
    assert!(ids.contains(&1), "{}", text(&found));

    let budget = call(&alice, "mail_read", json!({"message_id": 1})).await;
    assert!(
        text(&budget).contains("Subject: Q3 budget: numbers for review"),
        "{}",
        text(&budget)
    );
    // Small models quote integers: "1" where the schema says integer reads as 1.
    let quoted = call(&alice, "mail_read", json!({"message_id": "1"})).await;
    assert_eq!(quoted.structured_content, budget.structured_content, "{}", text(&quoted));
    let one = call(&alice, "mail_search", json!({"query": "budget", "limit": "1", "mailbox_id": null})).await;
    assert_eq!(
        one.structured_content.as_ref().unwrap()["messages"].as_array().map(Vec::len),
        Some(1),
        "{}",
        text(&one)
    );

    // An HTML-only mail comes back as text, without markup.
    let newsletter = call(&alice, "mail_read", json!({"message_id": 2})).await;
    let body = newsletter.structured_content.as_ref().unwrap()["text"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(!body.is_empty() && !body.contains('<'), "{body}");
    // Attachments are listed by name, type and size.
    let contract = call(&alice, "mail_read", json!({"message_id": 3})).await;
    assert!(
        text(&contract).contains("supplier-contract.pdf (application/pdf, 193 bytes)"),
        "{}",
        text(&contract)
    );

    // Compose sends nothing and returns the exact message.
    let args = json!({"to": ["bob@example.com"], "subject": "Re: Q3 budget", "body": "Hi Bob,\n\nthe numbers look fine.\n\nAlice"});
    let composed = call(&alice, "mail_compose", args.clone()).await;
    assert_eq!(composed.is_error, Some(false), "{}", text(&composed));
    let mail = composed.structured_content.clone().unwrap();
    assert_eq!(
        mail["from"],
        json!({"account_id": 1, "name": "Alice Adams", "email": "alice@example.com"})
    );
    assert_eq!(mail["body"], args["body"]);
    assert_eq!(mail["sent"], false);
    assert!(sent_mail(nc.url()).await.is_empty(), "compose sent something");

    // Bad addresses are refused before the bridge.
    let bad = call(
        &alice,
        "mail_compose",
        json!({"to": ["Bob <bob@example.com>"], "subject": "x", "body": "y"}),
    )
    .await;
    assert_eq!(error_kind(&bad).as_deref(), Some("invalid_argument"), "{}", text(&bad));

    // mail_send itself sends exactly what it is given (the orchestrator decides who may call it).
    let sent = call(&alice, "mail_send", args).await;
    assert_eq!(sent.is_error, Some(false), "{}", text(&sent));
    let sink = sent_mail(nc.url()).await;
    assert_eq!(sink.len(), 1);
    assert_eq!(sink[0]["from"], "Alice Adams <alice@example.com>");
    assert_eq!(sink[0]["to"], "bob@example.com");
    assert_eq!(sink[0]["subject"], "Re: Q3 budget");
    assert_eq!(sink[0]["body"], "Hi Bob,\n\nthe numbers look fine.\n\nAlice\n");
    alice.cancel().await.ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bob_never_reads_alices_mail() {
    let (nc, mcp) = stack(Standin::start).await;
    let bob = connect(&mcp.url(), nc.app_password("bob")).await;
    for (tool, args) in [
        ("mail_read", json!({"message_id": 1})),
        ("mail_mailboxes", json!({"account_id": 1})),
        ("mail_search", json!({"query": "", "mailbox_id": 1})),
    ] {
        let r = call(&bob, tool, args).await;
        assert_eq!(error_kind(&r).as_deref(), Some("not_found"), "{tool}: {}", text(&r));
    }
    // Bob's own search never lists alice's messages.
    let own = call(&bob, "mail_search", json!({"query": "budget"})).await;
    assert!(!text(&own).contains("Q3 budget"), "{}", text(&own));
    // Sending from alice's account is not something bob's token can do.
    let r = call(
        &bob,
        "mail_send",
        json!({"account_id": 1, "to": ["eve@example.com"], "subject": "x", "body": "y"}),
    )
    .await;
    assert_eq!(error_kind(&r).as_deref(), Some("not_found"), "{}", text(&r));
    assert!(sent_mail(nc.url()).await.is_empty());
    bob.cancel().await.ok();
}

/// Arguments the tool cannot read are a tool result in the shared shape, as every other
/// refusal (never a protocol error), and name what was wrong; an unknown tool likewise.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unreadable_arguments_are_an_invalid_argument_result() {
    let (nc, mcp) = stack(Standin::start).await;
    let alice = connect(&mcp.url(), nc.app_password("alice")).await;
    for (tool, args, names) in [
        ("mail_search", json!({"query": 5}), "invalid arguments"),
        ("mail_read", json!({"message_id": 1, "folder": "x"}), "folder"),
        ("mail_read", json!({}), "message_id"),
        // Only a string that is exactly an integer is read as one; the rest is the wrong type.
        ("mail_read", json!({"message_id": "+1"}), "invalid type: string \"+1\""),
        ("mail_read", json!({"message_id": " 1"}), "invalid type: string"),
        ("mail_read", json!({"message_id": "01"}), "invalid type: string"),
        ("mail_read", json!({"message_id": "1.0"}), "invalid type: string"),
        ("mail_read", json!({"message_id": "1e0"}), "invalid type: string"),
        ("mail_read", json!({"message_id": "99999999999999999999"}), "invalid type: string"),
        ("mail_mailboxes", json!({"account_id": "true"}), "invalid type: string"),
        // Read as an integer, then out of the field's range like any other integer.
        ("mail_search", json!({"limit": "-1"}), "invalid value: integer `-1`"),
        // Never the reverse: a number is not read as a string.
        ("mail_search", json!({"query": 5}), "invalid type: integer"),
    ] {
        let r = call(&alice, tool, args).await;
        assert_eq!(error_kind(&r).as_deref(), Some("invalid_argument"), "{tool}: {}", text(&r));
        assert!(text(&r).contains(names), "{tool}: {}", text(&r));
    }
    let args = json!({}).as_object().cloned().unwrap_or_default();
    let r = alice
        .call_tool(CallToolRequestParams::new("mail_forward").with_arguments(args))
        .await
        .expect("an unknown tool is a tool result");
    assert_eq!(error_kind(&r).as_deref(), Some("invalid_argument"), "{}", text(&r));
    alice.cancel().await.ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_mail_every_tool_says_so() {
    let (nc, mcp) = stack(|| Standin::builder().without_mail().start()).await;
    let alice = connect(&mcp.url(), nc.app_password("alice")).await;
    let r = call(&alice, "mail_search", json!({"query": "budget"})).await;
    assert_eq!(error_kind(&r).as_deref(), Some("unavailable"));
    assert_eq!(text(&r), "Error: Mail is not set up on this Nextcloud");
    alice.cancel().await.ok();
}

/// mcp-mail takes a token minted for itself and refuses mcp-nextcloud's (the Nextcloud app
/// holds one token per MCP server audience); no token gets the RFC 9728 challenge.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_a_token_for_mcp_mail_is_accepted() {
    let (nc, mcp) = stack(Standin::start).await;
    let http = reqwest::Client::new();
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let post = |token: Option<String>| {
        let mut rb = http
            .post(mcp.url())
            .header("accept", "application/json, text/event-stream")
            .json(&init);
        if let Some(t) = token {
            rb = rb.bearer_auth(t);
        }
        rb.send()
    };

    let none = post(None).await.unwrap();
    assert_eq!(none.status(), 401);
    let challenge = none.headers()["www-authenticate"].to_str().unwrap().to_string();
    assert!(
        challenge.contains(&format!("{}/.well-known/oauth-protected-resource", mcp.base_url())),
        "{challenge}"
    );
    let doc: Value = http
        .get(format!("{}/.well-known/oauth-protected-resource", mcp.base_url()))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(doc["resource"], mcp.url());

    let nc_for = |aud: String| {
        let nc = &nc;
        tokio::task::block_in_place(|| nc.mint_jwt("alice", &aud, std::time::Duration::from_secs(300)))
    };
    let nextclouds = nc_for("http://127.0.0.1:8711/mcp".into());
    let foreign = post(Some(nextclouds)).await.unwrap();
    assert_eq!(foreign.status(), 401);
    assert!(foreign.headers()["www-authenticate"].to_str().unwrap().contains("invalid_token"));

    let own = nc_for(mcp.url());
    let client = connect(&mcp.url(), &own).await;
    let accounts = call(&client, "mail_accounts", json!({})).await;
    assert_eq!(
        accounts.structured_content.as_ref().unwrap()["accounts"][0]["email"],
        "alice@example.com"
    );
    client.cancel().await.ok();
}

/// A send whose answer never comes (the stand-in's SMTP sink holds `slow.example.net` mail
/// past mcp-mail's bridge timeout, after taking it) or whose outcome Mail could not tell
/// (`unclear.example.net`) is `outcome_unknown`, never `retryable`: a retry would send the mail
/// twice. Only a send that certainly went nowhere (an SMTP refusal) stays retryable.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_send_with_an_unknown_outcome_is_not_retryable() {
    let (nc, mcp) = tokio::task::spawn_blocking(|| {
        let nc = Standin::start();
        let mcp = McpMail::start(nc.url(), &[("MAIL_BRIDGE_TIMEOUT_SECS", "2")]);
        (nc, mcp)
    })
    .await
    .expect("start the stand-in and mcp-mail");
    let alice = connect(&mcp.url(), nc.app_password("alice")).await;
    let mail = |to: &str| json!({"to": [to], "subject": "Numbers", "body": "See attached.\n"});

    let refused = call(&alice, "mail_send", mail("nobody@refused.example.net")).await;
    assert_eq!(error_kind(&refused).as_deref(), Some("retryable"), "{}", text(&refused));
    assert!(sent_mail(nc.url()).await.is_empty());

    let unclear = call(&alice, "mail_send", mail("someone@unclear.example.net")).await;
    assert_eq!(error_kind(&unclear).as_deref(), Some("outcome_unknown"), "{}", text(&unclear));
    assert!(text(&unclear).contains("Check the Sent folder"), "{}", text(&unclear));
    assert_eq!(sent_mail(nc.url()).await.len(), 1, "the unclear mail did go out");

    let started = std::time::Instant::now();
    let slow = call(&alice, "mail_send", mail("someone@slow.example.net")).await;
    assert_eq!(error_kind(&slow).as_deref(), Some("outcome_unknown"), "{}", text(&slow));
    assert!(text(&slow).contains("Check the Sent folder"), "{}", text(&slow));
    assert!(
        started.elapsed() < std::time::Duration::from_secs(8),
        "the bridge timeout did not apply"
    );
    // It did go out: the sink has it once its (late) answer is written.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while sent_mail(nc.url()).await.len() < 2 {
        assert!(std::time::Instant::now() < deadline, "the slow mail never reached the sink");
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    // Reads are unaffected by the send rules: an unknown account is still not_found.
    let r = call(&alice, "mail_mailboxes", json!({"account_id": 99})).await;
    assert_eq!(error_kind(&r).as_deref(), Some("not_found"), "{}", text(&r));
    alice.cancel().await.ok();
}

/// An account without a Sent mailbox set in Mail cannot send (Mail's send chain stops before
/// SMTP). That is a setting for the person to fix, not a passing failure: `setup_required`,
/// never `retryable`, with the bridge's words on what to do; nothing goes out. Set it again and
/// the same mail sends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_send_without_a_sent_mailbox_says_what_to_set_up() {
    let (nc, mcp) = stack(Standin::start).await;
    let sent_mailbox = |present: bool| special_mailbox(&nc, "sent", present);
    let alice = connect(&mcp.url(), nc.app_password("alice")).await;
    let mail = json!({"to": ["bob@example.com"], "subject": "Numbers", "body": "See attached.\n"});
    sent_mailbox(false).await;
    let r = call(&alice, "mail_send", mail.clone()).await;
    assert_eq!(error_kind(&r).as_deref(), Some("setup_required"), "{}", text(&r));
    assert!(
        text(&r).contains("no Sent folder set") && text(&r).contains("Default folders"),
        "{}",
        text(&r)
    );
    assert!(sent_mail(nc.url()).await.is_empty());
    sent_mailbox(true).await;
    let r = call(&alice, "mail_send", mail).await;
    assert_eq!(error_kind(&r), None, "{}", text(&r));
    assert_eq!(sent_mail(nc.url()).await.len(), 1);
    alice.cancel().await.ok();
}

/// The draft twin of the test above: an account without a Drafts mailbox set in Mail saves no
/// draft (the bridge's 409 `no_drafts_mailbox`). `setup_required` with the bridge's words, never
/// `retryable`; nothing lands in Drafts. Set it again and the same draft is saved.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_draft_without_a_drafts_mailbox_says_what_to_set_up() {
    let (nc, mcp) = stack(Standin::start).await;
    let drafts_mailbox = |present: bool| special_mailbox(&nc, "drafts", present);
    let alice = connect(&mcp.url(), nc.app_password("alice")).await;
    let draft = json!({"to": ["bob@example.com"], "subject": "Numbers draft", "body": "Later.\n"});
    let drafts_holding = |subject: &'static str| {
        let alice = &alice;
        async move {
            let boxes = call(alice, "mail_mailboxes", json!({"account_id": 1})).await;
            let drafts = boxes.structured_content.as_ref().unwrap()["mailboxes"]
                .as_array()
                .unwrap()
                .iter()
                .find(|b| b["name"] == "Drafts")
                .map(|b| b["id"].clone())
                .unwrap();
            let found = call(alice, "mail_search", json!({"mailbox_id": drafts})).await;
            text(&found).contains(subject)
        }
    };
    drafts_mailbox(false).await;
    let r = call(&alice, "mail_save_draft", draft.clone()).await;
    assert_eq!(error_kind(&r).as_deref(), Some("setup_required"), "{}", text(&r));
    assert!(
        text(&r).contains("no Drafts folder set") && text(&r).contains("Default folders"),
        "{}",
        text(&r)
    );
    assert!(
        !drafts_holding("Numbers draft").await,
        "a draft was stored without a Drafts mailbox"
    );
    drafts_mailbox(true).await;
    let r = call(&alice, "mail_save_draft", draft).await;
    assert_eq!(error_kind(&r), None, "{}", text(&r));
    assert!(drafts_holding("Numbers draft").await, "the draft was not saved once Drafts was set");
    assert!(sent_mail(nc.url()).await.is_empty(), "a draft sent something");
    alice.cancel().await.ok();
}

/// Sets or unsets alice's Sent or Drafts mailbox in the stand-in's Mail (`use_`: "sent", "drafts").
async fn special_mailbox(nc: &Standin, use_: &str, present: bool) {
    let url = format!("{}/standin/mail/{use_}-mailbox?uid=alice", nc.url());
    let r = reqwest::Client::new()
        .post(url)
        .json(&json!({"set": present}))
        .send()
        .await
        .unwrap();
    assert!(r.status().is_success(), "{}", r.status());
}
