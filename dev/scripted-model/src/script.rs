//! Scripts: the rules tests write, and the pure choice of what the model says next.
//!
//! Selection is stateless on purpose: the rule is found from the last `user` message of the
//! request and the step from the number of `assistant` messages after it, so a script keeps
//! working across orchestrator restarts and any number of concurrent conversations.
//! This module never does I/O and never sleeps; `reply` turns its answer into bytes.

use std::time::Duration;

use axum::http::StatusCode;
use chrono::{Datelike, NaiveDate};
use serde::Deserialize;

use crate::call::ScriptedCall;
use crate::error::Error;
use crate::openai::Conversation;
use crate::text_form::TextForm;

/// What the script says when the step index runs past a script whose last step is not text.
pub const EXHAUSTED: &str = "(script exhausted)";

/// `{"rules": [...]}`, as sent to `POST /__scripts` or read from `--scripts`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuleSet {
    pub rules: Vec<Rule>,
}

impl RuleSet {
    pub fn parse(json: &[u8]) -> Result<RuleSet, Error> {
        serde_json::from_slice(json).map_err(|e| Error::BadScripts(e.to_string()))
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(try_from = "RawRule")]
pub struct Rule {
    /// Substring of the last user message's text that selects this rule.
    pub pattern: String,
    /// When set, the request's model must equal it too.
    pub model: Option<String>,
    /// Never empty.
    pub steps: Vec<Step>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRule {
    #[serde(rename = "match")]
    pattern: String,
    #[serde(default)]
    model: Option<String>,
    steps: Vec<Step>,
}

impl TryFrom<RawRule> for Rule {
    type Error = String;
    fn try_from(raw: RawRule) -> Result<Rule, String> {
        if raw.steps.is_empty() {
            return Err(format!("the rule matching {:?} has no steps", raw.pattern));
        }
        Ok(Rule {
            pattern: raw.pattern,
            model: raw.model,
            steps: raw.steps,
        })
    }
}

/// How a reply is paced on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pacing {
    /// Characters of text (or of tool-call arguments) per chunk; at least 1.
    pub chunk_chars: usize,
    /// Pause between two chunks.
    pub delay: Duration,
    /// Pause before the response starts at all (before the status line).
    pub first_byte_delay: Duration,
}

impl Default for Pacing {
    fn default() -> Pacing {
        Pacing {
            chunk_chars: 8,
            delay: Duration::ZERO,
            first_byte_delay: Duration::ZERO,
        }
    }
}

/// Where the text of a text step comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TextSource {
    Literal(String),
    /// Exactly the content of the last `tool` message.
    EchoToolResult,
    /// Placeholders (see `Placeholders::fill`) are replaced.
    Template(String),
    /// A summary of a summary request: every `user: …` line of the last user message (the
    /// transcript the orchestrator sends), in order. Keeps what the user said, which is what
    /// a real summariser keeps too.
    SummariseUserLines,
}

/// Token counts that override the estimate, for tests of token accounting.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UsageOverride {
    pub prompt_tokens: Option<u64>,
    pub completion_tokens: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(try_from = "RawStep")]
pub enum Step {
    Text {
        text: TextSource,
        pacing: Pacing,
        usage: Option<UsageOverride>,
    },
    ToolCalls {
        text: Option<String>,
        calls: Vec<ScriptedCall>,
        /// Written into the text in this form instead of as `tool_calls`.
        as_text: Option<TextForm>,
        pacing: Pacing,
        usage: Option<UsageOverride>,
    },
    Error {
        status: StatusCode,
        message: String,
        /// Sent as `Retry-After` (seconds), as a rate-limiting provider does with a 429.
        retry_after_secs: Option<u64>,
    },
    Hang,
    Abort {
        text: String,
        after_chars: usize,
        pacing: Pacing,
        /// Cut in the middle of the next chunk's JSON rather than between two chunks.
        mid_chunk: bool,
    },
    /// Streams the first `after_chars` of `text`, then sends nothing more and never ends (until
    /// the client goes away or the server shuts down): a provider that stalls mid-answer.
    Stall {
        text: String,
        after_chars: usize,
        pacing: Pacing,
    },
    /// A `200 OK` with this body as `text/html`: a proxy's or captive portal's page where the
    /// provider should be.
    Html(String),
}

