//! Tool calls a model wrote into its message text instead of `tool_calls`.
//!
//! Open models served without a tool-call parser (Ollama, vLLM, llama.cpp, LocalAI) often
//! write the call as text. With `TAMEBI_TOOL_CALL_TEXT=auto` the model client feeds the
//! streamed text through [`TextCalls`], a pure incremental state machine: text goes out as
//! text, a recognised call goes out as a call and is removed from the visible text. The
//! forms, and the rule for code (see docs/orchestrator.md, "Tool calls written as text"):
//!
//! - Hermes/Qwen: `<tool_call>{"name": …, "arguments": {…}}</tool_call>`
//! - Mistral: `[TOOL_CALLS][{"name": …, "arguments": {…}}, …]` and `[TOOL_CALLS]name[ARGS]{…}`
//! - Llama 3: `<|python_tag|>{"name": …, "parameters": {…}}` (several joined by `;`)
//! - a bare JSON object `{"name": …, "arguments"|"parameters": {…}}` starting a line, with no
//!   other keys than `type` and `id`
//!
//! Nothing inside a Markdown code fence (``` or ~~~) or an inline code span is ever a call:
//! that is an example the user asked to see. A marker whose content is not a well-formed
//! call is shown as text, never guessed at. This module does no I/O and decides nothing
//! about tools: a recognised call is only a name and arguments, and goes through the same
//! registry, G3 policy and approval path as a native call (a text call is never more trusted).

use futures::{Stream, StreamExt};
use serde_json::{Map, Value};

use super::{ModelError, ModelEvent};

/// What the parser yields, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TextCallEvent {
    Text(String),
    /// A call: the tool name and its arguments as JSON object text.
    Call {
        name: String,
        arguments: String,
    },
}

const HERMES_OPEN: &str = "<tool_call>";
const HERMES_CLOSE: &str = "</tool_call>";
const MISTRAL: &str = "[TOOL_CALLS]";
const MISTRAL_ARGS: &str = "[ARGS]";
const LLAMA: &str = "<|python_tag|>";
const LLAMA_ENDS: [&str; 2] = ["<|eom_id|>", "<|eot_id|>"];
const MARKERS: [&str; 3] = [HERMES_OPEN, MISTRAL, LLAMA];

/// Bytes a candidate call may hold before it is given up as text (a large file write fits).
pub const MAX_CANDIDATE_BYTES: usize = 8 * 1024 * 1024;

/// Which form a candidate started as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Form {
    Hermes,
    Mistral,
    Llama,
    Bare,
}

/// Markdown code state, tracked over the text that is shown.
#[derive(Debug, Default)]
struct Code {
    /// The open fence's character and length.
    fence: Option<(char, usize)>,
    /// The open inline span's backtick count.
    inline: Option<usize>,
    /// Only spaces/tabs so far on this line.
    line_blank: bool,
    /// A run of ` or ~ not yet ended: (char, length, started the line).
    run: Option<(char, usize, bool)>,
}

impl Code {
    fn new() -> Self {
        Code {
            line_blank: true,
            ..Code::default()
        }
    }

    fn in_code(&self) -> bool {
        self.fence.is_some() || self.inline.is_some()
    }

    /// Folds one shown character into the state. Call before deciding on `c`.
    fn see(&mut self, c: char) {
        if let Some((rc, n, at_start)) = self.run
            && rc != c
        {
            self.run = None;
            self.end_run(rc, n, at_start);
        }
        if c == '`' || c == '~' {
            self.run = match self.run {
                Some((rc, n, s)) => Some((rc, n + 1, s)),
                None => Some((c, 1, self.line_blank)),
            };
            self.line_blank = false;
            return;
        }
        if c == '\n' {
            // Inline spans do not cross lines here; a fence does.
            self.inline = None;
            self.line_blank = true;
        } else if c != ' ' && c != '\t' {
            self.line_blank = false;
        }
    }

    fn end_run(&mut self, c: char, n: usize, at_line_start: bool) {
        if at_line_start && n >= 3 && self.inline.is_none() {
            match self.fence {
                None => self.fence = Some((c, n)),
                Some((fc, fn_)) if fc == c && n >= fn_ => self.fence = None,
                Some(_) => {}
            }
            return;
        }
        if c != '`' || self.fence.is_some() {
            return;
        }
        match self.inline {
            None => self.inline = Some(n),
            Some(open) if open == n => self.inline = None,
            Some(_) => {}
        }
    }
}

