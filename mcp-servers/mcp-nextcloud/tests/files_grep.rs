//! files_grep end to end: a seeded Nextcloud stand-in, the real mcp-nextcloud binary and
//! real MCP clients carrying alice's and bob's own credentials. The index database is put
//! where the test can open it read-only, to check what it holds (never a user) and what the
//! webhook changed. Nothing is mocked.

#![expect(clippy::expect_used, reason = "test support: a broken environment is a test failure")]

mod common;

use std::path::PathBuf;
use std::time::Duration;

use common::{Client, call, connect, err_kind, ok, text};
use rusqlite::{Connection, OpenFlags};
use serde_json::{Value, json};
use test_harness::mcp_nextcloud::McpNextcloud;
use test_harness::mcp_server::McpServer;
use test_harness::standin::Standin;

const SECRET: &str = "test-webhook-secret";

struct Fixture {
    mcp: McpServer,
    nc: Standin,
    _dir: tempfile::TempDir,
    db: PathBuf,
}

impl Fixture {
    async fn start() -> Fixture {
        tokio::task::spawn_blocking(|| {
            let dir = tempfile::tempdir().expect("tempdir");
            let db = dir.path().join("index.db");
            let nc = Standin::start_seeded();
            let db_env = db.to_string_lossy().into_owned();
            let mcp = McpNextcloud::start_with(nc.url(), &[("MCP_INDEX_PATH", &db_env), ("MCP_WEBHOOK_SECRET", SECRET)]);
            Fixture { mcp, nc, _dir: dir, db }
        })
        .await
        .expect("start the fixture")
    }

    async fn client(&self, uid: &str) -> Client {
        connect(&self.mcp.url(), self.nc.app_password(uid)).await
    }

    fn http(&self) -> reqwest::Client {
        reqwest::Client::builder()
            .timeout(Duration::from_secs(20))
            .build()
            .expect("http client")
    }

    /// A read-only look at index.db (WAL lets it read while the server writes).
    fn db(&self) -> Connection {
        Connection::open_with_flags(&self.db, OpenFlags::SQLITE_OPEN_READ_ONLY).expect("open index.db")
    }

    fn file_row(&self, file_id: i64) -> Option<(String, i64, i64)> {
        self.db()
            .query_row("SELECT status, stale, passages FROM files WHERE file_id = ?1", [file_id], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?))
            })
            .ok()
    }

    /// The last row of the queries table: (candidates, survivors, returned, refreshed, warmed).
    fn last_query(&self) -> (i64, i64, i64, i64, i64) {
        self.db()
            .query_row(
                "SELECT candidates, survivors, returned, refreshed, warmed FROM queries ORDER BY id DESC LIMIT 1",
                [],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)),
            )
            .expect("a queries row")
    }

    async fn webhook(&self, secret: Option<&str>, body: &str) -> (u16, Value) {
        let mut req = self
            .http()
            .post(format!("{}/webhooks/nextcloud", self.mcp.base_url()))
            .header("Content-Type", "application/json")
            .body(body.to_string());
        if let Some(s) = secret {
            req = req.header("X-Tamebi-Webhook-Secret", s);
        }
        let r = req.send().await.expect("POST webhook");
        let status = r.status().as_u16();
        (status, r.json().await.unwrap_or(Value::Null))
    }

    async fn ocs(&self, uid: &str, method: reqwest::Method, path: &str, form: &[(&str, &str)]) -> Value {
        let body = url::form_urlencoded::Serializer::new(String::new()).extend_pairs(form).finish();
        let r = self
            .http()
            .request(method, format!("{}/ocs/v2.php/apps/files_sharing/api/v1/{path}", self.nc.url()))
            .header("Authorization", self.nc.bearer(uid))
            .header("OCS-APIRequest", "true")
            .header("Accept", "application/json")
            .header("Content-Type", "application/x-www-form-urlencoded")
            .body(body)
            .send()
            .await
            .expect("OCS request");
        assert!(r.status().is_success(), "OCS {path}: {}", r.status());
        r.json().await.expect("OCS json")
    }

    async fn put(&self, uid: &str, path: &str, body: &str) {
        let r = self
            .http()
            .put(self.nc.dav_url(uid, path))
            .header("Authorization", self.nc.bearer(uid))
            .body(body.to_string())
            .send()
            .await
            .expect("PUT");
        assert!(r.status().is_success(), "PUT {path}: {}", r.status());
    }
}

