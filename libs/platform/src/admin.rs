//! Every service's admin endpoints, on their own listener (`--admin-listen`):
//!
//! - `GET /metrics`: Prometheus text of every metric the process records;
//! - `GET /healthz`: 200 while the process serves at all (liveness);
//! - `GET /readyz`: 200 when every dependency answers (Redis, NATS, Postgres, as the
//!   service has them), else 503; the body names each check and its result (readiness).
//!
//! Also the gRPC server metrics layer shared by the gRPC services (calls by method and
//! code, with latency).

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::routing::get;
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use tokio::net::TcpListener;

use crate::Shutdown;

/// A dependency check: Ok, or what is wrong.
pub type CheckFuture = Pin<Box<dyn Future<Output = Result<(), String>> + Send>>;

/// One dependency check, run anew for each `/readyz`.
type Check = Arc<dyn Fn() -> CheckFuture + Send + Sync>;

/// The named dependency checks of a service's `/readyz`.
#[derive(Clone, Default)]
pub struct Readiness {
    checks: Vec<(&'static str, Check)>,
}

/// How long one check may take before it counts as failed.
const CHECK_TIMEOUT: Duration = Duration::from_secs(2);

impl Readiness {
    /// No checks (always ready).
    pub fn new() -> Readiness {
        Readiness::default()
    }

    /// Adds a check.
    pub fn check<F, Fut>(mut self, name: &'static str, check: F) -> Readiness
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), String>> + Send + 'static,
    {
        self.checks
            .push((name, Arc::new(move || Box::pin(check()) as CheckFuture)));
        self
    }

    /// Adds a check that Redis answers `PING`.
    pub fn redis<C>(self, conn: C) -> Readiness
    where
        C: redis::aio::ConnectionLike + Clone + Send + Sync + 'static,
    {
        self.check("redis", move || {
            let mut conn = conn.clone();
            async move {
                redis::cmd("PING")
                    .query_async::<String>(&mut conn)
                    .await
                    .map(|_| ())
                    .map_err(|e| e.to_string())
            }
        })
    }

    /// Adds a check that Postgres answers a query.
    pub fn postgres(self, pool: sqlx::PgPool) -> Readiness {
        self.check("postgres", move || {
            let pool = pool.clone();
            async move {
                sqlx::query("SELECT 1")
                    .execute(&pool)
                    .await
                    .map(|_| ())
                    .map_err(|e| e.to_string())
            }
        })
    }

    /// Adds a check that the NATS connection is up.
    pub fn nats(self, client: async_nats::Client) -> Readiness {
        self.check("nats", move || {
            let state = client.connection_state();
            async move {
                match state {
                    async_nats::connection::State::Connected => Ok(()),
                    other => Err(format!("{other:?}")),
                }
            }
        })
    }

