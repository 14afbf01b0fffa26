//! Benchmark: tool latency through mcp-nextcloud and through `nextcloud-mcp-server` (PyPI),
//! against the same seeded Nextcloud stand-in on loopback, next to the direct HTTP request
//! each tool makes (the same request bodies, from the library). Prints figures; asserts
//! nothing about time.
//!
//!     bash scripts/install.d/25-mcp-python.sh --bench   # the other server, in its own venv
//!     cargo bench -p mcp-nextcloud --bench tools
//!     cargo bench -p mcp-nextcloud --bench tools -- --ours-only
//!
//! Operations: list a folder of 200 files, read a 100 KB text file, one month of calendar
//! events, list Deck boards. Each at 1 client (100 calls) and 50 concurrent clients (500
//! calls), after a warm-up; p50 and p99 per target, and the overhead of each MCP server over
//! the direct request (p50 minus the direct p50). Every MCP call goes through rmcp's client
//! over Streamable HTTP, for both servers. mcp-nextcloud runs as a release build.

use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use mcp_nextcloud::nextcloud::{dav, dav_headers};
use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, JsonObject};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Value, json};
use test_harness::standin::Standin;
use test_harness::{Process, free_port, workspace_root};

type Client = RunningService<RoleClient, ()>;

const SINGLE_CALLS: usize = 100;
const CONCURRENT_CLIENTS: usize = 50;
const CONCURRENT_CALLS: usize = 500;
const WARMUP: usize = 5;

#[derive(Clone, Copy, PartialEq)]
enum Op {
    List200,
    Read100k,
    Month,
    Boards,
}

const OPS: [Op; 4] = [Op::List200, Op::Read100k, Op::Month, Op::Boards];

impl Op {
    fn label(self) -> &'static str {
        match self {
            Op::List200 => "list a folder of 200 files",
            Op::Read100k => "read a 100 KB text file",
            Op::Month => "one month of calendar events",
            Op::Boards => "list Deck boards",
        }
    }
}

/// How one MCP server names each operation.
struct Flavor {
    calls: Vec<(Op, &'static str, Value)>,
}

fn ours() -> Flavor {
    Flavor {
        calls: vec![
            (Op::List200, "files_list", json!({"path": "bench200"})),
            (Op::Read100k, "files_read", json!({"path": "bench100k.txt", "limit": 100000})),
            (
                Op::Month,
                "calendar_events",
                json!({"from": "2026-03-01", "to": "2026-03-31", "calendar": "personal"}),
            ),
            (Op::Boards, "deck_boards", json!({})),
        ],
    }
}

fn theirs() -> Flavor {
    Flavor {
        calls: vec![
            (Op::List200, "nc_webdav_list_directory", json!({"path": "bench200"})),
            (Op::Read100k, "nc_webdav_read_file", json!({"path": "bench100k.txt"})),
            (
                Op::Month,
                "nc_calendar_list_events",
                json!({"calendar_name": "personal", "start_date": "2026-03-01", "end_date": "2026-03-31", "limit": 100}),
            ),
            (Op::Boards, "deck_get_boards", json!({})),
        ],
    }
}

fn main() -> anyhow::Result<()> {
    let ours_only = std::env::args().any(|a| a == "--ours-only");
    println!("== starting the seeded stand-in and adding the bench data");
    let nc = Standin::start_seeded();
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(60))
        .pool_max_idle_per_host(64)
        .build()?;
    rt.block_on(seed(&http, &nc))?;

    println!("== building mcp-nextcloud (release)");
    let status = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .current_dir(workspace_root())
        .args(["build", "-q", "--release", "-p", "mcp-nextcloud", "--bin", "mcp-nextcloud"])
        .status()?;
    if !status.success() {
        bail!("release build failed");
    }
    let (mut our_proc, our_url, _data) = start_ours(&nc)?;

