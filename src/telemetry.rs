//! Traces and logs.
//!
//! Spans cover actor lifecycles and supervision events, turns, model calls and tool calls.
//! Spans always carry OpenTelemetry trace ids (so `traceparent` can be sent to MCP servers);
//! they are exported over OTLP/HTTP only when an endpoint is configured, otherwise logs are
//! readable text on stderr. Credentials never enter a span or a log (see `auth::redact`).

use opentelemetry::propagation::TextMapPropagator;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::SdkTracerProvider;
use std::collections::HashMap;
use tracing_opentelemetry::OpenTelemetrySpanExt;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer};

/// Keeps the tracer provider alive; `shutdown` flushes it (last step of shutdown).
pub struct Telemetry {
    provider: SdkTracerProvider,
}

#[derive(Debug, thiserror::Error)]
#[error("telemetry: {0}")]
pub struct TelemetryError(String);

/// Installs the global subscriber. `otlp_endpoint`: base URL of an OTLP/HTTP collector.
pub fn init(otlp_endpoint: Option<&str>) -> Result<Telemetry, TelemetryError> {
    let mut builder = SdkTracerProvider::builder();
    if let Some(endpoint) = otlp_endpoint {
        use opentelemetry_otlp::WithExportConfig;
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_endpoint(format!("{}/v1/traces", endpoint.trim_end_matches('/')))
            .build()
            .map_err(|e| TelemetryError(e.to_string()))?;
        builder = builder.with_batch_exporter(exporter);
    }
    let provider = builder
        .with_resource(opentelemetry_sdk::Resource::builder().with_service_name("tamebi").build())
        .build();
    let tracer = provider.tracer("tamebi");
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info,ractor=warn,rmcp=warn,hyper=warn,reqwest=warn"));
    let fmt = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_target(false)
        .with_filter(filter);
    let otel = tracing_opentelemetry::layer().with_tracer(tracer);
    tracing_subscriber::registry()
        .with(otel)
        .with(fmt)
        .try_init()
        .map_err(|e| TelemetryError(e.to_string()))?;
    Ok(Telemetry { provider })
}

impl Telemetry {
    /// Flushes and stops the exporter.
    pub fn shutdown(self) {
        if let Err(e) = self.provider.shutdown() {
            eprintln!("trace exporter shutdown: {e}");
        }
    }
}

/// The W3C `traceparent` of the current span, to propagate to MCP servers.
pub fn current_traceparent() -> Option<String> {
    let cx = tracing::Span::current().context();
    let mut carrier: HashMap<String, String> = HashMap::new();
    TraceContextPropagator::new().inject_context(&cx, &mut carrier);
    carrier.remove("traceparent")
}
