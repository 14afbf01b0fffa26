//! The model provider client: OpenAI-compatible chat completions, streamed, with tools.
//!
//! Owns the wire format to the provider and the fallback rule (retry once on the fallback
//! model when the primary cannot be reached or says nothing before its first chunk). It
//! knows nothing of users, Nextcloud or tools' meaning: it carries text and tool calls.

use eventsource_stream::Eventsource;
use futures::{Stream, StreamExt};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::pin::Pin;
use std::time::Duration;

use crate::config::ModelConfig;

pub mod connections;
pub mod endpoints;
pub mod text_calls;
pub mod tool_calls;

/// A message in the provider's format.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(tag = "role", rename_all = "lowercase")]
pub enum ChatMessage {
    System {
        content: String,
    },
    User {
        content: String,
    },
    Assistant {
        #[serde(skip_serializing_if = "Option::is_none")]
        content: Option<String>,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ToolCallOut>,
    },
    Tool {
        tool_call_id: String,
        content: String,
    },
}

/// An assistant tool call as sent back to the provider in the history.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ToolCallOut {
    pub id: String,
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub function: FunctionCall,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct FunctionCall {
    pub name: String,
    /// JSON text, as the provider expects.
    pub arguments: String,
}

impl ToolCallOut {
    pub fn new(id: String, name: String, arguments: &Value) -> Self {
        ToolCallOut {
            id,
            kind: "function",
            function: FunctionCall {
                name,
                arguments: arguments.to_string(),
            },
        }
    }
}

/// A tool offered to the model.
#[derive(Debug, Clone, Serialize)]
pub struct ToolSpec {
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub function: FunctionSpec,
}

/// The description and schema are shared with the tool's definition (which the tool-server
/// actor caches): a turn's tool list costs references, not copies of every schema, for as
/// long as the turn's stream is open.
#[derive(Debug, Clone, Serialize)]
pub struct FunctionSpec {
    pub name: String,
    #[serde(serialize_with = "serialize_shared")]
    pub description: std::sync::Arc<str>,
    #[serde(serialize_with = "serialize_shared")]
    pub parameters: std::sync::Arc<Value>,
}

/// Serialises what an `Arc` points to (serde's own impl needs its `rc` feature).
fn serialize_shared<T: Serialize + ?Sized, S: serde::Serializer>(value: &std::sync::Arc<T>, s: S) -> Result<S::Ok, S::Error> {
    (**value).serialize(s)
}

/// What the stream yields, in order.
#[derive(Debug, Clone, PartialEq)]
pub enum ModelEvent {
    TextDelta(String),
    /// The first fragment of tool call `index` (id and name are known from here on). Both
    /// are the provider's: [`tool_calls::StepCalls`] decides what they mean, and assigns
    /// the id we use.
    ToolCallStart {
        index: usize,
        id: String,
        name: String,
    },
    ToolCallArguments {
        index: usize,
        delta: String,
    },
    Finished {
        reason: String,
    },
    /// Tokens the call used, as the provider counted them (asked for when the operator
    /// bounds a turn's tokens), and the request's own count (`usage.prompt_tokens`), which
    /// compaction trusts over its estimate.
    Usage {
        total_tokens: u64,
        prompt_tokens: Option<u64>,
    },
}

#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    #[error("model provider unreachable: {0}")]
    Connect(String),
    #[error("model provider timed out")]
    Timeout,
    #[error("model provider answered HTTP {0}")]
    Status(u16),
    /// HTTP 429: the provider (or a gateway in front of it) is rate-limiting us. Worth the
    /// next endpoint or the fallback model; `Retry-After` (seconds) goes to the log.
    #[error("model provider is rate-limiting (HTTP 429, Retry-After {0:?} s)")]
    RateLimited(Option<u64>),
    /// A started stream said nothing for `TAMEBI_MODEL_IDLE_SECS`.
    #[error("model provider stream stalled: nothing for {0:?}")]
    Stalled(Duration),
    #[error("model provider stream malformed: {0}")]
    Protocol(String),
}

