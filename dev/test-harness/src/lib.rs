//! The shared end-to-end test harness.
//!
//! Every test that needs a real process (the `tamebi` orchestrator, `mcp-nextcloud`, the
//! scripted model, llama.cpp's server, the Nextcloud stand-in) starts it through this crate, so that ports,
//! readiness, logs and cleanup work the same way everywhere. One module per process kind;
//! this file holds what they share. It never mocks a component: it only starts real ones.
//!
//! [`talk`] serves the app's Talk webhook under `php -S` and sets up a stand-in Talk room.
//!
//! [`layers`] is the one reader of a crate's module imports behind every layering test.
//!
//! Processes are killed when their handle drops, and their stdout/stderr are kept in files
//! whose paths are printed when a test fails, so a red test says where to look.

pub mod docserver;
pub mod fault_proxy;
pub mod haproxy;
pub mod island;
pub mod layers;
pub mod llama_server;
pub mod mcp_mail;
pub mod mcp_nextcloud;
pub mod mcp_server;
pub mod orchestrator;
pub mod otlp;
pub mod postgres;
pub mod probe_mcp;
pub mod process;
pub mod scripted_model;
pub mod small_fs;
pub mod standin;
pub mod talk;

pub use process::{Process, free_port, wait_until, workspace_root};

/// Path of a workspace binary, building it first (once per test process) if needed.
///
/// Tests in one package cannot rely on cargo having built another package's binaries, so
/// the harness asks cargo itself. `features` is passed through (`tamebi/fault-injection`).
pub fn workspace_bin(package: &str, bin: &str, features: &[&str]) -> std::path::PathBuf {
    process::ensure_built(package, bin, features)
}
