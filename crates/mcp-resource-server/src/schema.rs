//! The schemas a server publishes in `tools/list`: standard JSON Schema 2020-12, which every
//! client reads without a warning.
//!
//! schemars writes a `format` for each Rust number type (`int64`, `uint64`, `uint` for
//! `usize`, `uint32`, `double`, ...). Those are OpenAPI's and schemars' names, not JSON Schema
//! formats: the official MCP Inspector warns `unknown format "uint64" ignored` on every list,
//! and a strict validator may refuse the schema. What such a format says is a range, and a
//! range has standard words: [`StandardFormats`] writes it as `minimum`/`maximum` where the
//! range is narrower than 64 bits (`u32`, `i16`, ...; schemars already writes `minimum: 0`
//! for every unsigned type), then drops every format that JSON Schema 2020-12 does not define.
//!
//! [`standard_schemas`] applies it once to every tool of a router, input and output schemas
//! alike, when the server builds its catalogue: a new tool cannot be published without it.
//! Owns: the published shape of the schemas. Must never: change what a schema accepts (the
//! ranges it writes are the ones the Rust types already enforce).

use std::borrow::Cow;
use std::sync::Arc;

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::model::JsonObject;
use rmcp::schemars::Schema;
use rmcp::schemars::transform::{RecursiveTransform, RestrictFormats, Transform};
use serde_json::Value;

/// The formats JSON Schema 2020-12 defines (Validation, section 7.3), the only ones kept.
pub const STANDARD_FORMATS: &[&str] = &[
    "date-time",
    "date",
    "time",
    "duration",
    "email",
    "idn-email",
    "hostname",
    "idn-hostname",
    "ipv4",
    "ipv6",
    "uri",
    "uri-reference",
    "iri",
    "iri-reference",
    "uuid",
    "uri-template",
    "json-pointer",
    "relative-json-pointer",
    "regex",
];

/// The schemars transform: integer formats become the range they stand for, and every format
/// outside [`STANDARD_FORMATS`] is dropped, in the schema and all its subschemas.
#[derive(Debug, Clone, Copy, Default)]
pub struct StandardFormats;

impl Transform for StandardFormats {
    fn transform(&mut self, schema: &mut Schema) {
        RecursiveTransform(integer_range).transform(schema);
        let mut restrict = RestrictFormats::default();
        // Decided here, not from `$schema`: a schema without one must not keep `uint64`.
        restrict.infer_from_meta_schema = false;
        restrict.allowed_formats = STANDARD_FORMATS.iter().map(|f| Cow::Borrowed(*f)).collect();
        restrict.transform(schema);
    }
}

/// Applies [`StandardFormats`] to the input and output schema of every tool in `router`.
pub fn standard_schemas<S>(router: &mut ToolRouter<S>) {
    for route in router.map.values_mut() {
        route.attr.input_schema = standard(&route.attr.input_schema);
        if let Some(output) = &route.attr.output_schema {
            route.attr.output_schema = Some(standard(output));
        }
    }
}

/// `schema` with [`StandardFormats`] applied.
pub fn standard(schema: &Arc<JsonObject>) -> Arc<JsonObject> {
    let mut s = Schema::from(schema.as_ref().clone());
    StandardFormats.transform(&mut s);
    match s.to_value() {
        Value::Object(object) => Arc::new(object),
        // Unreachable (a schema built from an object stays one); the original is still valid.
        _ => schema.clone(),
    }
}

