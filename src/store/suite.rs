//! The store suite: every behaviour of the three stores that callers rely on, written once
//! against the traits and run on both implementations — SQLite files in a temp dir, and a
//! throwaway PostgreSQL cluster (Debian's server, started by the shared test harness; in CI
//! a PostgreSQL that cannot start fails the test, it is never skipped).

use std::sync::Arc;

use super::audit::{ApprovalState, Category, Entry, Kind, Outcome};
use super::chat::{PendingApproval, Save};
use super::key::{test_caller, test_key as key, test_user as user_id};
use super::memory::MAX_FACTS_PER_USER;
use super::{Backend, Stores};
use crate::compaction::Summary;
use crate::ui_stream::{Role, UiMessage, UiPart};

fn user(id: &str, text: &str) -> UiMessage {
    UiMessage {
        id: id.into(),
        role: Role::User,
        parts: vec![UiPart::Text {
            text: text.into(),
            state: None,
        }],
    }
}

fn approval(id: &str, message_id: &str) -> PendingApproval {
    PendingApproval {
        approval_id: id.into(),
        message_id: message_id.into(),
        tool_call_id: format!("call_{id}"),
        server: "nextcloud".into(),
        tool: "files_move".into(),
        arguments: serde_json::json!({"from": "a", "to": "b"}),
        arguments_sha256: "x".into(),
    }
}

/// The suite runs no turns: chat.db's load signal reads none.
fn no_turns() -> super::db::TurnCount {
    Arc::new(|| 0)
}

async fn run_suite(s: &Stores) {
    conversations_are_per_user(s).await;
    messages_keep_their_order_and_last_version(s).await;
    summaries_are_stored_once_per_range_and_erased_with_the_user(s).await;
    approvals_are_taken_once_by_their_owner(s).await;
    approvals_decided_together_are_taken_all_or_none(s).await;
    a_conversation_keeps_its_assistant(s).await;
    a_conversation_keeps_the_origin_it_was_created_with(s).await;
    a_user_message_supersedes_pending_approvals(s).await;
    concurrent_takers_get_an_approval_once(s).await;
    audit_rows_and_fingerprints_round_trip(s).await;
    facts_are_per_user_and_limited(s).await;
    concurrent_fact_writes_respect_the_limit(s).await;
    a_final_message_ends_its_turns_record(s).await;
    registry_rows_and_approvals_per_version(s).await;
    a_snapshot_follows_every_acknowledged_write(s).await;
}

/// The registry (issue #30): admin entries by kind and name with create/replace semantics;
/// personal assistants per owner, an edit bumps the version, an approval covers one version,
/// a new proposal is unapproved, and the owner's erasure takes them all.
async fn registry_rows_and_approvals_per_version(s: &Stores) {
    use super::registry::{Approval, EntryKind, Put};
    let r = &s.registry;
    assert!(r.put_entry(EntryKind::Server, "probe", "{\"a\":1}", Put::Create).await.unwrap());
    assert!(
        !r.put_entry(EntryKind::Server, "probe", "{}", Put::Create).await.unwrap(),
        "a duplicate"
    );
    assert!(
        !r.put_entry(EntryKind::Server, "none", "{}", Put::Replace).await.unwrap(),
        "nothing to replace"
    );
    assert!(r.put_entry(EntryKind::Server, "probe", "{\"a\":2}", Put::Replace).await.unwrap());
    assert!(
        r.put_entry(EntryKind::Assistant, "probe", "{}", Put::Create).await.unwrap(),
        "kinds are apart"
    );
    assert_eq!(
        r.entries(EntryKind::Server).await.unwrap(),
        vec![("probe".to_string(), "{\"a\":2}".to_string())]
    );
    assert!(r.delete_entry(EntryKind::Server, "probe").await.unwrap());
    assert!(!r.delete_entry(EntryKind::Server, "probe").await.unwrap());
    assert!(r.delete_entry(EntryKind::Assistant, "probe").await.unwrap());

    let (alice, bob) = (user_id("reg-alice"), user_id("reg-bob"));
    r.create_personal(&alice, "u-1", "{\"v\":1}").await.unwrap();
    assert!(!r.update_personal(&bob, "u-1", "{}").await.unwrap(), "another owner");
    assert!(!r.share_personal(&bob, "u-1", Some("team")).await.unwrap());
    assert!(r.proposed().await.unwrap().is_empty());
    assert_eq!(r.approve("u-1", 1).await.unwrap(), Approval::NotFound, "not proposed");
    assert!(r.share_personal(&alice, "u-1", Some("team")).await.unwrap());
    assert!(!r.proposed().await.unwrap()[0].shared(), "waits for approval");
    assert_eq!(r.approve("u-1", 1).await.unwrap(), Approval::Approved);
    assert!(r.personal("u-1").await.unwrap().unwrap().shared());
    assert!(r.update_personal(&alice, "u-1", "{\"v\":2}").await.unwrap());
    let row = r.personal("u-1").await.unwrap().unwrap();
    assert_eq!((row.version, row.shared()), (2, false), "an edit needs approval again");
    assert_eq!(r.approve("u-1", 1).await.unwrap(), Approval::Stale);
    assert_eq!(r.approve("u-1", 2).await.unwrap(), Approval::Approved);
    assert!(r.share_personal(&alice, "u-1", Some("other")).await.unwrap());
    assert!(!r.personal("u-1").await.unwrap().unwrap().shared(), "a new group is a new proposal");
    r.create_personal(&alice, "u-2", "{}").await.unwrap();
    assert_eq!(r.personal_of(&alice).await.unwrap().len(), 2);
    let snapshot = r.snapshot(Some(&alice)).await.unwrap();
    assert_eq!(
        (snapshot.own.len(), snapshot.shared.proposed.len(), snapshot.shared.servers.len()),
        (2, 1, 0),
        "a snapshot holds the same rows"
    );
    assert!(r.personal_of(&bob).await.unwrap().is_empty());
    assert!(!r.delete_personal(&bob, "u-2").await.unwrap());
    assert_eq!(r.erase_user(&alice).await.unwrap(), 2);
    assert!(r.personal("u-1").await.unwrap().is_none() && r.proposed().await.unwrap().is_empty());
}

