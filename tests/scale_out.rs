//! End to end (issue 15): two real `tamebi` instances on one PostgreSQL (Debian's server, a
//! throwaway cluster started by the shared harness), the scripted model, real HTTP and SSE.
//! 200 conversations are spread over both; then one instance is killed with SIGKILL in the
//! middle of a turn. Afterwards: every committed message is there, every conversation
//! continues on the survivor, no turn ran twice, a pending approval still works, the
//! interrupted turn is marked in its stored message, and no lease outlived its bound.
#![expect(clippy::unwrap_used, reason = "helpers of a test file fail the test by panicking")]

use reqwest::Method;
use serde_json::{Value, json};
use std::time::{Duration, Instant};
use test_harness::orchestrator::{
    Options, Orchestrator, SIGNING_SECRET, Signing, approve, fresh_nonce, parts, read_sse, unix_now, user_turn,
};
use test_harness::postgres::PgCluster;
use test_harness::scripted_model::ScriptedModel;

const LEASE_SECS: u64 = 2;
const CONVERSATIONS: usize = 200;

fn client() -> reqwest::Client {
    reqwest::Client::builder().timeout(Duration::from_secs(60)).build().unwrap()
}

fn start(model: &ScriptedModel, database_url: &str) -> Orchestrator {
    start_with_lease(model, database_url, LEASE_SECS)
}

fn start_with_lease(model: &ScriptedModel, database_url: &str, lease_secs: u64) -> Orchestrator {
    Orchestrator::start(Options {
        model_url: model.url(),
        extra_env: vec![
            ("TAMEBI_DATABASE_URL".into(), database_url.into()),
            ("TAMEBI_LEASE_SECS".into(), lease_secs.to_string()),
            // 200 conversations of one person at once: the per-person limit is not under test.
            ("TAMEBI_USER_MAX_TURNS".into(), "1000".into()),
        ],
        ..Options::default()
    })
}

/// Where the router would send a conversation (the Nextcloud app hashes ids the same way
/// in spirit; any stable choice will do for this test).
fn home(cid: &str) -> usize {
    cid.bytes().fold(0usize, |h, b| h.wrapping_mul(31).wrapping_add(usize::from(b))) % 2
}

/// A user turn; returns (status, retry-after, owned-elsewhere, parts).
async fn turn(orch: &Orchestrator, c: &reqwest::Client, cid: &str, mid: &str, text: &str) -> (u16, Option<u64>, bool, Vec<Value>) {
    send(orch, c, &user_turn(cid, mid, text)).await
}

async fn send(orch: &Orchestrator, c: &reqwest::Client, body: &[u8]) -> (u16, Option<u64>, bool, Vec<Value>) {
    let r = orch.request(c, Method::POST, "/v1/chat", "alice", body, None).send().await.unwrap();
    let status = r.status().as_u16();
    let retry = r.headers().get("retry-after").and_then(|v| v.to_str().ok()?.parse().ok());
    let elsewhere = r.headers().contains_key("x-tamebi-owned-elsewhere");
    let p = if status == 200 { parts(&read_sse(r).await) } else { Vec::new() };
    (status, retry, elsewhere, p)
}