impl ModelError {
    /// Worth one retry on the fallback model: the primary never started answering.
    fn before_first_chunk(&self) -> bool {
        matches!(self, ModelError::Connect(_) | ModelError::Timeout | ModelError::RateLimited(_))
    }
}

pub type ModelStream = Pin<Box<dyn Stream<Item = Result<ModelEvent, ModelError>> + Send>>;

#[derive(Clone)]
pub struct ModelClient {
    /// HTTP/1.1 through the shared client, or a pool of HTTP/2 connections.
    connections: std::sync::Arc<connections::Connections>,
    config: ModelConfig,
    /// Shared by every clone: the circuit breaker is per process, not per turn.
    endpoints: std::sync::Arc<endpoints::Endpoints>,
}

#[derive(Serialize)]
struct Request<'a> {
    model: &'a str,
    messages: &'a [ChatMessage],
    #[serde(skip_serializing_if = "<[ToolSpec]>::is_empty")]
    tools: &'a [ToolSpec],
    stream: bool,
    /// The operator's bound on one call's output (`TAMEBI_MODEL_MAX_TOKENS`).
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    stream_options: Option<StreamOptions>,
}

#[derive(Serialize)]
struct StreamOptions {
    include_usage: bool,
}

impl ModelClient {
    pub fn new(http: reqwest::Client, config: ModelConfig) -> Self {
        let endpoints = std::sync::Arc::new(endpoints::Endpoints::new(config.base_urls.clone(), config.endpoint_backoff));
        let connections = std::sync::Arc::new(connections::Connections::new(http, &config));
        ModelClient {
            connections,
            config,
            endpoints,
        }
    }

    /// Starts a streamed completion. Falls back once to the fallback model when the primary
    /// fails to connect or times out before its first chunk.
    pub async fn stream(&self, messages: &[ChatMessage], tools: &[ToolSpec]) -> Result<ModelStream, ModelError> {
        self.stream_as(crate::types::ModelRole::Primary, messages, tools).await
    }

    /// [`ModelClient::stream`] for an assistant's model role: `Fallback` talks to the fallback
    /// model only (config validation guarantees one is set; without one it is the primary).
    pub async fn stream_as(
        &self,
        role: crate::types::ModelRole,
        messages: &[ChatMessage],
        tools: &[ToolSpec],
    ) -> Result<ModelStream, ModelError> {
        if role == crate::types::ModelRole::Fallback
            && let Some(fallback) = &self.config.fallback_model
        {
            return self.start(fallback, messages, tools).await;
        }
        match self.start(&self.config.model, messages, tools).await {
            Ok(s) => Ok(s),
            Err(e) if e.before_first_chunk() => match &self.config.fallback_model {
                Some(fallback) => {
                    tracing::warn!(error = %e, fallback = %fallback, "primary model failed before its first chunk; trying the fallback");
                    self.start(fallback, messages, tools).await
                }
                None => Err(e),
            },
            Err(e) => Err(e),
        }
    }

    /// One call to `model`, inside its `model.call` span (which lives as long as the stream).
    async fn start(&self, model: &str, messages: &[ChatMessage], tools: &[ToolSpec]) -> Result<ModelStream, ModelError> {
        let span = call_span(model, messages.len(), tools.len());
        let started = std::time::Instant::now();
        match tracing::Instrument::instrument(self.try_endpoints(model, messages, tools, &span), span.clone()).await {
            Ok(stream) => {
                if crate::telemetry::exporting() {
                    span.record("tamebi.model.time_to_first_token_ms", started.elapsed().as_secs_f64() * 1000.0);
                }
                Ok(observed(stream, span, model.to_string(), started))
            }
            Err(e) => {
                record_failure(&span, model, started, &e);
                Err(e)
            }
        }
    }

