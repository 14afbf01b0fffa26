//! G3: approval before anything with an effect. The policy comes from the tool's own MCP
//! annotations, so a new MCP server inherits it with no code change, and it fails closed.
//!
//! | annotations                                  | category | approval |
//! |----------------------------------------------|----------|----------|
//! | readOnlyHint: true (and not destructive)      | data     | no       |
//! | destructiveHint: true                         | action   | yes      |
//! | idempotentHint: true, destructiveHint: false  | action   | no       |
//! | absent, partial or contradictory              | action   | yes      |
//!
//! The last row matters most: a server nobody has audited yet defaults to "ask".

use rmcp::model::ToolAnnotations;
use serde::Serialize;

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

/// Derives the policy for a tool from its annotations.
pub fn policy_for(annotations: Option<&ToolAnnotations>) -> Policy {
    const ASK: Policy = Policy {
        category: Category::Action,
        needs_approval: true,
    };
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
        assert_eq!(policy_for(None), ask);
        assert_eq!(policy_for(Some(&ann(None, None, None))), ask);
        assert_eq!(policy_for(Some(&ann(Some(true), None, None))), data);
        assert_eq!(policy_for(Some(&ann(Some(true), Some(false), None))), data);
        assert_eq!(policy_for(Some(&ann(Some(false), Some(true), None))), ask);
        assert_eq!(policy_for(Some(&ann(None, Some(false), Some(true)))), free_action);
        // Partial: idempotent but destructiveness unstated (MCP default: destructive).
        assert_eq!(policy_for(Some(&ann(None, None, Some(true)))), ask);
        assert_eq!(policy_for(Some(&ann(Some(false), None, None))), ask);
        assert_eq!(policy_for(Some(&ann(None, Some(false), None))), ask);
        // Contradictory: read-only yet destructive. Ask.
        assert_eq!(policy_for(Some(&ann(Some(true), Some(true), None))), ask);
    }
}
