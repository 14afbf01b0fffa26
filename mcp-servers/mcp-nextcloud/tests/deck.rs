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