    /// Tries the endpoints in the breaker's order until one starts answering.
    async fn try_endpoints(
        &self,
        model: &str,
        messages: &[ChatMessage],
        tools: &[ToolSpec],
        span: &tracing::Span,
    ) -> Result<ModelStream, ModelError> {
        let mut last = ModelError::Connect("no endpoint configured".into());
        for i in self.endpoints.order(std::time::Instant::now()) {
            let url = self.endpoints.label(i);
            match self.start_at(self.endpoints.url(i), model, messages, tools, span.clone()).await {
                Ok(stream) => {
                    self.endpoints.served(i);
                    span.record("endpoint", url.as_str());
                    tracing::info!(endpoint = %url, model = %model, "model endpoint serves this call");
                    return Ok(stream);
                }
                Err(e) if e.before_first_chunk() => {
                    self.endpoints.failed(i, std::time::Instant::now());
                    tracing::warn!(endpoint = %url, error = %e, "model endpoint failed before its first chunk; skipping it for a while");
                    last = e;
                }
                Err(e) => return Err(e),
            }
        }
        Err(last)
    }

    async fn start_at(
        &self,
        base: &url::Url,
        model: &str,
        messages: &[ChatMessage],
        tools: &[ToolSpec],
        span: tracing::Span,
    ) -> Result<ModelStream, ModelError> {
        let url = format!("{}/chat/completions", base.as_str().trim_end_matches('/'));
        // The lease counts this stream on its connection for as long as the stream lives.
        let (http, lease) = self.connections.checkout().map_err(ModelError::Connect)?;
        let mut req = http
            .post(url)
            .json(&Request {
                model,
                messages,
                tools,
                stream: true,
                max_tokens: self.config.max_tokens_per_call,
                // Usage bounds a turn and goes on the call's span; not every server knows the
                // option, so it is only asked for when one of those needs it.
                stream_options: (self.config.max_tokens_per_turn.is_some() || crate::telemetry::exporting())
                    .then_some(StreamOptions { include_usage: true }),
            })
            .timeout(self.config.call_timeout);
        if let Some(key) = &self.config.api_key {
            req = req.bearer_auth(key.expose());
        }
        let first_chunk = self.config.first_chunk_timeout;
        let response = tokio::time::timeout(first_chunk, req.send())
            .await
            .map_err(|_| ModelError::Timeout)?
            .map_err(|e| {
                if e.is_timeout() {
                    ModelError::Timeout
                } else {
                    ModelError::Connect(e.to_string())
                }
            })?;
        if response.status() == reqwest::StatusCode::TOO_MANY_REQUESTS {
            return Err(ModelError::RateLimited(retry_after(response.headers())));
        }
        if !response.status().is_success() {
            return Err(ModelError::Status(response.status().as_u16()));
        }
        // A 200 that is not an event stream (a proxy's or captive portal's HTML page) would
        // parse as an empty stream: say what it was instead.
        if let Some(kind) = not_an_event_stream(response.headers()) {
            return Err(ModelError::Protocol(format!("the provider answered {kind}, not an event stream")));
        }
        let mut events = Box::pin(parse(events_of(response, lease), span, Some(self.config.idle_timeout)));
        // Wait for the first event here, so that "silent before the first chunk" is a
        // fallback case rather than a broken turn.
        let first = tokio::time::timeout(first_chunk, events.next())
            .await
            .map_err(|_| ModelError::Timeout)?;
        let head = futures::stream::iter(first);
        if self.config.reads_text_tool_calls(model) {
            return Ok(Box::pin(text_calls::recognise(head.chain(events))));
        }
        Ok(Box::pin(head.chain(events)))
    }
}

/// `Retry-After` in seconds (the HTTP-date form is read as absent: it only goes to the log).
fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<u64> {
    headers.get(reqwest::header::RETRY_AFTER)?.to_str().ok()?.trim().parse().ok()
}

/// The content type of an answer that says it is not `text/event-stream` (none said: assumed
/// to be one, as some servers send none).
fn not_an_event_stream(headers: &reqwest::header::HeaderMap) -> Option<String> {
    let kind = headers.get(reqwest::header::CONTENT_TYPE)?.to_str().unwrap_or("?");
    let essence = kind.split(';').next().unwrap_or("").trim().to_ascii_lowercase();
    (essence != "text/event-stream").then(|| kind.chars().take(80).collect())
}

