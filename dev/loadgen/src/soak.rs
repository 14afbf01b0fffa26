//! Soak mode (issue 32): `concurrency` users run mixed turns for `duration`, and every
//! `report_every` one line gives the orchestrator's resident memory, its open descriptors, the
//! sizes of the storage directories named with `--size-dir` and the p99 of that window.
//!
//! Each user cycles through five kinds of turn, in conversations of `turns_per_conversation`:
//! a plain text turn; a turn whose model calls a read-only tool (`soak_lookup`); a turn whose
//! model calls a destructive tool (`soak_write`), which stops for approval and then goes on
//! with the user's approval; a resume of the conversation's stream
//! (`GET /v1/chat/{id}/stream`); and a turn with a long answer, so that with a small
//! `TAMEBI_CONTEXT_TOKENS` the conversation compacts. The tools are probe-mcp's (`bench.sh
//! soak` installs them); the replies are scripted here on the scripted model.
//!
//! It measures and never retries. At the end it states the slope of memory and descriptors
//! per minute over the windows after the warm-up (`--warm-up-secs`, by default the first
//! window): what the orchestrator keeps resident is bounded by time (a conversation's actor
//! until it has been idle for `TAMEBI_IDLE_SECS`), so memory fills for that long before it
//! can level off, and a slope read from the start would count the filling as growth.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use eventsource_stream::Eventsource;
use futures::StreamExt;
use serde::Serialize;
use serde_json::{Value, json};
use tokio::task::JoinSet;

use crate::chat::{self, Failure, Target, Timing};
use crate::config::Config;
use crate::error::Error;
use crate::rss;
use crate::sign;
use crate::stats::{Percentiles, Recorder};

/// The kinds of turn, in the order each user cycles through them.
const KINDS: [Kind; 5] = [Kind::Text, Kind::Tool, Kind::Approval, Kind::Resume, Kind::Long];

#[derive(Clone, Copy, Debug)]
enum Kind {
    Text,
    Tool,
    Approval,
    Resume,
    Long,
}

impl Kind {
    /// The user's text: each kind's marker is what the scripted rules match.
    fn text(self, n: u64) -> String {
        match self {
            Kind::Text | Kind::Resume => format!("soak text {n}"),
            Kind::Tool => format!("soak tool {n}"),
            Kind::Approval => format!("soak approve {n}"),
            Kind::Long => format!("soak long {n}"),
        }
    }
}

/// One figure line.
#[derive(Debug, Clone, Serialize)]
pub struct Sample {
    pub at_s: u64,
    pub turns_ok: u64,
    pub errors: u64,
    pub p99_turn_us: Option<u64>,
    pub rss_kib: Option<u64>,
    pub open_fds: Option<u64>,
    /// (name, bytes) per `--size-dir`.
    pub sizes: Vec<(String, u64)>,
}

#[derive(Debug, Serialize)]
pub struct SoakReport {
    pub users: usize,
    pub elapsed_s: f64,
    pub turns_ok: u64,
    pub errors: u64,
    pub error_kinds: std::collections::BTreeMap<String, u64>,
    pub error_examples: std::collections::BTreeMap<String, String>,
    pub turn: Option<Percentiles>,
    /// `data-compaction` parts seen (the conversations did compact).
    pub compactions: u64,
    /// Approvals given and answered (the approval kind ran end to end).
    pub approvals: u64,
    pub samples: Vec<Sample>,
    /// Least-squares slope over the samples after the first, per minute.
    /// Seconds at the start left out of the slopes.
    pub warm_up_s: u64,
    pub rss_kib_per_min: Option<f64>,
    pub fds_per_min: Option<f64>,
}

