//! Trace context crosses every hop: one move is one trace from the gateway that took the
//! command, through game-session's handler and NATS, to the gateways that relay the event;
//! one finished game is one trace from the command that ended it, through game-session's
//! publication and JetStream, to rating's recording of it.
//!
//! The whole platform runs in this process, so one global subscriber (installed once: this
//! file is one test binary) exports every service's spans to an in-memory exporter, and the
//! W3C propagator carries contexts across the real gRPC, NATS and JetStream hops.

mod common;

use std::sync::OnceLock;

use anyhow::Context as _;
use common::{Client, Platform, WAIT, start_game};
use opentelemetry::trace::{TraceId, TracerProvider as _};
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData, SpanExporter};
use serde_json::json;
use tokio::sync::watch;
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;

/// The in-memory exporter, and a counter of exported spans to wait on.
struct Spans {
    exporter: InMemorySpanExporter,
    exported: watch::Receiver<usize>,
    _provider: SdkTracerProvider,
}

/// The in-memory exporter that also says when it received spans.
#[derive(Debug)]
struct Notifying {
    spans: InMemorySpanExporter,
    exported: watch::Sender<usize>,
}

impl SpanExporter for Notifying {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        let n = batch.len();
        let result = self.spans.export(batch).await;
        self.exported.send_modify(|count| *count += n);
        result
    }
}

/// Installs the global subscriber (once): spans at `info` and above, each exported as it
/// ends, and the W3C propagator.
fn spans() -> &'static Spans {
    static SPANS: OnceLock<Spans> = OnceLock::new();
    SPANS.get_or_init(|| {
        let exporter = InMemorySpanExporter::default();
        let (tx, exported) = watch::channel(0);
        let provider = SdkTracerProvider::builder()
            .with_simple_exporter(Notifying {
                spans: exporter.clone(),
                exported: tx,
            })
            .build();
        frontier_platform::trace::install_propagator();
        tracing_subscriber::registry()
            .with(tracing_subscriber::EnvFilter::new("info"))
            .with(
                // Only the spans' own fields as attributes (no code location, thread or
                // timing), so the test sees exactly what the services record.
                tracing_opentelemetry::layer()
                    .with_location(false)
                    .with_threads(false)
                    .with_target(false)
                    .with_tracked_inactivity(false)
                    .with_tracer(provider.tracer("frontier-tests")),
            )
            .init();
        Spans {
            exporter,
            exported,
            _provider: provider,
        }
    })
}

/// A span's attribute, as text.
fn attr(span: &SpanData, key: &str) -> Option<String> {
    span.attributes
        .iter()
        .find(|kv| kv.key.as_str() == key)
        .map(|kv| kv.value.to_string())
}

/// Spans named `name` whose attributes include each of `attrs`.
fn named<'a>(spans: &'a [SpanData], name: &str, attrs: &[(&str, &str)]) -> Vec<&'a SpanData> {
    spans
        .iter()
        .filter(|s| s.name == name)
        .filter(|s| attrs.iter().all(|(k, v)| attr(s, k).as_deref() == Some(*v)))
        .collect()
}

/// The ended spans, once `done` holds for them (within [`WAIT`]).
async fn ended(what: &str, done: impl Fn(&[SpanData]) -> bool) -> anyhow::Result<Vec<SpanData>> {
    let spans = spans();
    let finished = || spans.exporter.get_finished_spans().unwrap_or_default();
    let mut exported = spans.exported.clone();
    tokio::time::timeout(WAIT, exported.wait_for(|_| done(&finished())))
        .await
        .with_context(|| format!("no {what} within {WAIT:?}"))?
        .context("exporter gone")?;
    Ok(finished())
}

fn trace_of(span: &SpanData) -> TraceId {
    span.span_context.trace_id()
}