/// The incremental parser. Feed chunks with [`TextCalls::push`], then call [`TextCalls::finish`].
#[derive(Debug)]
pub struct TextCalls {
    /// Input not yet decided on.
    buf: String,
    code: Code,
    /// A candidate call being collected; `buf` starts with its marker or `{`.
    candidate: Option<Form>,
    extent: Extent,
}

impl Default for TextCalls {
    fn default() -> Self {
        TextCalls {
            buf: String::new(),
            code: Code::new(),
            candidate: None,
            extent: Extent::default(),
        }
    }
}

/// What the scan of a candidate found.
enum Scan {
    /// More input is needed.
    Incomplete,
    /// The candidate ends after `len` bytes and holds these calls.
    Calls { len: usize, calls: Vec<(String, String)> },
    /// Not a call: the first `len` bytes are shown as text.
    NotACall { len: usize },
}

impl TextCalls {
    pub fn push(&mut self, chunk: &str) -> Vec<TextCallEvent> {
        self.buf.push_str(chunk);
        let mut out = Vec::new();
        self.drain(false, &mut out);
        out
    }

    /// The stream ended: everything still held is decided.
    pub fn finish(&mut self) -> Vec<TextCallEvent> {
        let mut out = Vec::new();
        self.drain(true, &mut out);
        out
    }

    fn drain(&mut self, end: bool, out: &mut Vec<TextCallEvent>) {
        loop {
            if let Some(form) = self.candidate {
                let mut cx = Cx {
                    buf: &self.buf,
                    end,
                    extent: &mut self.extent,
                };
                match scan(form, &mut cx) {
                    Scan::Incomplete if self.buf.len() <= MAX_CANDIDATE_BYTES => return,
                    Scan::Incomplete => {
                        let len = self.buf.len();
                        self.show(len, out);
                    }
                    Scan::NotACall { len } => self.show(len, out),
                    Scan::Calls { len, calls } => {
                        self.buf.drain(..len);
                        out.extend(calls.into_iter().map(|(name, arguments)| TextCallEvent::Call { name, arguments }));
                    }
                }
                self.candidate = None;
                self.extent = Extent::default();
                continue;
            }
            if self.buf.is_empty() {
                return;
            }
            let (shown, next) = self.text_run(end);
            if shown > 0 {
                self.show(shown, out);
            }
            match next {
                Some(form) => self.candidate = Some(form),
                None => return,
            }
        }
    }

    /// How many bytes of `buf` are plain text, and whether a candidate starts right after.
    /// Without a candidate, what follows is held back (a possible marker prefix) or nothing.
    fn text_run(&mut self, end: bool) -> (usize, Option<Form>) {
        // A scratch copy of the code state: characters count as seen only once shown.
        let mut code = Code {
            fence: self.code.fence,
            inline: self.code.inline,
            line_blank: self.code.line_blank,
            run: self.code.run,
        };
        for (i, c) in self.buf.char_indices() {
            let line_blank = code.line_blank;
            code.see(c);
            if code.in_code() || code.run.is_some() {
                continue;
            }
            let rest = &self.buf[i..];
            if c == '{' && line_blank {
                return (i, Some(Form::Bare));
            }
            if c == '<' || c == '[' {
                if let Some(form) = marker_at(rest) {
                    return (i, Some(form));
                }
                if !end && MARKERS.iter().any(|m| m.len() > rest.len() && m.starts_with(rest)) {
                    return (i, None);
                }
            }
        }
        // A trailing backtick/tilde run may still grow into a fence: that only changes what
        // comes after, so the run itself can be shown.
        (self.buf.len(), None)
    }

    /// Shows the first `len` bytes as text.
    fn show(&mut self, len: usize, out: &mut Vec<TextCallEvent>) {
        let text: String = self.buf.drain(..len).collect();
        for c in text.chars() {
            self.code.see(c);
        }
        // A candidate that was not a call leaves the line no longer blank.
        if !text.is_empty() {
            match out.last_mut() {
                Some(TextCallEvent::Text(t)) => t.push_str(&text),
                _ => out.push(TextCallEvent::Text(text)),
            }
        }
    }
}

