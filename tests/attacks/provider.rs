//! A buggy or hostile model provider (issue #10 item 3). The provider chooses tool-call ids
//! and stream indexes; neither may decide what the user is asked to approve or how much the
//! orchestrator allocates. What must hold: every call is shown and recorded under its own
//! id of ours, the approval card (live and after a reload) shows the recorded call, and a
//! stream outside the bounds is a model error that runs nothing.

use anyhow::{Context, Result, ensure};
use serde_json::{Value, json};

use crate::oracle::arguments_sha256;
use crate::stack::Stack;

/// The tool parts of the conversation's last assistant message, as a reload shows them.
async fn reloaded_tool_parts(s: &Stack, cid: &str) -> Result<Vec<Value>> {
    let c = s.orch.get_json(&s.http, &format!("/v1/conversations/{cid}"), "alice").await;
    let last = c["messages"]
        .as_array()
        .and_then(|m| m.iter().rev().find(|m| m["role"] == "assistant"))
        .context("no assistant message after reload")?;
    Ok(last["parts"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|p| p["type"] == "dynamic-tool")
        .cloned()
        .collect())
}

/// Two calls in one step under the same provider id: a harmless read and a move. The card
/// must name the move with the move's arguments, and approving it runs exactly that.
pub async fn duplicate_tool_call_ids(s: &Stack) -> Result<()> {
    let m = "prov-dup-id";
    let (from, to) = ("Shared-with-bob/dup-source.txt", "private/dup-moved.txt");
    s.put_file("alice", from, format!("Source {m}.")).await?;
    let read = json!({"path": "notes.txt"});
    let mv = json!({"from": from, "to": to});
    s.script(
        m,
        json!([
            {"tool_calls": [
                {"name": "files_read", "arguments": read, "id": "call_dup"},
                {"name": "files_move", "arguments": mv, "id": "call_dup"}
            ]},
            {"text": "Done."}
        ]),
    );
    let turn = s.chat("alice", m, &format!("{m} tidy up")).await?;
    ensure!(turn.status == 200, "chat status {}", turn.status);
    ensure!(turn.outputs_of("files_read") == ["tool-output-available"], "the read did not run");
    ensure!(turn.approvals.len() == 1, "approvals: {:?}", turn.approvals);
    ensure!(
        turn.call(&turn.approvals[0].1) == Some(("files_move".to_string(), mv.clone())),
        "the live card shows {:?}",
        turn.call(&turn.approvals[0].1)
    );
    let ids: Vec<&str> = turn
        .parts
        .iter()
        .filter(|p| p["type"] == "tool-input-start")
        .filter_map(|p| p["toolCallId"].as_str())
        .collect();
    ensure!(
        ids.len() == 2 && ids[0] != ids[1] && !ids.contains(&"call_dup"),
        "calls do not have their own ids: {ids:?}"
    );

    // After a reload the card is rendered from what chat.db holds.
    let parts = reloaded_tool_parts(s, m).await?;
    let card = parts
        .iter()
        .find(|p| p["approval"]["id"] == turn.approvals[0].0.as_str())
        .context("no approval card after reload")?;
    ensure!(
        card["toolName"] == "files_move" && card["input"] == mv && card["state"] == "approval-requested",
        "the reloaded card shows {card}"
    );
    let reads: Vec<&Value> = parts.iter().filter(|p| p["toolName"] == "files_read").collect();
    ensure!(
        reads.len() == 1 && reads[0]["input"] == read && reads[0]["state"] == "output-available",
        "the read part after reload: {reads:?}"
    );
    ensure!(s.get_file("alice", to).await?.0 == 404, "moved before approval");

    // Approving the card as reloaded runs the call it shows, and only that.
    let mut decision = card.clone();
    decision["state"] = json!("approval-responded");
    decision["approval"]["approved"] = json!(true);
    let after = s.decide("alice", m, &turn.message_id, vec![decision]).await?;
    ensure!(after.status == 200, "approve status {}", after.status);
    ensure!(s.get_file("alice", to).await?.0 == 200, "the approved move did not happen");
    let rows = s.audit_of(m)?;
    ensure!(
        rows.iter().any(|r| r.tool == "files_move"
            && r.approval == "approved_by_user"
            && r.arguments_sha256.as_deref() == Some(arguments_sha256(&mv).as_str())),
        "no approved files_move row: {rows:?}"
    );
    Ok(())
}

/// A provider-chosen index is a key, never a length: index 2^62 costs one call's memory.
pub async fn huge_tool_call_index(s: &Stack) -> Result<()> {
    let m = "prov-huge-index";
    s.script(
        m,
        json!([
            {"tool_calls": [{"name": "files_list", "arguments": {"path": ""}, "index": 4_611_686_018_427_387_904u64}]},
            {"text": "Listed."}
        ]),
    );
    let turn = s.chat("alice", m, &format!("{m} list")).await?;
    ensure!(turn.status == 200, "chat status {}", turn.status);
    ensure!(
        turn.outputs_of("files_list") == ["tool-output-available"],
        "files_list: {:?}",
        turn.outputs_of("files_list")
    );
    ensure!(!turn.parts.iter().any(|p| p["type"] == "error"), "the turn failed");
    // The orchestrator is still there for the next request.
    let again = s.chat("alice", m, &format!("{m} list again")).await?;
    ensure!(again.status == 200, "after: {}", again.status);
    Ok(())
}

/// More calls in one step than the bound: a model error; none of them runs.
pub async fn too_many_tool_calls_in_one_step(s: &Stack) -> Result<()> {
    let m = "prov-too-many";
    let calls: Vec<Value> = (0..40).map(|_| json!({"name": "files_list", "arguments": {"path": ""}})).collect();
    s.script(m, json!([{"tool_calls": calls}, {"text": "Listed."}]));
    let turn = s.chat("alice", m, &format!("{m} list")).await?;
    ensure!(turn.status == 200, "chat status {}", turn.status);
    ensure!(
        turn.parts.iter().any(|p| p["type"] == "error"),
        "no error part: {:?}",
        turn.parts.iter().map(|p| p["type"].clone()).collect::<Vec<_>>()
    );
    ensure!(turn.outputs_of("files_list").is_empty(), "calls ran");
    let rows = s.audit_of(m)?;
    ensure!(!rows.iter().any(|r| r.kind == "tool_call"), "calls were made: {rows:?}");
    Ok(())
}
