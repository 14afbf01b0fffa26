//! PDF: text per page through pdf-extract. A PDF has no reliable heading structure, so
//! each page becomes a section titled "Page N": a passage then says where it is, and the
//! offset reads that page.
//!
//! Bounded work on hostile input: pdf-extract looks a page's resources and media box up its
//! page tree by following `/Parent` with no end condition, so a page that is its own
//! ancestor keeps it busy for ever (found by the `extract_pdf` fuzz target). The document is
//! therefore loaded here (lopdf, as pdf-extract re-exports it), every page's chain of parents
//! is checked to end, and only then does pdf-extract read it, page by page, from that same
//! load. pdf-extract also panics on some malformed files: that is caught
//! ([`super::contained`]) and becomes a failed extraction.

use pdf_extract::{Dictionary, Document, ObjectId, PlainTextOutput};

use super::{ExtractError, Extracted, Heading, contained};

/// Deepest page tree accepted: real documents nest a few levels (balanced trees of a few
/// thousand pages are four or five deep).
const MAX_TREE_DEPTH: usize = 64;

pub(super) fn extract(bytes: &[u8]) -> Result<Extracted, ExtractError> {
    let pages = contained("PDF", || pages_of(bytes))?;
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

/// The text of each page, in order, up to the first page pdf-extract cannot read (as its
/// own `extract_text_from_mem_by_pages` does).
fn pages_of(bytes: &[u8]) -> Result<Vec<String>, ExtractError> {
    let mut doc = Document::load_mem(bytes).map_err(malformed)?;
    if doc.is_encrypted() {
        // Only the empty user password, as pdf-extract tries: we never hold another.
        doc.decrypt("").map_err(malformed)?;
    }
    let pages = doc.get_pages();
    for id in pages.values() {
        check_parents(&doc, *id)?;
    }
    let mut texts = Vec::with_capacity(pages.len());
    for number in pages.keys() {
        let mut text = String::new();
        if pdf_extract::output_doc_page(&doc, &mut PlainTextOutput::new(&mut text), *number).is_err() {
            break;
        }
        texts.push(text);
    }
    Ok(texts)
}

/// Refuses a page whose `/Parent` chain does not end within [`MAX_TREE_DEPTH`] steps (a loop).
fn check_parents(doc: &Document, page: ObjectId) -> Result<(), ExtractError> {
    let mut dict: &Dictionary = match doc.get_dictionary(page) {
        Ok(dict) => dict,
        // pdf-extract fails that page on its own; nothing to follow.
        Err(_) => return Ok(()),
    };
    for _ in 0..MAX_TREE_DEPTH {
        let Some(parent) = dict.get(b"Parent").ok().and_then(|p| p.as_reference().ok()) else {
            return Ok(());
        };
        match doc.get_dictionary(parent) {
            Ok(next) => dict = next,
            Err(_) => return Ok(()),
        }
    }
    Err(ExtractError::Malformed("the PDF's page tree loops back on itself".into()))
}

fn malformed(e: impl std::fmt::Display) -> ExtractError {
    ExtractError::Malformed(e.to_string())
}
