//! Who is calling, and with which credentials.
//!
//! - [`identity`] is G1: the only place that turns request headers into a uid and the
//!   caller's per-server tokens.
//! - [`replay`] refuses a signed request seen before within its validity window.
//! - [`redact`] keeps credentials out of logs.
//!
//! Nothing here decides what a user may read or do. That is Nextcloud's answer alone.

pub mod identity;
pub mod redact;
pub mod replay;

pub use identity::{Caller, Credentials, NcBearer};
