//! Office documents end to end: spreadsheets and presentations read by files_read and found by
//! files_grep (one extraction), and files_convert through the OnlyOffice Document Server
//! stand-in (dev/docserver-standin: ConvertService's wire format, JWT verification, Debian's
//! LibreOffice doing the conversion) fetching the lent file from mcp-nextcloud's loan listener.
//! Nothing is mocked: the stand-in downloads the loan over HTTP exactly as OnlyOffice does.

#![expect(
    clippy::expect_used,
    clippy::panic,
    reason = "end-to-end test: a broken environment is a test failure"
)]

mod common;

use common::{Env, call, err_kind, ok, text};
use mcp_nextcloud::index::extract::{Format, extract};
use serde_json::{Value, json};
use test_harness::docserver::DocServer;
use test_harness::mcp_nextcloud::McpNextcloud;
use test_harness::mcp_server::McpServer;
use test_harness::standin::Standin;

fn fixture(name: &str) -> Vec<u8> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata/office")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A seeded stand-in, the document server stand-in, and mcp-nextcloud configured for both.
struct Office {
    env: Env,
    docs: DocServer,
    loan_base: String,
}

impl Office {
    async fn start() -> Office {
        tokio::task::spawn_blocking(|| {
            let nc = Standin::start_seeded();
            let docs = DocServer::start(nc.url());
            let loan_port = test_harness::free_port();
            let loan_base = format!("http://127.0.0.1:{loan_port}");
            let bind = format!("127.0.0.1:{loan_port}");
            let mcp: McpServer = McpNextcloud::start_with(
                nc.url(),
                &[
                    ("MCP_DOCSERVER_URL", docs.url()),
                    ("MCP_DOCSERVER_JWT_SECRET", docs.secret()),
                    ("MCP_LOAN_BIND", &bind),
                    ("MCP_LOAN_BASE_URL", &loan_base),
                ],
            );
            Office {
                env: Env { mcp, nc },
                docs,
                loan_base,
            }
        })
        .await
        .expect("start the fixture")
    }

    async fn audit(&self) -> Value {
        let docs = &self.docs;
        tokio::task::block_in_place(|| docs.audit())
    }

    /// `GET <url>` without any credential: (status, content type, body).
    async fn get(&self, url: &str) -> (u16, String, Vec<u8>) {
        let r = self.env.nc_http().get(url).send().await.expect("GET");
        let ct = r
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string();
        (r.status().as_u16(), ct, r.bytes().await.unwrap_or_default().to_vec())
    }

