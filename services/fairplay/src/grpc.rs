//! The gRPC edge (`frontier.fairplay.v1.FairPlay`), generic over the store. Errors become a
//! `tonic::Status` here and nowhere else: a refusal carrying its client error code as a
//! typed detail. Internal causes are logged, never sent.

use std::sync::Arc;

use frontier_platform::convert::variant_to_proto;
use frontier_platform::grpc::refusal;
use frontier_platform::time::Clock;
use frontier_proto::fairplay::v1 as pb;
use frontier_proto::fairplay::v1::fair_play_server::FairPlay;
use frontier_protocol::ErrorCode;
use tonic::{Request, Response, Status};
use uuid::Uuid;

use crate::model::{
    Action, AuditRow, Moderator, ReportRow, SideRecord, Status as ReportStatus, StatusFilter,
};
use crate::store::{DecideError, FairPlayStore, StoreError};

/// Longest moderator note.
pub const MAX_NOTE: usize = 500;
/// Most ids one `MarkedAmong` takes.
pub const MAX_IDS: usize = 500;

/// The tonic service over a store.
pub struct FairPlayService<S> {
    store: S,
    clock: Arc<dyn Clock>,
}

impl<S: FairPlayStore> FairPlayService<S> {
    /// Serves `store`, with `clock` telling the time of decisions.
    pub fn new(store: S, clock: Arc<dyn Clock>) -> FairPlayService<S> {
        FairPlayService { store, clock }
    }

    /// The tonic server of this service.
    pub fn into_server(self) -> pb::fair_play_server::FairPlayServer<FairPlayService<S>> {
        pb::fair_play_server::FairPlayServer::new(self)
    }
}

fn bad(message: impl Into<String>) -> Status {
    refusal(ErrorCode::BadField, message)
}

fn store_status(e: StoreError) -> Status {
    match e {
        StoreError::Unavailable(cause) => {
            tracing::error!(error = %cause, "fair-play storage failed");
            refusal(
                ErrorCode::Unavailable,
                "fair play is unavailable; try again",
            )
        }
        StoreError::Corrupt(cause) => {
            tracing::error!(error = %cause, "a stored fair-play row does not read back");
            refusal(ErrorCode::Internal, "could not read the stored report")
        }
    }
}

fn uuid(value: &str, field: &str) -> Result<Uuid, Status> {
    Uuid::parse_str(value).map_err(|_| bad(format!("`{field}` is not a UUID")))
}

fn limit(value: u32) -> Result<usize, Status> {
    match value {
        0 => Ok(20),
        1..=100 => Ok(value as usize),
        _ => Err(bad("`limit` is 1 to 100")),
    }
}

fn note(value: &str) -> Result<&str, Status> {
    if value.chars().count() > MAX_NOTE {
        return Err(bad(format!("`note` is at most {MAX_NOTE} characters")));
    }
    Ok(value.trim())
}

fn moderator(id: &str, name: &str) -> Result<Moderator, Status> {
    let id = uuid(id, "moderator_id")?;
    if name.is_empty() || name.len() > 64 {
        return Err(bad("`moderator_name` is 1 to 64 bytes"));
    }
    Ok(Moderator {
        id,
        name: name.to_owned(),
    })
}

/// A report's cursor: `<created ms>:<id>`.
fn report_cursor(row: &ReportRow) -> String {
    format!("{}:{}", row.created_at_ms, row.id)
}

fn parse_report_cursor(value: &str) -> Result<Option<(i64, Uuid)>, Status> {
    if value.is_empty() {
        return Ok(None);
    }
    let (at, id) = value.split_once(':').ok_or_else(|| bad("bad `cursor`"))?;
    let at = at.parse().map_err(|_| bad("bad `cursor`"))?;
    let id = Uuid::parse_str(id).map_err(|_| bad("bad `cursor`"))?;
    Ok(Some((at, id)))
}

