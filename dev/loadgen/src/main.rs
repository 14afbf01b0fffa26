//! `loadgen`: parses flags, raises the open-file limit, runs one mode, prints the figures.

use std::time::Duration;

use anyhow::Context;
use clap::Parser;
use loadgen::chat::Target;
use loadgen::config::{Args, Mode};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cfg = Args::parse().validate()?;
    let needed = match cfg.mode {
        Mode::Turns | Mode::Soak { .. } => cfg.concurrency * 2,
        Mode::OpenStreams { count, .. } => count * 2,
        Mode::Fairness { light, flood } => (light + flood) * 2,
    } as u64
        + 256;
    let limit = rlimit::increase_nofile_limit(u64::MAX).context("raising the open-file limit")?;
    if limit < needed {
        eprintln!("warning: open-file limit is {limit}, this run needs about {needed}; raise it with `ulimit -n {needed}`");
    }
    let run_id = uuid::Uuid::new_v4().simple().to_string()[..8].to_string();
    let timeout = match cfg.mode {
        Mode::Turns | Mode::Fairness { .. } | Mode::Soak { .. } => Some(Duration::from_secs(60)),
        Mode::OpenStreams { .. } => None,
    };
    let pool = match cfg.mode {
        Mode::Turns | Mode::Soak { .. } => cfg.concurrency,
        Mode::OpenStreams { count, .. } => count,
        Mode::Fairness { light, flood } => light + flood,
    };
    // One client per source address (a reqwest client binds all its connections to one);
    // streams are dealt out over them in turn.
    let spread = cfg
        .sources
        .iter()
        .map(|ip| loadgen::client(pool.div_ceil(cfg.sources.len()), timeout, Some(*ip)))
        .collect::<Result<Vec<_>, _>>()?;
    if !spread.is_empty() {
        eprintln!("connections spread over {} source addresses, 127.0.0.2 upwards", spread.len());
    }
    let target = Target {
        client: loadgen::client(pool, timeout, None)?,
        spread: spread.into(),
        url: cfg.url.clone(),
        proxy_secret: cfg.proxy_secret.clone(),
        signing_secret: cfg.signing_secret.clone(),
    };
    match cfg.mode {
        Mode::Turns => {
            let report = loadgen::turns::run(&cfg, target, &run_id).await?;
            loadgen::turns::print(&report);
            if cfg.json {
                println!("{}", serde_json::to_string(&report)?);
            }
        }
        Mode::Soak { report_every, warm_up } => {
            let report = loadgen::soak::run(&cfg, target, &run_id, report_every, warm_up).await?;
            loadgen::soak::print(&report);
            if cfg.json {
                println!("{}", serde_json::to_string(&report)?);
            }
        }
        Mode::Fairness { light, flood } => {
            let report = loadgen::fairness::run(&cfg, target, &run_id, light, flood).await?;
            loadgen::fairness::print(&report);
            if cfg.json {
                println!("{}", serde_json::to_string(&report)?);
            }
        }
        Mode::OpenStreams { count, hold, open_rate } => {
            let report = loadgen::streams::run(&cfg, target, &run_id, count, hold, open_rate).await?;
            loadgen::streams::print(&report);
            if cfg.json {
                println!("{}", serde_json::to_string(&report)?);
            }
        }
    }
    Ok(())
}
