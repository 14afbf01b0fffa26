//! Benchmark: tool latency through mcp-nextcloud and through `nextcloud-mcp-server` (PyPI, the
//! peer), next to the direct HTTP request each tool makes with the same headers, against any
//! Nextcloud: the seeded stand-in on loopback by default (CI), or a real instance by hand.
//! Prints figures; asserts nothing about time.
//!
//!     bash scripts/install.d/25-mcp-python.sh --bench   # the peer, in its own venv
//!     cargo bench -p mcp-nextcloud --bench tools                           # stand-in
//!     cargo bench -p mcp-nextcloud --bench tools -- --login-delay-ms 300   # stand-in, logins cost like OIDC
//!     NC_BENCH_CREDENTIAL=<app password or access token> \
//!       cargo bench -p mcp-nextcloud --bench tools -- --nc-url https://cloud.example.org --user alice --seed
//!
//! Against a real instance the credential is read from `NC_BENCH_CREDENTIAL` (so it stays out
//! of the process list and shell history) and sent as `Authorization: Bearer`, exactly as
//! mcp-nextcloud sends a caller's token. The peer holds one configured account (its design):
//! it gets `--user` and `NC_BENCH_PEER_PASSWORD`, or the credential itself when that is not a
//! JWT (an app password works for both). `--seed` writes the bench data into that account
//! (folder `bench200/`, `bench100k.txt`, 40 events in March 2026 in calendar `personal`); without
//! it, point the operations at existing data: `--folder`, `--file`, `--calendar`, `--month`.
//!
//! Operations: list a folder (200 files when seeded), read a text file (100 KB), one month of
//! calendar events, list Deck boards, and `tools/list` (an MCP call that makes no Nextcloud
//! request). Each at 1 client (`--calls` calls, 100) and at `--clients` concurrent clients (50,
//! each with its own connection; 10 calls per client, at least `--calls` in all; 0 or 1 skips
//! it), after 5 warm-up calls per client; p50 and p99 per target. Two direct columns, both with mcp-nextcloud's exact headers:
//! "no cookie" (bearer only: every request is a login, what mcp-nextcloud sent before it kept
//! sessions) and "session" (bearer plus the session cookies Nextcloud handed back, kept by
//! mcp-nextcloud's own `SessionCookies`: what it sends now). The overhead of each MCP server is
//! its p50 minus the "session" direct p50. Every MCP call goes through rmcp's client over
//! Streamable HTTP, for both servers. mcp-nextcloud runs as a release build.

use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use http::{HeaderMap, HeaderValue};
use mcp_nextcloud::nextcloud::session_cookies::SessionCookies;
use mcp_nextcloud::nextcloud::{dav, dav_headers};
use mcp_resource_server::Bearer;
use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, JsonObject};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Value, json};
use test_harness::standin::Standin;
use test_harness::{Process, free_port, workspace_root};

type Client = RunningService<RoleClient, ()>;

const WARMUP: usize = 5;
/// A call that takes longer is reported as a failure of that server, and the run goes on.
const CALL_TIMEOUT: Duration = Duration::from_secs(60);

#[derive(Clone, Copy, PartialEq)]
enum Op {
    List,
    Read,
    Month,
    Boards,
    NoRequest,
}

const OPS: [Op; 5] = [Op::List, Op::Read, Op::Month, Op::Boards, Op::NoRequest];

/// What to run against, from the command line.
struct Options {
    nc_url: Option<String>,
    user: String,
    seed: bool,
    ours_only: bool,
    login_delay_ms: u64,
    calls: usize,
    clients: usize,
    folder: String,
    file: String,
    calendar: String,
    /// `YYYY-MM`.
    month: String,
}

