//! HTTP-level tests of the scripted model: the real server (in-process on port 0, or the
//! real binary through the shared harness), read the way an OpenAI client reads it.
//! One test binary with a module per behaviour, sharing `common`.

mod binary;
mod common;
mod control;
mod streaming;
mod validation;