/// The response body as SSE events, keeping `lease` (which counts this stream on its
/// connection) for as long as the events are read. One function for `start_at` and the size
/// test, so the test measures what a held turn keeps.
fn events_of(
    response: reqwest::Response,
    lease: connections::Lease,
) -> impl Stream<Item = Result<eventsource_stream::Event, eventsource_stream::EventStreamError<reqwest::Error>>> + Send + Unpin + 'static {
    response
        .bytes_stream()
        .map(move |chunk| {
            let _held = &lease;
            chunk
        })
        .eventsource()
}

#[derive(Deserialize)]
struct Chunk {
    #[serde(default)]
    choices: Vec<Choice>,
    /// Only on the last chunk, when `stream_options.include_usage` was asked for.
    #[serde(default)]
    usage: Option<ChunkUsage>,
    /// An error the server sends as a chunk once the stream has begun (llama.cpp, vLLM and
    /// Ollama all do; the HTTP status was already 200): the stream ends there.
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
struct ChunkUsage {
    #[serde(default)]
    total_tokens: u64,
    prompt_tokens: Option<u64>,
    #[serde(default)]
    completion_tokens: u64,
}

#[derive(Deserialize)]
struct Choice {
    #[serde(default)]
    delta: Delta,
    finish_reason: Option<String>,
}

#[derive(Deserialize, Default)]
struct Delta {
    content: Option<String>,
    #[serde(default)]
    tool_calls: Vec<ToolCallDelta>,
}

#[derive(Deserialize)]
struct ToolCallDelta {
    /// Absent from servers that send every call whole in one chunk (older Ollama): then the
    /// call's place in the chunk is its index.
    index: Option<usize>,
    id: Option<String>,
    #[serde(default)]
    function: Option<FunctionDelta>,
}

#[derive(Deserialize)]
struct FunctionDelta {
    name: Option<String>,
    arguments: Option<String>,
}

/// A provider's SSE response body, in whatever pieces the network delivers it, as
/// [`ModelEvent`]s: the decoding of a real call ([`events_of`], then [`parse`]) without the
/// HTTP client. Public for the `model_stream` fuzz target (issue #32) only.
#[doc(hidden)]
pub fn events_of_body<S, B, E>(body: S) -> impl Stream<Item = Result<ModelEvent, ModelError>> + Send
where
    S: Stream<Item = Result<B, E>> + Send + Unpin + 'static,
    B: AsRef<[u8]> + Send,
    E: std::fmt::Display + Send,
{
    parse(body.eventsource(), tracing::Span::none(), None)
}

/// Turns provider SSE events into [`ModelEvent`]s. Token usage and the finish reason are also
/// recorded on `span` (the call's span).
///
/// The stream's state is kept by a held turn for as long as its stream is open (issue #16), so
/// it holds little: `events` is read where it was captured (hence `Unpin`; pinning it into a
/// local would keep it twice), and each chunk is decoded and taken apart outside it
/// ([`chunk_of`], [`chunk_events`]), so that no chunk, choice or call is part of it.
///
/// After the first event, each next one must come within `idle` (`TAMEBI_MODEL_IDLE_SECS`): a
/// provider that stalls mid-answer ends the stream with [`ModelError::Stalled`] rather than
/// holding the turn until the whole call's bound. The first event has its own bound (the
/// caller's first-chunk timeout).
fn parse<S, E>(mut events: S, span: tracing::Span, idle: Option<Duration>) -> impl Stream<Item = Result<ModelEvent, ModelError>> + Send
where
    S: Stream<Item = Result<eventsource_stream::Event, E>> + Send + Unpin + 'static,
    E: std::fmt::Display + Send,
{
    async_stream::stream! {
        let mut finished = false;
        let mut bound = None;
        loop {
            let next = match bound {
                Some(idle) => match tokio::time::timeout(idle, events.next()).await {
                    Ok(next) => next,
                    Err(_) => { yield Err(ModelError::Stalled(idle)); return; }
                },
                None => events.next().await,
            };
            let Some(event) = next else { break };
            bound = idle;
            let chunk = match event.map_err(|e| e.to_string()).and_then(|event| chunk_of(&event.data)) {
                Ok(Some(chunk)) => chunk,
                Ok(None) => break,
                Err(e) => { yield Err(ModelError::Protocol(e)); return; }
            };
            if let Some(error) = &chunk.error {
                yield Err(ModelError::Protocol(format!("the provider sent an error: {}", error_message(error))));
                return;
            }
            for event in chunk_events(chunk, &span, &mut finished) {
                yield Ok(event);
            }
        }
        if !finished {
            // A stream that ends without a finish reason was cut off.
            yield Err(ModelError::Protocol("stream ended without a finish reason".into()));
        }
    }
}

/// One SSE event's data as a chunk; `None` for the end marker.
fn chunk_of(data: &str) -> Result<Option<Chunk>, String> {
    if data.trim() == "[DONE]" {
        return Ok(None);
    }
    serde_json::from_str(data).map(Some).map_err(|e| format!("chunk: {e}"))
}

/// What one chunk says, in order. Sets `finished` when a choice has a finish reason.
fn chunk_events(chunk: Chunk, span: &tracing::Span, finished: &mut bool) -> Vec<ModelEvent> {
    let mut out = Vec::new();
    if let Some(usage) = chunk.usage {
        if let Some(prompt_tokens) = usage.prompt_tokens {
            span.record("gen_ai.usage.input_tokens", telemetry_otlp::int(prompt_tokens));
        }
        span.record("gen_ai.usage.output_tokens", telemetry_otlp::int(usage.completion_tokens));
        out.push(ModelEvent::Usage {
            total_tokens: usage.total_tokens,
            prompt_tokens: usage.prompt_tokens,
        });
    }
    for choice in chunk.choices {
        if let Some(text) = choice.delta.content.filter(|t| !t.is_empty()) {
            out.push(ModelEvent::TextDelta(text));
        }
        for (position, call) in choice.delta.tool_calls.into_iter().enumerate() {
            let index = call.index.unwrap_or(position);
            let function = call.function.unwrap_or(FunctionDelta {
                name: None,
                arguments: None,
            });
            // The provider's id is optional to us: calls get ids of ours (tool_calls.rs).
            if let Some(name) = function.name {
                out.push(ModelEvent::ToolCallStart {
                    index,
                    id: call.id.unwrap_or_default(),
                    name,
                });
            }
            if let Some(args) = function.arguments.filter(|a| !a.is_empty()) {
                out.push(ModelEvent::ToolCallArguments { index, delta: args });
            }
        }
        if let Some(reason) = choice.finish_reason {
            *finished = true;
            span.record("gen_ai.response.finish_reasons", reason.as_str());
            out.push(ModelEvent::Finished { reason });
        }
    }
    out
}

/// The message of an in-stream error: `{"error": {"message": …}}` (OpenAI, llama.cpp, Ollama)
/// or `{"error": "…"}`; anything else as its JSON, cut short (it goes to the log only).
fn error_message(error: &Value) -> String {
    let text = match error {
        Value::String(s) => s.clone(),
        other => other
            .get("message")
            .and_then(Value::as_str)
            .map_or_else(|| other.to_string(), str::to_string),
    };
    text.chars().take(300).collect()
}

/// The span of one model call, with the OpenTelemetry `gen_ai.*` attributes when spans are
/// exported. Never the messages or the answer: only counts, names and token usage.
fn call_span(model: &str, messages: usize, tools: usize) -> tracing::Span {
    let span = tracing::info_span!(
        "model.call",
        model = %model,
        messages = telemetry_otlp::int(messages),
        tools = telemetry_otlp::int(tools),
        otel.name = tracing::field::Empty,
        otel.kind = tracing::field::Empty,
        otel.status_code = tracing::field::Empty,
        gen_ai.operation.name = tracing::field::Empty,
        gen_ai.provider.name = tracing::field::Empty,
        gen_ai.request.model = tracing::field::Empty,
        gen_ai.usage.input_tokens = tracing::field::Empty,
        gen_ai.usage.output_tokens = tracing::field::Empty,
        gen_ai.response.finish_reasons = tracing::field::Empty,
        tamebi.model.time_to_first_token_ms = tracing::field::Empty,
        error.type = tracing::field::Empty,
        endpoint = tracing::field::Empty,
    );
    if crate::telemetry::exporting() {
        span.record("otel.name", format!("chat {model}"));
        span.record("otel.kind", "client");
        span.record("gen_ai.operation.name", "chat");
        span.record("gen_ai.provider.name", "openai");
        span.record("gen_ai.request.model", model);
    }
    span
}

fn error_type(e: &ModelError) -> &'static str {
    match e {
        ModelError::Connect(_) => "model.connect",
        ModelError::Timeout => "model.timeout",
        ModelError::Status(_) => "model.status",
        ModelError::RateLimited(_) => "model.rate_limited",
        ModelError::Stalled(_) => "model.stalled",
        ModelError::Protocol(_) => "model.protocol",
    }
}

