//! Tool arguments as models write them: a string that is exactly an integer, where the tool's
//! published input schema says integer, is read as that integer (`"message_id": "5"` as
//! `"message_id": 5`). Small models quote numbers all the time; refusing them costs a turn and
//! teaches nothing.
//!
//! The rule is driven by the input schema the tool publishes in `tools/list`, nothing else, so
//! what is accepted cannot drift from what is declared: a new integer argument is lenient the
//! day it is added, and a field becomes lenient only where a client reading the schema would
//! send an integer. A value is converted when its schema admits an integer and does not admit
//! a string (`type: "integer"`, `["integer", "null"]`, an `anyOf` of an integer `$ref` and
//! `null`, the items of an integer array, the properties of a nested object); where the schema
//! is ambiguous (a union of several object or array shapes) nothing beneath is converted.
//!
//! "Exactly an integer" is the JSON text of an integer that fits 64 bits: an optional `-`, then
//! `0` or digits without a leading zero. `"+5"`, `" 5"`, `"05"`, `"5.0"`, `"1e3"`, `"0x10"` and
//! `"true"` stay strings; so does `"99999999999999999999"` (too large for any integer field).
//!
//! Owns: that one conversion, applied before the tool's own types read the arguments. Must
//! never: convert anything else (no floats, no booleans, no numbers to strings), or judge an
//! argument: a string left as it is meets the tool's own serde types, which refuse it with the
//! usual "invalid type" message (an `invalid_argument` result, see [`crate::tool_result`]), and
//! an integer out of the field's range is refused there the same way.

use rmcp::model::{CallToolRequestParams, JsonObject, Tool};
use serde_json::{Number, Value};

/// The JSON types a schema position admits, as bits.
type Types = u8;
const NULL: Types = 1;
const BOOLEAN: Types = 1 << 1;
const OBJECT: Types = 1 << 2;
const ARRAY: Types = 1 << 3;
const NUMBER: Types = 1 << 4;
const INTEGER: Types = 1 << 5;
const STRING: Types = 1 << 6;
const ANY: Types = NULL | BOOLEAN | OBJECT | ARRAY | NUMBER | INTEGER | STRING;

/// `$ref` and combinator hops one schema position may take. Ours take at most two; a schema
/// that refers to itself must not loop (and past the limit a position admits anything, so
/// nothing is converted).
const MAX_HOPS: usize = 16;

/// How deep into the arguments values are looked at (serde_json already refuses input nested
/// deeper than 128 levels; this keeps the walk bounded on its own terms).
const MAX_DEPTH: usize = 64;

/// Reads quoted integers in `request`'s arguments as integers where `tool`'s input schema
/// says integer (see the module doc). Call it with the tool the request names, before the
/// tool's router reads the arguments.
pub fn integers_from_strings(tool: &Tool, request: &mut CallToolRequestParams) {
    if let Some(arguments) = request.arguments.as_mut() {
        convert_object(&tool.input_schema, arguments);
    }
}

/// [`integers_from_strings`] on bare arguments, against the schema `schema` (a root schema:
/// its `$ref`s point into its own `$defs`).
pub fn convert_object(schema: &JsonObject, arguments: &mut JsonObject) {
    let Some(candidates) = applicable(schema, schema, OBJECT, 0) else {
        return;
    };
    convert_properties(schema, &candidates, arguments, 0);
}

