//! [`PgStore`]: the fair-play tables in Postgres (`migrations/fairplay/`, tracked in
//! `_fairplay_migrations`). One transaction per analysed game: both players' advisory
//! locks (in player-id order, so two games of the same players cannot deadlock), their
//! game rows (`ON CONFLICT DO NOTHING`: a redelivery stores nothing), then each stored
//! player's window, aggregate and report.

use std::sync::{Arc, LazyLock};

use frontier_fairplay::{GameStats, GameSummary, Thresholds, aggregate};
use frontier_platform::convert::variant_from_name;
use frontier_rules::Variant;
use sqlx::migrate::Migrator;
use sqlx::{PgPool, Postgres, Row as _, Transaction};
use time::OffsetDateTime;
use uuid::Uuid;

use crate::model::{
    Action, AuditRow, Moderator, MoveRow, ReasonRow, Recorded, ReportRow, ReportStep, SideRecord,
    Status, StatusFilter, WINDOW, report_step,
};
use crate::store::{DecideError, FairPlayStore, StoreError};

/// The fair-play service's migrations, tracked in their own table.
pub static MIGRATOR: LazyLock<Migrator> = LazyLock::new(|| {
    let mut migrator = sqlx::migrate!("../../migrations/fairplay");
    migrator.dangerous_set_table_name("_fairplay_migrations");
    migrator
});

/// The fair-play tables in Postgres (run [`MIGRATOR`] first).
#[derive(Clone)]
pub struct PgStore {
    pool: PgPool,
    thresholds: Arc<Thresholds>,
}

impl PgStore {
    /// A store on `pool` reporting at these thresholds.
    pub fn new(pool: PgPool, thresholds: Thresholds) -> PgStore {
        PgStore {
            pool,
            thresholds: Arc::new(thresholds),
        }
    }
}

fn unavailable(e: sqlx::Error) -> StoreError {
    StoreError::Unavailable(e.to_string())
}

fn at(ms: i64) -> OffsetDateTime {
    OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000)
        .unwrap_or(OffsetDateTime::UNIX_EPOCH)
}

fn ms(t: OffsetDateTime) -> i64 {
    i64::try_from(t.unix_timestamp_nanos() / 1_000_000).unwrap_or(i64::MAX)
}

fn variant_name(v: Variant) -> &'static str {
    match v {
        Variant::Standard => "standard",
        Variant::Hidden => "hidden",
        Variant::Atomic => "atomic",
    }
}

fn corrupt(what: &str) -> StoreError {
    StoreError::Corrupt(what.to_owned())
}

/// The columns a game row is read from (a macro, so queries stay `&'static str`).
macro_rules! game_columns {
    () => {
        "game_id, player_id, player_name, variant, color, opponent_name, \
    result, rating, ended_at, counted, top1, acpl, near_best, think_cv, fast_best_complex, \
    slow_only_moves, score, timed, complex, only_moves, moves"
    };
}

fn game_row(row: &sqlx::postgres::PgRow) -> Result<SideRecord, StoreError> {
    let get = |e: sqlx::Error| StoreError::Corrupt(e.to_string());
    let variant: String = row.try_get("variant").map_err(get)?;
    let color: String = row.try_get("color").map_err(get)?;
    let moves: serde_json::Value = row.try_get("moves").map_err(get)?;
    let moves: Vec<MoveRow> =
        serde_json::from_value(moves).map_err(|e| StoreError::Corrupt(e.to_string()))?;
    let count = |name: &str| -> Result<u32, StoreError> {
        let n: i32 = row.try_get(name).map_err(get)?;
        u32::try_from(n).map_err(|_| corrupt(name))
    };
    Ok(SideRecord {
        game_id: row.try_get("game_id").map_err(get)?,
        player_id: row.try_get("player_id").map_err(get)?,
        player_name: row.try_get("player_name").map_err(get)?,
        variant: variant_from_name(&variant).ok_or_else(|| corrupt("variant"))?,
        color: match color.as_str() {
            "white" => "white",
            "black" => "black",
            _ => return Err(corrupt("color")),
        },
        opponent_name: row.try_get("opponent_name").map_err(get)?,
        result: row.try_get("result").map_err(get)?,
        rating: row.try_get("rating").map_err(get)?,
        ended_at_ms: ms(row.try_get("ended_at").map_err(get)?),
        stats: GameStats {
            counted: count("counted")?,
            top1: row.try_get("top1").map_err(get)?,
            acpl: row.try_get("acpl").map_err(get)?,
            near_best: row.try_get("near_best").map_err(get)?,
            think_cv: row.try_get("think_cv").map_err(get)?,
            fast_best_complex: row.try_get("fast_best_complex").map_err(get)?,
            slow_only_moves: row.try_get("slow_only_moves").map_err(get)?,
            score: row.try_get("score").map_err(get)?,
            timed: count("timed")?,
            complex: count("complex")?,
            only_moves: count("only_moves")?,
        },
        moves,
    })
}