/// Writes the range an integer format stands for as `minimum`/`maximum`, keeping any bound the
/// schema already has (a `#[schemars(range)]` is tighter than the type's).
fn integer_range(schema: &mut Schema) {
    let Some(object) = schema.as_object_mut() else {
        return;
    };
    let (min, max): (Option<Value>, Option<Value>) = match object.get("format").and_then(Value::as_str) {
        Some("int8") => (Some(i8::MIN.into()), Some(i8::MAX.into())),
        Some("int16") => (Some(i16::MIN.into()), Some(i16::MAX.into())),
        Some("int32") => (Some(i32::MIN.into()), Some(i32::MAX.into())),
        Some("uint8") => (Some(0.into()), Some(u8::MAX.into())),
        Some("uint16") => (Some(0.into()), Some(u16::MAX.into())),
        Some("uint32") => (Some(0.into()), Some(u32::MAX.into())),
        // 64 bits and more: a bound no JSON client holds exactly; the sign is what matters.
        Some("uint64" | "uint" | "uint128") => (Some(0.into()), None),
        _ => (None, None),
    };
    if let Some(min) = min {
        object.entry("minimum").or_insert(min);
    }
    if let Some(max) = max {
        object.entry("maximum").or_insert(max);
    }
}

#[cfg(test)]
mod tests {
    use rmcp::schemars::JsonSchema;
    use serde_json::json;

    use super::*;

    #[derive(JsonSchema)]
    #[schemars(crate = "rmcp::schemars")]
    #[expect(dead_code, reason = "only the schema is used")]
    struct Numbers {
        a: i64,
        b: Option<usize>,
        c: u32,
        d: Vec<u64>,
        e: i32,
        f: f64,
        #[schemars(range(min = 1, max = 50))]
        g: u32,
        /// A standard format stays.
        #[schemars(extend("format" = "date-time"))]
        h: String,
    }

    #[test]
    fn integer_formats_become_ranges_and_only_standard_formats_stay() {
        let generated = rmcp::handler::server::common::schema_for_type::<Numbers>();
        let out = Value::Object(standard(&generated).as_ref().clone());
        let p = &out["properties"];
        assert_eq!(p["a"], json!({"type": "integer"}));
        assert_eq!(p["b"], json!({"type": ["integer", "null"], "minimum": 0}));
        assert_eq!(p["c"], json!({"type": "integer", "minimum": 0, "maximum": 4_294_967_295_u32}));
        assert_eq!(p["d"], json!({"type": "array", "items": {"type": "integer", "minimum": 0}}));
        assert_eq!(p["e"], json!({"type": "integer", "minimum": i32::MIN, "maximum": i32::MAX}));
        assert_eq!(p["f"], json!({"type": "number"}));
        assert_eq!(p["g"]["minimum"], 1);
        assert_eq!(p["g"]["maximum"], 50);
        assert_eq!(p["h"]["format"], "date-time");
        // The only format left is the standard one.
        assert_eq!(out.to_string().matches("\"format\"").count(), 1, "{out}");
    }

    #[test]
    fn every_tool_of_a_router_is_standardised() {
        struct Server;
        let mut router = ToolRouter::<Server>::new();
        let input = schemars_free(json!({"type": "object", "properties": {"n": {"type": "integer", "format": "uint64", "minimum": 0}}}));
        let output = schemars_free(json!({"type": "object", "properties": {"size": {"type": "integer", "format": "int64"}}}));
        let tool = rmcp::model::Tool::new("t", "d", input).with_raw_output_schema(output);
        router.add_route(rmcp::handler::server::router::tool::ToolRoute::new_dyn(tool, |_| {
            Box::pin(async { Err(rmcp::ErrorData::internal_error("not called", None)) })
        }));
        standard_schemas(&mut router);
        let t = router.get("t").unwrap();
        assert_eq!(
            Value::Object(t.input_schema.as_ref().clone()),
            json!({"type": "object", "properties": {"n": {"type": "integer", "minimum": 0}}})
        );
        assert_eq!(
            t.output_schema.as_ref().map(|s| Value::Object(s.as_ref().clone())),
            Some(json!({"type": "object", "properties": {"size": {"type": "integer"}}}))
        );
    }

    fn schemars_free(v: Value) -> Arc<JsonObject> {
        match v {
            Value::Object(o) => Arc::new(o),
            _ => unreachable!(),
        }
    }
}
