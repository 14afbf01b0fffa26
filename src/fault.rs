//! The fault-injection markers (test builds only, feature `fault-injection` and
//! `TAMEBI_FAULT_INJECTION=1`): texts a scripted model or a test user writes to provoke one
//! fault in one place, so an end-to-end test can crash exactly one conversation.
//!
//! A leaf: the turn that spots a marker and the actor that acts on it both import it, neither
//! imports the other for it. Nothing here is compiled into a shipped build.

/// Test builds only: a text delta carrying this makes the actor panic (an end-to-end test
/// crashes exactly one conversation with it).
pub const FAULT_PANIC_ACTOR: &str = "FAULT:panic-actor";

/// Test builds only: a user message carrying this, sent to an actor that already ran a turn,
/// finds that actor stopping (as an idle stop between a handler's lookup and its message
/// would): it stops without answering. A fresh actor runs the turn as usual.
pub const FAULT_STOP_BEFORE_TURN: &str = "FAULT:stop-before-turn";
