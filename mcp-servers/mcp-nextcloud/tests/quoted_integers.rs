//! Small models quote integers: `"limit": "5"`, `"board_id": "12"`. Where a tool's published
//! schema says integer, a string that is exactly an integer is read as that integer, for every
//! integer argument (plain, optional, an id behind a `$ref`); tests/bad_input.rs holds the
//! quoted forms that are still refused.

mod common;

use common::{Env, call, ok};
use serde_json::json;

#[tokio::test(flavor = "multi_thread")]
async fn quoted_integers_are_read_as_integers() {
    let env = Env::start().await;
    let alice = env.client("alice").await;

    // notes.txt holds "alice notes about budget\n".
    let page = call(&alice, "files_read", json!({"path": "notes.txt", "offset": "6", "limit": "5"})).await;
    let page = ok(&page);
    assert_eq!((page["offset"].clone(), page["text"].clone()), (json!(6), json!("notes")), "{page}");
    let root = call(&alice, "files_list", json!({"path": ""})).await;
    let file_id = ok(&root)["entries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["path"] == "notes.txt")
        .and_then(|e| e["file_id"].as_u64())
        .expect("notes.txt has a file id");
    let by_id = call(&alice, "files_read", json!({"file_id": file_id.to_string(), "limit": "5"})).await;
    assert_eq!(ok(&by_id)["text"], "alice", "{}", ok(&by_id));

    let found = call(&alice, "files_find", json!({"pattern": "*.txt", "limit": "1"})).await;
    assert_eq!(ok(&found)["entries"].as_array().map(Vec::len), Some(1), "{}", ok(&found));
    let contacts = call(&alice, "contacts_search", json!({"query": "carol", "limit": "1"})).await;
    assert_eq!(ok(&contacts)["contacts"].as_array().map(Vec::len), Some(1), "{}", ok(&contacts));

    let boards = call(&alice, "deck_boards", json!({})).await;
    let board_id = ok(&boards)["boards"][0]["board_id"].as_u64().expect("a board");
    let quoted = call(&alice, "deck_board", json!({"board_id": board_id.to_string()})).await;
    let plain = call(&alice, "deck_board", json!({"board_id": board_id})).await;
    assert_eq!(ok(&quoted), ok(&plain));
}
