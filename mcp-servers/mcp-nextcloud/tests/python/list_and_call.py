"""A client from another ecosystem: the official Python MCP SDK talks to a Tamebi MCP server.

Usage: python list_and_call.py MCP_URL BEARER CALLS
CALLS is a JSON list of [tool, arguments] pairs, made in order after listing the tools.
Prints one JSON object on stdout:
  {"tools": [names], "schemas_checked": n, "schema_problems": [...],
   "calls": [{"is_error": bool, "structured": ..., "text": "..."}]}
Exit status 0 when the session worked; the Rust test that runs it judges the answer.

Every published input and output schema is read the way a strict client reads it: it must be a
valid JSON Schema draft 2020-12 schema (checked against the draft's metaschema by the
`jsonschema` package the SDK itself validates results with, formats asserted), and may use only
the keywords of the draft's vocabularies and only the formats the draft defines. A schemars
default such as `"format": "uint64"` is a problem (the MCP Inspector warns about it on every
list). Structured results are validated against their tool's output schema with formats
asserted. The checker checks itself first, so it cannot pass by checking nothing.
"""

import json
import sys

import anyio
import httpx2
from jsonschema import Draft202012Validator, SchemaError
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

DRAFT_2020_12 = "https://json-schema.org/draft/2020-12/schema"

# JSON Schema 2020-12, Validation section 7.3.
FORMATS = {
    "date-time", "date", "time", "duration", "email", "idn-email", "hostname", "idn-hostname",
    "ipv4", "ipv6", "uri", "uri-reference", "iri", "iri-reference", "uuid", "uri-template",
    "json-pointer", "relative-json-pointer", "regex",
}

# Where a keyword's value holds subschemas (the rest hold data: enum, const, default, ...).
SCHEMA_MAPS = {"$defs", "properties", "patternProperties", "dependentSchemas"}
SCHEMA_LISTS = {"allOf", "anyOf", "oneOf", "prefixItems"}
SCHEMA_ONE = {
    "not", "if", "then", "else", "items", "contains", "additionalProperties", "propertyNames",
    "unevaluatedItems", "unevaluatedProperties", "contentSchema",
}
# Every keyword of the 2020-12 vocabularies: core, applicator, unevaluated, validation,
# meta-data, format-annotation, content.
KEYWORDS = SCHEMA_MAPS | SCHEMA_LISTS | SCHEMA_ONE | {
    "$schema", "$id", "$ref", "$anchor", "$dynamicRef", "$dynamicAnchor", "$vocabulary", "$comment",
    "type", "const", "enum", "multipleOf", "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum",
    "maxLength", "minLength", "pattern", "maxItems", "minItems", "uniqueItems", "maxContains",
    "minContains", "maxProperties", "minProperties", "required", "dependentRequired",
    "title", "description", "default", "deprecated", "readOnly", "writeOnly", "examples",
    "format", "contentEncoding", "contentMediaType",
}


def walk(schema, path):
    """Non-standard keywords and formats in `schema` and its subschemas."""
    if isinstance(schema, bool):
        return []
    if not isinstance(schema, dict):
        return [f"{path}: not a schema"]
    out = []
    for key, value in schema.items():
        if key not in KEYWORDS:
            out.append(f"{path}: keyword {key!r} is not a JSON Schema 2020-12 keyword")
        elif key == "format" and value not in FORMATS:
            out.append(f"{path}: format {value!r} is not a JSON Schema 2020-12 format")
        elif key in SCHEMA_MAPS and isinstance(value, dict):
            for name, sub in value.items():
                out += walk(sub, f"{path}/{key}/{name}")
        elif key in SCHEMA_LISTS and isinstance(value, list):
            for i, sub in enumerate(value):
                out += walk(sub, f"{path}/{key}/{i}")
        elif key in SCHEMA_ONE:
            out += walk(value, f"{path}/{key}")
    return out


def problems(schema, where):
    """Everything a strict draft 2020-12 reader would object to in `schema`."""
    if not isinstance(schema, dict):
        return [f"{where}: not a JSON object"]
    out = []
    if schema.get("$schema", DRAFT_2020_12) != DRAFT_2020_12:
        out.append(f"{where}: $schema is {schema['$schema']!r}, not draft 2020-12")
    try:
        Draft202012Validator.check_schema(schema, format_checker=Draft202012Validator.FORMAT_CHECKER)
    except SchemaError as e:
        out.append(f"{where}: not a valid draft 2020-12 schema: {e.message} at {list(e.absolute_path)}")
    return out + [f"{where} {p}" for p in walk(schema, "#")]


def self_check():
    """The checker finds what it is for, and passes a clean schema."""
    good = {"$schema": DRAFT_2020_12, "type": "object",
            "properties": {"n": {"type": ["integer", "null"], "minimum": 0}, "at": {"type": "string", "format": "date-time"}}}
    bad = {
        "uint64 in a nested ref": {"type": "object", "$defs": {"Id": {"type": "integer", "format": "uint64"}},
                                   "properties": {"id": {"anyOf": [{"$ref": "#/$defs/Id"}, {"type": "null"}]}}},
        "an OpenAPI keyword": {"type": "object", "properties": {"x": {"type": "string", "nullable": True}}},
        "not a schema": {"type": "object", "properties": {"x": {"type": "intger"}}},
        "an invalid pattern": {"type": "string", "pattern": "("},
        "another draft": {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object"},
    }
    assert problems(good, "good") == [], problems(good, "good")
    for name, schema in bad.items():
        assert problems(schema, name), f"the schema check misses {name}"


async def main(url: str, bearer: str, calls: list) -> None:
    self_check()
    headers = {"Authorization": f"Bearer {bearer}"}
    async with httpx2.AsyncClient(headers=headers, timeout=30) as http:
        async with streamable_http_client(url, http_client=http) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                tools = (await session.list_tools()).tools
                found, checked = [], 0
                for t in tools:
                    for kind, schema in (("inputSchema", t.input_schema), ("outputSchema", t.output_schema)):
                        if schema is not None:
                            checked += 1
                            found += problems(schema, f"{t.name} {kind}")
                outputs = {t.name: t.output_schema for t in tools}
                answers = []
                for name, arguments in calls:
                    # The SDK validates structured content against the output schema itself.
                    result = await session.call_tool(name, arguments)
                    schema = outputs.get(name)
                    if schema is not None and not result.is_error:
                        validator = Draft202012Validator(schema, format_checker=Draft202012Validator.FORMAT_CHECKER)
                        found += [f"{name} result: {e.message}" for e in validator.iter_errors(result.structured_content)]
                    answers.append({
                        "is_error": bool(result.is_error),
                        "structured": result.structured_content,
                        "text": "".join(getattr(c, "text", "") for c in result.content),
                    })
                print(json.dumps({
                    "tools": sorted(t.name for t in tools),
                    "schemas_checked": checked,
                    "schema_problems": found,
                    "calls": answers,
                }))


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], sys.argv[2], json.loads(sys.argv[3]))
