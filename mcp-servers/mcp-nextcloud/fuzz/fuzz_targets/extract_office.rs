//! Document extraction of the zipped office formats: DOCX, ODT, XLSX, ODS, PPTX and ODP
//! (`index::extract::extract_window`: zip, then quick-xml or calamine, with the archive and
//! sheet bounds).
//!
//! A first byte picks the format, a spreadsheet window, and how the rest is read. With its
//! high bit clear the rest is the file itself (seeded with the real files of
//! testdata/office, the zip bomb included), so the zip reader is fuzzed too; with it set
//! the rest is a list of parts (`PARTS` index byte, then the part's bytes; parts separated
//! by a 0xFF byte, which UTF-8 XML never holds) zipped here uncompressed, so that mutations
//! reach the XML readers instead of failing the zip's checksums. Properties: nothing of ours
//! panics (calamine's panics are caught by the extractor by design and are a failed
//! extraction, so the aborting panic hook of libfuzzer-sys is replaced by a silent one, as in
//! extract_pdf; a panic that escapes the extractor still aborts the run);
//! the text and the headings stay within their bounds and in order. Bounded work is part of
//! the property: dev/fuzz.sh runs it with `-timeout` and `-rss_limit_mb` (docs/testing.md).
#![no_main]

use std::io::Write;

use libfuzzer_sys::fuzz_target;
use mcp_nextcloud::index::extract::{self, Format, MAX_TEXT_BYTES, SheetWindow};

const FORMATS: [Format; 6] = [Format::Docx, Format::Odt, Format::Xlsx, Format::Ods, Format::Pptx, Format::Odp];

/// The parts the readers look for, by index (dev/fuzz-seeds.py writes seeds with them).
const PARTS: [&str; 22] = [
    "word/document.xml",
    "word/styles.xml",
    "content.xml",
    "xl/workbook.xml",
    "xl/_rels/workbook.xml.rels",
    "xl/sharedStrings.xml",
    "xl/worksheets/sheet1.xml",
    "xl/worksheets/sheet2.xml",
    "xl/styles.xml",
    "[Content_Types].xml",
    "_rels/.rels",
    "ppt/presentation.xml",
    "ppt/_rels/presentation.xml.rels",
    "ppt/slides/slide1.xml",
    "ppt/slides/slide2.xml",
    "ppt/slides/_rels/slide1.xml.rels",
    "ppt/slides/_rels/slide2.xml.rels",
    "ppt/notesSlides/notesSlide1.xml",
    "ppt/notesSlides/notesSlide2.xml",
    "mimetype",
    "META-INF/manifest.xml",
    "word/numbering.xml",
];

fn zipped(parts: &[u8]) -> Option<Vec<u8>> {
    let mut buf = std::io::Cursor::new(Vec::new());
    let mut w = zip::ZipWriter::new(&mut buf);
    let stored = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    let mut seen = [false; PARTS.len()];
    for part in parts.split(|b| *b == 0xFF) {
        let Some((which, content)) = part.split_first() else { continue };
        let i = usize::from(*which) % PARTS.len();
        if std::mem::replace(&mut seen[i], true) {
            continue;
        }
        w.start_file(PARTS[i], stored).ok()?;
        w.write_all(content).ok()?;
    }
    w.finish().ok()?;
    Some(buf.into_inner())
}

fuzz_target!(
    init: {
        std::panic::set_hook(Box::new(|_| {}));
    },
    |data: &[u8]| {
        let Some((pick, rest)) = data.split_first() else { return };
        let format = FORMATS[usize::from(pick & 7) % FORMATS.len()];
        let window = SheetWindow {
            sheet: (pick & 0x08 != 0).then(|| "Forecast".to_string()),
            first_row: u32::from((pick >> 4) & 7),
        };
        let file = if pick & 0x80 == 0 {
            rest.to_vec()
        } else {
            match zipped(rest) {
                Some(f) => f,
                None => return,
            }
        };
        let Ok(doc) = extract::extract_window(format, &file, &window) else {
            return;
        };
        assert!(doc.text.len() <= MAX_TEXT_BYTES, "{} bytes of text", doc.text.len());
        let mut last = None;
        for h in &doc.headings {
            assert!(
                h.start <= doc.text.len() && doc.text.is_char_boundary(h.start),
                "heading at {}",
                h.start
            );
            assert!(last.is_none_or(|l| l < h.start), "headings out of order");
            last = Some(h.start);
        }
    }
);
