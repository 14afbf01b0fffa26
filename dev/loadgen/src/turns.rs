//! Turn mode: `concurrency` workers each run signed turns back to back (a new conversation
//! every `turns_per_conversation`), until `turns` were issued or `duration` passed. Then the
//! model's own time is measured by replaying the requests the orchestrator sent it.
//!
//! Bounded by construction: a shared counter hands out at most `turns` turns, and no new
//! turn starts after the deadline.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde::Serialize;
use tokio::task::JoinSet;

use crate::chat::{self, Target};
use crate::config::Config;
use crate::error::Error;
use crate::rss::{self, Memory};
use crate::stats::{Overhead, Percentiles, Recorder};

#[derive(Debug, Serialize)]
pub struct TurnReport {
    pub concurrency: usize,
    pub turns_ok: u64,
    pub errors: u64,
    pub error_kinds: std::collections::BTreeMap<String, u64>,
    pub error_examples: std::collections::BTreeMap<String, String>,
    pub elapsed_s: f64,
    pub turns_per_s: f64,
    /// End-to-end through the orchestrator, as its client sees it.
    pub orchestrator_first_text: Option<Percentiles>,
    pub orchestrator_turn: Option<Percentiles>,
    /// The same requests sent straight to the model.
    pub model_first_text: Option<Percentiles>,
    pub model_turn: Option<Percentiles>,
    pub model_replayed: u64,
    /// Orchestrator minus model.
    pub overhead_first_text: Option<Overhead>,
    pub overhead_turn: Option<Overhead>,
    pub memory: Option<Memory>,
}

pub async fn run(cfg: &Config, target: Target, run_id: &str) -> Result<TurnReport, Error> {
    let issued = Arc::new(AtomicU64::new(0));
    let deadline = Instant::now() + cfg.duration;
    let start = Instant::now();
    let mut workers = JoinSet::new();
    for w in 0..cfg.concurrency {
        let mut rec = Recorder::new()?;
        let (target, issued) = (target.clone(), issued.clone());
        let (turns, per_conv) = (cfg.turns, cfg.turns_per_conversation);
        let uid = format!("{}-{w}", cfg.uid);
        let run_id = run_id.to_string();
        workers.spawn(async move {
            let mut mine = 0u64;
            while Instant::now() < deadline && issued.fetch_add(1, Ordering::Relaxed) < turns {
                let conversation = format!("lg{run_id}-{w}-{}", mine / per_conv);
                let message = format!("m{run_id}-{w}-{mine}");
                let text = format!("loadgen turn {mine} of worker {w}");
                rec.record(chat::turn(&target, &uid, &conversation, &message, &text, || {}).await);
                mine += 1;
            }
            rec
        });
    }
    let mut all = Recorder::new()?;
    while let Some(done) = workers.join_next().await {
        if let Ok(rec) = done {
            all.merge(rec);
        }
    }
    let elapsed = start.elapsed();
    let memory = cfg.pid.map(rss::read).transpose()?;

    let model = match &cfg.model_root {
        Some(root) if cfg.baseline_turns > 0 => Some(replay_against_model(cfg, &target.client, root).await?),
        _ => None,
    };
    Ok(report(cfg, &all, elapsed, model.as_ref(), memory))
}

fn report(cfg: &Config, orch: &Recorder, elapsed: Duration, model: Option<&Recorder>, memory: Option<Memory>) -> TurnReport {
    let of = Percentiles::of;
    let (o_first, o_turn) = (of(&orch.first_text), of(&orch.total));
    let (m_first, m_turn) = model.map_or((None, None), |m| (of(&m.first_text), of(&m.total)));
    let diff = |o: Option<Percentiles>, m: Option<Percentiles>| Some(Overhead::between(&o?, &m?));
    TurnReport {
        concurrency: cfg.concurrency,
        turns_ok: orch.ok,
        errors: orch.errors(),
        error_kinds: orch.failures.clone(),
        error_examples: orch.examples.clone(),
        elapsed_s: elapsed.as_secs_f64(),
        turns_per_s: orch.ok as f64 / elapsed.as_secs_f64().max(1e-9),
        orchestrator_first_text: o_first,
        orchestrator_turn: o_turn,
        model_first_text: m_first,
        model_turn: m_turn,
        model_replayed: model.map_or(0, |m| m.ok),
        overhead_first_text: diff(o_first, m_first),
        overhead_turn: diff(o_turn, m_turn),
        memory,
    }
}

