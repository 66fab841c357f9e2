//! The rating service: consumes finished games from the JetStream stream with a durable
//! consumer, and for each one, in **one Postgres transaction**, stores the game record and
//! — for a rated game between registered players — updates both players' Glicko-2 ratings
//! in that variant and appends to their rating history. The message is acknowledged only
//! after the commit.
//!
//! Exactly once in effect: the game id is the primary key of the record, so a game
//! delivered twice (or redelivered after a crash between commit and ack) inserts nothing
//! and rates nothing the second time. Concurrent games of one player on several instances
//! serialise on row locks (`SELECT … FOR UPDATE` on the rating rows, in player-id order, so
//! they cannot deadlock): no lost update.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use anyhow::Context as _;
use async_nats::jetstream::{self, consumer::pull};
use frontier_glicko2::{INITIAL, Rating, Score, rate_game};
use frontier_platform::config::{NamespaceArgs, NatsArgs, PostgresArgs};
use frontier_platform::{Namespace, Shutdown};
use frontier_proto::games::v1 as games;
use futures_util::StreamExt as _;
use prost::Message as _;
use sqlx::PgPool;
use time::OffsetDateTime;
use uuid::Uuid;

/// The migrations in `migrations/` (shared with the gateway; applying twice is a no-op).
pub static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("../../migrations");

/// rating: finished games into Postgres, ratings exactly once.
#[derive(Debug, Clone, clap::Parser)]
#[command(name = "rating", version)]
pub struct Config {
    /// NATS.
    #[command(flatten)]
    pub nats: NatsArgs,
    /// Postgres.
    #[command(flatten)]
    pub postgres: PostgresArgs,
    /// Namespace.
    #[command(flatten)]
    pub namespace: NamespaceArgs,
    /// The durable consumer's name (every instance shares it, so each game goes to one).
    #[arg(long, env = "FRONTIER_RATING_CONSUMER", default_value = "rating")]
    pub consumer: String,
    /// How long a delivered game may stay unacknowledged before it is delivered again.
    #[arg(long, env = "FRONTIER_RATING_ACK_WAIT", default_value = "30s", value_parser = frontier_platform::config::parse_duration)]
    pub ack_wait: Duration,
    /// Most deliveries of one game (the first included) before the consumer gives up on it
    /// and sets it aside: it stays in the stream and is counted in
    /// `frontier_rating_set_aside_total` (an operator can replay it).
    #[arg(long, env = "FRONTIER_RATING_MAX_DELIVER", default_value_t = 100)]
    pub max_deliver: i64,
    /// First retry delay after a transient failure (Postgres unreachable); doubles per
    /// delivery up to `--retry-cap`.
    #[arg(long, env = "FRONTIER_RATING_RETRY_BASE", default_value = "1s", value_parser = frontier_platform::config::parse_duration)]
    pub retry_base: Duration,
    /// Longest retry delay.
    #[arg(long, env = "FRONTIER_RATING_RETRY_CAP", default_value = "60s", value_parser = frontier_platform::config::parse_duration)]
    pub retry_cap: Duration,
    /// Where to serve Prometheus metrics (`/metrics`).
    #[arg(long, env = "FRONTIER_RATING_METRICS")]
    pub metrics_listen: Option<std::net::SocketAddr>,
    /// TEST ONLY: right after committing a game, before acknowledging it, print
    /// `COMMITTED <game id>` on standard output and stop (hang) there, so a test can kill
    /// the process at exactly that point.
    #[arg(long, env = "FRONTIER_TEST_HANG_AFTER_COMMIT", hide = true)]
    pub test_hang_after_commit: bool,
}

/// Why a finished game could not be recorded.
#[derive(Debug)]
pub enum RecordError {
    /// The record is not one the service can ever accept (missing player, bad id, unknown
    /// variant or result, a value the database's constraints refuse): retrying cannot help.
    Invalid(String),
    /// Storage failed (Postgres unreachable, a connection lost, a timeout): worth retrying.
    Storage(sqlx::Error),
}

impl std::fmt::Display for RecordError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RecordError::Invalid(why) => write!(f, "invalid record: {why}"),
            RecordError::Storage(e) => write!(f, "storage: {e}"),
        }
    }
}

impl std::error::Error for RecordError {}

