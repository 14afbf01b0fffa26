//! The orchestrator's own tools: `memory_list`, `memory_write {fact}`, `memory_forget {id}`.
//!
//! They are not an MCP server, but they are defined exactly like MCP tools (name, schema,
//! annotations) and enter the same registry, so the same G3 policy applies to them with no
//! special case: `memory_write` and `memory_forget` are annotated destructive, so the person
//! is asked every time. Memory is read by the model on every later turn, which makes a
//! write a persistent instruction channel; a silent write would turn one injected document
//! into a permanent one (seed 000). This module runs an approved call; it never decides
//! whether a call may run.

use serde_json::{Value, json};

use crate::mcp::registry::ToolDef;
use crate::store::key::ConversationKey;
use crate::store::memory::{Fact, MemoryStore};
use crate::types::LOCAL_SERVER;

/// The local tools' definitions, in MCP's shape. Built once: every turn gets a clone, whose
/// descriptions and schemas are shared rather than copied.
pub fn tool_defs() -> Vec<ToolDef> {
    static DEFS: std::sync::OnceLock<Vec<ToolDef>> = std::sync::OnceLock::new();
    DEFS.get_or_init(build_tool_defs).clone()
}

fn build_tool_defs() -> Vec<ToolDef> {
    let definitions = [
        json!({
            "name": "memory_list",
            "description": "List the facts the user asked you to remember, with their ids.",
            "inputSchema": {"type": "object", "properties": {}, "additionalProperties": false},
            "annotations": {"readOnlyHint": true, "destructiveHint": false}
        }),
        json!({
            "name": "memory_write",
            "description": "Remember one short fact about the user for later conversations. Only when the user \
                            asks you to remember something; the user must approve every write.",
            "inputSchema": {"type": "object", "properties": {"fact": {"type": "string", "maxLength": 500}},
                            "required": ["fact"], "additionalProperties": false},
            "annotations": {"readOnlyHint": false, "destructiveHint": true}
        }),
        json!({
            "name": "memory_forget",
            "description": "Forget one remembered fact by its id. The user must approve it.",
            "inputSchema": {"type": "object", "properties": {"id": {"type": "integer"}},
                            "required": ["id"], "additionalProperties": false},
            "annotations": {"readOnlyHint": false, "destructiveHint": true}
        }),
    ];
    definitions
        .into_iter()
        .filter_map(|d| serde_json::from_value::<rmcp::model::Tool>(d).ok())
        .map(|t| ToolDef::from_mcp(LOCAL_SERVER, crate::config::ServerTrust::Own, &t))
        .collect()
}

/// Test builds only: a `memory_write` whose fact carries this holds its turn's task for
/// two seconds just before the write is queued. It blocks the thread, as a poll under way
/// does when the turn is cancelled (a cancel is seen only at the next poll), so the write is
/// queued after the cancel: an end-to-end test erases the user meanwhile.
#[cfg(feature = "fault-injection")]
pub const FAULT_SLOW_MEMORY_WRITE: &str = "FAULT:slow-memory-write";

/// Test builds only: `FAULT:slow-memory-write-until:<path>` in the fact holds the write the
/// same way, but until a file exists at `<path>` (the test creates it when it has done what
/// must come first), so the test does not race a fixed hold. At most [`FAULT_RELEASE_BOUND`].
/// The path runs to the next whitespace and must not be empty: a marker without one is
/// ignored, like any other marker this build does not know.
#[cfg(feature = "fault-injection")]
pub const FAULT_SLOW_MEMORY_WRITE_UNTIL: &str = "FAULT:slow-memory-write-until:";

/// How long [`FAULT_SLOW_MEMORY_WRITE`] holds the write: well inside the erasure's bound.
#[cfg(feature = "fault-injection")]
const FAULT_HOLD: std::time::Duration = std::time::Duration::from_secs(2);

/// The longest [`FAULT_SLOW_MEMORY_WRITE_UNTIL`] waits for its file (a test that never
/// releases it fails on its own timeouts; the process is not left blocked for good).
#[cfg(feature = "fault-injection")]
const FAULT_RELEASE_BOUND: std::time::Duration = std::time::Duration::from_secs(60);

