//! Trace context across the platform's hops, in the W3C format (`traceparent`,
//! `tracestate`) of the global text-map propagator ([`install_propagator`], called by
//! `telemetry::init`): injected into gRPC metadata by the clients' [`InjectContext`]
//! interceptor and into NATS headers by [`inject_headers`]; adopted as the remote parent of
//! a server's request span ([`grpc_server_span`]) and of a consumer's span ([`adopt`] with
//! [`extract_headers`]). Every service goes through this module; none hand-rolls it.
//!
//! A parent is set on a span before the span is first entered: once entered, the
//! OpenTelemetry layer has started it and its parent can no longer change. So a remote
//! parent is adopted where the span is made (`tonic`'s `trace_fn`, or [`adopt`] before
//! `Instrument::instrument`), never from inside an `#[instrument]`ed function.
//!
//! Without an installed propagator (tests that do not ask for one) nothing is injected and
//! every extraction is empty; without the OpenTelemetry layer (no OTLP endpoint) spans have
//! no context to inject, and adopting a parent does nothing.

use async_nats::HeaderMap;
use opentelemetry::propagation::{Extractor, Injector};
use tonic::codegen::http;
use tonic::metadata::{MetadataKey, MetadataMap, MetadataValue};
use tonic::service::Interceptor;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::Channel;
use tracing::Span;
use tracing_opentelemetry::OpenTelemetrySpanExt as _;

pub use opentelemetry::Context;

/// Installs the W3C trace-context propagator as the global text-map propagator.
pub fn install_propagator() {
    opentelemetry::global::set_text_map_propagator(
        opentelemetry_sdk::propagation::TraceContextPropagator::new(),
    );
}

/// The trace context of the current span (empty when there is none, or no OpenTelemetry
/// layer).
pub fn current() -> Context {
    Span::current().context()
}

/// Writes `cx` into gRPC request metadata.
pub fn inject_metadata(cx: &Context, metadata: &mut MetadataMap) {
    opentelemetry::global::get_text_map_propagator(|propagator| {
        propagator.inject_context(cx, &mut MetadataInjector(metadata));
    });
}

/// The trace context carried by gRPC metadata (empty if none).
pub fn extract_metadata(metadata: &MetadataMap) -> Context {
    extract_http(metadata.as_ref())
}

/// Writes `cx` into NATS message headers.
pub fn inject_headers(cx: &Context, headers: &mut HeaderMap) {
    opentelemetry::global::get_text_map_propagator(|propagator| {
        propagator.inject_context(cx, &mut NatsInjector(headers));
    });
}

/// The trace context carried by NATS message headers (empty if none).
pub fn extract_headers(headers: Option<&HeaderMap>) -> Context {
    match headers {
        Some(headers) => opentelemetry::global::get_text_map_propagator(|propagator| {
            propagator.extract(&NatsExtractor(headers))
        }),
        None => Context::new(),
    }
}

/// `span` with `parent` (a context received from another service) as its parent. Call it
/// on a span that was never entered.
pub fn adopt(span: Span, parent: &Context) -> Span {
    // A span that is not created (a trace-only span without trace export) has no parent
    // to take.
    if span.is_disabled() {
        return span;
    }
    if let Err(e) = span.set_parent(parent.clone()) {
        // There is no OpenTelemetry layer: nothing to connect.
        tracing::trace!(error = %e, "no remote parent adopted");
    }
    span
}

/// The span of one incoming gRPC request, child of the context its metadata carries; for
/// `tonic::transport::Server::trace_fn`. Only the method path is recorded.
pub fn grpc_server_span(request: &http::Request<()>) -> Span {
    let span = tracing::info_span!("grpc.request", rpc = %request.uri().path());
    if span.is_disabled() {
        // Without trace export (`telemetry::TRACE_ONLY_SPANS`): no context to read.
        return span;
    }
    adopt(span, &extract_http(request.headers()))
}

/// A gRPC client interceptor that writes the current span's context into every request.
#[derive(Debug, Clone, Copy, Default)]
pub struct InjectContext;

impl Interceptor for InjectContext {
    fn call(
        &mut self,
        mut request: tonic::Request<()>,
    ) -> Result<tonic::Request<()>, tonic::Status> {
        inject_metadata(&current(), request.metadata_mut());
        Ok(request)
    }
}

/// A channel whose every request carries the caller's trace context.
pub type Traced = InterceptedService<Channel, InjectContext>;

/// `channel`, with every request carrying the caller's trace context.
pub fn traced(channel: Channel) -> Traced {
    InterceptedService::new(channel, InjectContext)
}

fn extract_http(headers: &http::HeaderMap) -> Context {
    opentelemetry::global::get_text_map_propagator(|propagator| {
        propagator.extract(&HttpExtractor(headers))
    })
}

struct MetadataInjector<'a>(&'a mut MetadataMap);

impl Injector for MetadataInjector<'_> {
    fn set(&mut self, key: &str, value: String) {
        // The propagator's keys and values are ASCII; anything else is not sent.
        if let (Ok(key), Ok(value)) = (
            MetadataKey::from_bytes(key.as_bytes()),
            MetadataValue::try_from(value),
        ) {
            self.0.insert(key, value);
        }
    }
}

struct HttpExtractor<'a>(&'a http::HeaderMap);

impl Extractor for HttpExtractor<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(|v| v.to_str().ok())
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(http::HeaderName::as_str).collect()
    }
}

struct NatsInjector<'a>(&'a mut HeaderMap);

impl Injector for NatsInjector<'_> {
    fn set(&mut self, key: &str, value: String) {
        // The propagator's keys are valid header names; anything else is not sent (a
        // `&str` name would be checked by a panic).
        if let Ok(key) = async_nats::header::HeaderName::try_from(key) {
            self.0.insert(key, value);
        }
    }
}

struct NatsExtractor<'a>(&'a HeaderMap);

impl Extractor for NatsExtractor<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).map(|v| v.as_str())
    }

    fn keys(&self) -> Vec<&str> {
        self.0
            .iter()
            .map(|(name, _)| -> &str { name.as_ref() })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry::trace::{
        SpanContext, SpanId, TraceContextExt as _, TraceFlags, TraceId, TraceState,
    };

    fn remote() -> Context {
        Context::new().with_remote_span_context(SpanContext::new(
            TraceId::from(0x0af7_6519_16cd_43dd_8448_eb21_1c80_319c),
            SpanId::from(0xb7ad_6b71_6920_3331),
            TraceFlags::SAMPLED,
            true,
            TraceState::default(),
        ))
    }

    fn same_span(a: &Context, b: &Context) -> bool {
        let (a, b) = (
            a.span().span_context().clone(),
            b.span().span_context().clone(),
        );
        a.is_valid() && a.trace_id() == b.trace_id() && a.span_id() == b.span_id()
    }

    #[test]
    fn a_context_crosses_metadata_and_headers() {
        install_propagator();
        let cx = remote();

        let mut metadata = MetadataMap::new();
        inject_metadata(&cx, &mut metadata);
        assert_eq!(
            metadata.get("traceparent").and_then(|v| v.to_str().ok()),
            Some("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
        );
        assert!(same_span(&extract_metadata(&metadata), &cx));

        let mut headers = HeaderMap::new();
        inject_headers(&cx, &mut headers);
        assert!(same_span(&extract_headers(Some(&headers)), &cx));

        assert!(
            !extract_headers(None).span().span_context().is_valid(),
            "no headers, no parent"
        );
    }
}