fn marker_at(rest: &str) -> Option<Form> {
    if rest.starts_with(HERMES_OPEN) {
        Some(Form::Hermes)
    } else if rest.starts_with(MISTRAL) {
        Some(Form::Mistral)
    } else if rest.starts_with(LLAMA) {
        Some(Form::Llama)
    } else {
        None
    }
}

/// Length of leading whitespace.
fn ws(s: &str) -> usize {
    s.len() - s.trim_start().len()
}

/// The resumable scan for the end of one balanced JSON object or array. While a candidate
/// is open its input only grows, so each chunk continues where the last one stopped
/// (a large argument streamed in small chunks stays linear). Strings and escapes are
/// respected, so brackets inside arguments do not count.
#[derive(Debug, Default, Clone, Copy)]
struct Extent {
    start: Option<usize>,
    scanned: usize,
    depth: usize,
    in_string: bool,
    escaped: bool,
    end: Option<usize>,
}

impl Extent {
    /// The length of the JSON value starting at byte `at` of `buf`, once it is complete.
    fn of(&mut self, buf: &str, at: usize) -> Option<usize> {
        if self.start != Some(at) {
            *self = Extent {
                start: Some(at),
                scanned: at,
                ..Extent::default()
            };
        }
        if let Some(end) = self.end {
            return Some(end - at);
        }
        for (i, b) in buf.bytes().enumerate().skip(self.scanned) {
            self.scanned = i + 1;
            if self.in_string {
                match b {
                    _ if self.escaped => self.escaped = false,
                    b'\\' => self.escaped = true,
                    b'"' => self.in_string = false,
                    _ => {}
                }
                continue;
            }
            match b {
                b'"' => self.in_string = true,
                b'{' | b'[' => self.depth += 1,
                b'}' | b']' => {
                    self.depth = self.depth.saturating_sub(1);
                    if self.depth == 0 {
                        self.end = Some(i + 1);
                        return Some(i + 1 - at);
                    }
                }
                _ => {}
            }
        }
        None
    }
}

/// One candidate's scan: the held input, whether the stream ended, the resumable JSON scan.
struct Cx<'a> {
    buf: &'a str,
    end: bool,
    extent: &'a mut Extent,
}

impl Cx<'_> {
    /// Incomplete, or (at the end) everything held shown as text.
    fn wait(&self) -> Scan {
        if self.end {
            Scan::NotACall { len: self.buf.len() }
        } else {
            Scan::Incomplete
        }
    }

    /// The offset of the first non-whitespace byte at or after `at`.
    fn skip_ws(&self, at: usize) -> usize {
        at + ws(&self.buf[at..])
    }
}

/// Scans a candidate at the start of `buf`.
fn scan(form: Form, cx: &mut Cx<'_>) -> Scan {
    match form {
        Form::Bare => scan_bare(cx),
        Form::Hermes => scan_marked(cx, HERMES_OPEN.len(), Some(HERMES_CLOSE)),
        Form::Llama => scan_llama(cx),
        Form::Mistral => scan_mistral(cx),
    }
}

/// Bare JSON: a call only if the object is exactly call-shaped.
fn scan_bare(cx: &mut Cx<'_>) -> Scan {
    let Some(len) = cx.extent.of(cx.buf, 0) else { return cx.wait() };
    match serde_json::from_str::<Value>(&cx.buf[..len]).ok().and_then(|v| call_of(v, true)) {
        Some(call) => Scan::Calls { len, calls: vec![call] },
        None => Scan::NotACall { len },
    }
}

/// A marker followed by one JSON value (a call object or an array of them) and an
/// optional closing tag.
fn scan_marked(cx: &mut Cx<'_>, marker: usize, closer: Option<&str>) -> Scan {
    let at = cx.skip_ws(marker);
    let Some(first) = cx.buf[at..].chars().next() else {
        return cx.wait();
    };
    if first != '{' && first != '[' {
        return Scan::NotACall { len: marker };
    }
    let Some(json_len) = cx.extent.of(cx.buf, at) else {
        return cx.wait();
    };
    let json_end = at + json_len;
    let Some(calls) = calls_in(&cx.buf[at..json_end]) else {
        return Scan::NotACall { len: json_end };
    };
    let Some(closer) = closer else {
        return Scan::Calls { len: json_end, calls };
    };
    let tail_at = cx.skip_ws(json_end);
    let tail = &cx.buf[tail_at..];
    if tail.starts_with(closer) {
        return Scan::Calls {
            len: tail_at + closer.len(),
            calls,
        };
    }
    // Wait while the closing tag may still arrive (split across chunks).
    if !cx.end && closer.starts_with(tail) {
        return Scan::Incomplete;
    }
    Scan::Calls { len: json_end, calls }
}

