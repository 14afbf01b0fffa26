//! Turning file bytes into text a model can read.
//!
//! This is the files_read face of the one extraction, [`crate::index::extract`] (HTML,
//! Markdown, plain text, PDF, DOCX, ODT, spreadsheets, presentations, with its one [`Format`]
//! list), shared with the
//! document index. Everything else (images,
//! archives, unknown binaries) is described by type and size, never dumped. Extraction is
//! CPU work on untrusted input: callers run it on a blocking thread, and a panic inside a
//! parser becomes a described failure, not a crash. This module never fetches anything.

use crate::index::extract::{self as ix, Format, SheetWindow};

/// What extraction produced.
#[derive(Debug, PartialEq)]
pub enum Extracted {
    /// Readable text and the format it came from (`text`, `html`, `markdown`, `pdf`, `docx`,
    /// `odt`, `xlsx`, `ods`, `csv`, `pptx`, `odp`).
    Text { text: String, format: &'static str },
    /// Not text: described only. `reason` says why.
    Binary { reason: String },
}

/// Extracts text from `bytes`. Pure and synchronous; run it off the async threads.
///
/// The text is the document index's extraction ([`crate::index::extract`]), so an
/// `offset` returned by files_grep lands on the same character here. `window` picks a part
/// of a spreadsheet (the default, everything, is what the index reads).
pub fn extract(bytes: &[u8], mime: &str, name: &str, window: &SheetWindow) -> Extracted {
    let Some(format) = Format::readable(mime, name) else {
        return Extracted::Binary {
            reason: "not a text format".into(),
        };
    };
    match ix::extract_window(format, bytes, window) {
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

    const W: SheetWindow = SheetWindow { sheet: None, first_row: 0 };

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
        let got = extract(&zip_with("word/document.xml", xml), "application/octet-stream", "a.docx", &W);
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
        let got = extract(
            &zip_with("content.xml", xml),
            "application/vnd.oasis.opendocument.text",
            "a.odt",
            &W,
        );
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
        let Extracted::Text { text, format } = extract(b"<h1>Hi</h1><script>x()</script><p>there</p>", "text/html", "a.html", &W) else {
            panic!()
        };
        assert_eq!(format, "html");
        assert!(text.contains("Hi") && text.contains("there"));
        assert_eq!(Format::readable("application/octet-stream", "plan.md"), Some(Format::Markdown));
        assert_eq!(Format::readable("application/json", "x"), Some(Format::Plain));
        assert_eq!(Format::readable("image/png", "a.png"), None);
        assert!(matches!(
            extract(b"\x89PNG\r\n\x1a\n\0\0", "image/png", "a.png", &W),
            Extracted::Binary { .. }
        ));
        assert!(matches!(extract(b"not a zip", "", "a.docx", &W), Extracted::Binary { .. }));
        assert!(matches!(
            extract(b"%PDF-1.4 garbage", "application/pdf", "a.pdf", &W),
            Extracted::Binary { .. }
        ));
    }
}