/// Converts `value`, which every schema in `schemas` applies to.
fn convert(root: &JsonObject, schemas: &[&JsonObject], value: &mut Value, depth: usize) {
    if schemas.is_empty() || depth > MAX_DEPTH {
        return;
    }
    match value {
        Value::String(s) => {
            let types = schemas.iter().fold(ANY, |types, schema| types & admitted(root, schema, 0));
            if types & INTEGER != 0
                && types & STRING == 0
                && let Some(n) = integer(s)
            {
                *value = Value::Number(n);
            }
        }
        Value::Object(map) => {
            if let Some(candidates) = all_applicable(root, schemas, OBJECT) {
                convert_properties(root, &candidates, map, depth);
            }
        }
        Value::Array(items) => {
            if let Some(candidates) = all_applicable(root, schemas, ARRAY) {
                for (i, item) in items.iter_mut().enumerate() {
                    let subs: Vec<&JsonObject> = candidates.iter().filter_map(|c| item_schema(c, i)).collect();
                    convert(root, &subs, item, depth + 1);
                }
            }
        }
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

fn convert_properties(root: &JsonObject, candidates: &[&JsonObject], map: &mut JsonObject, depth: usize) {
    for (name, v) in map.iter_mut() {
        let subs: Vec<&JsonObject> = candidates.iter().filter_map(|c| property_schema(c, name)).collect();
        convert(root, &subs, v, depth + 1);
    }
}

/// The schemas that apply to a value of JSON type `kind` at a position every one of
/// `schemas` applies to; `None` when that is ambiguous.
fn all_applicable<'a>(root: &'a JsonObject, schemas: &[&'a JsonObject], kind: Types) -> Option<Vec<&'a JsonObject>> {
    let mut out = Vec::new();
    for s in schemas {
        out.extend(applicable(root, s, kind, 0)?);
    }
    Some(out)
}

/// `schema` and the subschemas that apply with it to a value of type `kind`: its `$ref`, every
/// `allOf` branch, and the one `anyOf`/`oneOf` branch that admits `kind` (`None` when several
/// do: which one the value meets is then not known).
fn applicable<'a>(root: &'a JsonObject, schema: &'a JsonObject, kind: Types, hops: usize) -> Option<Vec<&'a JsonObject>> {
    if hops > MAX_HOPS {
        return None;
    }
    let mut out = vec![schema];
    if let Some(target) = schema.get("$ref").and_then(Value::as_str) {
        out.extend(applicable(root, resolve(root, target)?, kind, hops + 1)?);
    }
    for branch in branches(schema, "allOf") {
        out.extend(applicable(root, branch.as_object()?, kind, hops + 1)?);
    }
    for key in ["anyOf", "oneOf"] {
        if schema.contains_key(key) {
            let mut admitting = branches(schema, key).filter(|b| node_types(root, b, hops + 1) & kind != 0);
            match (admitting.next(), admitting.next()) {
                (Some(one), None) => out.extend(applicable(root, one.as_object()?, kind, hops + 1)?),
                _ => return None,
            }
        }
    }
    Some(out)
}

/// The JSON types `schema` admits, from `type`, `enum`, `const`, `$ref` and the combinators.
fn admitted(root: &JsonObject, schema: &JsonObject, hops: usize) -> Types {
    if hops > MAX_HOPS {
        return ANY;
    }
    let mut types = match schema.get("type") {
        Some(Value::String(t)) => type_bit(t),
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).fold(0, |acc, t| acc | type_bit(t)),
        _ => ANY,
    };
    if let Some(target) = schema.get("$ref").and_then(Value::as_str) {
        types &= resolve(root, target).map_or(ANY, |s| admitted(root, s, hops + 1));
    }
    for branch in branches(schema, "allOf") {
        types &= node_types(root, branch, hops + 1);
    }
    for key in ["anyOf", "oneOf"] {
        if schema.contains_key(key) {
            types &= branches(schema, key).fold(0, |acc, b| acc | node_types(root, b, hops + 1));
        }
    }
    if let Some(Value::Array(values)) = schema.get("enum") {
        types &= values.iter().fold(0, |acc, v| acc | value_type(v));
    }
    if let Some(v) = schema.get("const") {
        types &= value_type(v);
    }
    types
}

/// The types a subschema admits; a boolean schema admits everything or nothing.
fn node_types(root: &JsonObject, node: &Value, hops: usize) -> Types {
    match node {
        Value::Object(s) => admitted(root, s, hops),
        Value::Bool(false) => 0,
        _ => ANY,
    }
}

fn type_bit(name: &str) -> Types {
    match name {
        "null" => NULL,
        "boolean" => BOOLEAN,
        "object" => OBJECT,
        "array" => ARRAY,
        "number" => NUMBER,
        "integer" => INTEGER,
        "string" => STRING,
        _ => 0,
    }
}

fn value_type(v: &Value) -> Types {
    match v {
        Value::Null => NULL,
        Value::Bool(_) => BOOLEAN,
        Value::Object(_) => OBJECT,
        Value::Array(_) => ARRAY,
        Value::Number(n) if n.is_i64() || n.is_u64() => INTEGER | NUMBER,
        Value::Number(_) => NUMBER,
        Value::String(_) => STRING,
    }
}

fn branches<'a>(schema: &'a JsonObject, key: &str) -> impl Iterator<Item = &'a Value> {
    schema.get(key).and_then(Value::as_array).into_iter().flatten()
}

