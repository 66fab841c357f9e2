//! Fair play on the gateway: the moderation API (`/api/moderation/…`, for moderators only,
//! proxied to the fair-play service's gRPC API `frontier.fairplay.v1` at `--fairplay-url`)
//! and the marks the gateway consults — a marked player may not seek a rated pool, create or
//! join a rated board, and is left off the leaderboard.
//!
//! **Who may moderate.** A request needs a valid `Authorization: Bearer` token (else 401
//! with the token's code) whose `moderator` claim is set and whose player is still a
//! moderator in the accounts (else 403 `forbidden`): a grant reaches the player at its next
//! sign-in, a revocation at once. The moderator's id and name passed to the fair-play
//! service are the token's. Reports are served nowhere else: a player never sees anyone's
//! score.
//!
//! **When fair play is down.** The marks must not take play down with them: if the service
//! does not answer (error, or not within [`MARK_TIMEOUT`]), a rated seek, board or join is
//! let through and the leaderboard is served unfiltered; each such call is logged and
//! counted in `frontier_gateway_fairplay_errors_total{call}`. Without `--fairplay-url` no
//! one is marked and the moderation API answers 503 `unavailable`.

use std::sync::Arc;
use std::time::Duration;

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use frontier_platform::convert::variant_from_proto;
use frontier_platform::grpc::refusal_code;
use frontier_platform::trace::{Traced, traced};
use frontier_platform::{AuthError, Claims};
use frontier_proto::fairplay::v1 as pb;
use frontier_protocol::ErrorCode;
use serde::Deserialize;
use serde_json::{Value, json};
use uuid::Uuid;

use crate::AppState;
use crate::accounts::Accounts;
use crate::http::{ApiError, parse};
use crate::preferences::bearer;
use crate::ws::auth_code;

/// A client of the fair-play service; each request carries the trace context of the span
/// that makes it.
pub type FairPlayClient = pb::fair_play_client::FairPlayClient<Traced>;

/// How long the gateway waits for a mark before letting the player through.
pub const MARK_TIMEOUT: Duration = Duration::from_millis(500);

/// The longest note a moderator may write (characters), as the fair-play service allows.
pub const MAX_NOTE: usize = 500;

/// Connects lazily to the fair-play service at `url` (e.g. `http://127.0.0.1:50055`).
pub fn connect(url: &str) -> Result<FairPlayClient, String> {
    let endpoint = tonic::transport::Endpoint::from_shared(url.to_owned())
        .map_err(|e| format!("fair-play URL `{url}`: {e}"))?
        .tcp_nodelay(true)
        .connect_timeout(Duration::from_secs(3));
    Ok(FairPlayClient::new(traced(endpoint.connect_lazy())))
}

fn unavailable(message: &'static str) -> ApiError {
    ApiError::new(
        StatusCode::SERVICE_UNAVAILABLE,
        ErrorCode::Unavailable,
        message,
    )
}

fn bad(message: impl Into<String>) -> ApiError {
    ApiError::new(StatusCode::BAD_REQUEST, ErrorCode::BadField, message)
}

fn no_report() -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        ErrorCode::ReportNotFound,
        "no report has that id",
    )
}

/// A refused or failed call to the fair-play service, by the client error code its status
/// carries (never by its text).
fn from_status(status: tonic::Status) -> ApiError {
    match refusal_code(&status) {
        Some(ErrorCode::BadField) => bad(status.message()),
        Some(ErrorCode::ReportNotFound) => no_report(),
        Some(ErrorCode::AlreadyDecided) => ApiError::new(
            StatusCode::CONFLICT,
            ErrorCode::AlreadyDecided,
            "the report was decided already",
        ),
        // Unavailable, or no answer at all (the service is down or unreachable).
        _ => {
            tracing::error!(code = ?status.code(), error = %status.message(), "fair-play service call failed");
            unavailable("fair play is unavailable; try again")
        }
    }
}