impl Options {
    fn parse() -> anyhow::Result<Options> {
        let mut o = Options {
            nc_url: None,
            user: "alice".into(),
            seed: false,
            ours_only: false,
            login_delay_ms: 0,
            calls: 100,
            clients: 50,
            folder: "bench200".into(),
            file: "bench100k.txt".into(),
            calendar: "personal".into(),
            month: "2026-03".into(),
        };
        let mut args = std::env::args().skip(1);
        while let Some(a) = args.next() {
            let mut value = || args.next().with_context(|| format!("{a} needs a value"));
            match a.as_str() {
                "--nc-url" => o.nc_url = Some(value()?.trim_end_matches('/').to_string()),
                "--user" => o.user = value()?,
                "--seed" => o.seed = true,
                "--ours-only" => o.ours_only = true,
                "--login-delay-ms" => o.login_delay_ms = value()?.parse().context("--login-delay-ms")?,
                "--calls" => o.calls = value()?.parse().context("--calls")?,
                "--clients" => o.clients = value()?.parse().context("--clients")?,
                "--folder" => o.folder = value()?,
                "--file" => o.file = value()?,
                "--calendar" => o.calendar = value()?,
                "--month" => o.month = value()?,
                "--bench" => {} // cargo bench passes it to every bench target
                other => bail!("unknown argument {other} (see the comment at the top of benches/tools.rs)"),
            }
        }
        if o.calls == 0 {
            bail!("--calls must be at least 1");
        }
        if o.nc_url.is_some() && o.login_delay_ms > 0 {
            bail!("--login-delay-ms applies to the stand-in only");
        }
        month_range(&o.month)?;
        Ok(o)
    }

    /// Calls made at `clients` concurrent clients: 10 per client, at least `calls` in all.
    fn concurrent_calls(&self) -> usize {
        (self.clients * 10).max(self.calls).div_ceil(self.clients.max(1)) * self.clients.max(1)
    }

    fn label(&self, op: Op) -> String {
        match op {
            Op::List => format!("list folder {}", self.folder),
            Op::Read => format!("read {}", self.file),
            Op::Month => format!("{} events of calendar {}", self.month, self.calendar),
            Op::Boards => "list Deck boards".into(),
            Op::NoRequest => "tools/list (no Nextcloud request)".into(),
        }
    }
}

/// `YYYY-MM` → the first day of it and of the next month, as `YYYY-MM-DD`.
fn month_range(month: &str) -> anyhow::Result<(String, String)> {
    let (y, m) = month.split_once('-').context("--month is YYYY-MM")?;
    let (y, m): (u32, u32) = (y.parse().context("--month year")?, m.parse().context("--month month")?);
    if !(1..=12).contains(&m) {
        bail!("--month: no month {m}");
    }
    let (ny, nm) = if m == 12 { (y + 1, 1) } else { (y, m + 1) };
    Ok((format!("{y:04}-{m:02}-01"), format!("{ny:04}-{nm:02}-01")))
}

/// The Nextcloud under test and the account used on it.
struct Target {
    url: String,
    user: String,
    /// Sent as `Authorization: Bearer` by mcp-nextcloud's clients and the direct requests.
    credential: String,
    /// What the peer logs in with (it takes a user and a password), if anything fits.
    peer_password: Option<String>,
    _standin: Option<Standin>,
}

impl Target {
    fn dav_url(&self, path: &str) -> String {
        format!("{}/remote.php/dav/files/{}/{}", self.url, self.user, path.trim_start_matches('/'))
    }

    fn calendar_url(&self, calendar: &str) -> String {
        format!("{}/remote.php/dav/calendars/{}/{calendar}/", self.url, self.user)
    }

    fn bearer_headers(&self) -> anyhow::Result<HeaderMap> {
        let mut h = HeaderMap::new();
        let mut v = HeaderValue::from_str(&format!("Bearer {}", self.credential)).context("the credential is not a header value")?;
        v.set_sensitive(true);
        h.insert(http::header::AUTHORIZATION, v);
        Ok(h)
    }
}

