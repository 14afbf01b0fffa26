//! Bad input: every tool refuses malformed arguments with `invalid_argument` and a clear
//! message, before any request reaches Nextcloud, and nothing changes on the stand-in.

mod common;

use common::{Env, call, err_kind, ok, text};
use serde_json::{Value, json};

async fn snapshot(env: &Env, alice: &common::Client) -> (String, Value, Value, Value) {
    let tree = env.nc_tree("alice").await;
    let events = call(alice, "calendar_events", json!({"from": "2026-01-01", "to": "2026-12-31"})).await;
    let boards = call(alice, "deck_boards", json!({})).await;
    let board_id = ok(&boards)["boards"][0]["board_id"].clone();
    let board = call(alice, "deck_board", json!({"board_id": board_id})).await;
    (tree, ok(&events).clone(), ok(&board).clone(), ok(&boards).clone())
}

#[tokio::test(flavor = "multi_thread")]
async fn every_tool_refuses_bad_input_and_changes_nothing() {
    let env = Env::start().await;
    let alice = env.client("alice").await;
    let before = snapshot(&env, &alice).await;
    let board_id = before.3["boards"][0]["board_id"].as_u64().unwrap();
    let stack_id = before.2["stacks"][0]["stack_id"].as_u64().unwrap();
    let card_id = before.2["stacks"][0]["cards"][0]["card_id"].as_u64().unwrap();
    let big = "x".repeat(2 * 1024 * 1024 + 1);

    let cases: Vec<(&str, Value)> = vec![
        ("files_list", json!({"path": "../bob"})),
        ("files_list", json!({"path": "http://evil.example/x"})),
        ("files_list", json!({"path": "a\\b"})),
        ("files_list", json!({"path": 42})),
        ("files_read", json!({})),
        ("files_read", json!({"path": "notes.txt", "file_id": 1})),
        ("files_read", json!({"path": "a/../../etc/passwd"})),
        ("files_read", json!({"path": "notes\u{0}.txt"})),
        ("files_read", json!({"file_id": "12abc"})),
        ("files_read", json!({"file_id": -3})),
        ("files_read", json!({"path": "notes.txt", "limit": 0})),
        ("files_read", json!({"path": "notes.txt", "limit": 1_000_000})),
        // A quoted integer reads as one ("5" as 5); nothing else quoted does.
        ("files_read", json!({"path": "notes.txt", "limit": "+5"})),
        ("files_read", json!({"path": "notes.txt", "limit": "5.0"})),
        ("files_read", json!({"path": "notes.txt", "offset": " 1"})),
        ("files_read", json!({"path": "notes.txt", "offset": "-1"})),
        ("files_read", json!({"path": "notes.txt", "limit": "1000000"})),
        ("files_read", json!({"file_id": "99999999999999999999"})),
        // Never the reverse: a number is not read as a string.
        ("files_read", json!({"path": 5})),
        ("files_write", json!({"path": "x.txt", "content": 5})),
        ("files_find", json!({"pattern": ""})),
        ("files_find", json!({"pattern": "**"})),
        ("files_find", json!({"pattern": "a/b"})),
        ("files_find", json!({"pattern": "x", "path": "//evil"})),
        ("files_find", json!({"pattern": "x", "limit": 0})),
        ("files_write", json!({"path": "", "content": "x"})),
        ("files_write", json!({"path": "../x.txt", "content": "x"})),
        ("files_write", json!({"path": "https://evil.example/x", "content": "x"})),
        ("files_write", json!({"path": "big.txt", "content": big})),
        ("files_write", json!({"path": "x.txt"})),
        ("files_move", json!({"from": "notes.txt", "to": "notes.txt"})),
        ("files_move", json!({"from": "notes.txt", "to": "../notes.txt"})),
        ("files_move", json!({"from": "private", "to": "private/inner"})),
        ("files_move", json!({"from": "", "to": "x"})),
        ("calendar_list", json!({"unexpected": []})),
        ("calendar_events", json!({"from": "yesterday", "to": "2026-01-02"})),
        ("calendar_events", json!({"from": "2026-02-01", "to": "2026-01-01"})),
        ("calendar_events", json!({"from": "2020-01-01", "to": "2026-01-01"})),
        (
            "calendar_events",
            json!({"from": "2026-01-01", "to": "2026-01-02", "calendar": "no-such-calendar"}),
        ),
        (
            "calendar_events",
            json!({"from": "2026-01-01", "to": "2026-01-02", "calendar": "../bob/personal"}),
        ),
        ("calendar_event_get", json!({"href": "personal"})),
        ("calendar_event_get", json!({"href": "../bob/personal/x.ics"})),
        ("calendar_event_get", json!({"href": "http://evil.example/x.ics"})),
        (
            "calendar_create_event",
            json!({"calendar": "personal", "title": "  ", "start": "2026-03-01T10:00:00Z", "end": "2026-03-01T11:00:00Z"}),
        ),
        (
            "calendar_create_event",
            json!({"calendar": "personal", "title": "t", "start": "2026-03-01T11:00:00Z", "end": "2026-03-01T10:00:00Z"}),
        ),
        (
            "calendar_create_event",
            json!({"calendar": "personal", "title": "t", "start": "2026-03-01", "end": "2026-03-01T10:00:00Z"}),
        ),
        (
            "calendar_create_event",
            json!({"calendar": "personal", "title": "t", "start": "soon", "end": "later"}),
        ),
        (
            "calendar_create_event",
            json!({"calendar": "nope", "title": "t", "start": "2026-03-01T10:00:00Z", "end": "2026-03-01T11:00:00Z"}),
        ),
        (
            "calendar_create_event",
            json!({"calendar": "../bob", "title": "t", "start": "2026-03-01T10:00:00Z", "end": "2026-03-01T11:00:00Z"}),
        ),
        ("contacts_search", json!({"query": ""})),
        ("contacts_search", json!({"query": "x".repeat(201)})),
        ("contacts_search", json!({"query": "carol", "limit": 0})),
        ("deck_board", json!({"board_id": "abc"})),
        ("deck_board", json!({"board_id": "007"})),
        ("deck_board", json!({"board_id": "0"})),
        ("contacts_search", json!({"query": "carol", "limit": "1e2"})),
        ("deck_board", json!({"board_id": 0})),
        ("deck_board", json!({})),
        ("deck_create_card", json!({"board_id": board_id, "stack_id": stack_id, "title": ""})),
        ("deck_create_card", json!({"board_id": board_id, "stack_id": "1/2", "title": "t"})),
        (
            "deck_create_card",
            json!({"board_id": board_id, "stack_id": stack_id, "title": "t", "duedate": "someday"}),
        ),
        (
            "deck_move_card",
            json!({"board_id": board_id, "card_id": card_id, "stack_id": 999_999}),
        ),
        (
            "deck_move_card",
            json!({"board_id": board_id, "card_id": "x", "stack_id": stack_id}),
        ),
        ("no_such_tool", json!({})),
    ];
    for (tool, args) in &cases {
        let r = call(&alice, tool, args.clone()).await;
        assert_eq!(err_kind(&r), "invalid_argument", "{tool} {args}: {}", text(&r));
        assert!(text(&r).len() > 10, "{tool}: message too short: {}", text(&r));
    }
    let after = snapshot(&env, &alice).await;
    assert_eq!(before.0, after.0, "alice's files changed");
    assert_eq!(before.1, after.1, "alice's calendar changed");
    assert_eq!(before.2, after.2, "alice's board changed");
}
