//! HTML: html5ever's tokenizer (the WHATWG tokenizer, so broken markup, entities and raw
//! text elements are read the way a browser reads them) feeding a small text layout of our
//! own: block elements break lines, `h1`–`h6` become `#`-prefixed heading lines (and
//! headings), whitespace collapses outside `pre`, and nothing inside `head`, `script`,
//! `style`, `template` or `noscript` is text.
//!
//! A tokenizer rather than a full tree builder and renderer (html2text) because this runs
//! on every indexed page: it is several times faster and the index needs text and
//! headings, not a rendering. It never follows a link or loads anything.

use std::cell::RefCell;

use html5ever::TokenizerResult;
use html5ever::tendril::StrTendril;
use html5ever::tokenizer::states::RawKind;
use html5ever::tokenizer::{BufferQueue, TagKind, Token, TokenSink, TokenSinkResult, Tokenizer, TokenizerOpts};

use super::{ExtractError, Extracted, Heading};

pub(super) fn extract(bytes: &[u8]) -> Result<Extracted, ExtractError> {
    let input = String::from_utf8_lossy(bytes);
    let sink = Layout::default();
    let tokenizer = Tokenizer::new(sink, TokenizerOpts::default());
    let queue = BufferQueue::default();
    queue.push_back(StrTendril::from_slice(&input));
    // We never hand back a script to run, so feeding ends in one pass.
    while let TokenizerResult::Script(_) = tokenizer.feed(&queue) {}
    tokenizer.end();
    let state = tokenizer.sink.state.into_inner();
    let mut text = state.text;
    text.truncate(text.trim_end().len());
    if !text.is_empty() {
        text.push('\n');
    }
    Ok(Extracted {
        text,
        headings: state.headings,
        truncated: false,
    })
}

#[derive(Default)]
struct Layout {
    state: RefCell<State>,
}

#[derive(Default)]
struct State {
    text: String,
    headings: Vec<Heading>,
    /// Depth inside elements whose content is not text (script, style, head…).
    hidden: usize,
    /// Depth inside `pre` (whitespace kept).
    pre: usize,
    /// An open heading: its level, where it starts, and where its title starts.
    heading: Option<(u8, usize, usize)>,
    /// A space is owed before the next word (collapsed whitespace).
    space: bool,
}

impl State {
    /// Ends the current line and leaves `newlines` line breaks before what follows.
    fn block(&mut self, newlines: usize) {
        self.space = false;
        if self.text.is_empty() {
            return;
        }
        let have = self.text.len() - self.text.trim_end_matches('\n').len();
        let trimmed = self.text.trim_end_matches([' ', '\t']).len();
        self.text.truncate(trimmed);
        for _ in have..newlines {
            self.text.push('\n');
        }
    }

    fn push_text(&mut self, s: &str) {
        if self.hidden > 0 {
            return;
        }
        if self.pre > 0 {
            self.text.push_str(s);
            return;
        }
        for (i, word) in s.split(|c: char| c.is_ascii_whitespace()).enumerate() {
            if i > 0 {
                self.space = true;
            }
            if word.is_empty() {
                continue;
            }
            let at_line_start = self.text.is_empty() || self.text.ends_with('\n');
            if self.space && !at_line_start && !self.text.ends_with([' ', '\t']) {
                self.text.push(' ');
            }
            self.space = false;
            self.text.push_str(word);
        }
    }

    fn start(&mut self, name: &str) -> TokenSinkResult<()> {
        match name {
            "script" => {
                self.hidden += 1;
                return TokenSinkResult::RawData(RawKind::ScriptData);
            }
            "style" | "xmp" | "iframe" | "noembed" | "noframes" | "noscript" => {
                self.hidden += 1;
                return TokenSinkResult::RawData(RawKind::Rawtext);
            }
            "title" | "textarea" => {
                if name == "title" {
                    self.hidden += 1;
                }
                return TokenSinkResult::RawData(RawKind::Rcdata);
            }
            "head" | "template" => self.hidden += 1,
            "plaintext" => return TokenSinkResult::Plaintext,
            "pre" => {
                self.block(2);
                self.pre += 1;
            }
            "h1" | "h2" | "h3" | "h4" | "h5" | "h6" => {
                self.block(2);
                let level = name.as_bytes()[1] - b'0';
                let start = self.text.len();
                for _ in 0..level {
                    self.text.push('#');
                }
                self.text.push(' ');
                self.heading = Some((level, start, self.text.len()));
            }
            "br" => {
                self.text.truncate(self.text.trim_end_matches(' ').len());
                self.text.push('\n');
                self.space = false;
            }
            "td" | "th" => {
                if !self.text.is_empty() && !self.text.ends_with(['\n', '\t']) {
                    self.text.push('\t');
                }
                self.space = false;
            }
            _ if is_line(name) => self.block(1),
            _ if is_block(name) => self.block(2),
            _ => {}
        }
        TokenSinkResult::Continue
    }

    fn end(&mut self, name: &str) {
        match name {
            "script" | "style" | "xmp" | "iframe" | "noembed" | "noframes" | "noscript" | "title" | "head" | "template" => {
                self.hidden = self.hidden.saturating_sub(1)
            }
            "pre" => {
                self.pre = self.pre.saturating_sub(1);
                self.block(2);
            }
            "h1" | "h2" | "h3" | "h4" | "h5" | "h6" => {
                if let Some((level, start, title_start)) = self.heading.take() {
                    let title = self.text[title_start..].trim().to_string();
                    if title.is_empty() {
                        // An empty heading leaves no trace (not even its `#`).
                        self.text.truncate(start);
                    } else {
                        self.headings.push(Heading { level, title, start });
                    }
                }
                self.block(2);
            }
            _ if is_line(name) => self.block(1),
            _ if is_block(name) => self.block(2),
            _ => {}
        }
    }
}

/// Elements that end a line.
fn is_line(name: &str) -> bool {
    matches!(
        name,
        "li" | "tr" | "dt" | "dd" | "option" | "caption" | "figcaption" | "summary" | "hr"
    )
}

/// Elements that stand as their own paragraph.
fn is_block(name: &str) -> bool {
    matches!(
        name,
        "p" | "div"
            | "section"
            | "article"
            | "header"
            | "footer"
            | "nav"
            | "aside"
            | "main"
            | "blockquote"
            | "ul"
            | "ol"
            | "dl"
            | "table"
            | "thead"
            | "tbody"
            | "tfoot"
            | "figure"
            | "form"
            | "fieldset"
            | "address"
            | "details"
            | "body"
            | "html"
    )
}

impl TokenSink for Layout {
    type Handle = ();

    fn process_token(&self, token: Token, _line: u64) -> TokenSinkResult<()> {
        let mut s = self.state.borrow_mut();
        match token {
            Token::TagToken(tag) => match tag.kind {
                TagKind::StartTag => {
                    let r = s.start(&tag.name);
                    // `<br/>`-style self-closing tags of hiding elements do not open them.
                    if tag.self_closing && !matches!(r, TokenSinkResult::Continue) {
                        s.end(&tag.name);
                        return TokenSinkResult::Continue;
                    }
                    return r;
                }
                TagKind::EndTag => s.end(&tag.name),
            },
            Token::CharacterTokens(t) => s.push_text(&t),
            Token::NullCharacterToken | Token::CommentToken(_) | Token::DoctypeToken(_) | Token::EOFToken | Token::ParseError(_) => {}
        }
        TokenSinkResult::Continue
    }
}
