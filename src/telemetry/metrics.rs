//! The orchestrator's metrics, exported over OTLP with the spans.
//!
//! | instrument | kind | attributes |
//! |---|---|---|
//! | `tamebi.turns.in_flight` | up-down counter | |
//! | `tamebi.sse.streams.open` | up-down counter | |
//! | `tamebi.actors.alive` | up-down counter | `tamebi.actor.kind` |
//! | `tamebi.supervision.events` | counter | `tamebi.supervision.event` |
//! | `tamebi.errors` | counter | `error.type` |
//! | `gen_ai.client.operation.duration` (s) | histogram | `gen_ai.operation.name`, `gen_ai.request.model`, `error.type` |
//! | `mcp.client.operation.duration` (s) | histogram | `mcp.method.name`, `tamebi.mcp.server`, `error.type` |
//! | `http.server.request.duration` (s) | histogram | method, route, status (from `telemetry-otlp`) |
//!
//! Instruments exist only when an endpoint is configured; every function here is a no-op
//! (one atomic load) otherwise. No attribute carries a user id, a credential or content.

use opentelemetry::KeyValue;
use opentelemetry::metrics::{Counter, Histogram, UpDownCounter};
use std::sync::OnceLock;
use std::time::Duration;

struct Instruments {
    turns_in_flight: UpDownCounter<i64>,
    sse_open: UpDownCounter<i64>,
    actors_alive: UpDownCounter<i64>,
    supervision: Counter<u64>,
    errors: Counter<u64>,
    model_duration: Histogram<f64>,
    tool_duration: Histogram<f64>,
}

static INSTRUMENTS: OnceLock<Instruments> = OnceLock::new();

/// Creates the instruments on the global meter provider (called once the exporter runs).
pub fn install() {
    let meter = opentelemetry::global::meter("tamebi");
    let _ = INSTRUMENTS.set(Instruments {
        turns_in_flight: meter
            .i64_up_down_counter("tamebi.turns.in_flight")
            .with_description("Chat turns running now")
            .build(),
        sse_open: meter
            .i64_up_down_counter("tamebi.sse.streams.open")
            .with_description("SSE answer streams open now")
            .build(),
        actors_alive: meter
            .i64_up_down_counter("tamebi.actors.alive")
            .with_description("Actors running now, by kind")
            .build(),
        supervision: meter
            .u64_counter("tamebi.supervision.events")
            .with_description("Supervision events, by kind")
            .build(),
        errors: meter.u64_counter("tamebi.errors").with_description("Errors, by kind").build(),
        model_duration: meter
            .f64_histogram("gen_ai.client.operation.duration")
            .with_unit("s")
            .with_description("Model calls, from request to the end of the stream")
            .build(),
        tool_duration: meter
            .f64_histogram("mcp.client.operation.duration")
            .with_unit("s")
            .with_description("MCP operations (tool calls, tool lists, resource reads)")
            .build(),
    });
}

fn instruments() -> Option<&'static Instruments> {
    INSTRUMENTS.get()
}

/// Holds one unit of an up-down counter while alive (a turn running, a stream open).
pub struct Held(&'static UpDownCounter<i64>);

impl Drop for Held {
    fn drop(&mut self) {
        self.0.add(-1, &[]);
    }
}

fn hold(counter: impl FnOnce(&'static Instruments) -> &'static UpDownCounter<i64>) -> Option<Held> {
    let c = counter(instruments()?);
    c.add(1, &[]);
    Some(Held(c))
}

/// A turn started; it counts as in flight until the guard drops. Held only by a running turn's
/// entry in `actors::running_turns` (the one count of running turn tasks), so the metric and that
/// count never disagree.
pub fn turn_in_flight() -> Option<Held> {
    hold(|i| &i.turns_in_flight)
}

/// An SSE stream opened; it counts as open until the guard drops.
pub fn sse_stream_open() -> Option<Held> {
    hold(|i| &i.sse_open)
}

/// An actor of `kind` started (`+1`) or ended (`-1`).
pub fn actor_alive(kind: &'static str, delta: i64) {
    if let Some(i) = instruments() {
        i.actors_alive.add(delta, &[KeyValue::new("tamebi.actor.kind", kind)]);
    }
}

pub fn supervision_event(kind: &'static str) {
    if let Some(i) = instruments() {
        i.supervision.add(1, &[KeyValue::new("tamebi.supervision.event", kind)]);
    }
}

/// One error of `kind` (`model.timeout`, `tool.transport`, `actor.crash`, `turn.panic`, …).
pub fn error(kind: &'static str) {
    if let Some(i) = instruments() {
        i.errors.add(1, &[KeyValue::new("error.type", kind)]);
    }
}

/// A finished model call; `error` is its `error.type` when it failed.
pub fn model_call(model: &str, elapsed: Duration, error: Option<&'static str>) {
    let Some(i) = instruments() else { return };
    let mut attrs = vec![
        KeyValue::new("gen_ai.operation.name", "chat"),
        KeyValue::new("gen_ai.request.model", model.to_string()),
    ];
    if let Some(e) = error {
        attrs.push(KeyValue::new("error.type", e));
    }
    i.model_duration.record(elapsed.as_secs_f64(), &attrs);
}

/// A finished MCP operation on `server`; `error` is its `error.type` when it failed.
pub fn tool_call(server: &str, method: &'static str, elapsed: Duration, error: Option<&'static str>) {
    let Some(i) = instruments() else { return };
    let mut attrs = vec![
        KeyValue::new("mcp.method.name", method),
        KeyValue::new("tamebi.mcp.server", server.to_string()),
    ];
    if let Some(e) = error {
        attrs.push(KeyValue::new("error.type", e));
    }
    i.tool_duration.record(elapsed.as_secs_f64(), &attrs);
}
