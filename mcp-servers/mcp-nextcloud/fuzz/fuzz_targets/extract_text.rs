//! Document extraction of the text formats: plain text, Markdown, HTML and CSV, as the
//! index and files_read read them (`index::extract::extract_window`), then cut into the
//! index's passages (`index::chunk::passages`).
//!
//! A first byte picks the format and a spreadsheet window (CSV). Properties: nothing panics;
//! the text stays within its bound; passages stay within theirs; headings are in order, on character boundaries, inside
//! the text. Bounded work is part of the property: dev/fuzz.sh runs this target with
//! `-timeout` and `-rss_limit_mb` (docs/testing.md states the bounds).
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcp_nextcloud::index::chunk::{MAX_PASSAGE_BYTES, passages};
use mcp_nextcloud::index::extract::{self, Format, MAX_TEXT_BYTES, SheetWindow};

const FORMATS: [Format; 4] = [Format::Plain, Format::Markdown, Format::Html, Format::Csv];

fuzz_target!(|data: &[u8]| {
    let Some((pick, bytes)) = data.split_first() else { return };
    let format = FORMATS[usize::from(pick & 3)];
    let window = SheetWindow {
        sheet: (pick & 0x10 != 0).then(|| "Sheet1".to_string()),
        first_row: u32::from(pick >> 5),
    };
    let Ok(doc) = extract::extract_window(format, bytes, &window) else {
        return;
    };
    assert!(doc.text.len() <= MAX_TEXT_BYTES);
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
    let chars = doc.text.chars().count();
    for p in passages(&doc, MAX_PASSAGE_BYTES) {
        assert!(p.body.len() <= MAX_PASSAGE_BYTES, "passage of {} bytes", p.body.len());
        assert!(p.section_offset <= chars);
    }
});
