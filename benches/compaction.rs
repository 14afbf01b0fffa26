//! Compaction bookkeeping per turn at 1,000-message conversations: what fitting a request to
//! the budget adds to every model step (building the view with rung 1, estimating, deciding
//! on a summary). Prints p50/p99; no assertion on time (figures go to docs/performance.md).
//!
//! `cargo bench --bench compaction`
#![expect(clippy::unwrap_used, clippy::print_stdout, reason = "a benchmark binary")]

use serde_json::json;
use std::time::{Duration, Instant};
use tamebi::compaction::{self, Calibration, Limits, Summary};
use tamebi::ui_stream::UiMessage;

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
    let system = tamebi::context::system_prompt("2026-11-30", true);
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

fn main() {
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
