//! HTML character references, decoded at least as generously as an HTML5 parser would.
//!
//! Owns one question: does the text after an `&` spell a character reference, and which
//! characters does it stand for? The answer uses the WHATWG named-reference table
//! (`web_atoms`, the table html5ever's tokenizer uses) and the tokenizer's numeric rules,
//! and then goes further than any parser, because a model is not a parser and may read a
//! reference where a browser would not:
//!
//! - numeric references with or without `;`, any number of leading zeros, `x` or `X`;
//!   0, surrogates and values past U+10FFFF become U+FFFD, and 0x80–0x9F take their
//!   windows-1252 meaning (so `&#139;` is `‹`), exactly as HTML5 says;
//! - named references with or without `;` for every name (HTML5 accepts the bare form only
//!   for its legacy names), the longest known name winning, and in any letter case when the
//!   exact case names nothing (`&lT;`);
//! - a reference whose result is `&` continues into the next one (`&amp;lt;` reads `<`),
//!   two levels deep.
//!
//! It never allocates on the heap and never looks further than the reference itself.

/// Longest name in the table (`CounterClockwiseContourIntegral`) plus room to spare.
const MAX_NAME: usize = 40;
/// `&amp;` chains followed after the first reference.
const MAX_CHAIN: u8 = 2;

/// The characters a reference stands for (one or two) and the bytes it spans after the `&`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reference {
    pub chars: [Option<char>; 2],
    /// Bytes consumed after the `&` (the `&` itself not counted).
    pub len: usize,
    /// A numeric reference's code point as written, where HTML5 reads it as another character
    /// (0x80–0x9F, the C1 controls, are windows-1252 there; 0 is U+FFFD): a reader that does
    /// not know HTML5's rule sees this one instead.
    pub literal: Option<char>,
}

/// Decodes the reference in `after_amp`, the text right after an `&`.
pub fn decode(after_amp: &str) -> Option<Reference> {
    decode_chained(after_amp, 0)
}

fn decode_chained(after_amp: &str, depth: u8) -> Option<Reference> {
    let first = if after_amp.starts_with('#') {
        numeric(after_amp)?
    } else {
        named(after_amp)?
    };
    if first.chars == [Some('&'), None]
        && depth < MAX_CHAIN
        && let Some(next) = decode_chained(&after_amp[first.len..], depth + 1)
    {
        return Some(Reference {
            chars: next.chars,
            len: first.len + next.len,
            literal: next.literal,
        });
    }
    Some(first)
}

/// `#` digits `;`? or `#x` hex digits `;`?
fn numeric(after_amp: &str) -> Option<Reference> {
    let bytes = after_amp.as_bytes();
    let (radix, digits_at) = match bytes.get(1) {
        Some(b'x' | b'X') => (16, 2),
        _ => (10, 1),
    };
    let mut value: u32 = 0;
    let mut end = digits_at;
    while let Some(d) = bytes.get(end).and_then(|b| char::from(*b).to_digit(radix)) {
        // Saturate past the Unicode range: the value is invalid either way.
        value = value.saturating_mul(radix).saturating_add(d).min(0x11_0000);
        end += 1;
    }
    if end == digits_at {
        return None;
    }
    if bytes.get(end) == Some(&b';') {
        end += 1;
    }
    let html5 = numeric_char(value);
    Some(Reference {
        chars: [Some(html5), None],
        len: end,
        literal: char::from_u32(value).filter(|c| *c != html5),
    })
}

/// HTML5's mapping of a numeric reference's value to a character.
fn numeric_char(value: u32) -> char {
    match value {
        0x80..=0x9F => web_atoms::C1_REPLACEMENTS[(value - 0x80) as usize]
            .or_else(|| char::from_u32(value))
            .unwrap_or('\u{FFFD}'),
        0 => '\u{FFFD}',
        _ => char::from_u32(value).unwrap_or('\u{FFFD}'),
    }
}

/// The longest table name at the start of `after_amp`, with or without its `;`.
fn named(after_amp: &str) -> Option<Reference> {
    let run = after_amp.bytes().take(MAX_NAME).take_while(u8::is_ascii_alphanumeric).count();
    if run == 0 {
        return None;
    }
    let mut buf = [0u8; MAX_NAME + 1];
    buf[..run].copy_from_slice(&after_amp.as_bytes()[..run]);
    let semicolon = after_amp.as_bytes().get(run) == Some(&b';');
    longest_name(&mut buf, run, semicolon).or_else(|| {
        // A model reads `&lT;` as `&lt;`; try the lower-case spelling when the exact one names nothing.
        buf[..run].make_ascii_lowercase();
        longest_name(&mut buf, run, semicolon)
    })
}