fn record_failure(span: &tracing::Span, model: &str, started: std::time::Instant, e: &ModelError) {
    let kind = error_type(e);
    span.record("error.type", kind);
    span.record("otel.status_code", "ERROR");
    crate::telemetry::metrics::error(kind);
    crate::telemetry::metrics::model_call(model, started.elapsed(), Some(kind));
}

/// Keeps the call's span open until the stream is dropped, and records the call's duration
/// (and a mid-stream failure) when it ends.
fn observed(stream: ModelStream, span: tracing::Span, model: String, started: std::time::Instant) -> ModelStream {
    if !crate::telemetry::exporting() {
        // The span still closes with the stream: `parse` holds it.
        return stream;
    }
    Box::pin(async_stream::stream! {
        let mut stream = stream;
        let mut failed = None;
        while let Some(event) = stream.next().await {
            if let Err(e) = &event {
                failed = Some(error_type(e));
                record_failure(&span, &model, started, e);
            }
            yield event;
        }
        if failed.is_none() {
            crate::telemetry::metrics::model_call(&model, started.elapsed(), None);
        }
    })
}

/// A default per-request timeout for the shared HTTP client.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

#[cfg(test)]
mod tests {
    use super::*;

    /// The model stream a held turn keeps (boxed once in `start_at`), in bytes (issue #16,
    /// sixth pass: printed with `--nocapture`; docs/performance.md has the table).
    #[test]
    fn size_of_the_model_stream() {
        let response = reqwest::Response::from(http::Response::new(reqwest::Body::from("")));
        let (_, lease) = connections::Connections::Shared(reqwest::Client::new()).checkout().unwrap();
        // What `start_at` hands to `parse`.
        let events = events_of(response, lease);
        let events_size = std::mem::size_of_val(&events);
        let parsed = parse(events, tracing::Span::none(), None);
        eprintln!(
            "size model stream (parse): {} (its event stream: {events_size})",
            std::mem::size_of_val(&parsed)
        );
        // The event stream is kept once, and no chunk is part of the state (issue #16: 1,344
        // bytes in a test build before, 496 after).
        assert!(
            std::mem::size_of_val(&parsed) <= events_size + 512,
            "{} bytes",
            std::mem::size_of_val(&parsed)
        );
    }

