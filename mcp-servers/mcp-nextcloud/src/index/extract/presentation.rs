//! Presentations (PPTX, ODP), slide by slide: each slide is a level-1 heading "Slide N"
//! followed by its text, paragraph per line, and its speaker notes after a "Speaker notes:"
//! line, so notes are never mistaken for what the audience sees.
//!
//! Both are zip archives of XML, read with `zip` and quick-xml's streaming reader through the
//! part cap of [`super::office::read_part`] (a zip bomb fails as too large; deep nesting costs
//! nothing, the reader keeps no stack). PPTX follows the presentation's slide list and each
//! slide's relationship to its notes slide; ODP reads `draw:page` elements in order with
//! their `presentation:notes`. This module never fetches anything.

use std::collections::HashMap;

use quick_xml::Reader;
use quick_xml::events::Event;

use super::office::{attr, open_zip, read_part, resolve_ref, xml_err};
use super::{ExtractError, Extracted, Heading};

/// Slides read per presentation; the rest are named in a cut note.
pub const MAX_SLIDES: usize = 2000;

/// One slide's text.
#[derive(Default)]
struct Slide {
    lines: Vec<String>,
    notes: Vec<String>,
}

/// Collects paragraphs into lines: `start` on a paragraph's open tag, `text` inside,
/// `end` on its close tag (a paragraph inside a paragraph, as in a text box, is its own line).
#[derive(Default)]
struct Lines {
    open: Vec<String>,
    done: Vec<String>,
}

impl Lines {
    fn start(&mut self) {
        self.open.push(String::new());
    }

    fn text(&mut self, s: &str) {
        if let Some(p) = self.open.last_mut() {
            p.push_str(s);
        }
    }

    fn in_paragraph(&self) -> bool {
        !self.open.is_empty()
    }

    fn end(&mut self) {
        if let Some(p) = self.open.pop() {
            let t = p.trim();
            if !t.is_empty() {
                self.done.push(t.to_string());
            }
        }
    }

    fn take(&mut self) -> Vec<String> {
        self.open.clear();
        std::mem::take(&mut self.done)
    }
}

fn render(slides: Vec<Slide>, total: usize) -> Extracted {
    let mut out = Extracted::default();
    for (i, slide) in slides.into_iter().enumerate() {
        if !out.text.is_empty() {
            out.text.push('\n');
        }
        let title = format!("Slide {}", i + 1);
        out.headings.push(Heading {
            level: 1,
            title: title.clone(),
            start: out.text.len(),
        });
        out.text.push_str(&format!("# {title}\n\n"));
        for line in &slide.lines {
            out.text.push_str(line);
            out.text.push('\n');
        }
        if !slide.notes.is_empty() {
            out.text.push_str("\nSpeaker notes:\n");
            for line in &slide.notes {
                out.text.push_str(line);
                out.text.push('\n');
            }
        }
    }
    if total > MAX_SLIDES {
        out.text
            .push_str(&format!("\n(cut: only the first {MAX_SLIDES} of {total} slides are read.)\n"));
    }
    out
}

/// A relationship target resolved against the folder of the part that names it
/// (`slides/slide1.xml` from `ppt/`, `../notesSlides/n.xml` from `ppt/slides/`, or absolute).
fn resolve(base_dir: &str, target: &str) -> String {
    let mut parts: Vec<&str> = if target.starts_with('/') {
        Vec::new()
    } else {
        base_dir.split('/').filter(|s| !s.is_empty()).collect()
    };
    for seg in target.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            s => parts.push(s),
        }
    }
    parts.join("/")
}

/// `Id → (Type, Target)` of a `.rels` part.
fn relationships(xml: &str) -> Result<HashMap<String, (String, String)>, ExtractError> {
    let mut reader = Reader::from_str(xml);
    let mut map = HashMap::new();
    loop {
        match reader.read_event().map_err(xml_err)? {
            Event::Start(e) | Event::Empty(e) if e.local_name().as_ref() == "Relationship" => {
                if let (Some(id), Some(target)) = (attr(&e, "Id"), attr(&e, "Target")) {
                    map.insert(id, (attr(&e, "Type").unwrap_or_default(), target));
                }
            }
            Event::Eof => break,
            _ => {}
        }
    }
    Ok(map)
}

/// The `r:id` of each `p:sldId`, in the presentation's order.
fn slide_ids(xml: &str) -> Result<Vec<String>, ExtractError> {
    let mut reader = Reader::from_str(xml);
    let mut ids = Vec::new();
    loop {
        match reader.read_event().map_err(xml_err)? {
            Event::Start(e) | Event::Empty(e) if e.local_name().as_ref() == "sldId" => {
                // `id` is the slide's number; the prefixed `r:id` names its relationship.
                let rid = e
                    .attributes()
                    .with_checks(false)
                    .flatten()
                    .find(|a| a.key.local_name().as_ref() == "id" && a.key.prefix().is_some())
                    .and_then(|a| a.normalized_value(quick_xml::XmlVersion::Implicit1_0).ok().map(|v| v.into_owned()));
                ids.extend(rid);
            }
            Event::Eof => break,
            _ => {}
        }
    }
    Ok(ids)
}

/// Placeholders of a notes page that are not notes: the slide image, its number, header,
/// footer and date. Everything else on a notes page is the speaker's text (PowerPoint puts
/// it in the `body` placeholder, LibreOffice in a plain text box).
const NOT_NOTES: &[&str] = &["sldImg", "sldNum", "hdr", "ftr", "dt"];

