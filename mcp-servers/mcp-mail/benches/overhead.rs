//! Benchmark: what mcp-mail adds on top of the mail-bridge call each tool makes, against the
//! Nextcloud stand-in's bridge on loopback (same method as mcp-nextcloud's `tools` bench,
//! docs/performance.md). Prints figures; asserts nothing about time.
//!
//!     cargo bench -p mcp-mail --bench overhead
//!
//! "Direct" is the tool's bridge request sent by the crate's own client (same URL, headers
//! and body). "mcp-mail" is the tool called with rmcp's client over Streamable HTTP against
//! a release build. Each operation at 1 client (100 calls) and 50 concurrent clients (500
//! calls), after 5 warm-up calls per client; p50 and p99, and the overhead (p50 minus the
//! direct p50).

use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use mcp_mail::bridge::{Bridge, SearchQuery};
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Value, json};
use test_harness::standin::Standin;
use test_harness::{Process, free_port, workspace_root};

const WARMUP: usize = 5;
const RUNS: [(usize, usize); 2] = [(1, 100), (50, 500)];

/// (label, tool, arguments): each tool makes exactly one bridge request.
fn ops() -> Vec<(&'static str, &'static str, Value)> {
    vec![
        ("search \"budget\"", "mail_search", json!({"query": "budget"})),
        ("read an HTML mail (to text)", "mail_read", json!({"message_id": 2})),
        (
            "compose (checks addresses, reads accounts)",
            "mail_compose",
            json!({"to": ["bob@example.com"], "subject": "Budget", "body": "Hi Bob,\n\nthe numbers.\n"}),
        ),
    ]
}

fn main() -> anyhow::Result<()> {
    println!("== starting the stand-in (fixture mailboxes)");
    let nc = Arc::new(Standin::start());
    println!("== building mcp-mail (release)");
    let status = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .current_dir(workspace_root())
        .args(["build", "-q", "--release", "-p", "mcp-mail", "--bin", "mcp-mail"])
        .status()?;
    if !status.success() {
        bail!("release build failed");
    }
    let bin = std::env::var("CARGO_TARGET_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|_| workspace_root().join("target"))
        .join("release/mcp-mail");
    let port = free_port();
    let mut cmd = Command::new(bin);
    cmd.env_clear()
        .env("NC_URL", nc.url())
        .env("MCP_BIND", format!("127.0.0.1:{port}"))
        .env("RUST_LOG", "warn");
    let mut server = Process::spawn("mcp-mail-release", cmd);
    server.wait_http(&format!("http://127.0.0.1:{port}/healthz"), Duration::from_secs(30));
    let url = format!("http://127.0.0.1:{port}/mcp");

    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let bridge = Bridge::new(&url::Url::parse(nc.url())?, mcp_mail::config::DEFAULT_BRIDGE_TIMEOUT)?;
    rt.block_on(async {
        println!("\n| operation | clients | direct p50 / p99 (ms) | mcp-mail p50 / p99 (ms) | overhead (p50, ms) |\n|---|---|---|---|---|");
        for (label, tool, args) in ops() {
            for (clients, calls) in RUNS {
                let direct = measure(clients, calls, {
                    let (bridge, nc, tool, args) = (bridge.clone(), nc.clone(), tool, args.clone());
                    move || {
                        let (bridge, nc, args) = (bridge.clone(), nc.clone(), args.clone());
                        async move { direct(&bridge, &nc, tool, &args).await }
                    }
                })
                .await?;
                let through = measure_mcp(&url, nc.app_password("alice"), tool, &args, clients, calls).await?;
                println!(
                    "| {label} | {clients} | {:.2} / {:.2} | {:.2} / {:.2} | {:.2} |",
                    ms(direct.0),
                    ms(direct.1),
                    ms(through.0),
                    ms(through.1),
                    ms(through.0.saturating_sub(direct.0))
                );
            }
        }
        anyhow::Ok(())
    })?;
    let _ = server.terminate(Duration::from_secs(10));
    Ok(())
}

/// The one bridge request behind `tool`, as alice.
async fn direct(bridge: &Bridge, nc: &Standin, tool: &str, args: &Value) -> anyhow::Result<()> {
    let mut auth = http::HeaderMap::new();
    auth.insert(http::header::AUTHORIZATION, nc.bearer("alice").parse()?);
    match tool {
        "mail_search" => {
            let q = SearchQuery {
                query: args["query"].as_str().unwrap_or("").into(),
                ..SearchQuery::default()
            };
            bridge.search(&auth, &q).await?;
        }
        "mail_read" => {
            bridge.message(&auth, args["message_id"].as_i64().context("id")?).await?;
        }
        _ => {
            bridge.accounts(&auth).await?;
        }
    }
    Ok(())
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn percentiles(mut samples: Vec<Duration>) -> (Duration, Duration) {
    samples.sort();
    let at = |q: f64| samples[((samples.len() as f64 - 1.0) * q).round() as usize];
    (at(0.50), at(0.99))
}

/// `calls` runs of `one` spread over `clients` concurrent tasks, after a warm-up each.
async fn measure<F, Fut>(clients: usize, calls: usize, one: F) -> anyhow::Result<(Duration, Duration)>
where
    F: Fn() -> Fut + Clone + Send + 'static,
    Fut: Future<Output = anyhow::Result<()>> + Send,
{
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..clients {
        let one = one.clone();
        let per = calls / clients;
        tasks.spawn(async move {
            for _ in 0..WARMUP {
                one().await?;
            }
            let mut out = Vec::with_capacity(per);
            for _ in 0..per {
                let t = Instant::now();
                one().await?;
                out.push(t.elapsed());
            }
            anyhow::Ok(out)
        });
    }
    let mut all = Vec::new();
    while let Some(samples) = tasks.join_next().await {
        all.extend(samples??);
    }
    Ok(percentiles(all))
}

type Client = RunningService<RoleClient, ()>;

/// Like [`measure`], each task with its own MCP client connection.
async fn measure_mcp(
    url: &str,
    token: &str,
    tool: &'static str,
    args: &Value,
    clients: usize,
    calls: usize,
) -> anyhow::Result<(Duration, Duration)> {
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..clients {
        let config = StreamableHttpClientTransportConfig::with_uri(url.to_string()).auth_header(token.to_string());
        let client: Client = ().serve(StreamableHttpClientTransport::from_config(config)).await?;
        let args = args.as_object().cloned().unwrap_or_default();
        let per = calls / clients;
        tasks.spawn(async move {
            let call = || CallToolRequestParams::new(tool).with_arguments(args.clone());
            let mut out = Vec::with_capacity(per);
            for i in 0..(WARMUP + per) {
                let t = Instant::now();
                let r = client.call_tool(call()).await?;
                if r.is_error == Some(true) {
                    bail!("{tool} failed: {:?}", r.content);
                }
                if i >= WARMUP {
                    out.push(t.elapsed());
                }
            }
            let _ = client.cancel().await;
            anyhow::Ok(out)
        });
    }
    let mut all = Vec::new();
    while let Some(samples) = tasks.join_next().await {
        all.extend(samples??);
    }
    Ok(percentiles(all))
}