    async fn nc_bytes(&self, uid: &str, path: &str) -> (u16, Vec<u8>) {
        let r = self
            .env
            .nc_http()
            .get(self.env.nc.dav_url(uid, path))
            .header("Authorization", self.env.nc.bearer(uid))
            .send()
            .await
            .expect("GET");
        (r.status().as_u16(), r.bytes().await.unwrap_or_default().to_vec())
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn alice_converts_the_contract_to_pdf_through_a_lent_file() {
    let o = Office::start().await;
    let docx = fixture("contract.docx");
    o.env.nc_put("alice", "contract.docx", docx.clone()).await;
    let alice = o.env.client("alice").await;

    let r = call(&alice, "files_convert", json!({"path": "contract.docx", "to": "pdf"})).await;
    let v = ok(&r);
    assert_eq!(v["target"], "contract.pdf", "{v}");
    assert_eq!((v["format"].as_str(), v["created"].as_bool()), (Some("pdf"), Some(true)));
    for part in ["download", "loan", "conversion", "fetch", "upload"] {
        assert!(v["timings_ms"][part].as_u64().is_some(), "{part}: {v}");
    }

    // The PDF is in alice's folder; our own PDF reader finds the contract's words in it.
    let (status, pdf) = o.nc_bytes("alice", "contract.pdf").await;
    assert_eq!(status, 200);
    assert!(pdf.starts_with(b"%PDF-"));
    let read = extract(Format::Pdf, &pdf).expect("our PDF reader reads it");
    let words: String = read.text.split_whitespace().collect::<Vec<_>>().join(" ");
    for want in [
        "Service Agreement",
        "Example GmbH and Customer AG",
        "four thousand eight hundred euros",
    ] {
        assert!(words.contains(want), "{want:?} missing from {words:?}");
    }

    // What the document server saw: its own JWT only, the loan URL only, the file once.
    let audit = o.audit().await;
    assert_eq!(audit["requests"], 1, "{audit}");
    assert!(
        audit["authorization"].as_array().unwrap().iter().all(|a| a == "own-jwt"),
        "a foreign Authorization header reached the document server: {audit}"
    );
    assert_eq!(audit["nextcloud_urls"], json!([]), "{audit}");
    let urls = audit["urls"].as_array().unwrap();
    assert_eq!(urls.len(), 1);
    let loan_url = urls[0].as_str().unwrap().to_string();
    assert!(loan_url.starts_with(&format!("{}/loan/", o.loan_base)), "{loan_url}");
    assert_eq!(audit["downloads"], json!([{"url": loan_url, "bytes": docx.len()}]));

    // The loan worked once; now it answers exactly what an unknown token answers.
    let claimed = o.get(&loan_url).await;
    assert_eq!(claimed.0, 404);
    let unknown = o.get(&format!("{}/loan/{}", o.loan_base, "ab".repeat(32))).await;
    let garbage = o.get(&format!("{}/loan/x", o.loan_base)).await;
    assert_eq!(claimed, unknown, "claimed and unknown tokens answer byte for byte alike");
    assert_eq!(unknown, garbage);
    // The loan listener serves loans only: the MCP port does not lend, the loan port has no MCP.
    assert_eq!(o.get(&format!("{}/mcp", o.loan_base)).await, unknown);
    assert_eq!(o.get(&format!("{}/loan/{}", o.env.mcp.base_url(), "ab".repeat(32))).await.0, 404);

    // Converting again is refused while the PDF exists, and replaces it with overwrite.
    let again = call(&alice, "files_convert", json!({"path": "contract.docx", "to": "pdf"})).await;
    assert_eq!(err_kind(&again), "conflict", "{}", text(&again));
    assert!(text(&again).contains("overwrite: true"), "{}", text(&again));
    let replaced = call(
        &alice,
        "files_convert",
        json!({"path": "contract.docx", "to": "odt", "target": "Out/contract-copy.odt"}),
    )
    .await;
    assert_eq!(err_kind(&replaced), "conflict", "Out/ does not exist: {}", text(&replaced));
    let over = call(
        &alice,
        "files_convert",
        json!({"path": "contract.docx", "to": "pdf", "overwrite": true}),
    )
    .await;
    assert_eq!(ok(&over)["created"], false, "{}", text(&over));
}

#[tokio::test(flavor = "multi_thread")]
async fn bob_cannot_convert_alices_file_and_nothing_is_lent() {
    let o = Office::start().await;
    o.env.nc_put("alice", "private/contract.docx", fixture("contract.docx")).await;
    let bob = o.env.client("bob").await;
    let r = call(&bob, "files_convert", json!({"path": "private/contract.docx", "to": "pdf"})).await;
    assert_eq!(err_kind(&r), "not_found", "{}", text(&r));
    // Nextcloud's 404 ended it: the document server was never asked, nothing was lent.
    assert_eq!(o.audit().await["requests"], 0);
    let (status, _) = o.nc_bytes("alice", "private/contract.pdf").await;
    assert_eq!(status, 404);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_conversion_the_server_fails_leaves_no_file_and_pairs_are_checked() {
    let o = Office::start().await;
    let alice = o.env.client("alice").await;
    // A zip signature and nothing else: LibreOffice cannot open it, the server answers -3.
    o.env.nc_put("alice", "broken.docx", b"PK\x03\x04 not a document".to_vec()).await;
    let r = call(&alice, "files_convert", json!({"path": "broken.docx", "to": "pdf"})).await;
    assert_eq!(err_kind(&r), "invalid_argument", "{}", text(&r));
    assert!(text(&r).contains("could not convert"), "{}", text(&r));
    assert_eq!(o.nc_bytes("alice", "broken.pdf").await.0, 404, "no partial file");

    let before = o.audit().await["requests"].as_u64().unwrap();
    o.env.nc_put("alice", "contract.docx", fixture("contract.docx")).await;
    let r = call(&alice, "files_convert", json!({"path": "contract.docx", "to": "xlsx"})).await;
    assert_eq!(err_kind(&r), "invalid_argument");
    assert!(text(&r).contains("possible: pdf, odt, txt, html"), "{}", text(&r));
    let r = call(&alice, "files_convert", json!({"path": "notes.txt", "to": "exe"})).await;
    assert!(
        text(&r).contains("to must be one of pdf, docx, odt, xlsx, ods, pptx, odp, txt, html, md"),
        "{}",
        text(&r)
    );
    assert_eq!(
        o.audit().await["requests"].as_u64().unwrap(),
        before,
        "refused pairs never reach the server"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn spreadsheets_and_decks_read_and_search_as_one_extraction() {
    let env = Env::start().await;
    let alice = env.client("alice").await;
    // Without a document server, files_convert is not offered at all.
    let listed = alice.list_all_tools().await.expect("tools/list");
    assert!(listed.iter().all(|t| t.name != "files_convert"));

    env.nc_put("alice", "Q3-forecast.xlsx", fixture("q3-forecast.xlsx")).await;
    env.nc_put("alice", "board-deck.odp", fixture("board-deck.odp")).await;
    let r = call(&alice, "files_read", json!({"path": "Q3-forecast.xlsx"})).await;
    let v = ok(&r);
    assert_eq!(v["format"], "xlsx");
    assert!(v["text"].as_str().unwrap().contains("| 5 | Total | 24750.5 |"), "{v}");
    let one = call(
        &alice,
        "files_read",
        json!({"path": "Q3-forecast.xlsx", "sheet": "Assumptions", "row": 2}),
    )
    .await;
    assert_eq!(
        ok(&one)["text"],
        "# Assumptions\n\n| | A | B |\n| --- | --- | --- |\n| 2 | Growth | 0.12 |\n"
    );
    let not_sheet = call(&alice, "files_read", json!({"path": "notes.txt", "sheet": "x"})).await;
    assert_eq!(err_kind(&not_sheet), "invalid_argument");

    let deck = call(&alice, "files_read", json!({"path": "board-deck.odp"})).await;
    assert!(
        ok(&deck)["text"]
            .as_str()
            .unwrap()
            .contains("Speaker notes:\nThank the sales team first.")
    );

    // files_grep finds words in a sheet and in speaker notes; the offset reads from that section.
    for (query, path, starts) in [
        ("Licences Hosting", "Q3-forecast.xlsx", "# Forecast\n"),
        ("budget approved March", "board-deck.odp", "# Slide 2\n"),
    ] {
        let found = ok(&call(&alice, "files_grep", json!({"query": query})).await).clone();
        let p = found["passages"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["path"] == path)
            .unwrap_or_else(|| panic!("{query}: {found}"))
            .clone();
        let section = call(&alice, "files_read", json!({"path": path, "offset": p["offset"]})).await;
        assert!(
            ok(&section)["text"].as_str().unwrap().starts_with(starts),
            "{query}: {}",
            text(&section)
        );
    }
}