/// The instance's copy of the registry (store::registry::RegistryCopy) is never older than a
/// write acknowledged before the snapshot asked: after each kind of write, and while other
/// requests keep taking snapshots of their own (one of them may read rows just before a
/// write commits; its copy must not be served afterwards).
async fn a_snapshot_follows_every_acknowledged_write(s: &Stores) {
    use super::registry::{EntryKind, Put};
    let r = &s.registry;
    let (alice, bob) = (user_id("copy-alice"), user_id("copy-bob"));
    let servers = |snapshot: &super::registry::Snapshot| snapshot.shared.servers.clone();
    let own_bodies = |snapshot: &super::registry::Snapshot| snapshot.own.iter().map(|p| p.body.clone()).collect::<Vec<_>>();
    assert!(servers(&r.snapshot(Some(&alice)).await.unwrap()).is_empty(), "the copy is filled");
    assert!(r.put_entry(EntryKind::Server, "c1", "{\"v\":1}", Put::Create).await.unwrap());
    assert_eq!(servers(&r.snapshot(Some(&alice)).await.unwrap()).len(), 1, "a created entry");
    assert!(r.put_entry(EntryKind::Policy, "policy", "{\"v\":1}", Put::Upsert).await.unwrap());
    assert_eq!(r.snapshot(None).await.unwrap().shared.policy.len(), 1, "the policy");
    r.create_personal(&alice, "copy-1", "{\"v\":1}").await.unwrap();
    assert_eq!(
        own_bodies(&r.snapshot(Some(&alice)).await.unwrap()),
        ["{\"v\":1}"],
        "a new own assistant"
    );
    assert!(r.snapshot(Some(&bob)).await.unwrap().own.is_empty(), "only its owner's");
    assert!(r.update_personal(&alice, "copy-1", "{\"v\":2}").await.unwrap());
    assert_eq!(
        own_bodies(&r.snapshot(Some(&alice)).await.unwrap()),
        ["{\"v\":2}"],
        "an owner's edit"
    );
    assert!(r.share_personal(&alice, "copy-1", Some("team")).await.unwrap());
    assert_eq!(r.snapshot(Some(&bob)).await.unwrap().shared.proposed.len(), 1, "a proposal");
    assert_eq!(r.approve("copy-1", 2).await.unwrap(), super::registry::Approval::Approved);
    assert!(r.snapshot(Some(&bob)).await.unwrap().shared.proposed[0].shared(), "an approval");
    for round in 2..40 {
        let body = format!("{{\"v\":{round}}}");
        let readers: Vec<_> = (0..4).map(|_| r.snapshot(Some(&alice))).collect();
        let (written, _) = tokio::join!(
            r.put_entry(EntryKind::Server, "c1", &body, Put::Replace),
            futures::future::join_all(readers)
        );
        assert!(written.unwrap());
        assert_eq!(servers(&r.snapshot(Some(&alice)).await.unwrap())[0].1, body, "round {round}");
    }
    assert!(r.delete_entry(EntryKind::Server, "c1").await.unwrap());
    assert!(servers(&r.snapshot(None).await.unwrap()).is_empty(), "a deleted entry");
    assert!(r.delete_entry(EntryKind::Policy, "policy").await.unwrap());
    assert_eq!(r.erase_user(&alice).await.unwrap(), 1);
    let after = r.snapshot(Some(&alice)).await.unwrap();
    assert!(after.own.is_empty() && after.shared.proposed.is_empty(), "an erasure");
}

/// A turn's user message starts the turn's record in the same commit, and its final message
/// ends it; a commit that is not final, or of another message, leaves it.
async fn a_final_message_ends_its_turns_record(s: &Stores) {
    use super::lease::{Acquired, InterruptedTurn};
    let (k, ttl) = (key("quin", "c1"), std::time::Duration::from_secs(10));
    let probe = || s.leases.acquire(&k, &s.instance, ttl);
    assert_eq!(probe().await.unwrap(), Acquired::Granted { interrupted: None });
    let turn = InterruptedTurn {
        message_id: "q-a1".into(),
        request_id: "req_q".into(),
    };
    // The user message's commit starts the record.
    let starts = Save {
        title_hint: Some("hello".into()),
        user_assistant: Some("default".into()),
        starts_turn: Some(turn.clone()),
        ..Save::default()
    };
    s.chat.save(&k, &user("q-u1", "hello"), starts).await.unwrap();
    let final_save = || Save {
        ends_turn: true,
        ..Save::default()
    };
    let in_flight = Acquired::Granted {
        interrupted: Some(turn.clone()),
    };
    s.chat
        .save(&k, &UiMessage::new("q-older".into(), Role::Assistant), final_save())
        .await
        .unwrap();
    assert_eq!(probe().await.unwrap(), in_flight, "another message's final version");
    let reply = UiMessage::new("q-a1".into(), Role::Assistant);
    s.chat.save(&k, &reply, Save::default()).await.unwrap();
    assert_eq!(probe().await.unwrap(), in_flight, "a checkpoint that is not final");
    s.chat.save(&k, &reply, final_save()).await.unwrap();
    assert_eq!(probe().await.unwrap(), Acquired::Granted { interrupted: None });
}

async fn conversations_are_per_user(s: &Stores) {
    let chat = &s.chat;
    chat.save_message(
        &key("alice", "c1"),
        &user("m1", "Plan the offsite\nmore"),
        Some("Plan the offsite\nmore".into()),
    )
    .await
    .unwrap();
    chat.save_message(&key("bob", "c1"), &user("m1", "bob's own"), Some("bob's own".into()))
        .await
        .unwrap();
    assert_eq!(chat.list(&user_id("alice")).await.unwrap()[0].title, "Plan the offsite");
    assert_eq!(chat.load(&key("bob", "c1")).await.unwrap().unwrap().messages[0].text(), "bob's own");
    assert!(chat.load(&key("bob", "c2")).await.unwrap().is_none());
    assert!(chat.delete(&key("bob", "c1")).await.unwrap());
    assert!(!chat.delete(&key("bob", "c1")).await.unwrap());
    assert!(chat.list(&user_id("bob")).await.unwrap().is_empty());
    assert_eq!(chat.load(&key("alice", "c1")).await.unwrap().unwrap().messages.len(), 1);
}

async fn messages_keep_their_order_and_last_version(s: &Stores) {
    let chat = &s.chat;
    let k = key("carol", "order");
    for i in 0..5 {
        chat.save_message(&k, &user(&format!("m{i}"), &format!("text {i}")), None)
            .await
            .unwrap();
    }
    // Upserting m1 keeps its place and replaces its content (a streamed message grows).
    let mut assistant = UiMessage::new("m1".into(), Role::Assistant);
    assistant.parts.push(UiPart::Text {
        text: "grown".into(),
        state: None,
    });
    chat.save_message(&k, &assistant, Some("Late title".into())).await.unwrap();
    chat.save_message(&k, &user("m5", "x"), Some("Too late".into())).await.unwrap();
    let loaded = chat.load(&k).await.unwrap().unwrap();
    let ids: Vec<&str> = loaded.messages.iter().map(|m| m.id.as_str()).collect();
    assert_eq!(ids, ["m0", "m1", "m2", "m3", "m4", "m5"]);
    assert_eq!(loaded.messages[1].text(), "grown");
    assert_eq!(loaded.messages[1].role, Role::Assistant);
    assert_eq!(
        loaded.title, "Late title",
        "an untitled conversation takes the first hint, and keeps it"
    );
}