pub async fn run(cfg: &Config, target: Target, run_id: &str, report_every: Duration, warm_up: Duration) -> Result<SoakReport, Error> {
    let root = cfg
        .model_root
        .clone()
        .ok_or_else(|| Error::Config("--soak needs --model-url".into()))?;
    install_rules(&target.client, &root).await?;
    let window = Arc::new(Mutex::new(Recorder::new()?));
    let seen = Arc::new(Seen::default());
    let start = Instant::now();
    let deadline = start + cfg.duration;
    let mut users = JoinSet::new();
    for u in 0..cfg.concurrency {
        let (target, window, seen) = (target.clone(), window.clone(), seen.clone());
        let uid = format!("{}-soak-{u}", cfg.uid);
        let per_conv = cfg.turns_per_conversation;
        let run_id = run_id.to_string();
        users.spawn(async move {
            let mut n = 0u64;
            while Instant::now() < deadline {
                let conversation = format!("soak{run_id}-{u}-{}", n / per_conv);
                let kind = KINDS[(n % KINDS.len() as u64) as usize];
                let result = one(&target, &uid, &conversation, &format!("m{run_id}-{u}-{n}"), kind, n, &seen).await;
                lock(&window).record(result);
                n += 1;
            }
        });
    }
    let mut total = Recorder::new()?;
    let mut samples = Vec::new();
    let mut ticker = tokio::time::interval_at(tokio::time::Instant::now() + report_every, report_every);
    loop {
        tokio::select! {
            _ = ticker.tick() => {
                let done = std::mem::replace(&mut *lock(&window), Recorder::new()?);
                let sample = sample(cfg, start, &done, &total);
                print_sample(&sample);
                total.merge(done);
                samples.push(sample);
            }
            joined = users.join_next() => if joined.is_none() { break },
        }
    }
    let done = std::mem::replace(&mut *lock(&window), Recorder::new()?);
    total.merge(done);
    Ok(SoakReport {
        users: cfg.concurrency,
        elapsed_s: start.elapsed().as_secs_f64(),
        turns_ok: total.ok,
        errors: total.errors(),
        error_kinds: total.failures.clone(),
        error_examples: total.examples.clone(),
        turn: Percentiles::of(&total.total),
        compactions: seen.compactions.load(Ordering::Relaxed),
        approvals: seen.approvals.load(Ordering::Relaxed),
        warm_up_s: warm_up.as_secs(),
        rss_kib_per_min: slope(&samples, warm_up, |s| s.rss_kib),
        fds_per_min: slope(&samples, warm_up, |s| s.open_fds),
        samples,
    })
}

/// What the turns showed, counted across users.
#[derive(Default)]
struct Seen {
    compactions: AtomicU64,
    approvals: AtomicU64,
}

/// A poisoned lock only means a user task panicked; the counts in it are still whole.
fn lock(window: &Mutex<Recorder>) -> std::sync::MutexGuard<'_, Recorder> {
    window.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The replies of the kinds' markers (added in front of the model's other rules).
async fn install_rules(client: &reqwest::Client, root: &str) -> Result<(), Error> {
    // About 1,700 characters: with a 2,048-token window a conversation compacts every few turns.
    let long = "The soak keeps this answer long so that the context fills and compacts. ".repeat(24);
    // The summary call comes first: its text quotes the conversation, markers included.
    let rules = json!({"rules": [
        {"match": "Summarise the earlier part of this conversation", "steps": [{"summarise_user_lines": true}]},
        {"match": "soak tool", "steps": [
            {"tool_calls": [{"name": "soak_lookup", "arguments": {"q": "soak"}}]},
            {"text": "Looked it up."}
        ]},
        {"match": "soak approve", "steps": [
            {"tool_calls": [{"name": "soak_write", "arguments": {"note": "soak"}}]},
            {"text": "Written."}
        ]},
        {"match": "soak long", "steps": [{"text": long}]},
        {"match": "soak text", "steps": [{"text": "A short soak answer."}]}
    ]});
    let resp = client.post(format!("{root}/__scripts")).json(&rules).send().await?;
    if !resp.status().is_success() {
        return Err(Error::Model(format!("POST /__scripts answered {}", resp.status())));
    }
    Ok(())
}

/// One turn of `kind`, timed from its first request to its last `[DONE]`.
async fn one(target: &Target, uid: &str, conversation: &str, message_id: &str, kind: Kind, n: u64, seen: &Seen) -> Result<Timing, Failure> {
    let started = Instant::now();
    let body = chat::chat_body(conversation, message_id, &kind.text(n));
    let parts = send(target, "POST", "/v1/chat", uid, &body).await?;
    let compacted = parts.iter().filter(|p| p["type"] == "data-compaction").count() as u64;
    seen.compactions.fetch_add(compacted, Ordering::Relaxed);
    match kind {
        Kind::Approval => {
            let decision = approval(conversation, &parts)?;
            send(target, "POST", "/v1/chat", uid, &decision).await?;
            seen.approvals.fetch_add(1, Ordering::Relaxed);
        }
        Kind::Resume => {
            // The turn is over: the resume answers with its end (or nothing), never hangs.
            send(target, "GET", &format!("/v1/chat/{conversation}/stream"), uid, b"").await?;
        }
        Kind::Text | Kind::Tool | Kind::Long => {}
    }
    Ok(Timing {
        first_text: None,
        total: started.elapsed(),
    })
}

