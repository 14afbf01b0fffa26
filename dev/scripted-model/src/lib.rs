//! scripted-model: the one stand-in for the model provider.
//!
//! A real HTTP server that speaks OpenAI's chat-completions wire format (streamed and not,
//! with tool calls) and answers from scripts that tests write. It validates requests like a
//! strict provider, so the orchestrator's mistakes show up here rather than in production.
//!
//! Modules:
//! - `openai`: request shapes and validation; response objects exactly as OpenAI writes them.
//! - `script`: rules and steps, and the pure, stateless choice of the next answer.
//! - `call`: the shape of one scripted tool call (shared by `script`, `reply`, `text_form`).
//! - `text_form`: tool calls written into the text, as models without a tool-call parser do.
//! - `reply`: the answer as a paced SSE stream or a whole completion.
//! - `control`: the test-only rule store and request log behind `/__scripts`, `/__requests`.
//! - `server`: the router, `serve` (HTTP/1.1) and `serve_h2c` (also HTTP/2 prior knowledge).
//! - `error`: the one error type, always sent in OpenAI's error shape.
//!
//! It never calls out to any network and never holds a credential: it is a test tool.

pub mod call;
pub mod control;
pub mod error;
pub mod openai;
pub mod reply;
pub mod script;
pub mod server;
pub mod text_form;

pub use error::Error;
pub use server::{AppState, app, serve, serve_h2c};

/// Reads `{"rules": [...]}` from a `--scripts` file.
pub fn load_rules_file(path: &std::path::Path) -> Result<Vec<script::Rule>, Error> {
    let bytes = std::fs::read(path).map_err(|source| Error::ScriptsFile {
        path: path.display().to_string(),
        source,
    })?;
    Ok(script::RuleSet::parse(&bytes)?.rules)
}
