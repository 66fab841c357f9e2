//! The dashboard API over finished games and ratings (written by the rating service):
//! players, their games (cursor paging), rating history, the leaderboard, game records and
//! PGN. Only finished games are in Postgres, so a live hidden game's record is never served.

use std::sync::Arc;

use axum::extract::{Path, Query, State};
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use frontier_glicko2::{PERIOD_HOURS, Rating};
use frontier_protocol::ErrorCode;
use frontier_rules::{Game, Layout, Position, Shuffle, Variant};
use serde::Deserialize;
use serde_json::{Value, json};
use sqlx::PgPool;
use time::OffsetDateTime;
use uuid::Uuid;

use crate::AppState;
use crate::accounts::Accounts;
use crate::http::ApiError;

const VARIANTS: [&str; 3] = ["standard", "hidden", "atomic"];

fn pool<A>(state: &AppState<A>) -> Result<&PgPool, ApiError> {
    state.records.as_ref().ok_or_else(|| {
        ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            ErrorCode::Unavailable,
            "records are unavailable",
        )
    })
}

fn bad(message: impl Into<String>) -> ApiError {
    ApiError::new(StatusCode::BAD_REQUEST, ErrorCode::BadField, message)
}

fn db(e: sqlx::Error) -> ApiError {
    tracing::error!(error = %e, "records query failed");
    ApiError::new(
        StatusCode::SERVICE_UNAVAILABLE,
        ErrorCode::Unavailable,
        "records are unavailable; try again",
    )
}

fn uuid(s: &str, what: ErrorCode) -> Result<Uuid, ApiError> {
    Uuid::parse_str(s).map_err(|_| ApiError::new(StatusCode::NOT_FOUND, what, "no such id"))
}

fn variant(v: Option<&str>, required: bool) -> Result<Option<&'static str>, ApiError> {
    match v {
        None if required => Err(bad("variant is required: standard, hidden or atomic")),
        None => Ok(None),
        Some(v) => VARIANTS
            .into_iter()
            .find(|x| *x == v)
            .map(Some)
            .ok_or_else(|| bad("variant is standard, hidden or atomic")),
    }
}

fn limit(l: Option<&str>, default: i64) -> Result<i64, ApiError> {
    match l {
        None => Ok(default),
        Some(s) => s
            .parse::<i64>()
            .ok()
            .filter(|n| (1..=100).contains(n))
            .ok_or_else(|| bad("limit is a number from 1 to 100")),
    }
}

fn ms(t: OffsetDateTime) -> i64 {
    (t.unix_timestamp_nanos() / 1_000_000) as i64
}

/// Query parameters, all optional and checked by hand (so a bad value is a clear 400).
#[derive(Debug, Default, Deserialize)]
pub struct Params {
    variant: Option<String>,
    before: Option<String>,
    limit: Option<String>,
}

