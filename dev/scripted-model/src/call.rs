//! The one shape of a tool call a script asks for: what `script` reads from a step, and what
//! `reply` streams and `text_form` writes into text. A leaf (it imports nothing of the crate),
//! so that the script and the forms it names need not import each other.

/// One tool call of a step, as the script gives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScriptedCall {
    pub name: String,
    pub arguments: serde_json::Value,
    /// A hostile provider's choice: this tool-call id instead of a fresh `call_<n>`.
    pub id: Option<String>,
    /// A hostile provider's choice: this stream `index` instead of the call's position.
    pub index: Option<u64>,
}