/// The paragraphs of a slide or notes part (DrawingML: `a:p`, `a:t`, `a:br`). With
/// `notes_only`, the [`NOT_NOTES`] placeholders are left out.
fn drawing_text(xml: &str, notes_only: bool) -> Result<Vec<String>, ExtractError> {
    let mut reader = Reader::from_str(xml);
    let mut lines = Lines::default();
    let mut kept = Vec::new();
    let mut in_text = false;
    // The placeholder type of the shape being read (`None` outside a placeholder).
    let mut shape_depth = 0usize;
    let mut placeholder: Option<String> = None;
    loop {
        match reader.read_event().map_err(xml_err)? {
            Event::Start(e) => match e.local_name().as_ref() {
                "sp" => {
                    shape_depth += 1;
                    placeholder = None;
                }
                "p" => lines.start(),
                "t" => in_text = true,
                _ => {}
            },
            Event::Empty(e) => match e.local_name().as_ref() {
                "ph" if shape_depth > 0 => placeholder = Some(attr(&e, "type").unwrap_or_else(|| "body".into())),
                "br" if lines.in_paragraph() => lines.text("\n"),
                "tab" if lines.in_paragraph() => lines.text("\t"),
                _ => {}
            },
            Event::End(e) => match e.local_name().as_ref() {
                "p" => lines.end(),
                "t" => in_text = false,
                "sp" => {
                    shape_depth = shape_depth.saturating_sub(1);
                    let shape = lines.take();
                    if !notes_only || !placeholder.as_deref().is_some_and(|p| NOT_NOTES.contains(&p)) {
                        kept.extend(shape);
                    }
                    placeholder = None;
                }
                _ => {}
            },
            Event::Text(t) if in_text => lines.text(&t.xml10_content()),
            Event::CData(t) if in_text => lines.text(&t),
            Event::GeneralRef(r) if in_text => {
                if let Some(s) = resolve_ref(&r) {
                    lines.text(&s);
                }
            }
            Event::Eof => break,
            _ => {}
        }
    }
    // Text outside any shape (a table in a graphic frame) on a slide.
    if !notes_only {
        kept.extend(lines.take());
    }
    Ok(kept)
}

/// PPTX: `ppt/presentation.xml`'s slide list, each slide part, and its notes slide.
pub(super) fn pptx(bytes: &[u8]) -> Result<Extracted, ExtractError> {
    let mut zip = open_zip(bytes)?;
    let presentation =
        read_part(&mut zip, "ppt/presentation.xml")?.ok_or_else(|| ExtractError::Malformed("no ppt/presentation.xml".into()))?;
    let rels = relationships(&read_part(&mut zip, "ppt/_rels/presentation.xml.rels")?.unwrap_or_default())?;
    let ids = slide_ids(&presentation)?;
    let mut slides = Vec::new();
    for id in ids.iter().take(MAX_SLIDES) {
        let Some((_, target)) = rels.get(id) else { continue };
        let path = resolve("ppt", target);
        let Some(xml) = read_part(&mut zip, &path)? else { continue };
        let mut slide = Slide {
            lines: drawing_text(&xml, false)?,
            notes: Vec::new(),
        };
        let (dir, file) = path.rsplit_once('/').unwrap_or(("", &path));
        let slide_rels = read_part(&mut zip, &format!("{dir}/_rels/{file}.rels"))?.unwrap_or_default();
        for (kind, target) in relationships(&slide_rels)?.values() {
            if kind.ends_with("/notesSlide")
                && let Some(notes) = read_part(&mut zip, &resolve(dir, target))?
            {
                slide.notes = drawing_text(&notes, true)?;
            }
        }
        slides.push(slide);
    }
    Ok(render(slides, ids.len()))
}

/// ODP: `content.xml`, `draw:page` by page; `presentation:notes` holds the speaker notes.
pub(super) fn odp(bytes: &[u8]) -> Result<Extracted, ExtractError> {
    let mut zip = open_zip(bytes)?;
    let doc = read_part(&mut zip, "content.xml")?.ok_or_else(|| ExtractError::Malformed("no content.xml".into()))?;
    let mut reader = Reader::from_str(&doc);
    let mut slides: Vec<Slide> = Vec::new();
    let mut total = 0usize;
    let mut lines = Lines::default();
    let mut in_page = false;
    loop {
        match reader.read_event().map_err(xml_err)? {
            Event::Start(e) => match e.local_name().as_ref() {
                "page" => {
                    total += 1;
                    in_page = total <= MAX_SLIDES;
                    if in_page {
                        slides.push(Slide::default());
                    }
                }
                "notes" if in_page => {
                    if let Some(s) = slides.last_mut() {
                        s.lines.extend(lines.take());
                    }
                }
                "p" | "h" if in_page => lines.start(),
                _ => {}
            },
            Event::Empty(e) if lines.in_paragraph() => match e.local_name().as_ref() {
                "s" => {
                    let n = attr(&e, "c").and_then(|v| v.parse::<usize>().ok()).unwrap_or(1);
                    lines.text(&" ".repeat(n.min(64)));
                }
                "tab" => lines.text("\t"),
                "line-break" => lines.text("\n"),
                _ => {}
            },
            Event::End(e) => match e.local_name().as_ref() {
                "p" | "h" => lines.end(),
                "notes" if in_page => {
                    if let Some(s) = slides.last_mut() {
                        s.notes.extend(lines.take());
                    }
                }
                "page" => {
                    if in_page && let Some(s) = slides.last_mut() {
                        s.lines.extend(lines.take());
                    }
                    in_page = false;
                }
                _ => {}
            },
            Event::Text(t) if lines.in_paragraph() => lines.text(&t.xml10_content()),
            Event::CData(t) if lines.in_paragraph() => lines.text(&t),
            Event::GeneralRef(r) if lines.in_paragraph() => {
                if let Some(s) = resolve_ref(&r) {
                    lines.text(&s);
                }
            }
            Event::Eof => break,
            _ => {}
        }
    }
    Ok(render(slides, total))
}