/// `GET /api/players/{id}`.
pub async fn player<A: Accounts>(
    State(state): State<Arc<AppState<A>>>,
    Path(id): Path<String>,
) -> Result<impl IntoResponse, ApiError> {
    let pool = pool(&state)?;
    let id = uuid(&id, ErrorCode::PlayerNotFound)?;
    let account: Option<(String, bool)> =
        sqlx::query_as("SELECT username, guest FROM players WHERE id = $1")
            .bind(id)
            .fetch_optional(pool)
            .await
            .map_err(db)?;
    let Some((name, guest)) = account else {
        return Err(ApiError::new(
            StatusCode::NOT_FOUND,
            ErrorCode::PlayerNotFound,
            "no such player",
        ));
    };
    let ratings: Vec<(String, f64, f64, f64, Option<OffsetDateTime>)> = sqlx::query_as(
        "SELECT variant, rating, rd, volatility, last_rated_at FROM ratings WHERE player_id = $1",
    )
    .bind(id)
    .fetch_all(pool)
    .await
    .map_err(db)?;
    let counts: Vec<(String, i64, i64, i64, i64)> = sqlx::query_as(
        "SELECT variant,
            count(*) FILTER (WHERE result <> 'aborted'),
            count(*) FILTER (WHERE (result = 'white' AND white_id = $1) OR (result = 'black' AND black_id = $1)),
            count(*) FILTER (WHERE result = 'draw'),
            count(*) FILTER (WHERE (result = 'white' AND black_id = $1) OR (result = 'black' AND white_id = $1))
         FROM games WHERE white_id = $1 OR black_id = $1 GROUP BY variant",
    )
    .bind(id)
    .fetch_all(pool)
    .await
    .map_err(db)?;
    let now = OffsetDateTime::now_utc();
    let mut variants = serde_json::Map::new();
    for v in VARIANTS {
        let r = ratings.iter().find(|r| r.0 == v);
        // RD as of now: it grows with the time since the last rated game.
        let rating = match r {
            Some((_, rating, rd, volatility, last)) => {
                let idle_hours = last.map_or(0.0, |l| (now - l).as_seconds_f64().max(0.0) / 3600.0);
                Rating {
                    rating: *rating,
                    rd: *rd,
                    volatility: *volatility,
                }
                .after_inactivity(idle_hours / PERIOD_HOURS)
            }
            None => frontier_glicko2::INITIAL,
        };
        let c = counts.iter().find(|c| c.0 == v);
        variants.insert(
            v.to_owned(),
            json!({
                "rating": (rating.rating * 100.0).round() / 100.0,
                "rd": (rating.rd * 100.0).round() / 100.0,
                "provisional": rating.is_provisional(),
                "games": c.map_or(0, |c| c.1),
                "wins": c.map_or(0, |c| c.2),
                "draws": c.map_or(0, |c| c.3),
                "losses": c.map_or(0, |c| c.4),
            }),
        );
    }
    Ok(axum::Json(
        json!({"id": id, "name": name, "guest": guest, "ratings": variants}),
    ))
}

fn parse_cursor(s: &str) -> Result<(OffsetDateTime, Uuid), ApiError> {
    let (t, id) = s
        .split_once('_')
        .ok_or_else(|| bad("before is a cursor from a previous page"))?;
    let t: i64 = t
        .parse()
        .map_err(|_| bad("before is a cursor from a previous page"))?;
    let id = Uuid::parse_str(id).map_err(|_| bad("before is a cursor from a previous page"))?;
    let at = OffsetDateTime::from_unix_timestamp_nanos(i128::from(t) * 1_000_000)
        .map_err(|_| bad("before is a cursor from a previous page"))?;
    Ok((at, id))
}

type GameRow = (
    Uuid,
    String,
    bool,
    Uuid,
    String,
    Uuid,
    String,
    String,
    String,
    OffsetDateTime,
);

/// `GET /api/players/{id}/games?variant=&before=&limit=`: newest first.
pub async fn player_games<A: Accounts>(
    State(state): State<Arc<AppState<A>>>,
    Path(id): Path<String>,
    Query(p): Query<Params>,
) -> Result<impl IntoResponse, ApiError> {
    let pool = pool(&state)?;
    let id = uuid(&id, ErrorCode::PlayerNotFound)?;
    let variant = variant(p.variant.as_deref(), false)?;
    let limit = limit(p.limit.as_deref(), 20)?;
    let (before_at, before_id) = match p.before.as_deref() {
        Some(c) => parse_cursor(c)?,
        None => (
            OffsetDateTime::now_utc() + time::Duration::days(3650),
            Uuid::max(),
        ),
    };
    // One row more than the page: whether it exists says whether there is a next page.
    let mut rows: Vec<GameRow> = sqlx::query_as(
        "SELECT id, variant, rated, white_id, white_name, black_id, black_name, result, outcome, ended_at
         FROM games
         WHERE (white_id = $1 OR black_id = $1)
           AND ($2::text IS NULL OR variant = $2)
           AND (ended_at, id) < ($3, $4)
         ORDER BY ended_at DESC, id DESC
         LIMIT $5",
    )
    .bind(id)
    .bind(variant)
    .bind(before_at)
    .bind(before_id)
    .bind(limit + 1)
    .fetch_all(pool)
    .await
    .map_err(db)?;
    let more = rows.len() as i64 > limit;
    rows.truncate(usize::try_from(limit).unwrap_or(0));
    let next = more
        .then(|| rows.last().map(|r| format!("{}_{}", ms(r.9), r.0)))
        .flatten();
    let games: Vec<Value> = rows
        .iter()
        .map(|r| {
            json!({
                "id": r.0, "variant": r.1, "rated": r.2,
                "white": {"id": r.3, "name": r.4}, "black": {"id": r.5, "name": r.6},
                "result": r.7, "outcome": r.8, "ended_at": ms(r.9),
            })
        })
        .collect();
    // `next` is absent on the last page.
    let mut page = json!({ "games": games });
    if let Some(next) = next {
        page["next"] = Value::String(next);
    }
    Ok(axum::Json(page))
}

