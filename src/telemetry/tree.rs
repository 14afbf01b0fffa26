//! The supervision tree as spans, so a trace viewer draws it as a tree.
//!
//! - Every actor start is a short span `actor.start` (named `start <kind>`), whose parent is
//!   the start span of its supervisor: root → conversations → one per conversation actor, and
//!   root → one per tool server. It carries `tamebi.actor.kind`, `tamebi.actor.name` and,
//!   once running, `tamebi.actor.id`, and an event `spawned` (or `start-failed`).
//! - Every supervision event is a short span `supervision` (named `<event> <kind>`) under the
//!   start span of the actor it concerns, with `tamebi.supervision.event` (`stopped`,
//!   `idle-stopped`, `crashed`, `restarted`, `restart-limit-reached`), the reason for a crash
//!   in `tamebi.supervision.reason`, and a span event of the same name. Spans end at once, so
//!   the event is exported as it happens, not when the process stops.
//! - A turn span is linked to the start span of the conversation actor that ran it.
//!
//! The whole tree is one trace that lives as long as the process (its root is the root
//! supervisor's start). Without an exporter an [`ActorTrace`] is empty and nothing is built.

use opentelemetry::KeyValue;
use opentelemetry::trace::SpanContext;
use tracing_opentelemetry::OpenTelemetrySpanExt;

use super::{exporting, metrics};

/// Where an actor sits in the trace: the span context of its start span.
#[derive(Clone, Debug, Default)]
pub struct ActorTrace {
    start: Option<SpanContext>,
    kind: &'static str,
    name: String,
}

/// A supervision event, as named in the trace and in `tamebi.supervision.events`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Supervision {
    Stopped,
    IdleStopped,
    Crashed,
    Restarted,
    RestartLimitReached,
}

impl Supervision {
    pub fn as_str(self) -> &'static str {
        match self {
            Supervision::Stopped => "stopped",
            Supervision::IdleStopped => "idle-stopped",
            Supervision::Crashed => "crashed",
            Supervision::Restarted => "restarted",
            Supervision::RestartLimitReached => "restart-limit-reached",
        }
    }

    /// How a stop reason given to `ActorRef::stop` reads as an event.
    pub fn from_stop_reason(reason: Option<&str>) -> Supervision {
        if reason == Some("idle") {
            Supervision::IdleStopped
        } else {
            Supervision::Stopped
        }
    }
}

/// An actor start in progress: the span (open while the actor starts) and its place.
pub struct Starting {
    pub span: tracing::Span,
    pub trace: ActorTrace,
}

impl ActorTrace {
    /// The root supervisor's start: the root of the tree's trace.
    pub fn start_root(kind: &'static str, name: &str) -> Starting {
        ActorTrace::default().start_child(kind, name)
    }

    /// The start of a child actor of `self` (its supervisor).
    pub fn start_child(&self, kind: &'static str, name: &str) -> Starting {
        if !exporting() {
            return Starting {
                span: tracing::Span::none(),
                trace: ActorTrace::default(),
            };
        }
        let span = tracing::info_span!(
            parent: None,
            "actor.start",
            otel.name = %format!("start {kind}"),
            tamebi.actor.kind = kind,
            tamebi.actor.name = %name,
            tamebi.actor.id = tracing::field::Empty,
            tamebi.supervisor = %self.name,
            otel.status_code = tracing::field::Empty,
        );
        if let Some(parent) = &self.start {
            telemetry_otlp::set_parent(&span, parent);
        }
        let trace = ActorTrace {
            start: Some(telemetry_otlp::span_context(&span)),
            kind,
            name: name.to_string(),
        };
        metrics::actor_alive(kind, 1);
        Starting { span, trace }
    }

    /// Records an event on this actor, as a short span under its start span.
    pub fn event(&self, event: Supervision, reason: Option<&str>) {
        metrics::supervision_event(event.as_str());
        if matches!(event, Supervision::Crashed) {
            metrics::error("actor.crash");
        }
        if matches!(event, Supervision::Stopped | Supervision::IdleStopped | Supervision::Crashed) {
            metrics::actor_alive(self.kind, -1);
        }
        let Some(start) = &self.start else { return };
        let reason = reason.map(crate::auth::redact::redact);
        let span = tracing::info_span!(
            parent: None,
            "supervision",
            otel.name = %format!("{} {}", event.as_str(), self.kind),
            tamebi.supervision.event = event.as_str(),
            tamebi.actor.kind = self.kind,
            tamebi.actor.name = %self.name,
            tamebi.supervision.reason = tracing::field::Empty,
            otel.status_code = tracing::field::Empty,
        );
        telemetry_otlp::set_parent(&span, start);
        let mut attributes = vec![KeyValue::new("tamebi.actor.name", self.name.clone())];
        if let Some(r) = &reason {
            span.record("tamebi.supervision.reason", r.as_str());
            attributes.push(KeyValue::new("tamebi.supervision.reason", r.clone()));
        }
        if matches!(event, Supervision::Crashed | Supervision::RestartLimitReached) {
            span.record("otel.status_code", "ERROR");
        }
        span.add_event(event.as_str(), attributes);
    }

    /// Links `span` (a turn) to this actor's start.
    pub fn link(&self, span: &tracing::Span) {
        if let Some(start) = &self.start {
            span.add_link_with_attributes(start.clone(), vec![KeyValue::new("tamebi.actor.name", self.name.clone())]);
        }
    }

    pub fn name(&self) -> &str {
        &self.name
    }
}

impl Starting {
    /// The actor is running: its id goes on the start span with a `spawned` event.
    pub fn spawned(self, id: &ractor::ActorId) -> ActorTrace {
        if self.trace.start.is_some() {
            self.span.record("tamebi.actor.id", id.to_string());
            self.span.add_event("spawned", vec![]);
        }
        self.trace
    }

    /// The actor did not start.
    pub fn failed(self, why: &str) {
        if self.trace.start.is_some() {
            metrics::actor_alive(self.trace.kind, -1);
            self.span.record("otel.status_code", "ERROR");
            self.span.add_event(
                "start-failed",
                vec![KeyValue::new("tamebi.supervision.reason", crate::auth::redact::redact(why))],
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stop_reasons_name_their_event() {
        assert_eq!(Supervision::from_stop_reason(Some("idle")), Supervision::IdleStopped);
        assert_eq!(Supervision::from_stop_reason(Some("deleted")), Supervision::Stopped);
        assert_eq!(Supervision::from_stop_reason(None), Supervision::Stopped);
        assert_eq!(Supervision::RestartLimitReached.as_str(), "restart-limit-reached");
    }

    #[test]
    fn without_an_exporter_nothing_is_built() {
        let starting = ActorTrace::start_root("root", "root");
        assert!(starting.span.is_none());
        let child = starting.trace.start_child("conversation", "conversation");
        assert!(child.span.is_none());
        assert!(child.trace.start.is_none());
        // Events and links on an empty trace are no-ops.
        child.trace.event(Supervision::Crashed, Some("Bearer abc"));
        child.trace.link(&tracing::Span::none());
    }
}
