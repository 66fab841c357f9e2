//! Where analysed games, reports, marks and decisions live: the [`FairPlayStore`] trait,
//! with [`PgStore`](crate::pg::PgStore) (Postgres, production) and
//! [`MemoryStore`](crate::memory::MemoryStore) (the single-process mode and fast tests).
//! Both aggregate with `frontier_fairplay::aggregate` and decide reports with
//! [`report_step`](crate::model::report_step), so they behave the same.

use std::future::Future;

use uuid::Uuid;

use crate::model::{Action, AuditRow, Moderator, Recorded, ReportRow, SideRecord, StatusFilter};

/// Storage failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// Storage is unreachable or failed: worth retrying.
    #[error("storage: {0}")]
    Unavailable(String),
    /// A stored value does not read back (a bug or a hand-edited row).
    #[error("stored data: {0}")]
    Corrupt(String),
}

/// Why a decision was refused.
#[derive(Debug, thiserror::Error)]
pub enum DecideError {
    /// No report has that id.
    #[error("no such report")]
    NotFound,
    /// The report was decided already.
    #[error("the report was decided already")]
    AlreadyDecided,
    /// Storage failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The fair-play service's storage.
pub trait FairPlayStore: Clone + Send + Sync + 'static {
    /// Stores each side of one analysed game once, then for each stored side brings the
    /// player's reports up to date from their latest games in the variant — all or nothing.
    /// A side stored before changes nothing (a game delivered again).
    fn record(
        &self,
        sides: &[SideRecord],
        now_ms: i64,
    ) -> impl Future<Output = Result<Recorded, StoreError>> + Send;

    /// Up to `limit` reports after `before` (created at, id), newest first.
    fn reports(
        &self,
        filter: StatusFilter,
        before: Option<(i64, Uuid)>,
        limit: usize,
    ) -> impl Future<Output = Result<Vec<ReportRow>, StoreError>> + Send;

    /// A report and the analysed games it covers (newest first).
    fn report(
        &self,
        id: Uuid,
    ) -> impl Future<Output = Result<Option<(ReportRow, Vec<SideRecord>)>, StoreError>> + Send;

    /// Decides an open report; marking also marks its player. Logged with who and when.
    fn decide(
        &self,
        id: Uuid,
        action: Action,
        by: &Moderator,
        note: &str,
        now_ms: i64,
    ) -> impl Future<Output = Result<ReportRow, DecideError>> + Send;

    /// Lifts a player's mark (logged); false if they were not marked.
    fn unmark(
        &self,
        player: Uuid,
        by: &Moderator,
        note: &str,
        now_ms: i64,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;

    /// Those of `players` who are marked, each once.
    fn marked_among(
        &self,
        players: &[Uuid],
    ) -> impl Future<Output = Result<Vec<Uuid>, StoreError>> + Send;

    /// Up to `limit` decisions before sequence `before`, newest first.
    fn audit_log(
        &self,
        before: Option<i64>,
        limit: usize,
    ) -> impl Future<Output = Result<Vec<AuditRow>, StoreError>> + Send;

    /// Open reports right now (the `frontier_fairplay_reports_open` gauge).
    fn open_reports(&self) -> impl Future<Output = Result<u64, StoreError>> + Send;
}