impl From<sqlx::Error> for RecordError {
    fn from(e: sqlx::Error) -> Self {
        // SQLSTATE classes 22 (data exception) and 23 (integrity constraint violation)
        // depend on the record alone: the same record fails the same way every time.
        if let sqlx::Error::Database(db) = &e
            && let Some(code) = db.code()
            && (code.starts_with("22") || code.starts_with("23"))
        {
            return RecordError::Invalid(db.message().to_owned());
        }
        RecordError::Storage(e)
    }
}

fn invalid(what: &str) -> RecordError {
    RecordError::Invalid(what.to_owned())
}

/// What happened to one finished game.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recorded {
    /// Stored (and rated, if it was rated).
    Stored {
        /// Ratings changed.
        rated: bool,
    },
    /// Already stored: nothing changed.
    Duplicate,
}

fn variant_name(v: i32) -> Option<&'static str> {
    match games::Variant::try_from(v).ok()? {
        games::Variant::Standard => Some("standard"),
        games::Variant::Hidden => Some("hidden"),
        games::Variant::Atomic => Some("atomic"),
        games::Variant::Unspecified => None,
    }
}

fn at(ms: i64) -> OffsetDateTime {
    OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000)
        .unwrap_or(OffsetDateTime::UNIX_EPOCH)
}

fn moves_json(game: &games::FinishedGame) -> serde_json::Value {
    serde_json::Value::Array(
        game.moves
            .iter()
            .map(|m| {
                serde_json::json!({
                    "ply": m.ply, "uci": m.uci,
                    "reveal_square": m.reveal_square, "reveal_role": m.reveal_role,
                    "captured_square": m.captured_square, "captured_role": m.captured_role,
                    "captured_was_hidden": m.captured_was_hidden,
                    "captured_identity": m.captured_identity, "at_ms": m.at_ms,
                    "clock_ms": m.clock_ms,
                })
            })
            .collect(),
    )
}

