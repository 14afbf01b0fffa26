//! Hierarchical splitting of extracted text into passages.
//!
//! The document's own structure decides the cut: every heading starts a section, and a
//! passage never crosses a section boundary. A section that fits [`MAX_PASSAGE_BYTES`]
//! is one passage (its paragraphs stay together); a longer one is cut at paragraph
//! boundaries, packing whole paragraphs back together up to that size, with no overlap.
//! Every passage carries its heading path ("Plan > Budget") and the character offset of
//! the section it came from, so `files_read {path, offset}` reads the whole parent section.
//!
//! It must never look at anything but the extracted text: no file ids, no users.

use super::extract::{Extracted, floor_char_boundary};

/// Upper bound of a passage body, in bytes (about 300–400 words of prose).
pub const MAX_PASSAGE_BYTES: usize = 1600;

/// Separator between the titles of a heading path.
pub const PATH_SEPARATOR: &str = " > ";

/// A passage ready to be stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Passage {
    /// Titles from the top-level heading down to this section, joined by " > ".
    pub heading: String,
    pub body: String,
    /// Character offset in the extracted text where the parent section starts.
    pub section_offset: usize,
}

/// One section: `[start, end)` in bytes, with its heading path.
struct Section {
    start: usize,
    end: usize,
    path: String,
    /// Byte length of the heading line at `start` (0 when the title is not in the text).
    title_len: usize,
}

/// Splits `doc` into passages in document order.
pub fn passages(doc: &Extracted, max_bytes: usize) -> Vec<Passage> {
    let max_bytes = max_bytes.max(64);
    let mut out = Vec::new();
    let mut chars_before = 0usize;
    let mut counted_to = 0usize;
    for section in sections(doc) {
        chars_before += doc.text[counted_to..section.start].chars().count();
        counted_to = section.start;
        let text = &doc.text[section.start..section.end];
        // A heading with nothing under it adds no passage: its title is already in the
        // heading path of every section below it.
        if text[section.title_len.min(text.len())..].trim().is_empty() {
            continue;
        }
        for body in pack(text, max_bytes) {
            out.push(Passage {
                heading: section.path.clone(),
                body,
                section_offset: chars_before,
            });
        }
    }
    out
}

/// The preamble (text before the first heading) and one section per heading.
fn sections(doc: &Extracted) -> Vec<Section> {
    let text = &doc.text;
    let mut out = Vec::with_capacity(doc.headings.len() + 1);
    let first = doc.headings.first().map_or(text.len(), |h| h.start.min(text.len()));
    if first > 0 {
        out.push(Section {
            start: 0,
            end: first,
            path: String::new(),
            title_len: 0,
        });
    }
    // The path is a stack of (level, title): a heading pops everything at its level or
    // deeper, so "## B" after "### A" makes B the sibling of A's parent.
    let mut stack: Vec<(u8, &str)> = Vec::new();
    for (i, h) in doc.headings.iter().enumerate() {
        let start = h.start.min(text.len());
        let end = doc.headings.get(i + 1).map_or(text.len(), |n| n.start.min(text.len())).max(start);
        while stack.last().is_some_and(|(level, _)| *level >= h.level) {
            stack.pop();
        }
        stack.push((h.level, h.title.as_str()));
        let path = stack.iter().map(|(_, t)| *t).collect::<Vec<_>>().join(PATH_SEPARATOR);
        let line = &text[start..end];
        let title_len = if line.trim_start().starts_with(|c: char| !c.is_whitespace()) && line.contains(h.title.as_str()) {
            line.find('\n').map_or(line.len(), |n| n + 1)
        } else {
            0
        };
        out.push(Section {
            start,
            end,
            path,
            title_len,
        });
    }
    out
}