    /// Runs every check: each name with `None` if it passed, or what failed.
    pub async fn run(&self) -> Vec<(&'static str, Option<String>)> {
        let mut results = Vec::with_capacity(self.checks.len());
        for (name, check) in &self.checks {
            let outcome = match tokio::time::timeout(CHECK_TIMEOUT, check()).await {
                Ok(Ok(())) => None,
                Ok(Err(e)) => Some(e),
                Err(_) => Some("timed out".to_owned()),
            };
            results.push((*name, outcome));
        }
        results
    }
}

/// How often recorded histogram samples are folded into their buckets.
const METRICS_UPKEEP: std::time::Duration = std::time::Duration::from_secs(5);

/// The process's metrics recorder, installed on first use (one per process: in the
/// single-process mode every service shares it).
pub fn metrics() -> PrometheusHandle {
    static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();
    HANDLE
        .get_or_init(|| {
            let recorder = PrometheusBuilder::new()
                .set_buckets(&[
                    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
                ])
                // A move's stages last microseconds to milliseconds.
                .and_then(|b| {
                    b.set_buckets_for_metric(
                        Matcher::Suffix("_stage_seconds".to_owned()),
                        &[
                            0.000_025, 0.000_05, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
                            0.01, 0.025, 0.05, 0.1, 0.25,
                        ],
                    )
                })
                // Bot thinking and queue waits last seconds, not milliseconds.
                .and_then(|b| {
                    b.set_buckets_for_metric(
                        Matcher::Prefix("frontier_bot_".to_owned()),
                        &[
                            0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 3.0, 5.0, 10.0, 15.0, 30.0,
                        ],
                    )
                })
                // A game's fair-play analysis lasts seconds to a minute.
                .and_then(|b| {
                    b.set_buckets_for_metric(
                        Matcher::Prefix("frontier_fairplay_".to_owned()),
                        &[0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0],
                    )
                })
                .map(PrometheusBuilder::build_recorder)
                .unwrap_or_else(|_| PrometheusBuilder::new().build_recorder());
            let handle = recorder.handle();
            if metrics::set_global_recorder(recorder).is_err() {
                tracing::warn!("a metrics recorder was already installed; /metrics may be empty");
            }
            // Histogram samples wait in the recorder until they are folded into the buckets:
            // on a scrape, or by this upkeep. Without it a service nobody scrapes grows by
            // every sample it records (game-session: ≈ 4 MiB a minute at 4,000 moves/s; the
            // soak found it).
            let upkeep = handle.clone();
            let spawned = std::thread::Builder::new()
                .name("metrics-upkeep".to_owned())
                .spawn(move || {
                    loop {
                        std::thread::sleep(METRICS_UPKEEP);
                        upkeep.run_upkeep();
                    }
                });
            if let Err(e) = spawned {
                tracing::warn!(error = %e, "no metrics upkeep thread: memory grows until scraped");
            }
            handle
        })
        .clone()
}

/// A counter exported at zero from the start, with each of its known label values (so a
/// new pod shows on dashboards and in alerts before anything happened).
pub struct Zeroed {
    /// The counter's name.
    pub name: &'static str,
    /// Its label and that label's known values; `None` for an unlabelled counter.
    pub label: Option<(&'static str, &'static [&'static str])>,
}

impl Zeroed {
    /// An unlabelled counter.
    pub const fn plain(name: &'static str) -> Zeroed {
        Zeroed { name, label: None }
    }

    /// A counter with one label, at each of these values.
    pub const fn by(
        name: &'static str,
        label: &'static str,
        values: &'static [&'static str],
    ) -> Zeroed {
        Zeroed {
            name,
            label: Some((label, values)),
        }
    }
}

/// The variants, as the `variant` label writes them.
pub const VARIANTS: &[&str] = &["standard", "hidden", "atomic"];

/// Exports these counters at zero and these gauges at 0 (installing the recorder first):
/// every service calls it when it starts.
pub fn start_at_zero(counters: &[Zeroed], gauges: &[&'static str]) {
    let _ = metrics();
    for c in counters {
        match c.label {
            None => metrics::counter!(c.name).increment(0),
            Some((label, values)) => {
                for value in values {
                    metrics::counter!(c.name, label => *value).increment(0);
                }
            }
        }
    }
    for g in gauges {
        metrics::gauge!(*g).increment(0.0);
    }
}

/// The process's own metrics in Prometheus text, read from `/proc/self` at each scrape
/// (Linux; nothing elsewhere): CPU seconds, resident and virtual memory, open and maximum
/// file descriptors, and the start time — the names every Prometheus client library uses.
fn process_metrics() -> String {
    use std::fmt::Write as _;
    // Linux's USER_HZ, the unit of /proc's CPU times, is 100 on every architecture it runs.
    const TICKS: f64 = 100.0;
    let mut out = String::new();
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return out;
    };
    // The fields after the command name (which may hold spaces), from field 3 (`state`).
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest.split_whitespace().collect())
        .unwrap_or_default();
    let field = |n: usize| fields.get(n - 3).and_then(|f| f.parse::<f64>().ok());
    if let (Some(utime), Some(stime)) = (field(14), field(15)) {
        let _ = writeln!(
            out,
            "# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total {}",
            (utime + stime) / TICKS
        );
    }
    if let Some(vsize) = field(23) {
        let _ = writeln!(
            out,
            "# TYPE process_virtual_memory_bytes gauge\nprocess_virtual_memory_bytes {vsize}"
        );
    }
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let rss_kib = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok());
    if let Some(kib) = rss_kib {
        let _ = writeln!(
            out,
            "# TYPE process_resident_memory_bytes gauge\nprocess_resident_memory_bytes {}",
            kib * 1024
        );
    }
    if let Ok(fds) = std::fs::read_dir("/proc/self/fd") {
        let _ = writeln!(
            out,
            "# TYPE process_open_fds gauge\nprocess_open_fds {}",
            fds.count()
        );
    }
    let limits = std::fs::read_to_string("/proc/self/limits").unwrap_or_default();
    let max_fds = limits
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .and_then(|l| l.split_whitespace().nth(3)?.parse::<u64>().ok());
    if let Some(max) = max_fds {
        let _ = writeln!(out, "# TYPE process_max_fds gauge\nprocess_max_fds {max}");
    }
    let boot = std::fs::read_to_string("/proc/stat").ok().and_then(|s| {
        s.lines()
            .find_map(|l| l.strip_prefix("btime "))
            .and_then(|v| v.trim().parse::<f64>().ok())
    });
    if let (Some(boot), Some(start)) = (boot, field(22)) {
        let _ = writeln!(
            out,
            "# TYPE process_start_time_seconds gauge\nprocess_start_time_seconds {}",
            boot + start / TICKS
        );
    }
    out
}