/// Stores one finished game and rates it, in one transaction.
/// A record that fails validation, or whose values the database refuses, is
/// [`RecordError::Invalid`]; anything else that fails is [`RecordError::Storage`].
pub async fn record_game(
    pool: &PgPool,
    game: &games::FinishedGame,
) -> Result<Recorded, RecordError> {
    let id = Uuid::parse_str(&game.game_id).map_err(|_| invalid("game id is not a UUID"))?;
    let variant = variant_name(game.variant).ok_or_else(|| invalid("unknown variant"))?;
    let (Some(white), Some(black)) = (&game.white, &game.black) else {
        return Err(invalid("a finished game has both players"));
    };
    let white_id = Uuid::parse_str(&white.id).map_err(|_| invalid("white id is not a UUID"))?;
    let black_id = Uuid::parse_str(&black.id).map_err(|_| invalid("black id is not a UUID"))?;
    if !["white", "black", "draw", "aborted"].contains(&game.result.as_str()) {
        return Err(invalid("result is white, black, draw or aborted"));
    }
    let ended = at(game.ended_at_ms);
    let mut tx = pool.begin().await?;
    let inserted = sqlx::query(
        "INSERT INTO games (id, variant, rated, initial_seconds, increment_seconds,
            white_id, white_name, white_guest, white_bot, black_id, black_name, black_guest, black_bot,
            result, outcome, moves, created_at, started_at, ended_at, start_fen, final_fen,
            initial_layout, salt, commitment)
         VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14,$15,$16,$17,$18,$19,$20,$21,$22,$23,$24)
         ON CONFLICT (id) DO NOTHING",
    )
    .bind(id)
    .bind(variant)
    .bind(game.rated)
    .bind(game.time_control.map(|t| t.initial_seconds as i32))
    .bind(game.time_control.map(|t| t.increment_seconds as i32))
    .bind(white_id)
    .bind(&white.name)
    .bind(white.guest)
    .bind(white.bot)
    .bind(black_id)
    .bind(&black.name)
    .bind(black.guest)
    .bind(black.bot)
    .bind(&game.result)
    .bind(&game.outcome)
    .bind(sqlx::types::Json(moves_json(game)))
    .bind(at(game.created_at_ms))
    .bind(at(game.started_at_ms))
    .bind(ended)
    .bind(&game.start_fen)
    .bind(&game.final_fen)
    .bind(&game.initial_layout)
    .bind(&game.salt)
    .bind(&game.commitment)
    .execute(&mut *tx)
    .await?
    .rows_affected();
    if inserted == 0 {
        tx.commit().await?;
        return Ok(Recorded::Duplicate);
    }
    let rateable = game.rated
        && game.result != "aborted"
        && !white.guest
        && !black.guest
        && white_id != black_id;
    if rateable {
        let mut ids = [white_id, black_id];
        ids.sort();
        for pid in ids {
            sqlx::query(
                "INSERT INTO ratings (player_id, variant, rating, rd, volatility) VALUES ($1, $2, $3, $4, $5)
                 ON CONFLICT (player_id, variant) DO NOTHING",
            )
            .bind(pid)
            .bind(variant)
            .bind(INITIAL.rating)
            .bind(INITIAL.rd)
            .bind(INITIAL.volatility)
            .execute(&mut *tx)
            .await?;
        }
        let rows: Vec<(Uuid, f64, f64, f64, Option<OffsetDateTime>)> = sqlx::query_as(
            "SELECT player_id, rating, rd, volatility, last_rated_at FROM ratings
             WHERE variant = $1 AND player_id = ANY($2) ORDER BY player_id FOR UPDATE",
        )
        .bind(variant)
        .bind(&ids[..])
        .fetch_all(&mut *tx)
        .await?;
        let find = |pid: Uuid| {
            rows.iter()
                .find(|r| r.0 == pid)
                .map(|r| {
                    let idle = r.4.map_or(0.0, |last| {
                        (ended - last).as_seconds_f64().max(0.0) / 3600.0
                    });
                    (
                        Rating {
                            rating: r.1,
                            rd: r.2,
                            volatility: r.3,
                        },
                        idle,
                    )
                })
                .ok_or_else(|| invalid("rating row exists"))
        };
        let (w, w_idle) = find(white_id)?;
        let (b, b_idle) = find(black_id)?;
        let (w_score, b_score) = match game.result.as_str() {
            "white" => (Score::Win, Score::Loss),
            "black" => (Score::Loss, Score::Win),
            _ => (Score::Draw, Score::Draw),
        };
        let new_w = rate_game(
            w,
            w_idle,
            b.after_inactivity(b_idle / frontier_glicko2::PERIOD_HOURS),
            w_score,
        );
        let new_b = rate_game(
            b,
            b_idle,
            w.after_inactivity(w_idle / frontier_glicko2::PERIOD_HOURS),
            b_score,
        );
        for (pid, r) in [(white_id, new_w), (black_id, new_b)] {
            sqlx::query(
                "UPDATE ratings SET rating = $3, rd = $4, volatility = $5, rated_games = rated_games + 1,
                 last_rated_at = $6 WHERE player_id = $1 AND variant = $2",
            )
            .bind(pid)
            .bind(variant)
            .bind(r.rating)
            .bind(r.rd)
            .bind(r.volatility)
            .bind(ended)
            .execute(&mut *tx)
            .await?;
            sqlx::query(
                "INSERT INTO rating_history (player_id, variant, game_id, rating, rd, at) VALUES ($1, $2, $3, $4, $5, $6)",
            )
            .bind(pid)
            .bind(variant)
            .bind(id)
            .bind(r.rating)
            .bind(r.rd)
            .bind(ended)
            .execute(&mut *tx)
            .await?;
        }
    }
    tx.commit().await?;
    Ok(Recorded::Stored { rated: rateable })
}

/// How to consume.
#[derive(Debug, Clone)]
pub struct ConsumerSettings {
    /// Durable consumer name.
    pub name: String,
    /// Redelivery after this long without ack.
    pub ack_wait: Duration,
    /// Most deliveries of one message before it is set aside (JetStream `max_deliver`).
    pub max_deliver: i64,
    /// First retry delay after a transient failure; doubles per delivery.
    pub retry_base: Duration,
    /// Longest retry delay.
    pub retry_cap: Duration,
    /// TEST ONLY: hang between commit and ack (see [`Config::test_hang_after_commit`]).
    pub hang_after_commit: bool,
}

impl ConsumerSettings {
    /// The production defaults under this consumer name.
    pub fn named(name: &str) -> ConsumerSettings {
        ConsumerSettings {
            name: name.to_owned(),
            ack_wait: Duration::from_secs(30),
            max_deliver: 100,
            retry_base: Duration::from_secs(1),
            retry_cap: Duration::from_secs(60),
            hang_after_commit: false,
        }
    }

