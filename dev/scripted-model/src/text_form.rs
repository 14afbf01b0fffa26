//! Tool calls written into the message text, the way open models served without a
//! tool-call parser write them (a tool_calls step with `as_text`). Lets the orchestrator's
//! text-call recognition be tested against each form. Pure; no I/O.

use serde::Deserialize;

use crate::call::ScriptedCall;

/// The text forms, as a step names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TextForm {
    /// Hermes/Qwen: `<tool_call>{"name", "arguments"}</tool_call>`, one per call.
    Hermes,
    /// A bare JSON object `{"name", "arguments"}` on its own line, one per call.
    Bare,
    /// Mistral: `[TOOL_CALLS][{"name", "arguments"}, …]`.
    Mistral,
    /// Newer Mistral templates: `[TOOL_CALLS]name[ARGS]{…}`, one per call.
    MistralArgs,
    /// Llama 3: `<|python_tag|>{"name", "parameters"}` joined by `; `, then `<|eom_id|>`.
    Llama,
}

/// The calls written in `form`.
pub fn render(form: TextForm, calls: &[ScriptedCall]) -> String {
    let object = |c: &ScriptedCall, key: &str| serde_json::json!({"name": c.name, key: c.arguments}).to_string();
    match form {
        TextForm::Hermes => calls
            .iter()
            .map(|c| format!("<tool_call>\n{}\n</tool_call>", object(c, "arguments")))
            .collect::<Vec<_>>()
            .join("\n"),
        TextForm::Bare => calls.iter().map(|c| format!("\n{}", object(c, "arguments"))).collect(),
        TextForm::Mistral => {
            let all: Vec<serde_json::Value> = calls
                .iter()
                .map(|c| serde_json::json!({"name": c.name, "arguments": c.arguments}))
                .collect();
            format!("[TOOL_CALLS]{}", serde_json::Value::Array(all))
        }
        TextForm::MistralArgs => calls
            .iter()
            .map(|c| format!("[TOOL_CALLS]{}[ARGS]{}", c.name, c.arguments))
            .collect(),
        TextForm::Llama => {
            let all: Vec<String> = calls.iter().map(|c| object(c, "parameters")).collect();
            format!("<|python_tag|>{}<|eom_id|>", all.join("; "))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn each_form_writes_every_call() {
        let calls = vec![
            ScriptedCall {
                name: "a".into(),
                arguments: json!({"x": 1}),
                id: None,
                index: None,
            },
            ScriptedCall {
                name: "b".into(),
                arguments: json!({}),
                id: None,
                index: None,
            },
        ];
        assert_eq!(
            render(TextForm::Hermes, &calls),
            "<tool_call>\n{\"arguments\":{\"x\":1},\"name\":\"a\"}\n</tool_call>\n<tool_call>\n{\"arguments\":{},\"name\":\"b\"}\n</tool_call>"
        );
        assert_eq!(
            render(TextForm::Bare, &calls),
            "\n{\"arguments\":{\"x\":1},\"name\":\"a\"}\n{\"arguments\":{},\"name\":\"b\"}"
        );
        assert_eq!(
            render(TextForm::Mistral, &calls),
            "[TOOL_CALLS][{\"arguments\":{\"x\":1},\"name\":\"a\"},{\"arguments\":{},\"name\":\"b\"}]"
        );
        assert_eq!(
            render(TextForm::MistralArgs, &calls),
            "[TOOL_CALLS]a[ARGS]{\"x\":1}[TOOL_CALLS]b[ARGS]{}"
        );
        assert_eq!(
            render(TextForm::Llama, &calls),
            "<|python_tag|>{\"name\":\"a\",\"parameters\":{\"x\":1}}; {\"name\":\"b\",\"parameters\":{}}<|eom_id|>"
        );
    }
}