async fn summaries_are_stored_once_per_range_and_erased_with_the_user(s: &Stores) {
    let chat = &s.chat;
    let sum = |n: usize, text: &str| Summary {
        covers_count: n,
        covers_until_id: format!("m{n}"),
        text: text.into(),
    };
    let (dave, erin) = (key("dave", "c1"), key("erin", "c1"));
    assert!(
        !chat.save_summary(&dave, &sum(2, "orphan")).await.unwrap(),
        "no conversation, no summary"
    );
    chat.save_message(&dave, &user("m1", "hi"), None).await.unwrap();
    chat.save_message(&erin, &user("m1", "erin"), None).await.unwrap();
    assert!(chat.save_summary(&dave, &sum(2, "first")).await.unwrap());
    assert!(!chat.save_summary(&dave, &sum(2, "again")).await.unwrap());
    assert!(chat.save_summary(&dave, &sum(6, "later")).await.unwrap());
    assert!(chat.save_summary(&erin, &sum(2, "erin's")).await.unwrap());
    assert_eq!(chat.latest_summary(&dave).await.unwrap(), Some(sum(6, "later")));
    assert_eq!(chat.erase_user(&user_id("dave")).await.unwrap(), 1);
    assert_eq!(chat.latest_summary(&dave).await.unwrap(), None);
    assert!(chat.load(&dave).await.unwrap().is_none());
    assert_eq!(chat.latest_summary(&erin).await.unwrap(), Some(sum(2, "erin's")));
}

async fn approvals_are_taken_once_by_their_owner(s: &Stores) {
    let chat = &s.chat;
    let a = approval("ap1", "m2");
    chat.save_message_with_approvals(&key("frank", "c1"), &user("m2", "x"), vec![a.clone(), approval("ap2", "m2")])
        .await
        .unwrap();
    let pending = chat.pending_approvals(&key("frank", "c1")).await.unwrap();
    assert_eq!(pending.len(), 2);
    assert_eq!(pending[0], a, "the recorded call comes back exactly");
    assert!(chat.pending_approvals(&key("grace", "c1")).await.unwrap().is_empty());
    assert!(chat.take_approval(&key("grace", "c1"), "ap1").await.unwrap().is_none());
    assert!(chat.take_approval(&key("frank", "c2"), "ap1").await.unwrap().is_none());
    assert_eq!(chat.take_approval(&key("frank", "c1"), "ap1").await.unwrap(), Some(a));
    assert!(chat.take_approval(&key("frank", "c1"), "ap1").await.unwrap().is_none());
    assert_eq!(chat.pending_approvals(&key("frank", "c1")).await.unwrap().len(), 1);
}

async fn approvals_decided_together_are_taken_all_or_none(s: &Stores) {
    let (chat, k) = (&s.chat, key("hank", "c1"));
    let (a, b) = (approval("ap_a", "m1"), approval("ap_b", "m1"));
    chat.save_message_with_approvals(&k, &user("m1", "x"), vec![a.clone(), b.clone()])
        .await
        .unwrap();
    let ids = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    // The second is already used up: the first must not be used up with it.
    assert_eq!(chat.take_approval(&k, "ap_b").await.unwrap(), Some(b.clone()));
    assert!(chat.take_approvals(&k, &ids(&["ap_a", "ap_b"])).await.unwrap().is_none());
    assert!(chat.take_approvals(&k, &ids(&["ap_a", "ap_missing"])).await.unwrap().is_none());
    assert_eq!(chat.pending_approvals(&k).await.unwrap(), vec![a.clone()], "nothing was taken");
    let k2 = key("hank", "c2");
    chat.save_message_with_approvals(&k2, &user("m2", "x"), vec![approval("ap_c", "m2"), approval("ap_d", "m2")])
        .await
        .unwrap();
    // Another conversation's approval is not this one's.
    assert!(chat.take_approvals(&k, &ids(&["ap_a", "ap_c"])).await.unwrap().is_none());
    let both = chat.take_approvals(&k2, &ids(&["ap_d", "ap_c"])).await.unwrap().unwrap();
    assert_eq!(
        both.iter().map(|p| p.approval_id.as_str()).collect::<Vec<_>>(),
        ["ap_d", "ap_c"],
        "in the order asked"
    );
    assert!(chat.pending_approvals(&k2).await.unwrap().is_empty());
    // One approval named twice is not two decisions: nothing is taken.
    assert!(chat.take_approvals(&k, &ids(&["ap_a", "ap_a"])).await.unwrap().is_none());
    assert_eq!(chat.take_approvals(&k, &ids(&["ap_a"])).await.unwrap(), Some(vec![a]));
}

async fn a_conversation_keeps_its_assistant(s: &Stores) {
    use crate::error::Error;
    let chat = &s.chat;
    let k = key("oscar", "new");
    assert_eq!(chat.assistant_of(&k).await.unwrap(), None);
    chat.save_user_message(&k, &user("m1", "hi"), "planner").await.unwrap();
    assert_eq!(chat.assistant_of(&k).await.unwrap(), Some(Some("planner".into())));
    assert_eq!(chat.assistant_of(&key("peggy", "new")).await.unwrap(), None, "per user");
    chat.save_user_message(&k, &user("m2", "again"), "planner").await.unwrap();
    let refused = chat.save_user_message(&k, &user("m3", "switch"), "writer").await;
    assert!(
        matches!(refused, Err(Error::AssistantBound(ref b)) if b == "planner"),
        "{refused:?}"
    );
    let c = chat.load(&k).await.unwrap().unwrap();
    assert_eq!(c.messages.len(), 2, "nothing of the refused message was written");
    assert_eq!(c.assistant.as_deref(), Some("planner"));
    // An assistant message never sets or changes the binding.
    chat.save_message(&k, &user("a1", "reply"), None).await.unwrap();
    assert_eq!(chat.assistant_of(&k).await.unwrap(), Some(Some("planner".into())));
    // A conversation created by a non-user message has no binding until a user message.
    let unbound = key("oscar", "unbound");
    chat.save_message(&unbound, &user("x", "x"), None).await.unwrap();
    assert_eq!(chat.assistant_of(&unbound).await.unwrap(), Some(None));
}

