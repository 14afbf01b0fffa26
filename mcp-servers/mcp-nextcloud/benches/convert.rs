//! Benchmark: where the time of one `files_convert` goes, split into download (the source from
//! Nextcloud as the user), loan (until the document server fetched the lent file), conversion
//! (until it answered with the result), fetch (the result from the document server) and upload
//! (to Nextcloud as the user, with the read-back). Runs the real processes: the seeded
//! Nextcloud stand-in, the OnlyOffice stand-in (LibreOffice underneath) and mcp-nextcloud.
//! Prints medians per format pair; asserts nothing about time.
//!
//!     bash scripts/install.d/57-docserver-standin.sh
//!     cargo bench -p mcp-nextcloud --bench convert            # 5 runs per pair
//!     cargo bench -p mcp-nextcloud --bench convert -- 10      # 10 runs per pair

use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Value, json};
use test_harness::docserver::DocServer;
use test_harness::mcp_nextcloud::McpNextcloud;
use test_harness::standin::Standin;
use test_harness::{free_port, workspace_root};

const PAIRS: [(&str, &str); 3] = [("contract.docx", "pdf"), ("q3-forecast.xlsx", "ods"), ("board-deck.pptx", "pdf")];
const PARTS: [&str; 5] = ["download", "loan", "conversion", "fetch", "upload"];

fn main() -> anyhow::Result<()> {
    let runs: usize = std::env::args()
        .skip(1)
        .find(|a| !a.starts_with('-'))
        .map_or(Ok(5), |a| a.parse())?;
    let nc = Standin::start_seeded();
    let docs = DocServer::start(nc.url());
    let loan_port = free_port();
    let (bind, base) = (format!("127.0.0.1:{loan_port}"), format!("http://127.0.0.1:{loan_port}"));
    let mcp = McpNextcloud::start_with(
        nc.url(),
        &[
            ("MCP_DOCSERVER_URL", docs.url()),
            ("MCP_DOCSERVER_JWT_SECRET", docs.secret()),
            ("MCP_LOAN_BIND", &bind),
            ("MCP_LOAN_BASE_URL", &base),
        ],
    );
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    rt.block_on(async {
        let http = reqwest::Client::new();
        for (name, _) in PAIRS {
            let bytes = std::fs::read(workspace_root().join("testdata/office").join(name))?;
            let r = http
                .put(nc.dav_url("alice", name))
                .header("Authorization", nc.bearer("alice"))
                .body(bytes)
                .send()
                .await?;
            if !r.status().is_success() {
                bail!("PUT {name}: {}", r.status());
            }
        }
        let transport = StreamableHttpClientTransport::from_config(
            StreamableHttpClientTransportConfig::with_uri(mcp.url()).auth_header(nc.app_password("alice").to_string()),
        );
        let client = ().serve(transport).await.context("MCP client")?;
        println!("files_convert, median of {runs} runs (ms); the document server is the LibreOffice stand-in");
        println!(
            "   {:<24} {:>8} {:>8} {:>10} {:>8} {:>8} {:>8}",
            "pair", "download", "loan", "conversion", "fetch", "upload", "total"
        );
        for (name, to) in PAIRS {
            let mut parts: Vec<Vec<u64>> = vec![Vec::new(); PARTS.len()];
            let mut totals = Vec::new();
            for _ in 0..runs {
                let args = json!({"path": name, "to": to, "overwrite": true});
                let Value::Object(map) = args else { bail!("arguments") };
                let t = Instant::now();
                let r = client
                    .call_tool(CallToolRequestParams::new("files_convert").with_arguments(map))
                    .await?;
                totals.push(ms(t.elapsed()));
                let v = r.structured_content.context("structured content")?;
                if r.is_error == Some(true) {
                    bail!("{name} -> {to}: {v}");
                }
                for (i, part) in PARTS.iter().enumerate() {
                    parts[i].push(v["timings_ms"][part].as_u64().unwrap_or_default());
                }
            }
            let m: Vec<u64> = parts.into_iter().map(median).collect();
            println!(
                "   {:<24} {:>8} {:>8} {:>10} {:>8} {:>8} {:>8}",
                format!("{name} -> {to}"),
                m[0],
                m[1],
                m[2],
                m[3],
                m[4],
                median(totals)
            );
        }
        client.cancel().await?;
        Ok(())
    })
}

fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

fn median(mut v: Vec<u64>) -> u64 {
    v.sort_unstable();
    v.get(v.len() / 2).copied().unwrap_or_default()
}