fn written(id: i64) -> String {
    json!({"user": {"uid": "alice", "displayName": "alice"}, "time": 1, "event": {
        "class": "OCP\\Files\\Events\\Node\\NodeWrittenEvent",
        "node": {"id": id, "path": "/alice/files/Shared-with-bob/plan.md"}}})
    .to_string()
}

fn deleted(id: i64) -> String {
    json!({"user": {"uid": "alice"}, "time": 1, "event": {
        "class": "OCP\\Files\\Events\\Node\\NodeDeletedEvent", "node": {"id": id, "path": "/alice/files/x"}}})
    .to_string()
}

async fn grep(c: &Client, args: Value) -> Value {
    ok(&call(c, "files_grep", args).await).clone()
}

fn passages(v: &Value) -> &Vec<Value> {
    v["passages"].as_array().expect("passages")
}

fn paths(v: &Value) -> Vec<String> {
    passages(v)
        .iter()
        .map(|p| p["path"].as_str().unwrap_or_default().to_string())
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn each_caller_gets_only_what_nextcloud_gives_them() {
    let f = Fixture::start().await;
    let alice = f.client("alice").await;
    let bob = f.client("bob").await;

    // A first search already finds the small fixture: the warm-up runs before ranking.
    let found = grep(&alice, json!({"query": "forty thousand"})).await;
    let p = &passages(&found)[0];
    assert_eq!(p["path"], "Shared-with-bob/plan.md", "{found}");
    assert_eq!(p["heading"], "Plan: ship the agent > Budget");
    assert!(p["snippet"].as_str().unwrap().contains("**forty** **thousand**"), "{p}");
    assert_eq!(found["coverage"]["total_files"], 3, "notes.txt, secret.txt, plan.md: {found}");
    assert_eq!(found["coverage"]["percent"], 100);

    // The offset reads the whole parent section through files_read (one extraction).
    let section = call(&alice, "files_read", json!({"path": p["path"], "offset": p["offset"]})).await;
    assert!(
        ok(&section)["text"]
            .as_str()
            .unwrap()
            .starts_with("## Budget\n\nThe budget is forty thousand euros."),
        "{}",
        text(&section)
    );

    // Bob finds the same file through the share, in his own namespace.
    let via_share = grep(&bob, json!({"query": "budget forty thousand"})).await;
    assert_eq!(paths(&via_share), ["Shared-with-bob/plan.md"], "{via_share}");
    let plan_id = passages(&via_share)[0]["file_id"].as_i64().unwrap();

    // Alice's private file is indexed by her search; bob still never sees a word of it.
    let mine = grep(&alice, json!({"query": "payroll"})).await;
    assert_eq!(paths(&mine), ["private/secret.txt"]);
    let secret_id = passages(&mine)[0]["file_id"].as_i64().unwrap();
    assert!(
        f.file_row(secret_id).is_some_and(|(s, _, n)| s == "indexed" && n > 0),
        "the passage is in the index"
    );
    for q in ["payroll", "payroll figures", "alice secret payroll"] {
        let r = call(&bob, "files_grep", json!({"query": q})).await;
        let v = ok(&r);
        assert!(passages(v).is_empty(), "bob got a passage for {q}: {v}");
        assert!(!text(&r).contains("payroll"), "{}", text(&r));
        assert!(v["note"].as_str().unwrap().contains("other words"), "{v}");
    }
    let (candidates, survivors, returned, _, _) = f.last_query();
    assert_eq!(
        (candidates, survivors, returned),
        (1, 0, 0),
        "a candidate bob may not open is dropped unseen"
    );

    // Revoking the share takes effect on bob's next search…
    let shares = f.ocs("alice", reqwest::Method::GET, "shares", &[]).await;
    let share_id = shares["ocs"]["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["share_with"] == "bob" && s["path"] == "/Shared-with-bob")
        .map(|s| s["id"].to_string().trim_matches('"').to_string())
        .expect("the seeded share");
    f.ocs("alice", reqwest::Method::DELETE, &format!("shares/{share_id}"), &[]).await;
    let revoked = grep(&bob, json!({"query": "forty thousand"})).await;
    assert!(passages(&revoked).is_empty(), "{revoked}");
    assert!(f.file_row(plan_id).is_some(), "the index still holds the text; Nextcloud decided");

    // …and re-sharing brings it back.
    f.ocs(
        "alice",
        reqwest::Method::POST,
        "shares",
        &[
            ("path", "/Shared-with-bob"),
            ("shareType", "0"),
            ("shareWith", "bob"),
            ("permissions", "31"),
        ],
    )
    .await;
    let back = grep(&bob, json!({"query": "forty thousand"})).await;
    assert_eq!(paths(&back), ["Shared-with-bob/plan.md"], "{back}");

    // A folder limits the search to that part of the caller's tree.
    let scoped = grep(&alice, json!({"query": "budget", "path": "private"})).await;
    assert!(passages(&scoped).is_empty(), "{scoped}");
    let scoped = grep(&alice, json!({"query": "budget", "path": "Shared-with-bob/"})).await;
    assert_eq!(paths(&scoped), ["Shared-with-bob/plan.md"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn changed_files_are_re_extracted_and_webhooks_only_mark_rows() {
    let mut f = Fixture::start().await;
    let alice = f.client("alice").await;

    let before = grep(&alice, json!({"query": "forty thousand"})).await;
    let id = passages(&before)[0]["file_id"].as_i64().unwrap();

    // The file changes after it was indexed: its old text is never returned again.
    f.put(
        "alice",
        "Shared-with-bob/plan.md",
        "# Plan: ship the agent\n\n## Budget\n\nThe budget is fifty thousand euros.\n",
    )
    .await;
    let old = grep(&alice, json!({"query": "forty"})).await;
    assert!(passages(&old).is_empty(), "{old}");
    let new = grep(&alice, json!({"query": "fifty thousand"})).await;
    assert_eq!(paths(&new), ["Shared-with-bob/plan.md"]);
    assert_eq!(passages(&new)[0]["heading"], "Plan: ship the agent > Budget");

    // Wrong or missing secret: 401 and nothing changes (the row is still there, not stale).
    let row = f.file_row(id).expect("indexed");
    assert_eq!(f.webhook(Some("wrong"), &deleted(id)).await.0, 401);
    assert_eq!(f.webhook(None, &written(id)).await.0, 401);
    assert_eq!(f.webhook(Some(&format!("{SECRET}x")), &written(id)).await.0, 401);
    assert_eq!(f.file_row(id), Some(row.clone()));
    // Malformed JSON with the right secret: 400, nothing changes.
    assert_eq!(f.webhook(Some(SECRET), "{not json").await.0, 400);
    assert_eq!(f.webhook(Some(SECRET), r#"{"event": 3}"#).await.0, 400);
    assert_eq!(f.file_row(id), Some(row));

    // A written event marks the row stale by id; the next search re-extracts it.
    let (status, body) = f.webhook(Some(SECRET), &written(id)).await;
    assert_eq!(
        (status, body["action"].as_str(), body["known"].as_bool()),
        (200, Some("stale"), Some(true)),
        "{body}"
    );
    assert_eq!(f.file_row(id).map(|r| r.1), Some(1));
    let again = grep(&alice, json!({"query": "fifty thousand"})).await;
    assert_eq!(paths(&again), ["Shared-with-bob/plan.md"]);
    assert_eq!(f.file_row(id).map(|r| r.1), Some(0), "re-extracted, no longer stale");
    let (_, _, _, refreshed, warmed) = f.last_query();
    assert_eq!(refreshed + warmed, 1, "exactly the stale file was extracted again");

    // A deleted event removes the rows of that id (and nothing is fetched for it).
    let (status, body) = f.webhook(Some(SECRET), &deleted(id)).await;
    assert_eq!((status, body["action"].as_str()), (200, Some("gone")), "{body}");
    assert!(f.file_row(id).is_none());
    // An event for an id the index never saw changes nothing.
    let (status, body) = f.webhook(Some(SECRET), &written(987_654)).await;
    assert_eq!((status, body["known"].as_bool()), (200, Some(false)));
    assert!(f.file_row(987_654).is_none());

    // Nextcloud unreachable: the search fails closed — an error, not a single passage,
    // although the index holds matching text.
    let warm = grep(&alice, json!({"query": "fifty thousand"})).await;
    assert_eq!(passages(&warm).len(), 1);
    f.nc.process().kill9();
    let r = call(&alice, "files_grep", json!({"query": "fifty thousand"})).await;
    assert_eq!(err_kind(&r), "retryable", "{}", text(&r));
    assert!(!text(&r).contains("fifty"), "{}", text(&r));
    let outcome: String = f
        .db()
        .query_row("SELECT outcome FROM queries ORDER BY id DESC LIMIT 1", [], |r| r.get(0))
        .expect("row");
    assert_eq!(outcome, "failed");
}

#[tokio::test(flavor = "multi_thread")]
async fn hostile_queries_are_just_words_and_the_queries_table_keeps_only_counts() {
    let f = Fixture::start().await;
    let alice = f.client("alice").await;
    let hostile = [
        r#"budget" OR "x"#,
        "\"budget",
        "NEAR(budget thousand, 2)",
        "budget*",
        "^budget",
        "heading:budget",
        "body:budget OR heading:x",
        "(budget",
        "budget)",
        "-budget",
        "budget AND NOT thousand",
        "budget OR",
        "{budget thousand}",
        "budgét 四万 🚀 naïve",
        "budget; DROP TABLE passages; --",
        "'budget'",
    ];
    for q in hostile {
        let r = call(&alice, "files_grep", json!({"query": q})).await;
        let v = ok(&r);
        assert!(!passages(v).is_empty(), "{q} found nothing: {v}");
    }
    // Nothing but punctuation, or a bad limit: a clear error, nothing searched.
    for args in [
        json!({"query": "\"()*^:-"}),
        json!({"query": ""}),
        json!({"query": "x", "limit": 0}),
        json!({"query": "x", "limit": 51}),
    ] {
        let r = call(&alice, "files_grep", args.clone()).await;
        assert_eq!(err_kind(&r), "invalid_argument", "{args}");
    }
    // A valid limit is honoured.
    let one = grep(&alice, json!({"query": "budget", "limit": 1})).await;
    assert_eq!(passages(&one).len(), 1);

    // One row per search, counts only: no query text, no user anywhere in the file.
    let db = f.db();
    let rows: i64 = db.query_row("SELECT count(*) FROM queries", [], |r| r.get(0)).expect("count");
    assert_eq!(
        rows,
        hostile.len() as i64 + 1,
        "one row per search that ran (bad input is refused before)"
    );
    let dump: String = db
        .query_row("SELECT group_concat(mode || outcome || terms, ',') FROM queries", [], |r| r.get(0))
        .expect("dump");
    assert!(!dump.contains("budget"), "{dump}");
    let mut stmt = db.prepare("SELECT sql FROM sqlite_schema WHERE sql IS NOT NULL").expect("schema");
    let schema: Vec<String> = stmt
        .query_map([], |r| r.get(0))
        .expect("rows")
        .collect::<Result<_, _>>()
        .expect("sql");
    let schema = schema.join("\n").to_lowercase();
    for word in ["uid", "user", "owner", "share"] {
        assert!(!schema.contains(word), "index.db schema mentions {word}: {schema}");
    }
}