/// Issue #29: the Smart Picker's origin is set by the message that creates the conversation,
/// listed and loaded with it, and never changed by a later message (from the main page, or
/// naming another origin); a conversation started on the Tamebi page has none.
async fn a_conversation_keeps_the_origin_it_was_created_with(s: &Stores) {
    use crate::origin::Origin;
    let chat = &s.chat;
    let from = |origin: Option<Origin>| Save {
        title_hint: Some("hi".into()),
        user_assistant: Some("default".into()),
        user_origin: origin,
        ..Save::default()
    };
    let (picked, plain) = (key("rupert", "picked"), key("rupert", "plain"));
    chat.save(&picked, &user("m1", "hi"), from(Some(Origin::Talk))).await.unwrap();
    chat.save(&plain, &user("m1", "hi"), from(None)).await.unwrap();
    // Continued on the main page (no origin), then a message claiming another origin.
    chat.save(&picked, &user("m2", "more"), from(None)).await.unwrap();
    chat.save(&picked, &user("m3", "again"), from(Some(Origin::Mail))).await.unwrap();
    chat.save(&plain, &user("m2", "late"), from(Some(Origin::Text))).await.unwrap();
    assert_eq!(chat.load(&picked).await.unwrap().unwrap().origin, Some(Origin::Talk));
    assert_eq!(chat.load(&plain).await.unwrap().unwrap().origin, None);
    let listed: Vec<_> = chat
        .list(&user_id("rupert"))
        .await
        .unwrap()
        .into_iter()
        .map(|c| (c.id, c.origin))
        .collect();
    assert_eq!(listed.len(), 2);
    assert!(
        listed.contains(&("picked".into(), Some(Origin::Talk))) && listed.contains(&("plain".into(), None)),
        "{listed:?}"
    );
}

async fn a_user_message_supersedes_pending_approvals(s: &Stores) {
    let chat = &s.chat;
    let k = key("heidi", "c1");
    chat.save_message_with_approvals(&k, &user("m1", "x"), vec![approval("ap_h", "m1")])
        .await
        .unwrap();
    chat.save_user_message(&k, &user("m2", "never mind"), "default").await.unwrap();
    assert!(chat.pending_approvals(&k).await.unwrap().is_empty());
    assert!(chat.take_approval(&k, "ap_h").await.unwrap().is_none());
    // A save with nothing to add keeps what is pending.
    chat.save(&k, &user("m3", "again"), Save::default()).await.unwrap();
    chat.save_message_with_approvals(&k, &user("m4", "y"), vec![approval("ap_h2", "m4")])
        .await
        .unwrap();
    chat.save_message(&k, &user("m4", "y2"), None).await.unwrap();
    assert_eq!(chat.pending_approvals(&k).await.unwrap().len(), 1);
}

async fn concurrent_takers_get_an_approval_once(s: &Stores) {
    let k = key("ivan", "c1");
    s.chat
        .save_message_with_approvals(&k, &user("m1", "x"), vec![approval("ap_race", "m1")])
        .await
        .unwrap();
    let mut takers = tokio::task::JoinSet::new();
    for _ in 0..16 {
        let (chat, k) = (Arc::clone(&s.chat), k.clone());
        takers.spawn(async move { chat.take_approval(&k, "ap_race").await.unwrap() });
    }
    let won = takers.join_all().await.into_iter().filter(Option::is_some).count();
    assert_eq!(won, 1, "exactly one taker runs the approved call");
}

async fn audit_rows_and_fingerprints_round_trip(s: &Stores) {
    let caller = test_caller("judy");
    let e = Entry::of(Kind::ToolCall, Outcome::Ok, &caller)
        .conversation(&key("judy", "c1"))
        .tool("nextcloud", "files_move")
        .category(Category::Action)
        .approval(ApprovalState::ApprovedByUser)
        .arguments_sha256("ab".into())
        .duration_ms(12)
        .build();
    let denied = Entry::of(Kind::ToolCall, Outcome::NotRun, &caller)
        .tool("nextcloud", "files_delete")
        .category(Category::Action)
        .approval(ApprovalState::DeniedByUser)
        .build();
    let erased = Entry::of(Kind::Erasure, Outcome::Erased, &caller).detail("1 conversation").build();
    for row in [&e, &denied, &erased] {
        s.audit.record(row.clone()).await;
    }
    let rows: Vec<Entry> = s.audit.entries().await.unwrap().into_iter().filter(|r| r.uid == "judy").collect();
    assert_eq!(rows, vec![e, denied, erased]);
    // Erasing the user's chat and memory never touches the audit trail.
    s.chat.erase_user(&user_id("judy")).await.unwrap();
    s.memory.erase_user(&user_id("judy")).await.unwrap();
    assert_eq!(s.audit.entries().await.unwrap().iter().filter(|r| r.uid == "judy").count(), 3);
    let audit = &s.audit;
    assert_eq!(audit.observe_fingerprint("s", "t", "f1").await.unwrap(), None);
    assert_eq!(audit.observe_fingerprint("s", "t", "f1").await.unwrap(), None);
    assert_eq!(audit.observe("s", "t", "f1").await.unwrap().last_changed_ms, None);
    // Times are in milliseconds: a change in the first one would read as "never changed".
    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    assert_eq!(audit.observe_fingerprint("s", "t", "f2").await.unwrap(), Some("f1".into()));
    assert!(audit.known_tools().await.unwrap().contains(&("s".to_string(), "t".to_string())));
    let seen = audit.observe("s", "t", "f2").await.unwrap();
    assert!(seen.previous.is_none() && seen.last_changed_ms.is_some(), "{seen:?}");
}

