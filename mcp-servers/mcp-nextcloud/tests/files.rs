//! Files tools end to end: list, read (by path and by id, paging, extraction), find, write,
//! move, for alice and bob on the conformance fixture.

mod common;

use common::{Env, call, err_kind, ok, paths, text};
use serde_json::json;

#[tokio::test(flavor = "multi_thread")]
async fn list_read_find_for_alice_and_bob() {
    let env = Env::start().await;
    let alice = env.client("alice").await;
    let bob = env.client("bob").await;

    let root = call(&alice, "files_list", json!({"path": ""})).await;
    let p = paths(ok(&root));
    for want in ["notes.txt", "private", "Shared-with-bob"] {
        assert!(p.contains(&want.to_string()), "alice's root lacks {want}: {p:?}");
    }
    let row = &ok(&root)["entries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["path"] == "notes.txt")
        .unwrap()
        .clone();
    assert!(row["file_id"].as_u64().is_some() && row["is_dir"] == false && row["modified"].as_str().unwrap().ends_with('Z'));

    let shared = call(&alice, "files_list", json!({"path": "Shared-with-bob"})).await;
    assert_eq!(paths(ok(&shared)), ["Shared-with-bob/plan.md"]);

    let bob_root = call(&bob, "files_list", json!({"path": "/"})).await;
    let bp = paths(ok(&bob_root));
    assert!(
        bp.contains(&"bob-todo.txt".to_string()) && bp.contains(&"Shared-with-bob".to_string()),
        "{bp:?}"
    );
    assert!(!bp.iter().any(|p| p.contains("notes") || p.contains("private")), "{bp:?}");

    // Reading by path, in bob's own namespace.
    let plan = call(&bob, "files_read", json!({"path": "Shared-with-bob/plan.md"})).await;
    let v = ok(&plan);
    assert!(v["text"].as_str().unwrap().contains("forty thousand"), "{v}");
    assert_eq!(v["format"], "markdown");
    let plan_id = v["file_id"].as_u64();

    // Reading by id: same file, resolved in the caller's scope.
    let listed = call(&alice, "files_list", json!({"path": "Shared-with-bob"})).await;
    let id = ok(&listed)["entries"][0]["file_id"].as_u64().unwrap();
    if let Some(pid) = plan_id {
        assert_eq!(pid, id);
    }
    let by_id = call(&bob, "files_read", json!({"file_id": id})).await;
    assert_eq!(ok(&by_id)["path"], "Shared-with-bob/plan.md");
    assert!(ok(&by_id)["text"].as_str().unwrap().contains("forty thousand"));

    // Find by name: alice's .txt files, bob's .md.
    let found = call(&alice, "files_find", json!({"pattern": "*.txt"})).await;
    let fp = paths(ok(&found));
    assert!(
        fp.contains(&"notes.txt".to_string()) && fp.contains(&"private/secret.txt".to_string()),
        "{fp:?}"
    );
    let bfound = call(&bob, "files_find", json!({"pattern": "plan"})).await;
    assert_eq!(paths(ok(&bfound)), ["Shared-with-bob/plan.md"]);
    let scoped = call(&alice, "files_find", json!({"pattern": "*.txt", "path": "private"})).await;
    assert_eq!(paths(ok(&scoped)), ["private/secret.txt"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn read_pages_long_files_and_extracts_formats() {
    let env = Env::start().await;
    let alice = env.client("alice").await;
    let long: String = (0..5000).map(|i| format!("line {i:05}\n")).collect(); // 55,000 chars
    env.nc_put("alice", "long.txt", long.clone()).await;

    let first = call(&alice, "files_read", json!({"path": "long.txt", "limit": 20000})).await;
    let v = ok(&first);
    assert_eq!(v["total_chars"], 55_000);
    assert_eq!(v["next_offset"], 20_000);
    let mut got = v["text"].as_str().unwrap().to_string();
    let mut next = v["next_offset"].as_u64();
    while let Some(offset) = next {
        let page = call(&alice, "files_read", json!({"path": "long.txt", "offset": offset, "limit": 20000})).await;
        got.push_str(ok(&page)["text"].as_str().unwrap());
        next = ok(&page)["next_offset"].as_u64();
    }
    assert_eq!(got, long);

    env.nc_put(
        "alice",
        "page.html",
        "<html><body><h1>Agenda</h1><p>Budget <b>review</b></p><script>evil()</script></body></html>",
    )
    .await;
    let html = call(&alice, "files_read", json!({"path": "page.html"})).await;
    let t = ok(&html)["text"].as_str().unwrap();
    assert!(t.contains("Agenda") && t.contains("review") && !t.contains("<b>"), "{t}");

    env.nc_put("alice", "photo.png", vec![0x89u8, b'P', b'N', b'G', 0, 0, 0, 13, 1, 2, 3])
        .await;
    let png = call(&alice, "files_read", json!({"path": "photo.png"})).await;
    assert_eq!(ok(&png)["format"], "binary");
    assert!(text(&png).contains("not shown"), "{}", text(&png));
}

#[tokio::test(flavor = "multi_thread")]
async fn write_and_move() {
    let env = Env::start().await;
    let alice = env.client("alice").await;

    let w = call(&alice, "files_write", json!({"path": "drafts/../x.txt", "content": "no"})).await;
    assert_eq!(err_kind(&w), "invalid_argument");

    let created = call(&alice, "files_write", json!({"path": "memo.md", "content": "# Memo\nhello"})).await;
    assert_eq!(ok(&created)["created"], true);
    assert_eq!(env.nc_get("alice", "memo.md").await, (200, "# Memo\nhello".to_string()));
    let replaced = call(&alice, "files_write", json!({"path": "memo.md", "content": "v2"})).await;
    assert_eq!(ok(&replaced)["created"], false);
    let refused = call(
        &alice,
        "files_write",
        json!({"path": "memo.md", "content": "v3", "overwrite": false}),
    )
    .await;
    assert_eq!(err_kind(&refused), "conflict");
    assert_eq!(env.nc_get("alice", "memo.md").await.1, "v2");

    let moved = call(&alice, "files_move", json!({"from": "memo.md", "to": "private/memo.md"})).await;
    ok(&moved);
    assert_eq!(env.nc_get("alice", "memo.md").await.0, 404);
    assert_eq!(env.nc_get("alice", "private/memo.md").await.1, "v2");

    // A move onto an existing file is refused unless overwrite is true.
    let onto = call(&alice, "files_move", json!({"from": "private/memo.md", "to": "notes.txt"})).await;
    assert_eq!(err_kind(&onto), "conflict");
    assert_eq!(env.nc_get("alice", "private/memo.md").await.1, "v2");
    let forced = call(
        &alice,
        "files_move",
        json!({"from": "private/memo.md", "to": "notes.txt", "overwrite": true}),
    )
    .await;
    assert_eq!(ok(&forced)["replaced"], true);
    assert_eq!(env.nc_get("alice", "notes.txt").await.1, "v2");
}