    let their = if ours_only { None } else { start_theirs(&nc)? };
    if their.is_none() && !ours_only {
        println!("   nextcloud-mcp-server is not installed (scripts/install.d/25-mcp-python.sh --bench); measuring mcp-nextcloud only");
    }

    let nc = Arc::new(nc);
    rt.block_on(async {
        let mut rows = Vec::new();
        for op in OPS {
            for clients in [1, CONCURRENT_CLIENTS] {
                let calls = if clients == 1 { SINGLE_CALLS } else { CONCURRENT_CALLS };
                let direct = measure_direct(&http, &nc, op, clients, calls).await?;
                let o = measure_mcp(&our_url, Some(nc.app_password("alice")), &ours(), op, clients, calls)
                    .await?
                    .map_err(anyhow::Error::msg)?;
                let t = match &their {
                    Some((_, url)) => Some(measure_mcp(url, None, &theirs(), op, clients, calls).await?),
                    None => None,
                };
                rows.push((op, clients, direct, o, t));
            }
        }
        print_table(&rows);
        anyhow::Ok(())
    })?;
    let _ = our_proc.terminate(Duration::from_secs(10));
    Ok(())
}

/// 200 small files in `bench200/`, a 100 KB text file, 40 events in March 2026.
async fn seed(http: &reqwest::Client, nc: &Standin) -> anyhow::Result<()> {
    let auth = nc.bearer("alice");
    let mkcol = http
        .request(reqwest::Method::from_bytes(b"MKCOL")?, nc.dav_url("alice", "bench200"))
        .header("Authorization", &auth)
        .send()
        .await?;
    if !mkcol.status().is_success() && mkcol.status().as_u16() != 405 {
        bail!("MKCOL: {}", mkcol.status());
    }
    for i in 0..200 {
        let r = http
            .put(nc.dav_url("alice", &format!("bench200/file-{i:03}.txt")))
            .header("Authorization", &auth)
            .body(format!("file {i}\n"))
            .send()
            .await?;
        if !r.status().is_success() {
            bail!("PUT file {i}: {}", r.status());
        }
    }
    let text: String = (0..2000)
        .map(|i| format!("{i:06} The quick brown fox jumps over the lazy dog.\n"))
        .collect();
    let r = http
        .put(nc.dav_url("alice", "bench100k.txt"))
        .header("Authorization", &auth)
        .body(text[..100_000].to_string())
        .send()
        .await?;
    if !r.status().is_success() {
        bail!("PUT bench100k.txt: {}", r.status());
    }
    for i in 0..40 {
        let day = 1 + i % 28;
        let hour = 8 + i % 9;
        let ics = format!(
            "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//tamebi//bench//EN\r\nBEGIN:VEVENT\r\nUID:bench-{i}@tamebi\r\nDTSTAMP:20260101T000000Z\r\nDTSTART:202603{day:02}T{hour:02}0000Z\r\nDTEND:202603{day:02}T{:02}0000Z\r\nSUMMARY:Bench event {i}\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n",
            hour + 1
        );
        let r = http
            .put(format!("{}/remote.php/dav/calendars/alice/personal/bench-{i}.ics", nc.url()))
            .header("Authorization", &auth)
            .header("Content-Type", "text/calendar; charset=utf-8")
            .body(ics)
            .send()
            .await?;
        if !r.status().is_success() {
            bail!("PUT event {i}: {}", r.status());
        }
    }
    Ok(())
}

