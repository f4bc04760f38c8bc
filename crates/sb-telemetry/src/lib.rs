//! Tracing for every Switchboard process: logs to stderr, and OpenTelemetry traces
//! exported by OTLP (HTTP/protobuf) when `OTEL_EXPORTER_OTLP_ENDPOINT` is set.
//!
//! One trace follows a task through the services: the W3C `traceparent` travels in
//! HTTP headers (the client's request, the webhook POST), in gRPC metadata between
//! services, in the turn queue to the worker, and in each stored task event (so the
//! dispatcher, reading events later and elsewhere, continues the trace that made them).
//!
//! The exporter is the `otlp` feature (on by default; the binary sets it): a crate that
//! only carries trace context depends with `default-features = false` and compiles no
//! HTTP client or TLS for it.
//!
//! # Layout
//! - [`init`]: installs the subscriber (and the exporter); keep the [`Telemetry`] guard
//!   alive, its drop flushes the spans still buffered.
//! - [`traceparent`], [`follow`]: the current span's context as a `traceparent` string,
//!   and making a span continue one.
//! - [`inject`], [`extract`]: the same through any header map (HTTP and gRPC metadata
//!   both are `http::HeaderMap`s).

use opentelemetry::propagation::{Extractor, Injector, TextMapPropagator};
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing_opentelemetry::OpenTelemetrySpanExt;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

/// Set once traces are exported. Without an exporter no span has a trace context to
/// pass on, so [`traceparent`], [`inject`] and [`extract`] need not look (every task
/// commit and every request asks; what the look costs is in bench/profile.md).
static EXPORTING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

fn exporting() -> bool {
    EXPORTING.load(std::sync::atomic::Ordering::Relaxed)
}

/// Flushes and shuts the exporter down when dropped.
#[derive(Debug)]
pub struct Telemetry {
    provider: Option<SdkTracerProvider>,
}

impl Drop for Telemetry {
    fn drop(&mut self) {
        if let Some(provider) = self.provider.take()
            && let Err(e) = provider.shutdown()
        {
            eprintln!("switchboard: could not flush traces: {e}");
        }
    }
}

/// Logs (filtered by `RUST_LOG`, default `info`) and, with `OTEL_EXPORTER_OTLP_ENDPOINT`,
/// traces named `service` (unless `OTEL_SERVICE_NAME` says otherwise).
pub fn init(service: &str) -> Telemetry {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    // Colour codes only for a person at a terminal, not in log files and collectors.
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let logs = tracing_subscriber::fmt::layer()
        .with_ansi(ansi)
        .with_writer(std::io::stderr);
    let endpoint = std::env::var("OTEL_EXPORTER_OTLP_ENDPOINT").unwrap_or_default();
    let provider = if endpoint.is_empty() {
        None
    } else {
        match exporter(service) {
            Ok(provider) => Some(provider),
            Err(e) => {
                eprintln!("switchboard: traces disabled, cannot set up the OTLP exporter: {e}");
                None
            }
        }
    };
    let traces = provider.as_ref().map(|p| {
        tracing_opentelemetry::layer()
            .with_tracer(p.tracer("switchboard"))
            .with_filter(tracing_subscriber::filter::LevelFilter::INFO)
    });
    opentelemetry::global::set_text_map_propagator(TraceContextPropagator::new());
    let with_traces = traces.is_some();
    let installed = tracing_subscriber::registry()
        .with(filter)
        .with(logs)
        .with(traces)
        .try_init();
    if installed.is_ok() && with_traces {
        EXPORTING.store(true, std::sync::atomic::Ordering::Relaxed);
    }
    Telemetry { provider }
}

use tracing_subscriber::Layer as _;

#[cfg(not(feature = "otlp"))]
fn exporter(_service: &str) -> Result<SdkTracerProvider, String> {
    Err("this build has no OTLP exporter (sb-telemetry's `otlp` feature)".to_owned())
}

#[cfg(feature = "otlp")]
fn exporter(service: &str) -> Result<SdkTracerProvider, String> {
    // The endpoint, headers, timeout and protocol details come from the standard
    // OTEL_EXPORTER_OTLP_* variables, which the exporter reads itself.
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .build()
        .map_err(|e| e.to_string())?;
    let name = std::env::var("OTEL_SERVICE_NAME").unwrap_or_else(|_| service.to_owned());
    let resource = opentelemetry_sdk::Resource::builder()
        .with_service_name(name)
        .build();
    Ok(SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(resource)
        .build())
}

struct Headers<'a>(&'a mut http::HeaderMap);

impl Injector for Headers<'_> {
    fn set(&mut self, key: &str, value: String) {
        if let (Ok(name), Ok(value)) = (
            http::HeaderName::from_bytes(key.as_bytes()),
            http::HeaderValue::from_str(&value),
        ) {
            self.0.insert(name, value);
        }
    }
}

struct ReadHeaders<'a>(&'a http::HeaderMap);

impl Extractor for ReadHeaders<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(|v| v.to_str().ok())
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(http::HeaderName::as_str).collect()
    }
}

/// Writes the current span's context (`traceparent`, `tracestate`) into `headers`.
pub fn inject(headers: &mut http::HeaderMap) {
    if !exporting() {
        return;
    }
    let context = tracing::Span::current().context();
    TraceContextPropagator::new().inject_context(&context, &mut Headers(headers));
}

/// Makes `span` continue the trace whose context `headers` carry (if any).
pub fn extract(span: &tracing::Span, headers: &http::HeaderMap) {
    if exporting() && headers.contains_key("traceparent") {
        let context = TraceContextPropagator::new().extract(&ReadHeaders(headers));
        let _ = span.set_parent(context);
    }
}

/// The current span's context as a W3C `traceparent` value, if it is in a sampled trace.
pub fn traceparent() -> Option<String> {
    if !exporting() {
        return None;
    }
    let mut headers = http::HeaderMap::new();
    inject(&mut headers);
    headers
        .get("traceparent")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}

/// Makes `span` continue the trace of a stored `traceparent` (events, queued turns).
pub fn follow(span: &tracing::Span, traceparent: Option<&str>) {
    let Some(value) = traceparent.filter(|v| !v.is_empty()) else {
        return;
    };
    let mut headers = http::HeaderMap::new();
    if let Ok(value) = http::HeaderValue::from_str(value) {
        headers.insert("traceparent", value);
        extract(span, &headers);
    }
}