/// `GET /api/players/{id}/rating-history?variant=`.
pub async fn rating_history<A: Accounts>(
    State(state): State<Arc<AppState<A>>>,
    Path(id): Path<String>,
    Query(p): Query<Params>,
) -> Result<impl IntoResponse, ApiError> {
    let pool = pool(&state)?;
    let id = uuid(&id, ErrorCode::PlayerNotFound)?;
    let variant = variant(p.variant.as_deref(), true)?;
    let rows: Vec<(Uuid, f64, f64, OffsetDateTime)> = sqlx::query_as(
        "SELECT game_id, rating, rd, at FROM rating_history WHERE player_id = $1 AND variant = $2 ORDER BY at, game_id",
    )
    .bind(id)
    .bind(variant)
    .fetch_all(pool)
    .await
    .map_err(db)?;
    let points: Vec<Value> = rows
        .iter()
        .map(|r| json!({"game_id": r.0, "rating": r.1, "rd": r.2, "provisional": r.2 > frontier_glicko2::PROVISIONAL_RD, "at": ms(r.3)}))
        .collect();
    Ok(axum::Json(json!({"variant": variant, "points": points})))
}

/// `GET /api/leaderboard?variant=&limit=`: registered, non-provisional players.
pub async fn leaderboard<A: Accounts>(
    State(state): State<Arc<AppState<A>>>,
    Query(p): Query<Params>,
) -> Result<impl IntoResponse, ApiError> {
    let pool = pool(&state)?;
    let variant = variant(p.variant.as_deref(), true)?;
    let limit = limit(p.limit.as_deref(), 50)?;
    let rows: Vec<(Uuid, String, f64, f64, i32)> = sqlx::query_as(
        "SELECT r.player_id, p.username, r.rating, r.rd, r.rated_games
         FROM ratings r JOIN players p ON p.id = r.player_id
         WHERE r.variant = $1 AND NOT p.guest AND r.rd <= $2
         ORDER BY r.rating DESC, r.player_id LIMIT $3",
    )
    .bind(variant)
    .bind(frontier_glicko2::PROVISIONAL_RD)
    .bind(limit)
    .fetch_all(pool)
    .await
    .map_err(db)?;
    let players: Vec<Value> = rows
        .iter()
        .map(|r| json!({"id": r.0, "name": r.1, "rating": r.2, "rd": r.3, "provisional": false, "rated_games": r.4}))
        .collect();
    Ok(axum::Json(json!({"variant": variant, "players": players})))
}

