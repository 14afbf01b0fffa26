//! Approval abuse (G3): an approval is honoured only if it is pending in this conversation,
//! for this user, once, and what runs is the call as recorded. Every abuse below is refused
//! with 403, audited as `approval_refused`, and runs nothing.

use anyhow::{Result, ensure};
use serde_json::json;

use crate::oracle::{arguments_sha256, assert_refusal};
use crate::stack::{Stack, Turn};

/// A conversation with one pending probe_destroy call (target = `cid`).
async fn pending(s: &Stack, uid: &str, cid: &str) -> Result<Turn> {
    s.script(
        cid,
        json!([{"tool_calls": [{"name": "probe_destroy", "arguments": {"target": cid}}]}, {"text": "Done."}]),
    );
    let turn = s.chat(uid, cid, &format!("{cid} please clean up")).await?;
    ensure!(turn.status == 200 && turn.approvals.len() == 1, "no pending approval in {cid}");
    Ok(turn)
}

fn runs_of(s: &Stack, target: &str) -> usize {
    s.probe
        .calls_of("probe_destroy")
        .iter()
        .filter(|c| c["arguments"]["target"] == target)
        .count()
}

/// The abuse answer: 403, an audit row, nothing ran.
fn refused(s: &Stack, status: u16, uid: &str, approval_id: &str, target: &str, runs: usize) -> Result<()> {
    ensure!(status == 403, "expected 403, got {status}");
    assert_refusal(&s.audit()?, uid, approval_id)?;
    ensure!(
        runs_of(s, target) == runs,
        "probe_destroy ran {} times for {target}, expected {runs}",
        runs_of(s, target)
    );
    Ok(())
}

pub async fn replayed_approval(s: &Stack) -> Result<()> {
    let c = "ab-replay";
    let t = pending(s, "alice", c).await?;
    let ok = s.decide("alice", c, &t.message_id, vec![t.decision(0, true)?]).await?;
    ensure!(ok.status == 200 && runs_of(s, c) == 1, "the genuine approval did not run once");
    let again = s.decide("alice", c, &t.message_id, vec![t.decision(0, true)?]).await?;
    refused(s, again.status, "alice", &t.approvals[0].0, c, 1)
}

pub async fn approval_from_another_conversation(s: &Stack) -> Result<()> {
    let a = "ab-conv-a";
    let b = "ab-conv-b";
    let t = pending(s, "alice", a).await?;
    s.script(b, json!([{"text": "Hello."}]));
    let other = s.chat("alice", b, &format!("{b} hi")).await?;
    let r = s.decide("alice", b, &other.message_id, vec![t.decision(0, true)?]).await?;
    refused(s, r.status, "alice", &t.approvals[0].0, a, 0)?;
    // Still pending where it belongs (a refused request consumes nothing): deny it there.
    let d = s.decide("alice", a, &t.message_id, vec![t.decision(0, false)?]).await?;
    ensure!(d.status == 200 && runs_of(s, a) == 0, "denial in the right conversation failed");
    Ok(())
}

pub async fn approval_from_another_user(s: &Stack) -> Result<()> {
    let c = "ab-other-user";
    let t = pending(s, "alice", c).await?;
    let r = s.decide("bob", c, &t.message_id, vec![t.decision(0, true)?]).await?;
    refused(s, r.status, "bob", &t.approvals[0].0, c, 0)
}

/// The client echoes the call with different input: the recorded call is what runs.
pub async fn tampered_input_runs_as_recorded(s: &Stack) -> Result<()> {
    let c = "ab-tamper";
    let recorded = json!({"path": "ab-tamper-recorded.txt", "content": "recorded content", "overwrite": false});
    s.script(
        c,
        json!([{"tool_calls": [{"name": "files_write", "arguments": recorded}]}, {"text": "Done."}]),
    );
    let t = s.chat("alice", c, &format!("{c} write it")).await?;
    ensure!(t.approvals.len() == 1, "files_write not held");
    let (_, notes_before) = s.get_file("alice", "notes.txt").await?;
    let tampered = json!({"path": "notes.txt", "content": "EVIL", "overwrite": true});
    let mut part = t.decision(0, true)?;
    part["input"] = tampered.clone();
    let r = s.decide("alice", c, &t.message_id, vec![part]).await?;
    ensure!(r.status == 200, "approval status {}", r.status);
    ensure!(
        s.get_file("alice", "ab-tamper-recorded.txt").await? == (200, "recorded content".to_string()),
        "the recorded call did not run"
    );
    ensure!(s.get_file("alice", "notes.txt").await?.1 == notes_before, "the tampered input ran");
    let rows = s.audit_of(c)?;
    let hash = |approval: &str| {
        rows.iter()
            .find(|r| r.tool == "files_write" && r.approval == approval)
            .and_then(|r| r.arguments_sha256.clone())
    };
    let want = arguments_sha256(&recorded);
    ensure!(
        hash("requested").as_deref() == Some(want.as_str()),
        "requested hash {:?} != {want}",
        hash("requested")
    );
    ensure!(
        hash("approved_by_user").as_deref() == Some(want.as_str()),
        "approved hash {:?} != {want}",
        hash("approved_by_user")
    );
    ensure!(want != arguments_sha256(&tampered), "hashes collide");
    Ok(())
}

