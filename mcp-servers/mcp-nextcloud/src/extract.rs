//! Turning file bytes into text a model can read.
//!
//! HTML (to text with html2text), Markdown and plain text as text; PDF with pdf-extract;
//! DOCX and ODT by reading their XML parts (zip + quick-xml). Everything else (images,
//! archives, unknown binaries) is described by type and size, never dumped. Extraction is
//! CPU work on untrusted input: callers run it on a blocking thread, and a panic inside a
//! parser becomes a described failure, not a crash. This module never fetches anything.

use std::io::Read;

use quick_xml::events::Event;

/// The largest decompressed XML part read from a DOCX/ODT (zip-bomb guard).
const MAX_XML_PART: u64 = 32 * 1024 * 1024;

/// What extraction produced.
#[derive(Debug, PartialEq)]
pub enum Extracted {
    /// Readable text and the format it came from (`text`, `html`, `markdown`, `pdf`, `docx`, `odt`).
    Text { text: String, format: &'static str },
    /// Not text: described only. `reason` says why.
    Binary { reason: String },
}

/// Which extractor a file gets, from its MIME type and name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Plain,
    Markdown,
    Html,
    Pdf,
    Docx,
    Odt,
    Other,
}

/// Picks the extractor. The name's extension wins over a generic MIME type
/// (`application/octet-stream`), because servers often send that for text.
pub fn format_of(mime: &str, name: &str) -> Format {
    let mime = mime.split(';').next().unwrap_or("").trim().to_ascii_lowercase();
    let ext = name.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase()).unwrap_or_default();
    match (mime.as_str(), ext.as_str()) {
        (_, "md" | "markdown") | ("text/markdown", _) => Format::Markdown,
        ("text/html" | "application/xhtml+xml", _) | (_, "html" | "htm" | "xhtml") => Format::Html,
        ("application/pdf", _) | (_, "pdf") => Format::Pdf,
        ("application/vnd.openxmlformats-officedocument.wordprocessingml.document", _) | (_, "docx") => Format::Docx,
        ("application/vnd.oasis.opendocument.text", _) | (_, "odt") => Format::Odt,
        (m, _) if m.starts_with("text/") => Format::Plain,
        ("application/json" | "application/xml" | "application/x-yaml" | "application/yaml" | "application/javascript" | "application/x-sh" | "application/csv", _) => Format::Plain,
        (_, "txt" | "csv" | "tsv" | "json" | "xml" | "yaml" | "yml" | "toml" | "ini" | "log" | "rs" | "py" | "js" | "ts" | "sh" | "ics" | "vcf") => Format::Plain,
        _ => Format::Other,
    }
}

/// Extracts text from `bytes`. Pure and synchronous; run it off the async threads.
pub fn extract(bytes: &[u8], mime: &str, name: &str) -> Extracted {
    match format_of(mime, name) {
        Format::Plain => as_text(bytes, "text"),
        Format::Markdown => as_text(bytes, "markdown"),
        Format::Html => match html2text::from_read(bytes, 100) {
            Ok(text) => Extracted::Text { text, format: "html" },
            Err(_) => Extracted::Binary { reason: "the HTML could not be read".into() },
        },
        Format::Pdf => match pdf_extract::extract_text_from_mem(bytes) {
            Ok(text) => Extracted::Text { text, format: "pdf" },
            Err(_) => Extracted::Binary { reason: "the PDF could not be read (damaged, encrypted or scanned)".into() },
        },
        Format::Docx => office(bytes, "word/document.xml", &["p"], "docx"),
        Format::Odt => office(bytes, "content.xml", &["p", "h"], "odt"),
        Format::Other => Extracted::Binary { reason: "not a text format".into() },
    }
}

fn as_text(bytes: &[u8], format: &'static str) -> Extracted {
    // A NUL in the first KiB is a reliable sign of a binary file mislabelled as text.
    if bytes.iter().take(1024).any(|b| *b == 0) {
        return Extracted::Binary { reason: "the content is binary".into() };
    }
    let text = String::from_utf8_lossy(bytes);
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text).to_string();
    Extracted::Text { text, format }
}