/// The columns a report row is read from.
macro_rules! report_columns {
    () => {
        "id, player_id, player_name, variant, status, score, reasons, \
    game_ids, rating, created_at, updated_at, decided_by_id, decided_by_name, decided_at, note"
    };
}

fn report_row(row: &sqlx::postgres::PgRow) -> Result<ReportRow, StoreError> {
    let get = |e: sqlx::Error| StoreError::Corrupt(e.to_string());
    let variant: String = row.try_get("variant").map_err(get)?;
    let status: String = row.try_get("status").map_err(get)?;
    let reasons: serde_json::Value = row.try_get("reasons").map_err(get)?;
    let reasons: Vec<ReasonRow> =
        serde_json::from_value(reasons).map_err(|e| StoreError::Corrupt(e.to_string()))?;
    let decided_by_id: Option<Uuid> = row.try_get("decided_by_id").map_err(get)?;
    let decided_by_name: Option<String> = row.try_get("decided_by_name").map_err(get)?;
    let decided_at: Option<OffsetDateTime> = row.try_get("decided_at").map_err(get)?;
    let decided = match (decided_by_id, decided_by_name, decided_at) {
        (Some(id), Some(name), Some(when)) => Some((Moderator { id, name }, ms(when))),
        _ => None,
    };
    Ok(ReportRow {
        id: row.try_get("id").map_err(get)?,
        player_id: row.try_get("player_id").map_err(get)?,
        player_name: row.try_get("player_name").map_err(get)?,
        variant: variant_from_name(&variant).ok_or_else(|| corrupt("variant"))?,
        status: Status::parse(&status).ok_or_else(|| corrupt("status"))?,
        score: row.try_get("score").map_err(get)?,
        reasons,
        game_ids: row.try_get("game_ids").map_err(get)?,
        rating: row.try_get("rating").map_err(get)?,
        created_at_ms: ms(row.try_get("created_at").map_err(get)?),
        updated_at_ms: ms(row.try_get("updated_at").map_err(get)?),
        decided,
        note: row.try_get("note").map_err(get)?,
    })
}

fn to_json<T: serde::Serialize>(value: &T) -> Result<serde_json::Value, StoreError> {
    serde_json::to_value(value).map_err(|e| StoreError::Corrupt(e.to_string()))
}

impl PgStore {
    /// Stores one side; false when it was stored before.
    async fn insert_side(
        tx: &mut Transaction<'_, Postgres>,
        side: &SideRecord,
        now_ms: i64,
    ) -> Result<bool, StoreError> {
        let s = &side.stats;
        let done = sqlx::query(
            "INSERT INTO fairplay_games (game_id, player_id, player_name, variant, color, \
             opponent_name, result, rating, ended_at, analysed_at, counted, top1, acpl, \
             near_best, think_cv, fast_best_complex, slow_only_moves, score, timed, complex, \
             only_moves, moves) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, \
             $14, $15, $16, $17, $18, $19, $20, $21, $22) ON CONFLICT DO NOTHING",
        )
        .bind(side.game_id)
        .bind(side.player_id)
        .bind(&side.player_name)
        .bind(variant_name(side.variant))
        .bind(side.color)
        .bind(&side.opponent_name)
        .bind(&side.result)
        .bind(side.rating)
        .bind(at(side.ended_at_ms))
        .bind(at(now_ms))
        .bind(i32::try_from(s.counted).unwrap_or(i32::MAX))
        .bind(s.top1)
        .bind(s.acpl)
        .bind(s.near_best)
        .bind(s.think_cv)
        .bind(s.fast_best_complex)
        .bind(s.slow_only_moves)
        .bind(s.score)
        .bind(i32::try_from(s.timed).unwrap_or(i32::MAX))
        .bind(i32::try_from(s.complex).unwrap_or(i32::MAX))
        .bind(i32::try_from(s.only_moves).unwrap_or(i32::MAX))
        .bind(to_json(&side.moves)?)
        .execute(&mut **tx)
        .await
        .map_err(unavailable)?;
        Ok(done.rows_affected() == 1)
    }

