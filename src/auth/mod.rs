//! Who is calling, and with which Nextcloud credential.
//!
//! - [`identity`] is G1: the only place that turns request headers into a uid.
//! - [`redact`] keeps credentials out of logs.
//!
//! Nothing here decides what a user may read or do. That is Nextcloud's answer alone.

pub mod identity;
pub mod redact;

pub use identity::{Caller, NcBearer};
