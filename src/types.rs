//! Small types that several layers share: a leaf, importing no module of this crate, so that
//! anything (the configuration included) may use them without an arrow pointing up.
//!
//! It must never grow behaviour of a part: a type, constant or one-line rule lands here only
//! when modules of different layers both need it (the configuration that validates a value and
//! the part that uses it).

use secrecy::{ExposeSecret, SecretString};

/// A secret of the configuration (the proxy and signing secrets, the model key). Its `Debug`
/// is secrecy's `[REDACTED]`, so a stray `{:?}` of the config (or of anything holding one)
/// cannot leak it, and it is zeroed when dropped. The value leaves only through [`Secret::expose`],
/// at the one place that uses it.
#[derive(Clone, Debug)]
pub struct Secret(SecretString);

impl Secret {
    pub fn new(value: impl Into<String>) -> Self {
        Secret(SecretString::from(value.into()))
    }
    pub fn expose(&self) -> &str {
        self.0.expose_secret()
    }
}

/// Which configured model a turn talks to first (an assistant's `model`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ModelRole {
    /// `TAMEBI_MODEL`, falling back to `TAMEBI_FALLBACK_MODEL` before its first chunk.
    #[default]
    Primary,
    /// `TAMEBI_FALLBACK_MODEL` only.
    Fallback,
}

/// The server name the orchestrator's own tools (`memory`) are registered under: reserved in
/// `TAMEBI_MCP_SERVERS` and in the assistants file's tool patterns.
pub const LOCAL_SERVER: &str = "tamebi";

/// An MCP server name as configured (`TAMEBI_MCP_SERVERS`) and as the credentials header names
/// it (G1, `auth::identity`): `[A-Za-z0-9_-]`, 1–64 characters.
pub fn valid_server_name(name: &str) -> bool {
    !name.is_empty() && name.len() <= 64 && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}
