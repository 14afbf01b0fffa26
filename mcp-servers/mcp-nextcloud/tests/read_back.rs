//! Issue #27: every write tool reports what Nextcloud holds afterwards, not what was asked. The
//! stand-in's `lose_writes` fault answers writes exactly as a successful one (statuses, ETags,
//! Deck's JSON) and stores nothing; each write tool must then fail as unconfirmed (`conflict`)
//! and say what Nextcloud holds, instead of reporting an effect that did not happen.

mod common;

use common::{Client, Env, call, err_kind, ok, paths, text};
use serde_json::{Value, json};

async fn lose_writes(env: &Env, on: bool) {
    env.standin_control("faults", json!({"lose_writes": on})).await;
}

/// The call fails as unconfirmed and its message contains `says`.
fn unconfirmed(r: &rmcp::model::CallToolResult, says: &str) {
    assert_eq!(err_kind(r), "conflict", "{}", text(r));
    assert!(text(r).contains(says), "{says:?} not in: {}", text(r));
}

#[expect(clippy::unwrap_used, reason = "test helper")]
async fn agent_board(alice: &Client) -> (u64, u64, u64, u64) {
    let boards = call(alice, "deck_boards", json!({})).await;
    let board_id = ok(&boards)["boards"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["title"] == "Agent Board")
        .and_then(|b| b["board_id"].as_u64())
        .unwrap();
    let board = call(alice, "deck_board", json!({"board_id": board_id})).await;
    let stacks = ok(&board)["stacks"].as_array().unwrap().clone();
    let id = |title: &str| -> &Value { stacks.iter().find(|s| s["title"] == title).unwrap() };
    let todo = id("To do");
    let card_id = todo["cards"][0]["card_id"].as_u64().unwrap();
    (
        board_id,
        todo["stack_id"].as_u64().unwrap(),
        id("Done")["stack_id"].as_u64().unwrap(),
        card_id,
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn deck_writes_that_did_not_happen_are_errors() {
    let env = Env::start().await;
    let alice = env.client("alice").await;
    let (board_id, todo, done, card_id) = agent_board(&alice).await;
    lose_writes(&env, true).await;
    let moved = call(
        &alice,
        "deck_move_card",
        json!({"board_id": board_id, "card_id": card_id, "stack_id": done}),
    )
    .await;
    unconfirmed(&moved, &format!("still in stack {todo}"));
    let created = call(
        &alice,
        "deck_create_card",
        json!({"board_id": board_id, "stack_id": todo, "title": "Never stored"}),
    )
    .await;
    unconfirmed(&created, "no such card is in that stack now");
    lose_writes(&env, false).await;
    // And with writes kept, the same calls succeed as Deck now holds them.
    let moved = call(
        &alice,
        "deck_move_card",
        json!({"board_id": board_id, "card_id": card_id, "stack_id": done}),
    )
    .await;
    assert_eq!(ok(&moved)["stack_id"], done);
}

#[tokio::test(flavor = "multi_thread")]
async fn file_writes_and_moves_that_did_not_happen_are_errors() {
    let env = Env::start().await;
    let alice = env.client("alice").await;
    ok(&call(&alice, "files_write", json!({"path": "ten.txt", "content": "0123456789"})).await);
    lose_writes(&env, true).await;
    // Same length, other content: only the version (ETag) tells that Nextcloud kept the old one.
    let same_size = call(&alice, "files_write", json!({"path": "ten.txt", "content": "abcdefghij"})).await;
    unconfirmed(&same_size, "another version now");
    let written = call(&alice, "files_write", json!({"path": "lost.txt", "content": "gone"})).await;
    unconfirmed(&written, "there is no such file now");
    let replaced = call(&alice, "files_write", json!({"path": "notes.txt", "content": "a new text"})).await;
    unconfirmed(&replaced, "bytes now");
    let moved = call(&alice, "files_move", json!({"from": "notes.txt", "to": "moved.txt"})).await;
    unconfirmed(&moved, "nothing at 'moved.txt' now");
    lose_writes(&env, false).await;
    let root = paths(ok(&call(&alice, "files_list", json!({"path": ""})).await));
    assert!(
        root.contains(&"notes.txt".to_string()) && !root.contains(&"moved.txt".to_string()),
        "{root:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_event_that_was_not_stored_is_an_error() {
    let env = Env::start().await;
    let alice = env.client("alice").await;
    lose_writes(&env, true).await;
    let created = call(
        &alice,
        "calendar_create_event",
        json!({"calendar": "personal", "title": "Lost", "start": "2026-04-01T10:00:00Z", "end": "2026-04-01T11:00:00Z"}),
    )
    .await;
    unconfirmed(&created, "there is no such event now");
    lose_writes(&env, false).await;
    let april = call(&alice, "calendar_events", json!({"from": "2026-04-01", "to": "2026-04-01"})).await;
    assert!(ok(&april)["events"].as_array().is_some_and(Vec::is_empty), "{}", ok(&april));
}
