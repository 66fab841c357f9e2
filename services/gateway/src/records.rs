//! The dashboard API (players, their games with cursor paging, rating history, the
//! leaderboard, game records and PGN) over the rating service's read API: the rating
//! service owns finished games and ratings, the gateway owns accounts. A player's name and
//! guest flag come from the gateway's own accounts; everything else from the rating
//! service, turned into the JSON of `docs/protocol.md` here. Only finished games are
//! recorded, so a live hidden game's record is never served.

use std::sync::Arc;

use axum::extract::{Path, Query, State};
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use frontier_platform::PlayerId;
use frontier_platform::convert::{variant_from_name, variant_from_proto, variant_to_proto};
use frontier_platform::grpc::refusal_code;
use frontier_platform::trace::{Traced, traced};
use frontier_proto::games::v1 as games;
use frontier_proto::rating::v1 as pb;
use frontier_protocol::ErrorCode;
use serde::Deserialize;
use serde_json::{Value, json};
use uuid::Uuid;

use crate::AppState;
use crate::accounts::Accounts;
use crate::http::ApiError;

/// A client of the rating service's read API; each request carries the trace context of
/// the span that makes it.
pub type RatingClient = pb::ratings_client::RatingsClient<Traced>;

/// Connects lazily to the rating service's read API at `url`.
pub fn connect(url: &str) -> Result<RatingClient, String> {
    frontier_proto::rating_channel(url).map(|channel| RatingClient::new(traced(channel)))
}

fn client<A>(state: &AppState<A>) -> Result<RatingClient, ApiError> {
    state.ratings.clone().ok_or_else(|| {
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

/// A failed call to the rating service, by the client error code its status carries.
fn from_status(status: tonic::Status) -> ApiError {
    match refusal_code(&status) {
        Some(ErrorCode::BadField) => bad(status.message()),
        Some(ErrorCode::PlayerNotFound) => ApiError::new(
            StatusCode::NOT_FOUND,
            ErrorCode::PlayerNotFound,
            "no such player",
        ),
        Some(ErrorCode::GameNotFound) => ApiError::new(
            StatusCode::NOT_FOUND,
            ErrorCode::GameNotFound,
            "no finished game has that id",
        ),
        Some(ErrorCode::Internal) => ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            ErrorCode::Internal,
            "could not render the game",
        ),
        // Unavailable, or no answer at all (the service is down or unreachable).
        _ => {
            tracing::error!(code = ?status.code(), error = %status.message(), "rating service call failed");
            ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                ErrorCode::Unavailable,
                "records are unavailable; try again",
            )
        }
    }
}

fn player_id(s: &str) -> Result<Uuid, ApiError> {
    Uuid::parse_str(s).map_err(|_| {
        ApiError::new(
            StatusCode::NOT_FOUND,
            ErrorCode::PlayerNotFound,
            "no such id",
        )
    })
}

fn variant_name(v: i32) -> &'static str {
    variant_from_proto(v).map_or("unknown", |v| v.name())
}

/// The `variant` query value (absent: unspecified; whether it is required is the rating
/// service's to say).
fn variant(v: Option<&str>) -> Result<games::Variant, ApiError> {
    match v {
        None => Ok(games::Variant::Unspecified),
        Some(name) => variant_from_name(name)
            .map(variant_to_proto)
            .ok_or_else(|| bad("variant is standard, hidden or atomic")),
    }
}

/// The `limit` query value as a number (its range is the rating service's to check).
fn limit(l: Option<&str>) -> Result<Option<u32>, ApiError> {
    l.map(|s| {
        s.parse::<u32>()
            .map_err(|_| bad("limit is a number from 1 to 100"))
    })
    .transpose()
}

fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
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
    let id = player_id(&id)?;
    // A computer player has no account and no rating (its games are never rated): its
    // profile says what it is.
    if let Some(level) = PlayerId(id).bot_level() {
        return Ok(axum::Json(json!({
            "id": id,
            "name": level.bot_name(),
            "guest": false,
            "bot": true,
            "level": level.name(),
            "ratings": {},
        })));
    }
    let mut ratings = client(&state)?;
    let request = pb::GetPlayerRequest {
        player_id: id.to_string(),
    };
    let (account, summary) = tokio::join!(
        state.accounts.find(PlayerId(id)),
        ratings.get_player(request)
    );
    let Some(account) = account? else {
        return Err(ApiError::new(
            StatusCode::NOT_FOUND,
            ErrorCode::PlayerNotFound,
            "no such player",
        ));
    };
    let summary = summary.map_err(from_status)?.into_inner();
    let mut variants = serde_json::Map::new();
    for r in summary.ratings {
        variants.insert(
            variant_name(r.variant).to_owned(),
            json!({
                "rating": round2(r.rating),
                "rd": round2(r.rd),
                "provisional": r.provisional,
                "games": r.games,
                "wins": r.wins,
                "draws": r.draws,
                "losses": r.losses,
            }),
        );
    }
    Ok(axum::Json(
        json!({"id": id, "name": account.name, "guest": account.guest, "bot": false, "ratings": variants}),
    ))
}

fn side(p: Option<games::Player>) -> Value {
    let p = p.unwrap_or_default();
    json!({"id": p.id, "name": p.name})
}

