//! Assembles one model step's tool calls from the stream, under ids we assign.
//!
//! The provider's tool-call ids and indexes are the model's to choose, and a buggy or
//! hostile provider chooses badly: the same id for two calls (which once folded a
//! `files_move` onto a `files_read` part, so the approval card named the wrong tool), or an
//! index of four billion (which once sized a vector). So neither is trusted here:
//!
//! - every call gets its own id, `call_<uuid>`, minted by us; the provider's id is only
//!   used to recognise a repeated header for the same index and is never shown or stored;
//! - the index is a key, never a length: memory grows with the number of calls, which is
//!   bounded, as are the bytes of arguments and text one step may stream.
//!
//! Anything outside these rules is a model error ([`ModelError::Protocol`]): the step ends,
//! and no call of that step runs. This module does no I/O.

use super::ModelError;

/// Tool calls one model step may make. OpenAI's parallel tool calls stay far below this.
pub const MAX_CALLS_PER_STEP: usize = 32;
/// Argument bytes one step may stream, over all its calls (a 2 MiB file write fits, escaped).
pub const MAX_ARGUMENT_BYTES_PER_STEP: usize = 8 * 1024 * 1024;
/// Text bytes one step may stream (far above any model's output-token limit).
pub const MAX_TEXT_BYTES_PER_STEP: usize = 1024 * 1024;

/// One tool call as the model produced it, under our id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AssembledCall {
    /// Ours, unique: `call_<uuid>`.
    pub id: String,
    pub name: String,
    /// The arguments' JSON text, as streamed.
    pub arguments: String,
}

/// What a tool-call header meant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Started {
    /// A new call, under this id of ours.
    New { id: String },
    /// The provider repeated the header of a call it already started: nothing new.
    Repeated,
}

/// The tool calls of one step, in the order they started.
#[derive(Debug, Default)]
pub struct StepCalls {
    calls: Vec<AssembledCall>,
    /// (provider index, provider id, position in `calls`), one per call.
    keys: Vec<(usize, String, usize)>,
    argument_bytes: usize,
    text_bytes: usize,
}

impl StepCalls {
    /// A tool-call header: `index` and `provider_id` as the provider sent them.
    pub fn start(&mut self, index: usize, provider_id: &str, name: &str) -> Result<Started, ModelError> {
        if let Some((_, known_id, pos)) = self.keys.iter().find(|(i, _, _)| *i == index) {
            // Some providers repeat the name (and the id, or no id) on every fragment of a
            // call; anything else under a started index is a second call hiding behind the first.
            return if (provider_id.is_empty() || known_id == provider_id) && self.calls[*pos].name == name {
                Ok(Started::Repeated)
            } else {
                Err(ModelError::Protocol(format!(
                    "tool call index {index} was started twice, with a different id or name"
                )))
            };
        }
        if self.calls.len() >= MAX_CALLS_PER_STEP {
            return Err(ModelError::Protocol(format!(
                "more than {MAX_CALLS_PER_STEP} tool calls in one step"
            )));
        }
        if !provider_id.is_empty() && self.keys.iter().any(|(_, known_id, _)| known_id == provider_id) {
            tracing::warn!("the model reused a tool-call id within a step; each call keeps its own id");
        }
        let id = format!("call_{}", uuid::Uuid::new_v4().simple());
        self.keys.push((index, provider_id.to_string(), self.calls.len()));
        self.calls.push(AssembledCall {
            id: id.clone(),
            name: name.to_string(),
            arguments: String::new(),
        });
        Ok(Started::New { id })
    }

    /// A fragment of the arguments of the call started at `index`.
    pub fn arguments(&mut self, index: usize, delta: &str) -> Result<(), ModelError> {
        let Some(&(_, _, pos)) = self.keys.iter().find(|(i, _, _)| *i == index) else {
            return Err(ModelError::Protocol(format!(
                "arguments for tool call index {index}, which never started"
            )));
        };
        self.argument_bytes += delta.len();
        if self.argument_bytes > MAX_ARGUMENT_BYTES_PER_STEP {
            return Err(ModelError::Protocol(format!(
                "tool-call arguments over {MAX_ARGUMENT_BYTES_PER_STEP} bytes in one step"
            )));
        }
        self.calls[pos].arguments.push_str(delta);
        Ok(())
    }

    /// Counts streamed text against the step's bound.
    pub fn text(&mut self, delta: &str) -> Result<(), ModelError> {
        self.text_bytes += delta.len();
        if self.text_bytes > MAX_TEXT_BYTES_PER_STEP {
            return Err(ModelError::Protocol(format!(
                "text over {MAX_TEXT_BYTES_PER_STEP} bytes in one step"
            )));
        }
        Ok(())
    }

    /// The step's calls, in the order they started.
    pub fn finish(self) -> Vec<AssembledCall> {
        self.calls
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn new_id(s: Result<Started, ModelError>) -> String {
        match s.unwrap() {
            Started::New { id } => id,
            Started::Repeated => panic!("expected a new call"),
        }
    }

    #[test]
    fn a_reused_provider_id_still_makes_two_calls_with_our_own_ids() {
        let mut step = StepCalls::default();
        let read = new_id(step.start(0, "call_dup", "files_read"));
        step.arguments(0, "{\"path\":\"a\"}").unwrap();
        let mv = new_id(step.start(1, "call_dup", "files_move"));
        step.arguments(1, "{\"from\":\"a\",\"to\":\"b\"}").unwrap();
        assert_ne!(read, mv);
        assert!(read.starts_with("call_") && read != "call_dup");
        let calls = step.finish();
        assert_eq!(calls.len(), 2);
        assert_eq!(
            (calls[0].name.as_str(), calls[0].arguments.as_str()),
            ("files_read", "{\"path\":\"a\"}")
        );
        assert_eq!(calls[1].name, "files_move");
        assert_eq!(calls[1].id, mv);
    }

    #[test]
    fn a_repeated_header_is_not_a_new_call_and_a_different_one_is_an_error() {
        let mut step = StepCalls::default();
        new_id(step.start(0, "p1", "files_read"));
        assert_eq!(step.start(0, "p1", "files_read").unwrap(), Started::Repeated);
        assert_eq!(
            step.start(0, "", "files_read").unwrap(),
            Started::Repeated,
            "a fragment without the id"
        );
        new_id(step.start(1, "", "files_list"));
        assert!(step.start(0, "p1", "files_move").is_err());
        assert!(step.start(0, "p2", "files_read").is_err());
    }

    #[test]
    fn a_huge_index_costs_nothing_and_the_call_count_is_bounded() {
        let mut step = StepCalls::default();
        new_id(step.start(usize::MAX, "p", "files_list"));
        step.arguments(usize::MAX, "{}").unwrap();
        for i in 1..MAX_CALLS_PER_STEP {
            new_id(step.start(i, &format!("p{i}"), "files_list"));
        }
        assert!(step.start(MAX_CALLS_PER_STEP, "px", "files_list").is_err());
        assert_eq!(step.finish().len(), MAX_CALLS_PER_STEP);
    }

    #[test]
    fn arguments_need_a_started_call_and_bytes_are_bounded() {
        let mut step = StepCalls::default();
        assert!(step.arguments(3, "{}").is_err());
        new_id(step.start(0, "p", "files_write"));
        let chunk = "x".repeat(1024 * 1024);
        for _ in 0..8 {
            step.arguments(0, &chunk).unwrap();
        }
        assert!(step.arguments(0, "x").is_err());
        for _ in 0..1024 {
            step.text(&"t".repeat(1024)).unwrap();
        }
        assert!(step.text("t").is_err());
    }
}
