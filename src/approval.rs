//! G3: approval before anything with an effect. The policy comes from the tool's own MCP
//! annotations and from how far the operator trusts the tool's server, so a new MCP server
//! inherits it with no code change, and it fails closed. One pure function decides it,
//! [`policy_for`]; this module never looks at a call's arguments or at who calls.
//!
//! For the operator's own servers (`auth=nextcloud`, [`ServerTrust::Own`]):
//!
//! | annotations                                  | category | approval |
//! |----------------------------------------------|----------|----------|
//! | readOnlyHint: true (and not destructive)      | data     | no       |
//! | destructiveHint: true                         | action   | yes      |
//! | idempotentHint: true, destructiveHint: false  | action   | no       |
//! | absent, partial or contradictory              | action   | yes      |
//!
//! The last row matters most: a server nobody has audited yet defaults to "ask".
//!
//! A server that is not ours (`auth=none`) is a third party: a call sends it its arguments,
//! and the model may have put workspace data in them (an injected document asks for exactly
//! that), so any call to it is a disclosure — an effect, whatever the server says of its tool.
//! [`ServerTrust::ThirdParty`]: every call is an action that asks. [`ServerTrust::Reads`]
//! (the operator's per-server `trust=reads`): only the first row runs unasked; every other
//! call is an action that asks.

use rmcp::model::ToolAnnotations;
use serde::Serialize;

use crate::config::ServerTrust;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Category {
    Data,
    Action,
}

impl Category {
    pub fn as_str(self) -> &'static str {
        match self {
            Category::Data => "data",
            Category::Action => "action",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Policy {
    pub category: Category,
    pub needs_approval: bool,
}

/// A call that waits for the person. Also what a call to a server we do not vouch for is.
const ASK: Policy = Policy {
    category: Category::Action,
    needs_approval: true,
};

/// Derives the policy for a tool from its annotations and its server's trust.
pub fn policy_for(annotations: Option<&ToolAnnotations>, trust: ServerTrust) -> Policy {
    let claimed = policy_from_annotations(annotations);
    match trust {
        ServerTrust::Own => claimed,
        // The operator vouched for this third party's reads only: a tool that claims to be
        // plain data runs as it says; anything else (even an action claiming to be harmless)
        // is an action that asks.
        ServerTrust::Reads if claimed.category == Category::Data => claimed,
        ServerTrust::Reads => ASK,
        // G3: nobody vouched for this server, so what it says of itself decides nothing: any
        // call sends it data, and that disclosure is the effect.
        ServerTrust::ThirdParty => ASK,
    }
}

/// The table of the module doc: what the annotations alone would allow.
fn policy_from_annotations(annotations: Option<&ToolAnnotations>) -> Policy {
    // G3: fail closed. No annotations at all means nobody told us it is harmless.
    let Some(a) = annotations else { return ASK };
    match (a.read_only_hint, a.destructive_hint, a.idempotent_hint) {
        (_, Some(true), _) => ASK,
        (Some(true), _, _) => Policy {
            category: Category::Data,
            needs_approval: false,
        },
        // MCP's default for destructiveHint is true, so "not destructive" must be explicit.
        (_, Some(false), Some(true)) => Policy {
            category: Category::Action,
            needs_approval: false,
        },
        _ => ASK,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ann(ro: Option<bool>, de: Option<bool>, id: Option<bool>) -> ToolAnnotations {
        let mut a = ToolAnnotations::default();
        a.read_only_hint = ro;
        a.destructive_hint = de;
        a.idempotent_hint = id;
        a
    }

    #[test]
    fn the_table_holds() {
        let data = Policy {
            category: Category::Data,
            needs_approval: false,
        };
        let ask = Policy {
            category: Category::Action,
            needs_approval: true,
        };
        let free_action = Policy {
            category: Category::Action,
            needs_approval: false,
        };
        let own = |a: Option<&ToolAnnotations>| policy_for(a, ServerTrust::Own);
        assert_eq!(own(None), ask);
        assert_eq!(own(Some(&ann(None, None, None))), ask);
        assert_eq!(own(Some(&ann(Some(true), None, None))), data);
        assert_eq!(own(Some(&ann(Some(true), Some(false), None))), data);
        assert_eq!(own(Some(&ann(Some(false), Some(true), None))), ask);
        assert_eq!(own(Some(&ann(None, Some(false), Some(true)))), free_action);
        // Partial: idempotent but destructiveness unstated (MCP default: destructive).
        assert_eq!(own(Some(&ann(None, None, Some(true)))), ask);
        assert_eq!(own(Some(&ann(Some(false), None, None))), ask);
        assert_eq!(own(Some(&ann(None, Some(false), None))), ask);
        // Contradictory: read-only yet destructive. Ask.
        assert_eq!(own(Some(&ann(Some(true), Some(true), None))), ask);
    }

    /// Issue #27: a call to a server we do not vouch for sends it data, so it asks, whatever
    /// the server says; `trust=reads` lets exactly the read-only row through, and nothing else.
    #[test]
    fn a_third_party_is_asked_for_unless_its_reads_are_vouched_for() {
        let every = [
            None,
            Some(ann(None, None, None)),
            Some(ann(Some(true), None, None)),
            Some(ann(Some(true), Some(false), None)),
            Some(ann(Some(false), Some(true), None)),
            Some(ann(None, Some(false), Some(true))),
            Some(ann(None, None, Some(true))),
            Some(ann(Some(true), Some(true), None)),
            Some(ann(Some(true), Some(false), Some(true))),
        ];
        for a in &every {
            let own = policy_for(a.as_ref(), ServerTrust::Own);
            assert_eq!(policy_for(a.as_ref(), ServerTrust::ThirdParty), ASK, "{a:?}");
            // Reads: exactly ours where ours is plain data; an action that asks otherwise.
            let plain_read = own.category == Category::Data && !own.needs_approval;
            let reads = policy_for(a.as_ref(), ServerTrust::Reads);
            assert_eq!(reads, if plain_read { own } else { ASK }, "{a:?}");
        }
        let weather = ann(Some(true), None, None);
        assert!(policy_for(Some(&weather), ServerTrust::ThirdParty).needs_approval);
        assert!(!policy_for(Some(&weather), ServerTrust::Reads).needs_approval);
        // An action that claims to be harmless is still an action: vouched-for reads do not cover it.
        assert!(policy_for(Some(&ann(None, Some(false), Some(true))), ServerTrust::Reads).needs_approval);
    }
}