fn property_schema<'a>(schema: &'a JsonObject, name: &str) -> Option<&'a JsonObject> {
    match schema.get("properties").and_then(Value::as_object).and_then(|p| p.get(name)) {
        Some(s) => s.as_object(),
        None => schema.get("additionalProperties").and_then(Value::as_object),
    }
}

fn item_schema(schema: &JsonObject, index: usize) -> Option<&JsonObject> {
    match schema.get("prefixItems").and_then(Value::as_array).and_then(|p| p.get(index)) {
        Some(s) => s.as_object(),
        None => schema.get("items").and_then(Value::as_object),
    }
}

/// The schema a local `$ref` (`#`, `#/$defs/Name`) points to in `root`; other references
/// (another document, an anchor) are not followed.
fn resolve<'a>(root: &'a JsonObject, reference: &str) -> Option<&'a JsonObject> {
    let pointer = reference.strip_prefix('#')?;
    if pointer.is_empty() {
        return Some(root);
    }
    let rest = pointer.strip_prefix('/')?;
    let (first, tail) = rest.split_once('/').unwrap_or((rest, ""));
    let first = first.replace("~1", "/").replace("~0", "~");
    let start = root.get(&first)?;
    let target = if tail.is_empty() {
        start
    } else {
        start.pointer(&format!("/{tail}"))?
    };
    target.as_object()
}