async fn load_record(pool: &PgPool, id: &str) -> Result<Value, ApiError> {
    let id = uuid(id, ErrorCode::GameNotFound)?;
    let row = sqlx::query(
        "SELECT id, variant, rated, initial_seconds, increment_seconds, white_id, white_name, white_guest, white_bot,
            black_id, black_name, black_guest, black_bot, result, outcome, moves, created_at, started_at, ended_at,
            start_fen, final_fen, initial_layout, salt, commitment
         FROM games WHERE id = $1",
    )
    .bind(id)
    .fetch_optional(pool)
    .await
    .map_err(db)?
    .ok_or_else(|| ApiError::new(StatusCode::NOT_FOUND, ErrorCode::GameNotFound, "no finished game has that id"))?;
    use sqlx::Row as _;
    let get = |e: sqlx::Error| db(e);
    let initial: Option<i32> = row.try_get("initial_seconds").map_err(get)?;
    let increment: Option<i32> = row.try_get("increment_seconds").map_err(get)?;
    let moves: sqlx::types::Json<Value> = row.try_get("moves").map_err(get)?;
    Ok(json!({
        "id": row.try_get::<Uuid, _>("id").map_err(get)?,
        "variant": row.try_get::<String, _>("variant").map_err(get)?,
        "rated": row.try_get::<bool, _>("rated").map_err(get)?,
        "clock": initial.map(|i| json!({"minutes": i / 60, "increment": increment.unwrap_or(0)})),
        "white": {
            "id": row.try_get::<Uuid, _>("white_id").map_err(get)?,
            "name": row.try_get::<String, _>("white_name").map_err(get)?,
            "guest": row.try_get::<bool, _>("white_guest").map_err(get)?,
            "bot": row.try_get::<bool, _>("white_bot").map_err(get)?,
        },
        "black": {
            "id": row.try_get::<Uuid, _>("black_id").map_err(get)?,
            "name": row.try_get::<String, _>("black_name").map_err(get)?,
            "guest": row.try_get::<bool, _>("black_guest").map_err(get)?,
            "bot": row.try_get::<bool, _>("black_bot").map_err(get)?,
        },
        "result": row.try_get::<String, _>("result").map_err(get)?,
        "outcome": row.try_get::<String, _>("outcome").map_err(get)?,
        "moves": moves.0,
        "created_at": ms(row.try_get("created_at").map_err(get)?),
        "started_at": ms(row.try_get("started_at").map_err(get)?),
        "ended_at": ms(row.try_get("ended_at").map_err(get)?),
        "start_fen": row.try_get::<String, _>("start_fen").map_err(get)?,
        "final_fen": row.try_get::<String, _>("final_fen").map_err(get)?,
        "initial_layout": row.try_get::<String, _>("initial_layout").map_err(get)?,
        "salt": row.try_get::<String, _>("salt").map_err(get)?,
        "commitment": row.try_get::<String, _>("commitment").map_err(get)?,
    }))
}

/// `GET /api/games/{id}`: a finished game's record.
pub async fn game<A: Accounts>(
    State(state): State<Arc<AppState<A>>>,
    Path(id): Path<String>,
) -> Result<impl IntoResponse, ApiError> {
    let pool = pool(&state)?;
    Ok(axum::Json(load_record(pool, &id).await?))
}

/// `GET /api/games/{id}/pgn`.
pub async fn pgn<A: Accounts>(
    State(state): State<Arc<AppState<A>>>,
    Path(id): Path<String>,
) -> Result<impl IntoResponse, ApiError> {
    let pool = pool(&state)?;
    let record = load_record(pool, &id).await?;
    let text = render_pgn(&record).map_err(|e| {
        tracing::error!(error = %e, "a stored game does not replay");
        ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            ErrorCode::Internal,
            "could not render the game",
        )
    })?;
    Ok((
        [(
            header::CONTENT_TYPE,
            "application/x-chess-pgn; charset=utf-8",
        )],
        text,
    ))
}

fn tag(out: &mut String, name: &str, value: &str) {
    let escaped = value.replace('\\', "\\\\").replace('"', "\\\"");
    out.push_str(&format!("[{name} \"{escaped}\"]\n"));
}