fn report(row: &ReportRow) -> pb::Report {
    let (by_id, by_name, at) = match &row.decided {
        Some((m, at)) => (m.id.to_string(), m.name.clone(), *at),
        None => (String::new(), String::new(), 0),
    };
    pb::Report {
        report_id: row.id.to_string(),
        player_id: row.player_id.to_string(),
        player_name: row.player_name.clone(),
        variant: variant_to_proto(row.variant).into(),
        status: row.status.as_str().to_owned(),
        score: row.score,
        reasons: row
            .reasons
            .iter()
            .map(|r| pb::Reason {
                code: r.code.clone(),
                value: r.value,
                threshold: r.threshold,
                detail: r.detail.clone(),
            })
            .collect(),
        games: u32::try_from(row.game_ids.len()).unwrap_or(u32::MAX),
        rating: row.rating,
        created_at_ms: row.created_at_ms,
        updated_at_ms: row.updated_at_ms,
        decided_by_id: by_id,
        decided_by_name: by_name,
        decided_at_ms: at,
        note: row.note.clone(),
    }
}

fn game(side: &SideRecord) -> pb::AnalysedGame {
    let s = &side.stats;
    pb::AnalysedGame {
        game_id: side.game_id.to_string(),
        variant: variant_to_proto(side.variant).into(),
        color: side.color.to_owned(),
        opponent_name: side.opponent_name.clone(),
        result: side.result.clone(),
        rating: side.rating,
        counted_moves: s.counted,
        top1: s.top1,
        acpl: s.acpl,
        near_best: s.near_best,
        think_cv: s.think_cv,
        score: s.score,
        moves: side
            .moves
            .iter()
            .map(|m| pb::AnalysedMove {
                ply: m.ply,
                played: m.played.clone(),
                best: m.best.clone(),
                loss_cp: m.loss_cp,
                think_ms: m.think_ms,
                legal_moves: m.legal_moves,
                near_best: m.near_best,
                skipped: m.skipped.clone(),
                flagged: m.flagged,
            })
            .collect(),
        ended_at_ms: side.ended_at_ms,
    }
}

fn audit(row: &AuditRow) -> pb::AuditEntry {
    pb::AuditEntry {
        action: row.action.to_owned(),
        report_id: row.report_id.map(|r| r.to_string()).unwrap_or_default(),
        player_id: row.player_id.to_string(),
        player_name: row.player_name.clone(),
        moderator_id: row.moderator.id.to_string(),
        moderator_name: row.moderator.name.clone(),
        note: row.note.clone(),
        at_ms: row.at_ms,
    }
}

#[tonic::async_trait]
impl<S: FairPlayStore> FairPlay for FairPlayService<S> {
    async fn list_reports(
        &self,
        request: Request<pb::ListReportsRequest>,
    ) -> Result<Response<pb::ReportsPage>, Status> {
        let r = request.into_inner();
        let filter = match r.status.as_str() {
            "" | "open" => StatusFilter::Only(ReportStatus::Open),
            "dismissed" => StatusFilter::Only(ReportStatus::Dismissed),
            "marked" => StatusFilter::Only(ReportStatus::Marked),
            "all" => StatusFilter::All,
            _ => return Err(bad("`status` is open, dismissed, marked or all")),
        };
        let limit = limit(r.limit)?;
        let before = parse_report_cursor(&r.cursor)?;
        let mut rows = self
            .store
            .reports(filter, before, limit + 1)
            .await
            .map_err(store_status)?;
        let more = rows.len() > limit;
        rows.truncate(limit);
        let next_cursor = match rows.last() {
            Some(last) if more => report_cursor(last),
            _ => String::new(),
        };
        Ok(Response::new(pb::ReportsPage {
            reports: rows.iter().map(report).collect(),
            next_cursor,
        }))
    }

    async fn get_report(
        &self,
        request: Request<pb::GetReportRequest>,
    ) -> Result<Response<pb::ReportDetail>, Status> {
        let id = Uuid::parse_str(&request.get_ref().report_id)
            .map_err(|_| refusal(ErrorCode::ReportNotFound, "no report has that id"))?;
        let (row, games) = self
            .store
            .report(id)
            .await
            .map_err(store_status)?
            .ok_or_else(|| refusal(ErrorCode::ReportNotFound, "no report has that id"))?;
        Ok(Response::new(pb::ReportDetail {
            report: Some(report(&row)),
            games: games.iter().map(game).collect(),
        }))
    }

