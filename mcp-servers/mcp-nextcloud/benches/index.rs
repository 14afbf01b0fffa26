//! Benchmark of the files_grep index. Prints figures; asserts nothing about time.
//!
//!     cargo bench -p mcp-nextcloud --bench index                      # 1,000,000 passages
//!     cargo bench -p mcp-nextcloud --bench index -- --passages 100000 # quicker
//!     cargo bench -p mcp-nextcloud --bench index -- --no-e2e          # without the stand-in
//!     cargo bench -p mcp-nextcloud --bench index -- --extraction-only # the formats only
//!
//! 1. Extraction throughput per format (text, Markdown, HTML, DOCX, ODT, PDF), and the
//!    chunker on top, on generated documents.
//! 2. Builds an index of N generated passages (Zipf-distributed vocabulary, so there are
//!    words in nearly every passage, words in a few thousand and words in one) in a
//!    temporary index.db, and reports the time and size.
//! 3. Times the ranking step (FTS5 + the common-word guard, exactly `search::rank`) for
//!    rare, medium and very common words: p50/p95/max over many queries.
//! 4. End to end: the real mcp-nextcloud against the seeded stand-in, with that big index,
//!    files_grep over MCP as alice (the generated passages belong to no stand-in user, so
//!    every candidate is verified and dropped: the worst case of verification).

use std::io::Write;
use std::time::{Duration, Instant};

use mcp_nextcloud::index::chunk::{self, MAX_PASSAGE_BYTES, Passage};
use mcp_nextcloud::index::extract::{self, Format};
use mcp_nextcloud::index::store::Store;
use mcp_nextcloud::index::{Settings, query, search};

/// Generated file ids start here, far from any id the stand-in hands out.
const FIRST_FILE_ID: i64 = 100_000_000;
const PASSAGES_PER_FILE: usize = 10;
const WORDS_PER_PASSAGE: usize = 32;
const VOCABULARY: usize = 50_000;
/// Every RARE_EVERY-th passage carries one unique word (`zq<n>`).
const RARE_EVERY: usize = 997;

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let passages = args
        .iter()
        .position(|a| a == "--passages")
        .and_then(|i| args.get(i + 1))
        .map(|v| v.parse::<usize>())
        .transpose()?
        .unwrap_or(1_000_000);
    let e2e = !args.iter().any(|a| a == "--no-e2e");
    let words = Words::new();

    println!("== extraction throughput (generated documents, single thread)");
    extraction(&words)?;
    if args.iter().any(|a| a == "--extraction-only") {
        return Ok(());
    }

    println!("\n== building an index of {passages} passages");
    let dir = tempfile::tempdir()?;
    let db = dir.path().join("index.db");
    let mut store = Store::open(&db)?;
    let rare_words = build(&mut store, &words, passages)?;
    let size: u64 = std::fs::read_dir(dir.path())?
        .filter_map(|e| e.ok()?.metadata().ok())
        .map(|m| m.len())
        .sum();
    println!("   index.db (+WAL) size: {:.0} MB", size as f64 / 1e6);

    println!("\n== ranking before verification (search::rank, default settings)");
    let settings = Settings::default();
    let sets = query_sets(&words, rare_words);
    for (label, queries) in &sets {
        let (df_lo, df_hi) = df_range(&store, queries)?;
        let times = time_all(queries, |q| {
            let terms = query::terms(q)?;
            search::rank(&store, &terms, &settings).map(|r| r.2.len())
        })?;
        report(&format!("{label} (matching passages per word {df_lo}..{df_hi})"), &times);
    }
    drop(store);

    if e2e {
        println!("\n== files_grep end to end over MCP (stand-in, alice, this index)");
        end_to_end(&db, &sets)?;
    }
    Ok(())
}

/// A xorshift generator: reproducible figures without a dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// A vocabulary of pronounceable pseudo-words with Zipf frequencies (rank r ∝ 1/r); the
/// ten most frequent are real English stop words.
struct Words {
    words: Vec<String>,
    cumulative: Vec<f64>,
}

