//! [`SqliteStore`]: the rating store in an embedded SQLite database, for the single-process
//! mode (`frontier dev`). The tables of `migrations/sqlite/rating/` are those of
//! `migrations/rating/` in SQLite's types (UUID blobs, Unix-millisecond times, JSON text),
//! and the store behaves as [`PgStore`](crate::PgStore) does: the same checks, the same
//! maths, the same storage tests (`tests/stores.rs`).
//!
//! Each finished game is one transaction that starts by inserting the record (`ON CONFLICT
//! (id) DO NOTHING`); SQLite lets one writer in at a time, so the insert takes the write
//! lock and the rating rows need no row locks.

use std::sync::LazyLock;

use frontier_proto::games::v1 as games;
use frontier_rules::Variant;
use serde_json::Value;
use sqlx::migrate::Migrator;
use sqlx::{Row as _, SqlitePool};
use uuid::Uuid;

use crate::model::{
    Counts, Cursor, GameLine, HistoryPoint, LeaderLine, RecordError, Recorded, Standing, ms,
    rate_pair,
};
use crate::rows::{self, moves_json, standing};
use crate::store::{RatingStore, StoreError, check, distinct_where};

/// The rating service's SQLite migrations (`migrations/sqlite/rating/`), tracked in their
/// own table, `_rating_migrations`, as on Postgres.
pub static MIGRATOR: LazyLock<Migrator> = LazyLock::new(|| {
    let mut migrator = sqlx::migrate!("../../migrations/sqlite/rating");
    migrator.dangerous_set_table_name("_rating_migrations");
    migrator
});

/// Games, ratings and histories in SQLite.
#[derive(Clone)]
pub struct SqliteStore {
    pool: SqlitePool,
}

impl SqliteStore {
    /// Uses this pool, applying the rating migrations first.
    pub async fn open(pool: SqlitePool) -> Result<SqliteStore, sqlx::migrate::MigrateError> {
        MIGRATOR.run(&pool).await?;
        Ok(SqliteStore { pool })
    }
}