async fn stored(orch: &Orchestrator, c: &reqwest::Client, cid: &str) -> Vec<Value> {
    orch.get_json(c, &format!("/v1/conversations/{cid}"), "alice").await["messages"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// How many model requests ended with this user text (one per turn that ran).
fn runs_of(requests: &[Value], text: &str) -> usize {
    requests
        .iter()
        .filter(|r| {
            r["messages"]
                .as_array()
                .and_then(|m| m.iter().rev().find(|m| m["role"] == "user"))
                .is_some_and(|m| m["content"].as_str() == Some(text))
        })
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_instances_share_one_postgres_and_survive_a_kill() {
    let Some(pg) = PgCluster::start_or_skip() else { return };
    let url = pg.create_database("scale").unwrap();
    let model = ScriptedModel::start();
    model.add_rules(json!([
        {"match": "quick", "steps": [{"text": "Done."}]},
        {"match": "slow", "steps": [{"text": "A long answer that streams slowly, one character at a time.", "chunk_chars": 1, "delay_ms": 200}]},
        {"match": "remember", "steps": [
            {"tool_calls": [{"name": "memory_write", "arguments": {"fact": "Prefers tea"}}]},
            {"text": "Saved."}
        ]}
    ]));
    let mut instances = [start(&model, &url), start(&model, &url)];
    let c = client();

    // 200 conversations, each on its home instance, concurrently.
    let cids: Vec<String> = (0..CONVERSATIONS).map(|i| format!("conv-{i}")).collect();
    let mut tasks = Vec::new();
    for cid in &cids {
        let (o, c, cid) = (&instances[home(cid)], c.clone(), cid.clone());
        tasks.push(async move { turn(o, &c, &cid, &format!("{cid}-m1"), &format!("quick first {cid}")).await });
    }
    for (cid, (status, ..)) in cids.iter().zip(futures::future::join_all(tasks).await) {
        assert_eq!(status, 200, "{cid}");
    }

    // One owner per conversation: the other instance refuses it, saying when to retry.
    let on_a: Vec<&String> = cids.iter().filter(|c| home(c) == 0).collect();
    let (status, retry, elsewhere, _) = turn(&instances[1], &c, on_a[0], "x-m1", "quick intruder").await;
    assert_eq!((status, elsewhere), (503, true));
    assert!(retry.is_some_and(|s| (1..=LEASE_SECS).contains(&s)), "{retry:?}");
    assert_eq!(runs_of(&model.requests(), "quick intruder"), 0);
    // Resume, stop and delete need the owner too: refused the same way, nothing deleted.
    for (method, path) in [
        (Method::GET, format!("/v1/chat/{}/stream", on_a[0])),
        (Method::POST, format!("/v1/chat/{}/stop", on_a[0])),
        (Method::DELETE, format!("/v1/conversations/{}", on_a[0])),
    ] {
        let r = instances[1].request(&c, method, &path, "alice", b"", None).send().await.unwrap();
        assert_eq!(r.status(), 503, "{path}");
        assert!(r.headers().contains_key("x-tamebi-owned-elsewhere"), "{path}");
    }
    assert_eq!(stored(&instances[1], &c, on_a[0]).await.len(), 2, "reading needs no owner");

    // On A: an approval left pending, and a slow turn in flight when A is killed.
    let (status, _, _, asked) = turn(&instances[0], &c, on_a[1], "p-m1", "please remember this").await;
    assert_eq!(status, 200);
    // Decided later, on the survivor.
    let decided_on_survivor = approve(on_a[1], &asked, 0, true);
    let a_owner = pg
        .psql(
            "scale",
            &format!("SELECT owner FROM conversation_leases WHERE conversation_id = '{}'", on_a[1]),
        )
        .unwrap();
    assert!(a_owner.starts_with("inst_"), "{a_owner}");

    let slow_cid = on_a[2].clone();
    let slow_body = user_turn(&slow_cid, "s-m1", "slow please");
    let slow = instances[0]
        .request(&c, Method::POST, "/v1/chat", "alice", &slow_body, None)
        .header("x-request-id", "req-slow-1")
        .send()
        .await
        .unwrap();
    assert_eq!(slow.status(), 200);
    tokio::time::sleep(Duration::from_millis(800)).await;
    instances[0].process().kill9();
    let killed_at = Instant::now();
    // The stream is cut by the kill: read what arrived until the connection broke.
    let mut slow = slow;
    let mut received = Vec::new();
    while let Ok(Some(chunk)) = slow.chunk().await {
        received.extend_from_slice(&chunk);
    }
    let received = String::from_utf8_lossy(&received);
    assert!(
        received.contains("text-delta"),
        "part of the reply streamed before the kill: {received}"
    );
    assert!(!received.contains("[DONE]"), "the stream was cut by the kill");

    // Within the lease bound the survivor serves A's conversations.
    let survivor = &instances[1];
    let (status, retry, ..) = turn(survivor, &c, on_a[3], &format!("{}-m2", on_a[3]), "quick early").await;
    if status == 503 {
        assert!(retry.is_some_and(|s| s <= LEASE_SECS), "{retry:?}");
    }
    tokio::time::sleep(Duration::from_secs(LEASE_SECS) + Duration::from_millis(200)).await;
    assert_eq!(
        pg.psql(
            "scale",
            &format!("SELECT count(*) FROM conversation_leases WHERE owner = '{a_owner}' AND expires_at > now()")
        )
        .unwrap(),
        "0",
        "no lease of the dead instance outlives {LEASE_SECS} s ({:?} after the kill)",
        killed_at.elapsed()
    );

    // Every conversation continues on the survivor, with its history.
    let mut tasks = Vec::new();
    for cid in cids.iter().filter(|c| *c != on_a[1]) {
        let (o, c, cid) = (survivor, c.clone(), cid.clone());
        tasks.push(async move {
            let r = turn(o, &c, &cid, &format!("{cid}-m3"), &format!("quick again {cid}")).await;
            (cid, r)
        });
    }
    for (cid, (status, ..)) in futures::future::join_all(tasks).await {
        assert_eq!(status, 200, "{cid} continues on the survivor");
    }
    let requests = model.requests();
    for cid in cids.iter().filter(|c| *c != on_a[1] && **c != slow_cid) {
        let messages = stored(survivor, &c, cid).await;
        let texts: Vec<String> = messages
            .iter()
            .flat_map(|m| m["parts"].as_array().cloned().unwrap_or_default())
            .filter_map(|p| p["text"].as_str().map(str::to_string))
            .collect();
        assert!(texts.contains(&format!("quick first {cid}")), "{cid}: {texts:?}");
        assert!(
            texts.iter().filter(|t| *t == "Done.").count() >= 2,
            "{cid}: both replies committed: {texts:?}"
        );
        // No turn ran twice.
        assert_eq!(runs_of(&requests, &format!("quick first {cid}")), 1, "{cid}");
        assert_eq!(runs_of(&requests, &format!("quick again {cid}")), 1, "{cid}");
    }

    // The interrupted turn is marked in its stored message, with the request id.
    let slow_messages = stored(survivor, &c, &slow_cid).await;
    let marker = slow_messages
        .iter()
        .flat_map(|m| m["parts"].as_array().cloned().unwrap_or_default())
        .find(|p| p["type"] == "data-interrupted")
        .unwrap_or_else(|| panic!("no interrupted marker: {slow_messages:?}"));
    assert_eq!(marker["data"]["requestId"], "req-slow-1");
    assert_eq!(runs_of(&requests, "slow please"), 1, "the interrupted turn is not rerun by itself");

    // The approval asked on A is honoured on the survivor, once.
    let (status, _, _, done) = send(survivor, &c, &decided_on_survivor).await;
    assert_eq!(status, 200);
    assert!(
        done.iter().any(|p| p["type"] == "tool-output-available"),
        "the approved write ran on the survivor: {done:?}"
    );
    let facts = survivor.get_json(&c, "/v1/memory", "alice").await;
    assert_eq!(facts["facts"].as_array().unwrap().len(), 1, "{facts}");
    let (status, ..) = send(survivor, &c, &decided_on_survivor).await;
    assert_ne!(status, 200, "an approval is used once");
}

/// A turn through the load balancer, retried after `Retry-After` (as the app's router and a
/// browser do) for at most `patience`; returns the final status.
async fn turn_via(lb: &str, c: &reqwest::Client, uid: &str, cid: &str, mid: &str, text: &str, patience: Duration) -> u16 {
    let deadline = Instant::now() + patience;
    loop {
        let body = user_turn(cid, mid, text);
        let r = Orchestrator::request_at(c, lb, Method::POST, "/v1/chat", uid, &body, &[])
            .send()
            .await
            .unwrap();
        let status = r.status().as_u16();
        if status == 200 {
            let _ = read_sse(r).await;
            return 200;
        }
        let wait = r
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok()?.parse().ok())
            .unwrap_or(1u64);
        if Instant::now() + Duration::from_secs(wait) > deadline {
            return status;
        }
        tokio::time::sleep(Duration::from_secs(wait)).await;
    }
}

fn owners(pg: &PgCluster) -> std::collections::BTreeMap<String, String> {
    pg.psql(
        "scale_lb",
        "SELECT uid || '/' || conversation_id || ' ' || owner FROM conversation_leases ORDER BY 1",
    )
    .unwrap()
    .lines()
    .filter_map(|l| l.split_once(' ').map(|(k, o)| (k.to_string(), o.to_string())))
    .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn haproxy_keeps_each_conversation_on_one_instance_and_fails_over() {
    let Some(pg) = PgCluster::start_or_skip() else { return };
    let url = pg.create_database("scale_lb").unwrap();
    let model = ScriptedModel::start();
    model.add_rules(json!([{"match": "quick", "steps": [{"text": "Done."}]}]));
    let mut instances = [start(&model, &url), start(&model, &url)];
    let host = |o: &Orchestrator| o.url().trim_start_matches("http://").to_string();
    let lb = test_harness::haproxy::LoadBalancer::start(&host(&instances[0]), &host(&instances[1]));
    let c = client();
    let conversations: Vec<(String, String)> = (0..40).map(|i| (format!("u{}", i % 4), format!("lb-{i}"))).collect();
    let round = |n: usize| {
        let (lb, c, conversations) = (lb.url(), c.clone(), conversations.clone());
        async move {
            let tasks = conversations.iter().map(|(uid, cid)| {
                let (lb, c) = (lb.clone(), c.clone());
                async move {
                    let status = turn_via(
                        &lb,
                        &c,
                        uid,
                        cid,
                        &format!("{cid}-m{n}"),
                        &format!("quick {n} {cid}"),
                        Duration::from_secs(20),
                    )
                    .await;
                    (cid.clone(), status)
                }
            });
            futures::future::join_all(tasks).await
        }
    };
    for (cid, status) in round(1).await {
        assert_eq!(status, 200, "{cid}");
    }
    let first = owners(&pg);
    assert_eq!(first.len(), conversations.len());
    let distinct: std::collections::BTreeSet<&String> = first.values().collect();
    assert_eq!(distinct.len(), 2, "conversations spread over both instances: {first:?}");
    for (cid, status) in round(2).await {
        assert_eq!(status, 200, "{cid}");
    }
    assert_eq!(owners(&pg), first, "every conversation stayed on its instance:\n{}", lb.logs());

    // One instance dies: its conversations continue through the balancer on the other.
    instances[0].process().kill9();
    for (cid, status) in round(3).await {
        assert_eq!(status, 200, "{cid} after the kill:\n{}", lb.logs());
    }
    let after = owners(&pg);
    assert_eq!(after.values().collect::<std::collections::BTreeSet<_>>().len(), 1, "{after:?}");
    let requests = model.requests();
    for (uid, cid) in &conversations {
        for n in 1..=3 {
            assert_eq!(runs_of(&requests, &format!("quick {n} {cid}")), 1, "{uid}/{cid} turn {n} ran once");
        }
    }
}

/// G1 across instances: a signed request captured on its way to one instance and replayed to
/// another within its 60-second window is refused there (the replay records are shared).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signed_request_is_accepted_by_one_instance_only() {
    let Some(pg) = PgCluster::start_or_skip() else { return };
    let url = pg.create_database("scale_replay").unwrap();
    let model = ScriptedModel::start();
    model.add_rules(json!([{"match": "quick", "steps": [{"text": "Done."}]}]));
    let instances = [start(&model, &url), start(&model, &url)];
    let c = client();
    let captured = |method: Method, path: &str, body: &[u8]| {
        let c = c.clone();
        let headers = Orchestrator::sign(&Signing {
            method: method.as_str(),
            target: path,
            uid: "alice",
            body,
            ts: unix_now(),
            nonce: &fresh_nonce(),
            credentials: "",
            signing_secret: SIGNING_SECRET,
        });
        let (method, path, body) = (method, path.to_string(), body.to_vec());
        move |o: &Orchestrator| {
            let mut rb = c.request(method.clone(), format!("{}{path}", o.url())).body(body.clone());
            for (k, v) in &headers {
                rb = rb.header(k, v);
            }
            rb.header("content-type", "application/json").send()
        }
    };
    let list = captured(Method::GET, "/v1/conversations", b"");
    assert_eq!(list(&instances[0]).await.unwrap().status(), 200);
    assert_eq!(list(&instances[1]).await.unwrap().status(), 401, "replayed to the other instance");
    assert_eq!(list(&instances[0]).await.unwrap().status(), 401, "replayed to the same one");
    // A replayed turn would run again: refused before anything runs, on either instance.
    let body = user_turn("replayed", "r-m1", "quick once");
    let chat = captured(Method::POST, "/v1/chat", &body);
    let first = chat(&instances[1]).await.unwrap();
    assert_eq!(first.status(), 200);
    let _ = read_sse(first).await;
    for o in &instances {
        assert_eq!(chat(o).await.unwrap().status(), 401);
    }
    assert_eq!(runs_of(&model.requests(), "quick once"), 1);
    // Fresh signatures are unaffected.
    assert_eq!(stored(&instances[0], &c, "replayed").await.len(), 2);
}

/// Polls until a conversation is gone on every instance and stays gone for a while (a stale
/// writer would bring it back at its next commit); panics with what came back otherwise.
async fn assert_stays_deleted(instances: &[&Orchestrator], c: &reqwest::Client, uid: &str, cid: &str) {
    for _ in 0..10 {
        for o in instances {
            let r = o
                .request(c, Method::GET, &format!("/v1/conversations/{cid}"), uid, b"", None)
                .send()
                .await
                .unwrap();
            let status = r.status();
            assert_eq!(status, 404, "{cid} came back: {}", r.text().await.unwrap_or_default());
            let list = o.get_json(c, "/v1/conversations", uid).await;
            assert!(
                list["conversations"].as_array().unwrap().iter().all(|x| x["id"] != cid),
                "{cid} listed again: {list}"
            );
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

/// `uid`'s erasure (DELETE /v1/me/data) on `o`; its answer, checked to be a 200.
async fn erase(o: &Orchestrator, c: &reqwest::Client, uid: &str) -> Value {
    let erased = o.request(c, Method::DELETE, "/v1/me/data", uid, b"", None).send().await.unwrap();
    assert_eq!(erased.status(), 200);
    erased.json().await.unwrap()
}

/// A turn that streams for about three seconds, started on `o`; returns its open response.
async fn slow_turn(o: &Orchestrator, c: &reqwest::Client, uid: &str, cid: &str) -> reqwest::Response {
    let body = user_turn(cid, &format!("{cid}-m1"), "slow reply please");
    let r = o.request(c, Method::POST, "/v1/chat", uid, &body, None).send().await.unwrap();
    assert_eq!(r.status(), 200);
    r
}

const SLOW_RULES: &str = r#"[
    {"match": "slow", "steps": [{"text": "This answer takes its time, a letter at a time.", "chunk_chars": 1, "delay_ms": 60}]},
    {"match": "quick", "steps": [{"text": "Done."}]}
]"#;

/// Issue 15 follow-up: `DELETE /v1/me/data` on one instance while another runs a turn of the
/// same person. After the 2xx nothing of the erased conversation reappears anywhere, and the
/// person can go on under the same id with a fresh conversation.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_erasure_on_one_instance_fences_a_turn_on_another() {
    let Some(pg) = PgCluster::start_or_skip() else { return };
    let url = pg.create_database("scale_erase").unwrap();
    let model = ScriptedModel::start();
    model.add_rules(serde_json::from_str(SLOW_RULES).unwrap());
    let (a, b) = (start(&model, &url), start(&model, &url));
    let c = client();
    let mut running = slow_turn(&b, &c, "alice", "doomed").await;
    // Part of the reply streams on B; then the erasure lands on A.
    let first = running.chunk().await.unwrap();
    assert!(first.is_some());
    let erased = erase(&a, &c, "alice").await;
    assert_eq!(erased["erased"]["conversations"], 1, "{erased}");
    // B's turn ends (it cannot write any more); whatever it does, nothing comes back.
    while let Ok(Some(_)) = running.chunk().await {}
    assert_stays_deleted(&[&a, &b], &c, "alice", "doomed").await;
    // The same id on B again: a new conversation, without a trace of the erased one (B's
    // stale actor may first answer "try again").
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let (status, retry, ..) = turn(&b, &c, "doomed", "doomed-m2", "quick anew").await;
        if status == 200 {
            break;
        }
        assert_eq!(status, 503);
        assert!(Instant::now() < deadline, "B never served the id again");
        tokio::time::sleep(Duration::from_secs(retry.unwrap_or(1))).await;
    }
    let messages = stored(&b, &c, "doomed").await;
    let texts: Vec<String> = messages
        .iter()
        .flat_map(|m| m["parts"].as_array().cloned().unwrap_or_default())
        .filter_map(|p| p["text"].as_str().map(str::to_string))
        .collect();
    assert!(
        !texts.iter().any(|t| t.contains("slow") || t.contains("takes its time")),
        "{texts:?}"
    );
}

/// A memory write of a turn on one instance, approved before an erasure on another instance
/// and held (the fault hook, released by the test once the erasure has answered): fenced by the
/// seized lease like a chat write, so the fact does not outlive the erasure. B's actor does not
/// renew during the test (see its lease below), so it has not noticed the seizure (and
/// cancelled the turn) when the write runs: the fence alone refuses it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_erasure_on_one_instance_fences_a_memory_write_on_another() {
    let Some(pg) = PgCluster::start_or_skip() else { return };
    let url = pg.create_database("scale_fact").unwrap();
    let model = ScriptedModel::start();
    model.add_rules(json!([{"match": "remember", "steps": [
        {"tool_calls": [{"name": "memory_write", "arguments": {"fact": "{{last_user_text}}"}}]},
        {"text": "Saved."}
    ]}]));
    // B's actor renews its lease every third of the lease time after it starts. A renewal
    // between the seizure and the write would find the lease lost and stop the actor,
    // cancelling the turn, which could then drop the write before it reaches the fence (and the
    // test would see no fact-fence refusal). With 600 s the first renewal comes 200 s after
    // the actor starts, later than every bound of the steps before the write added together
    // (the client's 60 s per request, the 30 s wait for the hold): it cannot come first.
    let (a, mut b) = (start(&model, &url), start_with_lease(&model, &url, 600));
    let c = client();
    // The hook holds the write until this file exists: however long A's erasure takes.
    let release = tempfile::tempdir().unwrap();
    let release_file = release.path().join("release");
    let text = format!("remember LATE-FACT FAULT:slow-memory-write-until:{}", release_file.display());
    let (status, _, _, asked) = turn(&b, &c, "facts", "facts-m1", &text).await;
    assert_eq!(status, 200);
    assert!(asked.iter().any(|p| p["type"] == "tool-approval-request"), "G3: asked first");
    let body = approve("facts", &asked, 0, true);
    let approved = b.request(&c, Method::POST, "/v1/chat", "alice", &body, None).send();
    let mut approved_turn = tokio::task::JoinSet::new();
    approved_turn.spawn(async move { read_sse(approved.await.unwrap()).await });
    let deadline = Instant::now() + Duration::from_secs(30);
    while !b.process().logs().contains("fault injection: holding a memory write") {
        assert!(Instant::now() < deadline, "the write was never held");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    erase(&a, &c, "alice").await;
    // The hook lets go only once the file exists or after its 60 s bound: this guards the
    // bound (an erasure slower than it would no longer test a write held across it).
    assert!(
        !b.process().logs().contains("fault injection: memory write released"),
        "the hold ran out its bound before the erasure answered"
    );
    assert!(
        !b.process().logs().contains("conversation lease lost"),
        "B's actor renewed (and stopped) before the write: the fence would not be what refuses it"
    );
    // B's turn runs its write once the hook lets go, and ends.
    std::fs::write(&release_file, b"").unwrap();
    let stream = parts(&approved_turn.join_next().await.unwrap().unwrap());
    // The tool's error never reaches the stream: the refused chat save of the turn's next
    // checkpoint ends the turn with an error before that part is committed, and so before it is
    // sent (docs/orchestrator.md, erasure); nor, of course, a tool output.
    assert_eq!(stream.last().map(|p| p["type"].clone()), Some(json!("error")), "{stream:?}");
    // ... which says why: this server no longer holds the conversation, not "something went
    // wrong".
    let said = stream.last().and_then(|p| p["errorText"].as_str()).unwrap_or_default();
    assert!(said.contains("this server no longer holds the conversation"), "{said}");
    assert!(
        !stream
            .iter()
            .any(|p| p["type"] == "tool-output-available" || p["type"] == "tool-output-error"),
        "{stream:?}"
    );
    // The fact fence refused it, not only the turn's chat save (whose refusal the log names
    // apart).
    assert!(
        b.process()
            .logs()
            .contains("a fact write into a conversation this instance no longer owns was refused"),
        "the fact fence did not refuse the held write"
    );
    for o in [&a, &b] {
        let facts = o.get_json(&c, "/v1/memory", "alice").await;
        assert_eq!(facts["facts"], json!([]), "the fact outlived the erasure");
    }
}

/// Issue 15 follow-up: a conversation delete on one instance after the owner's lease ran out
/// while its turn still runs (its renewals stalled: simulated by expiring the row). The
/// deleting instance takes the lease over, so the late owner cannot write the conversation
/// back when its turn commits.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delete_after_a_takeover_is_not_undone_by_the_late_owner() {
    let Some(pg) = PgCluster::start_or_skip() else { return };
    let url = pg.create_database("scale_delete").unwrap();
    let model = ScriptedModel::start();
    model.add_rules(serde_json::from_str(SLOW_RULES).unwrap());
    // B renews rarely (every 10 s), so its stalled renewal is easy to stand in for.
    let (a, b) = (start(&model, &url), start_with_lease(&model, &url, 30));
    let c = client();
    let mut running = slow_turn(&b, &c, "alice", "taken").await;
    assert!(running.chunk().await.unwrap().is_some());
    let mut deleted = None;
    for _ in 0..3 {
        pg.psql(
            "scale_delete",
            "UPDATE conversation_leases SET expires_at = now() - interval '1 second' WHERE conversation_id = 'taken'",
        )
        .unwrap();
        let r = a
            .request(&c, Method::DELETE, "/v1/conversations/taken", "alice", b"", None)
            .send()
            .await
            .unwrap();
        // 503 only if B's renewal came in between (then try again).
        if r.status() != 503 {
            deleted = Some(r.status());
            break;
        }
    }
    assert_eq!(deleted, Some(reqwest::StatusCode::NO_CONTENT));
    while let Ok(Some(_)) = running.chunk().await {}
    assert_stays_deleted(&[&a, &b], &c, "alice", "taken").await;
}

/// Issue 15 follow-up: one instance on SQLite killed with SIGKILL in the middle of a turn.
/// After the restart, the interrupted reply is marked in its stored message (with the request
/// id the client knows) when the conversation is next used, as a PostgreSQL takeover does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_killed_on_sqlite_is_marked_after_the_restart() {
    let model = ScriptedModel::start();
    model.add_rules(serde_json::from_str(SLOW_RULES).unwrap());
    let mut o = Orchestrator::start(Options {
        model_url: model.url(),
        ..Options::default()
    });
    let c = client();
    let body = user_turn("cut", "cut-m1", "slow reply please");
    let mut r = o
        .request(&c, Method::POST, "/v1/chat", "alice", &body, None)
        .header("x-request-id", "req-sqlite-kill")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let mut seen = String::new();
    while !seen.contains("text-delta") {
        let chunk = r.chunk().await.unwrap().unwrap_or_else(|| panic!("stream ended early: {seen}"));
        seen.push_str(&String::from_utf8_lossy(&chunk));
    }
    o.kill9_and_restart();
    let (status, ..) = turn(&o, &c, "cut", "cut-m2", "quick, after the restart").await;
    assert_eq!(status, 200);
    let messages = stored(&o, &c, "cut").await;
    let roles: Vec<&str> = messages.iter().filter_map(|m| m["role"].as_str()).collect();
    assert_eq!(roles, ["user", "assistant", "user", "assistant"], "{messages:?}");
    let markers: Vec<&Value> = messages
        .iter()
        .flat_map(|m| m["parts"].as_array().into_iter().flatten())
        .filter(|p| p["type"] == "data-interrupted")
        .collect();
    assert_eq!(markers.len(), 1, "{messages:?}");
    assert_eq!(markers[0]["data"]["requestId"], "req-sqlite-kill");
    assert!(
        messages[1]["parts"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["type"] == "data-interrupted"),
        "the cut reply carries the marker: {:?}",
        messages[1]
    );
    assert_eq!(runs_of(&model.requests(), "slow reply please"), 1, "the cut turn is not rerun");
}
