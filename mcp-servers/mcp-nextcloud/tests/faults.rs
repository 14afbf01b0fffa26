//! Nextcloud slow, failing and lying (issue 32): a real fault-injecting proxy
//! (`dev/fault-proxy`) between mcp-nextcloud and the seeded stand-in answers with a 5xx,
//! resets the connection mid-body, stalls past the timeout, truncates or garbles the XML, or
//! sends a 207 whose body is not XML. Every case must end in a clear tool error within the
//! timeout (`MCP_NEXTCLOUD_TIMEOUT_SECS`, set short here: the 30 s stall exceeds it), a write
//! is reported done only when Nextcloud holds it, and the proxy's request log proves no write
//! that could double an effect is ever sent twice.
#![expect(clippy::expect_used, reason = "helpers of a test file fail the test by panicking")]

mod common;

use std::time::{Duration, Instant};

use common::{Client, call, connect, err_kind, ok, paths, text};
use serde_json::{Value, json};
use test_harness::fault_proxy::FaultProxy;
use test_harness::mcp_nextcloud::McpNextcloud;
use test_harness::mcp_server::McpServer;
use test_harness::standin::Standin;

/// The timeout mcp-nextcloud gets here; every stall below is well past it.
const TIMEOUT_SECS: u64 = 3;
/// How long an injected stall holds the answer (the 30 s).
const STALL_SECS: u64 = 30;

/// The stand-in, the proxy in front of it, and mcp-nextcloud talking to the proxy.
struct Faulty {
    nc: Standin,
    proxy: FaultProxy,
    mcp: McpServer,
}

impl Faulty {
    async fn start() -> Faulty {
        tokio::task::spawn_blocking(|| {
            let nc = Standin::start_seeded();
            let proxy = FaultProxy::start(nc.url());
            let timeout = TIMEOUT_SECS.to_string();
            let mcp = McpNextcloud::start_with(proxy.url(), &[("MCP_NEXTCLOUD_TIMEOUT_SECS", timeout.as_str())]);
            Faulty { nc, proxy, mcp }
        })
        .await
        .expect("start the fixture")
    }

    async fn client(&self, uid: &str) -> Client {
        connect(&self.mcp.url(), self.nc.app_password(uid)).await
    }
}

/// A tool call that must fail: its kind and text, after checking it came well within the
/// timeout (the "never a hang"; generous slack for a loaded 2-core machine).
async fn fails(client: &Client, tool: &str, args: Value) -> (String, String) {
    let started = Instant::now();
    let result = call(client, tool, args).await;
    let took = started.elapsed();
    assert!(
        took < Duration::from_secs(TIMEOUT_SECS * 2 + 10) && took < Duration::from_secs(STALL_SECS),
        "{tool} took {took:?}"
    );
    (err_kind(&result), text(&result))
}

/// Reads under each fault: a clear `retryable` error naming what failed, never a listing
/// made of whatever arrived; and once the fault is gone, the same call works again.
#[tokio::test(flavor = "multi_thread")]
async fn reads_fail_clearly_under_every_fault() {
    let env = Faulty::start().await;
    let alice = env.client("alice").await;
    assert!(paths(ok(&call(&alice, "files_list", json!({"path": ""})).await)).contains(&"notes.txt".to_string()));

    let listing = "/remote.php/dav/files/alice";
    let unreadable = "could not be read";
    let cases: [(&str, Value, &str); 7] = [
        ("5xx", json!({"action": "status", "status": 503}), "HTTP 503"),
        ("reset mid-body", json!({"action": "reset_mid_body"}), "connection failed"),
        ("stall", json!({"action": "stall", "secs": STALL_SECS}), "timed out"),
        ("truncated XML", json!({"action": "truncate"}), unreadable),
        (
            "malformed XML",
            json!({"action": "replace_body", "body": "<d:multistatus xmlns:d=\"DAV:\"><d:response><d:href>/x</d:propstat></d:response></d:multistatus>"}),
            unreadable,
        ),
        (
            "207 with HTML",
            json!({"action": "replace_body", "status": 207, "body": "<html><body>Nextcloud is in maintenance mode</body></html>"}),
            unreadable,
        ),
        (
            "207 with nothing",
            json!({"action": "replace_body", "status": 207, "body": ""}),
            unreadable,
        ),
    ];
    for (case, mut rule, says) in cases {
        rule["method"] = "PROPFIND".into();
        rule["path_contains"] = listing.into();
        env.proxy.set_rules(json!([rule]));
        let (kind, message) = fails(&alice, "files_list", json!({"path": ""})).await;
        assert_eq!(kind, "retryable", "{case}: {message}");
        assert!(message.contains(says), "{case}: {message:?} does not say {says:?}");
        assert!(message.contains("listing"), "{case}: the message names what failed: {message:?}");
        env.proxy.clear_rules();
        let again = call(&alice, "files_list", json!({"path": ""})).await;
        assert!(paths(ok(&again)).contains(&"notes.txt".to_string()), "{case}: no recovery");
    }

    // A file's body cut mid-way is an error, never the half that arrived as the file's text.
    env.proxy
        .set_rules(json!([{"method": "GET", "path_contains": "notes.txt", "action": "reset_mid_body"}]));
    let (kind, message) = fails(&alice, "files_read", json!({"path": "notes.txt"})).await;
    assert_eq!(kind, "retryable", "{message}");
    assert!(message.contains("reading the file"), "{message}");
    env.proxy.clear_rules();
}