    /// Brings one stored side's player's report up to date.
    async fn follow_up(
        &self,
        tx: &mut Transaction<'_, Postgres>,
        side: &SideRecord,
        now_ms: i64,
        recorded: &mut Recorded,
    ) -> Result<(), StoreError> {
        let variant = variant_name(side.variant);
        let rows = sqlx::query(concat!(
            "SELECT ",
            game_columns!(),
            " FROM fairplay_games WHERE player_id = $1 AND variant = $2 \
             ORDER BY ended_at DESC, game_id DESC LIMIT $3"
        ))
        .bind(side.player_id)
        .bind(variant)
        .bind(WINDOW as i64)
        .fetch_all(&mut **tx)
        .await
        .map_err(unavailable)?;
        let latest = rows.iter().map(game_row).collect::<Result<Vec<_>, _>>()?;
        let summaries: Vec<GameSummary> = latest.iter().map(SideRecord::summary).collect();
        let ids: Vec<Uuid> = latest.iter().map(|g| g.game_id).collect();
        let rating = latest.first().map_or(side.rating, |g| g.rating);
        let verdict = aggregate(&summaries, &self.thresholds);
        let open: Option<Uuid> = sqlx::query_scalar(
            "SELECT id FROM fairplay_reports WHERE player_id = $1 AND variant = $2 \
             AND status = 'open' FOR UPDATE",
        )
        .bind(side.player_id)
        .bind(variant)
        .fetch_optional(&mut **tx)
        .await
        .map_err(unavailable)?;
        let marked: bool =
            sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM fairplay_marks WHERE player_id = $1)")
                .bind(side.player_id)
                .fetch_one(&mut **tx)
                .await
                .map_err(unavailable)?;
        let since: Option<i64> = sqlx::query_scalar(
            "SELECT (SELECT count(*) FROM fairplay_games g WHERE g.player_id = $1 \
             AND g.variant = $2 AND g.ended_at > d.at) FROM (SELECT max(decided_at) AS at \
             FROM fairplay_reports WHERE player_id = $1 AND variant = $2 \
             AND decided_at IS NOT NULL) d WHERE d.at IS NOT NULL",
        )
        .bind(side.player_id)
        .bind(variant)
        .fetch_optional(&mut **tx)
        .await
        .map_err(unavailable)?
        .flatten();
        let since = since.map(|n| usize::try_from(n).unwrap_or(0));
        let reasons: Vec<ReasonRow> = verdict.reasons.iter().map(Into::into).collect();
        match report_step(&verdict, open.is_some(), marked, since) {
            ReportStep::None => {}
            ReportStep::Update => {
                if let Some(id) = open {
                    sqlx::query(
                        "UPDATE fairplay_reports SET score = $2, reasons = $3, game_ids = $4, \
                         rating = $5, updated_at = $6 WHERE id = $1",
                    )
                    .bind(id)
                    .bind(verdict.score)
                    .bind(to_json(&reasons)?)
                    .bind(&ids)
                    .bind(rating)
                    .bind(at(now_ms))
                    .execute(&mut **tx)
                    .await
                    .map_err(unavailable)?;
                    recorded.updated.push(id);
                }
            }
            ReportStep::Open => {
                let mut report = ReportRow::open(side, &verdict, &ids, now_ms);
                report.rating = rating;
                sqlx::query(
                    "INSERT INTO fairplay_reports (id, player_id, player_name, variant, status, \
                     score, reasons, game_ids, rating, created_at, updated_at) \
                     VALUES ($1, $2, $3, $4, 'open', $5, $6, $7, $8, $9, $9)",
                )
                .bind(report.id)
                .bind(report.player_id)
                .bind(&report.player_name)
                .bind(variant)
                .bind(report.score)
                .bind(to_json(&reasons)?)
                .bind(&report.game_ids)
                .bind(report.rating)
                .bind(at(now_ms))
                .execute(&mut **tx)
                .await
                .map_err(unavailable)?;
                recorded.opened.push(report.id);
            }
        }
        Ok(())
    }

    async fn log(tx: &mut Transaction<'_, Postgres>, entry: &AuditRow) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO fairplay_decisions (action, report_id, player_id, player_name, \
             moderator_id, moderator_name, note, at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
        )
        .bind(entry.action)
        .bind(entry.report_id)
        .bind(entry.player_id)
        .bind(&entry.player_name)
        .bind(entry.moderator.id)
        .bind(&entry.moderator.name)
        .bind(&entry.note)
        .bind(at(entry.at_ms))
        .execute(&mut **tx)
        .await
        .map_err(unavailable)?;
        Ok(())
    }
}