/// `GET /api/players/{id}/games?variant=&before=&limit=`: newest first.
pub async fn player_games<A: Accounts>(
    State(state): State<Arc<AppState<A>>>,
    Path(id): Path<String>,
    Query(p): Query<Params>,
) -> Result<impl IntoResponse, ApiError> {
    let mut ratings = client(&state)?;
    let id = player_id(&id)?;
    let request = pb::ListPlayerGamesRequest {
        player_id: id.to_string(),
        variant: variant(p.variant.as_deref())?.into(),
        before: p.before,
        limit: limit(p.limit.as_deref())?,
    };
    let page = ratings
        .list_player_games(request)
        .await
        .map_err(from_status)?
        .into_inner();
    let games: Vec<Value> = page
        .games
        .into_iter()
        .map(|g| {
            json!({
                "id": g.game_id, "variant": variant_name(g.variant), "rated": g.rated,
                "white": side(g.white), "black": side(g.black),
                "result": g.result, "outcome": g.outcome, "ended_at": g.ended_at_ms,
            })
        })
        .collect();
    // `next` is absent on the last page.
    let mut body = json!({ "games": games });
    if let Some(next) = page.next {
        body["next"] = Value::String(next);
    }
    Ok(axum::Json(body))
}

/// `GET /api/players/{id}/rating-history?variant=`.
pub async fn rating_history<A: Accounts>(
    State(state): State<Arc<AppState<A>>>,
    Path(id): Path<String>,
    Query(p): Query<Params>,
) -> Result<impl IntoResponse, ApiError> {
    let mut ratings = client(&state)?;
    let id = player_id(&id)?;
    let variant = variant(p.variant.as_deref())?;
    let request = pb::RatingHistoryRequest {
        player_id: id.to_string(),
        variant: variant.into(),
    };
    let history = ratings
        .rating_history(request)
        .await
        .map_err(from_status)?
        .into_inner();
    let points: Vec<Value> = history
        .points
        .into_iter()
        .map(|r| json!({"game_id": r.game_id, "rating": r.rating, "rd": r.rd, "provisional": r.provisional, "at": r.at_ms}))
        .collect();
    Ok(axum::Json(
        json!({"variant": variant_name(variant.into()), "points": points}),
    ))
}

/// `GET /api/leaderboard?variant=&limit=`: registered, non-provisional players, without
/// those fair play marked (so a page may hold fewer than `limit`).
pub async fn leaderboard<A: Accounts>(
    State(state): State<Arc<AppState<A>>>,
    Query(p): Query<Params>,
) -> Result<impl IntoResponse, ApiError> {
    let mut ratings = client(&state)?;
    let variant = variant(p.variant.as_deref())?;
    let request = pb::LeaderboardRequest {
        variant: variant.into(),
        limit: limit(p.limit.as_deref())?,
    };
    let board = ratings
        .leaderboard(request)
        .await
        .map_err(from_status)?
        .into_inner();
    // Marked players are left off (fair play); if fair play does not answer, the page is
    // served unfiltered rather than not at all.
    let ids = board.players.iter().map(|r| r.player_id.clone()).collect();
    let marked = crate::moderation::marked_among(state.fairplay.as_ref(), ids).await;
    let players: Vec<Value> = board
        .players
        .into_iter()
        .filter(|r| !marked.contains(&r.player_id))
        .map(|r| json!({"id": r.player_id, "name": r.name, "rating": r.rating, "rd": r.rd, "provisional": false, "rated_games": r.rated_games}))
        .collect();
    Ok(axum::Json(
        json!({"variant": variant_name(variant.into()), "players": players}),
    ))
}

fn player_json(p: Option<games::Player>) -> Value {
    let p = p.unwrap_or_default();
    json!({"id": p.id, "name": p.name, "guest": p.guest, "bot": p.bot})
}

/// The record's JSON (`docs/protocol.md`, Dashboard).
fn record_json(g: games::FinishedGame) -> Value {
    let moves: Vec<Value> = g
        .moves
        .iter()
        .map(|m| {
            json!({
                "ply": m.ply, "uci": m.uci,
                "reveal_square": m.reveal_square, "reveal_role": m.reveal_role,
                "captured_square": m.captured_square, "captured_role": m.captured_role,
                "captured_was_hidden": m.captured_was_hidden,
                "captured_identity": m.captured_identity, "at_ms": m.at_ms,
                "clock_ms": m.clock_ms,
            })
        })
        .collect();
    json!({
        "id": g.game_id,
        "variant": variant_name(g.variant),
        "rated": g.rated,
        "clock": g.time_control.map(|t| json!({"minutes": t.initial_seconds / 60, "increment": t.increment_seconds})),
        "white": player_json(g.white),
        "black": player_json(g.black),
        "result": g.result,
        "outcome": g.outcome,
        "moves": moves,
        "created_at": g.created_at_ms,
        "started_at": g.started_at_ms,
        "ended_at": g.ended_at_ms,
        "start_fen": g.start_fen,
        "final_fen": g.final_fen,
        "initial_layout": g.initial_layout,
        "salt": g.salt,
        "commitment": g.commitment,
    })
}

/// `GET /api/games/{id}`: a finished game's record.
pub async fn game<A: Accounts>(
    State(state): State<Arc<AppState<A>>>,
    Path(id): Path<String>,
) -> Result<impl IntoResponse, ApiError> {
    let mut ratings = client(&state)?;
    let record = ratings
        .get_game(pb::GetGameRequest { game_id: id })
        .await
        .map_err(from_status)?
        .into_inner();
    Ok(axum::Json(record_json(record)))
}

/// `GET /api/games/{id}/pgn`.
pub async fn pgn<A: Accounts>(
    State(state): State<Arc<AppState<A>>>,
    Path(id): Path<String>,
) -> Result<impl IntoResponse, ApiError> {
    let mut ratings = client(&state)?;
    let pgn = ratings
        .get_pgn(pb::GetGameRequest { game_id: id })
        .await
        .map_err(from_status)?
        .into_inner();
    Ok((
        [(
            header::CONTENT_TYPE,
            "application/x-chess-pgn; charset=utf-8",
        )],
        pgn.text,
    ))
}
