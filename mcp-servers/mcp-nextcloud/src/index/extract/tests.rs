//! Extraction per format, with fixtures built here: DOCX and ODT as real zip archives,
//! PDF as a minimal valid file with a correct cross-reference table.

use std::io::Write;

use super::*;

fn zip_of(parts: &[(&str, &str)]) -> Vec<u8> {
    let mut buf = std::io::Cursor::new(Vec::new());
    {
        let mut w = zip::ZipWriter::new(&mut buf);
        for (name, content) in parts {
            w.start_file(*name, zip::write::SimpleFileOptions::default()).expect("zip entry");
            w.write_all(content.as_bytes()).expect("zip write");
        }
        w.finish().expect("zip finish");
    }
    buf.into_inner()
}

/// A one-page PDF per entry of `pages`, each page showing its text in Helvetica.
pub(crate) fn pdf_of(pages: &[&str]) -> Vec<u8> {
    let n = pages.len();
    // Objects: 1 catalog, 2 pages, 3 font, then (page, content) pairs.
    let mut objects: Vec<String> = Vec::new();
    objects.push("<< /Type /Catalog /Pages 2 0 R >>".into());
    let kids: Vec<String> = (0..n).map(|i| format!("{} 0 R", 4 + 2 * i)).collect();
    objects.push(format!("<< /Type /Pages /Kids [{}] /Count {n} >>", kids.join(" ")));
    objects.push("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>".into());
    for (i, text) in pages.iter().enumerate() {
        let stream = format!("BT /F1 12 Tf 72 712 Td ({text}) Tj ET");
        objects.push(format!(
            "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> /Contents {} 0 R >>",
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

fn titles(doc: &Extracted) -> Vec<(u8, &str)> {
    doc.headings.iter().map(|h| (h.level, h.title.as_str())).collect()
}

/// Every heading's `start` points at its own title in the text.
fn assert_starts_point_at_titles(doc: &Extracted) {
    for h in &doc.headings {
        assert!(
            doc.text[h.start..].trim_start_matches('#').trim_start().starts_with(&h.title),
            "heading {:?} does not start at its title: {:?}",
            h.title,
            &doc.text[h.start..(h.start + 40).min(doc.text.len())]
        );
    }
}

#[test]
fn markdown_keeps_the_file_and_finds_real_headings() {
    let src = "# Plan: ship the agent\n\nIntro.\n\n```\n# not a heading\n```\n\nBudget\n------\n\nThe budget is forty thousand euros.\n";
    let doc = extract(Format::Markdown, src.as_bytes()).expect("extracts");
    assert_eq!(doc.text, src, "markdown text is the file itself");
    assert_eq!(titles(&doc), [(1, "Plan: ship the agent"), (2, "Budget")]);
    assert_starts_point_at_titles(&doc);
}

#[test]
fn html_headings_become_structure_and_scripts_vanish() {
    let html = "<html><head><title>t</title><script>steal()</script></head><body><h1>Plan</h1><p>Intro &amp; more</p><h2>Budget</h2><p>The budget is <b>forty</b> thousand.</p></body></html>";
    let doc = extract(Format::Html, html.as_bytes()).expect("extracts");
    assert_eq!(titles(&doc), [(1, "Plan"), (2, "Budget")]);
    assert!(doc.text.contains("Intro & more"));
    assert!(doc.text.contains("forty"));
    assert!(!doc.text.contains("steal"));
    assert_starts_point_at_titles(&doc);
}

#[test]
fn docx_paragraphs_heading_styles_and_localised_style_ids() {
    let styles = r#"<w:styles xmlns:w="w"><w:style w:type="paragraph" w:styleId="berschrift1"><w:name w:val="heading 1"/></w:style><w:style w:type="paragraph" w:styleId="Custom"><w:name w:val="Fancy"/><w:pPr><w:outlineLvl w:val="1"/></w:pPr></w:style></w:styles>"#;
    let document = r#"<w:document xmlns:w="w"><w:body>
        <w:p><w:pPr><w:pStyle w:val="berschrift1"/></w:pPr><w:r><w:t>Plan</w:t></w:r></w:p>
        <w:p><w:r><w:t xml:space="preserve">Intro &amp; </w:t></w:r><w:r><w:t>more</w:t><w:tab/><w:t>x</w:t></w:r></w:p>
        <w:p><w:pPr><w:pStyle w:val="Custom"/></w:pPr><w:r><w:t>Budget</w:t></w:r></w:p>
        <w:p><w:r><w:instrText>PAGE</w:instrText><w:t>The budget is forty thousand.</w:t></w:r></w:p>
        <w:p><w:pPr><w:pStyle w:val="Heading3"/></w:pPr><w:r><w:t>Detail</w:t></w:r></w:p>
    </w:body></w:document>"#;
    let bytes = zip_of(&[("word/styles.xml", styles), ("word/document.xml", document)]);
    let doc = extract(Format::Docx, &bytes).expect("extracts");
    assert_eq!(titles(&doc), [(1, "Plan"), (2, "Budget"), (3, "Detail")]);
    assert!(doc.text.contains("Intro & more\tx"));
    assert!(doc.text.contains("The budget is forty thousand."));
    assert!(!doc.text.contains("PAGE"), "field codes are not text");
    assert_starts_point_at_titles(&doc);
}

#[test]
fn odt_outline_levels_spaces_and_lists() {
    let content = r#"<office:document-content xmlns:office="o" xmlns:text="t"><office:body><office:text>
        <text:h text:outline-level="1">Plan</text:h>
        <text:p>a<text:s text:c="3"/>b<text:tab/>c</text:p>
        <text:list><text:list-item><text:p>item <text:span>one</text:span></text:p></text:list-item></text:list>
        <text:h text:outline-level="2">Budget</text:h>
        <text:p>The budget is forty thousand &#8364;.</text:p>
    </office:text></office:body></office:document-content>"#;
    let doc = extract(Format::Odt, &zip_of(&[("content.xml", content)])).expect("extracts");
    assert_eq!(titles(&doc), [(1, "Plan"), (2, "Budget")]);
    assert!(doc.text.contains("a   b\tc"));
    assert!(doc.text.contains("item one"));
    assert!(doc.text.contains("forty thousand €."));
    assert_starts_point_at_titles(&doc);
}

#[test]
fn pdf_pages_become_sections() {
    let doc = extract(Format::Pdf, &pdf_of(&["Plan for the year", "The budget is forty thousand"])).expect("extracts");
    assert_eq!(titles(&doc), [(1, "Page 1"), (1, "Page 2")]);
    let page2 = &doc.text[doc.headings[1].start..];
    assert!(page2.contains("forty thousand"), "{:?}", doc.text);
    assert!(!page2.contains("Plan for the year"));
}

#[test]
fn broken_documents_are_errors_not_panics() {
    for (format, bytes) in [
        (Format::Pdf, b"%PDF-1.4 garbage".to_vec()),
        (Format::Pdf, pdf_of(&["x"])[..60].to_vec()),
        (Format::Docx, b"not a zip".to_vec()),
        (Format::Docx, zip_of(&[("other.xml", "<a/>")])),
        (Format::Odt, zip_of(&[("content.xml", "<a><b></a>")])),
    ] {
        let err = extract(format, &bytes).expect_err("must fail");
        assert!(matches!(err, ExtractError::Malformed(_)), "{format:?}: {err}");
    }
    assert!(matches!(
        extract(Format::Plain, &vec![b'a'; MAX_INPUT_BYTES + 1]),
        Err(ExtractError::TooLarge)
    ));
}

#[test]
fn long_text_is_cut_at_a_character_boundary() {
    let text = "é".repeat(MAX_TEXT_BYTES / 2 + 10);
    let doc = extract(Format::Plain, text.as_bytes()).expect("extracts");
    assert!(doc.truncated && doc.text.len() <= MAX_TEXT_BYTES);
}

#[test]
fn formats_from_mime_and_name() {
    assert_eq!(Format::detect("text/markdown", "a.md"), Some(Format::Markdown));
    assert_eq!(Format::detect("text/plain", "plan.md"), Some(Format::Markdown));
    assert_eq!(Format::detect("application/octet-stream", "a.DOCX"), Some(Format::Docx));
    assert_eq!(Format::detect("text/html; charset=utf-8", "x"), Some(Format::Html));
    assert_eq!(Format::detect("image/png", "a.png"), None);
    assert_eq!(
        Format::detect("image/png", "a.md"),
        None,
        "a known non-text type is not guessed from its name"
    );
}

#[test]
fn char_offsets_round_trip() {
    let doc = extract(Format::Markdown, "é\n# Ü\nx".as_bytes()).expect("extracts");
    let h = &doc.headings[0];
    assert_eq!(doc.char_offset(h.start), 2);
    assert!(doc.text_from_char(2).starts_with("# Ü"));
    assert_eq!(doc.text_from_char(100), "");
}

#[test]
fn html_is_read_like_a_browser_reads_it() {
    let html = "<!doctype html><html><head><title>Tab title</title><style>p{x:1}</style></head><body>\
        <script>if (a<b && c>d) { document.write('<h1>fake</h1>') }</script>\
        <h2>  Spaced\n  heading </h2>\
        <p>one   two\nthree &euro;&#233;&amp;<br>next line<p>unclosed paragraph\
        <pre>keep   this\n  indentation</pre>\
        <ul><li>first<li>second</ul>\
        <table><tr><td>a</td><td>b</td></tr><tr><td>c</td><td>d</td></tr></table>\
        <h3></h3><noscript>enable js</noscript><template><p>hidden</p></template>";
    let doc = extract(Format::Html, html.as_bytes()).expect("extracts");
    assert_eq!(titles(&doc), [(2, "Spaced heading")]);
    assert_starts_point_at_titles(&doc);
    let t = &doc.text;
    for gone in ["Tab title", "p{x:1}", "fake", "document.write", "enable js", "hidden", "###"] {
        assert!(!t.contains(gone), "{gone:?} leaked into {t:?}");
    }
    for kept in [
        "one two three €é&\nnext line",
        "unclosed paragraph",
        "keep   this\n  indentation",
        "first\nsecond",
        "a\tb\nc\td",
    ] {
        assert!(t.contains(kept), "{kept:?} missing from {t:?}");
    }
}

/// The committed office fixtures (made with LibreOffice from testdata/office/src).
fn fixture(name: &str) -> Vec<u8> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata/office")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn zip_bytes(parts: &[(&str, &[u8])]) -> Vec<u8> {
    let mut buf = std::io::Cursor::new(Vec::new());
    {
        let mut w = zip::ZipWriter::new(&mut buf);
        for (name, content) in parts {
            w.start_file(*name, zip::write::SimpleFileOptions::default()).expect("zip entry");
            w.write_all(content).expect("zip write");
        }
        w.finish().expect("zip finish");
    }
    buf.into_inner()
}

/// A minimal XLSX around one sheet's XML.
fn xlsx_of(sheet: &[u8]) -> Vec<u8> {
    let workbook = br#"<workbook xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"><sheets><sheet name="Data" sheetId="1" r:id="rId1"/></sheets></workbook>"#;
    let rels = br#"<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet" Target="worksheets/sheet1.xml"/></Relationships>"#;
    let types = br#"<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Override PartName="/xl/workbook.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/><Override PartName="/xl/worksheets/sheet1.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/></Types>"#;
    let root = br#"<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="xl/workbook.xml"/></Relationships>"#;
    zip_bytes(&[
        ("[Content_Types].xml", types),
        ("_rels/.rels", root),
        ("xl/workbook.xml", workbook),
        ("xl/_rels/workbook.xml.rels", rels),
        ("xl/worksheets/sheet1.xml", sheet),
    ])
}

#[test]
fn xlsx_sheets_become_tables_with_cached_formula_values() {
    let doc = extract(Format::Xlsx, &fixture("q3-forecast.xlsx")).expect("extracts");
    assert_eq!(titles(&doc), [(1, "Forecast"), (1, "Assumptions")]);
    assert_starts_point_at_titles(&doc);
    let forecast = &doc.text[..doc.headings[1].start];
    assert!(
        forecast.contains("| | A | B |\n| --- | --- | --- |\n| 1 | Item | Q3 amount (EUR) |"),
        "{forecast}"
    );
    assert!(
        forecast.contains("| 4 | Support \\| on call | 4250.5 |"),
        "a pipe in a cell is escaped: {forecast}"
    );
    assert!(
        forecast.contains("| 5 | Total | 24750.5 |"),
        "the formula's cached value: {forecast}"
    );
    assert!(!doc.text.contains("SUM("), "formulas are values, not source");
    assert!(doc.text[doc.headings[1].start..].contains("| 2 | Growth | 0.12 |"));
}

#[test]
fn ods_reads_exactly_like_the_same_workbook_in_xlsx() {
    let ods = extract(Format::Ods, &fixture("q3-forecast.ods")).expect("extracts");
    let xlsx = extract(Format::Xlsx, &fixture("q3-forecast.xlsx")).expect("extracts");
    assert_eq!(ods, xlsx);
}

#[test]
fn a_sheet_window_reads_past_the_cut() {
    let window = SheetWindow {
        sheet: Some("Forecast".into()),
        first_row: 4,
    };
    let doc = extract_window(Format::Xlsx, &fixture("q3-forecast.xlsx"), &window).expect("extracts");
    assert_eq!(titles(&doc), [(1, "Forecast")]);
    assert!(
        !doc.text.contains("Licences") && doc.text.contains("| 5 | Total | 24750.5 |"),
        "{}",
        doc.text
    );
    let missing = SheetWindow {
        sheet: Some("Nope".into()),
        first_row: 1,
    };
    let err = extract_window(Format::Ods, &fixture("q3-forecast.ods"), &missing).expect_err("no such sheet");
    assert!(err.to_string().contains("no sheet named \"Nope\""), "{err}");
}

#[test]
fn csv_is_a_table_with_its_own_delimiter() {
    let doc = extract(
        Format::Csv,
        "\u{feff}Name;Amount\n\"Smith; John\";12\nA|B;\"two\nlines\"\n".as_bytes(),
    )
    .expect("extracts");
    assert!(doc.headings.is_empty());
    assert!(doc.text.contains("| 1 | Name | Amount |"), "{}", doc.text);
    assert!(doc.text.contains("| 2 | Smith; John | 12 |"), "{}", doc.text);
    assert!(doc.text.contains("| 3 | A\\|B | two lines |"), "{}", doc.text);
    assert_eq!(Format::detect("text/csv", "a.csv"), Some(Format::Csv));
    assert_eq!(Format::detect("text/plain", "a.csv"), Some(Format::Csv));
    assert_eq!(Format::readable("application/octet-stream", "a.csv"), Some(Format::Csv));
}

#[test]
fn a_million_cell_sheet_costs_the_bound_not_the_sheet() {
    let mut sheet = String::from(r#"<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>"#);
    for r in 1..=10_000 {
        sheet.push_str(&format!("<row r=\"{r}\">"));
        for c in 0..100u32 {
            sheet.push_str(&format!("<c t=\"n\"><v>{}</v></c>", c));
        }
        sheet.push_str("</row>");
    }
    sheet.push_str("</sheetData></worksheet>");
    let started = std::time::Instant::now();
    let doc = extract(Format::Xlsx, &xlsx_of(sheet.as_bytes())).expect("extracts");
    let rows = doc
        .text
        .lines()
        .filter(|l| l.starts_with("| ") && !l.starts_with("| |") && !l.starts_with("| ---"))
        .count();
    assert_eq!(rows, MAX_SHEET_ROWS);
    assert!(
        doc.text.contains(&format!("the table continues at row {}", MAX_SHEET_ROWS + 1)),
        "{}",
        &doc.text[doc.text.len() - 300..]
    );
    assert!(doc.text.contains(&format!("only {MAX_SHEET_COLS} columns are shown")));
    assert!(doc.text.contains("files_read {path, sheet: \"Data\", row: 1001}"));
    eprintln!("1M-cell sheet read in {:?}", started.elapsed());
}

#[test]
fn ods_repeat_counts_cannot_declare_a_billion_cells() {
    let content = r#"<office:document-content xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0" xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0"><office:body><office:spreadsheet><table:table table:name="Bomb"><table:table-row table:number-rows-repeated="1048576"><table:table-cell table:number-columns-repeated="16384" office:value-type="float" office:value="1"><text:p>1</text:p></table:table-cell></table:table-row></table:table></office:spreadsheet></office:body></office:document-content>"#;
    let bytes = zip_bytes(&[
        ("mimetype", b"application/vnd.oasis.opendocument.spreadsheet"),
        ("content.xml", content.as_bytes()),
    ]);
    assert!(matches!(extract(Format::Ods, &bytes), Err(ExtractError::TooLarge)));
}

/// Runs an ODS extraction on its own thread and fails the test, instead of hanging it, when
/// the extraction does not come back (calamine 0.38 loops for ever on some inputs).
fn extract_ods_within(content: &str, limit: std::time::Duration) -> Result<Extracted, ExtractError> {
    let manifest = br#"<manifest:manifest xmlns:manifest="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0"><manifest:file-entry manifest:full-path="/" manifest:media-type="application/vnd.oasis.opendocument.spreadsheet"/><manifest:file-entry manifest:full-path="content.xml" manifest:media-type="text/xml"/></manifest:manifest>"#;
    let bytes = zip_bytes(&[
        ("mimetype", b"application/vnd.oasis.opendocument.spreadsheet"),
        ("META-INF/manifest.xml", manifest),
        ("content.xml", content.as_bytes()),
    ]);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || tx.send(extract(Format::Ods, &bytes)));
    rx.recv_timeout(limit).expect("the extraction came back")
}

const ODS_HEAD: &str = r#"<office:document-content xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0" xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0"><office:body><office:spreadsheet>"#;
const ODS_TAIL: &str = "</office:spreadsheet></office:body></office:document-content>";

#[test]
fn ods_content_that_ends_inside_an_element_is_refused_not_read_for_ever() {
    // Found by the extract_office fuzz target: calamine's table reader (and its annotation
    // reader) wait for their end tag and never look for the end of the input.
    let limit = std::time::Duration::from_secs(30);
    let row = r#"<table:table table:name="S"><table:table-row><table:table-cell office:value-type="float" office:value="1"><text:p>1</text:p></table:table-cell></table:table-row>"#;
    let cut_in_table = format!("{ODS_HEAD}{row}");
    let cut_in_note =
        format!(r#"{ODS_HEAD}<table:table table:name="S"><table:table-row><table:table-cell><office:annotation><text:p>note"#);
    for content in [cut_in_table, cut_in_note] {
        let err = extract_ods_within(&content, limit).expect_err("refused");
        assert!(matches!(err, ExtractError::Malformed(ref m) if m.contains("unclosed")), "{err}");
    }
    // The same sheet, complete, still reads.
    let whole = format!("{ODS_HEAD}{row}</table:table>{ODS_TAIL}");
    let doc = extract_ods_within(&whole, limit).expect("extracts");
    assert!(doc.text.contains("| 1 | 1 |"), "{}", doc.text);
}

#[test]
fn ods_space_counts_cannot_declare_a_billion_spaces() {
    let cell = |count: &str| {
        format!(
            r#"{ODS_HEAD}<table:table table:name="S"><table:table-row><table:table-cell office:value-type="string"><text:p>a<text:s text:c="{count}"/>b</text:p></table:table-cell></table:table-row></table:table>{ODS_TAIL}"#
        )
    };
    let limit = std::time::Duration::from_secs(30);
    let err = extract_ods_within(&cell("4000000000"), limit).expect_err("refused");
    assert!(matches!(err, ExtractError::TooLarge), "{err}");
    // A few spaces are what the element is for.
    let doc = extract_ods_within(&cell("3"), limit).expect("extracts");
    assert!(doc.text.contains("a   b"), "{}", doc.text);
}

#[test]
fn a_pdf_page_that_is_its_own_parent_is_refused_not_read_for_ever() {
    // Found by the extract_pdf fuzz target: the page's resources cannot be found, so
    // pdf-extract looks for them up the page tree, which loops back to the page.
    let bytes = include_bytes!("../../../fuzz/seeds/extract_pdf/page-is-its-own-parent.pdf").to_vec();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || tx.send(extract(Format::Pdf, &bytes)));
    let err = rx
        .recv_timeout(std::time::Duration::from_secs(30))
        .expect("came back")
        .expect_err("refused");
    assert!(matches!(err, ExtractError::Malformed(ref m) if m.contains("loops back")), "{err}");
}

#[test]
fn a_panic_inside_the_spreadsheet_reader_is_a_failed_extraction() {
    // Found by the extract_office fuzz target: calamine multiplies a row number of 37 digits
    // without a check (a panic with overflow checks, as in tests and the fuzz build).
    let sheet = br#"<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData><row r="9999999999999999999999999999999999991"><c r="A1" t="inlineStr"><is><t>x</t></is></c></row></sheetData></worksheet>"#;
    match extract(Format::Xlsx, &xlsx_of(sheet)) {
        // Where calamine does not panic (overflow checks off), any answer but a panic will do.
        Ok(_) => {}
        Err(ExtractError::Malformed(_)) => {}
        Err(e) => panic!("{e}"),
    }
}

#[test]
fn zip_bombs_fail_as_too_large_in_every_office_reader() {
    // Members that inflate one MiB past the part cap (testdata/office/src/make-bomb.py).
    let bomb = fixture("bomb.zip");
    assert!(bomb.len() < MAX_INPUT_BYTES, "the bomb itself is small: {}", bomb.len());
    for format in [Format::Xlsx, Format::Ods, Format::Pptx, Format::Odp] {
        let err = extract(format, &bomb).expect_err("refused");
        assert!(matches!(err, ExtractError::TooLarge), "{format:?}: {err}");
    }
}

#[test]
fn deeply_nested_xml_is_read_without_recursion() {
    let depth = 200_000;
    let mut slide =
        String::from(r#"<p:sld xmlns:p="p" xmlns:a="a"><p:cSld><p:spTree><p:sp><p:txBody><a:p><a:r><a:t>deep text</a:t></a:r></a:p>"#);
    slide.push_str(&"<a:x>".repeat(depth));
    slide.push_str(&"</a:x>".repeat(depth));
    slide.push_str("</p:txBody></p:sp></p:spTree></p:cSld></p:sld>");
    let presentation =
        r#"<p:presentation xmlns:p="p" xmlns:r="r"><p:sldIdLst><p:sldId id="256" r:id="rId2"/></p:sldIdLst></p:presentation>"#;
    let rels = r#"<Relationships xmlns="x"><Relationship Id="rId2" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/slide" Target="slides/slide1.xml"/></Relationships>"#;
    let bytes = zip_bytes(&[
        ("ppt/presentation.xml", presentation.as_bytes()),
        ("ppt/_rels/presentation.xml.rels", rels.as_bytes()),
        ("ppt/slides/slide1.xml", slide.as_bytes()),
    ]);
    let doc = extract(Format::Pptx, &bytes).expect("extracts");
    assert_eq!(doc.text, "# Slide 1\n\ndeep text\n");
    let content = format!(
        r#"<office:document-content xmlns:office="o" xmlns:table="t" xmlns:text="x"><office:body><office:spreadsheet><table:table table:name="S">{}{}</table:table></office:spreadsheet></office:body></office:document-content>"#,
        "<text:span>".repeat(depth),
        "</text:span>".repeat(depth)
    );
    let ods = zip_bytes(&[("content.xml", content.as_bytes())]);
    // Either read or refused as malformed; never a stack overflow.
    let _ = extract(Format::Ods, &ods);
}

#[test]
fn pptx_slides_in_order_with_their_speaker_notes() {
    let doc = extract(Format::Pptx, &fixture("board-deck.pptx")).expect("extracts");
    assert_eq!(titles(&doc), [(1, "Slide 1"), (1, "Slide 2")]);
    assert_starts_point_at_titles(&doc);
    let one = &doc.text[..doc.headings[1].start];
    let two = &doc.text[doc.headings[1].start..];
    assert!(
        one.contains("Board deck Q3\n") && one.contains("Revenue grew twelve percent\n"),
        "{one}"
    );
    assert!(one.contains("\nSpeaker notes:\nThank the sales team first.\n"), "{one}");
    assert!(
        two.contains("Hire two engineers\n") && two.contains("\nSpeaker notes:\nThe budget is approved until March.\n"),
        "{two}"
    );
}

#[test]
fn odp_reads_exactly_like_the_same_deck_in_pptx() {
    let odp = extract(Format::Odp, &fixture("board-deck.odp")).expect("extracts");
    let pptx = extract(Format::Pptx, &fixture("board-deck.pptx")).expect("extracts");
    assert_eq!(odp, pptx);
}

#[test]
fn office_formats_from_mime_and_name() {
    assert_eq!(
        Format::detect("application/vnd.openxmlformats-officedocument.spreadsheetml.sheet", "x"),
        Some(Format::Xlsx)
    );
    assert_eq!(
        Format::detect("application/vnd.ms-excel.sheet.macroEnabled.12", "x"),
        Some(Format::Xlsx)
    );
    assert_eq!(Format::detect("application/octet-stream", "Q3.XLSM"), Some(Format::Xlsx));
    assert_eq!(
        Format::detect("application/vnd.oasis.opendocument.spreadsheet", "x"),
        Some(Format::Ods)
    );
    assert_eq!(Format::readable("application/octet-stream", "deck.pptx"), Some(Format::Pptx));
    assert_eq!(
        Format::readable("application/vnd.oasis.opendocument.presentation", "x"),
        Some(Format::Odp)
    );
    assert!(Format::NAME_PATTERNS.contains(&"%.pptx") && Format::NAME_PATTERNS.contains(&"%.ods"));
}