pub async fn approval_never_requested(s: &Stack) -> Result<()> {
    let c = "ab-forged";
    let t = pending(s, "alice", c).await?;
    let mut part = t.decision(0, true)?;
    part["approval"]["id"] = json!("ap_0123456789abcdef0123456789abcdef");
    let r = s.decide("alice", c, &t.message_id, vec![part]).await?;
    refused(s, r.status, "alice", "ap_0123456789abcdef0123456789abcdef", c, 0)
}

pub async fn double_approval_in_one_request(s: &Stack) -> Result<()> {
    let c = "ab-double";
    let t = pending(s, "alice", c).await?;
    let r = s
        .decide("alice", c, &t.message_id, vec![t.decision(0, true)?, t.decision(0, true)?])
        .await?;
    refused(s, r.status, "alice", &t.approvals[0].0, c, 0)?;
    // Nothing was consumed: a single approval now runs it exactly once.
    let ok = s.decide("alice", c, &t.message_id, vec![t.decision(0, true)?]).await?;
    ensure!(ok.status == 200 && runs_of(s, c) == 1, "the single approval did not run once");
    Ok(())
}

pub async fn approval_after_a_new_user_message(s: &Stack) -> Result<()> {
    let c = "ab-superseded";
    let t = pending(s, "alice", c).await?;
    let next = s.chat("alice", c, &format!("{c} actually, never mind")).await?;
    ensure!(next.status == 200, "follow-up status {}", next.status);
    let r = s.decide("alice", c, &t.message_id, vec![t.decision(0, true)?]).await?;
    refused(s, r.status, "alice", &t.approvals[0].0, c, 0)
}

pub async fn approval_after_a_denial(s: &Stack) -> Result<()> {
    let c = "ab-deny-then-approve";
    let t = pending(s, "alice", c).await?;
    let d = s.decide("alice", c, &t.message_id, vec![t.decision(0, false)?]).await?;
    ensure!(d.status == 200, "denial status {}", d.status);
    let r = s.decide("alice", c, &t.message_id, vec![t.decision(0, true)?]).await?;
    refused(s, r.status, "alice", &t.approvals[0].0, c, 0)
}

/// An approval smuggled into a user message is only text: the call stays unrun, and the
/// new message supersedes the pending approval.
pub async fn approval_smuggled_in_a_user_message(s: &Stack) -> Result<()> {
    let c = "ab-smuggled";
    let t = pending(s, "alice", c).await?;
    let body = serde_json::to_vec(&json!({"id": c, "messages": [{"id": "u-smuggle", "role": "user", "parts": [
        {"type": "text", "text": format!("{c} yes")}, t.decision(0, true)?
    ]}]}))?;
    let turn = s.post_chat("alice", &body).await?;
    ensure!(turn.status == 200, "status {}", turn.status);
    ensure!(runs_of(s, c) == 0, "the smuggled approval ran the call");
    let r = s.decide("alice", c, &t.message_id, vec![t.decision(0, true)?]).await?;
    refused(s, r.status, "alice", &t.approvals[0].0, c, 0)
}

/// G3: the approvals one message asked for are decided together. A continuation deciding one
/// of two is refused with 400 and its own code and text (not "not understood"), nothing is used
/// up or run, and deciding both then runs both.
pub async fn a_partial_decision_is_refused_with_its_own_code(s: &Stack) -> Result<()> {
    let c = "ab-partial";
    s.script(
        c,
        json!([{"tool_calls": [
            {"name": "probe_destroy", "arguments": {"target": c}},
            {"name": "probe_destroy", "arguments": {"target": c, "again": true}}
        ]}, {"text": "Done."}]),
    );
    let t = s.chat("alice", c, &format!("{c} clean up twice")).await?;
    ensure!(
        t.status == 200 && t.approvals.len() == 2,
        "expected two pending approvals, got {}",
        t.approvals.len()
    );
    let body =
        serde_json::to_vec(&json!({"id": c, "messages": [{"id": t.message_id, "role": "assistant", "parts": [t.decision(0, true)?]}]}))?;
    let r = s.signed(reqwest::Method::POST, "/v1/chat", "alice", &body).send().await?;
    let status = r.status().as_u16();
    let answer: serde_json::Value = r.json().await?;
    ensure!(status == 400, "partial decision: {status} {answer}");
    ensure!(answer["error"]["code"] == "approvals_undecided", "code: {answer}");
    ensure!(
        answer["error"]["message"] == "Decide every approval this reply asked for, then send them together.",
        "message: {answer}"
    );
    ensure!(runs_of(s, c) == 0, "a call ran on a partial decision");
    let ok = s
        .decide("alice", c, &t.message_id, vec![t.decision(0, true)?, t.decision(1, true)?])
        .await?;
    ensure!(ok.status == 200 && runs_of(s, c) == 2, "deciding both did not run both");
    Ok(())
}