async fn facts_are_per_user_and_limited(s: &Stores) {
    let m = &s.memory;
    let (kate, leo) = (user_id("kate"), user_id("leo"));
    let f = m
        .write(&kate, "  Prefers meetings after 10:00 ", Some(&key("kate", "c1")))
        .await
        .unwrap();
    assert_eq!(f.text, "Prefers meetings after 10:00");
    assert_eq!(f.source_conversation.as_deref(), Some("c1"));
    let foreign_source = m.write(&leo, "leo's", Some(&key("kate", "c1"))).await.unwrap();
    assert_eq!(
        foreign_source.source_conversation, None,
        "only the user's own conversation is a source"
    );
    assert_eq!(m.list(&kate).await.unwrap(), vec![f.clone()]);
    assert!(!m.forget(&leo, f.id).await.unwrap(), "leo cannot forget kate's fact");
    assert!(m.write(&kate, " ", None).await.unwrap_err().to_string().contains("empty"));
    let long = "x".repeat(super::memory::MAX_FACT_CHARS + 1);
    assert!(m.write(&kate, &long, None).await.unwrap_err().to_string().contains("at most 500"));
    for i in 1..MAX_FACTS_PER_USER {
        m.write(&kate, &format!("fact {i}"), None).await.unwrap();
    }
    assert!(
        m.write(&kate, "one more", None)
            .await
            .unwrap_err()
            .to_string()
            .contains("Memory is full")
    );
    assert!(m.forget(&kate, f.id).await.unwrap());
    assert!(!m.forget(&kate, f.id).await.unwrap());
    assert_eq!(m.erase_user(&kate).await.unwrap(), MAX_FACTS_PER_USER - 1);
    assert!(m.list(&kate).await.unwrap().is_empty());
    assert_eq!(m.list(&leo).await.unwrap().len(), 1);
}

async fn concurrent_fact_writes_respect_the_limit(s: &Stores) {
    let mallory = user_id("mallory");
    let mut writers = tokio::task::JoinSet::new();
    for i in 0..MAX_FACTS_PER_USER + 20 {
        let (m, u) = (Arc::clone(&s.memory), mallory.clone());
        writers.spawn(async move { m.write(&u, &format!("fact {i}"), None).await.is_ok() });
    }
    let saved = writers.join_all().await.into_iter().filter(|ok| *ok).count();
    assert_eq!(saved, MAX_FACTS_PER_USER);
    assert_eq!(s.memory.list(&mallory).await.unwrap().len(), MAX_FACTS_PER_USER);
}

/// Leases shared between instances (PostgreSQL only: SQLite's belong to one process).
/// `other` is a second instance on the same database: a is it, b is `s` (chat writes are
/// fenced by the lease, so each writes as itself).
async fn leases_have_one_owner_and_expire(s: &Stores, other: &Stores) {
    use super::lease::{Acquired, InterruptedTurn, mark_interrupted};
    use std::time::Duration;
    let (l, k) = (&s.leases, key("nina", "c1"));
    let (a, b) = (other.instance.as_str(), s.instance.as_str());
    let (short, long) = (Duration::from_millis(1500), Duration::from_secs(30));
    assert_eq!(l.acquire(&k, a, short).await.unwrap(), Acquired::Granted { interrupted: None });
    assert_eq!(
        l.acquire(&k, a, short).await.unwrap(),
        Acquired::Granted { interrupted: None },
        "re-acquiring is fine"
    );
    let Acquired::HeldElsewhere { retry_after } = l.acquire(&k, b, long).await.unwrap() else {
        panic!("b must not own what a holds")
    };
    assert!(
        retry_after >= Duration::from_secs(1) && retry_after <= Duration::from_secs(2),
        "{retry_after:?}"
    );
    assert!(l.held_elsewhere(&k, b).await.unwrap().is_some_and(|d| d <= Duration::from_secs(2)));
    assert_eq!(l.held_elsewhere(&k, a).await.unwrap(), None, "not elsewhere for its owner");
    assert_eq!(l.held_elsewhere(&key("nina", "free"), b).await.unwrap(), None);
    assert_eq!(
        l.acquire(&key("nina", "c2"), b, long).await.unwrap(),
        Acquired::Granted { interrupted: None },
        "another conversation is free"
    );
    // a writes part of a reply, then dies (stops renewing) mid-turn.
    let turn = InterruptedTurn {
        message_id: "asst1".into(),
        request_id: "req_dead".into(),
    };
    l.turn_started(&k, a, &turn).await.unwrap();
    assert!(l.renew(&k, a, short).await.unwrap());
    assert!(l.confirm(&k, a, short).await.unwrap(), "confirmed while it has time left");
    assert!(
        !l.confirm(&k, b, long).await.unwrap(),
        "never for an instance that does not hold it"
    );
    let mut partial = UiMessage::new("asst1".into(), Role::Assistant);
    partial.parts.push(UiPart::Text {
        text: "Half a rep".into(),
        state: Some(crate::ui_stream::TextState::Streaming),
    });
    other.chat.save_message(&k, &partial, None).await.unwrap();
    tokio::time::sleep(short + Duration::from_millis(300)).await;
    let Acquired::Granted { interrupted: Some(found) } = l.acquire(&k, b, long).await.unwrap() else {
        panic!("the expired lease goes to b, with a's turn in flight")
    };
    assert_eq!(found, turn);
    assert!(!l.renew(&k, a, short).await.unwrap(), "a learns it lost the lease");
    assert!(!l.confirm(&k, a, short).await.unwrap(), "and a confirmation says so too");
    assert!(l.confirm(&k, b, long).await.unwrap());
    l.release(&k, a).await.unwrap();
    assert!(
        matches!(l.acquire(&k, a, short).await.unwrap(), Acquired::HeldElsewhere { .. }),
        "a's release cannot free b's lease"
    );
    mark_interrupted(s.chat.as_ref(), &k, &found).await.unwrap();
    mark_interrupted(s.chat.as_ref(), &k, &found).await.unwrap();
    let stored = s.chat.load(&k).await.unwrap().unwrap().messages;
    let parts = &stored.iter().find(|m| m.id == "asst1").unwrap().parts;
    assert_eq!(parts.len(), 2, "the text kept, one marker added: {parts:?}");
    assert!(matches!(
        &parts[0],
        UiPart::Text {
            state: Some(crate::ui_stream::TextState::Done),
            ..
        }
    ));
    let UiPart::DataInterrupted { data } = &parts[1] else {
        panic!("{parts:?}")
    };
    assert_eq!(data["requestId"], "req_dead");
    assert!(data["message"].as_str().unwrap().contains("req_dead"));
    // A turn lost before anything was committed still leaves a visible marker.
    let nothing = InterruptedTurn {
        message_id: "asst2".into(),
        request_id: "req_early".into(),
    };
    mark_interrupted(s.chat.as_ref(), &k, &nothing).await.unwrap();
    let stored = s.chat.load(&k).await.unwrap().unwrap().messages;
    assert_eq!(stored.last().unwrap().id, "asst2");
    // b ends cleanly and releases: the next owner finds nothing interrupted.
    l.turn_ended(&k, b).await.unwrap();
    l.release(&k, b).await.unwrap();
    assert_eq!(l.acquire(&k, "c", short).await.unwrap(), Acquired::Granted { interrupted: None });
}