/// The only span named `name` with these attributes.
fn one<'a>(spans: &'a [SpanData], name: &str, attrs: &[(&str, &str)]) -> &'a SpanData {
    let found = named(spans, name, attrs);
    assert_eq!(found.len(), 1, "one {name} span with {attrs:?}: {found:?}");
    found[0]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_move_and_a_finished_game_are_each_one_trace() -> anyhow::Result<()> {
    spans();
    let platform = Platform::start(2, 2, None).await?;
    // Different gateways, so the event crosses NATS to a second gateway (and White's
    // commands go to game-session 0, Black's to game-session 1).
    let mut white = Client::guest(platform.gateways[0], "white").await?;
    let mut black = Client::guest(platform.gateways[1], "black").await?;
    let game = start_game(&mut white, &mut black, "standard", "white").await?;
    // A gateway sends a follower its first view before its live subscription is active (a
    // frame published in between reaches the client from the log, with no relay span).
    // A draw offered and declined, each seen by both sides, proves both followers live
    // before the traced move: a follower hears anything after its first view only once
    // subscribed.
    for (actor, kind) in [(0, "offer_draw"), (1, "decline_draw")] {
        let client = if actor == 0 { &mut white } else { &mut black };
        client
            .send(json!({"type": kind, "id": kind, "game_id": game}))
            .await?;
        let version = client.ack(kind).await?["version"]
            .as_u64()
            .context("version")?;
        white.event(&game, version).await?;
        black.event(&game, version).await?;
    }

    // (a) A move: gateway → game-session → NATS → both gateways' relays.
    let version = white.play(&game, "e2e4").await?;
    white.event(&game, version).await?;
    black.event(&game, version).await?;
    let version_text = version.to_string();
    let relayed = [("game", game.as_str()), ("version", version_text.as_str())];
    let spans = ended("relays of the move", |s| {
        named(s, "gateway.relay", &relayed).len() == 2
            && !named(
                s,
                "gateway.command",
                &[("kind", "move"), ("game", game.as_str())],
            )
            .is_empty()
    })
    .await?;
    let command = one(
        &spans,
        "gateway.command",
        &[("kind", "move"), ("game", game.as_str())],
    );
    let trace = trace_of(command);
    let acts: Vec<_> = named(&spans, "game_session.act", &[("game", game.as_str())])
        .into_iter()
        .filter(|s| trace_of(s) == trace)
        .collect();
    assert_eq!(
        acts.len(),
        1,
        "game-session's act handler is in the move's trace"
    );
    let publication = one(
        &spans,
        "game_session.publish_event",
        &[("game", game.as_str()), ("version", version_text.as_str())],
    );
    for relay in named(&spans, "gateway.relay", &relayed) {
        assert_eq!(
            trace_of(relay),
            trace,
            "each gateway's relay of the event is in the move's trace"
        );
        assert_eq!(
            relay.parent_span_id,
            publication.span_context.span_id(),
            "the relay's parent is game-session's publication of the event (across NATS)"
        );
    }

    // (b) The end: gateway → game-session → JetStream → rating.
    white
        .send(json!({"type": "resign", "id": "r", "game_id": game}))
        .await?;
    white.ack("r").await?;
    // The sweeper of an outbox may publish the record again (JetStream drops the repeat),
    // and rating may see a redelivery: so look for the spans in the resignation's trace.
    let resigned = [("kind", "resign"), ("game", game.as_str())];
    let in_trace_of_resign = |s: &[SpanData], name: &str| {
        let Some(resign) = named(s, "gateway.command", &resigned).first().copied() else {
            return false;
        };
        named(s, name, &[("game", game.as_str())])
            .iter()
            .any(|span| trace_of(span) == trace_of(resign))
    };
    let spans = ended(
        "rating's recording of the game in the resignation's trace",
        |s| in_trace_of_resign(s, "rating.record"),
    )
    .await?;
    assert!(
        in_trace_of_resign(&spans, "game_session.publish_finished"),
        "game-session published the finished game in the resignation's trace"
    );
    let resign = one(&spans, "gateway.command", &resigned);
    assert_ne!(
        trace_of(resign),
        trace,
        "each command is a trace of its own"
    );

    white.close().await;
    black.close().await;
    platform.stop().await;
    Ok(())
}

/// The fields the platform's spans may record: ids, message types, versions, delivery
/// counts and gRPC method paths. Anything else (a move, a frame, a layout) must not be
/// there.
const ALLOWED_FIELDS: &[&str] = &["game", "kind", "version", "sequence", "delivered", "rpc"];

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn spans_record_ids_types_and_versions_only() -> anyhow::Result<()> {
    const LAYOUT: &str = "PQBRBRNNPPPPPPP/rnbqbrpnppppppp";
    spans();
    let platform = Platform::start(2, 2, Some(LAYOUT)).await?;
    let mut white = Client::guest(platform.gateways[0], "white").await?;
    let mut black = Client::guest(platform.gateways[1], "black").await?;
    let game = start_game(&mut white, &mut black, "hidden", "white").await?;
    let version = white.play(&game, "e2e4").await?;
    black.event(&game, version).await?;
    black.play(&game, "d7d5").await?;
    black
        .send(json!({"type": "resign", "id": "r", "game_id": game}))
        .await?;
    black.ack("r").await?;
    let spans = ended("rating's recording of the hidden game", |s| {
        !named(s, "rating.record", &[("game", game.as_str())]).is_empty()
    })
    .await?;
    let ours = ["gateway.", "game_session.", "rating.", "clock.", "grpc."];
    let mut checked = 0;
    for span in spans
        .iter()
        .filter(|s| ours.iter().any(|prefix| s.name.starts_with(prefix)))
    {
        checked += 1;
        for kv in &span.attributes {
            let (key, value) = (kv.key.as_str(), kv.value.to_string());
            assert!(
                ALLOWED_FIELDS.contains(&key),
                "{}: field {key} is not an id, type or version",
                span.name
            );
            let well_formed = match key {
                "game" => uuid::Uuid::parse_str(&value).is_ok(),
                "kind" => frontier_protocol::CLIENT_MESSAGE_TYPES.contains(&value.as_str()),
                "rpc" => value.starts_with("/frontier."),
                _ => value.parse::<u64>().is_ok(),
            };
            assert!(well_formed, "{}: {key} = {value}", span.name);
        }
    }
    assert!(
        named(
            &spans,
            "gateway.command",
            &[("kind", "move"), ("game", game.as_str())]
        )
        .len()
            == 2
            && checked > 10,
        "the hidden game's spans were checked ({checked} spans)"
    );

    white.close().await;
    black.close().await;
    platform.stop().await;
    Ok(())
}
