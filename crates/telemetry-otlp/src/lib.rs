//! Logs, traces and metrics for our binaries (the orchestrator and every MCP server we ship).
//!
//! Owns the one way a process sets up its telemetry: readable logs on stderr always, and —
//! only when an OTLP endpoint is configured — spans and metrics exported over OTLP/HTTP
//! (protobuf) to `<endpoint>/v1/traces` and `<endpoint>/v1/metrics`, plus W3C `traceparent`
//! propagation in and out. Without an endpoint no OpenTelemetry layer is installed at all, so
//! tracing costs what the log filter lets through and nothing more.
//!
//! What is exported is deliberately narrow: spans from the crates the binary names, and of
//! events only warnings and errors (an `info!` log line with a user id never leaves the
//! process). Callers must still never put a bearer, a secret, a message text or a tool output
//! into a span field: this module cannot tell them apart from ordinary strings.
//!
//! The SDK's batch span processor and periodic metric reader run on threads of their own, with
//! no Tokio reactor; the OTLP exporter therefore uses reqwest's blocking client (see the
//! workspace Cargo.toml). [`Telemetry::shutdown`] flushes both and must be called last.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use opentelemetry::KeyValue;
use opentelemetry::metrics::Histogram;
use opentelemetry::propagation::TextMapPropagator;
use opentelemetry::trace::{SpanContext, TraceContextExt, TracerProvider as _};
use opentelemetry_sdk::metrics::SdkMeterProvider;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing::Level;
use tracing_opentelemetry::OpenTelemetrySpanExt;
use tracing_subscriber::Layer;
use tracing_subscriber::filter::{EnvFilter, Targets, filter_fn};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

pub use opentelemetry;

#[derive(Debug, thiserror::Error)]
pub enum TelemetryError {
    #[error("telemetry: the OTLP exporter could not be built: {0}")]
    Exporter(String),
    #[error("telemetry: the log subscriber could not be installed: {0}")]
    Subscriber(String),
}

/// What a binary tells [`init`].
pub struct Settings<'a> {
    /// `service.name` of every span and metric.
    pub service_name: &'static str,
    /// Base URL of an OTLP/HTTP receiver (`OTEL_EXPORTER_OTLP_ENDPOINT`); `None`: no export.
    pub endpoint: Option<&'a str>,
    /// The stderr log filter (`RUST_LOG` syntax).
    pub log_filter: &'a str,
    /// Crates (tracing targets) whose spans are exported; this crate's own are always added.
    pub export_targets: &'a [&'static str],
}

/// Keeps the exporters alive; [`Telemetry::shutdown`] flushes them.
pub struct Telemetry {
    tracer: Option<SdkTracerProvider>,
    meter: Option<SdkMeterProvider>,
}

static EXPORTING: AtomicBool = AtomicBool::new(false);

/// An integer for a span field or an exported event. tracing-opentelemetry visits only `i64`
/// among the integers: a `u64`, `usize`, `u32` or `u16` field (`u16` and `u32` widen to `u64`
/// in `tracing`) reaches the backend as a string, which it can neither sum nor compare
/// (tokio-rs/tracing-opentelemetry#267). Record every integer through this; values past
/// `i64::MAX` saturate.
pub fn int(value: impl TryInto<i64>) -> i64 {
    value.try_into().unwrap_or(i64::MAX)
}

/// True when spans and metrics leave the process. Hot paths check this before building
/// attributes that only an exporter would read.
pub fn exporting() -> bool {
    EXPORTING.load(Ordering::Relaxed)
}

/// Installs the global subscriber (and, with an endpoint, the OTLP pipelines).
pub fn init(settings: Settings<'_>) -> Result<Telemetry, TelemetryError> {
    let log_filter = EnvFilter::try_new(settings.log_filter).unwrap_or_else(|_| EnvFilter::new("info"));
    let fmt = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_target(false)
        .with_filter(log_filter);
    let Some(endpoint) = settings.endpoint else {
        tracing_subscriber::registry()
            .with(fmt)
            .try_init()
            .map_err(|e| TelemetryError::Subscriber(e.to_string()))?;
        return Ok(Telemetry { tracer: None, meter: None });
    };
    let (tracer, meter) = pipelines(settings.service_name, endpoint)?;
    let targets = settings
        .export_targets
        .iter()
        .chain(std::iter::once(&module_path!()))
        .fold(Targets::new(), |t, target| t.with_target(*target, Level::INFO));
    // Our crates' spans, and of events only warnings and errors: info logs stay on stderr.
    let exported = filter_fn(move |m| (m.is_span() || *m.level() <= Level::WARN) && targets.would_enable(m.target(), m.level()));
    let otel = tracing_opentelemetry::layer()
        .with_tracer(tracer.tracer(settings.service_name))
        .with_filter(exported);
    tracing_subscriber::registry()
        .with(fmt)
        .with(otel)
        .try_init()
        .map_err(|e| TelemetryError::Subscriber(e.to_string()))?;
    opentelemetry::global::set_meter_provider(meter.clone());
    EXPORTING.store(true, Ordering::Relaxed);
    Ok(Telemetry {
        tracer: Some(tracer),
        meter: Some(meter),
    })
}

fn pipelines(service_name: &'static str, endpoint: &str) -> Result<(SdkTracerProvider, SdkMeterProvider), TelemetryError> {
    use opentelemetry_otlp::WithExportConfig;
    let base = endpoint.trim_end_matches('/');
    let resource = opentelemetry_sdk::Resource::builder().with_service_name(service_name).build();
    let spans = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_endpoint(format!("{base}/v1/traces"))
        .build()
        .map_err(|e| TelemetryError::Exporter(e.to_string()))?;
    let metrics = opentelemetry_otlp::MetricExporter::builder()
        .with_http()
        .with_endpoint(format!("{base}/v1/metrics"))
        .build()
        .map_err(|e| TelemetryError::Exporter(e.to_string()))?;
    let tracer = SdkTracerProvider::builder()
        .with_batch_exporter(spans)
        .with_resource(resource.clone())
        .build();
    let meter = SdkMeterProvider::builder()
        .with_periodic_exporter(metrics)
        .with_resource(resource)
        .build();
    Ok((tracer, meter))
}