/// The write fence (store::lease): an instance whose conversation was taken writes nothing
/// into it any more, whoever took it and whether or not the lease is live.
async fn a_lost_conversation_is_fenced(s: &Stores, other: &Stores) {
    use super::lease::{Acquired, InterruptedTurn, mark_interrupted};
    use crate::error::Error;
    use std::time::Duration;
    let (k, ttl) = (key("olga", "c1"), Duration::from_secs(30));
    let (mine, theirs) = (s.instance.as_str(), other.instance.as_str());
    // No lease row at all: nothing to fence (a conversation nobody runs).
    s.chat.save_message(&k, &user("m1", "first"), Some("first".into())).await.unwrap();
    assert_eq!(
        s.leases.acquire(&k, mine, ttl).await.unwrap(),
        Acquired::Granted { interrupted: None }
    );
    let turn = InterruptedTurn {
        message_id: "m2".into(),
        request_id: "req_erased".into(),
    };
    s.leases.turn_started(&k, mine, &turn).await.unwrap();
    s.chat
        .save_message_with_approvals(&k, &user("m2", "by the owner"), vec![approval("ap_olga", "m2")])
        .await
        .unwrap();
    // An erasure on the other instance takes the live lease, then erases.
    other.leases.seize_user(&user_id("olga"), theirs, ttl).await.unwrap();
    assert!(
        matches!(
            s.chat.save_message(&k, &user("m3", "too late"), None).await,
            Err(Error::OwnedElsewhere { .. })
        ),
        "the former owner's write is refused"
    );
    // Nor may it consume an approval (and run its call) or store a summary any more.
    assert!(matches!(
        s.chat.take_approval(&k, "ap_olga").await,
        Err(Error::OwnedElsewhere { .. })
    ));
    assert_eq!(
        other.chat.pending_approvals(&k).await.unwrap().len(),
        1,
        "the approval was not used up"
    );
    let summary = crate::compaction::Summary {
        covers_count: 1,
        covers_until_id: "m1".into(),
        text: "late".into(),
    };
    assert!(matches!(s.chat.save_summary(&k, &summary).await, Err(Error::OwnedElsewhere { .. })));
    assert!(other.chat.latest_summary(&k).await.unwrap().is_none());
    assert!(!s.leases.renew(&k, mine, ttl).await.unwrap(), "and its renewal tells it so");
    assert_eq!(other.chat.erase_user(&user_id("olga")).await.unwrap(), 1);
    other.leases.release_user(&user_id("olga"), theirs).await.unwrap();
    assert!(matches!(
        s.chat.save_message(&k, &user("m3", "still too late"), None).await,
        Err(Error::OwnedElsewhere { .. })
    ));
    assert!(s.chat.load(&k).await.unwrap().is_none(), "nothing came back");
    // The seizure cleared the turn record: the next owner marks nothing in the erased
    // conversation, and a marker never recreates a deleted conversation anyway.
    assert_eq!(
        s.leases.acquire(&k, mine, ttl).await.unwrap(),
        Acquired::Granted { interrupted: None }
    );
    mark_interrupted(s.chat.as_ref(), &k, &turn).await.unwrap();
    assert!(s.chat.load(&k).await.unwrap().is_none());
    // Taken back properly, the instance writes again (a new conversation under the same id).
    s.chat.save_message(&k, &user("m4", "new"), None).await.unwrap();
    // Released: the row keeps naming its owner, so nobody else writes without taking it.
    s.leases.release(&k, mine).await.unwrap();
    assert!(matches!(
        other.chat.save_message(&k, &user("m5", "sneaky"), None).await,
        Err(Error::OwnedElsewhere { .. })
    ));
    assert_eq!(
        other.leases.acquire(&k, theirs, ttl).await.unwrap(),
        Acquired::Granted { interrupted: None }
    );
    other.chat.save_message(&k, &user("m5", "taken over"), None).await.unwrap();
    let ids: Vec<String> = s.chat.load(&k).await.unwrap().unwrap().messages.into_iter().map(|m| m.id).collect();
    assert_eq!(ids, ["m4", "m5"]);
}

/// A turn's fact write is fenced like a chat write: once an erasure on the other instance has
/// seized the user's conversations, a turn still running here (its source conversation one of
/// them) stores no fact; a fact with no source conversation is not a turn's and is not fenced.
async fn a_lost_conversations_facts_are_fenced(s: &Stores, other: &Stores) {
    use super::lease::Acquired;
    use crate::error::Error;
    use std::time::Duration;
    let (uid, k, ttl) = (user_id("pete"), key("pete", "c1"), Duration::from_secs(30));
    let (mine, theirs) = (s.instance.as_str(), other.instance.as_str());
    s.chat.save_message(&k, &user("p1", "hello"), Some("hello".into())).await.unwrap();
    assert_eq!(
        s.leases.acquire(&k, mine, ttl).await.unwrap(),
        Acquired::Granted { interrupted: None }
    );
    let kept = s.memory.write(&uid, "written by the owner", Some(&k)).await.unwrap();
    other.leases.seize_user(&uid, theirs, ttl).await.unwrap();
    assert!(
        matches!(
            s.memory.write(&uid, "written after the seizure", Some(&k)).await,
            Err(Error::OwnedElsewhere { .. })
        ),
        "the former owner's turn writes no fact"
    );
    assert_eq!(other.memory.list(&uid).await.unwrap(), vec![kept.clone()], "no fact was stored");
    // Given back (expired, still naming the seizer): still fenced until taken properly.
    other.leases.release_user(&uid, theirs).await.unwrap();
    assert!(matches!(
        s.memory.write(&uid, "still too late", Some(&k)).await,
        Err(Error::OwnedElsewhere { .. })
    ));
    // Not a turn's fact (no source conversation): as before, no lease is involved.
    let unsourced = s.memory.write(&uid, "no source", None).await.unwrap();
    assert_eq!(unsourced.source_conversation, None);
    // Taken back, the instance writes again.
    assert_eq!(
        s.leases.acquire(&k, mine, ttl).await.unwrap(),
        Acquired::Granted { interrupted: None }
    );
    let again = s.memory.write(&uid, "taken back", Some(&k)).await.unwrap();
    assert_eq!(s.memory.list(&uid).await.unwrap(), vec![kept, unsourced, again]);
}