fn start_ours(nc: &Standin) -> anyhow::Result<(Process, String, tempfile::TempDir)> {
    let bin = std::env::var("CARGO_TARGET_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|_| workspace_root().join("target"))
        .join("release/mcp-nextcloud");
    let port = free_port();
    let data = tempfile::tempdir()?;
    let mut cmd = Command::new(bin);
    cmd.env_clear()
        .env("NC_URL", nc.url())
        .env("MCP_BIND", format!("127.0.0.1:{port}"))
        .env("MCP_INDEX_PATH", data.path().join("index.db"))
        .env("RUST_LOG", "warn");
    let mut p = Process::spawn("mcp-nextcloud-release", cmd);
    p.wait_http(&format!("http://127.0.0.1:{port}/healthz"), Duration::from_secs(30));
    Ok((p, format!("http://127.0.0.1:{port}/mcp"), data))
}

/// Starts nextcloud-mcp-server from its venv, if installed. It holds alice's app password
/// (that is its design: one configured account), so the bench client sends no bearer.
fn start_theirs(nc: &Standin) -> anyhow::Result<Option<(Process, String)>> {
    let venv = workspace_root().join("mcp-servers/mcp-nextcloud/benches/python/.venv");
    let exe = venv.join("bin/nextcloud-mcp-server");
    if !exe.exists() {
        return Ok(None);
    }
    let port = free_port();
    let mut cmd = Command::new(exe);
    cmd.args([
        "run",
        "--transport",
        "streamable-http",
        "--host",
        "127.0.0.1",
        "--port",
        &port.to_string(),
    ])
    .env("NEXTCLOUD_HOST", nc.url())
    .env("NEXTCLOUD_USERNAME", "alice")
    .env("NEXTCLOUD_PASSWORD", nc.app_password("alice"));
    let mut p = Process::spawn("nextcloud-mcp-server", cmd);
    p.wait_http(&format!("http://127.0.0.1:{port}/mcp"), Duration::from_secs(120));
    Ok(Some((p, format!("http://127.0.0.1:{port}/mcp"))))
}

async fn connect(url: &str, token: Option<&str>) -> anyhow::Result<Client> {
    let mut config = StreamableHttpClientTransportConfig::with_uri(url.to_string());
    if let Some(t) = token {
        config = config.auth_header(t.to_string());
    }
    Ok(().serve(StreamableHttpClientTransport::from_config(config)).await?)
}

#[derive(Clone, Copy)]
struct Figures {
    p50: Duration,
    p99: Duration,
}

fn figures(mut samples: Vec<Duration>) -> Figures {
    samples.sort();
    let at = |q: f64| samples[((samples.len() as f64 - 1.0) * q).round() as usize];
    Figures {
        p50: at(0.50),
        p99: at(0.99),
    }
}

/// `calls` tool calls spread over `clients` concurrent clients, each with its own connection.
/// The outer error is the bench's own failure; the inner one a tool that failed (reported).
async fn measure_mcp(
    url: &str,
    token: Option<&str>,
    flavor: &Flavor,
    op: Op,
    clients: usize,
    calls: usize,
) -> anyhow::Result<Result<Figures, String>> {
    let (_, name, args) = flavor.calls.iter().find(|(o, _, _)| *o == op).context("operation")?;
    let Value::Object(args) = args.clone() else { bail!("arguments") };
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..clients {
        let client = connect(url, token).await?;
        let (name, args): (String, JsonObject) = (name.to_string(), args.clone());
        let per = calls / clients;
        tasks.spawn(async move {
            let call = || CallToolRequestParams::new(name.clone()).with_arguments(args.clone());
            for _ in 0..WARMUP.min(per) {
                let r = client.call_tool(call()).await?;
                if r.is_error == Some(true) {
                    let _ = client.cancel().await;
                    let text: String = r.content.iter().filter_map(|c| c.as_text().map(|t| t.text.clone())).collect();
                    return anyhow::Ok(Err(format!("{name} fails: {}", text.chars().take(120).collect::<String>())));
                }
            }
            let mut out = Vec::with_capacity(per);
            for _ in 0..per {
                let t = Instant::now();
                let r = client.call_tool(call()).await?;
                out.push(t.elapsed());
                if r.is_error == Some(true) {
                    bail!("{name} failed after warm-up: {:?}", r.content);
                }
            }
            let _ = client.cancel().await;
            anyhow::Ok(Ok(out))
        });
    }
    let mut all = Vec::new();
    while let Some(t) = tasks.join_next().await {
        match t?? {
            Ok(samples) => all.extend(samples),
            Err(failure) => return Ok(Err(failure)),
        }
    }
    Ok(Ok(figures(all)))
}

/// The Nextcloud request(s) behind each operation, made directly as alice.
async fn measure_direct(http: &reqwest::Client, nc: &Arc<Standin>, op: Op, clients: usize, calls: usize) -> anyhow::Result<Figures> {
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..clients {
        let (http, nc) = (http.clone(), nc.clone());
        let per = calls / clients;
        tasks.spawn(async move {
            let mut out = Vec::with_capacity(per);
            for i in 0..(per + WARMUP.min(per)) {
                let t = Instant::now();
                direct(&http, &nc, op).await?;
                if i >= WARMUP.min(per) {
                    out.push(t.elapsed());
                }
            }
            anyhow::Ok(out)
        });
    }
    let mut all = Vec::new();
    while let Some(t) = tasks.join_next().await {
        all.extend(t??);
    }
    Ok(figures(all))
}

async fn direct(http: &reqwest::Client, nc: &Standin, op: Op) -> anyhow::Result<()> {
    let auth = nc.bearer("alice");
    let req = match op {
        Op::List200 => http
            .request(reqwest::Method::from_bytes(b"PROPFIND")?, nc.dav_url("alice", "bench200"))
            .headers(dav_headers(Some("1")))
            .body(dav::propfind_files()),
        Op::Read100k => http.get(nc.dav_url("alice", "bench100k.txt")),
        Op::Month => http
            .request(
                reqwest::Method::from_bytes(b"REPORT")?,
                format!("{}/remote.php/dav/calendars/alice/personal/", nc.url()),
            )
            .headers(dav_headers(Some("1")))
            .body(dav::calendar_query("20260301T000000Z", "20260401T000000Z")),
        Op::Boards => http
            .get(format!("{}/index.php/apps/deck/api/v1.0/boards", nc.url()))
            .header("OCS-APIRequest", "true")
            .header("Accept", "application/json"),
    };
    let r = req.header("Authorization", auth).send().await?;
    if !r.status().is_success() {
        bail!("direct request: {}", r.status());
    }
    r.bytes().await?;
    Ok(())
}

fn ms(d: Duration) -> String {
    format!("{:.2}", d.as_secs_f64() * 1000.0)
}

/// One table row: operation, clients, direct, ours, theirs (absent, failed, or measured).
type Row = (Op, usize, Figures, Figures, Option<Result<Figures, String>>);

fn print_table(rows: &[Row]) {
    println!(
        "\n| operation | clients | direct p50 / p99 (ms) | mcp-nextcloud p50 / p99 | its overhead (p50) | nextcloud-mcp-server p50 / p99 | its overhead (p50) | ratio |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for (op, clients, d, o, t) in rows {
        let ours_over = o.p50.saturating_sub(d.p50);
        let (theirs, their_over, ratio) = match t {
            Some(Err(failure)) => (failure.clone(), "—".into(), "—".into()),
            Some(Ok(t)) => {
                let over = t.p50.saturating_sub(d.p50);
                let ratio = if ours_over.is_zero() {
                    "ours ≈ 0".to_string()
                } else {
                    format!("{:.1}×", over.as_secs_f64() / ours_over.as_secs_f64())
                };
                (format!("{} / {}", ms(t.p50), ms(t.p99)), ms(over), ratio)
            }
            None => ("—".into(), "—".into(), "—".into()),
        };
        println!(
            "| {} | {clients} | {} / {} | {} / {} | {} | {theirs} | {their_over} | {ratio} |",
            op.label(),
            ms(d.p50),
            ms(d.p99),
            ms(o.p50),
            ms(o.p99),
            ms(ours_over)
        );
    }
}