    async fn decide(
        &self,
        request: Request<pb::DecideRequest>,
    ) -> Result<Response<pb::Report>, Status> {
        let r = request.into_inner();
        let id = Uuid::parse_str(&r.report_id)
            .map_err(|_| refusal(ErrorCode::ReportNotFound, "no report has that id"))?;
        let action = match r.action.as_str() {
            "dismiss" => Action::Dismiss,
            "mark" => Action::Mark,
            _ => return Err(bad("`action` is dismiss or mark")),
        };
        let by = moderator(&r.moderator_id, &r.moderator_name)?;
        let note = note(&r.note)?;
        let row = self
            .store
            .decide(id, action, &by, note, self.clock.now_ms())
            .await
            .map_err(|e| match e {
                DecideError::NotFound => {
                    refusal(ErrorCode::ReportNotFound, "no report has that id")
                }
                DecideError::AlreadyDecided => {
                    refusal(ErrorCode::AlreadyDecided, "the report was decided already")
                }
                DecideError::Store(e) => store_status(e),
            })?;
        tracing::info!(report = %row.id, player = %row.player_id, moderator = %by.id,
            action = action.as_str(), "fair-play decision");
        metrics::counter!("frontier_fairplay_decisions_total", "action" => action.as_str())
            .increment(1);
        Ok(Response::new(report(&row)))
    }

    async fn unmark(
        &self,
        request: Request<pb::UnmarkRequest>,
    ) -> Result<Response<pb::UnmarkResponse>, Status> {
        let r = request.into_inner();
        let player = uuid(&r.player_id, "player_id")?;
        let by = moderator(&r.moderator_id, &r.moderator_name)?;
        let note = note(&r.note)?;
        let was_marked = self
            .store
            .unmark(player, &by, note, self.clock.now_ms())
            .await
            .map_err(store_status)?;
        if was_marked {
            tracing::info!(%player, moderator = %by.id, "fair-play mark lifted");
            metrics::counter!("frontier_fairplay_decisions_total", "action" => "unmark")
                .increment(1);
        }
        Ok(Response::new(pb::UnmarkResponse { was_marked }))
    }

    async fn is_marked(
        &self,
        request: Request<pb::IsMarkedRequest>,
    ) -> Result<Response<pb::IsMarkedResponse>, Status> {
        let player = uuid(&request.get_ref().player_id, "player_id")?;
        let marked = self
            .store
            .marked_among(&[player])
            .await
            .map_err(store_status)?;
        Ok(Response::new(pb::IsMarkedResponse {
            marked: !marked.is_empty(),
        }))
    }

    async fn marked_among(
        &self,
        request: Request<pb::MarkedAmongRequest>,
    ) -> Result<Response<pb::MarkedAmongResponse>, Status> {
        let ids = &request.get_ref().player_ids;
        if ids.len() > MAX_IDS {
            return Err(bad(format!("at most {MAX_IDS} `player_ids`")));
        }
        let ids = ids
            .iter()
            .map(|id| uuid(id, "player_ids"))
            .collect::<Result<Vec<_>, _>>()?;
        let marked = self.store.marked_among(&ids).await.map_err(store_status)?;
        Ok(Response::new(pb::MarkedAmongResponse {
            player_ids: marked.iter().map(Uuid::to_string).collect(),
        }))
    }

    async fn audit_log(
        &self,
        request: Request<pb::AuditLogRequest>,
    ) -> Result<Response<pb::AuditLogResponse>, Status> {
        let r = request.into_inner();
        let limit = limit(r.limit)?;
        let before = if r.cursor.is_empty() {
            None
        } else {
            Some(r.cursor.parse::<i64>().map_err(|_| bad("bad `cursor`"))?)
        };
        let mut rows = self
            .store
            .audit_log(before, limit + 1)
            .await
            .map_err(store_status)?;
        let more = rows.len() > limit;
        rows.truncate(limit);
        let next_cursor = match rows.last() {
            Some(last) if more => last.seq.to_string(),
            _ => String::new(),
        };
        Ok(Response::new(pb::AuditLogResponse {
            entries: rows.iter().map(audit).collect(),
            next_cursor,
        }))
    }
}
