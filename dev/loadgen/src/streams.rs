//! Open-streams mode: hold `count` concurrent chat streams open at once and measure the
//! orchestrator's memory while they are.
//!
//! The scripted model is given a rule for this run whose reply trickles one character a
//! second, so every stream stays open for the whole hold. A stream counts as open when its
//! first text delta arrives. At most `open_rate` streams are being opened at any moment, so
//! the listen backlog is never the bottleneck. After the hold every stream is dropped.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::json;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::chat::{self, Failure, Target};
use crate::config::Config;
use crate::error::Error;
use crate::rss::{self, Memory};
use crate::stats::Recorder;

/// Longest we wait for every stream to open.
const RAMP_LIMIT: Duration = Duration::from_secs(180);

#[derive(Debug, Serialize)]
pub struct StreamsReport {
    pub requested: usize,
    pub opened: u64,
    pub errors: u64,
    pub error_kinds: std::collections::BTreeMap<String, u64>,
    pub error_examples: std::collections::BTreeMap<String, String>,
    pub ramp_s: f64,
    pub hold_s: f64,
    pub memory_before: Option<Memory>,
    /// Highest VmRSS sampled while all streams were open.
    pub rss_held_max_kib: Option<u64>,
    pub memory_after_hold: Option<Memory>,
    /// (held RSS − RSS before) / opened streams.
    pub kib_per_stream: Option<f64>,
}

pub async fn run(
    cfg: &Config,
    target: Target,
    run_id: &str,
    count: usize,
    hold: Duration,
    open_rate: usize,
) -> Result<StreamsReport, Error> {
    let root = cfg
        .model_root
        .as_deref()
        .ok_or_else(|| Error::Config("--open-streams needs --model-url".into()))?;
    let marker = format!("loadgen-hold-{run_id}");
    install_slow_rule(&target.client, root, &marker, hold).await?;
    let memory_before = cfg.pid.map(rss::read).transpose()?;

    let opened = Arc::new(AtomicU64::new(0));
    let finished = Arc::new(AtomicU64::new(0));
    let gate = Arc::new(Semaphore::new(open_rate));
    let stop = CancellationToken::new();
    let mut tasks = JoinSet::new();
    let ramp_start = Instant::now();
    for i in 0..count {
        let (target, opened, finished, gate, stop) = (target.nth(i), opened.clone(), finished.clone(), gate.clone(), stop.clone());
        let uid = format!("{}-{}", cfg.uid, i % cfg.concurrency.max(1));
        let (conversation, message, text) = (
            format!("hold{run_id}-{i}"),
            format!("m{run_id}-{i}"),
            format!("{marker} stream {i}"),
        );
        tasks.spawn(async move {
            let Ok(permit) = gate.acquire_owned().await else {
                return Err(Failure::Transport("gate closed".into()));
            };
            let on_open = move || {
                opened.fetch_add(1, Ordering::Relaxed);
                drop(permit);
            };
            let turn = chat::turn(&target, &uid, &conversation, &message, &text, on_open);
            let result = tokio::select! {
                r = turn => match r {
                    // The reply is longer than the hold: finishing early means it was cut.
                    Ok(_) => Err(Failure::ErrorPart("stream finished before the hold ended".into())),
                    Err(f) => Err(f),
                },
                () = stop.cancelled() => Ok(()),
            };
            finished.fetch_add(1, Ordering::Relaxed);
            result
        });
    }

    // Ramp: until every stream is open or has failed.
    while (opened.load(Ordering::Relaxed) as usize) < count
        && (finished.load(Ordering::Relaxed) as usize) < count
        && ramp_start.elapsed() < RAMP_LIMIT
    {
        if opened.load(Ordering::Relaxed) + finished.load(Ordering::Relaxed) >= count as u64 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let ramp = ramp_start.elapsed();

    // Hold, sampling memory.
    let hold_start = Instant::now();
    let mut rss_held_max = None;
    while hold_start.elapsed() < hold {
        if let Some(pid) = cfg.pid {
            let m = rss::read(pid)?;
            rss_held_max = Some(rss_held_max.unwrap_or(0).max(m.rss_kib));
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let memory_after_hold = cfg.pid.map(rss::read).transpose()?;
    let opened_n = opened.load(Ordering::Relaxed);
    stop.cancel();

    let mut rec = Recorder::new()?;
    while let Some(done) = tasks.join_next().await {
        match done {
            Ok(Ok(())) => {}
            Ok(Err(f)) => rec.fail(f),
            Err(e) => rec.fail(Failure::Transport(format!("task: {e}"))),
        }
    }
    let kib_per_stream = match (memory_before, rss_held_max) {
        (Some(b), Some(h)) if opened_n > 0 => Some(h.saturating_sub(b.rss_kib) as f64 / opened_n as f64),
        _ => None,
    };
    Ok(StreamsReport {
        requested: count,
        opened: opened_n,
        errors: rec.errors(),
        error_kinds: rec.failures,
        error_examples: rec.examples,
        ramp_s: ramp.as_secs_f64(),
        hold_s: hold.as_secs_f64(),
        memory_before,
        rss_held_max_kib: rss_held_max,
        memory_after_hold,
        kib_per_stream,
    })
}

/// Scripts the model so that a user text containing `marker` gets a reply of one character
/// a second, long enough to outlast the ramp and the hold.
async fn install_slow_rule(client: &reqwest::Client, root: &str, marker: &str, hold: Duration) -> Result<(), Error> {
    let chars = (RAMP_LIMIT + hold).as_secs() as usize + 30;
    let rules = json!({"rules": [{"match": marker, "steps": [{"text": "z".repeat(chars), "chunk_chars": 1, "delay_ms": 1000}]}]});
    let resp = client.post(format!("{root}/__scripts")).json(&rules).send().await?;
    if !resp.status().is_success() {
        return Err(Error::Model(format!("POST /__scripts answered {}", resp.status())));
    }
    Ok(())
}

pub fn print(r: &StreamsReport) {
    let mib = |k: u64| k as f64 / 1024.0;
    println!("== loadgen: open streams");
    println!("requested              {}", r.requested);
    println!("opened                 {}", r.opened);
    println!("errors                 {} {:?}", r.errors, r.error_kinds);
    for (kind, example) in &r.error_examples {
        println!("  e.g. {kind}: {example}");
    }
    println!("ramp                   {:.2} s", r.ramp_s);
    println!("hold                   {:.0} s", r.hold_s);
    if let Some(m) = r.memory_before {
        println!("orchestrator before    VmRSS {:.1} MiB", mib(m.rss_kib));
    }
    if let Some(h) = r.rss_held_max_kib {
        println!("orchestrator held      VmRSS max {:.1} MiB", mib(h));
    }
    if let Some(m) = r.memory_after_hold {
        println!("orchestrator peak      VmHWM {:.1} MiB", mib(m.hwm_kib));
    }
    if let Some(k) = r.kib_per_stream {
        println!("per open stream        {k:.1} KiB");
    }
}