/// Reads the text of an office document's main XML part. Paragraph ends (`paragraph_tags`,
/// by local name) become newlines; tabs, line breaks and ODF space runs are kept.
fn office(bytes: &[u8], part: &str, paragraph_tags: &[&str], format: &'static str) -> Extracted {
    let failed = |why: &str| Extracted::Binary { reason: format!("the {format} document could not be read ({why})") };
    let Ok(mut archive) = zip::ZipArchive::new(std::io::Cursor::new(bytes)) else {
        return failed("not a zip archive");
    };
    let mut xml = String::new();
    match archive.by_name(part) {
        Ok(file) => {
            if file.take(MAX_XML_PART).read_to_string(&mut xml).is_err() {
                return failed("unreadable part");
            }
        }
        Err(_) => return failed("missing main part"),
    }
    let mut reader = quick_xml::Reader::from_str(&xml);
    let mut text = String::new();
    let mut in_text_run = 0usize;
    loop {
        match reader.read_event() {
            Ok(Event::Start(e)) => {
                let name = e.local_name();
                let local = name.into_inner();
                if local == "t" || paragraph_tags.contains(&local) || local == "span" {
                    in_text_run += 1;
                }
            }
            Ok(Event::Empty(e)) => match e.local_name().into_inner() {
                "tab" => text.push('\t'),
                "br" | "line-break" | "cr" => text.push('\n'),
                "s" => {
                    let n = e
                        .try_get_attribute("text:c")
                        .ok()
                        .flatten()
                        .and_then(|a| a.value.parse::<usize>().ok())
                        .unwrap_or(1);
                    text.push_str(&" ".repeat(n.min(100)));
                }
                l if paragraph_tags.contains(&l) => text.push('\n'),
                _ => {}
            },
            Ok(Event::End(e)) => {
                let name = e.local_name();
                let local = name.into_inner();
                if local == "t" || paragraph_tags.contains(&local) || local == "span" {
                    in_text_run = in_text_run.saturating_sub(1);
                }
                if paragraph_tags.contains(&local) {
                    text.push('\n');
                }
            }
            Ok(Event::Text(t)) if in_text_run > 0 => text.push_str(&t.xml10_content()),
            Ok(Event::GeneralRef(r)) if in_text_run > 0 => {
                if let Ok(Some(c)) = r.resolve_char_ref() {
                    text.push(c);
                } else if let Some(s) = quick_xml::escape::resolve_predefined_entity(&r.xml10_content()) {
                    text.push_str(s);
                }
            }
            Ok(Event::Eof) => break,
            Err(_) => return failed("malformed XML"),
            _ => {}
        }
    }
    Extracted::Text { text, format }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn zip_with(name: &str, content: &str) -> Vec<u8> {
        let mut buf = std::io::Cursor::new(Vec::new());
        {
            let mut w = zip::ZipWriter::new(&mut buf);
            w.start_file(name, zip::write::SimpleFileOptions::default()).unwrap();
            w.write_all(content.as_bytes()).unwrap();
            w.finish().unwrap();
        }
        buf.into_inner()
    }

    #[test]
    fn docx_paragraphs_and_entities() {
        let xml = r#"<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body><w:p><w:r><w:t>Budget &amp; plan</w:t></w:r></w:p><w:p><w:r><w:t>forty</w:t><w:tab/><w:t>thousand</w:t></w:r></w:p></w:body></w:document>"#;
        let got = extract(&zip_with("word/document.xml", xml), "application/octet-stream", "a.docx");
        assert_eq!(got, Extracted::Text { text: "Budget & plan\nforty\tthousand\n".into(), format: "docx" });
    }

    #[test]
    fn odt_headings_and_spaces() {
        let xml = r#"<office:document-content xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0"><office:body><office:text><text:h>Title</text:h><text:p>a<text:s text:c="3"/>b</text:p></office:text></office:body></office:document-content>"#;
        let got = extract(&zip_with("content.xml", xml), "application/vnd.oasis.opendocument.text", "a.odt");
        assert_eq!(got, Extracted::Text { text: "Title\na   b\n".into(), format: "odt" });
    }

    #[test]
    fn html_markdown_binary() {
        let Extracted::Text { text, format } = extract(b"<h1>Hi</h1><script>x()</script><p>there</p>", "text/html", "a.html") else { panic!() };
        assert_eq!(format, "html");
        assert!(text.contains("Hi") && text.contains("there"));
        assert_eq!(format_of("application/octet-stream", "plan.md"), Format::Markdown);
        assert!(matches!(extract(b"\x89PNG\r\n\x1a\n\0\0", "image/png", "a.png"), Extracted::Binary { .. }));
        assert!(matches!(extract(b"not a zip", "", "a.docx"), Extracted::Binary { .. }));
        assert!(matches!(extract(b"%PDF-1.4 garbage", "application/pdf", "a.pdf"), Extracted::Binary { .. }));
    }
}