/// Fetches the (last 1,000) requests the orchestrator sent the scripted model and replays
/// them straight to it at the same concurrency: the model's own time for the same requests.
async fn replay_against_model(cfg: &Config, client: &reqwest::Client, root: &str) -> Result<Recorder, Error> {
    let log: serde_json::Value = client
        .get(format!("{root}/__requests"))
        .send()
        .await?
        .error_for_status()?
        .json()
        .await?;
    let bodies: Vec<serde_json::Value> = log["requests"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|e| e.get("body"))
        .filter(|b| b["stream"] == serde_json::Value::Bool(true))
        .cloned()
        .collect();
    if bodies.is_empty() {
        return Err(Error::Model(
            "no streamed requests in /__requests to replay; is --model-url the model the orchestrator uses?".into(),
        ));
    }
    let bodies = Arc::new(bodies);
    let issued = Arc::new(AtomicU64::new(0));
    let mut workers = JoinSet::new();
    for _ in 0..cfg.concurrency {
        let mut rec = Recorder::new()?;
        let (bodies, issued, client, root) = (bodies.clone(), issued.clone(), client.clone(), root.to_string());
        let total = cfg.baseline_turns;
        workers.spawn(async move {
            loop {
                let n = issued.fetch_add(1, Ordering::Relaxed);
                if n >= total {
                    break;
                }
                let body = &bodies[(n as usize) % bodies.len()];
                rec.record(chat::model_request(&client, &root, body).await);
            }
            rec
        });
    }
    let mut all = Recorder::new()?;
    while let Some(done) = workers.join_next().await {
        if let Ok(rec) = done {
            all.merge(rec);
        }
    }
    Ok(all)
}

pub fn print(r: &TurnReport) {
    println!("== loadgen: turns");
    println!("concurrency            {}", r.concurrency);
    println!("turns ok               {}", r.turns_ok);
    println!("errors                 {} {:?}", r.errors, r.error_kinds);
    for (kind, example) in &r.error_examples {
        println!("  e.g. {kind}: {example}");
    }
    println!("elapsed                {:.2} s", r.elapsed_s);
    println!("throughput             {:.1} turns/s", r.turns_per_s);
    line("orchestrator 1st text", r.orchestrator_first_text);
    line("orchestrator turn", r.orchestrator_turn);
    line("model 1st text", r.model_first_text);
    line("model turn", r.model_turn);
    if let Some(o) = r.overhead_first_text {
        println!("overhead 1st text      p50 {} µs  p99 {} µs", o.p50_us, o.p99_us);
    }
    if let Some(o) = r.overhead_turn {
        println!("overhead turn          p50 {} µs  p99 {} µs", o.p50_us, o.p99_us);
    }
    if let Some(m) = r.memory {
        println!(
            "orchestrator memory    VmRSS {:.1} MiB  VmHWM (peak) {:.1} MiB",
            m.rss_kib as f64 / 1024.0,
            m.hwm_kib as f64 / 1024.0
        );
    }
}

fn line(name: &str, p: Option<Percentiles>) {
    if let Some(p) = p {
        println!(
            "{name:<22} p50 {} µs  p99 {} µs  mean {:.0} µs  max {} µs  (n={})",
            p.p50_us, p.p99_us, p.mean_us, p.max_us, p.count
        );
    }
}
