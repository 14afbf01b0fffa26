//! Turning file bytes into text a model can read.
//!
//! This is the files_read face of the one extraction, [`crate::index::extract`] (HTML,
//! Markdown, plain text, PDF, DOCX, ODT), shared with the document index. Everything else (images,
//! archives, unknown binaries) is described by type and size, never dumped. Extraction is
//! CPU work on untrusted input: callers run it on a blocking thread, and a panic inside a
//! parser becomes a described failure, not a crash. This module never fetches anything.

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
        (
            "application/json"
            | "application/xml"
            | "application/x-yaml"
            | "application/yaml"
            | "application/javascript"
            | "application/x-sh"
            | "application/csv",
            _,
        ) => Format::Plain,
        (
            _,
            "txt" | "csv" | "tsv" | "json" | "xml" | "yaml" | "yml" | "toml" | "ini" | "log" | "rs" | "py" | "js" | "ts" | "sh" | "ics"
            | "vcf",
        ) => Format::Plain,
        _ => Format::Other,
    }
}

/// Extracts text from `bytes`. Pure and synchronous; run it off the async threads.
///
/// The text is the document index's extraction ([`crate::index::extract`]), so an
/// `offset` returned by files_grep lands on the same character here.
pub fn extract(bytes: &[u8], mime: &str, name: &str) -> Extracted {
    use crate::index::extract::{self as ix, Format as IxFormat};
    let format = match format_of(mime, name) {
        Format::Plain => IxFormat::Plain,
        Format::Markdown => IxFormat::Markdown,
        Format::Html => IxFormat::Html,
        Format::Pdf => IxFormat::Pdf,
        Format::Docx => IxFormat::Docx,
        Format::Odt => IxFormat::Odt,
        Format::Other => {
            return Extracted::Binary {
                reason: "not a text format".into(),
            };
        }
    };
    match ix::extract(format, bytes) {
        Ok(doc) => Extracted::Text {
            text: doc.text,
            format: format.label(),
        },
        Err(e) => Extracted::Binary {
            reason: format!("the {} could not be read ({e})", format.label()),
        },
    }
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
        assert_eq!(
            got,
            Extracted::Text {
                text: "Budget & plan\nforty\tthousand\n".into(),
                format: "docx"
            }
        );
    }

    #[test]
    fn odt_headings_and_spaces() {
        let xml = r#"<office:document-content xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0"><office:body><office:text><text:h>Title</text:h><text:p>a<text:s text:c="3"/>b</text:p></office:text></office:body></office:document-content>"#;
        let got = extract(&zip_with("content.xml", xml), "application/vnd.oasis.opendocument.text", "a.odt");
        assert_eq!(
            got,
            Extracted::Text {
                text: "Title\na   b\n".into(),
                format: "odt"
            }
        );
    }

    #[test]
    fn html_markdown_binary() {
        let Extracted::Text { text, format } = extract(b"<h1>Hi</h1><script>x()</script><p>there</p>", "text/html", "a.html") else {
            panic!()
        };
        assert_eq!(format, "html");
        assert!(text.contains("Hi") && text.contains("there"));
        assert_eq!(format_of("application/octet-stream", "plan.md"), Format::Markdown);
        assert!(matches!(
            extract(b"\x89PNG\r\n\x1a\n\0\0", "image/png", "a.png"),
            Extracted::Binary { .. }
        ));
        assert!(matches!(extract(b"not a zip", "", "a.docx"), Extracted::Binary { .. }));
        assert!(matches!(
            extract(b"%PDF-1.4 garbage", "application/pdf", "a.pdf"),
            Extracted::Binary { .. }
        ));
    }
}