/// G1's replay records shared by two instances: of any number of uses of one nonce, on
/// either instance and at once, exactly one is the first.
/// Each instance keeps a copy of the registry (store::postgres::registry), and still a write
/// acknowledged on one instance is in every snapshot the other takes afterwards: through the
/// code, through plain SQL that bypasses it, and for requests reading at the same moment.
async fn registry_snapshots_follow_every_write(s: &Stores, other: &Stores, cluster: &test_harness::postgres::PgCluster) {
    use super::registry::{EntryKind, Put};
    let alice = user_id("snap-alice");
    let servers = |snapshot: &super::registry::Snapshot| snapshot.shared.servers.clone();
    assert!(servers(&other.registry.snapshot(Some(&alice)).await.unwrap()).is_empty());
    assert!(
        s.registry
            .put_entry(EntryKind::Server, "s1", "{\"v\":1}", Put::Create)
            .await
            .unwrap()
    );
    assert_eq!(
        servers(&other.registry.snapshot(None).await.unwrap()),
        [("s1".to_string(), "{\"v\":1}".to_string())],
        "seen by the next snapshot of the other instance"
    );
    s.registry.create_personal(&alice, "snap-1", "{}").await.unwrap();
    let own = other.registry.snapshot(Some(&alice)).await.unwrap().own;
    assert_eq!(
        own.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(),
        ["snap-1"],
        "the owner's rows too"
    );
    cluster
        .psql("suite", "UPDATE registry_entries SET body = '{\"v\":\"sql\"}' WHERE name = 's1'")
        .unwrap();
    assert_eq!(
        servers(&other.registry.snapshot(None).await.unwrap())[0].1,
        "{\"v\":\"sql\"}",
        "a write that bypasses tamebi"
    );
    // Snapshots taken together share token reads; none may be answered by one older than it.
    for round in 0..20 {
        let body = format!("{{\"v\":{round}}}");
        assert!(s.registry.put_entry(EntryKind::Server, "s1", &body, Put::Replace).await.unwrap());
        let taken = futures::future::join_all((0..8).map(|_| other.registry.snapshot(None))).await;
        for snapshot in taken {
            assert_eq!(servers(&snapshot.unwrap())[0].1, body, "round {round}");
        }
    }
    assert!(s.registry.delete_entry(EntryKind::Server, "s1").await.unwrap());
    assert_eq!(s.registry.erase_user(&alice).await.unwrap(), 1);
    let after = other.registry.snapshot(Some(&alice)).await.unwrap();
    assert!(after.shared.servers.is_empty() && after.own.is_empty());
}

async fn replay_records_accept_once_across_instances(s: &Stores, other: &Stores, cluster: &test_harness::postgres::PgCluster) {
    let (mine, theirs) = (s.replay.clone().unwrap(), other.replay.clone().unwrap());
    let now = chrono::Utc::now().timestamp();
    let digest = [7u8; 32];
    assert!(mine.first_seen(&digest, now + 60, now).await.unwrap());
    assert!(
        !theirs.first_seen(&digest, now + 60, now).await.unwrap(),
        "replayed to the other instance"
    );
    assert!(!mine.first_seen(&digest, now + 60, now).await.unwrap(), "replayed to the same one");
    let mut racers = tokio::task::JoinSet::new();
    for i in 0..16 {
        let store = if i % 2 == 0 { mine.clone() } else { theirs.clone() };
        racers.spawn(async move { store.first_seen(&[9u8; 32], now + 60, now).await.unwrap() });
    }
    let firsts = racers.join_all().await.into_iter().filter(|first| *first).count();
    assert_eq!(firsts, 1, "exactly one racer is first");
    // Expired records are pruned (well after their expiry: instances' clocks may differ);
    // live ones are kept.
    assert!(mine.first_seen(&[1u8; 32], now - 400, now - 460).await.unwrap());
    let later = now + 31;
    assert!(theirs.first_seen(&[2u8; 32], later + 60, later).await.unwrap(), "this use prunes");
    let left = cluster.psql("suite", "SELECT count(*) FROM replay_nonces").unwrap();
    assert_eq!(left, "3", "the old record is gone, the three live ones stay");
}

/// SQLite: a turn recorded in flight and never ended (the process was killed) is handed to the
/// next acquisition after a restart, once.
async fn a_turn_left_in_flight_is_found_after_a_restart(s: Stores, backend: &Backend) {
    use super::lease::{Acquired, InterruptedTurn};
    use std::time::Duration;
    let (k, ttl) = (key("pia", "c1"), Duration::from_secs(10));
    let (ended, cut) = (key("pia", "ended"), key("pia", "cut"));
    let turn = |m: &str| InterruptedTurn {
        message_id: m.into(),
        request_id: format!("req_{m}"),
    };
    assert_eq!(
        s.leases.acquire(&k, &s.instance, ttl).await.unwrap(),
        Acquired::Granted { interrupted: None }
    );
    s.leases.turn_started(&k, &s.instance, &turn("a1")).await.unwrap();
    s.leases.turn_started(&ended, &s.instance, &turn("a2")).await.unwrap();
    s.leases.turn_ended(&ended, &s.instance).await.unwrap();
    s.leases.turn_started(&cut, &s.instance, &turn("a3")).await.unwrap();
    // A turn of a conversation that is erased leaves nothing to find.
    s.chat.erase_user(&user_id("pia")).await.unwrap();
    s.leases.turn_started(&k, &s.instance, &turn("a4")).await.unwrap();
    s.close().await;
    let again = Stores::open(backend, no_turns()).await.unwrap();
    assert_eq!(
        again.leases.acquire(&k, &again.instance, ttl).await.unwrap(),
        Acquired::Granted {
            interrupted: Some(turn("a4"))
        }
    );
    // Kept until the caller has marked the turn and says so: a crash in between loses nothing.
    assert_eq!(
        again.leases.acquire(&k, &again.instance, ttl).await.unwrap(),
        Acquired::Granted {
            interrupted: Some(turn("a4"))
        },
        "kept until marked"
    );
    again.leases.turn_ended(&k, &again.instance).await.unwrap();
    assert_eq!(
        again.leases.acquire(&k, &again.instance, ttl).await.unwrap(),
        Acquired::Granted { interrupted: None },
        "gone once marked"
    );
    for other in [&ended, &cut] {
        assert_eq!(
            again.leases.acquire(other, &again.instance, ttl).await.unwrap(),
            Acquired::Granted { interrupted: None }
        );
    }
    again.close().await;
}

