//! PDF: text per page through pdf-extract. A PDF has no reliable heading structure, so
//! each page becomes a section titled "Page N": a passage then says where it is, and the
//! offset reads that page.

use super::{ExtractError, Extracted, Heading};

pub(super) fn extract(bytes: &[u8]) -> Result<Extracted, ExtractError> {
    // pdf-extract panics on some malformed inputs; a bad upload must not take the
    // server down, it must be recorded as a failed extraction.
    let pages = std::panic::catch_unwind(|| pdf_extract::extract_text_from_mem_by_pages(bytes))
        .map_err(|_| ExtractError::Malformed("the PDF reader gave up on this file".into()))?
        .map_err(|e| ExtractError::Malformed(e.to_string()))?;
    let mut out = Extracted::default();
    for (i, page) in pages.iter().enumerate() {
        let page = page.trim();
        if page.is_empty() {
            continue;
        }
        if !out.text.is_empty() {
            out.text.push_str("\n\n");
        }
        out.headings.push(Heading {
            level: 1,
            title: format!("Page {}", i + 1),
            start: out.text.len(),
        });
        out.text.push_str(page);
        out.text.push('\n');
    }
    Ok(out)
}
