//! An OTLP/HTTP receiver for tests: what our processes export, decoded.
//!
//! Listens on a free loopback port (`endpoint()` is what `OTEL_EXPORTER_OTLP_ENDPOINT` takes)
//! and accepts `POST /v1/traces` and `POST /v1/metrics` in the protobuf encoding, decoding
//! each body with the `opentelemetry-proto` crate — the real OTLP message definitions, not a
//! mock of our exporter — and answering as a collector does. A body that does not decode is
//! answered 400 and counted, so a test sees a broken exporter instead of silence.
//!
//! It runs on its own thread and runtime, so it works under sync and async tests alike.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use opentelemetry_proto::tonic::collector::metrics::v1::{ExportMetricsServiceRequest, ExportMetricsServiceResponse};
use opentelemetry_proto::tonic::collector::trace::v1::{ExportTraceServiceRequest, ExportTraceServiceResponse};
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use prost::Message;

use crate::wait_until;

#[derive(Default)]
struct Received {
    /// False for a sink that only counts (benchmarks): nothing is kept.
    keep: bool,
    traces: Vec<ExportTraceServiceRequest>,
    metrics: Vec<ExportMetricsServiceRequest>,
    /// Every request body as received, for searching what left a process byte for byte.
    raw: Vec<Vec<u8>>,
    undecodable: usize,
    span_count: usize,
    metric_exports: usize,
    bytes: usize,
}

impl Received {
    fn body(&mut self, body: &[u8]) {
        self.bytes += body.len();
        if self.keep {
            self.raw.push(body.to_vec());
        }
    }
}

type Shared = Arc<Mutex<Received>>;

/// A running receiver; stops when dropped.
pub struct OtlpReceiver {
    endpoint: String,
    received: Shared,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// One exported span, flattened for assertions. Ids are lower-case hex (parent empty for a root).
#[derive(Clone, Debug)]
pub struct ReceivedSpan {
    pub service: String,
    pub name: String,
    pub trace_id: String,
    pub span_id: String,
    pub parent_span_id: String,
    /// OTLP `SpanKind` (1 internal, 2 server, 3 client).
    pub kind: i32,
    pub attributes: BTreeMap<String, String>,
    /// The attributes whose value is an OTLP integer (`attributes` renders every kind as text).
    pub ints: BTreeMap<String, i64>,
    /// (name, attributes) of each span event.
    pub events: Vec<(String, BTreeMap<String, String>)>,
    /// (trace id, span id) of each link.
    pub links: Vec<(String, String)>,
    /// OTLP status code (2 = error).
    pub status_code: i32,
}

impl ReceivedSpan {
    pub fn attr(&self, key: &str) -> Option<&str> {
        self.attributes.get(key).map(String::as_str)
    }

    /// The attribute `key` when it was exported as an integer (not as a string of digits).
    pub fn int_attr(&self, key: &str) -> Option<i64> {
        self.ints.get(key).copied()
    }
}

/// One exported metric: its service, name and the attribute sets of its data points.
#[derive(Clone, Debug)]
pub struct ReceivedMetric {
    pub service: String,
    pub name: String,
    pub points: Vec<BTreeMap<String, String>>,
}

impl OtlpReceiver {
    /// A receiver on a free loopback port that keeps everything it decodes.
    pub fn start() -> OtlpReceiver {
        Self::start_on("127.0.0.1:0", true)
    }