/// Writes under each fault: done only when Nextcloud holds it, an unknown outcome of a move or
/// a create is `conflict` ("it may have happened; look"), and the proxy saw each write once.
#[tokio::test(flavor = "multi_thread")]
async fn writes_are_never_reported_done_unless_held_nor_sent_twice() {
    let env = Faulty::start().await;
    let alice = env.client("alice").await;
    let put = |name: &str| json!({"path": name, "content": "twelve bytes"});

    // 5xx before Nextcloud saw it: retryable, nothing written, one PUT.
    env.proxy.forget_requests();
    env.proxy.set_rules(json!([{"method": "PUT", "action": "status", "status": 503}]));
    let (kind, message) = fails(&alice, "files_write", put("a.txt")).await;
    assert_eq!(kind, "retryable", "{message}");
    assert_eq!(env.proxy.count("PUT"), 1, "the write was sent again");

    // Written, then the answer stalls past the timeout, or is dropped: an error, one PUT each.
    for (case, rule) in [
        ("stall", json!({"method": "PUT", "action": "stall", "secs": STALL_SECS})),
        ("dropped answer", json!({"method": "PUT", "action": "drop_answer"})),
    ] {
        env.proxy.forget_requests();
        env.proxy.set_rules(json!([rule]));
        let (kind, message) = fails(&alice, "files_write", put("b.txt")).await;
        assert!(kind == "retryable" || kind == "conflict", "{case}: {kind} {message}");
        assert_eq!(env.proxy.count("PUT"), 1, "{case}: the write was sent again");
    }

    // The PUT's body cut after its status: reported only because the read-back shows the file
    // whole (size and version), so what the user is told is what Nextcloud holds.
    env.proxy.set_rules(json!([{"method": "PUT", "action": "reset_mid_body"}]));
    let done = call(&alice, "files_write", put("c.txt")).await;
    assert_eq!(ok(&done)["size"], 12, "{}", text(&done));
    env.proxy.clear_rules();
    let held = env.nc_get("alice", "c.txt").await;
    assert_eq!(held, (200, "twelve bytes".to_string()));

    // The write lands but the read-back's XML is cut: never "done", but unconfirmed.
    env.proxy
        .set_rules(json!([{"method": "PROPFIND", "path_contains": "d.txt", "action": "truncate"}]));
    let (kind, message) = fails(&alice, "files_write", put("d.txt")).await;
    assert_eq!(kind, "conflict", "{message}");
    assert!(message.contains("may have happened"), "{message}");
    env.proxy.clear_rules();

    // MOVE is not idempotent: a lost answer (dropped, stalled, a 502 after the work) is
    // unconfirmed, and exactly one MOVE reaches Nextcloud each time.
    for (i, rule) in [
        json!({"method": "MOVE", "action": "drop_answer"}),
        json!({"method": "MOVE", "action": "stall", "secs": STALL_SECS}),
        json!({"method": "MOVE", "action": "status", "status": 502, "forward": true}),
    ]
    .into_iter()
    .enumerate()
    {
        env.nc_put("alice", &format!("m{i}.txt"), "move me").await;
        env.proxy.forget_requests();
        env.proxy.set_rules(json!([rule]));
        let (kind, message) = fails(
            &alice,
            "files_move",
            json!({"from": format!("m{i}.txt"), "to": format!("moved{i}.txt")}),
        )
        .await;
        assert_eq!(kind, "conflict", "{rule}: {message}");
        assert!(
            message.contains("may have happened") && message.contains("look before"),
            "{message}"
        );
        assert_eq!(env.proxy.count("MOVE"), 1, "{rule}: MOVE sent {} times", env.proxy.count("MOVE"));
        env.proxy.clear_rules();
        // It did happen (the proxy forwarded it): the error said so might be the case.
        assert_eq!(env.nc_get("alice", &format!("moved{i}.txt")).await.0, 200);
    }

    // A deck card create whose answer is cut mid-body: unconfirmed, one POST, one card.
    let boards = call(&alice, "deck_boards", json!({})).await;
    let board_id = ok(&boards)["boards"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["title"] == "Agent Board")
        .expect("Agent Board")["board_id"]
        .as_u64()
        .unwrap();
    let board = call(&alice, "deck_board", json!({"board_id": board_id})).await;
    let stack_id = ok(&board)["stacks"][0]["stack_id"].as_u64().unwrap();
    env.proxy.forget_requests();
    env.proxy
        .set_rules(json!([{"method": "POST", "path_contains": "/cards", "action": "reset_mid_body"}]));
    let (kind, message) = fails(
        &alice,
        "deck_create_card",
        json!({"board_id": board_id, "stack_id": stack_id, "title": "Once only"}),
    )
    .await;
    assert_eq!(kind, "conflict", "{message}");
    assert!(
        message.contains("creating the card") && message.contains("may have happened"),
        "{message}"
    );
    assert_eq!(env.proxy.count("POST"), 1, "the create was sent again");
    env.proxy.clear_rules();
    let board = call(&alice, "deck_board", json!({"board_id": board_id})).await;
    let copies = ok(&board)["stacks"][0]["cards"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["title"] == "Once only")
        .count();
    assert_eq!(copies, 1, "{}", text(&board));
}

impl Faulty {
    /// GET a file straight from the stand-in (not through the proxy): (status, body).
    async fn nc_get(&self, uid: &str, path: &str) -> (u16, String) {
        let r = reqwest::Client::new()
            .get(self.nc.dav_url(uid, path))
            .header("Authorization", self.nc.bearer(uid))
            .send()
            .await
            .expect("GET");
        (r.status().as_u16(), r.text().await.unwrap_or_default())
    }

    /// PUT a file straight into the stand-in.
    async fn nc_put(&self, uid: &str, path: &str, body: &'static str) {
        let r = reqwest::Client::new()
            .put(self.nc.dav_url(uid, path))
            .header("Authorization", self.nc.bearer(uid))
            .body(body)
            .send()
            .await
            .expect("PUT");
        assert!(r.status().is_success(), "PUT {path}: {}", r.status());
    }
}