/// The moderator a request comes from: a valid token (else 401 with its code) with the
/// moderator claim, whose player is still a moderator (else 403 `forbidden`); and the
/// fair-play client (503 `unavailable` without one).
async fn moderator<A: Accounts>(
    state: &AppState<A>,
    headers: &HeaderMap,
) -> Result<(Claims, FairPlayClient), ApiError> {
    let refused =
        |e: AuthError| ApiError::new(StatusCode::UNAUTHORIZED, auth_code(&e), e.to_string());
    let claims = state
        .jwt
        .verify(bearer(headers).map_err(refused)?)
        .map_err(refused)?;
    let forbidden = || {
        ApiError::new(
            StatusCode::FORBIDDEN,
            ErrorCode::Forbidden,
            "for fair-play moderators only",
        )
    };
    if !claims.moderator || claims.guest {
        return Err(forbidden());
    }
    // Revoked since the token was issued: refused at once.
    match state.accounts.find(claims.sub).await? {
        Some(account) if account.moderator => {}
        _ => return Err(forbidden()),
    }
    let client = state
        .fairplay
        .clone()
        .ok_or_else(|| unavailable("fair play is not configured on this server"))?;
    Ok((claims, client))
}

/// The `limit` query value (its range, 1–100, is the fair-play service's to check).
fn limit(l: Option<&str>) -> Result<u32, ApiError> {
    l.map_or(Ok(0), |s| {
        s.parse::<u32>()
            .map_err(|_| bad("limit is a number from 1 to 100"))
    })
}

fn note(text: Option<String>) -> Result<String, ApiError> {
    let text = text.unwrap_or_default();
    if text.chars().count() > MAX_NOTE {
        return Err(bad(format!("note: at most {MAX_NOTE} characters")));
    }
    Ok(text)
}

fn variant_name(v: i32) -> &'static str {
    variant_from_proto(v).map_or("unknown", |v| v.name())
}

fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

fn round4(x: f64) -> f64 {
    (x * 10_000.0).round() / 10_000.0
}

/// A string that is empty when absent, as JSON `null` then.
fn opt(s: String) -> Value {
    if s.is_empty() {
        Value::Null
    } else {
        Value::String(s)
    }
}

/// A report's JSON (docs/protocol.md, Moderation).
fn report_json(r: pb::Report) -> Value {
    let reasons: Vec<Value> = r
        .reasons
        .into_iter()
        .map(|x| {
            json!({"code": x.code, "value": round4(x.value), "threshold": round4(x.threshold), "detail": x.detail})
        })
        .collect();
    let decided = (r.decided_at_ms != 0).then(|| {
        json!({
            "by": {"id": r.decided_by_id, "name": r.decided_by_name},
            "at": r.decided_at_ms,
            "note": r.note,
        })
    });
    json!({
        "id": r.report_id,
        "player": {"id": r.player_id, "name": r.player_name},
        "variant": variant_name(r.variant),
        "status": r.status,
        "score": round2(r.score),
        "reasons": reasons,
        "games": r.games,
        "rating": round2(r.rating),
        "created_at": r.created_at_ms,
        "updated_at": r.updated_at_ms,
        "decided": decided,
    })
}

fn game_json(g: pb::AnalysedGame) -> Value {
    let moves: Vec<Value> = g
        .moves
        .into_iter()
        .map(|m| {
            json!({
                "ply": m.ply, "played": m.played, "best": m.best, "loss_cp": m.loss_cp,
                "think_ms": m.think_ms, "legal_moves": m.legal_moves, "near_best": m.near_best,
                "skipped": opt(m.skipped), "flagged": m.flagged,
            })
        })
        .collect();
    json!({
        "id": g.game_id,
        "variant": variant_name(g.variant),
        "color": g.color,
        "opponent": g.opponent_name,
        "result": g.result,
        "rating": round2(g.rating),
        "counted_moves": g.counted_moves,
        "top1": round4(g.top1),
        "acpl": round2(g.acpl),
        "near_best": round4(g.near_best),
        "think_cv": round4(g.think_cv),
        "score": round2(g.score),
        "ended_at": g.ended_at_ms,
        "moves": moves,
    })
}

/// A page's JSON: `next` is absent on the last page.
fn page(key: &str, items: Vec<Value>, next: String) -> Value {
    let mut body = json!({ key: items });
    if !next.is_empty() {
        body["next"] = Value::String(next);
    }
    body
}

