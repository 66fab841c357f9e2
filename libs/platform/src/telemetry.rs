//! Tracing set-up: human-readable or JSON logs, filtered by `RUST_LOG`, and OpenTelemetry
//! OTLP trace export switched on by the standard `OTEL_EXPORTER_OTLP_ENDPOINT`; trace
//! context crosses services in the W3C format (`crate::trace`).

use std::io::IsTerminal as _;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer};

/// Keeps the exporter alive; flushes spans when dropped.
#[must_use = "dropping the guard stops trace export"]
pub struct TelemetryGuard {
    provider: Option<SdkTracerProvider>,
}

impl Drop for TelemetryGuard {
    fn drop(&mut self) {
        if let Some(provider) = self.provider.take()
            && let Err(e) = provider.shutdown()
        {
            eprintln!("trace export shutdown: {e}");
        }
    }
}

/// Spans that exist for the trace alone: the relay of one frame, one publication, one
/// incoming gRPC request. Nothing is logged inside them that its enclosing span (the
/// command, the handler) does not already say, so the log layer leaves them out: without
/// trace export they are then not created at all, and with it they are exported but their
/// fields are never formatted for the logs. On the move path this is about 3 spans per move
/// and per service (issue 29, docs/benchmarks.md).
pub const TRACE_ONLY_SPANS: &[&str] = &[
    "gateway.relay",
    "game_session.publish_event",
    "grpc.request",
];

/// The target of a span that is trace-only where it is made, though others of its name are
/// not: the command of a game action (`gateway.command`) and game-session's handling of it
/// (`game_session.act`), about 2 spans per move and per service. What such a span would
/// give a log line — the game — is given on the failure path instead (a span of the same
/// name made there, or the game as a field).
pub const TRACE_ONLY_TARGET: &str = "frontier::trace_only";

/// Leaves out the spans of [`TRACE_ONLY_SPANS`] and of [`TRACE_ONLY_TARGET`].
fn not_trace_only(meta: &tracing::Metadata<'_>) -> bool {
    !(meta.is_span()
        && (meta.target() == TRACE_ONLY_TARGET || TRACE_ONLY_SPANS.contains(&meta.name())))
}

/// The log layer, writing to `writer` (standard error in the services: standard output
/// stays free for a program's own output), JSON or text, coloured only on a terminal
/// (escape codes in a log file or a collector are noise, and formatting them costs CPU on
/// every span), without the spans of [`TRACE_ONLY_SPANS`].
pub fn log_layer<S, W>(json: bool, ansi: bool, writer: W) -> Box<dyn Layer<S> + Send + Sync>
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
    W: for<'w> tracing_subscriber::fmt::MakeWriter<'w> + Send + Sync + 'static,
{
    let logged = tracing_subscriber::filter::filter_fn(not_trace_only);
    if json {
        tracing_subscriber::fmt::layer()
            .json()
            .with_writer(writer)
            .with_filter(logged)
            .boxed()
    } else {
        tracing_subscriber::fmt::layer()
            .with_ansi(ansi)
            .with_writer(writer)
            .with_filter(logged)
            .boxed()
    }
}

/// Without trace export, the spans of [`TRACE_ONLY_SPANS`] are not created at all (a
/// global filter); with it, none is added.
fn trace_only_off(exporting: bool) -> Option<tracing_subscriber::filter::FilterFn<TraceOnly>> {
    (!exporting).then(|| tracing_subscriber::filter::filter_fn(not_trace_only as TraceOnly))
}

