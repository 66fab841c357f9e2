//! Tracing set-up: human-readable or JSON logs, filtered by `RUST_LOG`, and OpenTelemetry
//! OTLP trace export switched on by the standard `OTEL_EXPORTER_OTLP_ENDPOINT`; trace
//! context crosses services in the W3C format (`crate::trace`).

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

/// Installs the global subscriber for `service`. Logs are JSON when `FRONTIER_LOG_JSON=1`.
/// Call once, from `main` (tests run without it).
pub fn init(service: &'static str) -> anyhow::Result<TelemetryGuard> {
    crate::trace::install_propagator();
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let json = std::env::var("FRONTIER_LOG_JSON").is_ok_and(|v| v == "1");
    // Logs go to standard error; standard output stays free for a program's own output.
    let fmt_layer = if json {
        tracing_subscriber::fmt::layer()
            .json()
            .with_writer(std::io::stderr)
            .boxed()
    } else {
        tracing_subscriber::fmt::layer()
            .with_writer(std::io::stderr)
            .boxed()
    };
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
        .with(fmt_layer)
        .with(otel_layer)
        .try_init()?;
    Ok(TelemetryGuard { provider })
}