/// Query parameters of the lists, all optional and checked by hand (a bad value is a clear
/// 400).
#[derive(Debug, Default, Deserialize)]
pub struct ListParams {
    status: Option<String>,
    limit: Option<String>,
    cursor: Option<String>,
}

/// `GET /api/moderation/reports?status=open|dismissed|marked|all&limit=&cursor=`: newest
/// first, the open ones by default.
pub async fn list_reports<A: Accounts>(
    State(state): State<Arc<AppState<A>>>,
    headers: HeaderMap,
    Query(p): Query<ListParams>,
) -> Result<Json<Value>, ApiError> {
    let (_, mut client) = moderator(&state, &headers).await?;
    let status = p.status.unwrap_or_else(|| "open".to_owned());
    if !matches!(status.as_str(), "open" | "dismissed" | "marked" | "all") {
        return Err(bad("status is open, dismissed, marked or all"));
    }
    let request = pb::ListReportsRequest {
        status,
        limit: limit(p.limit.as_deref())?,
        cursor: p.cursor.unwrap_or_default(),
    };
    let answer = client
        .list_reports(request)
        .await
        .map_err(from_status)?
        .into_inner();
    let reports = answer.reports.into_iter().map(report_json).collect();
    Ok(Json(page("reports", reports, answer.next_cursor)))
}