/// One signed request, read to `[DONE]` (or an empty 204); its parts.
async fn send(target: &Target, method: &str, path: &str, uid: &str, body: &[u8]) -> Result<Vec<Value>, Failure> {
    let url = url::Url::parse(&format!("{}{path}", target.url)).map_err(|e| Failure::Transport(e.to_string()))?;
    let nonce = uuid::Uuid::new_v4().simple().to_string();
    let request = sign::Request {
        method,
        url: &url,
        uid,
        ts: chat::unix_now(),
        nonce: &nonce,
        body,
        credentials: "",
    };
    let g1 = sign::sign(&target.proxy_secret, &target.signing_secret, &request);
    let method = reqwest::Method::from_bytes(method.as_bytes()).map_err(|e| Failure::Transport(e.to_string()))?;
    let mut rb = target
        .client
        .request(method, url)
        .header("authorization", g1.authorization)
        .header("x-tamebi-uid", g1.uid)
        .header("x-tamebi-ts", g1.ts)
        .header("x-tamebi-nonce", g1.nonce)
        .header("x-tamebi-signature", g1.signature);
    if !body.is_empty() {
        rb = rb.header("content-type", "application/json").body(body.to_vec());
    }
    let resp = rb.send().await.map_err(|e| Failure::Transport(e.to_string()))?;
    match resp.status().as_u16() {
        200 => {}
        204 => return Ok(Vec::new()),
        s => return Err(Failure::Status(s)),
    }
    let mut events = resp.bytes_stream().eventsource();
    let mut parts = Vec::new();
    while let Some(event) = events.next().await {
        let event = event.map_err(|e| Failure::Transport(e.to_string()))?;
        if event.data == "[DONE]" {
            return Ok(parts);
        }
        let part: Value = serde_json::from_str(&event.data).map_err(|e| Failure::Transport(format!("bad frame: {e}")))?;
        if part["type"] == "error" {
            return Err(Failure::ErrorPart(part["errorText"].as_str().unwrap_or("").to_string()));
        }
        parts.push(part);
    }
    Err(Failure::NoDone)
}

/// The user's approval of the first approval request in `parts`, as the AI SDK client sends it.
fn approval(conversation: &str, parts: &[Value]) -> Result<Vec<u8>, Failure> {
    let missing = |what: &str| Failure::Transport(format!("the approval turn had no {what}"));
    let request = parts
        .iter()
        .find(|p| p["type"] == "tool-approval-request")
        .ok_or_else(|| missing("tool-approval-request"))?;
    let call_id = &request["toolCallId"];
    let input = parts
        .iter()
        .find(|p| p["type"] == "tool-input-available" && p["toolCallId"] == *call_id)
        .ok_or_else(|| missing("tool input"))?;
    let message_id = &parts.iter().find(|p| p["type"] == "start").ok_or_else(|| missing("start part"))?["messageId"];
    let part = json!({"type": "dynamic-tool", "toolName": input["toolName"], "toolCallId": call_id,
                      "state": "approval-responded", "input": input["input"],
                      "approval": {"id": request["approvalId"], "approved": true}});
    Ok(
        json!({"id": conversation, "messages": [{"id": message_id, "role": "assistant", "parts": [part]}]})
            .to_string()
            .into_bytes(),
    )
}

fn sample(cfg: &Config, start: Instant, window: &Recorder, total: &Recorder) -> Sample {
    Sample {
        at_s: start.elapsed().as_secs(),
        turns_ok: total.ok + window.ok,
        errors: total.errors() + window.errors(),
        p99_turn_us: Percentiles::of(&window.total).map(|p| p.p99_us),
        rss_kib: cfg.pid.and_then(|pid| rss::read(pid).ok()).map(|m| m.rss_kib),
        open_fds: cfg.pid.and_then(open_fds),
        sizes: cfg.size_dirs.iter().map(|(name, dir)| (name.clone(), dir_size(dir))).collect(),
    }
}

/// Entries of `/proc/<pid>/fd`: the process's open descriptors.
fn open_fds(pid: u32) -> Option<u64> {
    Some(std::fs::read_dir(format!("/proc/{pid}/fd")).ok()?.count() as u64)
}

/// Total size of the files under `dir` (0 for what cannot be read).
fn dir_size(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else { return 0 };
    entries
        .filter_map(Result::ok)
        .map(|e| match e.file_type() {
            Ok(t) if t.is_dir() => dir_size(&e.path()),
            Ok(t) if t.is_file() => e.metadata().map_or(0, |m| m.len()),
            _ => 0,
        })
        .sum()
}

