//! End to end: the Talk bot (issue #29). The stand-in's Talk sends a mention to the app's real
//! webhook controller (`php -S`, test_harness::talk), which runs a room turn in the real
//! orchestrator (scripted model) and posts the reply with Talk's bot API; bob reads it.
//! A recorder in front of the orchestrator shows what it received.
#![expect(clippy::unwrap_used, reason = "helpers of a test file fail the test by panicking")]

use hmac::{Hmac, KeyInit, Mac};
use serde_json::json;
use test_harness::orchestrator::{Options, Orchestrator};
use test_harness::scripted_model::ScriptedModel;
use test_harness::standin::Standin;
use test_harness::talk::{Recorder, TalkApp, TalkRoom};

struct Setup {
    model: ScriptedModel,
    recorder: Recorder,
    app: TalkApp,
    room: TalkRoom,
    _orch: Orchestrator,
    _nc: Standin,
}

async fn setup() -> Setup {
    let nc = Standin::start();
    let model = ScriptedModel::start();
    model.add_rules(json!([{"match": "agenda", "steps": [{"text": "A kick-off agenda: goals, roles, timeline, risks."}]}]));
    // mcp-nextcloud is configured (Nextcloud-facing): a room turn has no token, so it must reach nothing.
    let orch = Orchestrator::start(Options {
        model_url: model.url(),
        mcp_servers: "nextcloud=http://127.0.0.1:9/mcp;auth=nextcloud".into(),
        extra_env: vec![],
    });
    let recorder = Recorder::start(orch.url()).await;
    let app = TalkApp::start(&nc, &recorder.url);
    let room = TalkRoom::create(&nc, &app).await;
    Setup {
        model,
        recorder,
        app,
        room,
        _orch: orch,
        _nc: nc,
    }
}

fn turns(s: &Setup) -> Vec<test_harness::talk::Recorded> {
    s.recorder.requests().into_iter().filter(|r| r.path == "/v1/talk/turn").collect()
}

fn sign(secret: &str, random: &str, body: &str) -> String {
    let mut mac = <Hmac<sha2::Sha256> as KeyInit>::new_from_slice(secret.as_bytes()).unwrap();
    mac.update(random.as_bytes());
    mac.update(body.as_bytes());
    hex::encode(mac.finalize().into_bytes())
}

async fn webhook(s: &Setup, body: &str, random: &str, signature: Option<&str>) -> u16 {
    let mut req = reqwest::Client::new()
        .post(&s.app.webhook_url)
        .header("content-type", "application/json")
        .header("ocs-apirequest", "true")
        .header("x-nextcloud-talk-random", random);
    if let Some(sig) = signature {
        req = req.header("x-nextcloud-talk-signature", sig);
    }
    req.body(body.to_string()).send().await.unwrap().status().as_u16()
}

fn mention(token: &str, actor: &str, text: &str, id: u64) -> String {
    json!({"type": "Create",
        "actor": {"type": "Person", "id": actor, "name": "Someone", "talkParticipantType": "3"},
        "object": {"type": "Note", "id": id.to_string(), "name": "message",
            "content": json!({"message": text, "parameters": []}).to_string(), "mediaType": "text/markdown"},
        "target": {"type": "Collection", "id": token, "name": "Planning"}})
    .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mention_gets_exactly_one_reply_bob_reads_and_no_credential_reaches_the_orchestrator() {
    let s = setup().await;
    s.room.post("bob", "morning all, no question here").await;
    let mention = s.room.post("alice", "@Tamebi what is a good agenda for our kick-off?").await;
    let replies = s.room.bot_messages(1).await;
    assert_eq!(replies.len(), 1, "{replies:?}\n{}\n{}", s.app.logs(), s.app.log());
    let reply = &replies[0];
    let text = reply["message"].as_str().unwrap();
    assert!(text.starts_with("A kick-off agenda: goals, roles, timeline, risks."), "{text}");
    assert!(text.contains("[Continue in Tamebi]("), "{text}");
    assert!(
        text.contains("/apps/tamebi/?prefill=what%20is%20a%20good%20agenda%20for%20our%20kick-off%3F"),
        "{text}"
    );
    assert_eq!(reply["parent"]["id"].as_u64(), Some(mention));
    assert_eq!(reply["actorDisplayName"], "Tamebi (Bot)");
    assert_eq!(reply["referenceId"].as_str().map(str::len), Some(64));

    // What the orchestrator received: one room turn, signed for alice, no credential at all.
    let turns = turns(&s);
    assert_eq!(turns.len(), 1, "{turns:?}");
    assert_eq!(turns[0].header("x-tamebi-uid"), Some("alice"));
    assert!(turns[0].header("x-tamebi-credentials").is_none(), "{:?}", turns[0].headers);
    assert!(turns[0].header("x-tamebi-nc-authorization").is_none());
    assert!(
        s.recorder.requests().iter().all(|r| r.path == "/v1/talk/turn"),
        "only room turns reach the orchestrator"
    );
    // What the model saw: no tools, the room message only inside the envelope.
    let requests = s.model.requests();
    assert_eq!(requests.len(), 1, "bob's message never reached the model");
    assert!(
        requests[0].get("tools").is_none_or(|t| t.as_array().unwrap().is_empty()),
        "{}",
        requests[0]
    );
    let user = requests[0]["messages"].as_array().unwrap().last().unwrap()["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(user.contains("<untrusted_data source=\"talk/room-message\""), "{user}");
    assert!(!requests[0].to_string().contains("morning all"));

    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    assert_eq!(s.room.bot_messages(1).await.len(), 1, "exactly one reply");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forged_replayed_or_unsigned_webhooks_start_nothing_and_a_guest_gets_the_short_reply() {
    let s = setup().await;
    // A real message to reply to (it does not address the bot, so Talk's own webhook for it starts nothing).
    let plain = s.room.post("alice", "a plain note").await;
    let body = mention(&s.room.token, "users/alice", "@Tamebi agenda please", plain);
    let random = "q".repeat(64);
    assert_eq!(webhook(&s, &body, &random, None).await, 401, "unsigned");
    assert_eq!(
        webhook(
            &s,
            &body,
            &random,
            Some(&sign("a-forger-does-not-know-the-secret-0123456789", &random, &body))
        )
        .await,
        401,
        "forged"
    );
    let signed = sign(&s.app.secret, &random, &body);
    assert_eq!(webhook(&s, &body, &random, Some(&signed)).await, 200, "the genuine one, once");
    assert_eq!(webhook(&s, &body, &random, Some(&signed)).await, 401, "replayed");
    s.room.bot_messages(1).await;
    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    assert_eq!(turns(&s).len(), 1, "only the genuine webhook started a turn");

    let guest = s.room.guest_post("@Tamebi can you help me with the agenda?").await;
    let replies = s.room.bot_messages(2).await;
    assert_eq!(replies.len(), 2, "{replies:?}");
    assert_eq!(replies[1]["message"], "Tamebi answers signed-in users only.");
    assert_eq!(replies[1]["parent"]["id"].as_u64(), Some(guest));
    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    assert_eq!(turns(&s).len(), 1, "a guest starts no turn");
    assert_eq!(s.model.requests().len(), 1);
}
