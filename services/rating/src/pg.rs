//! [`PgStore`]: the rating store in Postgres (tables of `migrations/rating/`, which only
//! this service reads or writes).
//!
//! Each finished game is one transaction: insert the record (`ON CONFLICT (id) DO
//! NOTHING`: a redelivery inserts nothing and rates nothing), then, for a rateable game,
//! lock both rating rows (`SELECT … FOR UPDATE`, created first if missing, always in
//! player-id order so two transactions cannot deadlock), rate, append history.

use std::sync::LazyLock;

use frontier_proto::games::v1 as games;
use frontier_rules::Variant;
use serde_json::Value;
use sqlx::migrate::Migrator;
use sqlx::{PgPool, Row as _};
use time::OffsetDateTime;
use uuid::Uuid;

use crate::model::{
    Counts, Cursor, GameLine, HistoryPoint, LeaderLine, RecordError, Recorded, Standing, at, ms,
    rate_pair,
};
use crate::rows::{self, moves_json, standing};
use crate::store::{RatingStore, StoreError, check, distinct_where};

/// The rating service's migrations (`migrations/rating/`), tracked in their own table,
/// `_rating_migrations`, so that each owner applies only its own.
pub static MIGRATOR: LazyLock<Migrator> = LazyLock::new(|| {
    let mut migrator = sqlx::migrate!("../../migrations/rating");
    migrator.dangerous_set_table_name("_rating_migrations");
    migrator
});

/// Games, ratings and histories in Postgres (run [`MIGRATOR`] first).
#[derive(Clone)]
pub struct PgStore {
    pool: PgPool,
}

impl PgStore {
    /// Uses this pool.
    pub fn new(pool: PgPool) -> PgStore {
        PgStore { pool }
    }
}

impl From<sqlx::Error> for RecordError {
    fn from(e: sqlx::Error) -> Self {
        // Constraint violations (Postgres SQLSTATE class 23, SQLite's constraint codes) and
        // data exceptions (Postgres class 22) depend on the record alone: the same record
        // fails the same way every time.
        if let sqlx::Error::Database(db) = &e {
            let constraint = !matches!(db.kind(), sqlx::error::ErrorKind::Other);
            let sqlstate = db
                .code()
                .is_some_and(|c| c.len() == 5 && (c.starts_with("22") || c.starts_with("23")));
            if constraint || sqlstate {
                return RecordError::Invalid(db.message().to_owned());
            }
        }
        RecordError::Storage(e.to_string())
    }
}

impl From<sqlx::Error> for StoreError {
    fn from(e: sqlx::Error) -> Self {
        match e {
            sqlx::Error::ColumnDecode { .. } | sqlx::Error::Decode(_) => {
                StoreError::Corrupt(e.to_string())
            }
            e => StoreError::Unavailable(e.to_string()),
        }
    }
}

