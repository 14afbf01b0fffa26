//! Where a conversation was started: the Tamebi page itself (no origin), or the Smart Picker
//! in another Nextcloud app (issue #29). Shown in the person's conversation list ("from Talk").
//!
//! Owns: the short closed set of origins and its wire names. Must never: accept a name outside
//! that set (anything else is a 400 before a turn starts), or carry anything that says who the
//! person is (G1: the uid comes from the signed headers only).

use serde::{Deserialize, Serialize};

/// An app whose Smart Picker opened the conversation. The wire name is the lower-case variant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Origin {
    /// Talk's message composer.
    Talk,
    /// The Text editor (Files, Notes).
    Text,
    /// A Collectives page.
    Collectives,
    /// Mail's composer.
    Mail,
    /// The Smart Picker of any other app.
    Picker,
}

impl Origin {
    const ALL: [Origin; 5] = [Origin::Talk, Origin::Text, Origin::Collectives, Origin::Mail, Origin::Picker];

    /// The name stored in chat.db and sent on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Origin::Talk => "talk",
            Origin::Text => "text",
            Origin::Collectives => "collectives",
            Origin::Mail => "mail",
            Origin::Picker => "picker",
        }
    }

    /// The origin with this exact name; `None` for anything else (a stored value from a newer
    /// build reads as no origin rather than failing the whole list).
    pub fn parse(name: &str) -> Option<Origin> {
        Origin::ALL.into_iter().find(|o| o.as_str() == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_nothing_else_parses() {
        for o in Origin::ALL {
            assert_eq!(Origin::parse(o.as_str()), Some(o));
            assert_eq!(serde_json::to_value(o).unwrap(), serde_json::json!(o.as_str()));
        }
        for bad in ["", "Talk", "spreed", "talk ", "files", "../talk"] {
            assert_eq!(Origin::parse(bad), None, "{bad:?}");
            assert!(serde_json::from_value::<Origin>(serde_json::json!(bad)).is_err(), "{bad:?}");
        }
    }
}