    fn events(frames: &[&str]) -> Vec<Result<ModelEvent, ModelError>> {
        let evs: Vec<Result<eventsource_stream::Event, std::convert::Infallible>> = frames
            .iter()
            .map(|d| {
                Ok(eventsource_stream::Event {
                    event: "message".into(),
                    data: d.to_string(),
                    id: String::new(),
                    retry: None,
                })
            })
            .collect();
        futures::executor::block_on(parse(futures::stream::iter(evs), tracing::Span::none(), None).collect())
    }

    #[test]
    fn text_and_tool_calls_are_parsed() {
        let out = events(&[
            r#"{"choices":[{"delta":{"role":"assistant","content":"Hi"},"finish_reason":null}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"files_list","arguments":""}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"path\":"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"/\"}"}}]}}]}"#,
            r#"{"choices":[{"delta":{},"finish_reason":"tool_calls"}],"usage":null}"#,
            r#"{"choices":[],"usage":{"prompt_tokens":9,"completion_tokens":3,"total_tokens":12}}"#,
            "[DONE]",
        ]);
        let out: Vec<ModelEvent> = out.into_iter().map(|e| e.unwrap()).collect();
        assert_eq!(out[0], ModelEvent::TextDelta("Hi".into()));
        assert_eq!(
            out[1],
            ModelEvent::ToolCallStart {
                index: 0,
                id: "call_1".into(),
                name: "files_list".into()
            }
        );
        assert_eq!(
            out[2],
            ModelEvent::ToolCallArguments {
                index: 0,
                delta: "{\"path\":".into()
            }
        );
        assert_eq!(
            out[out.len() - 2],
            ModelEvent::Finished {
                reason: "tool_calls".into()
            }
        );
        assert_eq!(
            out.last(),
            Some(&ModelEvent::Usage {
                total_tokens: 12,
                prompt_tokens: Some(9)
            })
        );
    }