fn target(o: &Options) -> anyhow::Result<Target> {
    match &o.nc_url {
        None => {
            println!("== starting the seeded stand-in (login delay {} ms)", o.login_delay_ms);
            let nc = Standin::builder().seeded().login_delay_ms(o.login_delay_ms).start();
            let credential = nc.app_password(&o.user).to_string();
            Ok(Target {
                url: nc.url().to_string(),
                user: o.user.clone(),
                peer_password: Some(credential.clone()),
                credential,
                _standin: Some(nc),
            })
        }
        Some(url) => {
            let credential = std::env::var("NC_BENCH_CREDENTIAL").context("set NC_BENCH_CREDENTIAL to the credential for --user")?;
            let looks_like_jwt = credential.split('.').count() == 3;
            let peer_password = std::env::var("NC_BENCH_PEER_PASSWORD")
                .ok()
                .or_else(|| (!looks_like_jwt).then(|| credential.clone()));
            println!("== against {url} as {}", o.user);
            Ok(Target {
                url: url.clone(),
                user: o.user.clone(),
                credential,
                peer_password,
                _standin: None,
            })
        }
    }
}

fn main() -> anyhow::Result<()> {
    let o = Arc::new(Options::parse()?);
    let nc = Arc::new(target(&o)?);
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(60))
        .pool_max_idle_per_host(64)
        .build()?;
    if o.nc_url.is_none() || o.seed {
        println!("== adding the bench data");
        rt.block_on(seed(&http, &nc))?;
    }

    println!("== building mcp-nextcloud (release)");
    let status = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .current_dir(workspace_root())
        .args(["build", "-q", "--release", "-p", "mcp-nextcloud", "--bin", "mcp-nextcloud"])
        .status()?;
    if !status.success() {
        bail!("release build failed");
    }
    let (mut our_proc, our_url, _data) = start_ours(&nc.url)?;

    let their = match (&nc.peer_password, o.ours_only) {
        (_, true) => None,
        (None, false) => {
            println!("   the credential is a JWT and NC_BENCH_PEER_PASSWORD is not set: measuring without the peer");
            None
        }
        (Some(pw), false) => {
            let started = start_theirs(&nc.url, &nc.user, pw)?;
            if started.is_none() {
                println!("   nextcloud-mcp-server is not installed (scripts/install.d/25-mcp-python.sh --bench); measuring without it");
            }
            started
        }
    };

    rt.block_on(async {
        print_header();
        let mut levels = vec![(1, o.calls)];
        if o.clients > 1 {
            levels.push((o.clients, o.concurrent_calls()));
        }
        for op in OPS {
            for &(clients, calls) in &levels {
                let (cold, session) = if op == Op::NoRequest {
                    (None, None)
                } else {
                    let cold = measure_direct(&http, &nc, &o, op, clients, calls, Cookies::Never).await?;
                    let session = measure_direct(&http, &nc, &o, op, clients, calls, Cookies::Kept(Arc::default())).await?;
                    (Some(cold), Some(session))
                };
                let ours = measure_mcp(&our_url, Some(&nc.credential), &ours(&o)?, op, clients, calls)
                    .await?
                    .map_err(anyhow::Error::msg)?;
                let theirs = match &their {
                    Some((_, url)) => Some(measure_mcp(url, None, &theirs(&o)?, op, clients, calls).await?),
                    None => None,
                };
                // Each row as soon as it is measured: a slow peer must not hide the others.
                print_row(&Row {
                    label: o.label(op),
                    clients,
                    cold,
                    session,
                    ours,
                    theirs,
                });
            }
        }
        anyhow::Ok(())
    })?;
    let _ = our_proc.terminate(Duration::from_secs(10));
    Ok(())
}