impl Telemetry {
    /// Flushes what is still queued (spans first, then a last metrics collection) and stops
    /// the exporters, within about `timeout` each. Call it last, outside the async runtime's
    /// worker threads: it blocks.
    pub fn shutdown(self, timeout: Duration) {
        if let Some(tracer) = self.tracer
            && let Err(e) = tracer.shutdown_with_timeout(timeout)
        {
            eprintln!("trace exporter shutdown: {e}");
        }
        if let Some(meter) = self.meter
            && let Err(e) = meter.shutdown_with_timeout(timeout)
        {
            eprintln!("metrics exporter shutdown: {e}");
        }
    }
}

/// The W3C `traceparent` of `span`, to send with an outgoing request. `None` when nothing is
/// exported (there is no trace to continue).
pub fn traceparent(span: &tracing::Span) -> Option<String> {
    if !exporting() {
        return None;
    }
    let mut carrier = std::collections::HashMap::<String, String>::new();
    TraceContextPropagator::new().inject_context(&span.context(), &mut carrier);
    carrier.remove("traceparent")
}

/// The trace context an incoming request carries in `traceparent` (empty when it has none).
pub fn remote_context(headers: &http::HeaderMap) -> opentelemetry::Context {
    TraceContextPropagator::new().extract(&HeaderExtractor(headers))
}

struct HeaderExtractor<'a>(&'a http::HeaderMap);

impl opentelemetry::propagation::Extractor for HeaderExtractor<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(|v| v.to_str().ok())
    }
    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(http::HeaderName::as_str).collect()
    }
}

/// The span context of `span` (invalid when nothing is exported).
pub fn span_context(span: &tracing::Span) -> SpanContext {
    span.context().span().span_context().clone()
}

/// Makes `span` a child of the span identified by `parent` (a span that may have ended long
/// ago, e.g. a supervisor's start). Does nothing for an invalid parent.
pub fn set_parent(span: &tracing::Span, parent: &SpanContext) {
    if parent.is_valid() {
        let _ = span.set_parent(opentelemetry::Context::new().with_remote_span_context(parent.clone()));
    }
}

/// Makes `span` a child of `parent` in the exported trace, whatever span is current.
pub fn set_parent_span(span: &tracing::Span, parent: &tracing::Span) {
    let _ = span.set_parent(parent.context());
}

/// The server span of the HTTP request being handled, put into the request's extensions by
/// [`trace_http`], for work that runs outside the request's task (rmcp handlers).
#[derive(Clone, Debug)]
pub struct RequestSpan(pub tracing::Span);

/// axum middleware: one server span per request (`http.request.method`, `http.route`,
/// `http.response.status_code`), continuing the caller's `traceparent`, and the
/// `http.server.request.duration` histogram. Install it only when [`exporting`]: it does
/// nothing useful otherwise.
pub async fn trace_http(mut request: axum::extract::Request, next: axum::middleware::Next) -> axum::response::Response {
    if !exporting() {
        return next.run(request).await;
    }
    let method = request.method().as_str().to_string();
    let route = request
        .extensions()
        .get::<axum::extract::MatchedPath>()
        .map_or_else(|| "unmatched".to_string(), |p| p.as_str().to_string());
    let span = tracing::info_span!(
        "http.server",
        otel.name = %format!("{method} {route}"),
        otel.kind = "server",
        http.request.method = %method,
        http.route = %route,
        http.response.status_code = tracing::field::Empty,
        otel.status_code = tracing::field::Empty,
    );
    let _ = span.set_parent(remote_context(request.headers()));
    request.extensions_mut().insert(RequestSpan(span.clone()));
    let started = Instant::now();
    let response = tracing::Instrument::instrument(next.run(request), span.clone()).await;
    let status = response.status().as_u16();
    span.record("http.response.status_code", i64::from(status));
    if status >= 500 {
        span.record("otel.status_code", "ERROR");
    }
    server_duration().record(
        started.elapsed().as_secs_f64(),
        &[
            KeyValue::new("http.request.method", method),
            KeyValue::new("http.route", route),
            KeyValue::new("http.response.status_code", i64::from(status)),
        ],
    );
    response
}

fn server_duration() -> &'static Histogram<f64> {
    static H: OnceLock<Histogram<f64>> = OnceLock::new();
    H.get_or_init(|| {
        opentelemetry::global::meter("http")
            .f64_histogram("http.server.request.duration")
            .with_unit("s")
            .with_description("Duration of HTTP server requests (until the response head; SSE bodies stream on).")
            .build()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn traceparent_is_read_from_headers() {
        let mut headers = http::HeaderMap::new();
        headers.insert(
            "traceparent",
            http::HeaderValue::from_static("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"),
        );
        let cx = remote_context(&headers);
        let sc = cx.span().span_context().clone();
        assert!(sc.is_valid());
        assert_eq!(sc.trace_id().to_string(), "4bf92f3577b34da6a3ce929d0e0e4736");
        assert!(!remote_context(&http::HeaderMap::new()).span().span_context().is_valid());
    }

    #[test]
    fn nothing_is_propagated_without_an_exporter() {
        assert!(!exporting());
        assert_eq!(traceparent(&tracing::Span::none()), None);
    }
}
