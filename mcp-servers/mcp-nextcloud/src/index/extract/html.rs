//! HTML: rendered to text by html2text (an HTML5 parser, so broken markup is read the way
//! a browser reads it). Its plain decorator writes `h1`–`h6` as `#`-prefixed lines, which
//! is how the headings are found again in the rendered text.

use super::{ExtractError, Extracted, Heading};

/// Wide enough that html2text never wraps a paragraph: passages are split by us.
const RENDER_WIDTH: usize = 10_000;

pub(super) fn extract(bytes: &[u8]) -> Result<Extracted, ExtractError> {
    let text = html2text::config::plain()
        .string_from_read(bytes, RENDER_WIDTH)
        .map_err(|e| ExtractError::Malformed(e.to_string()))?;
    let headings = atx_lines(&text);
    Ok(Extracted {
        text,
        headings,
        truncated: false,
    })
}

/// Lines of the form `#… title` (one to six `#`, then a space).
fn atx_lines(text: &str) -> Vec<Heading> {
    let mut out = Vec::new();
    let mut start = 0;
    for line in text.split_inclusive('\n') {
        let hashes = line.bytes().take_while(|b| *b == b'#').count();
        if (1..=6).contains(&hashes) && line.as_bytes().get(hashes) == Some(&b' ') {
            let title = line[hashes..].trim();
            if !title.is_empty() {
                out.push(Heading {
                    level: hashes as u8,
                    title: title.to_string(),
                    start,
                });
            }
        }
        start += line.len();
    }
    out
}