fn scan_llama(cx: &mut Cx<'_>) -> Scan {
    // Calls joined by `;`, then an optional end-of-message token.
    let mut pos = LLAMA.len();
    let mut calls = Vec::new();
    loop {
        let at = cx.skip_ws(pos);
        let Some(first) = cx.buf[at..].chars().next() else {
            return if calls.is_empty() {
                cx.wait()
            } else if cx.end {
                Scan::Calls { len: pos, calls }
            } else {
                Scan::Incomplete
            };
        };
        if first != '{' {
            return if calls.is_empty() {
                Scan::NotACall { len: LLAMA.len() }
            } else {
                Scan::Calls { len: pos, calls }
            };
        }
        let Some(json_len) = cx.extent.of(cx.buf, at) else {
            return cx.wait();
        };
        let json_end = at + json_len;
        let Some(call) = serde_json::from_str::<Value>(&cx.buf[at..json_end])
            .ok()
            .and_then(|v| call_of(v, false))
        else {
            return Scan::NotACall { len: json_end };
        };
        calls.push(call);
        pos = json_end;
        let tail_at = cx.skip_ws(pos);
        let tail = &cx.buf[tail_at..];
        if let Some(m) = LLAMA_ENDS.iter().find(|m| tail.starts_with(**m)) {
            return Scan::Calls {
                len: tail_at + m.len(),
                calls,
            };
        }
        if tail.starts_with(';') {
            pos = tail_at + 1;
            continue;
        }
        if !cx.end && (tail.is_empty() || LLAMA_ENDS.iter().any(|m| m.starts_with(tail))) {
            return Scan::Incomplete;
        }
        return Scan::Calls { len: pos, calls };
    }
}

fn scan_mistral(cx: &mut Cx<'_>) -> Scan {
    let at = cx.skip_ws(MISTRAL.len());
    let rest = &cx.buf[at..];
    if rest.starts_with(['{', '[']) {
        return scan_marked(cx, MISTRAL.len(), None);
    }
    // `[TOOL_CALLS]name[ARGS]{…}` (newer Mistral templates).
    let name_len = rest
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.'))
        .unwrap_or(rest.len());
    let after_name = &rest[name_len..];
    if name_len > 128 || (name_len == 0 && !rest.is_empty()) {
        return Scan::NotACall { len: MISTRAL.len() };
    }
    if !after_name.starts_with(MISTRAL_ARGS) {
        return if !cx.end && MISTRAL_ARGS.starts_with(after_name) {
            Scan::Incomplete
        } else {
            Scan::NotACall { len: MISTRAL.len() }
        };
    }
    let name = rest[..name_len].to_string();
    let json_at = cx.skip_ws(at + name_len + MISTRAL_ARGS.len());
    match cx.buf[json_at..].chars().next() {
        None => return cx.wait(),
        Some('{') => {}
        Some(_) => return Scan::NotACall { len: MISTRAL.len() },
    }
    let Some(json_len) = cx.extent.of(cx.buf, json_at) else {
        return cx.wait();
    };
    let json_end = json_at + json_len;
    match serde_json::from_str::<Value>(&cx.buf[json_at..json_end]) {
        Ok(v @ Value::Object(_)) => Scan::Calls {
            len: json_end,
            calls: vec![(name, v.to_string())],
        },
        _ => Scan::NotACall { len: MISTRAL.len() },
    }
}

/// One call object, or an array of them (all must be calls).
fn calls_in(json: &str) -> Option<Vec<(String, String)>> {
    match serde_json::from_str::<Value>(json).ok()? {
        Value::Array(items) if !items.is_empty() => items.into_iter().map(|v| call_of(v, false)).collect(),
        v @ Value::Object(_) => Some(vec![call_of(v, false)?]),
        _ => None,
    }
}

