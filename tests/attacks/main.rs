//! The attack suite: end-to-end proof of guardrails G1 (identity and credentials), G2 (data
//! is never instruction) and G3 (approval before effects) against the real orchestrator, a seeded Nextcloud stand-in,
//! mcp-nextcloud, probe-mcp and a scripted model that obeys every injected instruction.
//!
//! `talk` proves that the Talk bot holds no authority (issue #29): no tool, no credential, no memory.
//!
//! `third_party` proves G3 for servers we do not vouch for (issue #27): no call reaches one
//! without the person's approval, native or written as text, and the relay never runs one.
//!
//! Each case asserts that the effect did not happen (on the stand-in's state or on
//! probe-mcp's call log) AND that audit.db records why. The stack starts once; cases run in
//! order against it, each in its own conversation, and the suite prints one line per case
//! and a total. See docs/security.md for what each group proves.

#![expect(clippy::expect_used, reason = "starting the stack fails the test by panicking")]

mod approval;
mod credentials;
mod envelope;
mod envelope_property;
mod g1;
mod injection;
mod mail;
mod oracle;
mod policy;
mod provider;
mod registry;
mod stack;
mod talk;
mod third_party;

use std::future::Future;
use std::pin::Pin;

use stack::Stack;

type Case = for<'a> fn(&'a Stack) -> Pin<Box<dyn Future<Output = anyhow::Result<()>> + 'a>>;

macro_rules! cases {
    ($($group:ident :: $name:ident),* $(,)?) => {
        vec![$((concat!(stringify!($group), "::", stringify!($name)), (|s| Box::pin($group::$name(s))) as Case)),*]
    };
}

fn all_cases() -> Vec<(&'static str, Case)> {
    cases![
        injection::plain_text_moves_a_shared_file,
        injection::markdown_overwrites_notes,
        injection::html_white_on_white_creates_an_event,
        injection::html_display_none_creates_a_card,
        injection::pdf_moves_a_private_file_into_the_share,
        injection::calendar_description_overwrites_a_file,
        injection::contact_note_creates_an_event,
        injection::deck_card_description_creates_a_card,
        injection::memo_moves_a_deck_card,
        injection::public_link_has_no_tool,
        injection::mail_send_is_not_the_models,
        injection::document_claims_prior_approval,
        injection::summary_claims_prior_approval,
        envelope::plain_closing_tag,
        envelope::uppercase_closing_tag,
        envelope::whitespace_in_the_tag,
        envelope::attributes_in_the_tag,
        envelope::separator_variants,
        envelope::named_entities,
        envelope::numeric_entities,
        envelope::references_without_semicolon,
        envelope::zero_padded_references,
        envelope::bracket_lookalike_references,
        envelope::greek_capital_nu_and_other_confusables,
        envelope::invisible_tag_characters,
        envelope::full_width_and_math_letters,
        envelope::zero_width_characters,
        envelope::lookalike_letters,
        envelope::nested_envelope,
        envelope::unclosed_tag_at_the_end,
        envelope::very_long_payload,
        envelope::nextcloud_error_payload,
        envelope::probe_error_payload,
        envelope::entity_next_to_multibyte_text,
        envelope::conversation_survives_entity_payload,
        envelope::probe_result_claims_approval,
        envelope::leaked_and_guessed_ids,
        approval::replayed_approval,
        approval::approval_from_another_conversation,
        approval::approval_from_another_user,
        approval::tampered_input_runs_as_recorded,
        approval::approval_never_requested,
        approval::double_approval_in_one_request,
        approval::approval_after_a_new_user_message,
        approval::approval_after_a_denial,
        approval::approval_smuggled_in_a_user_message,
        approval::a_partial_decision_is_refused_with_its_own_code,
        provider::duplicate_tool_call_ids,
        provider::huge_tool_call_index,
        provider::too_many_tool_calls_in_one_step,
        policy::no_annotations_ask,
        policy::idempotent_only_asks,
        policy::read_only_false_only_asks,
        policy::contradictory_annotations_ask,
        policy::destructive_asks,
        policy::idempotent_non_destructive_runs,
        policy::app_only_tool_never_reaches_the_model,
        policy::relay_refuses_effectful_tools,
        policy::relay_refuses_unannotated_tools,
        policy::relay_refuses_model_only_tools,
        policy::relay_refuses_a_nextcloud_move,
        policy::dispatch_refuses_model_visible_tools,
        credentials::third_party_server_never_sees_a_credential,
        credentials::token_for_one_audience_never_reaches_another,
        credentials::third_party_tool_text_is_data,
        credentials::foreign_jwt_subject_is_refused,
        credentials::approval_with_a_swapped_credential_is_refused,
        g1::unauthenticated_body_is_never_read,
        g1::unauthenticated_floods_do_not_grow_memory,
        g1::oversized_declared_body_is_refused_at_once,
        g1::stalled_body_is_cut_off,
        g1::replayed_requests_are_refused,
        g1::every_error_has_the_fixed_shape,
        g1::refused_effect_attempts_are_audited,
        g1::proxy_secret_alone_is_not_identity,
        g1::a_signed_read_cannot_become_a_delete,
        g1::a_body_signed_for_describe_is_refused_at_dispatch,
        g1::the_resource_query_is_signed,
        registry::a_user_signature_cannot_reach_the_admin_routes,
        registry::personal_instructions_come_after_the_fixed_rules_as_the_users_own,
        g1::an_outdated_app_is_told_so,
        mail::injected_mail_cannot_send,
        mail::relay_refuses_mail_send,
        mail::bob_never_reads_alices_mailbox,
        mail::mail_takes_only_its_own_audience,
        mail::describe_names_the_door,
        third_party::secret_to_a_third_party_waits_for_approval,
        third_party::approved_third_party_call_sends_what_the_card_showed,
        third_party::every_third_party_tool_asks,
        third_party::text_call_to_a_third_party_waits_for_approval,
        third_party::relay_refuses_a_third_party,
        third_party::trust_reads_covers_only_reads,
        talk::room_message_ordering_file_access_gets_no_tool,
        talk::webhook_naming_another_user_with_a_bad_signature_does_nothing,
        talk::a_reply_never_carries_memory_facts,
        // Last: it changes a tool definition for the rest of the run.
        policy::read_only_lie_is_fingerprinted,
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn attack_suite() {
    run(all_cases()).await;
}

/// Runs `cases` in order against one stack (`ATTACKS_FILTER=substring` narrows them).
async fn run(cases: Vec<(&'static str, Case)>) {
    let filter = std::env::var("ATTACKS_FILTER").unwrap_or_default();
    let cases: Vec<_> = cases.into_iter().filter(|(name, _)| name.contains(filter.as_str())).collect();
    let stack = Stack::start().await;
    let mut failed = Vec::new();
    for (name, case) in &cases {
        let started = std::time::Instant::now();
        match case(&stack).await {
            Ok(()) => println!("blocked  {name} ({} ms)", started.elapsed().as_millis()),
            Err(e) => {
                println!("FAILED   {name}: {e:#}");
                failed.push(*name);
            }
        }
    }
    println!("attack suite: {} cases, {} blocked", cases.len(), cases.len() - failed.len());
    assert!(failed.is_empty(), "not blocked: {failed:?}");
}