impl Step {
    /// Text steps are the ones repeated when a script runs out.
    fn repeats(&self) -> bool {
        match self {
            Step::Text { .. } => true,
            Step::ToolCalls { .. } | Step::Error { .. } | Step::Hang | Step::Abort { .. } | Step::Stall { .. } | Step::Html(_) => false,
        }
    }
}

/// Every step field, all optional: the typed `Step` is built from it with clear errors.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawStep {
    text: Option<String>,
    tool_calls: Option<Vec<RawCall>>,
    error: Option<RawError>,
    hang: Option<bool>,
    abort_after_chars: Option<usize>,
    mid_chunk: Option<bool>,
    stall_after_chars: Option<usize>,
    html: Option<String>,
    echo_tool_result: Option<bool>,
    text_from_template: Option<String>,
    summarise_user_lines: Option<bool>,
    chunk_chars: Option<usize>,
    delay_ms: Option<u64>,
    first_byte_delay_ms: Option<u64>,
    usage: Option<UsageOverride>,
    as_text: Option<TextForm>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCall {
    name: String,
    #[serde(default = "empty_object")]
    arguments: serde_json::Value,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    index: Option<u64>,
}

fn empty_object() -> serde_json::Value {
    serde_json::Value::Object(serde_json::Map::new())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawError {
    status: u16,
    message: String,
    #[serde(default)]
    retry_after_secs: Option<u64>,
}

impl TryFrom<RawStep> for Step {
    type Error = String;

    fn try_from(raw: RawStep) -> Result<Step, String> {
        let pacing = raw_pacing(&raw)?;
        let kinds = [
            raw.tool_calls.is_some(),
            raw.error.is_some(),
            raw.hang.is_some(),
            raw.abort_after_chars.is_some(),
            raw.stall_after_chars.is_some(),
            raw.html.is_some(),
            raw.echo_tool_result.is_some(),
            raw.text_from_template.is_some(),
            raw.summarise_user_lines.is_some(),
        ];
        let count = kinds.iter().filter(|k| **k).count();
        if count > 1 || (count == 0 && raw.text.is_none()) {
            return Err("a step needs exactly one of: text, tool_calls (with optional text), error, hang, \
                        abort_after_chars (with text), stall_after_chars (with text), html, echo_tool_result, \
                        text_from_template, summarise_user_lines"
                .into());
        }
        let text_allowed = count == 0 || raw.tool_calls.is_some() || raw.abort_after_chars.is_some() || raw.stall_after_chars.is_some();
        if raw.text.is_some() && !text_allowed {
            return Err("\"text\" goes only with tool_calls, abort_after_chars or stall_after_chars, or alone".into());
        }
        if raw.mid_chunk.is_some() && raw.abort_after_chars.is_none() {
            return Err("\"mid_chunk\" goes only with abort_after_chars".into());
        }
        if let Some(html) = raw.html {
            return Ok(Step::Html(html));
        }
        if let Some(after_chars) = raw.stall_after_chars {
            let text = raw.text.ok_or("stall_after_chars needs the text to stream before the stall")?;
            return Ok(Step::Stall { text, after_chars, pacing });
        }
        if raw.as_text.is_some() && raw.tool_calls.is_none() {
            return Err("\"as_text\" goes only with tool_calls".into());
        }
        if let Some(calls) = raw.tool_calls {
            return tool_calls_step(raw.text, calls, raw.as_text, pacing, raw.usage);
        }
        if let Some(err) = raw.error {
            let status = StatusCode::from_u16(err.status)
                .ok()
                .filter(|s| s.is_client_error() || s.is_server_error())
                .ok_or_else(|| format!("error status {} is not a 4xx or 5xx", err.status))?;
            return Ok(Step::Error {
                status,
                message: err.message,
                retry_after_secs: err.retry_after_secs,
            });
        }
        if let Some(hang) = raw.hang {
            return if hang {
                Ok(Step::Hang)
            } else {
                Err("\"hang\" must be true".into())
            };
        }
        if let Some(after_chars) = raw.abort_after_chars {
            let text = raw.text.ok_or("abort_after_chars needs the text to stream before the cut")?;
            let mid_chunk = raw.mid_chunk.unwrap_or(false);
            return Ok(Step::Abort {
                text,
                after_chars,
                pacing,
                mid_chunk,
            });
        }
        let text = if let Some(echo) = raw.echo_tool_result {
            if !echo {
                return Err("\"echo_tool_result\" must be true".into());
            }
            TextSource::EchoToolResult
        } else if let Some(summarise) = raw.summarise_user_lines {
            if !summarise {
                return Err("\"summarise_user_lines\" must be true".into());
            }
            TextSource::SummariseUserLines
        } else if let Some(template) = raw.text_from_template {
            TextSource::Template(template)
        } else {
            TextSource::Literal(raw.text.unwrap_or_default())
        };
        Ok(Step::Text {
            text,
            pacing,
            usage: raw.usage,
        })
    }
}

fn raw_pacing(raw: &RawStep) -> Result<Pacing, String> {
    let chunk_chars = raw.chunk_chars.unwrap_or(Pacing::default().chunk_chars);
    if chunk_chars == 0 {
        return Err("chunk_chars must be at least 1".into());
    }
    Ok(Pacing {
        chunk_chars,
        delay: Duration::from_millis(raw.delay_ms.unwrap_or(0)),
        first_byte_delay: Duration::from_millis(raw.first_byte_delay_ms.unwrap_or(0)),
    })
}

fn tool_calls_step(
    text: Option<String>,
    calls: Vec<RawCall>,
    as_text: Option<TextForm>,
    pacing: Pacing,
    usage: Option<UsageOverride>,
) -> Result<Step, String> {
    if calls.is_empty() {
        return Err("tool_calls must name at least one call".into());
    }
    let calls = calls
        .into_iter()
        .map(|c| {
            if c.name.is_empty() {
                return Err("a tool call needs a name".to_string());
            }
            // A string is sent verbatim: what a broken or hostile provider streams as arguments.
            if !c.arguments.is_object() && !c.arguments.is_string() {
                return Err(format!("the arguments of {:?} must be a JSON object (or a raw string)", c.name));
            }
            if c.id.as_deref() == Some("") {
                return Err(format!("the id of {:?} must not be empty", c.name));
            }
            Ok(ScriptedCall {
                name: c.name,
                arguments: c.arguments,
                id: c.id,
                index: c.index,
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Step::ToolCalls {
        text,
        calls,
        as_text,
        pacing,
        usage,
    })
}

/// The decision for one request, before any id is assigned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Reply(Reply),
    Fail {
        status: StatusCode,
        message: String,
        retry_after_secs: Option<u64>,
    },
    Hang,
    Html(String),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    pub text: String,
    pub calls: Vec<ScriptedCall>,
    pub pacing: Pacing,
    /// Cut the connection once this many characters of text were sent.
    pub abort_after_chars: Option<usize>,
    /// With `abort_after_chars`: cut inside the next chunk's JSON, not between chunks.
    pub cut_mid_chunk: bool,
    /// Stall (send nothing more, never end) once this many characters of text were sent.
    pub stall_after_chars: Option<usize>,
    pub usage: Option<UsageOverride>,
}

impl Reply {
    fn text(text: String, pacing: Pacing, usage: Option<UsageOverride>) -> Reply {
        Reply {
            text,
            calls: Vec::new(),
            pacing,
            abort_after_chars: None,
            cut_mid_chunk: false,
            stall_after_chars: None,
            usage,
        }
    }
}

/// Values the `{{…}}` placeholders of templates and tool-call arguments take.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placeholders<'a> {
    pub last_user_text: &'a str,
    pub last_tool_result: &'a str,
    /// Everything in the request but the last user message (`{{word_after:PREFIX}}`).
    pub context_text: &'a str,
    /// Today's date (UTC); the week runs Monday to Sunday around it.
    pub today: NaiveDate,
}

impl Placeholders<'_> {
    /// Replaces `{{last_user_text}}`, `{{last_tool_result}}`, `{{today}}`, `{{week_start}}`
    /// and `{{week_end}}` (ISO dates) in `template`, and `{{word_after:PREFIX}}` with the word
    /// that follows the first `PREFIX` in the context (`(not in my context)` when absent).
    pub fn fill(&self, template: &str) -> String {
        if !template.contains("{{") {
            return template.to_string();
        }
        let monday = self.today - chrono::Days::new(u64::from(self.today.weekday().num_days_from_monday()));
        let sunday = monday + chrono::Days::new(6);
        let filled = template
            .replace("{{last_user_text}}", self.last_user_text)
            .replace("{{last_tool_result}}", self.last_tool_result)
            .replace("{{today}}", &self.today.to_string())
            .replace("{{week_start}}", &monday.to_string())
            .replace("{{week_end}}", &sunday.to_string());
        self.fill_word_after(filled)
    }

    fn fill_word_after(&self, mut text: String) -> String {
        const OPEN: &str = "{{word_after:";
        while let Some(start) = text.find(OPEN) {
            let Some(len) = text[start..].find("}}") else { break };
            let prefix = text[start + OPEN.len()..start + len].to_string();
            let word: String = match self.context_text.find(&prefix) {
                Some(at) if !prefix.is_empty() => self.context_text[at + prefix.len()..]
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '-' || *c == '_')
                    .collect(),
                _ => "(not in my context)".to_string(),
            };
            text.replace_range(start..start + len + 2, &word);
        }
        text
    }

    /// Fills every string inside a JSON value (tool-call arguments).
    fn fill_json(&self, value: &serde_json::Value) -> serde_json::Value {
        match value {
            serde_json::Value::String(s) => serde_json::Value::String(self.fill(s)),
            serde_json::Value::Array(items) => items.iter().map(|v| self.fill_json(v)).collect(),
            serde_json::Value::Object(map) => map.iter().map(|(k, v)| (k.clone(), self.fill_json(v))).collect(),
            other => other.clone(),
        }
    }
}

