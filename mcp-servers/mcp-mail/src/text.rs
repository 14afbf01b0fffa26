//! Mail bodies as plain text: the one place HTML becomes text (with html2text, which parses
//! with html5ever like a browser does, so scripts, styles and comments never come through
//! as text). Plain-text bodies pass unchanged.
//!
//! Must never: return markup, or keep remote-resource URLs (tracking pixels) as anything
//! but text.

use crate::bridge::{Body, BodyFormat};

/// Column width the text is wrapped at. Wide: a model reads it, not a terminal.
const WIDTH: usize = 120;

/// The body as plain text.
pub fn plain(body: &Body) -> String {
    match body.format {
        BodyFormat::Text => body.content.clone(),
        BodyFormat::Html => html_to_text(&body.content),
    }
}

fn html_to_text(html: &str) -> String {
    // Without decoration: no markdown-ish `*`/`_` that a reader could take for the sender's.
    match html2text::config::plain_no_decorate().string_from_read(html.as_bytes(), WIDTH) {
        Ok(text) => text.trim_end().to_string(),
        // html5ever accepts any input; an error here is a limit (e.g. nesting depth), and a
        // reader is better served by a clear note than by raw markup.
        Err(_) => "[the HTML body of this message could not be converted to text]".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn html(s: &str) -> String {
        plain(&Body {
            format: BodyFormat::Html,
            content: s.into(),
        })
    }

    #[test]
    fn html_becomes_text_without_markup() {
        let t = html(
            "<html><head><style>p{color:red}</style><script>alert(1)</script></head><body><p>Hello <b>Alice</b>,</p><p>the budget is &euro;5&nbsp;000.</p><!-- hidden --></body></html>",
        );
        assert!(t.contains("Hello Alice,"), "{t}");
        assert!(t.contains("the budget is €5\u{a0}000."), "{t}");
        for gone in ["<", "alert", "color:red", "hidden"] {
            assert!(!t.contains(gone), "{gone} in {t}");
        }
    }

    #[test]
    fn plain_text_is_untouched() {
        let b = Body {
            format: BodyFormat::Text,
            content: "  <b>not markup</b>\n".into(),
        };
        assert_eq!(plain(&b), "  <b>not markup</b>\n");
    }
}
