//! Deck tools end to end: boards, a board's stacks and cards, creating and moving a card;
//! bob cannot read or change alice's board.

mod common;

use common::{Env, call, err_kind, ok};
use serde_json::{Value, json};

#[expect(clippy::unwrap_used, clippy::panic, reason = "test helper")]
fn stack<'a>(board: &'a Value, title: &str) -> &'a Value {
    board["stacks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["title"] == title)
        .unwrap_or_else(|| panic!("no stack {title}: {board}"))
}

#[expect(clippy::unwrap_used, reason = "test helper")]
fn card_titles(stack: &Value) -> Vec<String> {
    stack["cards"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["title"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn boards_cards_and_moves() {
    let env = Env::start().await;
    let alice = env.client("alice").await;
    let bob = env.client("bob").await;

    let boards = call(&alice, "deck_boards", json!({})).await;
    let b = ok(&boards)["boards"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["title"] == "Agent Board")
        .expect("Agent Board")
        .clone();
    let board_id = b["board_id"].as_u64().unwrap();

    let board = call(&alice, "deck_board", json!({"board_id": board_id})).await;
    let todo = stack(ok(&board), "To do").clone();
    let done = stack(ok(&board), "Done").clone();
    assert!(card_titles(&todo).contains(&"Write acceptance tests".to_string()));
    let (todo_id, done_id) = (todo["stack_id"].as_u64().unwrap(), done["stack_id"].as_u64().unwrap());

    let created = call(
        &alice,
        "deck_create_card",
        json!({"board_id": board_id, "stack_id": todo_id, "title": "Review budget", "description": "see plan.md", "duedate": "2026-03-01"}),
    )
    .await;
    let card_id = ok(&created)["card_id"].as_u64().unwrap();

    let moved = call(
        &alice,
        "deck_move_card",
        json!({"board_id": board_id, "card_id": card_id, "stack_id": done_id}),
    )
    .await;
    assert_eq!(ok(&moved)["from_stack_id"], todo_id);
    let after = call(&alice, "deck_board", json!({"board_id": board_id.to_string()})).await;
    assert!(card_titles(stack(ok(&after), "Done")).contains(&"Review budget".to_string()));
    assert!(!card_titles(stack(ok(&after), "To do")).contains(&"Review budget".to_string()));

    // bob: alice's board is not his to see or change.
    let bob_boards = call(&bob, "deck_boards", json!({})).await;
    assert!(
        !ok(&bob_boards)["boards"]
            .as_array()
            .unwrap()
            .iter()
            .any(|b| b["title"] == "Agent Board")
    );
    assert_eq!(
        err_kind(&call(&bob, "deck_board", json!({"board_id": board_id})).await),
        "not_found"
    );
    assert_eq!(
        err_kind(
            &call(
                &bob,
                "deck_move_card",
                json!({"board_id": board_id, "card_id": card_id, "stack_id": todo_id})
            )
            .await
        ),
        "not_found"
    );
    assert_eq!(
        err_kind(
            &call(
                &bob,
                "deck_create_card",
                json!({"board_id": board_id, "stack_id": todo_id, "title": "evil"})
            )
            .await
        ),
        "not_found"
    );
    let check = call(&alice, "deck_board", json!({"board_id": board_id})).await;
    assert!(card_titles(stack(ok(&check), "Done")).contains(&"Review budget".to_string()));
    assert!(!card_titles(stack(ok(&check), "To do")).contains(&"evil".to_string()));
}

/// Issue #27: on a Nextcloud with user_oidc, a request that no session cookie logged in has its
/// route parameters merged over its JSON body, so a reorder URL naming the card's current stack
/// answers 200 and moves nothing. The stand-in does the same; the move must still move, and say so
/// only because Deck shows the card in the target stack.
#[tokio::test(flavor = "multi_thread")]
async fn a_move_without_a_session_cookie_moves_the_card() {
    let env = Env::start().await;
    let alice = env.client("alice").await;
    let boards = call(&alice, "deck_boards", json!({})).await;
    let board_id = ok(&boards)["boards"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["title"] == "Agent Board")
        .and_then(|b| b["board_id"].as_u64())
        .expect("Agent Board");
    let board = call(&alice, "deck_board", json!({"board_id": board_id})).await;
    let todo = stack(ok(&board), "To do").clone();
    let done_id = stack(ok(&board), "Done")["stack_id"].as_u64().unwrap();
    let card_id = todo["cards"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["title"] == "Write acceptance tests")
        .and_then(|c| c["card_id"].as_u64())
        .expect("the fixture card");

    // alice's session times out: the move's first request presents the dead cookie (Nextcloud
    // deletes it and hands out no new one), so the reorder itself goes without a cookie.
    env.standin_control("sessions/expire?uid=alice", json!({})).await;
    let before = env.nc_sessions("alice").await;
    let moved = call(
        &alice,
        "deck_move_card",
        json!({"board_id": board_id, "card_id": card_id, "stack_id": done_id}),
    )
    .await;
    let after = env.nc_sessions("alice").await;
    assert_eq!(
        before["session_requests"], after["session_requests"],
        "the move must have gone without a session: {before} {after}"
    );
    assert_eq!(ok(&moved)["stack_id"], done_id);
    assert_eq!(ok(&moved)["from_stack_id"], todo["stack_id"]);
    let check = call(&alice, "deck_board", json!({"board_id": board_id})).await;
    assert!(card_titles(stack(ok(&check), "Done")).contains(&"Write acceptance tests".to_string()));
    assert!(!card_titles(stack(ok(&check), "To do")).contains(&"Write acceptance tests".to_string()));
}
