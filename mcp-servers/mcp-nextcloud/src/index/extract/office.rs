//! DOCX and ODT: both are zip archives holding XML. The archive is read with `zip` and the
//! XML with quick-xml's streaming reader; paragraphs become lines of text and
//! paragraphs with a heading style (DOCX `Heading N`/outline level, ODT `text:h`) become
//! headings. Every part is read through a size cap, so a zip bomb fails as too large.
//!
//! It also owns what the other archive readers (spreadsheets, presentations) share: opening
//! the archive, reading a part through the cap, [`check_archive`] for readers that hand the
//! archive to a crate, and the paragraph [`Builder`].

use std::collections::HashMap;
use std::io::{Cursor, Read};

use quick_xml::Reader;
use quick_xml::events::{BytesStart, Event};

use super::{ExtractError, Extracted, Heading, MAX_ARCHIVE_BYTES, MAX_ARCHIVE_ENTRIES, MAX_PART_BYTES};

/// Collects paragraphs in document order; a paragraph with a level is a heading.
#[derive(Default)]
pub(super) struct Builder {
    pub(super) out: Extracted,
    /// Open paragraphs (a text box can hold paragraphs inside a paragraph).
    open: Vec<(String, Option<u8>)>,
}

impl Builder {
    pub(super) fn start(&mut self, level: Option<u8>) {
        self.open.push((String::new(), level));
    }

    pub(super) fn set_level(&mut self, level: u8) {
        if let Some(p) = self.open.last_mut() {
            p.1 = Some(level);
        }
    }

    pub(super) fn push(&mut self, s: &str) {
        if let Some(p) = self.open.last_mut() {
            p.0.push_str(s);
        }
    }

    pub(super) fn in_paragraph(&self) -> bool {
        !self.open.is_empty()
    }

    pub(super) fn end(&mut self) {
        let Some((text, level)) = self.open.pop() else {
            return;
        };
        let trimmed = text.trim();
        if trimmed.is_empty() {
            return;
        }
        if let Some(level) = level {
            self.out.headings.push(Heading {
                level,
                title: trimmed.to_string(),
                start: self.out.text.len(),
            });
        }
        self.out.text.push_str(trimmed);
        self.out.text.push('\n');
    }
}

pub(super) fn open_zip(bytes: &[u8]) -> Result<zip::ZipArchive<Cursor<&[u8]>>, ExtractError> {
    zip::ZipArchive::new(Cursor::new(bytes)).map_err(|e| ExtractError::Malformed(e.to_string()))
}

/// Reads one archive member as UTF-8, refusing more than [`MAX_PART_BYTES`].
pub(super) fn read_part(zip: &mut zip::ZipArchive<Cursor<&[u8]>>, name: &str) -> Result<Option<String>, ExtractError> {
    let file = match zip.by_name(name) {
        Ok(f) => f,
        Err(zip::result::ZipError::FileNotFound) => return Ok(None),
        Err(e) => return Err(ExtractError::Malformed(e.to_string())),
    };
    let mut buf = Vec::new();
    file.take(MAX_PART_BYTES + 1)
        .read_to_end(&mut buf)
        .map_err(|e| ExtractError::Malformed(e.to_string()))?;
    if buf.len() as u64 > MAX_PART_BYTES {
        return Err(ExtractError::TooLarge);
    }
    String::from_utf8(buf)
        .map(Some)
        .map_err(|_| ExtractError::Malformed(format!("{name} is not UTF-8")))
}

pub(super) fn attr(e: &BytesStart<'_>, local: &str) -> Option<String> {
    e.attributes()
        .with_checks(false)
        .flatten()
        .find(|a| a.key.local_name().as_ref() == local)
        .and_then(|a| a.normalized_value(quick_xml::XmlVersion::Implicit1_0).ok().map(|v| v.into_owned()))
}

pub(super) fn xml_err(e: quick_xml::Error) -> ExtractError {
    ExtractError::Malformed(e.to_string())
}