/// The first rule (in order) whose pattern is in the last user text and whose model, if
/// any, is the request's.
pub fn find_rule<'a>(rules: impl IntoIterator<Item = &'a Rule>, convo: &Conversation) -> Option<&'a Rule> {
    rules
        .into_iter()
        .find(|r| convo.last_user_text.contains(&r.pattern) && r.model.as_ref().is_none_or(|m| *m == convo.model))
}

/// What to answer: the step at the conversation's step index, the repeated last text step,
/// `(script exhausted)`, or with no rule the default `You said: …` reply.
pub fn decide(rule: Option<&Rule>, convo: &Conversation, today: NaiveDate) -> Outcome {
    let Some(rule) = rule else {
        return Outcome::Reply(Reply::text(format!("You said: {}", convo.last_user_text), Pacing::default(), None));
    };
    let step = match rule.steps.get(convo.steps_taken) {
        Some(step) => step,
        None => match rule.steps.last() {
            Some(last) if last.repeats() => last,
            _ => {
                return Outcome::Reply(Reply::text(EXHAUSTED.to_string(), Pacing::default(), None));
            }
        },
    };
    let vars = Placeholders {
        last_user_text: &convo.last_user_text,
        last_tool_result: convo.last_tool_result.as_deref().unwrap_or(""),
        context_text: &convo.context_text,
        today,
    };
    render(step, &vars)
}

