//! G2: the envelope (`untrusted::envelope`) around everything external the model reads.
//!
//! Property: for any source label and payload, the envelope's data can never be closed
//! early. Checked by a parser of the output written here, independent of the envelope
//! code (none of its helpers is called): the output is exactly one opening line, a body
//! and the closing tag with the same 128-bit id; the body contains neither that id (in any
//! case) nor anything a reader would take for an envelope tag, also after this file's own
//! decoding of character references (`&lt;`, `&#60;`, `&#x3c;` ...), invisible characters
//! and fullwidth forms. A payload that is plain ASCII without `<` or `&` comes through
//! unchanged, and wrapping is deterministic within the process. Input: the source label,
//! a NUL, the payload (UTF-8).
#![no_main]

use libfuzzer_sys::fuzz_target;

const OPEN: &str = "<untrusted_data source=\"";
const CLOSE: &str = "</untrusted_data id=\"";

/// The opening line, body and closing tag of `out`, with the id; panics when the output is
/// not shaped like an envelope.
fn split(out: &str) -> (&str, &str) {
    let (first, rest) = out.split_once('\n').expect("an opening line");
    let attrs = first
        .strip_prefix(OPEN)
        .expect("opening tag")
        .strip_suffix("\">")
        .expect("opening tag end");
    let (source, id) = attrs.split_once("\" id=\"").expect("an id attribute");
    assert!(
        source.bytes().all(|b| b.is_ascii_alphanumeric() || b"_-/.:".contains(&b)),
        "source {source:?}"
    );
    assert!(
        id.len() == 32 && id.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)),
        "id {id:?}"
    );
    let closing = format!("\n{CLOSE}{id}\">");
    let body = rest.strip_suffix(closing.as_str()).expect("the closing tag ends the output");
    (id, body)
}

/// The characters a reader sees, in this file's own (deliberately small) decoding: numeric
/// and a few named character references, invisible characters dropped, fullwidth ASCII and
/// case folded.
fn seen(body: &str) -> Vec<char> {
    let mut out = Vec::new();
    let mut rest = body;
    while let Some(c) = rest.chars().next() {
        if c == '&'
            && let Some((decoded, len)) = reference(&rest[1..])
        {
            out.push(decoded);
            rest = &rest[1 + len..];
            continue;
        }
        rest = &rest[c.len_utf8()..];
        match c {
            '\u{00AD}' | '\u{200B}'..='\u{200F}' | '\u{2060}'..='\u{2064}' | '\u{FEFF}' => {}
            '\u{FF01}'..='\u{FF5E}' => out.push(char::from_u32(c as u32 - 0xFEE0).expect("ascii").to_ascii_lowercase()),
            c => out.extend(c.to_lowercase()),
        }
    }
    out
}

/// A character reference after `&`: the character and the bytes it took (without `&`).
fn reference(s: &str) -> Option<(char, usize)> {
    for (name, c) in [
        ("lt;", '<'),
        ("lt", '<'),
        ("LT;", '<'),
        ("sol;", '/'),
        ("lowbar;", '_'),
        ("UnderBar;", '_'),
    ] {
        if s.starts_with(name) {
            return Some((c, name.len()));
        }
    }
    let (digits, radix, skip) = match s.strip_prefix('#')? {
        h if h.starts_with(['x', 'X']) => (&h[1..], 16, 2),
        d => (d, 10, 1),
    };
    let len = digits.bytes().take_while(|b| char::from(*b).is_digit(radix)).count();
    if len == 0 || len > 8 {
        return None;
    }
    let c = char::from_u32(u32::from_str_radix(&digits[..len], radix).ok()?)?;
    let semi = usize::from(digits[len..].starts_with(';'));
    Some((c, skip + len + semi))
}

/// Whether `chars` hold an envelope tag: `<`, up to 16 spaces or slashes, `untrusted`, up to
/// 16 separators, `data`.
fn has_tag(chars: &[char]) -> bool {
    let word = |at: usize, w: &str| w.chars().enumerate().all(|(k, c)| chars.get(at + k) == Some(&c));
    (0..chars.len()).filter(|&i| chars[i] == '<').any(|i| {
        let mut j = i + 1;
        while j < i + 17 && chars.get(j).is_some_and(|c| c.is_whitespace() || *c == '/') {
            j += 1;
        }
        if !word(j, "untrusted") {
            return false;
        }
        let mut k = j + 9;
        let gap_end = k + 16;
        while k < gap_end && chars.get(k).is_some_and(|c| !c.is_alphanumeric() && !matches!(c, '<' | '>' | '\n')) {
            k += 1;
        }
        word(k, "data")
    })
}

fuzz_target!(|data: &str| {
    let (source, payload) = data.split_once('\0').unwrap_or(("nextcloud/files_read", data));
    let out = tamebi::untrusted::envelope(source, payload);
    let (id, body) = split(&out);
    assert!(!body.to_ascii_lowercase().contains(id), "the id is inside the body");
    let chars = seen(body);
    assert!(!has_tag(&chars), "an envelope tag survived in {body:?}");
    if payload.bytes().all(|b| b.is_ascii() && b != b'<' && b != b'&') {
        assert_eq!(body, payload);
    }
    assert_eq!(out, tamebi::untrusted::envelope(source, payload));
});