    /// A receiver on `bind`; with `keep` false it decodes and counts but keeps nothing (a
    /// sink for benchmarks, see `otlp-sink`).
    pub fn start_on(bind: &str, keep: bool) -> OtlpReceiver {
        let received: Shared = Arc::new(Mutex::new(Received {
            keep,
            ..Received::default()
        }));
        let listener = std::net::TcpListener::bind(bind).expect("bind the OTLP receiver");
        let endpoint = format!("http://{}", listener.local_addr().expect("receiver address"));
        listener.set_nonblocking(true).expect("nonblocking listener");
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let state = received.clone();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("receiver runtime");
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).expect("tokio listener");
                let app = axum::Router::new()
                    .route("/v1/traces", post(traces))
                    .route("/v1/metrics", post(metrics))
                    .with_state(state);
                let _ = axum::serve(listener, app)
                    .with_graceful_shutdown(async move {
                        let _ = stopped.await;
                    })
                    .await;
            });
        });
        OtlpReceiver {
            endpoint,
            received,
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    /// The base URL to export to (`OTEL_EXPORTER_OTLP_ENDPOINT`).
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Received> {
        self.received.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// (spans, metric exports, bytes) received so far, kept or not.
    pub fn counts(&self) -> (usize, usize, usize) {
        let r = self.lock();
        (r.span_count, r.metric_exports, r.bytes)
    }

    /// Bodies that were not valid OTLP protobuf.
    pub fn undecodable(&self) -> usize {
        self.lock().undecodable
    }

    /// Every span received so far.
    pub fn spans(&self) -> Vec<ReceivedSpan> {
        let received = self.lock();
        let mut out = Vec::new();
        for request in &received.traces {
            for rs in &request.resource_spans {
                let service = service_name(rs.resource.as_ref());
                for ss in &rs.scope_spans {
                    for s in &ss.spans {
                        out.push(ReceivedSpan {
                            service: service.clone(),
                            name: s.name.clone(),
                            trace_id: hex::encode(&s.trace_id),
                            span_id: hex::encode(&s.span_id),
                            parent_span_id: hex::encode(&s.parent_span_id),
                            kind: s.kind,
                            attributes: flatten(&s.attributes),
                            ints: s
                                .attributes
                                .iter()
                                .filter_map(|kv| match kv.value.as_ref().and_then(|v| v.value.as_ref()) {
                                    Some(any_value::Value::IntValue(i)) => Some((kv.key.clone(), *i)),
                                    _ => None,
                                })
                                .collect(),
                            events: s.events.iter().map(|e| (e.name.clone(), flatten(&e.attributes))).collect(),
                            links: s
                                .links
                                .iter()
                                .map(|l| (hex::encode(&l.trace_id), hex::encode(&l.span_id)))
                                .collect(),
                            status_code: s.status.as_ref().map_or(0, |st| st.code),
                        });
                    }
                }
            }
        }
        out
    }

    /// Every metric received so far (one entry per export).
    pub fn metrics(&self) -> Vec<ReceivedMetric> {
        use opentelemetry_proto::tonic::metrics::v1::metric::Data;
        let received = self.lock();
        let mut out = Vec::new();
        for request in &received.metrics {
            for rm in &request.resource_metrics {
                let service = service_name(rm.resource.as_ref());
                for sm in &rm.scope_metrics {
                    for m in &sm.metrics {
                        let points = match &m.data {
                            Some(Data::Sum(d)) => d.data_points.iter().map(|p| flatten(&p.attributes)).collect(),
                            Some(Data::Gauge(d)) => d.data_points.iter().map(|p| flatten(&p.attributes)).collect(),
                            Some(Data::Histogram(d)) => d.data_points.iter().map(|p| flatten(&p.attributes)).collect(),
                            Some(Data::ExponentialHistogram(d)) => d.data_points.iter().map(|p| flatten(&p.attributes)).collect(),
                            Some(Data::Summary(d)) => d.data_points.iter().map(|p| flatten(&p.attributes)).collect(),
                            None => Vec::new(),
                        };
                        out.push(ReceivedMetric {
                            service: service.clone(),
                            name: m.name.clone(),
                            points,
                        });
                    }
                }
            }
        }
        out
    }

    /// Every string in what was received, decoded: span and event names, attribute keys and
    /// values of spans, events, links, resources and metric points, status messages.
    pub fn all_strings(&self) -> Vec<String> {
        let mut out = Vec::new();
        for s in self.spans() {
            out.push(s.name.clone());
            out.extend(s.attributes.into_iter().flat_map(|(k, v)| [k, v]));
            for (name, attrs) in s.events {
                out.push(name);
                out.extend(attrs.into_iter().flat_map(|(k, v)| [k, v]));
            }
        }
        for m in self.metrics() {
            out.push(m.name);
            out.extend(m.points.into_iter().flat_map(|p| p.into_iter().flat_map(|(k, v)| [k, v])));
        }
        let received = self.lock();
        for request in &received.traces {
            for rs in &request.resource_spans {
                for ss in &rs.scope_spans {
                    for s in &ss.spans {
                        out.extend(s.status.as_ref().map(|st| st.message.clone()));
                        for l in &s.links {
                            out.extend(flatten(&l.attributes).into_iter().flat_map(|(k, v)| [k, v]));
                        }
                    }
                }
            }
        }
        out
    }

    /// Every attribute (of a span, a span event or a metric point) exported as a string of
    /// digits, as `service: where key="value"`: a number a backend cannot sum or compare.
    pub fn digit_strings(&self) -> Vec<String> {
        fn digits(attributes: &[KeyValue], at: &str, out: &mut Vec<String>) {
            for kv in attributes {
                if let Some(any_value::Value::StringValue(s)) = kv.value.as_ref().and_then(|v| v.value.as_ref())
                    && !s.is_empty()
                    && s.bytes().all(|b| b.is_ascii_digit())
                {
                    out.push(format!("{at} {}={s:?}", kv.key));
                }
            }
        }
        use opentelemetry_proto::tonic::metrics::v1::metric::Data;
        let received = self.lock();
        let mut out = Vec::new();
        for request in &received.traces {
            for rs in &request.resource_spans {
                let service = service_name(rs.resource.as_ref());
                for s in rs.scope_spans.iter().flat_map(|ss| &ss.spans) {
                    digits(&s.attributes, &format!("{service}: span {}", s.name), &mut out);
                    for e in &s.events {
                        digits(&e.attributes, &format!("{service}: event {:?} of {}", e.name, s.name), &mut out);
                    }
                }
            }
        }
        for request in &received.metrics {
            for rm in &request.resource_metrics {
                let service = service_name(rm.resource.as_ref());
                for m in rm.scope_metrics.iter().flat_map(|sm| &sm.metrics) {
                    let at = format!("{service}: metric {}", m.name);
                    let points: Vec<&[KeyValue]> = match &m.data {
                        Some(Data::Sum(d)) => d.data_points.iter().map(|p| p.attributes.as_slice()).collect(),
                        Some(Data::Gauge(d)) => d.data_points.iter().map(|p| p.attributes.as_slice()).collect(),
                        Some(Data::Histogram(d)) => d.data_points.iter().map(|p| p.attributes.as_slice()).collect(),
                        Some(Data::ExponentialHistogram(d)) => d.data_points.iter().map(|p| p.attributes.as_slice()).collect(),
                        Some(Data::Summary(d)) => d.data_points.iter().map(|p| p.attributes.as_slice()).collect(),
                        None => Vec::new(),
                    };
                    for p in points {
                        digits(p, &at, &mut out);
                    }
                }
            }
        }
        out
    }

    /// Whether `needle` occurs anywhere in the raw bodies received (byte for byte).
    pub fn raw_contains(&self, needle: &str) -> bool {
        let needle = needle.as_bytes();
        self.lock().raw.iter().any(|body| body.windows(needle.len()).any(|w| w == needle))
    }

    /// Polls (every 20 ms, up to `timeout`) until `done` holds for the spans received; returns
    /// them either way.
    pub fn wait_for_spans(&self, timeout: Duration, done: impl Fn(&[ReceivedSpan]) -> bool) -> Vec<ReceivedSpan> {
        wait_until(timeout, || done(&self.spans()));
        self.spans()
    }
}

impl Drop for OtlpReceiver {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn service_name(resource: Option<&opentelemetry_proto::tonic::resource::v1::Resource>) -> String {
    resource
        .and_then(|r| flatten(&r.attributes).remove("service.name"))
        .unwrap_or_default()
}

fn flatten(attributes: &[KeyValue]) -> BTreeMap<String, String> {
    attributes
        .iter()
        .map(|kv| (kv.key.clone(), kv.value.as_ref().map(render).unwrap_or_default()))
        .collect()
}

fn render(value: &AnyValue) -> String {
    match &value.value {
        Some(any_value::Value::StringValue(s)) => s.clone(),
        Some(any_value::Value::BoolValue(b)) => b.to_string(),
        Some(any_value::Value::IntValue(i)) => i.to_string(),
        Some(any_value::Value::DoubleValue(d)) => d.to_string(),
        Some(any_value::Value::BytesValue(b)) => String::from_utf8_lossy(b).into_owned(),
        Some(any_value::Value::ArrayValue(a)) => a.values.iter().map(render).collect::<Vec<_>>().join(","),
        Some(any_value::Value::KvlistValue(l)) => flatten(&l.values)
            .into_iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(","),
        Some(any_value::Value::StringValueStrindex(i)) => format!("strindex:{i}"),
        None => String::new(),
    }
}

const PROTOBUF: &str = "application/x-protobuf";

fn is_protobuf(headers: &HeaderMap) -> bool {
    headers
        .get(axum::http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with(PROTOBUF))
}

type Answer = (StatusCode, [(&'static str, &'static str); 1], Vec<u8>);

async fn traces(State(state): State<Shared>, headers: HeaderMap, body: Bytes) -> Answer {
    accept::<ExportTraceServiceRequest, ExportTraceServiceResponse>(&state, &headers, &body, |received, request| {
        received.span_count += request
            .resource_spans
            .iter()
            .flat_map(|r| &r.scope_spans)
            .map(|s| s.spans.len())
            .sum::<usize>();
        if received.keep {
            received.traces.push(request);
        }
    })
}

async fn metrics(State(state): State<Shared>, headers: HeaderMap, body: Bytes) -> Answer {
    accept::<ExportMetricsServiceRequest, ExportMetricsServiceResponse>(&state, &headers, &body, |received, request| {
        received.metric_exports += 1;
        if received.keep {
            received.metrics.push(request);
        }
    })
}

/// Decodes one export as `Req` and answers as a collector does (an empty `Resp`), or 400.
fn accept<Req: Message + Default, Resp: Message + Default>(
    state: &Shared,
    headers: &HeaderMap,
    body: &[u8],
    store: impl FnOnce(&mut Received, Req),
) -> Answer {
    let decoded = is_protobuf(headers).then(|| Req::decode(body).ok()).flatten();
    let mut received = state.lock().unwrap_or_else(|e| e.into_inner());
    received.body(body);
    match decoded {
        Some(request) => {
            store(&mut received, request);
            (StatusCode::OK, [("content-type", PROTOBUF)], Resp::default().encode_to_vec())
        }
        None => {
            received.undecodable += 1;
            (
                StatusCode::BAD_REQUEST,
                [("content-type", "text/plain")],
                b"not an OTLP protobuf export".to_vec(),
            )
        }
    }
}
