//! Markdown: the text is the file itself; CommonMark parsing (pulldown-cmark) finds the
//! headings, so a `#` inside a code block or an HTML comment is not mistaken for one and
//! setext (underlined) headings count too.

use pulldown_cmark::{Event, Parser, Tag, TagEnd};

use super::{Extracted, Heading};

pub(super) fn extract(text: &str) -> Extracted {
    let mut headings = Vec::new();
    let mut open: Option<(u8, usize, String)> = None;
    for (event, range) in Parser::new(text).into_offset_iter() {
        match event {
            Event::Start(Tag::Heading { level, .. }) => {
                open = Some((level as u8, range.start, String::new()));
            }
            Event::Text(t) | Event::Code(t) => {
                if let Some((_, _, title)) = open.as_mut() {
                    title.push_str(&t);
                }
            }
            Event::SoftBreak | Event::HardBreak => {
                if let Some((_, _, title)) = open.as_mut() {
                    title.push(' ');
                }
            }
            Event::End(TagEnd::Heading(_)) => {
                if let Some((level, start, title)) = open.take() {
                    headings.push(Heading {
                        level,
                        title: title.trim().to_string(),
                        start,
                    });
                }
            }
            _ => {}
        }
    }
    Extracted {
        text: text.to_string(),
        headings,
        truncated: false,
    }
}