/// Text of an entity or character reference (`&amp;`, `&#233;`).
pub(super) fn resolve_ref(name: &str) -> Option<String> {
    if let Some(num) = name.strip_prefix('#') {
        let n = match num.strip_prefix('x') {
            Some(hex) => u32::from_str_radix(hex, 16).ok()?,
            None => num.parse().ok()?,
        };
        return char::from_u32(n).map(String::from);
    }
    quick_xml::escape::resolve_predefined_entity(name).map(String::from)
}

/// Refuses an archive whose members would cost more than the caps to decompress: more than
/// [`MAX_ARCHIVE_ENTRIES`] members, one member over [`MAX_PART_BYTES`] or all of them over
/// [`MAX_ARCHIVE_BYTES`]. Each member is really decompressed (through the cap), because a
/// zip bomb's declared sizes are whatever its author wrote. Readers that hand the archive to
/// a crate which reads members without a cap (calamine) call this first.
pub(super) fn check_archive(bytes: &[u8]) -> Result<(), ExtractError> {
    let mut zip = open_zip(bytes)?;
    if zip.len() > MAX_ARCHIVE_ENTRIES {
        return Err(ExtractError::TooLarge);
    }
    let mut total: u64 = 0;
    let mut sink = [0u8; 64 * 1024];
    for i in 0..zip.len() {
        let mut file = zip.by_index(i).map_err(|e| ExtractError::Malformed(e.to_string()))?;
        let mut size: u64 = 0;
        loop {
            let n = file.read(&mut sink).map_err(|e| ExtractError::Malformed(e.to_string()))?;
            if n == 0 {
                break;
            }
            size += n as u64;
            if size > MAX_PART_BYTES || total + size > MAX_ARCHIVE_BYTES {
                return Err(ExtractError::TooLarge);
            }
        }
        total += size;
    }
    Ok(())
}

/// DOCX: `word/document.xml`, with heading levels from `word/styles.xml`.
pub(super) fn docx(bytes: &[u8]) -> Result<Extracted, ExtractError> {
    let mut zip = open_zip(bytes)?;
    let styles = match read_part(&mut zip, "word/styles.xml")? {
        Some(xml) => docx_heading_styles(&xml)?,
        None => HashMap::new(),
    };
    let doc = read_part(&mut zip, "word/document.xml")?.ok_or_else(|| ExtractError::Malformed("no word/document.xml".into()))?;
    let mut reader = Reader::from_str(&doc);
    let mut b = Builder::default();
    let mut in_text = false;
    loop {
        match reader.read_event().map_err(xml_err)? {
            Event::Start(e) => match e.local_name().as_ref() {
                "p" => b.start(None),
                "t" => in_text = true,
                _ => {}
            },
            Event::Empty(e) => match e.local_name().as_ref() {
                "pStyle" => {
                    if let Some(level) = attr(&e, "val").and_then(|v| docx_style_level(&styles, &v)) {
                        b.set_level(level);
                    }
                }
                "outlineLvl" => {
                    if let Some(level) = attr(&e, "val").and_then(|v| outline_level(&v)) {
                        b.set_level(level);
                    }
                }
                "tab" if b.in_paragraph() => b.push("\t"),
                "br" | "cr" if b.in_paragraph() => b.push("\n"),
                "p" => {}
                _ => {}
            },
            Event::End(e) => match e.local_name().as_ref() {
                "p" => b.end(),
                "t" => in_text = false,
                _ => {}
            },
            Event::Text(t) if in_text => b.push(&t.xml10_content()),
            Event::CData(t) if in_text => b.push(&t),
            Event::GeneralRef(r) if in_text => {
                if let Some(s) = resolve_ref(&r) {
                    b.push(&s);
                }
            }
            Event::Eof => break,
            _ => {}
        }
    }
    Ok(b.out)
}