impl FairPlayStore for PgStore {
    async fn record(&self, sides: &[SideRecord], now_ms: i64) -> Result<Recorded, StoreError> {
        let mut tx = self.pool.begin().await.map_err(unavailable)?;
        let mut order: Vec<&SideRecord> = sides.iter().collect();
        order.sort_by_key(|s| (s.player_id, variant_name(s.variant)));
        for side in &order {
            let key = format!("fairplay:{}:{}", side.player_id, variant_name(side.variant));
            sqlx::query("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))")
                .bind(key)
                .execute(&mut *tx)
                .await
                .map_err(unavailable)?;
        }
        let mut recorded = Recorded::default();
        for side in sides {
            if Self::insert_side(&mut tx, side, now_ms).await? {
                recorded.stored += 1;
                self.follow_up(&mut tx, side, now_ms, &mut recorded).await?;
            }
        }
        tx.commit().await.map_err(unavailable)?;
        Ok(recorded)
    }

    async fn reports(
        &self,
        filter: StatusFilter,
        before: Option<(i64, Uuid)>,
        limit: usize,
    ) -> Result<Vec<ReportRow>, StoreError> {
        let status = match filter {
            StatusFilter::All => None,
            StatusFilter::Only(s) => Some(s.as_str()),
        };
        let (before_at, before_id) = match before {
            Some((t, id)) => (Some(at(t)), Some(id)),
            None => (None, None),
        };
        let rows = sqlx::query(concat!(
            "SELECT ",
            report_columns!(),
            " FROM fairplay_reports \
             WHERE ($1::text IS NULL OR status = $1) \
             AND ($2::timestamptz IS NULL OR (created_at, id) < ($2, $3)) \
             ORDER BY created_at DESC, id DESC LIMIT $4"
        ))
        .bind(status)
        .bind(before_at)
        .bind(before_id)
        .bind(i64::try_from(limit).unwrap_or(100))
        .fetch_all(&self.pool)
        .await
        .map_err(unavailable)?;
        rows.iter().map(report_row).collect()
    }

    async fn report(&self, id: Uuid) -> Result<Option<(ReportRow, Vec<SideRecord>)>, StoreError> {
        let row = sqlx::query(concat!(
            "SELECT ",
            report_columns!(),
            " FROM fairplay_reports WHERE id = $1"
        ))
        .bind(id)
        .fetch_optional(&self.pool)
        .await
        .map_err(unavailable)?;
        let Some(row) = row else {
            return Ok(None);
        };
        let report = report_row(&row)?;
        let rows = sqlx::query(concat!(
            "SELECT ",
            game_columns!(),
            " FROM fairplay_games WHERE player_id = $1 \
             AND game_id = ANY($2) ORDER BY ended_at DESC, game_id DESC"
        ))
        .bind(report.player_id)
        .bind(&report.game_ids)
        .fetch_all(&self.pool)
        .await
        .map_err(unavailable)?;
        let games = rows.iter().map(game_row).collect::<Result<Vec<_>, _>>()?;
        Ok(Some((report, games)))
    }