fn render(step: &Step, vars: &Placeholders<'_>) -> Outcome {
    match step {
        Step::Text { text, pacing, usage } => Outcome::Reply(Reply::text(text_of(text, vars), *pacing, *usage)),
        Step::ToolCalls {
            text,
            calls,
            as_text,
            pacing,
            usage,
        } => Outcome::Reply(written_as(
            *as_text,
            Reply {
                text: text.clone().unwrap_or_default(),
                calls: calls
                    .iter()
                    .map(|c| ScriptedCall {
                        name: c.name.clone(),
                        arguments: vars.fill_json(&c.arguments),
                        id: c.id.clone(),
                        index: c.index,
                    })
                    .collect(),
                pacing: *pacing,
                abort_after_chars: None,
                cut_mid_chunk: false,
                stall_after_chars: None,
                usage: *usage,
            },
        )),
        Step::Error {
            status,
            message,
            retry_after_secs,
        } => Outcome::Fail {
            status: *status,
            message: message.clone(),
            retry_after_secs: *retry_after_secs,
        },
        Step::Hang => Outcome::Hang,
        Step::Html(body) => Outcome::Html(body.clone()),
        Step::Abort {
            text,
            after_chars,
            pacing,
            mid_chunk,
        } => Outcome::Reply(Reply {
            text: text.clone(),
            calls: Vec::new(),
            pacing: *pacing,
            abort_after_chars: Some(*after_chars),
            cut_mid_chunk: *mid_chunk,
            stall_after_chars: None,
            usage: None,
        }),
        Step::Stall { text, after_chars, pacing } => Outcome::Reply(Reply {
            text: text.clone(),
            calls: Vec::new(),
            pacing: *pacing,
            abort_after_chars: None,
            cut_mid_chunk: false,
            stall_after_chars: Some(*after_chars),
            usage: None,
        }),
    }
}