impl RatingStore for PgStore {
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
                result, outcome, moves, created_at, started_at, ended_at, start_fen, final_fen,
                initial_layout, salt, commitment)
             VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14,$15,$16,$17,$18,$19,$20,$21,$22,$23,$24)
             ON CONFLICT (id) DO NOTHING",
        )
        .bind(checked.id)
        .bind(checked.variant.name())
        .bind(game.rated)
        // In range: checked by `check`.
        .bind(game.time_control.map(|t| i32::try_from(t.initial_seconds).unwrap_or(i32::MAX)))
        .bind(game.time_control.map(|t| i32::try_from(t.increment_seconds).unwrap_or(i32::MAX)))
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
        .bind(sqlx::types::Json(moves_json(game)))
        .bind(at(game.created_at_ms))
        .bind(at(game.started_at_ms))
        .bind(checked.ended)
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
            let mut ids = [checked.white, checked.black];
            ids.sort();
            for pid in ids {
                sqlx::query(
                    "INSERT INTO ratings (player_id, variant, rating, rd, volatility) VALUES ($1, $2, $3, $4, $5)
                     ON CONFLICT (player_id, variant) DO NOTHING",
                )
                .bind(pid)
                .bind(variant)
                .bind(frontier_glicko2::INITIAL.rating)
                .bind(frontier_glicko2::INITIAL.rd)
                .bind(frontier_glicko2::INITIAL.volatility)
                .execute(&mut *tx)
                .await?;
            }
            let rows: Vec<(Uuid, f64, f64, f64, i32, Option<OffsetDateTime>)> = sqlx::query_as(
                "SELECT player_id, rating, rd, volatility, rated_games, last_rated_at FROM ratings
                 WHERE variant = $1 AND player_id = ANY($2) ORDER BY player_id FOR UPDATE",
            )
            .bind(variant)
            .bind(&ids[..])
            .fetch_all(&mut *tx)
            .await?;
            let find = |pid: Uuid| {
                rows.iter()
                    .find(|r| r.0 == pid)
                    .map(|r| standing(r.1, r.2, r.3, r.4, r.5))
                    .ok_or_else(|| RecordError::Storage("a locked rating row is missing".into()))
            };
            let (new_white, new_black) =
                rate_pair(&checked, &find(checked.white)?, &find(checked.black)?);
            for (pid, r) in [(checked.white, new_white), (checked.black, new_black)] {
                sqlx::query(
                    "UPDATE ratings SET rating = $3, rd = $4, volatility = $5, rated_games = rated_games + 1,
                     last_rated_at = $6 WHERE player_id = $1 AND variant = $2",
                )
                .bind(pid)
                .bind(variant)
                .bind(r.rating)
                .bind(r.rd)
                .bind(r.volatility)
                .bind(checked.ended)
                .execute(&mut *tx)
                .await?;
                sqlx::query(
                    "INSERT INTO rating_history (player_id, variant, game_id, rating, rd, at) VALUES ($1, $2, $3, $4, $5, $6)",
                )
                .bind(pid)
                .bind(variant)
                .bind(checked.id)
                .bind(r.rating)
                .bind(r.rd)
                .bind(checked.ended)
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
        let rows: Vec<rows::StandingRow<OffsetDateTime>> = sqlx::query_as(
            "SELECT variant, rating, rd, volatility, rated_games, last_rated_at FROM ratings WHERE player_id = $1",
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
        let before = before.unwrap_or(Cursor {
            ended: time::PrimitiveDateTime::MAX.assume_utc(),
            id: Uuid::max(),
        });
        let rows: Vec<rows::GameRow<OffsetDateTime>> = sqlx::query_as(
            "SELECT id, variant, rated, white_id, white_name, black_id, black_name, result, outcome, ended_at
             FROM games
             WHERE (white_id = $1 OR black_id = $1)
               AND ($2::text IS NULL OR variant = $2)
               AND (ended_at, id) < ($3, $4)
             ORDER BY ended_at DESC, id DESC
             LIMIT $5",
        )
        .bind(player)
        .bind(variant.map(Variant::name))
        .bind(before.ended)
        .bind(before.id)
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
        let rows: Vec<rows::HistoryRow<OffsetDateTime>> = sqlx::query_as(
            "SELECT game_id, rating, rd, at FROM rating_history WHERE player_id = $1 AND variant = $2 ORDER BY at, game_id",
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
        // Only registered players have rating rows (guests' games are never rated); the
        // name is the one in the player's latest rated game of the variant.
        let rows: Vec<rows::LeaderRow> = sqlx::query_as(
            "SELECT r.player_id,
                (SELECT CASE WHEN g.white_id = r.player_id THEN g.white_name ELSE g.black_name END
                 FROM rating_history h JOIN games g ON g.id = h.game_id
                 WHERE h.player_id = r.player_id AND h.variant = r.variant
                 ORDER BY h.at DESC, h.game_id DESC LIMIT 1),
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
        // Each side has its own index (`games_white_recent`, `games_black_recent`).
        let found: Vec<Uuid> = sqlx::query_scalar(
            "SELECT p FROM unnest($1::uuid[]) AS t(p)
             WHERE EXISTS (SELECT 1 FROM games g WHERE g.white_id = t.p)
                OR EXISTS (SELECT 1 FROM games g WHERE g.black_id = t.p)",
        )
        .bind(players)
        .fetch_all(&self.pool)
        .await?;
        Ok(distinct_where(players, |p| found.contains(p)))
    }

    async fn game(&self, id: Uuid) -> Result<Option<games::FinishedGame>, StoreError> {
        let Some(row) = sqlx::query(
            "SELECT id, variant, rated, initial_seconds, increment_seconds, white_id, white_name, white_guest, white_bot,
                black_id, black_name, black_guest, black_bot, result, outcome, moves, created_at, started_at, ended_at,
                start_fen, final_fen, initial_layout, salt, commitment
             FROM games WHERE id = $1",
        )
        .bind(id)
        .fetch_optional(&self.pool)
        .await?
        else {
            return Ok(None);
        };
        let initial: Option<i32> = row.try_get("initial_seconds")?;
        let increment: Option<i32> = row.try_get("increment_seconds")?;
        let moves: sqlx::types::Json<Value> = row.try_get("moves")?;
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
            initial_seconds: initial.map(i64::from),
            increment_seconds: increment.map(i64::from),
            white: side("white")?,
            black: side("black")?,
            result: row.try_get("result")?,
            outcome: row.try_get("outcome")?,
            moves: moves.0,
            created_at_ms: ms(row.try_get("created_at")?),
            started_at_ms: ms(row.try_get("started_at")?),
            ended_at_ms: ms(row.try_get("ended_at")?),
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
