//! Storage faults (issue 32), with real processes: the orchestrator's SQLite on a full disk
//! (a small loop-mounted ext4 the test makes) and its PostgreSQL restarted in the middle of a
//! turn. Each time: the person gets a clear error (the documented error body or error part,
//! carrying the request id), nothing committed is lost or corrupted (`PRAGMA integrity_check`,
//! every committed message read back), and the same process recovers once the storage does,
//! without a restart of its own.
#![expect(clippy::unwrap_used, reason = "helpers of a test file fail the test by panicking")]

use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};
use test_harness::orchestrator::{Options, Orchestrator, parts, read_sse, user_turn};
use test_harness::postgres::PgCluster;
use test_harness::scripted_model::ScriptedModel;
use test_harness::small_fs::SmallFs;

fn client() -> reqwest::Client {
    reqwest::Client::builder().timeout(Duration::from_secs(60)).build().unwrap()
}

/// One turn with our own request id: (HTTP status, the error body or the streamed parts).
async fn turn(orch: &Orchestrator, cid: &str, mid: &str, text: &str, request_id: &str) -> (u16, Value, Vec<Value>) {
    let r = orch
        .request(&client(), Method::POST, "/v1/chat", "alice", &user_turn(cid, mid, text), None)
        .header("x-request-id", request_id)
        .send()
        .await
        .unwrap();
    let status = r.status().as_u16();
    if status == 200 {
        (status, Value::Null, parts(&read_sse(r).await))
    } else {
        (status, r.json().await.unwrap_or(Value::Null), Vec::new())
    }
}

/// Whether a turn failed the documented way, naming `request_id`: an error body with a code
/// and the request id, or a stream with an `error` part whose text carries it. Never a stream
/// that finishes as if all were well.
fn failed_clearly(status: u16, body: &Value, streamed: &[Value], request_id: &str) -> bool {
    if status != 200 {
        return body["error"]["code"].as_str().is_some() && body["error"]["requestId"] == request_id;
    }
    streamed
        .iter()
        .any(|p| p["type"] == "error" && p["errorText"].as_str().is_some_and(|t| t.contains(request_id)))
}

fn finished(streamed: &[Value]) -> bool {
    streamed.iter().any(|p| p["type"] == "finish") && !streamed.iter().any(|p| p["type"] == "error")
}

