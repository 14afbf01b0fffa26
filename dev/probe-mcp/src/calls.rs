//! The call log: every `tools/call` the probe received, known tool or not, in order.
//!
//! It exists so a test can prove a negative ("the destructive call never reached the
//! server"). It records the tool name, the arguments and a sha256 of the bearer (so a test
//! can check whose credential came along) — never the bearer itself.

use serde::Serialize;
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::sync::Mutex;

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct RecordedCall {
    pub seq: u64,
    pub name: String,
    pub arguments: Value,
    /// Whether the name was an installed tool at the time of the call.
    pub known: bool,
    /// sha256 (hex) of the bearer token, when one was sent.
    pub bearer_sha256: Option<String>,
}

/// Shared, append-only until cleared. The lock is never held across an await.
#[derive(Default)]
pub struct CallLog {
    calls: Mutex<Vec<RecordedCall>>,
}

impl CallLog {
    pub fn record(&self, name: &str, arguments: Value, known: bool, bearer: Option<&str>) {
        let mut calls = self.calls.lock().unwrap_or_else(|e| e.into_inner());
        let seq = calls.len() as u64 + 1;
        let bearer_sha256 = bearer.map(|b| hex::encode(Sha256::digest(b.as_bytes())));
        calls.push(RecordedCall {
            seq,
            name: name.to_string(),
            arguments,
            known,
            bearer_sha256,
        });
    }

    pub fn all(&self) -> Vec<RecordedCall> {
        self.calls.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    pub fn clear(&self) {
        self.calls.lock().unwrap_or_else(|e| e.into_inner()).clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_in_order_without_the_bearer() {
        let log = CallLog::default();
        log.record("a", serde_json::json!({"x": 1}), true, Some("secret-token"));
        log.record("b", Value::Null, false, None);
        let all = log.all();
        assert_eq!(all.iter().map(|c| c.seq).collect::<Vec<_>>(), vec![1, 2]);
        let text = serde_json::to_string(&all).unwrap();
        assert!(!text.contains("secret-token"));
        assert_eq!(
            all[0].bearer_sha256.as_deref(),
            Some(hex::encode(Sha256::digest(b"secret-token")).as_str())
        );
        log.clear();
        assert!(log.all().is_empty());
    }
}
