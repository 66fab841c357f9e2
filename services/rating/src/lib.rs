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
    /// TEST ONLY: right after committing a game, before acknowledging it, print
    /// `COMMITTED <game id>` on standard output and stop (hang) there, so a test can kill
    /// the process at exactly that point.
    #[arg(long, env = "FRONTIER_TEST_HANG_AFTER_COMMIT", hide = true)]
    pub test_hang_after_commit: bool,
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
pub async fn record_game(pool: &PgPool, game: &games::FinishedGame) -> anyhow::Result<Recorded> {
    let id = Uuid::parse_str(&game.game_id).context("game id")?;
    let variant = variant_name(game.variant).context("variant")?;
    let (Some(white), Some(black)) = (&game.white, &game.black) else {
        anyhow::bail!("a finished game has both players");
    };
    let white_id = Uuid::parse_str(&white.id).context("white id")?;
    let black_id = Uuid::parse_str(&black.id).context("black id")?;
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
                .context("rating row exists")
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
    /// TEST ONLY: hang between commit and ack (see [`Config::test_hang_after_commit`]).
    pub hang_after_commit: bool,
}

/// Consumes the finished-games stream until `shutdown`; after each game it publishes a
/// notice on the recorded-games subject.
pub async fn consume(
    pool: PgPool,
    client: async_nats::Client,
    ns: &Namespace,
    settings: &ConsumerSettings,
    shutdown: Shutdown,
) -> anyhow::Result<()> {
    let js = jetstream::new(client.clone());
    let consumer_name = settings.name.as_str();
    let hang_after_commit = settings.hang_after_commit;
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
        let game = match games::FinishedGame::decode(message.payload.as_ref()) {
            Ok(g) => g,
            Err(e) => {
                // Not a record at all: never valid, so not retried.
                tracing::error!(error = %e, "dropping an undecodable finished-game message");
                let _ = message.ack_with(jetstream::AckKind::Term).await;
                continue;
            }
        };
        match record_game(&pool, &game).await {
            Ok(recorded) => {
                tracing::info!(game = %game.game_id, ?recorded, "finished game recorded");
                if hang_after_commit {
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
            Err(e) => {
                tracing::error!(game = %game.game_id, error = %e, "recording a finished game failed; it will be redelivered");
                let _ = message
                    .ack_with(jetstream::AckKind::Nak(Some(Duration::from_secs(1))))
                    .await;
            }
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
    tracing::info!("rating consuming finished games");
    consume(
        pool,
        client,
        &ns,
        &ConsumerSettings {
            name: config.consumer.clone(),
            ack_wait: config.ack_wait,
            hang_after_commit: config.test_hang_after_commit,
        },
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