/// Least-squares slope of `value` per minute over the samples taken after `warm_up`.
fn slope(samples: &[Sample], warm_up: Duration, value: impl Fn(&Sample) -> Option<u64>) -> Option<f64> {
    let points: Vec<(f64, f64)> = samples
        .iter()
        .filter(|s| s.at_s > warm_up.as_secs())
        .filter_map(|s| Some((s.at_s as f64 / 60.0, value(s)? as f64)))
        .collect();
    if points.len() < 2 {
        return None;
    }
    let n = points.len() as f64;
    let (mx, my) = (
        points.iter().map(|p| p.0).sum::<f64>() / n,
        points.iter().map(|p| p.1).sum::<f64>() / n,
    );
    let sxx: f64 = points.iter().map(|p| (p.0 - mx).powi(2)).sum();
    let sxy: f64 = points.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    (sxx > 0.0).then(|| sxy / sxx)
}

fn print_sample(s: &Sample) {
    let mib = |k: u64| k as f64 / 1024.0;
    let sizes: Vec<String> = s
        .sizes
        .iter()
        .map(|(name, bytes)| format!("{name} {:.1} MiB", *bytes as f64 / 1_048_576.0))
        .collect();
    println!(
        "[soak {:>5} s] turns ok {:>7}  errors {:>4}  p99 turn {:>8}  RSS {:>7}  fds {:>5}  {}",
        s.at_s,
        s.turns_ok,
        s.errors,
        s.p99_turn_us.map_or("-".into(), |us| format!("{:.1} ms", us as f64 / 1000.0)),
        s.rss_kib.map_or("-".into(), |k| format!("{:.1} MiB", mib(k))),
        s.open_fds.map_or("-".into(), |n| n.to_string()),
        sizes.join("  ")
    );
}

pub fn print(r: &SoakReport) {
    println!("== loadgen: soak");
    println!("users                  {}", r.users);
    println!("elapsed                {:.0} s", r.elapsed_s);
    println!("turns ok               {}", r.turns_ok);
    println!("errors                 {} {:?}", r.errors, r.error_kinds);
    for (kind, example) in &r.error_examples {
        println!("  e.g. {kind}: {example}");
    }
    if let Some(p) = r.turn {
        println!(
            "turn (all kinds)       p50 {} µs  p99 {} µs  max {} µs  (n={})",
            p.p50_us, p.p99_us, p.max_us, p.count
        );
    }
    println!("compactions            {}", r.compactions);
    println!("approvals answered     {}", r.approvals);
    let per_min = |v: Option<f64>, unit: &str| v.map_or("- (fewer than 3 samples)".into(), |v| format!("{v:+.1} {unit}/min"));
    println!(
        "RSS slope after warm-up {}  (samples after {} s)",
        per_min(r.rss_kib_per_min, "KiB"),
        r.warm_up_s
    );
    println!("fds slope after warm-up {}", per_min(r.fds_per_min, "fds"));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(min: u64, rss: u64) -> Sample {
        Sample {
            at_s: min * 60,
            turns_ok: 0,
            errors: 0,
            p99_turn_us: None,
            rss_kib: Some(rss),
            open_fds: Some(10),
            sizes: Vec::new(),
        }
    }

    #[test]
    fn the_slope_skips_the_warm_up() {
        // A big first minute (warm-up), then +5 KiB a minute.
        let samples = [at(1, 90_000), at(2, 1_000), at(3, 1_005), at(4, 1_010)];
        let minute = Duration::from_secs(60);
        let s = slope(&samples, minute, |s| s.rss_kib).unwrap();
        assert!((s - 5.0).abs() < 1e-9, "{s}");
        assert_eq!(slope(&samples, minute, |s| s.open_fds), Some(0.0));
        assert_eq!(slope(&samples[..2], minute, |s| s.rss_kib), None);
        // A longer warm-up leaves out more: two minutes leave two samples, still a slope.
        let s = slope(&samples, 2 * minute, |s| s.rss_kib).unwrap();
        assert!((s - 5.0).abs() < 1e-9, "{s}");
        assert_eq!(slope(&samples, 3 * minute, |s| s.rss_kib), None);
    }

    #[test]
    fn the_approval_echoes_the_request() {
        let parts = vec![
            json!({"type": "start", "messageId": "a1"}),
            json!({"type": "tool-input-available", "toolCallId": "c1", "toolName": "soak_write", "input": {"note": "x"}}),
            json!({"type": "tool-approval-request", "toolCallId": "c1", "approvalId": "ap_1"}),
        ];
        let body: Value = serde_json::from_slice(&approval("conv", &parts).unwrap()).unwrap();
        let part = &body["messages"][0]["parts"][0];
        assert_eq!(body["messages"][0]["id"], "a1");
        assert_eq!(part["approval"], json!({"id": "ap_1", "approved": true}));
        assert_eq!(part["toolName"], "soak_write");
        assert!(approval("conv", &parts[..2]).is_err());
    }
}