/// `buf[..run]` holds the candidate name's letters; `semicolon` says whether `;` follows the run.
fn longest_name(buf: &mut [u8; MAX_NAME + 1], run: usize, semicolon: bool) -> Option<Reference> {
    let mut best = None;
    for k in 1..=run {
        let Ok(bare) = std::str::from_utf8(&buf[..k]) else { break };
        // The table holds every prefix of every name; a miss means no longer name exists.
        let Some(&plain) = web_atoms::NAMED_ENTITIES.get(bare) else { break };
        // The same name with its `;` (borrowing the next byte of the buffer for a moment).
        let next = std::mem::replace(&mut buf[k], b';');
        let terminated = std::str::from_utf8(&buf[..=k])
            .ok()
            .and_then(|n| web_atoms::NAMED_ENTITIES.get(n))
            .copied()
            .unwrap_or((0, 0));
        buf[k] = next;
        let found = if terminated.0 != 0 { terminated } else { plain };
        if found.0 != 0 {
            // The `;` belongs to the reference only when it directly follows this name.
            let len = k + usize::from(k == run && semicolon);
            best = Some(Reference {
                chars: [char::from_u32(found.0), char::from_u32(found.1).filter(|c| *c != '\0')],
                len,
                literal: None,
            });
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(s: &str) -> Option<(char, usize)> {
        decode(s).map(|r| (r.chars[0].unwrap(), r.len))
    }

    #[test]
    fn numeric_references_follow_html5_and_need_no_semicolon() {
        assert_eq!(one("#60;x"), Some(('<', 4)));
        assert_eq!(one("#60x"), Some(('<', 3)));
        assert_eq!(one("#0000000060;"), Some(('<', 12)));
        assert_eq!(one("#x3c"), Some(('<', 4)));
        assert_eq!(one("#X003C;"), Some(('<', 7)));
        assert_eq!(one("#139;"), Some(('\u{2039}', 5)), "windows-1252 meaning of 0x8B");
        assert_eq!(one("#0;"), Some(('\u{FFFD}', 3)));
        assert_eq!(one("#xD800;"), Some(('\u{FFFD}', 7)));
        assert_eq!(one(&format!("#{};", "9".repeat(50))), Some(('\u{FFFD}', 52)));
        assert_eq!(one("#;"), None);
        assert_eq!(one("#x;"), None);
    }

    #[test]
    fn named_references_use_the_whatwg_table_with_or_without_semicolon() {
        assert_eq!(one("lt;"), Some(('<', 3)));
        assert_eq!(one("lt"), Some(('<', 2)));
        assert_eq!(one("ltfoo"), Some(('<', 2)), "legacy: the longest known name wins");
        assert_eq!(one("LT"), Some(('<', 2)));
        assert_eq!(one("lang;"), Some(('\u{27E8}', 5)));
        assert_eq!(one("lang"), Some(('\u{27E8}', 4)), "stricter than HTML5: no legacy form needed");
        assert_eq!(one("lsaquo;"), Some(('\u{2039}', 7)));
        assert_eq!(one("rsaquo"), Some(('\u{203A}', 6)));
        assert_eq!(one("sol;"), Some(('/', 4)));
        assert_eq!(one("lowbar;"), Some(('_', 7)));
        assert_eq!(one("Lt;"), Some(('\u{226A}', 3)), "case matters when the exact name exists");
        assert_eq!(one("lT;"), Some(('<', 3)), "any case when it does not");
        assert_eq!(decode("nvlt;").map(|r| r.chars), Some([Some('<'), Some('\u{20D2}')]));
        assert_eq!(one("zzz;"), None);
        assert_eq!(one(" lt;"), None);
        assert_eq!(one("é;"), None);
    }

    #[test]
    fn an_ampersand_reference_chains_into_the_next() {
        assert_eq!(one("amp;lt;"), Some(('<', 7)));
        assert_eq!(one("amp;amp;#60;"), Some(('<', 12)));
        assert_eq!(one("amp;amp;amp;lt;"), Some(('&', 12)), "two levels, no more");
        assert_eq!(one("amp;x"), Some(('&', 4)));
    }
}