type TraceOnly = fn(&tracing::Metadata<'_>) -> bool;

/// Installs the global subscriber for `service`. Logs are JSON when `FRONTIER_LOG_JSON=1`.
/// Call once, from `main` (tests run without it).
pub fn init(service: &'static str) -> anyhow::Result<TelemetryGuard> {
    crate::trace::install_propagator();
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let json = std::env::var("FRONTIER_LOG_JSON").is_ok_and(|v| v == "1");
    let fmt_layer = log_layer(json, std::io::stderr().is_terminal(), std::io::stderr);
    let (otel_layer, provider) = match std::env::var("OTEL_EXPORTER_OTLP_ENDPOINT") {
        Ok(endpoint) if !endpoint.is_empty() => {
            let exporter = opentelemetry_otlp::SpanExporter::builder()
                .with_tonic()
                .build()?;
            let provider = SdkTracerProvider::builder()
                .with_batch_exporter(exporter)
                .with_resource(
                    opentelemetry_sdk::Resource::builder()
                        .with_service_name(service)
                        .build(),
                )
                .build();
            let tracer = provider.tracer(service);
            (
                Some(tracing_opentelemetry::layer().with_tracer(tracer)),
                Some(provider),
            )
        }
        _ => (None, None),
    };
    tracing_subscriber::registry()
        .with(filter)
        .with(trace_only_off(otel_layer.is_some()))
        .with(fmt_layer)
        .with(otel_layer)
        .try_init()?;
    Ok(TelemetryGuard { provider })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Arc, Mutex};

    /// An unfiltered layer that counts the spans it sees: what the OpenTelemetry layer is to
    /// the log layer.
    struct Seen(Arc<AtomicUsize>);

    impl<S: tracing::Subscriber> Layer<S> for Seen {
        fn on_new_span(
            &self,
            _: &tracing::span::Attributes<'_>,
            _: &tracing::span::Id,
            _: tracing_subscriber::layer::Context<'_, S>,
        ) {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// The log layer's output, kept.
    #[derive(Clone, Default)]
    struct Written(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Written {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().expect("lock").extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl Written {
        fn text(&self) -> String {
            String::from_utf8_lossy(&self.0.lock().expect("lock")).into_owned()
        }
    }

    #[test]
    fn without_trace_export_a_trace_only_span_is_not_created_and_others_are() {
        let written = Written::default();
        let out = written.clone();
        let subscriber = tracing_subscriber::registry()
            .with(EnvFilter::new("info"))
            .with(trace_only_off(false))
            .with(log_layer(false, false, move || out.clone()));
        tracing::subscriber::with_default(subscriber, || {
            assert!(tracing::info_span!("gateway.relay").is_disabled());
            assert!(tracing::info_span!("game_session.publish_event").is_disabled());
            assert!(tracing::info_span!("grpc.request").is_disabled());
            assert!(
                tracing::info_span!(target: TRACE_ONLY_TARGET, "gateway.command", kind = "move")
                    .is_disabled()
            );
            let command = tracing::info_span!("gateway.command", kind = "move");
            assert!(!command.is_disabled());
            command.in_scope(|| tracing::info!("inside the command"));
        });
        let text = written.text();
        assert!(text.contains("gateway.command{kind=\"move\"}: "), "{text}");
        assert!(
            !text.contains('\u{1b}'),
            "no escape codes off a terminal: {text}"
        );
    }

    #[test]
    fn with_trace_export_a_trace_only_span_reaches_the_exporting_layer_and_not_the_logs() {
        let seen = Arc::new(AtomicUsize::new(0));
        let written = Written::default();
        let out = written.clone();
        let subscriber = tracing_subscriber::registry()
            .with(EnvFilter::new("info"))
            .with(trace_only_off(true))
            .with(log_layer(false, false, move || out.clone()))
            .with(Seen(seen.clone()));
        tracing::subscriber::with_default(subscriber, || {
            let relay = tracing::info_span!("gateway.relay", version = 7);
            assert!(!relay.is_disabled());
            relay.in_scope(|| tracing::info!("inside the relay"));
            let _command = tracing::info_span!("gateway.command");
            let act = tracing::info_span!(target: TRACE_ONLY_TARGET, "game_session.act");
            assert!(!act.is_disabled());
            act.in_scope(|| tracing::info!("inside the act"));
        });
        assert_eq!(
            seen.load(Ordering::Relaxed),
            3,
            "all three spans reach the exporter"
        );
        let text = written.text();
        assert!(text.contains("inside the relay"), "{text}");
        assert!(!text.contains("gateway.relay"), "{text}");
        assert!(text.contains("inside the act"), "{text}");
        assert!(!text.contains("game_session.act"), "{text}");
    }
}
