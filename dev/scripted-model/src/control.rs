//! Test-only runtime control: the rule store (`POST`/`DELETE /__scripts`) and the log of
//! the last 1,000 requests received (`GET`/`DELETE /__requests`).
//!
//! Locks here are std locks held only for a few synchronous lines, never across an await.
//! This module never decides what the model says; it only keeps the rules `script` reads.

use std::collections::VecDeque;
use std::sync::{Mutex, RwLock};

use serde::Serialize;

use crate::openai::Conversation;
use crate::script::{self, Outcome, Rule};

/// How many request bodies the log keeps (oldest dropped first).
pub const LOG_CAPACITY: usize = 1000;

/// The model name always served, whatever the rules say.
pub const DEFAULT_MODEL: &str = "scripted";

/// Rules from `--scripts` plus rules added at run time (which take precedence).
pub struct Scripts {
    from_file: Vec<Rule>,
    runtime: RwLock<Vec<Rule>>,
}

impl Scripts {
    pub fn new(from_file: Vec<Rule>) -> Scripts {
        Scripts {
            from_file,
            runtime: RwLock::new(Vec::new()),
        }
    }

    /// Puts `rules` in front of every rule already known, keeping their order.
    pub fn prepend(&self, mut rules: Vec<Rule>) {
        let mut runtime = self.runtime.write().unwrap_or_else(|e| e.into_inner());
        rules.append(&mut runtime);
        *runtime = rules;
    }

    pub fn clear_runtime(&self) {
        self.runtime.write().unwrap_or_else(|e| e.into_inner()).clear();
    }

    /// Decides the answer for `convo` under the current rules.
    pub fn decide(&self, convo: &Conversation) -> Outcome {
        let runtime = self.runtime.read().unwrap_or_else(|e| e.into_inner());
        let rule = script::find_rule(runtime.iter().chain(&self.from_file), convo);
        script::decide(rule, convo, chrono::Utc::now().date_naive())
    }

    /// "scripted" and every model a rule names, without duplicates, in first-seen order.
    pub fn models(&self) -> Vec<String> {
        let runtime = self.runtime.read().unwrap_or_else(|e| e.into_inner());
        let mut names = vec![DEFAULT_MODEL.to_string()];
        for name in script::model_names(runtime.iter().chain(&self.from_file)) {
            if !names.iter().any(|n| n == name) {
                names.push(name.to_string());
            }
        }
        names
    }
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LoggedRequest {
    /// RFC 3339 with milliseconds, UTC.
    pub received_at: String,
    /// The body as JSON, or as a string when it was not JSON.
    pub body: serde_json::Value,
    /// `HTTP/1.1` or `HTTP/2.0`: how the client reached us.
    pub http_version: String,
}

#[derive(Default)]
pub struct RequestLog {
    entries: Mutex<VecDeque<LoggedRequest>>,
}

impl RequestLog {
    pub fn record(&self, raw: &[u8], version: axum::http::Version) {
        let body = serde_json::from_slice(raw).unwrap_or_else(|_| serde_json::Value::String(String::from_utf8_lossy(raw).into_owned()));
        let received_at = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        if entries.len() == LOG_CAPACITY {
            entries.pop_front();
        }
        entries.push_back(LoggedRequest {
            received_at,
            body,
            http_version: format!("{version:?}"),
        });
    }

    /// Oldest first.
    pub fn snapshot(&self) -> Vec<LoggedRequest> {
        self.entries.lock().unwrap_or_else(|e| e.into_inner()).iter().cloned().collect()
    }

    pub fn clear(&self) {
        self.entries.lock().unwrap_or_else(|e| e.into_inner()).clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::script::RuleSet;
    use serde_json::json;

    fn rules(v: serde_json::Value) -> Vec<Rule> {
        RuleSet::parse(v.to_string().as_bytes()).unwrap().rules
    }

    fn convo(text: &str) -> Conversation {
        Conversation {
            model: "scripted".into(),
            stream: false,
            include_usage: false,
            last_user_text: text.into(),
            steps_taken: 0,
            last_tool_result: None,
            prompt_tokens: 1,
            context_text: String::new(),
        }
    }

    fn said(o: Outcome) -> String {
        match o {
            Outcome::Reply(r) => r.text,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn later_runtime_rules_beat_earlier_ones_and_the_file() {
        let s = Scripts::new(rules(json!({"rules": [{"match": "x", "steps": [{"text": "file"}]}]})));
        assert_eq!(said(s.decide(&convo("x"))), "file");
        s.prepend(rules(json!({"rules": [{"match": "x", "steps": [{"text": "one"}]}]})));
        assert_eq!(said(s.decide(&convo("x"))), "one");
        s.prepend(rules(
            json!({"rules": [{"match": "x", "steps": [{"text": "two"}]}, {"match": "y", "steps": [{"text": "y"}]}]}),
        ));
        assert_eq!(said(s.decide(&convo("x"))), "two");
        s.clear_runtime();
        assert_eq!(said(s.decide(&convo("x"))), "file");
        assert_eq!(said(s.decide(&convo("zzz"))), "You said: zzz");
    }

    #[test]
    fn models_list_scripted_first_without_duplicates() {
        let s = Scripts::new(rules(json!({"rules": [{"match": "", "model": "m1", "steps": [{"text": "a"}]}]})));
        s.prepend(rules(json!({"rules": [{"match": "", "model": "m1", "steps": [{"text": "a"}]}, {"match": "", "model": "scripted", "steps": [{"text": "a"}]}]})));
        assert_eq!(s.models(), vec!["scripted", "m1"]);
    }

    #[test]
    fn the_log_keeps_the_last_thousand() {
        let log = RequestLog::default();
        for i in 0..LOG_CAPACITY + 5 {
            log.record(json!({"n": i}).to_string().as_bytes(), axum::http::Version::HTTP_11);
        }
        log.record(b"not json", axum::http::Version::HTTP_2);
        let all = log.snapshot();
        assert_eq!(all.len(), LOG_CAPACITY);
        assert_eq!(all[0].body["n"], 6);
        assert_eq!(all[LOG_CAPACITY - 1].body, json!("not json"));
        assert_eq!(all[0].http_version, "HTTP/1.1");
        assert_eq!(all[LOG_CAPACITY - 1].http_version, "HTTP/2.0");
        log.clear();
        assert!(log.snapshot().is_empty());
    }
}