impl Words {
    fn new() -> Words {
        const TOP: [&str; 10] = ["the", "of", "and", "to", "in", "is", "for", "that", "with", "on"];
        const SYL: [&str; 16] = [
            "ka", "lo", "mi", "ren", "sto", "da", "vi", "nu", "pe", "tra", "gol", "ber", "sa", "qui", "zon", "fe",
        ];
        let mut words = Vec::with_capacity(VOCABULARY);
        words.extend(TOP.iter().map(|w| w.to_string()));
        for i in TOP.len()..VOCABULARY {
            let mut n = i;
            let mut w = String::new();
            loop {
                w.push_str(SYL[n % 16]);
                n /= 16;
                if n == 0 {
                    break;
                }
            }
            if w.len() < 4 {
                w.push_str("ta");
            }
            words.push(w);
        }
        let mut total = 0.0;
        let cumulative = (1..=VOCABULARY)
            .map(|r| {
                total += 1.0 / r as f64;
                total
            })
            .collect();
        Words { words, cumulative }
    }

    fn sample(&self, rng: &mut Rng) -> &str {
        let total = self.cumulative[VOCABULARY - 1];
        let x = rng.unit() * total;
        let i = self.cumulative.partition_point(|c| *c < x).min(VOCABULARY - 1);
        &self.words[i]
    }

    fn sentence(&self, rng: &mut Rng, n: usize) -> String {
        let mut s = String::with_capacity(n * 7);
        for i in 0..n {
            if i > 0 {
                s.push(' ');
            }
            s.push_str(self.sample(rng));
        }
        s.push('.');
        s
    }
}

fn mbps(bytes: usize, d: Duration) -> f64 {
    bytes as f64 / 1e6 / d.as_secs_f64()
}