/// `GET /api/moderation/reports/{id}`: the report, its analysed games (newest first) and
/// their moves.
pub async fn get_report<A: Accounts>(
    State(state): State<Arc<AppState<A>>>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let (_, mut client) = moderator(&state, &headers).await?;
    let id = Uuid::parse_str(&id).map_err(|_| no_report())?;
    let detail = client
        .get_report(pb::GetReportRequest {
            report_id: id.to_string(),
        })
        .await
        .map_err(from_status)?
        .into_inner();
    let Some(report) = detail.report else {
        return Err(no_report());
    };
    let games: Vec<Value> = detail.games.into_iter().map(game_json).collect();
    Ok(Json(json!({"report": report_json(report), "games": games})))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Decision {
    action: String,
    #[serde(default)]
    note: Option<String>,
}

/// `POST /api/moderation/reports/{id}/decision` `{"action":"dismiss"|"mark","note":…}`:
/// the decided report.
pub async fn decide<A: Accounts>(
    State(state): State<Arc<AppState<A>>>,
    headers: HeaderMap,
    Path(id): Path<String>,
    body: Bytes,
) -> Result<Json<Value>, ApiError> {
    let (claims, mut client) = moderator(&state, &headers).await?;
    let decision: Decision = parse(&body)?;
    if !matches!(decision.action.as_str(), "dismiss" | "mark") {
        return Err(bad("action is dismiss or mark"));
    }
    let note = note(decision.note)?;
    let id = Uuid::parse_str(&id).map_err(|_| no_report())?;
    let report = client
        .decide(pb::DecideRequest {
            report_id: id.to_string(),
            action: decision.action,
            moderator_id: claims.sub.to_string(),
            moderator_name: claims.name,
            note,
        })
        .await
        .map_err(from_status)?
        .into_inner();
    Ok(Json(report_json(report)))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct UnmarkBody {
    #[serde(default)]
    note: Option<String>,
}

/// `POST /api/moderation/players/{id}/unmark` `{"note":…}`: `{"was_marked":…}`.
pub async fn unmark<A: Accounts>(
    State(state): State<Arc<AppState<A>>>,
    headers: HeaderMap,
    Path(id): Path<String>,
    body: Bytes,
) -> Result<Json<Value>, ApiError> {
    let (claims, mut client) = moderator(&state, &headers).await?;
    let request: UnmarkBody = parse(&body)?;
    let note = note(request.note)?;
    let id = Uuid::parse_str(&id).map_err(|_| {
        ApiError::new(
            StatusCode::NOT_FOUND,
            ErrorCode::PlayerNotFound,
            "no such id",
        )
    })?;
    let answer = client
        .unmark(pb::UnmarkRequest {
            player_id: id.to_string(),
            moderator_id: claims.sub.to_string(),
            moderator_name: claims.name,
            note,
        })
        .await
        .map_err(from_status)?
        .into_inner();
    Ok(Json(json!({"was_marked": answer.was_marked})))
}

/// `GET /api/moderation/log?limit=&cursor=`: every decision, newest first.
pub async fn audit_log<A: Accounts>(
    State(state): State<Arc<AppState<A>>>,
    headers: HeaderMap,
    Query(p): Query<ListParams>,
) -> Result<Json<Value>, ApiError> {
    let (_, mut client) = moderator(&state, &headers).await?;
    if p.status.is_some() {
        return Err(bad("the log has no status filter"));
    }
    let answer = client
        .audit_log(pb::AuditLogRequest {
            limit: limit(p.limit.as_deref())?,
            cursor: p.cursor.unwrap_or_default(),
        })
        .await
        .map_err(from_status)?
        .into_inner();
    let entries = answer
        .entries
        .into_iter()
        .map(|e| {
            json!({
                "action": e.action,
                "report_id": opt(e.report_id),
                "player": {"id": e.player_id, "name": e.player_name},
                "moderator": {"id": e.moderator_id, "name": e.moderator_name},
                "note": e.note,
                "at": e.at_ms,
            })
        })
        .collect();
    Ok(Json(page("entries", entries, answer.next_cursor)))
}

/// A call to fair play that did not answer: logged and counted, and the player let through.
fn fairplay_failed(call: &'static str, error: &dyn std::fmt::Display) {
    tracing::warn!(call, %error, "fair-play service did not answer; letting play through");
    metrics::counter!("frontier_gateway_fairplay_errors_total", "call" => call).increment(1);
}

/// Whether this player is marked (may play casual games only). `false` without a fair-play
/// service, and when it does not answer in time (counted: see the module's docs).
pub async fn is_marked(fairplay: Option<&FairPlayClient>, player_id: &str) -> bool {
    let Some(client) = fairplay else {
        return false;
    };
    let mut client = client.clone();
    let call = client.is_marked(pb::IsMarkedRequest {
        player_id: player_id.to_owned(),
    });
    match tokio::time::timeout(MARK_TIMEOUT, call).await {
        Ok(Ok(answer)) => answer.into_inner().marked,
        Ok(Err(status)) => {
            fairplay_failed("is_marked", &status.message());
            false
        }
        Err(_) => {
            fairplay_failed("is_marked", &"timed out");
            false
        }
    }
}

/// Which of these players are marked (the leaderboard's filter): none without a fair-play
/// service, or when it does not answer in time (counted: see the module's docs).
pub async fn marked_among(
    fairplay: Option<&FairPlayClient>,
    player_ids: Vec<String>,
) -> std::collections::HashSet<String> {
    let Some(client) = fairplay else {
        return Default::default();
    };
    if player_ids.is_empty() {
        return Default::default();
    }
    let mut client = client.clone();
    let call = client.marked_among(pb::MarkedAmongRequest { player_ids });
    match tokio::time::timeout(MARK_TIMEOUT, call).await {
        Ok(Ok(answer)) => answer.into_inner().player_ids.into_iter().collect(),
        Ok(Err(status)) => {
            fairplay_failed("marked_among", &status.message());
            Default::default()
        }
        Err(_) => {
            fairplay_failed("marked_among", &"timed out");
            Default::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_undecided_report_has_no_decision_and_empty_strings_are_null() {
        let r = report_json(pb::Report {
            report_id: "r".into(),
            score: 87.123,
            ..Default::default()
        });
        assert_eq!(r["decided"], Value::Null);
        assert_eq!(r["score"], json!(87.12));
        assert_eq!(opt(String::new()), Value::Null);
        assert_eq!(page("x", vec![], String::new()), json!({"x": []}));
        assert_eq!(page("x", vec![], "c".into()), json!({"x": [], "next": "c"}));
    }

    #[test]
    fn notes_and_limits_are_checked() {
        assert!(note(Some("x".repeat(MAX_NOTE))).is_ok());
        assert!(note(Some("é".repeat(MAX_NOTE + 1))).is_err());
        assert_eq!(note(None).ok(), Some(String::new()));
        assert_eq!(limit(None).ok(), Some(0));
        assert!(limit(Some("ten")).is_err());
    }
}