impl RatingStore for SqliteStore {
    async fn record_game(&self, game: &games::FinishedGame) -> Result<Recorded, RecordError> {
        let checked = check(game)?;
        let (Some(white), Some(black)) = (&game.white, &game.black) else {
            return Err(RecordError::Invalid(
                "a finished game has both players".into(),
            ));
        };
        let mut tx = self.pool.begin().await?;
        let inserted = sqlx::query(
            "INSERT INTO games (id, variant, rated, initial_seconds, increment_seconds,
                white_id, white_name, white_guest, white_bot, black_id, black_name, black_guest, black_bot,
                result, outcome, moves, created_at_ms, started_at_ms, ended_at_ms, start_fen, final_fen,
                initial_layout, salt, commitment)
             VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14,$15,$16,$17,$18,$19,$20,$21,$22,$23,$24)
             ON CONFLICT (id) DO NOTHING",
        )
        .bind(checked.id)
        .bind(checked.variant.name())
        .bind(game.rated)
        .bind(game.time_control.map(|t| i64::from(t.initial_seconds)))
        .bind(game.time_control.map(|t| i64::from(t.increment_seconds)))
        .bind(checked.white)
        .bind(&white.name)
        .bind(white.guest)
        .bind(white.bot)
        .bind(checked.black)
        .bind(&black.name)
        .bind(black.guest)
        .bind(black.bot)
        .bind(&game.result)
        .bind(&game.outcome)
        .bind(moves_json(game).to_string())
        .bind(game.created_at_ms)
        .bind(game.started_at_ms)
        .bind(ms(checked.ended))
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
        if checked.rateable {
            let variant = checked.variant.name();
            let mut before = Vec::with_capacity(2);
            for pid in [checked.white, checked.black] {
                let row: Option<(f64, f64, f64, i32, Option<i64>)> = sqlx::query_as(
                    "SELECT rating, rd, volatility, rated_games, last_rated_at_ms FROM ratings
                     WHERE player_id = $1 AND variant = $2",
                )
                .bind(pid)
                .bind(variant)
                .fetch_optional(&mut *tx)
                .await?;
                before.push(match row {
                    Some(r) => standing(r.0, r.1, r.2, r.3, r.4),
                    None => standing(
                        frontier_glicko2::INITIAL.rating,
                        frontier_glicko2::INITIAL.rd,
                        frontier_glicko2::INITIAL.volatility,
                        0,
                        None::<i64>,
                    ),
                });
            }
            let (new_white, new_black) = rate_pair(&checked, &before[0], &before[1]);
            for (pid, r) in [(checked.white, new_white), (checked.black, new_black)] {
                sqlx::query(
                    "INSERT INTO ratings (player_id, variant, rating, rd, volatility, rated_games, last_rated_at_ms)
                     VALUES ($1, $2, $3, $4, $5, 1, $6)
                     ON CONFLICT (player_id, variant) DO UPDATE SET rating = excluded.rating,
                        rd = excluded.rd, volatility = excluded.volatility,
                        rated_games = ratings.rated_games + 1, last_rated_at_ms = excluded.last_rated_at_ms",
                )
                .bind(pid)
                .bind(variant)
                .bind(r.rating)
                .bind(r.rd)
                .bind(r.volatility)
                .bind(ms(checked.ended))
                .execute(&mut *tx)
                .await?;
                sqlx::query(
                    "INSERT INTO rating_history (player_id, variant, game_id, rating, rd, at_ms) VALUES ($1, $2, $3, $4, $5, $6)",
                )
                .bind(pid)
                .bind(variant)
                .bind(checked.id)
                .bind(r.rating)
                .bind(r.rd)
                .bind(ms(checked.ended))
                .execute(&mut *tx)
                .await?;
            }
        }
        tx.commit().await?;
        Ok(Recorded::Stored {
            rated: checked.rateable,
        })
    }

    async fn standings(&self, player: Uuid) -> Result<Vec<(Variant, Standing)>, StoreError> {
        let rows: Vec<rows::StandingRow<i64>> = sqlx::query_as(
            "SELECT variant, rating, rd, volatility, rated_games, last_rated_at_ms FROM ratings WHERE player_id = $1",
        )
        .bind(player)
        .fetch_all(&self.pool)
        .await?;
        rows::standings(rows)
    }

    async fn counts(&self, player: Uuid) -> Result<Vec<(Variant, Counts)>, StoreError> {
        let rows: Vec<rows::CountsRow> = sqlx::query_as(
            "SELECT variant,
                count(*) FILTER (WHERE result <> 'aborted'),
                count(*) FILTER (WHERE (result = 'white' AND white_id = $1) OR (result = 'black' AND black_id = $1)),
                count(*) FILTER (WHERE result = 'draw'),
                count(*) FILTER (WHERE (result = 'white' AND black_id = $1) OR (result = 'black' AND white_id = $1))
             FROM games WHERE white_id = $1 OR black_id = $1 GROUP BY variant",
        )
        .bind(player)
        .fetch_all(&self.pool)
        .await?;
        rows::counts(rows)
    }

    async fn games(
        &self,
        player: Uuid,
        variant: Option<Variant>,
        before: Option<Cursor>,
        limit: usize,
    ) -> Result<Vec<GameLine>, StoreError> {
        // The newest page starts after every game: at the end of time.
        let (before_ms, before_id) =
            before.map_or((i64::MAX, Uuid::max()), |c| (ms(c.ended), c.id));
        let rows: Vec<rows::GameRow<i64>> =
            sqlx::query_as(
                "SELECT id, variant, rated, white_id, white_name, black_id, black_name, result, outcome, ended_at_ms
                 FROM games
                 WHERE (white_id = $1 OR black_id = $1)
                   AND ($2 IS NULL OR variant = $2)
                   AND (ended_at_ms, id) < ($3, $4)
                 ORDER BY ended_at_ms DESC, id DESC
                 LIMIT $5",
            )
            .bind(player)
            .bind(variant.map(Variant::name))
            .bind(before_ms)
            .bind(before_id)
            .bind(i64::try_from(limit).unwrap_or(i64::MAX))
            .fetch_all(&self.pool)
            .await?;
        rows::game_lines(rows)
    }

    async fn history(
        &self,
        player: Uuid,
        variant: Variant,
    ) -> Result<Vec<HistoryPoint>, StoreError> {
        let rows: Vec<rows::HistoryRow<i64>> = sqlx::query_as(
            "SELECT game_id, rating, rd, at_ms FROM rating_history WHERE player_id = $1 AND variant = $2 ORDER BY at_ms, game_id",
        )
        .bind(player)
        .bind(variant.name())
        .fetch_all(&self.pool)
        .await?;
        Ok(rows::history(rows))
    }

    async fn leaderboard(
        &self,
        variant: Variant,
        max_rd: f64,
        limit: usize,
    ) -> Result<Vec<LeaderLine>, StoreError> {
        let rows: Vec<rows::LeaderRow> = sqlx::query_as(
            "SELECT r.player_id,
                (SELECT CASE WHEN g.white_id = r.player_id THEN g.white_name ELSE g.black_name END
                 FROM rating_history h JOIN games g ON g.id = h.game_id
                 WHERE h.player_id = r.player_id AND h.variant = r.variant
                 ORDER BY h.at_ms DESC, h.game_id DESC LIMIT 1),
                r.rating, r.rd, r.rated_games
             FROM ratings r
             WHERE r.variant = $1 AND r.rd <= $2
             ORDER BY r.rating DESC, r.player_id LIMIT $3",
        )
        .bind(variant.name())
        .bind(max_rd)
        .bind(i64::try_from(limit).unwrap_or(i64::MAX))
        .fetch_all(&self.pool)
        .await?;
        Ok(rows::leaders(rows))
    }

    async fn players_with_games(&self, players: &[Uuid]) -> Result<Vec<Uuid>, StoreError> {
        let mut found = Vec::new();
        for p in players {
            let has: bool = sqlx::query_scalar(
                "SELECT EXISTS (SELECT 1 FROM games WHERE white_id = $1)
                     OR EXISTS (SELECT 1 FROM games WHERE black_id = $1)",
            )
            .bind(p)
            .fetch_one(&self.pool)
            .await?;
            if has {
                found.push(*p);
            }
        }
        Ok(distinct_where(players, |p| found.contains(p)))
    }

    async fn game(&self, id: Uuid) -> Result<Option<games::FinishedGame>, StoreError> {
        let Some(row) = sqlx::query(
            "SELECT id, variant, rated, initial_seconds, increment_seconds, white_id, white_name, white_guest, white_bot,
                black_id, black_name, black_guest, black_bot, result, outcome, moves, created_at_ms, started_at_ms,
                ended_at_ms, start_fen, final_fen, initial_layout, salt, commitment
             FROM games WHERE id = $1",
        )
        .bind(id)
        .fetch_optional(&self.pool)
        .await?
        else {
            return Ok(None);
        };
        let moves: String = row.try_get("moves")?;
        let moves: Value = serde_json::from_str(&moves)
            .map_err(|e| StoreError::Corrupt(format!("stored moves: {e}")))?;
        let side = |side: &str| -> Result<rows::SideColumns, StoreError> {
            Ok(rows::SideColumns {
                id: row.try_get(&*format!("{side}_id"))?,
                name: row.try_get(&*format!("{side}_name"))?,
                guest: row.try_get(&*format!("{side}_guest"))?,
                bot: row.try_get(&*format!("{side}_bot"))?,
            })
        };
        rows::GameColumns {
            id: row.try_get("id")?,
            variant: row.try_get("variant")?,
            rated: row.try_get("rated")?,
            initial_seconds: row.try_get("initial_seconds")?,
            increment_seconds: row.try_get("increment_seconds")?,
            white: side("white")?,
            black: side("black")?,
            result: row.try_get("result")?,
            outcome: row.try_get("outcome")?,
            moves,
            created_at_ms: row.try_get("created_at_ms")?,
            started_at_ms: row.try_get("started_at_ms")?,
            ended_at_ms: row.try_get("ended_at_ms")?,
            start_fen: row.try_get("start_fen")?,
            final_fen: row.try_get("final_fen")?,
            initial_layout: row.try_get("initial_layout")?,
            salt: row.try_get("salt")?,
            commitment: row.try_get("commitment")?,
        }
        .finished()
        .map(Some)
    }
}
