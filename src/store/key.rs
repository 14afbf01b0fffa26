//! The keys every store query is made with: [`UserId`] and [`ConversationKey`].
//!
//! Both are built only from a verified [`Caller`] (G1: the uid comes from the signature the
//! identity layer checked, never from a path or a body), so a store function cannot be
//! handed a bare string that nobody verified. A conversation id is chosen by the client and
//! is never trusted alone: it is always paired with the signed uid, which is why bob's "c1"
//! and alice's "c1" are different conversations and a guessed id reaches nothing.

use std::fmt;

use crate::auth::Caller;
use crate::error::Error;

/// The signed uid of the person a query is for.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct UserId(String);

impl UserId {
    /// The verified caller's uid.
    pub fn of(caller: &Caller) -> UserId {
        UserId(caller.uid.clone())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for UserId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// One user's conversation: (signed uid, client-chosen id).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ConversationKey {
    uid: UserId,
    id: String,
}

impl ConversationKey {
    /// The caller's conversation `id`. `BadRequest` when the id is not 1–64 characters of
    /// `[A-Za-z0-9_-]` (ids end up in logs, traces and routing hashes: keep them plain).
    pub fn new(caller: &Caller, id: &str) -> Result<ConversationKey, Error> {
        Self::for_user(UserId::of(caller), id)
    }

    /// Another conversation of a user already verified.
    pub fn for_user(uid: UserId, id: &str) -> Result<ConversationKey, Error> {
        if !valid_conversation_id(id) {
            return Err(Error::BadRequest("conversation id must be 1-64 characters of [A-Za-z0-9_-]".into()));
        }
        Ok(ConversationKey { uid, id: id.to_string() })
    }

    pub fn user(&self) -> &UserId {
        &self.uid
    }

    pub fn uid(&self) -> &str {
        self.uid.as_str()
    }

    pub fn id(&self) -> &str {
        &self.id
    }
}

/// A conversation id chosen by the client: 1–64 characters of `[A-Za-z0-9_-]`.
pub fn valid_conversation_id(id: &str) -> bool {
    !id.is_empty() && id.len() <= 64 && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// Keys for tests: a caller as the identity layer would have verified it.
#[cfg(test)]
pub(crate) fn test_caller(uid: &str) -> Caller {
    Caller {
        uid: uid.into(),
        request_id: "req_test".into(),
        credentials: Default::default(),
        language: None,
    }
}

#[cfg(test)]
pub(crate) fn test_key(uid: &str, id: &str) -> ConversationKey {
    ConversationKey::new(&test_caller(uid), id).unwrap()
}

#[cfg(test)]
pub(crate) fn test_user(uid: &str) -> UserId {
    UserId::of(&test_caller(uid))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_carry_the_signed_uid_and_a_plain_id() {
        let k = test_key("alice", "c-1_x");
        assert_eq!((k.uid(), k.id()), ("alice", "c-1_x"));
        assert_ne!(k, test_key("bob", "c-1_x"));
        for bad in ["", "../x", "a b", &"x".repeat(65)] {
            assert!(ConversationKey::new(&test_caller("alice"), bad).is_err(), "{bad:?}");
        }
    }
}