/// PostgreSQL: a fact write whose transaction holds the user's lock (a cancelled turn's, its
/// COMMIT already handed to the connection) commits before the erasure deletes, never after.
async fn an_erasure_orders_after_a_fact_write_under_way(s: &Stores, backend: &Backend) {
    let Backend::Postgres(target) = backend else {
        return;
    };
    let uid = user_id("late-writer");
    let pool = super::postgres::connect(target).await.unwrap();
    let mut writer = pool.get().await.unwrap();
    let tx = writer.transaction().await.unwrap();
    tx.execute(super::postgres::memory::LOCK_USER_FACTS, &[&uid.as_str()])
        .await
        .unwrap();
    tx.execute(
        "INSERT INTO facts (uid, text, created_at) VALUES ($1, 'written as the erasure began', 0)",
        &[&uid.as_str()],
    )
    .await
    .unwrap();
    let mut erase = tokio::task::JoinSet::new();
    let (memory, erased_uid) = (s.memory.clone(), uid.clone());
    erase.spawn(async move { memory.erase_user(&erased_uid).await });
    // The erasure is under way (waiting on the lock) when the write commits.
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert!(
        erase.try_join_next().is_none(),
        "the erasure did not wait for the write holding the lock"
    );
    tx.commit().await.unwrap();
    let erased = erase.join_next().await.unwrap().unwrap().unwrap();
    assert_eq!(erased, 1, "the erasure saw the committed fact");
    assert!(s.memory.list(&uid).await.unwrap().is_empty(), "the write outlived the erasure");
    pool.close();
}

/// Many saves at once (PostgreSQL commits them in groups, store::postgres::group_commit):
/// each is answered by its own outcome. A save refused by its conversation's assistant, or
/// (with `other`, PostgreSQL) by the fence of a conversation another instance took, writes
/// nothing and takes nothing from the others; every other one is there afterwards, and saves
/// of one conversation queued together keep their order.
async fn concurrent_saves_are_answered_each_by_their_own_outcome(s: &Stores, other: Option<&Stores>) {
    use crate::error::Error;
    // Another user's: the seizure below takes every conversation of gina's that exists.
    let bound = key("hana", "bound");
    s.chat.save_user_message(&bound, &user("b1", "for hr"), "hr").await.unwrap();
    let lost = key("gina", "lost");
    s.chat.save_message(&lost, &user("l1", "mine"), None).await.unwrap();
    if let Some(other) = other {
        let ttl = std::time::Duration::from_secs(30);
        s.leases.acquire(&lost, &s.instance, ttl).await.unwrap();
        other.leases.seize_user(&user_id("gina"), &other.instance, ttl).await.unwrap();
    }
    let ordered = key("gina", "ordered");
    let (messages, fresh): (Vec<_>, Vec<_>) = (0..40)
        .map(|i| (user(&format!("f{i}"), &format!("fresh {i}")), key("gina", &format!("f{i}"))))
        .unzip();
    let (o1, o2, o3) = (user("o1", "one"), user("o2", "two"), user("o3", "three"));
    let (refused_msg, lost_msg) = (user("b2", "for sales"), user("l2", "too late"));
    let mut saves: Vec<futures::future::BoxFuture<'_, Result<(), Error>>> = Vec::new();
    saves.push(Box::pin(s.chat.save_user_message(&bound, &refused_msg, "sales")));
    saves.push(Box::pin(s.chat.save_message(&lost, &lost_msg, None)));
    for (k, m) in fresh.iter().zip(&messages) {
        saves.push(Box::pin(s.chat.save_user_message(k, m, "default")));
    }
    for m in [&o1, &o2, &o3] {
        saves.push(Box::pin(s.chat.save_message(&ordered, m, None)));
    }
    let answers = futures::future::join_all(saves).await;
    assert!(
        matches!(&answers[0], Err(Error::AssistantBound(b)) if b == "hr"),
        "{:?}",
        answers[0]
    );
    if other.is_some() {
        assert!(matches!(answers[1], Err(Error::OwnedElsewhere { .. })), "{:?}", answers[1]);
    } else {
        assert!(answers[1].is_ok(), "{:?}", answers[1]);
    }
    for (i, a) in answers[2..].iter().enumerate() {
        assert!(a.is_ok(), "save {i}: {a:?}");
    }
    let texts = |c: super::chat::Conversation| c.messages.iter().map(UiMessage::text).collect::<Vec<_>>();
    assert_eq!(
        texts(s.chat.load(&bound).await.unwrap().unwrap()),
        ["for hr"],
        "the refused save wrote nothing"
    );
    let lost_texts = texts(s.chat.load(&lost).await.unwrap().unwrap());
    assert_eq!(lost_texts.len(), if other.is_some() { 1 } else { 2 }, "{lost_texts:?}");
    for (i, k) in fresh.iter().enumerate() {
        let c = s
            .chat
            .load(k)
            .await
            .unwrap()
            .unwrap_or_else(|| panic!("conversation f{i} was committed"));
        assert_eq!(texts(c), [format!("fresh {i}")]);
        assert_eq!(s.chat.assistant_of(k).await.unwrap(), Some(Some("default".into())));
    }
    assert_eq!(texts(s.chat.load(&ordered).await.unwrap().unwrap()), ["one", "two", "three"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn suite_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let backend = Backend::Sqlite(dir.path().to_path_buf());
    let stores = Stores::open(&backend, no_turns()).await.unwrap();
    run_suite(&stores).await;
    concurrent_saves_are_answered_each_by_their_own_outcome(&stores, None).await;
    a_turn_left_in_flight_is_found_after_a_restart(stores, &backend).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn suite_on_postgres() {
    let Some(cluster) = test_harness::postgres::PgCluster::start_or_skip() else {
        return;
    };
    let url = cluster.create_database("suite").unwrap();
    let backend = Backend::Postgres(super::postgres::Target::parse(&url, None).unwrap());
    let stores = Stores::open(&backend, no_turns()).await.unwrap();
    run_suite(&stores).await;
    let other = Stores::open(&backend, no_turns()).await.unwrap();
    leases_have_one_owner_and_expire(&stores, &other).await;
    a_lost_conversation_is_fenced(&stores, &other).await;
    a_lost_conversations_facts_are_fenced(&stores, &other).await;
    concurrent_saves_are_answered_each_by_their_own_outcome(&stores, Some(&other)).await;
    replay_records_accept_once_across_instances(&stores, &other, &cluster).await;
    registry_snapshots_follow_every_write(&stores, &other, &cluster).await;
    an_erasure_orders_after_a_fact_write_under_way(&stores, &backend).await;
    other.close().await;
    stores.close().await;
    // Migrations are applied once: opening again finds them all and changes nothing.
    let again = Stores::open(&backend, no_turns()).await.unwrap();
    assert_eq!(cluster.psql("suite", "SELECT count(*) FROM schema_migrations").unwrap(), "6");
    again.close().await;
}