fn extraction(words: &Words) -> anyhow::Result<()> {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    // Below the 8 MiB cut of extracted text, so every byte is extracted.
    let target = 7_000_000;
    let mut paragraphs = Vec::new();
    let mut size = 0;
    while size < target {
        let p = words.sentence(&mut rng, 60);
        size += p.len() + 2;
        paragraphs.push(p);
    }
    let text = paragraphs.join("\n\n");
    let mut markdown = String::new();
    let mut html = String::from("<html><body>");
    let mut docx = String::from(r#"<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>"#);
    let mut odt = String::from(
        r#"<office:document-content xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0"><office:body><office:text>"#,
    );
    for (i, p) in paragraphs.iter().enumerate() {
        if i % 8 == 0 {
            let level = 1 + (i / 8) % 3;
            markdown.push_str(&format!("{} Section {i}\n\n", "#".repeat(level)));
            html.push_str(&format!("<h{level}>Section {i}</h{level}>"));
            docx.push_str(&format!(
                r#"<w:p><w:pPr><w:pStyle w:val="Heading{level}"/></w:pPr><w:r><w:t>Section {i}</w:t></w:r></w:p>"#
            ));
            odt.push_str(&format!(r#"<text:h text:outline-level="{level}">Section {i}</text:h>"#));
        }
        markdown.push_str(p);
        markdown.push_str("\n\n");
        html.push_str(&format!("<p>{p}</p>"));
        docx.push_str(&format!("<w:p><w:r><w:t>{p}</w:t></w:r></w:p>"));
        odt.push_str(&format!("<text:p>{p}</text:p>"));
    }
    html.push_str("</body></html>");
    docx.push_str("</w:body></w:document>");
    odt.push_str("</office:text></office:body></office:document-content>");
    let docx = zip_of("word/document.xml", &docx)?;
    let odt = zip_of("content.xml", &odt)?;
    let xlsx = xlsx_of(&paragraphs)?;
    let pptx = pptx_of(&paragraphs)?;
    let pdf_pages: Vec<String> = paragraphs.iter().take(400).map(|p| p.chars().take(900).collect()).collect();
    let pdf = pdf_of(&pdf_pages);

    let cases: [(&str, Format, &[u8]); 8] = [
        ("text", Format::Plain, text.as_bytes()),
        ("markdown", Format::Markdown, markdown.as_bytes()),
        ("html", Format::Html, html.as_bytes()),
        ("docx", Format::Docx, &docx),
        ("odt", Format::Odt, &odt),
        ("pdf", Format::Pdf, &pdf),
        ("xlsx", Format::Xlsx, &xlsx),
        ("pptx", Format::Pptx, &pptx),
    ];
    for (label, format, bytes) in cases {
        let t = Instant::now();
        let doc = extract::extract(format, bytes)?;
        let d_extract = t.elapsed();
        let t = Instant::now();
        let n = chunk::passages(&doc, MAX_PASSAGE_BYTES).len();
        let d_chunk = t.elapsed();
        println!(
            "   {label:<9} {:>6.1} MB in, {:>6.1} MB text: extract {:>7.1} MB/s (of input), chunk {:>7.1} MB/s, {n} passages, {} headings",
            bytes.len() as f64 / 1e6,
            doc.text.len() as f64 / 1e6,
            mbps(bytes.len(), d_extract),
            mbps(doc.text.len(), d_chunk),
            doc.headings.len()
        );
    }
    Ok(())
}

fn zip_of(name: &str, content: &str) -> anyhow::Result<Vec<u8>> {
    zip_parts(&[(name.to_string(), content.to_string())])
}

fn zip_parts(parts: &[(String, String)]) -> anyhow::Result<Vec<u8>> {
    let mut buf = std::io::Cursor::new(Vec::new());
    let mut w = zip::ZipWriter::new(&mut buf);
    for (name, content) in parts {
        w.start_file(name.as_str(), zip::write::SimpleFileOptions::default())?;
        w.write_all(content.as_bytes())?;
    }
    w.finish()?;
    Ok(buf.into_inner())
}

/// A workbook of the paragraphs as cells: sheets of at most 1000 rows (the per-sheet bound,
/// so every cell is read) of five cells each, inline strings and a number per row.
fn xlsx_of(paragraphs: &[String]) -> anyhow::Result<Vec<u8>> {
    let rows: Vec<&[String]> = paragraphs.chunks(5).collect();
    let sheets: Vec<&[&[String]]> = rows.chunks(1000).collect();
    let ns = r#"xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships""#;
    let mut workbook = format!("<workbook {ns}><sheets>");
    let mut rels = String::from(r#"<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">"#);
    let mut parts = Vec::new();
    for (i, sheet) in sheets.iter().enumerate() {
        let n = i + 1;
        workbook.push_str(&format!(r#"<sheet name="Sheet {n}" sheetId="{n}" r:id="rId{n}"/>"#));
        rels.push_str(&format!(
            r#"<Relationship Id="rId{n}" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet" Target="worksheets/sheet{n}.xml"/>"#
        ));
        let mut xml = format!("<worksheet {ns}><sheetData>");
        for (r, cells) in sheet.iter().enumerate() {
            xml.push_str(&format!(r#"<row r="{}">"#, r + 1));
            for cell in cells.iter() {
                xml.push_str(&format!(r#"<c t="inlineStr"><is><t>{cell}</t></is></c>"#));
            }
            xml.push_str(&format!("<c><v>{}</v></c></row>", r * 7));
        }
        xml.push_str("</sheetData></worksheet>");
        parts.push((format!("xl/worksheets/sheet{n}.xml"), xml));
    }
    workbook.push_str("</sheets></workbook>");
    rels.push_str("</Relationships>");
    parts.push(("xl/workbook.xml".into(), workbook));
    parts.push(("xl/_rels/workbook.xml.rels".into(), rels));
    parts.push((
        "_rels/.rels".into(),
        r#"<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="xl/workbook.xml"/></Relationships>"#.into(),
    ));
    zip_parts(&parts)
}

/// A deck of the paragraphs: eight per slide, the last one as the speaker notes.
fn pptx_of(paragraphs: &[String]) -> anyhow::Result<Vec<u8>> {
    let ns = r#"xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main" xmlns:p="http://schemas.openxmlformats.org/presentationml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships""#;
    let rel = |id: &str, kind: &str, target: &str| {
        format!(
            r#"<Relationship Id="{id}" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/{kind}" Target="{target}"/>"#
        )
    };
    let mut list = String::new();
    let mut rels = String::from(r#"<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">"#);
    let mut parts = Vec::new();
    for (i, slide) in paragraphs.chunks(8).enumerate() {
        let n = i + 1;
        list.push_str(&format!(r#"<p:sldId id="{}" r:id="rId{n}"/>"#, 255 + n));
        rels.push_str(&rel(&format!("rId{n}"), "slide", &format!("slides/slide{n}.xml")));
        let body: String = slide[..slide.len().saturating_sub(1)]
            .iter()
            .map(|p| format!("<a:p><a:r><a:t>{p}</a:t></a:r></a:p>"))
            .collect();
        let notes = slide.last().map(String::as_str).unwrap_or_default();
        parts.push((
            format!("ppt/slides/slide{n}.xml"),
            format!("<p:sld {ns}><p:cSld><p:spTree><p:sp><p:txBody>{body}</p:txBody></p:sp></p:spTree></p:cSld></p:sld>"),
        ));
        parts.push((
            format!("ppt/slides/_rels/slide{n}.xml.rels"),
            format!(
                r#"<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">{}</Relationships>"#,
                rel("rId1", "notesSlide", &format!("../notesSlides/notesSlide{n}.xml"))
            ),
        ));
        parts.push((
            format!("ppt/notesSlides/notesSlide{n}.xml"),
            format!(
                r#"<p:notes {ns}><p:cSld><p:spTree><p:sp><p:nvSpPr><p:nvPr><p:ph type="body" idx="1"/></p:nvPr></p:nvSpPr><p:txBody><a:p><a:r><a:t>{notes}</a:t></a:r></a:p></p:txBody></p:sp></p:spTree></p:cSld></p:notes>"#
            ),
        ));
    }
    rels.push_str("</Relationships>");
    parts.push((
        "ppt/presentation.xml".into(),
        format!("<p:presentation {ns}><p:sldIdLst>{list}</p:sldIdLst></p:presentation>"),
    ));
    parts.push(("ppt/_rels/presentation.xml.rels".into(), rels));
    zip_parts(&parts)
}

/// A minimal valid PDF, one page per entry, Helvetica text.
fn pdf_of(pages: &[String]) -> Vec<u8> {
    let n = pages.len();
    let mut objects: Vec<String> = vec![
        "<< /Type /Catalog /Pages 2 0 R >>".into(),
        format!(
            "<< /Type /Pages /Kids [{}] /Count {n} >>",
            (0..n).map(|i| format!("{} 0 R", 4 + 2 * i)).collect::<Vec<_>>().join(" ")
        ),
        "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>".into(),
    ];
    for (i, text) in pages.iter().enumerate() {
        let stream = format!("BT /F1 10 Tf 40 800 Td ({text}) Tj ET");
        objects.push(format!(
            "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 842] /Resources << /Font << /F1 3 0 R >> >> /Contents {} 0 R >>",
            5 + 2 * i
        ));
        objects.push(format!("<< /Length {} >>\nstream\n{stream}\nendstream", stream.len()));
    }
    let mut out = b"%PDF-1.4\n".to_vec();
    let mut offsets = Vec::new();
    for (i, body) in objects.iter().enumerate() {
        offsets.push(out.len());
        out.extend_from_slice(format!("{} 0 obj\n{body}\nendobj\n", i + 1).as_bytes());
    }
    let xref = out.len();
    out.extend_from_slice(format!("xref\n0 {}\n0000000000 65535 f \n", objects.len() + 1).as_bytes());
    for off in offsets {
        out.extend_from_slice(format!("{off:010} 00000 n \n").as_bytes());
    }
    out.extend_from_slice(format!("trailer\n<< /Size {} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n", objects.len() + 1).as_bytes());
    out
}

/// Loads `total` passages, PASSAGES_PER_FILE per file id, in transactions of 1,000 files.
/// Returns how many unique rare words were planted.
fn build(store: &mut Store, words: &Words, total: usize) -> anyhow::Result<usize> {
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let started = Instant::now();
    let files = total.div_ceil(PASSAGES_PER_FILE);
    let mut rare = 0;
    let mut made = 0;
    for batch in (0..files).collect::<Vec<_>>().chunks(1000) {
        store.bulk(|s| {
            for f in batch {
                let mut ps = Vec::with_capacity(PASSAGES_PER_FILE);
                for k in 0..PASSAGES_PER_FILE.min(total - made) {
                    let mut body = words.sentence(&mut rng, WORDS_PER_PASSAGE);
                    if (made + k) % RARE_EVERY == 0 {
                        body.push_str(&format!(" zq{rare}"));
                        rare += 1;
                    }
                    ps.push(Passage {
                        heading: format!("Part {} > {}", f % 50, words.sample(&mut rng)),
                        body,
                        section_offset: k * 300,
                    });
                }
                made += ps.len();
                s.replace_file(FIRST_FILE_ID + *f as i64, "etag", "text/plain", 4096, &ps)?;
            }
            Ok(())
        })?;
        if made % 100_000 == 0 {
            println!("   {made:>8} passages, {:>6.1} s", started.elapsed().as_secs_f64());
        }
    }
    let load = started.elapsed();
    let t = Instant::now();
    store.optimize()?;
    println!(
        "   loaded {made} passages in {:.1} s ({:.0} passages/s), optimize {:.1} s",
        load.as_secs_f64(),
        made as f64 / load.as_secs_f64(),
        t.elapsed().as_secs_f64()
    );
    Ok(rare)
}

fn query_sets(words: &Words, rare: usize) -> Vec<(&'static str, Vec<String>)> {
    let w = |i: usize| words.words[i].clone();
    let rare_q: Vec<String> = (0..200).map(|i| format!("zq{}", (i * 7919) % rare.max(1))).collect();
    let rare_mixed: Vec<String> = (0..200).map(|i| format!("the zq{} of", (i * 104_729) % rare.max(1))).collect();
    let medium: Vec<String> = (0..200).map(|i| format!("{} {}", w(300 + i), w(301 + i * 3))).collect();
    let medium_single: Vec<String> = (0..200).map(|i| w(1000 + i * 5)).collect();
    let common: Vec<String> = (0..200).map(|i| w(i % 10)).collect();
    let common_pairs: Vec<String> = (0..200).map(|i| format!("{} {}", w(i % 10), w((i + 3) % 10))).collect();
    vec![
        ("rare word", rare_q),
        ("rare word + 2 stop words", rare_mixed),
        ("medium word", medium_single),
        ("two medium words", medium),
        ("commonest word", common),
        ("two commonest words", common_pairs),
    ]
}

fn df_range(store: &Store, queries: &[String]) -> anyhow::Result<(usize, usize)> {
    let mut lo = usize::MAX;
    let mut hi = 0;
    for q in queries.iter().take(20) {
        for t in query::terms(q)? {
            let n = store.match_count_capped(&query::quote(&t), 10_000_000)?;
            lo = lo.min(n);
            hi = hi.max(n);
        }
    }
    Ok((lo, hi))
}

fn time_all<F: FnMut(&str) -> Result<usize, mcp_nextcloud::index::IndexError>>(
    queries: &[String],
    mut f: F,
) -> anyhow::Result<Vec<Duration>> {
    let mut out = Vec::with_capacity(queries.len());
    for q in queries {
        let t = Instant::now();
        f(q)?;
        out.push(t.elapsed());
    }
    Ok(out)
}

fn report(label: &str, times: &[Duration]) {
    let mut v: Vec<f64> = times.iter().map(|d| d.as_secs_f64() * 1000.0).collect();
    v.sort_by(f64::total_cmp);
    let at = |p: f64| v[((v.len() as f64 - 1.0) * p).round() as usize];
    println!(
        "   {label:<58} n={:<4} p50 {:>7.2} ms  p95 {:>7.2} ms  max {:>7.2} ms",
        v.len(),
        at(0.5),
        at(0.95),
        at(1.0)
    );
}

fn end_to_end(db: &std::path::Path, sets: &[(&'static str, Vec<String>)]) -> anyhow::Result<()> {
    use rmcp::ServiceExt;
    use rmcp::model::CallToolRequestParams;
    use rmcp::transport::StreamableHttpClientTransport;
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
    use test_harness::mcp_nextcloud::McpNextcloud;
    use test_harness::standin::Standin;

    let nc = Standin::start_seeded();
    let db = db.to_string_lossy().into_owned();
    let mcp = McpNextcloud::start_with(nc.url(), &[("MCP_INDEX_PATH", &db), ("RUST_LOG", "warn")]);
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    rt.block_on(async {
        let config = StreamableHttpClientTransportConfig::with_uri(mcp.url()).auth_header(nc.app_password("alice").to_string());
        let client = ().serve(StreamableHttpClientTransport::from_config(config)).await?;
        let call = |q: String| {
            let client = &client;
            async move {
                let mut args = serde_json::Map::new();
                args.insert("query".into(), q.into());
                let t = Instant::now();
                let r = client
                    .call_tool(CallToolRequestParams::new("files_grep").with_arguments(args))
                    .await?;
                anyhow::ensure!(r.is_error != Some(true), "files_grep failed: {:?}", r.content);
                Ok::<_, anyhow::Error>(t.elapsed())
            }
        };
        // The first call also warms alice's three fixture files into the index.
        let first = call("forty thousand".into()).await?;
        println!(
            "   first call (lists alice's files, extracts 3): {:.1} ms",
            first.as_secs_f64() * 1000.0
        );
        let mut own = Vec::new();
        for _ in 0..50 {
            own.push(call("forty thousand".into()).await?);
        }
        report("alice's own document (1 candidate, verified)", &own);
        for (label, queries) in sets {
            let mut times = Vec::new();
            for q in queries.iter().take(40) {
                times.push(call(q.clone()).await?);
            }
            report(&format!("{label} (candidates nobody may open)"), &times);
        }
        client.cancel().await?;
        Ok::<_, anyhow::Error>(())
    })?;
    drop(mcp);
    Ok(())
}
