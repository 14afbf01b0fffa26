//! The orchestrator's imports run one way, down (issue 34; STYLE 4b): each module may use only
//! modules of a lower layer. The allowed directions are written down once, in [`LAYERS`]
//! (docs/architecture.md, "Layers", draws the same table); a `crate::…`, `super::…` or
//! `self::…` path against it fails here, naming the file and line, so a ring like the old one
//! (config building the stores and assistants, which imported config back) cannot come back
//! unnoticed. The graph is read by the workspace's one reader (`test_harness::layers`).

use std::path::Path;
use test_harness::layers::Layers;

/// Lowest first; `a|b` are modules of one layer, which may not import each other. An entry is
/// a module path: a file belongs to the most specific entry above it (`actors::tool_server`
/// sits below `services`, the conversation actors above `turn`). Imports inside one entry are
/// its own business. `lib.rs` and `main.rs` wire everything together and sit above all.
const LAYERS: &[&str] = &[
    // Leaves: plain shared types, the closed set of conversation origins and the
    // fault-injection markers (test builds).
    "types|fault|origin",
    // The environment parsed into plain data; nothing of the domain.
    "config",
    // Pure pieces: G1 identity and log redaction, the G2 envelope, the UI message shapes, G3
    // policy, the stream log, the MCP Apps CSP.
    "auth|untrusted|ui_stream|approval|stream_log|apps",
    "telemetry",
    "model|actors::running_turns",
    "error|context",
    "compaction",
    "store",
    "auth::replay|mcp",
    "memory|assistants|actors::tool_server",
    // What admins and people registered inside Nextcloud, composed with the operator's assistants.
    "registry",
    "services",
    // One agent turn; a Talk room's turn (no tools, no memory, never the person's authority).
    "turn|talk",
    "actors",
    "http",
];

#[test]
fn imports_only_reach_down() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let (wrong, checked) = Layers::new(LAYERS).check(&src);
    assert!(wrong.is_empty(), "imports against the layering:\n{}", wrong.join("\n"));
    assert!(checked > 300, "the scan found only {checked} imports; is it reading src/?");
}