/// Renders a record as PGN: the seven-tag roster, `Variant`, `TimeControl`, the start FEN
/// when it is not the usual one, and for hidden chess `Layout`, `Salt` and `Commitment`;
/// moves in SAN (a hidden piece as the piece it looked like) with comments for reveals and
/// captured identities.
pub fn render_pgn(r: &Value) -> Result<String, String> {
    let variant: Variant = r["variant"]
        .as_str()
        .unwrap_or_default()
        .parse()
        .map_err(|e| format!("{e}"))?;
    let start_fen = r["start_fen"].as_str().unwrap_or_default();
    let mut game = match variant {
        Variant::Hidden => {
            let layout = Layout::from_canonical(r["initial_layout"].as_str().unwrap_or_default())
                .map_err(|e| e.to_string())?;
            let mut salt = [0u8; 32];
            hex::decode_to_slice(r["salt"].as_str().unwrap_or_default(), &mut salt)
                .map_err(|e| e.to_string())?;
            Game::new_hidden(Shuffle::new(layout, salt))
        }
        v => Game::from_position(Position::from_fen(v, start_fen).map_err(|e| e.to_string())?),
    };
    let result = match r["result"].as_str() {
        Some("white") => "1-0",
        Some("black") => "0-1",
        Some("draw") => "1/2-1/2",
        _ => "*",
    };
    let ended = OffsetDateTime::from_unix_timestamp_nanos(
        i128::from(r["ended_at"].as_i64().unwrap_or(0)) * 1_000_000,
    )
    .unwrap_or(OffsetDateTime::UNIX_EPOCH);
    let mut out = String::new();
    tag(
        &mut out,
        "Event",
        if r["rated"] == true {
            "Rated game"
        } else {
            "Casual game"
        },
    );
    tag(&mut out, "Site", "Frontier");
    tag(
        &mut out,
        "Date",
        &format!(
            "{:04}.{:02}.{:02}",
            ended.year(),
            u8::from(ended.month()),
            ended.day()
        ),
    );
    tag(&mut out, "Round", "-");
    tag(
        &mut out,
        "White",
        r["white"]["name"].as_str().unwrap_or("?"),
    );
    tag(
        &mut out,
        "Black",
        r["black"]["name"].as_str().unwrap_or("?"),
    );
    tag(&mut out, "Result", result);
    tag(&mut out, "GameId", r["id"].as_str().unwrap_or_default());
    tag(
        &mut out,
        "Variant",
        match variant {
            Variant::Standard => "Standard",
            Variant::Hidden => "Hidden",
            Variant::Atomic => "Atomic",
        },
    );
    let tc = match r["clock"].as_object() {
        Some(c) => format!(
            "{}+{}",
            c["minutes"].as_i64().unwrap_or(0) * 60,
            c["increment"].as_i64().unwrap_or(0)
        ),
        None => "-".to_owned(),
    };
    tag(&mut out, "TimeControl", &tc);
    tag(
        &mut out,
        "Termination",
        r["outcome"].as_str().unwrap_or_default(),
    );
    if variant != Variant::Hidden && start_fen != Position::new(variant).fen() {
        tag(&mut out, "SetUp", "1");
        tag(&mut out, "FEN", start_fen);
    }
    if variant == Variant::Hidden {
        tag(
            &mut out,
            "Layout",
            r["initial_layout"].as_str().unwrap_or_default(),
        );
        tag(&mut out, "Salt", r["salt"].as_str().unwrap_or_default());
        tag(
            &mut out,
            "Commitment",
            r["commitment"].as_str().unwrap_or_default(),
        );
    }
    out.push('\n');
    let mut movetext = Vec::new();
    for (i, m) in r["moves"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .enumerate()
    {
        let uci = m["uci"].as_str().unwrap_or_default();
        let before = *game.position();
        let mv = before
            .parse_uci(uci)
            .map_err(|e| format!("move {}: {e}", i + 1))?;
        let san = frontier_rules::san(&before, &mv);
        game.play(&mv).map_err(|e| format!("move {}: {e}", i + 1))?;
        let suffix = frontier_rules::san_suffix(game.position());
        if before.turn() == frontier_rules::Color::White {
            movetext.push(format!("{}.", before.fullmoves()));
        } else if i == 0 {
            movetext.push(format!("{}...", before.fullmoves()));
        }
        movetext.push(format!("{san}{suffix}"));
        let mut notes = Vec::new();
        if let Some(role) = m["reveal_role"].as_str().filter(|s| !s.is_empty()) {
            notes.push(format!(
                "reveals {role} on {}",
                m["reveal_square"].as_str().unwrap_or("?")
            ));
        }
        if let Some(id) = m["captured_identity"].as_str().filter(|s| !s.is_empty()) {
            notes.push(format!("captured a hidden {id}"));
        }
        if !notes.is_empty() {
            movetext.push(format!("{{{}}}", notes.join("; ")));
        }
    }
    movetext.push(result.to_owned());
    // Lines of at most 80 characters.
    let mut line = String::new();
    for token in movetext {
        if !line.is_empty() && line.len() + 1 + token.len() > 80 {
            out.push_str(&line);
            out.push('\n');
            line.clear();
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(&token);
    }
    out.push_str(&line);
    out.push('\n');
    Ok(out)
}