/// With a text form, the reply's calls move into its text (after any text it has).
fn written_as(form: Option<TextForm>, mut reply: Reply) -> Reply {
    if let Some(form) = form {
        let calls = std::mem::take(&mut reply.calls);
        reply.text.push_str(&crate::text_form::render(form, &calls));
    }
    reply
}

fn text_of(source: &TextSource, vars: &Placeholders<'_>) -> String {
    match source {
        TextSource::Literal(text) => text.clone(),
        TextSource::EchoToolResult => vars.last_tool_result.to_string(),
        TextSource::Template(t) => vars.fill(t),
        TextSource::SummariseUserLines => summarise_user_lines(vars.last_user_text),
    }
}

fn summarise_user_lines(request: &str) -> String {
    let lines: Vec<&str> = request
        .lines()
        .map(|l| l.trim().trim_start_matches("- ").trim())
        .filter(|l| l.starts_with("user: "))
        .collect();
    if lines.is_empty() {
        return "Nothing the user said needs keeping.".to_string();
    }
    lines.iter().map(|l| format!("- {l}")).collect::<Vec<_>>().join("\n")
}

/// Model names the rules mention, for `GET /v1/models` and the model check.
pub fn model_names<'a>(rules: impl IntoIterator<Item = &'a Rule>) -> impl Iterator<Item = &'a str> {
    rules.into_iter().filter_map(|r| r.model.as_deref())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rules(v: serde_json::Value) -> Vec<Rule> {
        RuleSet::parse(v.to_string().as_bytes()).unwrap().rules
    }

    fn convo(user: &str, steps_taken: usize) -> Conversation {
        Conversation {
            model: "scripted".into(),
            stream: true,
            include_usage: false,
            last_user_text: user.into(),
            steps_taken,
            last_tool_result: Some("<tool-result>data</tool-result>".into()),
            prompt_tokens: 1,
            context_text: "system: the code name is HERON-7.\n".into(),
        }
    }

    /// A Wednesday.
    fn day() -> NaiveDate {
        NaiveDate::from_ymd_opt(2026, 1, 7).unwrap()
    }

    #[test]
    fn word_after_reads_the_context_and_summaries_keep_user_lines() {
        let rs = rules(json!({"rules": [
            {"match": "code name", "steps": [{"text_from_template": "It is {{word_after:code name is }} ({{word_after:nowhere }})."}]},
            {"match": "Summarise", "steps": [{"summarise_user_lines": true}]}
        ]}));
        let c = convo("what is the code name?", 0);
        assert_eq!(
            text_of_outcome(decide(find_rule(&rs, &c), &c, day())),
            "It is HERON-7 ((not in my context))."
        );
        let c = convo(
            "Summarise this\n<x>\nuser: I am Alice\nassistant: hi\n- user: budget is 40k\ntool t(): user: no",
            0,
        );
        assert_eq!(
            text_of_outcome(decide(find_rule(&rs, &c), &c, day())),
            "- user: I am Alice\n- user: budget is 40k"
        );
        assert!(RuleSet::parse(br#"{"rules": [{"match": "x", "steps": [{"summarise_user_lines": false}]}]}"#).is_err());
    }

    #[test]
    fn placeholders_fill_text_and_call_arguments() {
        let rs = rules(json!({"rules": [{"match": "week", "steps": [
            {"tool_calls": [{"name": "calendar_events", "arguments": {"from": "{{week_start}}", "to": "{{week_end}}", "n": 1, "q": ["{{today}}"]}}]},
            {"text_from_template": "{{today}} {{last_user_text}}"}
        ]}]}));
        let c = convo("my week", 0);
        match decide(find_rule(&rs, &c), &c, day()) {
            Outcome::Reply(r) => assert_eq!(
                r.calls[0].arguments,
                json!({"from": "2026-01-05", "to": "2026-01-11", "n": 1, "q": ["2026-01-07"]})
            ),
            other => panic!("{other:?}"),
        }
        let c = convo("my week", 1);
        assert_eq!(text_of_outcome(decide(find_rule(&rs, &c), &c, day())), "2026-01-07 my week");
        let sunday = NaiveDate::from_ymd_opt(2026, 1, 11).unwrap();
        let p = Placeholders {
            last_user_text: "",
            last_tool_result: "",
            context_text: "",
            today: sunday,
        };
        assert_eq!(p.fill("{{week_start}}..{{week_end}}"), "2026-01-05..2026-01-11");
    }

    fn text_of_outcome(o: Outcome) -> String {
        match o {
            Outcome::Reply(r) => r.text,
            other => panic!("expected a reply, got {other:?}"),
        }
    }

    #[test]
    fn the_first_matching_rule_wins_and_model_narrows() {
        let rs = rules(json!({"rules": [
            {"match": "week", "model": "other", "steps": [{"text": "other model"}]},
            {"match": "week", "steps": [{"text": "first"}]},
            {"match": "my week", "steps": [{"text": "second"}]}
        ]}));
        let c = convo("show my week please", 0);
        assert_eq!(text_of_outcome(decide(find_rule(&rs, &c), &c, day())), "first");
        let c2 = Conversation {
            model: "other".into(),
            ..c
        };
        assert_eq!(text_of_outcome(decide(find_rule(&rs, &c2), &c2, day())), "other model");
    }

    #[test]
    fn raw_string_arguments_are_accepted_and_other_non_objects_are_not() {
        let ok = RuleSet::parse(br#"{"rules": [{"match": "x", "steps": [{"tool_calls": [{"name": "t", "arguments": "{broken"}]}]}]}"#);
        assert!(ok.is_ok());
        let bad = RuleSet::parse(br#"{"rules": [{"match": "x", "steps": [{"tool_calls": [{"name": "t", "arguments": [1]}]}]}]}"#);
        assert!(bad.is_err());
    }

    #[test]
    fn no_rule_gives_the_default_reply() {
        let c = convo("hello", 0);
        assert_eq!(text_of_outcome(decide(None, &c, day())), "You said: hello");
    }

    #[test]
    fn steps_advance_and_the_last_text_step_repeats() {
        let rs = rules(json!({"rules": [{"match": "x", "steps": [
            {"tool_calls": [{"name": "files_list", "arguments": {"path": "/"}}]},
            {"text": "done"}
        ]}]}));
        let at = |n| decide(find_rule(&rs, &convo("x", n)), &convo("x", n), day());
        match at(0) {
            Outcome::Reply(r) => {
                assert_eq!(
                    r.calls,
                    vec![ScriptedCall {
                        name: "files_list".into(),
                        arguments: json!({"path": "/"}),
                        id: None,
                        index: None,
                    }]
                );
                assert_eq!(r.text, "");
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(text_of_outcome(at(1)), "done");
        assert_eq!(text_of_outcome(at(5)), "done");
    }

    #[test]
    fn calls_as_text_move_into_the_text() {
        let rs = rules(json!({"rules": [{"match": "x", "steps": [
            {"text": "Checking.", "tool_calls": [{"name": "files_list", "arguments": {"path": "{{today}}"}}], "as_text": "hermes"}
        ]}]}));
        match decide(find_rule(&rs, &convo("x", 0)), &convo("x", 0), day()) {
            Outcome::Reply(r) => {
                assert!(r.calls.is_empty());
                assert_eq!(
                    r.text,
                    "Checking.<tool_call>\n{\"arguments\":{\"path\":\"2026-01-07\"},\"name\":\"files_list\"}\n</tool_call>"
                );
            }
            other => panic!("{other:?}"),
        }
        for bad in [
            json!({"rules": [{"match": "x", "steps": [{"text": "a", "as_text": "hermes"}]}]}),
            json!({"rules": [{"match": "x", "steps": [{"tool_calls": [{"name": "a"}], "as_text": "xml"}]}]}),
        ] {
            assert!(RuleSet::parse(bad.to_string().as_bytes()).is_err(), "accepted {bad}");
        }
    }

    #[test]
    fn a_script_ending_in_a_tool_call_is_exhausted() {
        let rs = rules(json!({"rules": [{"match": "x", "steps": [{"tool_calls": [{"name": "a"}]}]}]}));
        assert_eq!(
            text_of_outcome(decide(find_rule(&rs, &convo("x", 1)), &convo("x", 1), day())),
            EXHAUSTED
        );
    }

    #[test]
    fn echo_and_template_quote_the_tool_result() {
        let rs = rules(json!({"rules": [
            {"match": "echo", "steps": [{"echo_tool_result": true}]},
            {"match": "tpl", "steps": [{"text_from_template": "got [{{last_tool_result}}] for {{last_user_text}}"}]}
        ]}));
        let c = convo("echo", 0);
        assert_eq!(
            text_of_outcome(decide(find_rule(&rs, &c), &c, day())),
            "<tool-result>data</tool-result>"
        );
        let c = convo("tpl", 0);
        assert_eq!(
            text_of_outcome(decide(find_rule(&rs, &c), &c, day())),
            "got [<tool-result>data</tool-result>] for tpl"
        );
    }

    #[test]
    fn error_hang_and_abort_steps_decide_accordingly() {
        let rs = rules(json!({"rules": [
            {"match": "err", "steps": [{"error": {"status": 503, "message": "overloaded"}}]},
            {"match": "hang", "steps": [{"hang": true}]},
            {"match": "cut", "steps": [{"abort_after_chars": 3, "text": "abcdef", "chunk_chars": 1, "delay_ms": 5}]},
            {"match": "limited", "steps": [{"error": {"status": 429, "message": "slow down", "retry_after_secs": 7}}]},
            {"match": "halfway", "steps": [{"abort_after_chars": 2, "mid_chunk": true, "text": "abcdef"}]},
            {"match": "stall", "steps": [{"stall_after_chars": 2, "text": "abcdef"}]},
            {"match": "portal", "steps": [{"html": "<html></html>"}]}
        ]}));
        let d = |u: &str| decide(find_rule(&rs, &convo(u, 0)), &convo(u, 0), day());
        assert_eq!(
            d("err"),
            Outcome::Fail {
                status: StatusCode::SERVICE_UNAVAILABLE,
                message: "overloaded".into(),
                retry_after_secs: None,
            }
        );
        assert_eq!(
            d("limited"),
            Outcome::Fail {
                status: StatusCode::TOO_MANY_REQUESTS,
                message: "slow down".into(),
                retry_after_secs: Some(7),
            }
        );
        assert_eq!(d("portal"), Outcome::Html("<html></html>".into()));
        match (d("halfway"), d("stall")) {
            (Outcome::Reply(cut), Outcome::Reply(stall)) => {
                assert_eq!((cut.abort_after_chars, cut.cut_mid_chunk), (Some(2), true));
                assert_eq!((stall.stall_after_chars, stall.abort_after_chars), (Some(2), None));
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(d("hang"), Outcome::Hang);
        match d("cut") {
            Outcome::Reply(r) => {
                assert_eq!(r.abort_after_chars, Some(3));
                assert_eq!(r.pacing.chunk_chars, 1);
                assert_eq!(r.pacing.delay, Duration::from_millis(5));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn malformed_steps_are_refused_with_a_reason() {
        let bad = [
            json!({"rules": [{"match": "x", "steps": []}]}),
            json!({"rules": [{"match": "x", "steps": [{}]}]}),
            json!({"rules": [{"match": "x", "steps": [{"text": "a", "hang": true}]}]}),
            json!({"rules": [{"match": "x", "steps": [{"abort_after_chars": 3}]}]}),
            json!({"rules": [{"match": "x", "steps": [{"stall_after_chars": 3}]}]}),
            json!({"rules": [{"match": "x", "steps": [{"text": "a", "mid_chunk": true}]}]}),
            json!({"rules": [{"match": "x", "steps": [{"html": "<p>", "text": "a"}]}]}),
            json!({"rules": [{"match": "x", "steps": [{"error": {"status": 200, "message": "no"}}]}]}),
            json!({"rules": [{"match": "x", "steps": [{"text": "a", "chunk_chars": 0}]}]}),
            json!({"rules": [{"match": "x", "steps": [{"tool_calls": []}]}]}),
            json!({"rules": [{"match": "x", "steps": [{"tool_calls": [{"name": "a", "arguments": [1]}]}]}]}),
            json!({"rules": [{"match": "x", "steps": [{"txt": "typo"}]}]}),
            json!({"rules": [{"steps": [{"text": "no match"}]}]}),
            json!({"rule": []}),
        ];
        for b in bad {
            assert!(
                matches!(RuleSet::parse(b.to_string().as_bytes()), Err(Error::BadScripts(_))),
                "accepted {b}"
            );
        }
    }

    #[test]
    fn model_names_come_from_rules() {
        let rs = rules(json!({"rules": [
            {"match": "a", "model": "m1", "steps": [{"text": "x"}]},
            {"match": "b", "steps": [{"text": "x"}]}
        ]}));
        assert_eq!(model_names(&rs).collect::<Vec<_>>(), vec!["m1"]);
    }
}