/// `w:outlineLvl` is 0-based; 9 means body text.
fn outline_level(v: &str) -> Option<u8> {
    v.parse::<u8>().ok().filter(|n| *n < 9).map(|n| n + 1)
}

/// The level of a paragraph style id: from styles.xml when known, else from the English
/// built-in ids (`Heading1`, `Title`) that documents written without styles.xml use.
fn docx_style_level(styles: &HashMap<String, u8>, id: &str) -> Option<u8> {
    if let Some(level) = styles.get(id) {
        return Some(*level);
    }
    heading_name_level(id)
}

/// "heading 2" / "Heading2" → 2, "Title" → 1.
fn heading_name_level(name: &str) -> Option<u8> {
    let lower = name.to_ascii_lowercase().replace(' ', "");
    if lower == "title" {
        return Some(1);
    }
    lower.strip_prefix("heading")?.parse::<u8>().ok().filter(|n| (1..=9).contains(n))
}

/// Style id → heading level, from each `w:style`'s name (`heading 1`, localised ids keep
/// the English name) or its paragraph outline level.
fn docx_heading_styles(xml: &str) -> Result<HashMap<String, u8>, ExtractError> {
    let mut reader = Reader::from_str(xml);
    let mut map = HashMap::new();
    let mut current: Option<String> = None;
    loop {
        match reader.read_event().map_err(xml_err)? {
            Event::Start(e) if e.local_name().as_ref() == "style" => {
                current = attr(&e, "styleId");
            }
            Event::End(e) if e.local_name().as_ref() == "style" => current = None,
            Event::Empty(e) => {
                let Some(id) = current.as_ref() else { continue };
                let level = match e.local_name().as_ref() {
                    "name" => attr(&e, "val").and_then(|v| heading_name_level(&v)),
                    "outlineLvl" => attr(&e, "val").and_then(|v| outline_level(&v)),
                    _ => None,
                };
                if let Some(level) = level {
                    map.entry(id.clone()).or_insert(level);
                }
            }
            Event::Eof => break,
            _ => {}
        }
    }
    Ok(map)
}

/// ODT: `content.xml`; `text:h` carries `text:outline-level`, `text:p` is a paragraph.
pub(super) fn odt(bytes: &[u8]) -> Result<Extracted, ExtractError> {
    let mut zip = open_zip(bytes)?;
    let doc = read_part(&mut zip, "content.xml")?.ok_or_else(|| ExtractError::Malformed("no content.xml".into()))?;
    let mut reader = Reader::from_str(&doc);
    let mut b = Builder::default();
    loop {
        match reader.read_event().map_err(xml_err)? {
            Event::Start(e) => match e.local_name().as_ref() {
                "p" => b.start(None),
                "h" => {
                    let level = attr(&e, "outline-level")
                        .and_then(|v| v.parse::<u8>().ok())
                        .map(|n| n.clamp(1, 9))
                        .unwrap_or(1);
                    b.start(Some(level));
                }
                _ => {}
            },
            Event::Empty(e) if b.in_paragraph() => match e.local_name().as_ref() {
                "s" => {
                    let n = attr(&e, "c").and_then(|v| v.parse::<usize>().ok()).unwrap_or(1);
                    b.push(&" ".repeat(n.min(64)));
                }
                "tab" => b.push("\t"),
                "line-break" => b.push("\n"),
                _ => {}
            },
            Event::End(e) => match e.local_name().as_ref() {
                "p" | "h" => b.end(),
                _ => {}
            },
            Event::Text(t) if b.in_paragraph() => b.push(&t.xml10_content()),
            Event::CData(t) if b.in_paragraph() => b.push(&t),
            Event::GeneralRef(r) if b.in_paragraph() => {
                if let Some(s) = resolve_ref(&r) {
                    b.push(&s);
                }
            }
            Event::Eof => break,
            _ => {}
        }
    }
    Ok(b.out)
}
