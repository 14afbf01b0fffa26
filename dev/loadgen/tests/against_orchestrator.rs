//! The loadgen binary against the real orchestrator and the real scripted model, with small
//! bounded counts: every turn must complete, the model replay must run, memory must be read.

#![expect(clippy::unwrap_used, reason = "helpers of a test file fail the test by panicking")]

use std::process::Command;

use serde_json::Value;
use test_harness::orchestrator::{self, Options, Orchestrator};
use test_harness::scripted_model::ScriptedModel;

fn loadgen(orch: &mut Orchestrator, model: &ScriptedModel, extra: &[&str]) -> Value {
    let bin = test_harness::workspace_bin("loadgen", "loadgen", &[]);
    let pid = orch.process().pid().to_string();
    let out = Command::new(bin)
        .args(["--url", &orch.url(), "--model-url", &model.url(), "--pid", &pid, "--json"])
        .args([
            "--proxy-secret",
            orchestrator::PROXY_SECRET,
            "--signing-secret",
            orchestrator::SIGNING_SECRET,
        ])
        .args(extra)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "loadgen failed\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    println!("{stdout}");
    serde_json::from_str(stdout.lines().last().unwrap()).unwrap()
}

#[test]
fn turn_mode_completes_every_turn_and_measures_the_model() {
    let model = ScriptedModel::start();
    let mut orch = Orchestrator::start(Options {
        model_url: model.url(),
        ..Options::default()
    });
    let r = loadgen(
        &mut orch,
        &model,
        &[
            "--concurrency",
            "4",
            "--turns",
            "40",
            "--turns-per-conversation",
            "3",
            "--baseline-turns",
            "20",
        ],
    );
    assert_eq!(r["errors"], 0, "{r}");
    assert_eq!(r["turns_ok"], 40);
    assert_eq!(r["model_replayed"], 20);
    assert!(r["orchestrator_turn"]["p99_us"].as_u64().unwrap() > 0);
    assert!(r["overhead_turn"]["p50_us"].is_i64());
    assert!(r["memory"]["hwm_kib"].as_u64().unwrap() > 0);
    // The orchestrator really sent the model these turns (plus the replays).
    assert!(model.requests().len() >= 40);
}

#[test]
fn open_streams_mode_holds_every_stream() {
    let model = ScriptedModel::start();
    let mut orch = Orchestrator::start(Options {
        model_url: model.url(),
        ..Options::default()
    });
    let r = loadgen(&mut orch, &model, &["--open-streams", "30", "--hold", "1", "--concurrency", "5"]);
    assert_eq!(r["errors"], 0, "{r}");
    assert_eq!(r["opened"], 30);
    assert!(r["rss_held_max_kib"].as_u64().unwrap() > 0);
}

#[test]
fn wrong_secrets_are_counted_as_errors_not_hidden() {
    let model = ScriptedModel::start();
    let mut orch = Orchestrator::start(Options {
        model_url: model.url(),
        ..Options::default()
    });
    let bin = test_harness::workspace_bin("loadgen", "loadgen", &[]);
    let out = Command::new(bin)
        .args(["--url", &orch.url(), "--json", "--turns", "5", "--concurrency", "1"])
        .args(["--proxy-secret", "wrong", "--signing-secret", orchestrator::SIGNING_SECRET])
        .args(["--pid", &orch.process().pid().to_string()])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let r: Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    assert_eq!(r["turns_ok"], 0);
    assert_eq!(r["error_kinds"]["http 401"], 5, "{r}");
}