/// Which hold a `memory_write`'s fact asks for (test builds only).
#[cfg(feature = "fault-injection")]
#[derive(Debug, PartialEq, Eq)]
enum FaultHold<'a> {
    /// [`FAULT_SLOW_MEMORY_WRITE`]: a fixed [`FAULT_HOLD`].
    Fixed,
    /// [`FAULT_SLOW_MEMORY_WRITE_UNTIL`]: until this file exists.
    UntilFile(&'a str),
}

/// The hold the call asks for, if any. Markers are whole words of the fact; the first one wins.
#[cfg(feature = "fault-injection")]
fn fault_hold_of<'a>(tool: &str, arguments: &'a Value) -> Option<FaultHold<'a>> {
    let fact = arguments.get("fact").and_then(Value::as_str).filter(|_| tool == "memory_write")?;
    fact.split_whitespace()
        .find_map(|word| match word.strip_prefix(FAULT_SLOW_MEMORY_WRITE_UNTIL) {
            Some("") => None,
            Some(path) => Some(FaultHold::UntilFile(path)),
            None => (word == FAULT_SLOW_MEMORY_WRITE).then_some(FaultHold::Fixed),
        })
}

/// Waits until `path` exists, at most `bound`; true when the file was seen.
#[cfg(feature = "fault-injection")]
fn wait_for_file(path: &std::path::Path, bound: std::time::Duration) -> bool {
    let deadline = std::time::Instant::now() + bound;
    loop {
        if path.exists() {
            return true;
        }
        if std::time::Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// Test builds only, see [`FAULT_SLOW_MEMORY_WRITE`]; called by the turn when fault injection is on.
#[cfg(feature = "fault-injection")]
pub fn fault_hold_before_write(tool: &str, arguments: &Value) {
    match fault_hold_of(tool, arguments) {
        None => {}
        Some(FaultHold::Fixed) => {
            tracing::warn!(
                hold_ms = telemetry_otlp::int(FAULT_HOLD.as_millis()),
                "fault injection: holding a memory write"
            );
            std::thread::sleep(FAULT_HOLD);
            tracing::warn!("fault injection: memory write released");
        }
        Some(FaultHold::UntilFile(path)) => {
            tracing::warn!(release_file = path, "fault injection: holding a memory write until the file exists");
            if wait_for_file(std::path::Path::new(path), FAULT_RELEASE_BOUND) {
                tracing::warn!(release_file = path, "fault injection: memory write released");
            } else {
                tracing::warn!(
                    release_file = path,
                    bound_secs = telemetry_otlp::int(FAULT_RELEASE_BOUND.as_secs()),
                    "fault injection: the release file never appeared; memory write released at the bound"
                );
            }
        }
    }
}

/// Runs one local tool for the user of conversation `key`. `Ok` is the result text, `Err` the error text; both are
/// written for the model (and reach it enveloped, like any tool output).
pub async fn call(memory: &dyn MemoryStore, key: &ConversationKey, tool: &str, arguments: &Value) -> Result<String, String> {
    let uid = key.user();
    let failed = |e: crate::error::Error| match e {
        crate::error::Error::BadRequest(m) => m,
        // The write fence (store::lease): this instance lost the conversation (another took it
        // over, or an erasure seized it), so the turn's fact is refused; expected, not a fault.
        crate::error::Error::OwnedElsewhere { .. } => {
            "The fact was not saved: this conversation is now served elsewhere (it was moved or its data erased).".to_string()
        }
        other => {
            tracing::error!(error = %other, tool, "memory tool failed");
            "Memory is not available right now. Try again later.".to_string()
        }
    };
    match tool {
        "memory_list" => memory.list(uid).await.map(|facts| list_text(&facts)).map_err(failed),
        "memory_write" => {
            let fact = arguments
                .get("fact")
                .and_then(Value::as_str)
                .ok_or("memory_write needs {\"fact\": \"…\"}.")?;
            let saved = memory.write(uid, fact, Some(key)).await.map_err(failed)?;
            Ok(format!("Remembered as fact {}.", saved.id))
        }
        "memory_forget" => {
            let id = arguments
                .get("id")
                .and_then(Value::as_i64)
                .ok_or("memory_forget needs {\"id\": <number>}.")?;
            match memory.forget(uid, id).await.map_err(failed)? {
                true => Ok(format!("Fact {id} is forgotten.")),
                false => Err(format!("There is no fact {id}.")),
            }
        }
        other => Err(format!("There is no tool named {other}.")),
    }
}

fn list_text(facts: &[Fact]) -> String {
    if facts.is_empty() {
        return "No facts are remembered.".into();
    }
    facts
        .iter()
        .map(|f| format!("[{}] {}", f.id, f.text))
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::approval::Category;
    use crate::store::key::{test_key as key, test_user as user};

    #[test]
    fn writes_and_forgets_need_approval_listing_does_not() {
        let defs = tool_defs();
        let names: Vec<&str> = defs.iter().map(|d| d.name.as_str()).collect();
        assert_eq!(names, ["memory_list", "memory_write", "memory_forget"]);
        assert!(!defs[0].policy.needs_approval && defs[0].policy.category == Category::Data);
        assert!(defs[1].policy.needs_approval && defs[2].policy.needs_approval);
        assert!(defs.iter().all(|d| d.server == LOCAL_SERVER && d.visible_to_model));
    }

    #[tokio::test]
    async fn calls_answer_in_words_the_model_can_use() {
        let dir = tempfile::tempdir().unwrap();
        let m = crate::store::memory::SqliteMemory::open(&dir.path().join("memory.db")).unwrap();
        assert_eq!(
            call(&m, &key("alice", "c1"), "memory_list", &json!({})).await.unwrap(),
            "No facts are remembered."
        );
        let saved = call(&m, &key("alice", "c1"), "memory_write", &json!({"fact": "Likes tea"}))
            .await
            .unwrap();
        assert!(saved.starts_with("Remembered as fact "));
        assert!(
            call(&m, &key("alice", "c1"), "memory_write", &json!({}))
                .await
                .unwrap_err()
                .contains("needs")
        );
        let long = "x".repeat(600);
        assert!(
            call(&m, &key("alice", "c1"), "memory_write", &json!({"fact": long}))
                .await
                .unwrap_err()
                .contains("at most 500")
        );
        let listed = call(&m, &key("alice", "c1"), "memory_list", &json!({})).await.unwrap();
        assert!(listed.ends_with("] Likes tea"));
        let id = m.list(&user("alice")).await.unwrap()[0].id;
        assert!(call(&m, &key("bob", "c1"), "memory_forget", &json!({"id": id})).await.is_err());
        assert!(call(&m, &key("alice", "c1"), "memory_forget", &json!({"id": id})).await.is_ok());
        assert_eq!(m.list(&user("alice")).await.unwrap(), vec![]);
    }

    /// The hold with a release file lasts until the file appears, and ends because it did
    /// (not because its bound ran out); which markers ask for that hold is the test below.
    #[cfg(feature = "fault-injection")]
    #[test]
    fn a_hold_until_a_file_ends_when_the_file_appears() {
        let dir = tempfile::tempdir().unwrap();
        let release = dir.path().join("release");
        let path = release.clone();
        let held = std::thread::spawn(move || wait_for_file(&path, FAULT_RELEASE_BOUND));
        std::thread::sleep(std::time::Duration::from_millis(300));
        assert!(!held.is_finished(), "the write is held until the file exists");
        std::fs::write(&release, b"").unwrap();
        assert!(held.join().unwrap(), "the hold ended at its bound: the file was never seen");
        // And a file that never appears ends the hold at the bound, unreleased.
        assert!(!wait_for_file(&dir.path().join("never"), std::time::Duration::from_millis(50)));
    }

    /// Which markers hold a write: whole words, a release path that is not empty, only for
    /// `memory_write`. A marker without its path is ignored like an unknown one (no hold).
    #[cfg(feature = "fault-injection")]
    #[test]
    fn fault_markers_are_read_as_whole_words_and_the_release_path_is_required() {
        let fact = |f: &str| json!({"fact": f});
        let write = |f: &str| fault_hold_of("memory_write", &fact(f)).map(|h| format!("{h:?}"));
        assert_eq!(write("x FAULT:slow-memory-write y").as_deref(), Some("Fixed"));
        assert_eq!(
            write("x FAULT:slow-memory-write-until:/tmp/r y").as_deref(),
            Some(r#"UntilFile("/tmp/r")"#)
        );
        assert_eq!(write("x FAULT:slow-memory-write-until:"), None);
        assert_eq!(write("x FAULT:slow-memory-write-until: /tmp/r"), None);
        assert_eq!(write("x FAULT:slow-memory-write-never y"), None);
        assert_eq!(write("a plain fact"), None);
        assert_eq!(fault_hold_of("memory_forget", &fact("FAULT:slow-memory-write")), None);
    }
}