    #[test]
    fn a_call_without_a_provider_id_still_starts() {
        let out = events(&[
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"name":"files_list","arguments":"{}"}}]}}]}"#,
            r#"{"choices":[{"delta":{},"finish_reason":"tool_calls"}]}"#,
        ]);
        assert_eq!(
            out[0].as_ref().unwrap(),
            &ModelEvent::ToolCallStart {
                index: 0,
                id: String::new(),
                name: "files_list".into()
            }
        );
    }

    #[test]
    fn calls_sent_whole_without_an_index_keep_their_place() {
        let out = events(&[
            r#"{"choices":[{"delta":{"tool_calls":[{"id":"a","function":{"name":"files_list","arguments":"{}"}},{"id":"b","function":{"name":"files_read","arguments":"{}"}}]}}]}"#,
            r#"{"choices":[{"delta":{},"finish_reason":"tool_calls"}]}"#,
        ]);
        let starts: Vec<(usize, String)> = out
            .iter()
            .filter_map(|e| match e {
                Ok(ModelEvent::ToolCallStart { index, name, .. }) => Some((*index, name.clone())),
                _ => None,
            })
            .collect();
        assert_eq!(starts, [(0, "files_list".to_string()), (1, "files_read".to_string())]);
    }

    #[test]
    fn an_error_chunk_ends_the_stream_with_its_message() {
        let out = events(&[
            r#"{"choices":[{"delta":{"content":"Hi"}}]}"#,
            r#"{"error":{"code":500,"message":"slot unavailable","type":"server_error"}}"#,
            r#"{"choices":[{"delta":{"content":"never"}}]}"#,
        ]);
        assert_eq!(out.len(), 2, "{out:?}");
        match &out[1] {
            Err(ModelError::Protocol(m)) => assert!(m.contains("slot unavailable"), "{m}"),
            other => panic!("{other:?}"),
        }
        let out = events(&[r#"{"error":"model is loading"}"#]);
        assert!(matches!(&out[0], Err(ModelError::Protocol(m)) if m.contains("model is loading")));
    }

    #[test]
    fn a_cut_stream_is_an_error() {
        let out = events(&[r#"{"choices":[{"delta":{"content":"Hi"}}]}"#]);
        assert!(matches!(out.last(), Some(Err(ModelError::Protocol(_)))));
        let out = events(&["not json"]);
        assert!(matches!(out.last(), Some(Err(ModelError::Protocol(_)))));
    }

    #[test]
    fn the_operators_token_bound_is_sent_when_set() {
        let request = |max_tokens| {
            serde_json::to_value(Request {
                model: "m",
                messages: &[],
                tools: &[],
                stream: true,
                max_tokens,
                stream_options: None,
            })
            .unwrap()
        };
        assert_eq!(request(Some(512))["max_tokens"], 512);
        assert!(request(None).get("max_tokens").is_none());
    }

    #[test]
    fn history_serialises_in_the_provider_format() {
        let m = ChatMessage::Assistant {
            content: None,
            tool_calls: vec![ToolCallOut::new("c".into(), "t".into(), &serde_json::json!({"a":1}))],
        };
        assert_eq!(
            serde_json::to_value(&m).unwrap(),
            serde_json::json!({"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"t","arguments":"{\"a\":1}"}}]})
        );
    }
}