/// The user texts of a conversation as the orchestrator reads them back.
async fn user_texts(orch: &Orchestrator, cid: &str) -> Vec<String> {
    let conv = orch.get_json(&client(), &format!("/v1/conversations/{cid}"), "alice").await;
    conv["messages"]
        .as_array()
        .map(|m| {
            m.iter()
                .filter(|m| m["role"] == "user")
                .filter_map(|m| m["parts"][0]["text"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_on_a_full_disk_fails_clearly_loses_nothing_and_recovers() {
    let fs = match SmallFs::mount(16) {
        Ok(fs) => fs,
        Err(e) => {
            // Loud, never a silent pass: this machine cannot mount a loop filesystem.
            eprintln!("\n\n*** SKIPPED sqlite_on_a_full_disk: cannot make a loop filesystem here ({e:#}); run as root ***\n\n");
            return;
        }
    };
    let model = ScriptedModel::start();
    let orch = Orchestrator::start(Options {
        model_url: model.url(),
        extra_env: vec![("TAMEBI_DATA_DIR".into(), fs.path().display().to_string())],
        ..Options::default()
    });
    let pid = orch.pid();
    let mut committed = Vec::new();
    for i in 0..3 {
        let text = format!("before the disk fills {i}");
        let (status, _, streamed) = turn(&orch, "full", &format!("m{i}"), &text, &format!("req-ok-{i}")).await;
        assert!(status == 200 && finished(&streamed), "turn {i}: {status} {streamed:?}");
        committed.push(text);
    }

    fs.fill().unwrap();
    // Big turns, so SQLite needs new pages (not only the free ones its files already hold).
    // (Just under the 32,000-character limit of one user message.)
    let mut clear_failures = 0;
    for i in 0..5 {
        let big = format!("{i}{}", "x".repeat(31_000));
        let rid = format!("req-full-{i}");
        let (status, body, streamed) = turn(&orch, "full", &format!("f{i}"), &big, &rid).await;
        if finished(&streamed) {
            // Whatever finished must really be stored: it is one more committed message.
            committed.push(big);
            continue;
        }
        assert!(
            failed_clearly(status, &body, &streamed, &rid),
            "turn on a full disk: {status} {body} {streamed:?}"
        );
        assert_ne!(
            body["error"]["code"], "bad_request",
            "refused as bad input, not by the disk: {body}"
        );
        eprintln!(
            "full disk, turn {i}: {status} {body} {:?}",
            streamed.iter().find(|p| p["type"] == "error")
        );
        clear_failures += 1;
    }
    assert!(clear_failures > 0, "a full disk never made a turn fail: the test did not fill it");
    eprintln!("full disk: {clear_failures} of 5 large turns failed clearly");

    fs.free().unwrap();
    // SQLite's own check of the file, and every committed message, read back by the service.
    let db = rusqlite::Connection::open_with_flags(fs.path().join("chat.db"), rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
    let check: String = db.query_row("PRAGMA integrity_check", [], |r| r.get(0)).unwrap();
    assert_eq!(check, "ok");
    drop(db);
    // Recovery without a restart: a new turn in the same conversation and in a new one.
    let mut recovered = false;
    for attempt in 0..10 {
        let (status, _, streamed) = turn(
            &orch,
            "full",
            &format!("after{attempt}"),
            "after the space is back",
            &format!("req-after-{attempt}"),
        )
        .await;
        if status == 200 && finished(&streamed) {
            recovered = true;
            committed.push("after the space is back".into());
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    assert!(recovered, "the service did not recover once space was free");
    let (status, _, streamed) = turn(&orch, "fresh", "n1", "a new conversation", "req-fresh").await;
    assert!(status == 200 && finished(&streamed), "{status} {streamed:?}");
    let texts = user_texts(&orch, "full").await;
    for want in &committed {
        assert!(
            texts.contains(want),
            "committed message lost: {:.40}…; have {} messages",
            want,
            texts.len()
        );
    }
    assert_eq!(orch.pid(), pid, "the service was restarted");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_restarted_mid_turn_fails_clearly_loses_nothing_and_recovers() {
    let Some(pg) = PgCluster::start_or_skip() else { return };
    let url = pg.create_database("faults").unwrap();
    let model = ScriptedModel::start();
    model.add_rules(json!([
        {"match": "slow", "steps": [{"text": "A slow answer, streamed a few letters at a time.", "chunk_chars": 2, "delay_ms": 100}]}
    ]));
    let orch = Orchestrator::start(Options {
        model_url: model.url(),
        extra_env: vec![("TAMEBI_DATABASE_URL".into(), url)],
        ..Options::default()
    });
    let pid = orch.pid();
    let mut committed = Vec::new();
    for i in 0..3 {
        let text = format!("before the restart {i}");
        let (status, _, streamed) = turn(&orch, "pg", &format!("m{i}"), &text, &format!("req-ok-{i}")).await;
        assert!(status == 200 && finished(&streamed), "turn {i}: {status} {streamed:?}");
        committed.push(text);
    }

    // A turn that streams for ~2.5 s; PostgreSQL stops (fast mode: sessions cut, as in a
    // restart) half a second in and comes back only once the turn has ended.
    let rid = "req-mid";
    let stop = async {
        tokio::time::sleep(Duration::from_millis(500)).await;
        tokio::task::block_in_place(|| pg.stop().unwrap());
    };
    let ((status, body, streamed), ()) = tokio::join!(turn(&orch, "pg", "slow1", "slow please", rid), stop);
    let mid_turn_finished = finished(&streamed);
    assert!(
        mid_turn_finished || failed_clearly(status, &body, &streamed, rid),
        "the turn during the restart: {status} {body} {streamed:?}"
    );
    // While it is down, a new turn fails clearly too (never hangs, never "finishes").
    let (status, body, streamed) = turn(&orch, "pg", "down1", "while it is down", "req-down").await;
    assert!(failed_clearly(status, &body, &streamed, "req-down"), "{status} {body} {streamed:?}");
    pg.start_again().unwrap();

    // Recovery without a restart of the service: the pool gives up its dead connections.
    let mut recovered = false;
    for attempt in 0..20 {
        let rid = format!("req-after-{attempt}");
        let (status, body, streamed) = turn(&orch, "pg", &format!("after{attempt}"), "after the restart", &rid).await;
        if status == 200 && finished(&streamed) {
            recovered = true;
            committed.push("after the restart".to_string());
            break;
        }
        assert!(failed_clearly(status, &body, &streamed, &rid), "{status} {body} {streamed:?}");
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    assert!(recovered, "the service did not recover once PostgreSQL was back");
    if mid_turn_finished {
        committed.push("slow please".into());
    }
    let texts = user_texts(&orch, "pg").await;
    for want in &committed {
        assert!(texts.contains(want), "committed message lost: {want}; have {texts:?}");
    }
    let check = pg.psql("faults", "SELECT count(*) FROM pg_catalog.pg_tables").unwrap();
    assert!(check.parse::<u32>().unwrap() > 0);
    assert_eq!(orch.pid(), pid, "the service was restarted");
    eprintln!(
        "mid-turn restart: the turn {}",
        if mid_turn_finished {
            "finished"
        } else {
            "failed with an error part"
        }
    );
}