    /// The delay before delivery number `delivered + 1`, after delivery `delivered` (from
    /// 1) failed transiently: `retry_base × 2^(delivered − 1)`, at most `retry_cap`.
    pub fn retry_delay(&self, delivered: i64) -> Duration {
        let doublings = u32::try_from(delivered.saturating_sub(1).clamp(0, 30)).unwrap_or(30);
        self.retry_base
            .saturating_mul(1u32 << doublings)
            .min(self.retry_cap)
    }
}

/// What the consumer did, counted since it started (also exported as metrics:
/// `frontier_rating_games_total{outcome}`, `frontier_rating_retries_total`,
/// `frontier_rating_rejected_total{reason}`, `frontier_rating_set_aside_total`).
#[derive(Debug, Default)]
pub struct ConsumerStats {
    /// Games stored (rated or not).
    pub recorded: AtomicU64,
    /// Games delivered again after they were stored (changed nothing).
    pub duplicates: AtomicU64,
    /// Messages that can never be accepted, terminated (never delivered again).
    pub rejected: AtomicU64,
    /// Transient failures, each followed by a delayed redelivery.
    pub retries: AtomicU64,
    /// Messages given up on after `max_deliver` transient failures (left in the stream).
    pub set_aside: AtomicU64,
}

impl ConsumerStats {
    fn bump(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// A snapshot: (recorded, duplicates, rejected, retries, set aside).
    pub fn snapshot(&self) -> [u64; 5] {
        [
            self.recorded.load(Ordering::Relaxed),
            self.duplicates.load(Ordering::Relaxed),
            self.rejected.load(Ordering::Relaxed),
            self.retries.load(Ordering::Relaxed),
            self.set_aside.load(Ordering::Relaxed),
        ]
    }
}

/// Consumes the finished-games stream until `shutdown`; after each game it publishes a
/// notice on the recorded-games subject.
///
/// No message can stall the stream: one that cannot be decoded or will never be accepted
/// ([`RecordError::Invalid`]) is terminated (JetStream `Term`), logged once with its stream
/// sequence, and counted; a transient failure is retried with a growing delay (`Nak` with
/// delay) up to `max_deliver` deliveries, after which the message is set aside (it stays
/// in the stream; the consumer moves on) and counted.
pub async fn consume(
    pool: PgPool,
    client: async_nats::Client,
    ns: &Namespace,
    settings: &ConsumerSettings,
    stats: Arc<ConsumerStats>,
    shutdown: Shutdown,
) -> anyhow::Result<()> {
    let js = jetstream::new(client.clone());
    let consumer_name = settings.name.as_str();
    let stream = frontier_platform::streams::ensure_finished_games(&js, ns)
        .await
        .map_err(anyhow::Error::msg)?;
    let consumer = stream
        .get_or_create_consumer(
            consumer_name,
            pull::Config {
                durable_name: Some(consumer_name.to_owned()),
                ack_policy: jetstream::consumer::AckPolicy::Explicit,
                ack_wait: settings.ack_wait,
                max_deliver: settings.max_deliver,
                filter_subject: ns.finished_games_subject(),
                ..Default::default()
            },
        )
        .await
        .context("durable consumer")?;
    let mut messages = consumer.messages().await.context("pull messages")?;
    loop {
        let next = tokio::select! {
            _ = shutdown.wait() => return Ok(()),
            m = messages.next() => m,
        };
        let Some(message) = next else {
            return Ok(());
        };
        let message = match message {
            Ok(m) => m,
            Err(e) => {
                tracing::warn!(error = %e, "receiving a finished game failed");
                continue;
            }
        };
        handle(&pool, &client, ns, settings, &stats, message).await;
    }
}

/// The stream sequence and delivery count of a message (0 when unknown).
fn delivery(message: &jetstream::Message) -> (u64, i64) {
    message
        .info()
        .map(|i| (i.stream_sequence, i.delivered))
        .unwrap_or((0, 0))
}

fn reject(stats: &ConsumerStats, reason: &'static str) {
    ConsumerStats::bump(&stats.rejected);
    metrics::counter!("frontier_rating_rejected_total", "reason" => reason).increment(1);
}

async fn handle(
    pool: &PgPool,
    client: &async_nats::Client,
    ns: &Namespace,
    settings: &ConsumerSettings,
    stats: &ConsumerStats,
    message: jetstream::Message,
) {
    let (sequence, delivered) = delivery(&message);
    let game = match games::FinishedGame::decode(message.payload.as_ref()) {
        Ok(g) => g,
        Err(e) => {
            tracing::error!(sequence, error = %e, "terminating an undecodable finished-game message");
            reject(stats, "undecodable");
            let _ = message.ack_with(jetstream::AckKind::Term).await;
            return;
        }
    };
    match record_game(pool, &game).await {
        Ok(recorded) => {
            match recorded {
                Recorded::Stored { rated } => {
                    ConsumerStats::bump(&stats.recorded);
                    let outcome = if rated { "rated" } else { "stored" };
                    metrics::counter!("frontier_rating_games_total", "outcome" => outcome)
                        .increment(1);
                }
                Recorded::Duplicate => {
                    ConsumerStats::bump(&stats.duplicates);
                    metrics::counter!("frontier_rating_games_total", "outcome" => "duplicate")
                        .increment(1);
                }
            }
            tracing::info!(game = %game.game_id, ?recorded, "finished game recorded");
            if settings.hang_after_commit {
                announce_commit(&game.game_id);
                tracing::warn!("TEST ONLY: hanging between commit and acknowledgement");
                std::future::pending::<()>().await;
            }
            if let Err(e) = message.double_ack().await {
                tracing::warn!(error = %e, "ack failed; the game will come again and change nothing");
            }
            let notice = serde_json::json!({
                "game_id": game.game_id,
                "rated": matches!(recorded, Recorded::Stored { rated: true }),
                "duplicate": recorded == Recorded::Duplicate,
            });
            let _ = client
                .publish(ns.recorded_games_subject(), notice.to_string().into())
                .await;
        }
        Err(RecordError::Invalid(why)) => {
            // Logged once: a terminated message is never delivered again.
            tracing::error!(sequence, game = %game.game_id, %why, "terminating a finished game that can never be recorded");
            reject(stats, "invalid");
            let _ = message.ack_with(jetstream::AckKind::Term).await;
        }
        Err(RecordError::Storage(e)) => {
            if delivered >= settings.max_deliver {
                // JetStream delivers it no more; it stays in the stream for an operator.
                tracing::error!(sequence, game = %game.game_id, delivered, error = %e,
                    "giving up on a finished game after its last delivery; it stays in the stream, set aside");
                ConsumerStats::bump(&stats.set_aside);
                metrics::counter!("frontier_rating_set_aside_total").increment(1);
                let _ = message.ack_with(jetstream::AckKind::Term).await;
                return;
            }
            let delay = settings.retry_delay(delivered);
            tracing::warn!(sequence, game = %game.game_id, delivered, ?delay, error = %e,
                "recording a finished game failed; retrying later");
            ConsumerStats::bump(&stats.retries);
            metrics::counter!("frontier_rating_retries_total").increment(1);
            let _ = message.ack_with(jetstream::AckKind::Nak(Some(delay))).await;
        }
    }
}

/// Runs the rating service from configuration until `shutdown`.
pub async fn run(config: Config, shutdown: Shutdown) -> anyhow::Result<()> {
    let ns = Namespace::new(&config.namespace.namespace).map_err(anyhow::Error::msg)?;
    let pool = sqlx::postgres::PgPoolOptions::new()
        .max_connections(8)
        .connect(&config.postgres.database_url)
        .await
        .context("connecting to Postgres")?;
    MIGRATOR.run(&pool).await.context("applying migrations")?;
    let client = async_nats::connect(&config.nats.nats_url)
        .await
        .context("connecting to NATS")?;
    if let Some(addr) = config.metrics_listen {
        metrics_exporter_prometheus::PrometheusBuilder::new()
            .with_http_listener(addr)
            .install()
            .context("metrics listener")?;
        tracing::info!(%addr, "metrics at /metrics");
    }
    tracing::info!("rating consuming finished games");
    consume(
        pool,
        client,
        &ns,
        &ConsumerSettings {
            name: config.consumer.clone(),
            ack_wait: config.ack_wait,
            max_deliver: config.max_deliver,
            retry_base: config.retry_base,
            retry_cap: config.retry_cap,
            hang_after_commit: config.test_hang_after_commit,
        },
        Arc::default(),
        shutdown,
    )
    .await
}

/// TEST ONLY: tells a waiting test the commit happened (see `test_hang_after_commit`).
fn announce_commit(game_id: &str) {
    use std::io::Write as _;
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "COMMITTED {game_id}");
    let _ = out.flush();
}