#[derive(Clone)]
struct AdminState {
    metrics: PrometheusHandle,
    readiness: Readiness,
    service: &'static str,
}

async fn render_metrics(State(state): State<AdminState>) -> impl IntoResponse {
    (
        [(
            axum::http::header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        {
            let mut text = state.metrics.render();
            text.push_str(&process_metrics());
            text
        },
    )
}

async fn ready(State(state): State<AdminState>) -> impl IntoResponse {
    let results = state.readiness.run().await;
    let ready = results.iter().all(|(_, failed)| failed.is_none());
    let checks: serde_json::Map<String, serde_json::Value> = results
        .into_iter()
        .map(|(name, failed)| {
            (
                name.to_owned(),
                serde_json::Value::String(failed.unwrap_or_else(|| "ok".to_owned())),
            )
        })
        .collect();
    let status = if ready {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    (
        status,
        axum::Json(serde_json::json!({
            "service": state.service, "ready": ready, "checks": checks,
        })),
    )
}

/// The admin routes of `service`.
pub fn router(service: &'static str, readiness: Readiness) -> Router {
    Router::new()
        .route("/metrics", get(render_metrics))
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(ready))
        .with_state(AdminState {
            metrics: metrics(),
            readiness,
            service,
        })
}

/// Serves the admin routes on `listener` until `shutdown`.
pub async fn serve(
    listener: TcpListener,
    service: &'static str,
    readiness: Readiness,
    shutdown: Shutdown,
) -> std::io::Result<()> {
    axum::serve(listener, router(service, readiness))
        .with_graceful_shutdown(shutdown.wait_owned())
        .await
}

/// Binds `addr` (if set) and serves the admin routes there in the background until
/// `shutdown`. Errors binding are returned; errors serving are logged.
pub async fn spawn(
    addr: Option<std::net::SocketAddr>,
    service: &'static str,
    readiness: Readiness,
    shutdown: Shutdown,
) -> std::io::Result<Option<tokio::task::JoinHandle<()>>> {
    let Some(addr) = addr else {
        return Ok(None);
    };
    // The recorder is installed here, before the service serves anything: installed later
    // (by the admin task's first run), the handles a service registers once for its hot
    // metrics would stay bound to the no-op recorder — seen as a `/metrics` without them
    // when the machine was busy enough to run the service's first requests first.
    metrics();
    let listener = TcpListener::bind(addr).await?;
    tracing::info!(addr = %listener.local_addr()?, "admin endpoints: /metrics /healthz /readyz");
    Ok(Some(tokio::spawn(async move {
        if let Err(e) = serve(listener, service, readiness, shutdown).await {
            tracing::warn!(error = %e, "admin endpoints stopped");
        }
    })))
}

/// A tower layer for tonic servers: every call counted by method and gRPC status code
/// (`frontier_grpc_server_requests_total{service,method,code}`) and timed
/// (`frontier_grpc_server_duration_seconds{service,method}`).
#[derive(Debug, Clone, Copy)]
pub struct GrpcMetricsLayer {
    /// The service's name in the metrics.
    pub service: &'static str,
}

impl<S> tower::Layer<S> for GrpcMetricsLayer {
    type Service = GrpcMetrics<S>;

    fn layer(&self, inner: S) -> GrpcMetrics<S> {
        GrpcMetrics {
            inner,
            service: self.service,
        }
    }
}

/// See [`GrpcMetricsLayer`].
#[derive(Debug, Clone)]
pub struct GrpcMetrics<S> {
    inner: S,
    service: &'static str,
}

impl<S, B, R> tower::Service<axum::http::Request<B>> for GrpcMetrics<S>
where
    S: tower::Service<axum::http::Request<B>, Response = axum::http::Response<R>>,
    S::Future: Send + 'static,
    S::Error: 'static,
    R: 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Self::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: axum::http::Request<B>) -> Self::Future {
        // `/package.Service/Method`: the method is the last segment.
        let handles = method_handles(
            self.service,
            request.uri().path().rsplit('/').next().unwrap_or_default(),
        );
        let started = Instant::now();
        let future = self.inner.call(request);
        Box::pin(async move {
            let response = future.await;
            // A refusal is a trailers-only response: its status is in the headers. A
            // success carries status 0 in trailers, after the body.
            let code = match &response {
                Ok(r) => r
                    .headers()
                    .get("grpc-status")
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or("0"),
                Err(_) => "transport",
            };
            if code == "0" {
                handles.ok.increment(1);
            } else {
                metrics::counter!("frontier_grpc_server_requests_total",
                    "service" => handles.service, "method" => handles.method.clone(),
                    "code" => code.to_owned())
                .increment(1);
            }
            handles.duration.record(started.elapsed().as_secs_f64());
            response
        })
    }
}