/// Cuts a section into bodies of at most `max` bytes at paragraph boundaries, putting
/// whole paragraphs back together greedily. No text is repeated between bodies.
fn pack(text: &str, max: usize) -> Vec<String> {
    let text = text.trim();
    if text.len() <= max {
        return vec![text.to_string()];
    }
    let mut out = Vec::new();
    let mut current = String::new();
    for para in text.split("\n\n").map(str::trim).filter(|p| !p.is_empty()) {
        for piece in split_long(para, max) {
            if !current.is_empty() && current.len() + 2 + piece.len() > max {
                out.push(std::mem::take(&mut current));
            }
            if !current.is_empty() {
                current.push_str("\n\n");
            }
            current.push_str(piece);
        }
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

/// A paragraph longer than `max` is cut at the last line break, sentence end or space
/// before the limit (a character boundary at worst).
fn split_long(para: &str, max: usize) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = para;
    while rest.len() > max {
        let limit = floor_char_boundary(rest, max);
        let window = &rest[..limit];
        let cut = window
            .rfind('\n')
            .or_else(|| window.rfind(". ").map(|i| i + 1))
            .or_else(|| window.rfind(' '))
            .filter(|i| *i > 0)
            .unwrap_or(limit);
        let (head, tail) = rest.split_at(cut);
        out.push(head.trim_end());
        rest = tail.trim_start();
    }
    if !rest.is_empty() {
        out.push(rest);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::extract::{Format, extract};

    fn md(s: &str) -> Vec<Passage> {
        let doc = extract(Format::Markdown, s.as_bytes()).expect("markdown extracts");
        passages(&doc, MAX_PASSAGE_BYTES)
    }

    #[test]
    fn heading_paths_follow_the_outline() {
        let p = md(
            "intro line\n\n# Plan: ship the agent\n\nwhy\n\n## Budget\n\nThe budget is forty thousand euros.\n\n### Detail\n\nsmall print\n\n## Dates\n\nsoon\n\n# Other\n\nmore\n",
        );
        let headings: Vec<&str> = p.iter().map(|p| p.heading.as_str()).collect();
        assert_eq!(
            headings,
            [
                "",
                "Plan: ship the agent",
                "Plan: ship the agent > Budget",
                "Plan: ship the agent > Budget > Detail",
                "Plan: ship the agent > Dates",
                "Other"
            ]
        );
        assert!(p[2].body.contains("forty thousand"));
        assert!(!p[2].body.contains("small print"), "a passage never crosses a heading");
    }

    #[test]
    fn offsets_are_characters_and_land_on_the_section() {
        let src = "# Café ☕\n\nété\n\n## Budget\n\nforty thousand\n";
        let doc = extract(Format::Markdown, src.as_bytes()).expect("extracts");
        let p = passages(&doc, MAX_PASSAGE_BYTES);
        let budget = p.iter().find(|p| p.heading.ends_with("Budget")).expect("budget passage");
        assert!(doc.text_from_char(budget.section_offset).starts_with("## Budget"));
        assert_eq!(budget.section_offset, src[..src.find("## Budget").expect("in src")].chars().count());
    }

    #[test]
    fn long_sections_split_at_paragraphs_without_overlap_and_share_one_offset() {
        let paras: Vec<String> = (0..40).map(|i| format!("paragraph {i} {}", "word ".repeat(30))).collect();
        let src = format!("# Long\n\n{}\n", paras.join("\n\n"));
        let p = md(&src);
        assert!(p.len() > 1, "a long section is cut");
        assert!(p.iter().all(|x| x.body.len() <= MAX_PASSAGE_BYTES));
        assert!(p.iter().all(|x| x.section_offset == 0 && x.heading == "Long"));
        // Every paragraph appears exactly once: nothing repeated, nothing lost.
        for i in 0..40 {
            let needle = format!("paragraph {i} ");
            let n: usize = p.iter().map(|x| x.body.matches(&needle).count()).sum();
            assert_eq!(n, 1, "{needle}");
        }
        // Paragraphs are merged back together up to the size, not one per passage.
        assert!(p.len() < 40);
    }

    #[test]
    fn an_endless_paragraph_is_cut_at_spaces() {
        let src = "word ".repeat(2000);
        let p = md(&src);
        assert!(p.len() >= 6);
        assert!(p.iter().all(|x| x.body.len() <= MAX_PASSAGE_BYTES && !x.body.starts_with(' ')));
        let total: usize = p.iter().map(|x| x.body.matches("word").count()).sum();
        assert_eq!(total, 2000);
    }

    #[test]
    fn empty_headings_add_no_passage_and_empty_text_none_at_all() {
        let p = md("# Top\n## Budget\n\nforty\n");
        assert_eq!(p.len(), 1);
        assert_eq!(p[0].heading, "Top > Budget");
        assert!(md("").is_empty());
        assert!(md("\n\n  \n").is_empty());
    }

    #[test]
    fn skipping_a_level_still_nests() {
        let p = md("# A\n\nx\n\n### C\n\ny\n\n## B\n\nz\n");
        let headings: Vec<&str> = p.iter().map(|p| p.heading.as_str()).collect();
        assert_eq!(headings, ["A", "A > C", "A > B"]);
    }
}
