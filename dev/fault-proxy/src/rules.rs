//! The faults a test asks for: rules matched against each request, in order, and the log of
//! what was seen. Owns only matching and counting; it never touches the network.

use std::sync::Mutex;

use serde::{Deserialize, Serialize};

/// What to do to a matching request's answer.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum Action {
    /// Answer `status` with a short text body. With `forward`, Nextcloud gets (and carries
    /// out) the request first: a failure that lies about an effect that happened.
    Status {
        status: u16,
        #[serde(default)]
        forward: bool,
    },
    /// Forward, then send the answer's status and headers (with its full `Content-Length`)
    /// and half its body, then reset the connection. An empty body is padded first so there
    /// is a middle to cut.
    ResetMidBody,
    /// Forward, then close the connection without any answer (the effect happened; the
    /// client never hears of it).
    DropAnswer,
    /// Forward, then hold the answer for `secs` seconds before sending it whole.
    Stall { secs: u64 },
    /// Forward, then send only the first half of the body, framed as if it were all of it.
    Truncate,
    /// Forward, then send `body` (and `status`, if given) in place of Nextcloud's answer.
    ReplaceBody {
        body: String,
        #[serde(default)]
        status: Option<u16>,
    },
}

impl Action {
    /// Whether Nextcloud sees the request at all.
    pub fn forwards(&self) -> bool {
        !matches!(self, Action::Status { forward: false, .. })
    }

    pub fn name(&self) -> &'static str {
        match self {
            Action::Status { .. } => "status",
            Action::ResetMidBody => "reset_mid_body",
            Action::DropAnswer => "drop_answer",
            Action::Stall { .. } => "stall",
            Action::Truncate => "truncate",
            Action::ReplaceBody { .. } => "replace_body",
        }
    }
}

/// One rule: which requests (method, a substring of the path) and what to do, how often.
#[derive(Clone, Debug, Deserialize, Serialize)]
pub struct Rule {
    /// The HTTP method, e.g. `PROPFIND`; any when absent.
    #[serde(default)]
    pub method: Option<String>,
    /// A substring the request's path must contain; any when absent.
    #[serde(default)]
    pub path_contains: Option<String>,
    #[serde(flatten)]
    pub action: Action,
    /// How many requests it applies to before it retires; every matching one when absent.
    #[serde(default)]
    pub times: Option<u32>,
}

impl Rule {
    fn matches(&self, method: &str, path: &str) -> bool {
        self.method.as_deref().is_none_or(|m| m.eq_ignore_ascii_case(method))
            && self.path_contains.as_deref().is_none_or(|p| path.contains(p))
    }
}

/// One request as the proxy saw it: what the test counts.
#[derive(Clone, Debug, Serialize)]
pub struct Seen {
    pub method: String,
    pub path: String,
    /// The action applied, if a rule matched.
    pub fault: Option<&'static str>,
}

/// The rules in force and the log, shared by the proxy and the control routes.
#[derive(Default)]
pub struct Faults {
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    rules: Vec<Rule>,
    seen: Vec<Seen>,
}

/// The most requests kept in the log (oldest dropped first).
const MAX_SEEN: usize = 10_000;

impl Faults {
    /// Replaces every rule.
    pub fn set(&self, rules: Vec<Rule>) {
        self.lock().rules = rules;
    }

    /// Logs a request and picks the first rule that matches it (using up one of its `times`).
    pub fn decide(&self, method: &str, path: &str) -> Option<Action> {
        let mut state = self.lock();
        let hit = state.rules.iter().position(|r| r.matches(method, path));
        let action = hit.map(|i| {
            let rule = &mut state.rules[i];
            let action = rule.action.clone();
            if let Some(left) = rule.times.as_mut() {
                *left = left.saturating_sub(1);
                if *left == 0 {
                    state.rules.remove(i);
                }
            }
            action
        });
        if state.seen.len() >= MAX_SEEN {
            state.seen.remove(0);
        }
        state.seen.push(Seen {
            method: method.to_string(),
            path: path.to_string(),
            fault: action.as_ref().map(Action::name),
        });
        action
    }

    pub fn seen(&self) -> Vec<Seen> {
        self.lock().seen.clone()
    }

    pub fn forget_seen(&self) {
        self.lock().seen.clear();
    }

    /// A poisoned lock only means a request task panicked; the rules are still whole.
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(json: serde_json::Value) -> Rule {
        serde_json::from_value(json).unwrap()
    }

    #[test]
    fn first_match_wins_and_times_run_out() {
        let f = Faults::default();
        f.set(vec![
            rule(serde_json::json!({"method": "move", "action": "status", "status": 503, "times": 1})),
            rule(serde_json::json!({"path_contains": "/dav/", "action": "truncate"})),
        ]);
        assert_eq!(
            f.decide("MOVE", "/remote.php/dav/files/a/x"),
            Some(Action::Status {
                status: 503,
                forward: false
            })
        );
        assert_eq!(f.decide("MOVE", "/remote.php/dav/files/a/x"), Some(Action::Truncate));
        assert_eq!(f.decide("GET", "/status.php"), None);
        let seen = f.seen();
        assert_eq!(seen.len(), 3);
        assert_eq!(seen[0].fault, Some("status"));
        assert_eq!(seen[2].fault, None);
    }

    #[test]
    fn only_an_unforwarded_status_keeps_the_request_from_nextcloud() {
        assert!(
            !Action::Status {
                status: 500,
                forward: false
            }
            .forwards()
        );
        assert!(
            Action::Status {
                status: 500,
                forward: true
            }
            .forwards()
        );
        assert!(Action::DropAnswer.forwards());
    }
}
