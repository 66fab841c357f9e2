//! [`MemoryStore`]: the fair-play store in memory, under one lock (the single-process mode
//! `frontier dev`, and fast tests). Same behaviour as Postgres; nothing survives a restart.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use frontier_fairplay::{GameSummary, Thresholds, aggregate};
use uuid::Uuid;

use crate::model::{
    Action, AuditRow, Moderator, Recorded, ReportRow, ReportStep, SideRecord, Status, StatusFilter,
    WINDOW, report_step,
};
use crate::store::{DecideError, FairPlayStore, StoreError};

#[derive(Default)]
struct Inner {
    games: Vec<SideRecord>,
    reports: Vec<ReportRow>,
    /// Player → the report that marked them.
    marks: HashMap<Uuid, Uuid>,
    log: Vec<AuditRow>,
}

/// Everything in memory.
#[derive(Clone)]
pub struct MemoryStore {
    inner: Arc<Mutex<Inner>>,
    thresholds: Arc<Thresholds>,
}

impl MemoryStore {
    /// An empty store reporting at these thresholds.
    pub fn new(thresholds: Thresholds) -> MemoryStore {
        MemoryStore {
            inner: Arc::default(),
            thresholds: Arc::new(thresholds),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A player's games in a variant, newest first.
fn window<'a>(inner: &'a Inner, side: &SideRecord) -> Vec<&'a SideRecord> {
    let mut games: Vec<&SideRecord> = inner
        .games
        .iter()
        .filter(|g| g.player_id == side.player_id && g.variant == side.variant)
        .collect();
    games.sort_by_key(|g| std::cmp::Reverse((g.ended_at_ms, g.game_id)));
    games
}

impl FairPlayStore for MemoryStore {
    async fn record(&self, sides: &[SideRecord], now_ms: i64) -> Result<Recorded, StoreError> {
        let mut inner = self.lock();
        let mut recorded = Recorded::default();
        for side in sides {
            let seen = inner
                .games
                .iter()
                .any(|g| g.game_id == side.game_id && g.player_id == side.player_id);
            if seen {
                continue;
            }
            inner.games.push(side.clone());
            recorded.stored += 1;
            let all = window(&inner, side);
            let latest: Vec<&SideRecord> = all.iter().take(WINDOW).copied().collect();
            let summaries: Vec<GameSummary> = latest.iter().map(|g| g.summary()).collect();
            let ids: Vec<Uuid> = latest.iter().map(|g| g.game_id).collect();
            let rating = latest.first().map_or(side.rating, |g| g.rating);
            let verdict = aggregate(&summaries, &self.thresholds);
            let open = inner.reports.iter().position(|r| {
                r.player_id == side.player_id
                    && r.variant == side.variant
                    && r.status == Status::Open
            });
            let marked = inner.marks.contains_key(&side.player_id);
            let last_decision = inner
                .reports
                .iter()
                .filter(|r| r.player_id == side.player_id && r.variant == side.variant)
                .filter_map(|r| r.decided.as_ref().map(|(_, at)| *at))
                .max();
            // Games that ended after the last decision.
            let since = last_decision.map(|at| all.iter().filter(|g| g.ended_at_ms > at).count());
            match report_step(&verdict, open.is_some(), marked, since) {
                ReportStep::None => {}
                ReportStep::Update => {
                    if let Some(report) = open.and_then(|i| inner.reports.get_mut(i)) {
                        report.score = verdict.score;
                        report.reasons = verdict.reasons.iter().map(Into::into).collect();
                        report.game_ids = ids;
                        report.rating = rating;
                        report.updated_at_ms = now_ms;
                        recorded.updated.push(report.id);
                    }
                }
                ReportStep::Open => {
                    let mut report = ReportRow::open(side, &verdict, &ids, now_ms);
                    report.rating = rating;
                    recorded.opened.push(report.id);
                    inner.reports.push(report);
                }
            }
        }
        Ok(recorded)
    }

    async fn reports(
        &self,
        filter: StatusFilter,
        before: Option<(i64, Uuid)>,
        limit: usize,
    ) -> Result<Vec<ReportRow>, StoreError> {
        let inner = self.lock();
        let mut rows: Vec<ReportRow> = inner
            .reports
            .iter()
            .filter(|r| match filter {
                StatusFilter::All => true,
                StatusFilter::Only(s) => r.status == s,
            })
            .filter(|r| before.is_none_or(|b| (r.created_at_ms, r.id) < b))
            .cloned()
            .collect();
        rows.sort_by_key(|r| std::cmp::Reverse((r.created_at_ms, r.id)));
        rows.truncate(limit);
        Ok(rows)
    }

    async fn report(&self, id: Uuid) -> Result<Option<(ReportRow, Vec<SideRecord>)>, StoreError> {
        let inner = self.lock();
        let Some(report) = inner.reports.iter().find(|r| r.id == id).cloned() else {
            return Ok(None);
        };
        let games = report
            .game_ids
            .iter()
            .filter_map(|g| {
                inner
                    .games
                    .iter()
                    .find(|s| s.game_id == *g && s.player_id == report.player_id)
                    .cloned()
            })
            .collect();
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
        let mut inner = self.lock();
        let report = inner
            .reports
            .iter_mut()
            .find(|r| r.id == id)
            .ok_or(DecideError::NotFound)?;
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
        let report = report.clone();
        if action == Action::Mark {
            inner.marks.insert(report.player_id, report.id);
        }
        let seq = inner.log.len() as i64 + 1;
        inner.log.push(AuditRow {
            seq,
            action: action.as_str(),
            report_id: Some(report.id),
            player_id: report.player_id,
            player_name: report.player_name.clone(),
            moderator: by.clone(),
            note: note.to_owned(),
            at_ms: now_ms,
        });
        Ok(report)
    }

    async fn unmark(
        &self,
        player: Uuid,
        by: &Moderator,
        note: &str,
        now_ms: i64,
    ) -> Result<bool, StoreError> {
        let mut inner = self.lock();
        let Some(report_id) = inner.marks.remove(&player) else {
            return Ok(false);
        };
        let player_name = inner
            .reports
            .iter()
            .find(|r| r.id == report_id)
            .map(|r| r.player_name.clone())
            .unwrap_or_default();
        let seq = inner.log.len() as i64 + 1;
        inner.log.push(AuditRow {
            seq,
            action: "unmark",
            report_id: None,
            player_id: player,
            player_name,
            moderator: by.clone(),
            note: note.to_owned(),
            at_ms: now_ms,
        });
        Ok(true)
    }

    async fn marked_among(&self, players: &[Uuid]) -> Result<Vec<Uuid>, StoreError> {
        let inner = self.lock();
        let mut out: Vec<Uuid> = Vec::new();
        for p in players {
            if inner.marks.contains_key(p) && !out.contains(p) {
                out.push(*p);
            }
        }
        Ok(out)
    }

    async fn audit_log(
        &self,
        before: Option<i64>,
        limit: usize,
    ) -> Result<Vec<AuditRow>, StoreError> {
        let inner = self.lock();
        Ok(inner
            .log
            .iter()
            .rev()
            .filter(|e| before.is_none_or(|b| e.seq < b))
            .take(limit)
            .cloned()
            .collect())
    }

    async fn open_reports(&self) -> Result<u64, StoreError> {
        let inner = self.lock();
        Ok(inner
            .reports
            .iter()
            .filter(|r| r.status == Status::Open)
            .count() as u64)
    }
}