/// A method's metric handles, registered once: looking a metric up by name and labels on
/// every call costs more than the call's own bookkeeping.
struct MethodHandles {
    service: &'static str,
    method: String,
    ok: metrics::Counter,
    duration: metrics::Histogram,
}

/// Most distinct methods tracked per process; past it (a client inventing paths) they count
/// as `other`.
const MAX_METHODS: usize = 64;

fn method_handles(service: &'static str, method: &str) -> Arc<MethodHandles> {
    type ByMethod = std::collections::HashMap<String, Arc<MethodHandles>>;
    type Cache = std::sync::RwLock<std::collections::HashMap<&'static str, ByMethod>>;
    static CACHE: OnceLock<Cache> = OnceLock::new();
    let cache = CACHE.get_or_init(Cache::default);
    if let Some(h) = cache
        .read()
        .unwrap_or_else(|p| p.into_inner())
        .get(service)
        .and_then(|m| m.get(method))
    {
        return h.clone();
    }
    let mut all = cache.write().unwrap_or_else(|p| p.into_inner());
    let methods = all.entry(service).or_default();
    let method = if methods.len() >= MAX_METHODS {
        "other"
    } else {
        method
    };
    methods
        .entry(method.to_owned())
        .or_insert_with(|| {
            Arc::new(MethodHandles {
                service,
                ok: metrics::counter!("frontier_grpc_server_requests_total",
                    "service" => service, "method" => method.to_owned(), "code" => "0"),
                duration: metrics::histogram!("frontier_grpc_server_duration_seconds",
                    "service" => service, "method" => method.to_owned()),
                method: method.to_owned(),
            })
        })
        .clone()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn process_metrics_read_this_process() {
        let text = process_metrics();
        for name in [
            "process_cpu_seconds_total ",
            "process_resident_memory_bytes ",
            "process_virtual_memory_bytes ",
            "process_open_fds ",
            "process_max_fds ",
            "process_start_time_seconds ",
        ] {
            assert!(text.contains(name), "{name} missing in:\n{text}");
        }
        let rss: f64 = text
            .lines()
            .find_map(|l| l.strip_prefix("process_resident_memory_bytes "))
            .and_then(|v| v.parse().ok())
            .expect("a number");
        assert!(
            rss > 1_000_000.0,
            "a running test holds more than 1 MB: {rss}"
        );
    }
}