    async fn decide(
        &self,
        id: Uuid,
        action: Action,
        by: &Moderator,
        note: &str,
        now_ms: i64,
    ) -> Result<ReportRow, DecideError> {
        let mut tx = self.pool.begin().await.map_err(unavailable)?;
        let row = sqlx::query(concat!(
            "SELECT ",
            report_columns!(),
            " FROM fairplay_reports WHERE id = $1 FOR UPDATE"
        ))
        .bind(id)
        .fetch_optional(&mut *tx)
        .await
        .map_err(unavailable)?
        .ok_or(DecideError::NotFound)?;
        let mut report = report_row(&row)?;
        if report.status != Status::Open {
            return Err(DecideError::AlreadyDecided);
        }
        report.status = match action {
            Action::Dismiss => Status::Dismissed,
            Action::Mark => Status::Marked,
        };
        report.decided = Some((by.clone(), now_ms));
        report.note = note.to_owned();
        report.updated_at_ms = now_ms;
        sqlx::query(
            "UPDATE fairplay_reports SET status = $2, decided_by_id = $3, decided_by_name = $4, \
             decided_at = $5, updated_at = $5, note = $6 WHERE id = $1",
        )
        .bind(id)
        .bind(report.status.as_str())
        .bind(by.id)
        .bind(&by.name)
        .bind(at(now_ms))
        .bind(note)
        .execute(&mut *tx)
        .await
        .map_err(unavailable)?;
        if action == Action::Mark {
            sqlx::query(
                "INSERT INTO fairplay_marks (player_id, player_name, report_id, marked_by_id, \
                 marked_by_name, marked_at, note) VALUES ($1, $2, $3, $4, $5, $6, $7) \
                 ON CONFLICT (player_id) DO NOTHING",
            )
            .bind(report.player_id)
            .bind(&report.player_name)
            .bind(report.id)
            .bind(by.id)
            .bind(&by.name)
            .bind(at(now_ms))
            .bind(note)
            .execute(&mut *tx)
            .await
            .map_err(unavailable)?;
        }
        Self::log(
            &mut tx,
            &AuditRow {
                seq: 0,
                action: action.as_str(),
                report_id: Some(report.id),
                player_id: report.player_id,
                player_name: report.player_name.clone(),
                moderator: by.clone(),
                note: note.to_owned(),
                at_ms: now_ms,
            },
        )
        .await?;
        tx.commit().await.map_err(unavailable)?;
        Ok(report)
    }

    async fn unmark(
        &self,
        player: Uuid,
        by: &Moderator,
        note: &str,
        now_ms: i64,
    ) -> Result<bool, StoreError> {
        let mut tx = self.pool.begin().await.map_err(unavailable)?;
        let name: Option<String> = sqlx::query_scalar(
            "DELETE FROM fairplay_marks WHERE player_id = $1 RETURNING player_name",
        )
        .bind(player)
        .fetch_optional(&mut *tx)
        .await
        .map_err(unavailable)?;
        let Some(player_name) = name else {
            return Ok(false);
        };
        Self::log(
            &mut tx,
            &AuditRow {
                seq: 0,
                action: "unmark",
                report_id: None,
                player_id: player,
                player_name,
                moderator: by.clone(),
                note: note.to_owned(),
                at_ms: now_ms,
            },
        )
        .await?;
        tx.commit().await.map_err(unavailable)?;
        Ok(true)
    }

    async fn marked_among(&self, players: &[Uuid]) -> Result<Vec<Uuid>, StoreError> {
        sqlx::query_scalar("SELECT player_id FROM fairplay_marks WHERE player_id = ANY($1)")
            .bind(players)
            .fetch_all(&self.pool)
            .await
            .map_err(unavailable)
    }

    async fn audit_log(
        &self,
        before: Option<i64>,
        limit: usize,
    ) -> Result<Vec<AuditRow>, StoreError> {
        let rows = sqlx::query(
            "SELECT id, action, report_id, player_id, player_name, moderator_id, \
             moderator_name, note, at FROM fairplay_decisions \
             WHERE ($1::bigint IS NULL OR id < $1) ORDER BY id DESC LIMIT $2",
        )
        .bind(before)
        .bind(i64::try_from(limit).unwrap_or(100))
        .fetch_all(&self.pool)
        .await
        .map_err(unavailable)?;
        rows.iter()
            .map(|row| {
                let get = |e: sqlx::Error| StoreError::Corrupt(e.to_string());
                let action: String = row.try_get("action").map_err(get)?;
                Ok(AuditRow {
                    seq: row.try_get("id").map_err(get)?,
                    action: match action.as_str() {
                        "dismiss" => "dismiss",
                        "mark" => "mark",
                        "unmark" => "unmark",
                        _ => return Err(corrupt("action")),
                    },
                    report_id: row.try_get("report_id").map_err(get)?,
                    player_id: row.try_get("player_id").map_err(get)?,
                    player_name: row.try_get("player_name").map_err(get)?,
                    moderator: Moderator {
                        id: row.try_get("moderator_id").map_err(get)?,
                        name: row.try_get("moderator_name").map_err(get)?,
                    },
                    note: row.try_get("note").map_err(get)?,
                    at_ms: ms(row.try_get("at").map_err(get)?),
                })
            })
            .collect()
    }

    async fn open_reports(&self) -> Result<u64, StoreError> {
        let n: i64 =
            sqlx::query_scalar("SELECT count(*) FROM fairplay_reports WHERE status = 'open'")
                .fetch_one(&self.pool)
                .await
                .map_err(unavailable)?;
        Ok(u64::try_from(n).unwrap_or(0))
    }
}