/// `s` as an integer if it is exactly the JSON text of one that fits 64 bits.
fn integer(s: &str) -> Option<Number> {
    let digits = s.strip_prefix('-').unwrap_or(s);
    let well_formed = !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) && (digits == "0" || !digits.starts_with('0'));
    if !well_formed {
        return None;
    }
    if s.starts_with('-') {
        s.parse::<i64>().ok().map(Number::from)
    } else {
        s.parse::<u64>().ok().map(Number::from)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn converted(schema: Value, arguments: Value) -> Value {
        let (Value::Object(schema), Value::Object(mut arguments)) = (schema, arguments) else {
            panic!("objects expected");
        };
        convert_object(&schema, &mut arguments);
        Value::Object(arguments)
    }

    /// The shapes schemars writes for `i64`, `Option<usize>`, `Option<Id>` (a `$ref`), a
    /// required `$ref`, `Vec<i64>` and `Option<Vec<u32>>`, as the servers publish them.
    fn schema() -> Value {
        json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "$defs": {"Id": {"type": "integer", "minimum": 1}, "Inner": {"type": "object", "properties": {"n": {"type": "integer"}}}},
            "type": "object",
            "properties": {
                "message_id": {"type": "integer"},
                "limit": {"type": ["integer", "null"], "minimum": 0},
                "file_id": {"anyOf": [{"$ref": "#/$defs/Id"}, {"type": "null"}]},
                "board_id": {"$ref": "#/$defs/Id"},
                "ids": {"type": "array", "items": {"type": "integer"}},
                "maybe_ids": {"anyOf": [{"type": "array", "items": {"$ref": "#/$defs/Id"}}, {"type": "null"}]},
                "inner": {"anyOf": [{"$ref": "#/$defs/Inner"}, {"type": "null"}]},
                "path": {"type": "string"},
                "either": {"type": ["integer", "string"]},
                "ratio": {"type": "number"},
                "flag": {"type": ["boolean", "null"]},
                "anything": {},
            }
        })
    }

    #[test]
    fn quoted_integers_become_integers_where_the_schema_says_integer() {
        let out = converted(
            schema(),
            json!({
                "message_id": "5", "limit": "0", "file_id": "12", "board_id": "-3",
                "ids": ["1", 2, "3"], "maybe_ids": ["4"], "inner": {"n": "6"},
            }),
        );
        assert_eq!(
            out,
            json!({
                "message_id": 5, "limit": 0, "file_id": 12, "board_id": -3,
                "ids": [1, 2, 3], "maybe_ids": [4], "inner": {"n": 6},
            })
        );
        assert_eq!(
            converted(schema(), json!({"message_id": "18446744073709551615"}))["message_id"],
            json!(u64::MAX)
        );
        assert_eq!(
            converted(schema(), json!({"message_id": "-9223372036854775808"}))["message_id"],
            json!(i64::MIN)
        );
    }

    #[test]
    fn nothing_else_is_converted() {
        for not_an_integer in [
            "+5",
            " 5",
            "5 ",
            "05",
            "-05",
            "00",
            "-",
            "",
            "5.0",
            "1e3",
            "0x10",
            "١٢",
            "true",
            "null",
            "5a",
            "--5",
            "99999999999999999999",
            "-9223372036854775809",
        ] {
            let args = json!({"message_id": not_an_integer, "ids": [not_an_integer]});
            assert_eq!(converted(schema(), args.clone()), args, "{not_an_integer:?}");
        }
        // Where the schema admits a string, or says nothing, or wants another type: untouched.
        let args = json!({"path": "5", "either": "5", "ratio": "5", "flag": "1", "anything": "5", "unknown": "5"});
        assert_eq!(converted(schema(), args.clone()), args);
        // Never the reverse: numbers stay numbers where the schema says string.
        let args = json!({"path": 5, "message_id": 5.5, "flag": true});
        assert_eq!(converted(schema(), args.clone()), args);
    }

    #[test]
    fn ambiguous_and_self_referring_schemas_convert_nothing() {
        let two_shapes = json!({
            "type": "object",
            "properties": {"x": {"anyOf": [
                {"type": "object", "properties": {"n": {"type": "integer"}}},
                {"type": "object", "properties": {"n": {"type": "string"}}},
            ]}}
        });
        let args = json!({"x": {"n": "5"}});
        assert_eq!(converted(two_shapes, args.clone()), args);
        let cycle = json!({"$defs": {"A": {"$ref": "#/$defs/A"}}, "type": "object", "properties": {"a": {"$ref": "#/$defs/A"}}});
        let args = json!({"a": "5"});
        assert_eq!(converted(cycle, args.clone()), args);
        // An integer enum is an integer.
        let level = json!({"type": "object", "properties": {"level": {"enum": [1, 2, 3]}}});
        assert_eq!(converted(level, json!({"level": "2"})), json!({"level": 2}));
    }

    #[test]
    fn a_request_is_converted_against_its_tool() {
        let Value::Object(input) = schema() else { unreachable!() };
        let tool = Tool::new("t", "d", std::sync::Arc::new(input));
        let Value::Object(arguments) = json!({"message_id": "7"}) else {
            unreachable!()
        };
        let mut request = CallToolRequestParams::new("t").with_arguments(arguments);
        integers_from_strings(&tool, &mut request);
        assert_eq!(request.arguments.map(Value::Object), Some(json!({"message_id": 7})));
        let mut bare = CallToolRequestParams::new("t");
        integers_from_strings(&tool, &mut bare);
        assert_eq!(bare.arguments, None);
    }
}