/// `{"name": "…", "arguments"|"parameters": {…}}` → (name, arguments JSON text).
/// `strict` (the bare form, which has no marker saying "this is a call") also requires the
/// arguments key and allows no keys but `type` and `id` besides.
fn call_of(value: Value, strict: bool) -> Option<(String, String)> {
    let Value::Object(mut map) = value else { return None };
    // Some templates wrap the call: {"type": "function", "function": {...}}.
    if let Some(Value::Object(inner)) = map.remove("function") {
        map.extend(inner);
    }
    let Some(Value::String(name)) = map.remove("name") else {
        return None;
    };
    if name.is_empty() {
        return None;
    }
    let args = match (map.remove("arguments"), map.remove("parameters")) {
        (Some(a), None) | (None, Some(a)) => Some(a),
        (None, None) => None,
        (Some(_), Some(_)) => return None,
    };
    if strict && (args.is_none() || map.keys().any(|k| k != "type" && k != "id")) {
        return None;
    }
    let args = match args {
        None => Value::Object(Map::new()),
        Some(v @ Value::Object(_)) => v,
        // Some models write the arguments as a JSON string, the way the API carries them.
        Some(Value::String(s)) => match serde_json::from_str::<Value>(&s).ok()? {
            v @ Value::Object(_) => v,
            _ => return None,
        },
        Some(_) => return None,
    };
    Some((name, args.to_string()))
}

/// Runs a model stream's text through [`TextCalls`]: recognised calls become tool-call
/// events. All tool-call indexes are renumbered here so text and native calls never share
/// one; the turn then assigns our own ids to both alike.
pub fn recognise<S>(events: S) -> impl Stream<Item = Result<ModelEvent, ModelError>> + Send
where
    S: Stream<Item = Result<ModelEvent, ModelError>> + Send + 'static,
{
    async_stream::stream! {
        let mut parser = TextCalls::default();
        let mut indexes = Indexes::default();
        futures::pin_mut!(events);
        while let Some(event) = events.next().await {
            match event {
                Ok(ModelEvent::TextDelta(text)) => {
                    for e in indexes.text_events(parser.push(&text)) {
                        yield Ok(e);
                    }
                }
                Ok(ModelEvent::ToolCallStart { index, id, name }) => {
                    yield Ok(ModelEvent::ToolCallStart { index: indexes.native(index), id, name });
                }
                Ok(ModelEvent::ToolCallArguments { index, delta }) => {
                    yield Ok(ModelEvent::ToolCallArguments { index: indexes.native(index), delta });
                }
                Ok(ModelEvent::Finished { reason }) => {
                    let made_calls = indexes.text_calls > 0;
                    let held = indexes.text_events(parser.finish());
                    let calls = made_calls || held.iter().any(|e| matches!(e, ModelEvent::ToolCallStart { .. }));
                    for e in held {
                        yield Ok(e);
                    }
                    let reason = if calls && reason == "stop" { "tool_calls".to_string() } else { reason };
                    yield Ok(ModelEvent::Finished { reason });
                }
                Ok(usage @ ModelEvent::Usage { .. }) => yield Ok(usage),
                Err(e) => {
                    yield Err(e);
                    return;
                }
            }
        }
    }
}

/// Dense tool-call indexes for one stream: native indexes keep their own slot each, text
/// calls take the next free one.
#[derive(Default)]
struct Indexes {
    /// (provider index, our index) for native calls.
    native: Vec<(usize, usize)>,
    next: usize,
    text_calls: usize,
}

impl Indexes {
    fn native(&mut self, provider: usize) -> usize {
        if let Some((_, ours)) = self.native.iter().find(|(p, _)| *p == provider) {
            return *ours;
        }
        let ours = self.take();
        self.native.push((provider, ours));
        ours
    }

    fn take(&mut self) -> usize {
        self.next += 1;
        self.next - 1
    }

