//! Compaction bookkeeping per turn at 1,000-message conversations: what fitting a request to
//! the budget adds to every model step (building the view with rung 1, estimating, deciding
//! on a summary). Prints p50/p99; no assertion on time (figures go to docs/performance.md).
//!
//! Then how often compaction summarises (issue #27): conversations run turn by turn through
//! the same pure functions the turn calls, with the scripted model's summariser, printing the
//! summary calls per conversation and per turn against the target.
//!
//! `cargo bench --bench compaction`
#![expect(clippy::unwrap_used, clippy::print_stdout, reason = "a benchmark binary")]

use serde_json::json;
use std::time::{Duration, Instant};
use tamebi::compaction::{self, Calibration, Limits, Summary};
use tamebi::model::ChatMessage;
use tamebi::ui_stream::{Role, UiMessage};

fn conversation(messages: usize, result_chars: usize) -> Vec<UiMessage> {
    let document = "Quarterly figures, line by line. ".repeat(result_chars / 33 + 1);
    (0..messages / 2)
        .flat_map(|i| {
            let user = json!({"id": format!("u{i}"), "role": "user", "parts": [{"type": "text", "text": format!("Turn {i}: read document {i} and tell me what changed.")}]});
            let assistant = json!({"id": format!("a{i}"), "role": "assistant", "parts": [
                {"type": "step-start"},
                {"type": "dynamic-tool", "toolName": "files_read", "toolCallId": format!("call_{i}"), "state": "output-available",
                 "input": {"path": format!("/reports/q{i}.txt")},
                 "output": {"server": "nextcloud", "tool": "files_read", "content": [{"type": "text", "text": &document[..result_chars]}]}},
                {"type": "step-start"},
                {"type": "text", "text": format!("Document {i} shows a small rise in revenue and flat costs.")}
            ]});
            [serde_json::from_value(user).unwrap(), serde_json::from_value(assistant).unwrap()]
        })
        .collect()
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

/// One model step's bookkeeping, as the turn does it.
fn step(system: &str, summary: Option<&Summary>, history: &[UiMessage], limits: &Limits) -> usize {
    let view = compaction::build_view(system, summary, history, 600, limits, Calibration::default());
    let plan = compaction::summary_plan(history, summary, &view, limits);
    view.messages.len() + plan.unwrap_or(0)
}

fn measure(name: &str, summary: Option<&Summary>, history: &[UiMessage], limits: &Limits) {
    let system = tamebi::context::system_prompt("2026-11-30", true, None);
    for _ in 0..20 {
        std::hint::black_box(step(&system, summary, history, limits));
    }
    let mut times: Vec<Duration> = (0..400)
        .map(|_| {
            let t = Instant::now();
            std::hint::black_box(step(&system, summary, history, limits));
            t.elapsed()
        })
        .collect();
    times.sort();
    println!(
        "{name:<58} p50 {:>8.3} ms   p99 {:>8.3} ms",
        percentile(&times, 0.50).as_secs_f64() * 1e3,
        percentile(&times, 0.99).as_secs_f64() * 1e3
    );
}

/// Issue #27's fixture: turn `i` is a short user note and an answer of `answer_chars`.
fn exchange(i: usize, answer_chars: usize) -> [UiMessage; 2] {
    let note = "the figures for the north region moved again this week. ".repeat(3);
    let answer = "Noted; the trend continues and nothing needs doing yet. ".repeat(answer_chars / 56 + 1);
    let user = json!({"id": format!("u{i}"), "role": "user", "parts": [{"type": "text", "text": format!("Turn {i}: {}", &note[..120])}]});
    let assistant = json!({"id": format!("a{i}"), "role": "assistant", "parts": [{"type": "step-start"}, {"type": "text", "text": &answer[..answer_chars]}]});
    [serde_json::from_value(user).unwrap(), serde_json::from_value(assistant).unwrap()]
}

/// The scripted model's summariser (dev/scripted-model `summarise_user_lines`).
fn scripted_summariser(request: &[ChatMessage]) -> String {
    let ChatMessage::User { content } = &request[1] else {
        return String::new();
    };
    content
        .lines()
        .map(|l| l.trim().trim_start_matches("- ").trim())
        .filter(|l| l.starts_with("user: "))
        .map(|l| format!("- {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Runs `turns` turns as the turn does (at most one summary call per turn, decided before
/// the turn's model request); returns the summary calls and the largest summary input in
/// characters.
fn summary_calls(turns: usize, answer_chars: usize, limits: &Limits) -> (usize, usize) {
    let system = tamebi::context::system_prompt("2026-12-01", false, None);
    let (mut history, mut summary, mut calls, mut largest_input) = (Vec::new(), None::<Summary>, 0, 0);
    for i in 0..turns {
        let [user, assistant] = exchange(i, answer_chars);
        history.push(user);
        history.push(UiMessage::new(assistant.id.clone(), Role::Assistant));
        let view = compaction::build_view(&system, summary.as_ref(), &history, 300, limits, Calibration::default());
        if let Some(end) = compaction::summary_plan(&history, summary.as_ref(), &view, limits) {
            let start = compaction::summarised_prefix(&history, summary.as_ref());
            let previous = summary.as_ref().filter(|_| start > 0).map(|s| s.text.as_str());
            let request = compaction::summary_request(previous, &history[start..end], start + 1, limits);
            largest_input = largest_input.max(request.iter().map(|m| serde_json::to_string(m).unwrap().len()).max().unwrap_or(0));
            summary = Some(Summary {
                covers_count: end,
                covers_until_id: history[end - 1].id.clone(),
                text: compaction::bounded_summary(&scripted_summariser(&request), limits),
            });
            calls += 1;
        }
        history.pop();
        history.push(assistant);
    }
    (calls, largest_input)
}

fn main() {
    if std::env::var("SWEEP").is_ok() {
        for answer in [2_500usize, 2_600, 2_700, 2_800] {
            let (calls, inp) = summary_calls(14, answer, &Limits::for_window(6_000));
            println!("answer {answer}: {calls} calls, largest input {inp}");
        }
        return;
    }
    bookkeeping();
    // The target for issue #27's fixture (tests/compaction.rs asserts it end to end).
    const TURNS_PER_SUMMARY: usize = 4;
    println!();
    println!(
        "summary calls per conversation (short notes, answers of 1,700 characters; target: at most one per {TURNS_PER_SUMMARY} turns)"
    );
    for (window, turns) in [(6_000u64, 14usize), (6_000, 100), (32_768, 100), (32_768, 300)] {
        let limits = Limits::for_window(window);
        let (calls, largest_input) = summary_calls(turns, 1_700, &limits);
        let per = if calls == 0 { f64::INFINITY } else { turns as f64 / calls as f64 };
        println!(
            "{window:>6}-token window, {turns:>3} turns: {calls:>3} summary calls, one per {per:>5.1} turns, largest summary input {largest_input:>6} chars{}",
            if calls <= turns.div_ceil(TURNS_PER_SUMMARY) {
                ""
            } else {
                "  (over the target)"
            }
        );
    }
}

fn bookkeeping() {
    let limits = Limits::for_window(32_768);
    for result_chars in [2_000, 20_000] {
        let history = conversation(1_000, result_chars);
        measure(
            &format!("1,000 messages, {result_chars} B results, no summary (floor)"),
            None,
            &history,
            &limits,
        );
        // The steady state: a summary covers all but the last exchanges.
        let summary = Summary {
            covers_count: 990,
            covers_until_id: history[989].id.clone(),
            text: "- user: earlier facts\n".repeat(400),
        };
        measure(
            &format!("1,000 messages, {result_chars} B results, summary of 990"),
            Some(&summary),
            &history,
            &limits,
        );
    }
}
