//! Fairness mode (goal B6): do light users keep their latency while one user floods?
//!
//! Phase 1: `light` users run one turn at a time each, back to back, for `duration`.
//! Phase 2: the same, while one more user (`<uid>-flood`) runs `flood` turns at once. A flood
//! turn refused with 429 waits a second (the orchestrator's `Retry-After` for the running-turn
//! limit) and tries again, as a well-behaved client does. The light users' p50/p99 of both
//! phases and their ratio are the result; a light user's 429 is an error.

use std::time::{Duration, Instant};

use serde::Serialize;
use tokio::task::JoinSet;

use crate::chat::{self, Failure, Target};
use crate::config::Config;
use crate::error::Error;
use crate::stats::{Percentiles, Recorder};

#[derive(Debug, Serialize)]
pub struct Phase {
    pub light_turns_ok: u64,
    pub light_errors: u64,
    pub light_turn: Option<Percentiles>,
    pub flood_turns_ok: u64,
    pub flood_refused: u64,
    pub flood_other_errors: u64,
}

#[derive(Debug, Serialize)]
pub struct FairnessReport {
    pub light_users: usize,
    pub flood_concurrency: usize,
    pub duration_s: f64,
    pub without_flood: Phase,
    pub with_flood: Phase,
    /// Light users' p99 with the flood over their p99 without it.
    pub p99_ratio: Option<f64>,
}

pub async fn run(cfg: &Config, target: Target, run_id: &str, light: usize, flood: usize) -> Result<FairnessReport, Error> {
    let without_flood = phase(cfg, &target, &format!("{run_id}a"), light, 0).await?;
    let with_flood = phase(cfg, &target, &format!("{run_id}b"), light, flood).await?;
    let p99 = |p: &Phase| p.light_turn.map(|t| t.p99_us as f64);
    let p99_ratio = match (p99(&with_flood), p99(&without_flood)) {
        (Some(w), Some(wo)) if wo > 0.0 => Some(w / wo),
        _ => None,
    };
    Ok(FairnessReport {
        light_users: light,
        flood_concurrency: flood,
        duration_s: cfg.duration.as_secs_f64(),
        without_flood,
        with_flood,
        p99_ratio,
    })
}

async fn phase(cfg: &Config, target: &Target, run_id: &str, light: usize, flood: usize) -> Result<Phase, Error> {
    let deadline = Instant::now() + cfg.duration;
    let mut workers = JoinSet::new();
    for w in 0..light + flood {
        let mut rec = Recorder::new()?;
        let target = target.clone();
        let is_flood = w >= light;
        let uid = if is_flood {
            format!("{}-flood", cfg.uid)
        } else {
            format!("{}-light-{w}", cfg.uid)
        };
        let run_id = run_id.to_string();
        workers.spawn(async move {
            let mut refused = 0u64;
            let mut n = 0u64;
            while Instant::now() < deadline {
                let conversation = format!("fair{run_id}-{w}-{n}");
                let result = chat::turn(&target, &uid, &conversation, &format!("m{n}"), "fairness turn", || {}).await;
                n += 1;
                if is_flood && result == Err(Failure::Status(429)) {
                    refused += 1;
                    tokio::time::sleep(Duration::from_secs(1).min(deadline.saturating_duration_since(Instant::now()))).await;
                    continue;
                }
                rec.record(result);
            }
            (is_flood, rec, refused)
        });
    }
    let mut light_rec = Recorder::new()?;
    let mut flood_rec = Recorder::new()?;
    let mut flood_refused = 0;
    while let Some(done) = workers.join_next().await {
        if let Ok((is_flood, rec, refused)) = done {
            if is_flood {
                flood_rec.merge(rec);
                flood_refused += refused;
            } else {
                light_rec.merge(rec);
            }
        }
    }
    Ok(Phase {
        light_turns_ok: light_rec.ok,
        light_errors: light_rec.errors(),
        light_turn: Percentiles::of(&light_rec.total),
        flood_turns_ok: flood_rec.ok,
        flood_refused,
        flood_other_errors: flood_rec.errors(),
    })
}

pub fn print(r: &FairnessReport) {
    println!(
        "== loadgen: fairness ({} light users at 1 turn each, one user at {} turns)",
        r.light_users, r.flood_concurrency
    );
    for (name, p) in [("without the flood", &r.without_flood), ("with the flood", &r.with_flood)] {
        let (p50, p99) = p.light_turn.map_or((0, 0), |t| (t.p50_us, t.p99_us));
        println!(
            "{name:<18} light: {} turns ok, {} errors, turn p50 {p50} µs p99 {p99} µs | flood: {} ok, {} refused (429), {} other errors",
            p.light_turns_ok, p.light_errors, p.flood_turns_ok, p.flood_refused, p.flood_other_errors
        );
    }
    if let Some(ratio) = r.p99_ratio {
        println!("light users' p99 with / without the flood: {ratio:.2}×");
    }
}