    fn text_events(&mut self, events: Vec<TextCallEvent>) -> Vec<ModelEvent> {
        let mut out = Vec::new();
        for e in events {
            match e {
                TextCallEvent::Text(t) => out.push(ModelEvent::TextDelta(t)),
                TextCallEvent::Call { name, arguments } => {
                    let index = self.take();
                    self.text_calls += 1;
                    // Unique like a provider's id; the turn then assigns its own, as for
                    // every native call.
                    out.push(ModelEvent::ToolCallStart {
                        index,
                        id: format!("call_{}", uuid::Uuid::new_v4().simple()),
                        name,
                    });
                    out.push(ModelEvent::ToolCallArguments { index, delta: arguments });
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    type Calls = Vec<(String, Value)>;

    fn run(chunks: &[&str]) -> (String, Calls) {
        let mut p = TextCalls::default();
        let mut events = Vec::new();
        for c in chunks {
            events.extend(p.push(c));
        }
        events.extend(p.finish());
        let mut text = String::new();
        let mut calls = Vec::new();
        for e in events {
            match e {
                TextCallEvent::Text(t) => text.push_str(&t),
                TextCallEvent::Call { name, arguments } => calls.push((name, serde_json::from_str(&arguments).unwrap())),
            }
        }
        (text, calls)
    }

    /// The same result whole, split in two at every position, and one character at a time.
    fn every_split(input: &str) -> (String, Calls) {
        let whole = run(&[input]);
        for (i, _) in input.char_indices() {
            assert_eq!(run(&[&input[..i], &input[i..]]), whole, "split at {i} of {input:?}");
        }
        let chars: Vec<String> = input.chars().map(String::from).collect();
        let chars: Vec<&str> = chars.iter().map(String::as_str).collect();
        assert_eq!(run(&chars), whole, "char by char: {input:?}");
        whole
    }

    fn call(name: &str, args: Value) -> (String, Value) {
        (name.to_string(), args)
    }

    #[test]
    fn hermes_calls_are_taken_out_of_the_text() {
        let input = "Let me check.\n<tool_call>\n{\"name\": \"files_list\", \"arguments\": {\"path\": \"/a}</tool_call>\"}}\n</tool_call>\nOne moment.";
        let (text, calls) = every_split(input);
        assert_eq!(text, "Let me check.\n\nOne moment.");
        assert_eq!(calls, vec![call("files_list", json!({"path": "/a}</tool_call>"}))]);
        // Without the closing tag (some templates end at the JSON).
        let (text, calls) = every_split("<tool_call>{\"name\": \"a\", \"arguments\": \"{\\\"x\\\": 1}\"}");
        assert_eq!((text.as_str(), calls), ("", vec![call("a", json!({"x": 1}))]));
    }

    #[test]
    fn bare_json_calls_need_the_exact_shape() {
        let (text, calls) = every_split("{\"name\": \"files_list\", \"parameters\": {\"path\": \"/ü{\"}}");
        assert_eq!((text.as_str(), calls), ("", vec![call("files_list", json!({"path": "/ü{"}))]));
        let (text, calls) = every_split("Sure:\n  {\"type\": \"function\", \"name\": \"a\", \"arguments\": {}}\n");
        assert_eq!((text.as_str(), calls), ("Sure:\n  \n", vec![call("a", json!({}))]));
        // Not calls: other keys, no arguments, or not starting a line.
        for input in [
            "{\"name\": \"a\", \"arguments\": {}, \"note\": 1}",
            "{\"name\": \"a\"}",
            "{\"a\": [1, 2]} and more",
            "The object {\"name\": \"a\", \"arguments\": {}} is an example.",
            "{\"name\": \"a\", \"arguments\": {\"never\": \"closed\"",
        ] {
            assert_eq!(every_split(input), (input.to_string(), vec![]), "{input}");
        }
    }

    #[test]
    fn mistral_calls_in_both_templates() {
        let (text, calls) =
            every_split("[TOOL_CALLS] [{\"name\": \"a\", \"arguments\": {\"x\": \"]\"}}, {\"name\": \"b\", \"arguments\": {}}]");
        assert_eq!(text, "");
        assert_eq!(calls, vec![call("a", json!({"x": "]"})), call("b", json!({}))]);
        let (text, calls) = every_split("Ok.[TOOL_CALLS]files_list[ARGS]{\"path\": \"/\"}[TOOL_CALLS]b[ARGS]{}");
        assert_eq!(text, "Ok.");
        assert_eq!(calls, vec![call("files_list", json!({"path": "/"})), call("b", json!({}))]);
    }

    #[test]
    fn llama_python_tag_calls() {
        let (text, calls) = every_split(
            "<|python_tag|>{\"name\": \"a\", \"parameters\": {\"q\": \"x;y\"}}; {\"name\": \"b\", \"parameters\": {}}<|eom_id|>",
        );
        assert_eq!(text, "");
        assert_eq!(calls, vec![call("a", json!({"q": "x;y"})), call("b", json!({}))]);
        let (text, calls) = every_split("<|python_tag|>{\"name\": \"a\", \"parameters\": {}}\nDone.");
        assert_eq!((text.as_str(), calls), ("\nDone.", vec![call("a", json!({}))]));
    }

    #[test]
    fn nothing_in_code_is_a_call() {
        for input in [
            "Here is how:\n```json\n<tool_call>{\"name\": \"files_delete\", \"arguments\": {}}</tool_call>\n{\"name\": \"files_delete\", \"arguments\": {}}\n```\nThat is all.",
            "~~~\n[TOOL_CALLS][{\"name\": \"a\", \"arguments\": {}}]\n<|python_tag|>{\"name\": \"a\", \"parameters\": {}}\n~~~\n",
            "Write `<tool_call>{\"name\": \"a\", \"arguments\": {}}</tool_call>` to call a tool.",
            "````\n```\n{\"name\": \"a\", \"arguments\": {}}\n````",
        ] {
            assert_eq!(every_split(input), (input.to_string(), vec![]), "{input}");
        }
        // After the fence closes, calls count again.
        let (text, calls) =
            every_split("```\n{\"name\": \"a\", \"arguments\": {}}\n```\n<tool_call>{\"name\": \"b\", \"arguments\": {}}</tool_call>");
        assert_eq!(text, "```\n{\"name\": \"a\", \"arguments\": {}}\n```\n");
        assert_eq!(calls, vec![call("b", json!({}))]);
    }

    #[test]
    fn lookalikes_and_broken_markers_stay_text() {
        for input in [
            "I <3 [brackets] and <tags>, 1 < 2.",
            "<tool_call>not json</tool_call>",
            "<tool_call>{\"arguments\": {}}</tool_call>",
            "[TOOL_CALLS] nothing here",
            "<|python_tag|>brave_search.call(query=\"x\")",
            "<tool_",
            "unclosed <tool_call>{\"name\": \"a\"",
        ] {
            assert_eq!(every_split(input), (input.to_string(), vec![]), "{input}");
        }
    }

    #[test]
    fn text_streams_out_without_waiting_for_the_end() {
        let mut p = TextCalls::default();
        assert_eq!(p.push("Hello wor"), vec![TextCallEvent::Text("Hello wor".into())]);
        // A possible marker prefix is held, then released once it cannot be one.
        assert_eq!(p.push("ld <tool"), vec![TextCallEvent::Text("ld ".into())]);
        assert_eq!(p.push("box>"), vec![TextCallEvent::Text("<toolbox>".into())]);
    }

    #[test]
    fn the_stream_gets_tool_call_events_with_their_own_indexes() {
        let input = vec![
            Ok(ModelEvent::ToolCallStart {
                index: 7,
                id: "p".into(),
                name: "native".into(),
            }),
            Ok(ModelEvent::ToolCallArguments {
                index: 7,
                delta: "{}".into(),
            }),
            Ok(ModelEvent::TextDelta("Hi <tool_call>{\"name\": \"a\", \"argu".into())),
            Ok(ModelEvent::TextDelta("ments\": {\"x\": 1}}</tool_call>".into())),
            Ok(ModelEvent::Finished { reason: "stop".into() }),
        ];
        let out: Vec<ModelEvent> = futures::executor::block_on(recognise(futures::stream::iter(input)).collect::<Vec<_>>())
            .into_iter()
            .map(|e| e.unwrap())
            .collect();
        let ModelEvent::ToolCallStart { id: text_id, .. } = &out[3] else {
            panic!("{out:?}")
        };
        assert!(text_id.starts_with("call_") && text_id.len() == 37, "{text_id}");
        assert_eq!(
            out,
            vec![
                ModelEvent::ToolCallStart {
                    index: 0,
                    id: "p".into(),
                    name: "native".into()
                },
                ModelEvent::ToolCallArguments {
                    index: 0,
                    delta: "{}".into()
                },
                ModelEvent::TextDelta("Hi ".into()),
                ModelEvent::ToolCallStart {
                    index: 1,
                    id: text_id.clone(),
                    name: "a".into()
                },
                ModelEvent::ToolCallArguments {
                    index: 1,
                    delta: "{\"x\":1}".into()
                },
                ModelEvent::Finished {
                    reason: "tool_calls".into()
                },
            ]
        );
    }
}