/// How one MCP server names each operation (`None`: `tools/list`).
type Calls = Vec<(Op, Option<(&'static str, Value)>)>;

fn ours(o: &Options) -> anyhow::Result<Calls> {
    let (from, to) = month_range(&o.month)?;
    Ok(vec![
        (Op::List, Some(("files_list", json!({"path": o.folder})))),
        (Op::Read, Some(("files_read", json!({"path": o.file, "limit": 100000})))),
        (
            Op::Month,
            Some((
                "calendar_events",
                json!({"from": from, "to": last_day(&to)?, "calendar": o.calendar}),
            )),
        ),
        (Op::Boards, Some(("deck_boards", json!({})))),
        (Op::NoRequest, None),
    ])
}

fn theirs(o: &Options) -> anyhow::Result<Calls> {
    let (from, to) = month_range(&o.month)?;
    Ok(vec![
        (Op::List, Some(("nc_webdav_list_directory", json!({"path": o.folder})))),
        (Op::Read, Some(("nc_webdav_read_file", json!({"path": o.file})))),
        (
            Op::Month,
            Some((
                "nc_calendar_list_events",
                json!({"calendar_name": o.calendar, "start_date": from, "end_date": last_day(&to)?, "limit": 100}),
            )),
        ),
        (Op::Boards, Some(("deck_get_boards", json!({})))),
        (Op::NoRequest, None),
    ])
}

/// The day before `YYYY-MM-01` (both tools take an inclusive last day).
fn last_day(next_first: &str) -> anyhow::Result<String> {
    let d = chrono::NaiveDate::parse_from_str(next_first, "%Y-%m-%d")?;
    Ok(d.pred_opt().context("date")?.format("%Y-%m-%d").to_string())
}

/// 200 small files in `bench200/`, a 100 KB text file, 40 events in March 2026.
async fn seed(http: &reqwest::Client, nc: &Target) -> anyhow::Result<()> {
    let auth = nc.bearer_headers()?;
    let mkcol = http
        .request(reqwest::Method::from_bytes(b"MKCOL")?, nc.dav_url("bench200"))
        .headers(auth.clone())
        .send()
        .await?;
    if !mkcol.status().is_success() && mkcol.status().as_u16() != 405 {
        bail!("MKCOL: {}", mkcol.status());
    }
    for i in 0..200 {
        let r = http
            .put(nc.dav_url(&format!("bench200/file-{i:03}.txt")))
            .headers(auth.clone())
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
        .put(nc.dav_url("bench100k.txt"))
        .headers(auth.clone())
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
            .put(format!("{}bench-{i}.ics", nc.calendar_url("personal")))
            .headers(auth.clone())
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

fn start_ours(nc_url: &str) -> anyhow::Result<(Process, String, tempfile::TempDir)> {
    let bin = std::env::var("CARGO_TARGET_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|_| workspace_root().join("target"))
        .join("release/mcp-nextcloud");
    let port = free_port();
    let data = tempfile::tempdir()?;
    let mut cmd = Command::new(bin);
    cmd.env_clear()
        .env("NC_URL", nc_url)
        .env("MCP_BIND", format!("127.0.0.1:{port}"))
        .env("MCP_INDEX_PATH", data.path().join("index.db"))
        .env("RUST_LOG", "warn");
    let mut p = Process::spawn("mcp-nextcloud-release", cmd);
    p.wait_http(&format!("http://127.0.0.1:{port}/healthz"), Duration::from_secs(30));
    Ok((p, format!("http://127.0.0.1:{port}/mcp"), data))
}

/// Starts nextcloud-mcp-server from its venv, if installed. It holds one account's password
/// (that is its design: one configured account), so the bench client sends it no bearer. It
/// logs in with Basic and keeps no cookies; Basic auth is what Deck's `@CORS` API accepts
/// (on Nextcloud and on the stand-in alike), and the peer also sends `OCS-APIRequest: true` on
/// most of its Deck calls. A refusal would show as "deck_get_boards fails".
fn start_theirs(nc_url: &str, user: &str, password: &str) -> anyhow::Result<Option<(Process, String)>> {
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
    .env("NEXTCLOUD_HOST", nc_url)
    .env("NEXTCLOUD_USERNAME", user)
    .env("NEXTCLOUD_PASSWORD", password);
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
    calls_of: &Calls,
    op: Op,
    clients: usize,
    calls: usize,
) -> anyhow::Result<Result<Figures, String>> {
    let (_, call) = calls_of.iter().find(|(o, _)| *o == op).context("operation")?;
    let call: Option<(String, JsonObject)> = match call {
        Some((name, Value::Object(args))) => Some((name.to_string(), args.clone())),
        Some(_) => bail!("arguments"),
        None => None,
    };
    let mut tasks = Vec::new();
    for _ in 0..clients {
        // A server that stops accepting sessions is that server's failure, not the bench's.
        let client = match tokio::time::timeout(CALL_TIMEOUT, connect(url, token)).await {
            Ok(client) => client?,
            Err(_) => return Ok(Err(format!("no session within {} s", CALL_TIMEOUT.as_secs()))),
        };
        let call = call.clone();
        let per = calls / clients;
        #[expect(clippy::disallowed_methods, reason = "every handle is awaited below")]
        tasks.push(tokio::spawn(async move {
            let mut out = Vec::with_capacity(per);
            for i in 0..(per + WARMUP.min(per)) {
                let t = Instant::now();
                let failure = match tokio::time::timeout(CALL_TIMEOUT, one_call(&client, call.as_ref())).await {
                    Ok(outcome) => outcome?,
                    Err(_) => Some(format!("no answer within {} s", CALL_TIMEOUT.as_secs())),
                };
                let elapsed = t.elapsed();
                if let Some(text) = failure {
                    close(client).await;
                    return anyhow::Ok(Err(text));
                }
                if i >= WARMUP.min(per) {
                    out.push(elapsed);
                }
            }
            close(client).await;
            anyhow::Ok(Ok(out))
        }));
    }
    let mut all = Vec::new();
    for t in tasks {
        match t.await?? {
            Ok(samples) => all.extend(samples),
            Err(failure) => return Ok(Err(failure)),
        }
    }
    Ok(Ok(figures(all)))
}

/// Ends a session; a server that does not let go within a few seconds is left behind.
async fn close(client: Client) {
    let _ = tokio::time::timeout(Duration::from_secs(5), client.cancel()).await;
}

/// One MCP call: the tool, or `tools/list`. `Some(text)` when the tool reported an error.
async fn one_call(client: &Client, call: Option<&(String, JsonObject)>) -> anyhow::Result<Option<String>> {
    let Some((name, args)) = call else {
        // One page, as a client asks before its first call.
        client.list_tools(None).await?;
        return Ok(None);
    };
    let r = client
        .call_tool(CallToolRequestParams::new(name.clone()).with_arguments(args.clone()))
        .await?;
    if r.is_error == Some(true) {
        let text: String = r.content.iter().filter_map(|c| c.as_text().map(|t| t.text.clone())).collect();
        return Ok(Some(format!("{name} fails: {}", text.chars().take(120).collect::<String>())));
    }
    Ok(None)
}

/// Whether the direct requests keep Nextcloud's session cookies (as mcp-nextcloud does, with
/// its own code) or send the bearer alone, so that every request is a login.
#[derive(Clone)]
enum Cookies {
    Never,
    Kept(Arc<SessionCookies>),
}

/// The Nextcloud request(s) behind each operation, made directly with mcp-nextcloud's headers.
async fn measure_direct(
    http: &reqwest::Client,
    nc: &Arc<Target>,
    o: &Arc<Options>,
    op: Op,
    clients: usize,
    calls: usize,
    cookies: Cookies,
) -> anyhow::Result<Figures> {
    let mut tasks = Vec::new();
    for _ in 0..clients {
        let (http, nc, o, cookies) = (http.clone(), nc.clone(), o.clone(), cookies.clone());
        let per = calls / clients;
        #[expect(clippy::disallowed_methods, reason = "every handle is awaited below")]
        tasks.push(tokio::spawn(async move {
            let mut out = Vec::with_capacity(per);
            for i in 0..(per + WARMUP.min(per)) {
                let t = Instant::now();
                direct(&http, &nc, &o, op, &cookies).await?;
                if i >= WARMUP.min(per) {
                    out.push(t.elapsed());
                }
            }
            anyhow::Ok(out)
        }));
    }
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await??);
    }
    Ok(figures(all))
}

async fn direct(http: &reqwest::Client, nc: &Target, o: &Options, op: Op, cookies: &Cookies) -> anyhow::Result<()> {
    let req = match op {
        Op::List => http
            .request(reqwest::Method::from_bytes(b"PROPFIND")?, nc.dav_url(&o.folder))
            .headers(dav_headers(Some("1")))
            .body(dav::propfind_files()),
        Op::Read => http.get(nc.dav_url(&o.file)),
        Op::Month => {
            let (from, to) = month_range(&o.month)?;
            let stamp = |d: &str| format!("{}T000000Z", d.replace('-', ""));
            http.request(reqwest::Method::from_bytes(b"REPORT")?, nc.calendar_url(&o.calendar))
                .headers(dav_headers(Some("1")))
                .body(dav::calendar_query(&stamp(&from), &stamp(&to)))
        }
        Op::Boards => http
            .get(format!("{}/index.php/apps/deck/api/v1.0/boards", nc.url))
            .header("OCS-APIRequest", "true")
            .header("Accept", "application/json"),
        Op::NoRequest => return Ok(()),
    };
    let mut headers = nc.bearer_headers()?;
    let bearer = Bearer::from_headers(&headers).context("bearer")?;
    // As mcp-nextcloud sends it: without it Nextcloud's CSRF check refuses a session-carrying
    // PROPFIND or REPORT (401 "CSRF check not passed.").
    headers.insert("OCS-APIRequest", http::HeaderValue::from_static("true"));
    if let Cookies::Kept(jar) = cookies
        && let Some(cookie) = jar.cookie(&bearer)
    {
        headers.insert(http::header::COOKIE, cookie);
    }
    let r = req.headers(headers).send().await?;
    if let Cookies::Kept(jar) = cookies {
        jar.observe(&bearer, r.status(), r.headers());
    }
    if !r.status().is_success() {
        bail!("direct request: {}", r.status());
    }
    r.bytes().await?;
    Ok(())
}

fn ms(d: Duration) -> String {
    format!("{:.2}", d.as_secs_f64() * 1000.0)
}

struct Row {
    label: String,
    clients: usize,
    /// Direct, bearer only, and direct with the session cookies (`None` for `tools/list`).
    cold: Option<Figures>,
    session: Option<Figures>,
    ours: Figures,
    /// Absent, failed, or measured.
    theirs: Option<Result<Figures, String>>,
}

fn print_header() {
    println!(
        "\n| operation | clients | direct, no cookie p50 / p99 (ms) | direct, session p50 / p99 | mcp-nextcloud p50 / p99 | its overhead (p50) | nextcloud-mcp-server p50 / p99 | its overhead (p50) | ratio |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
}

fn print_row(r: &Row) {
    let pair = |f: &Option<Figures>| f.map_or("—".to_string(), |f| format!("{} / {}", ms(f.p50), ms(f.p99)));
    {
        // Overhead over the request mcp-nextcloud now makes (with the session); a call that
        // makes no request is all overhead.
        let base = r.session.map_or(Duration::ZERO, |f| f.p50);
        let ours_over = r.ours.p50.saturating_sub(base);
        let (theirs, their_over, ratio) = match &r.theirs {
            Some(Err(failure)) => (failure.clone(), "—".into(), "—".into()),
            Some(Ok(t)) => {
                let over = t.p50.saturating_sub(base);
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
            "| {} | {} | {} | {} | {} / {} | {} | {theirs} | {their_over} | {ratio} |",
            r.label,
            r.clients,
            pair(&r.cold),
            pair(&r.session),
            ms(r.ours.p50),
            ms(r.ours.p99),
            ms(ours_over)
        );
    }
}
