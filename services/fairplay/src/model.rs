//! The service's own records: one player's analysed game, a report, a decision — as the
//! stores keep them and the read API renders them. The analysis itself is
//! `frontier_fairplay`'s (pure); this module only carries its results.

use frontier_fairplay::{GameStats, GameSummary, MoveAnalysis, Reason, Verdict};
use frontier_rules::Variant;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// The aggregate's window: a player's latest analysed games per variant.
pub const WINDOW: usize = 10;

/// Games a player must have analysed after a decision on their report before a new report
/// can open (so a dismissed report does not come straight back on the same games).
pub const NEW_GAMES_AFTER_DECISION: usize = 5;

/// One analysed move, as stored (JSON) and shown to moderators.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MoveRow {
    /// 1-based half-move number.
    pub ply: u32,
    /// UCI as played.
    pub played: String,
    /// The engine's best move from the mover's view.
    pub best: String,
    /// Centipawns lost against the best (capped).
    pub loss_cp: u32,
    /// Think time, ms (0 when unknown).
    pub think_ms: u64,
    /// Legal moves in the position.
    pub legal_moves: u32,
    /// Moves within the near-best margin.
    pub near_best: u32,
    /// Why the move was not counted, if it was not.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub skipped: String,
    /// A move that drove suspicion.
    #[serde(default)]
    pub flagged: bool,
}

impl From<&MoveAnalysis> for MoveRow {
    fn from(m: &MoveAnalysis) -> MoveRow {
        MoveRow {
            ply: m.ply,
            played: m.played.clone(),
            best: m.best.clone(),
            loss_cp: m.loss_cp,
            think_ms: m.think_ms,
            legal_moves: m.legal_moves,
            near_best: m.near_best,
            skipped: m.skipped.map(|s| s.as_str().to_owned()).unwrap_or_default(),
            flagged: m.flagged,
        }
    }
}

/// One player's side of an analysed rated game.
#[derive(Debug, Clone, PartialEq)]
pub struct SideRecord {
    /// The game.
    pub game_id: Uuid,
    /// The player.
    pub player_id: Uuid,
    /// Their name in the game's record.
    pub player_name: String,
    /// The variant.
    pub variant: Variant,
    /// `white` or `black`.
    pub color: &'static str,
    /// The opponent's name.
    pub opponent_name: String,
    /// `white`, `black` or `draw`.
    pub result: String,
    /// The player's rating in the variant when analysed.
    pub rating: f64,
    /// When the game ended, Unix ms.
    pub ended_at_ms: i64,
    /// The game's statistics for this player.
    pub stats: GameStats,
    /// Every move of this player, analysed or skipped.
    pub moves: Vec<MoveRow>,
}

impl SideRecord {
    /// What the aggregate needs of this game.
    pub fn summary(&self) -> GameSummary {
        GameSummary {
            stats: self.stats,
            rating: self.rating,
        }
    }
}

/// A reason, as stored (JSON) and rendered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReasonRow {
    /// The signal's code.
    pub code: String,
    /// The player's value.
    pub value: f64,
    /// The threshold crossed.
    pub threshold: f64,
    /// For people.
    pub detail: String,
}

impl From<&Reason> for ReasonRow {
    fn from(r: &Reason) -> ReasonRow {
        ReasonRow {
            code: r.code.to_owned(),
            value: r.value,
            threshold: r.threshold,
            detail: r.detail.clone(),
        }
    }
}

/// A report's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// Waiting for a moderator.
    Open,
    /// Looked at and dismissed.
    Dismissed,
    /// The player was marked.
    Marked,
}

impl Status {
    /// The stored and wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Open => "open",
            Status::Dismissed => "dismissed",
            Status::Marked => "marked",
        }
    }

    /// From the stored name.
    pub fn parse(s: &str) -> Option<Status> {
        match s {
            "open" => Some(Status::Open),
            "dismissed" => Some(Status::Dismissed),
            "marked" => Some(Status::Marked),
            _ => None,
        }
    }
}

/// Which reports a list shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatusFilter {
    /// Only reports in this state.
    Only(Status),
    /// Every report.
    All,
}

/// A moderator's decision on a report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// The report is closed; the player keeps playing rated.
    Dismiss,
    /// The player is marked: casual games only, off the leaderboard.
    Mark,
}

impl Action {
    /// The wire and log name.
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Dismiss => "dismiss",
            Action::Mark => "mark",
        }
    }
}

/// Who decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Moderator {
    /// Their player id.
    pub id: Uuid,
    /// Their name.
    pub name: String,
}

/// A report as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct ReportRow {
    /// Its id.
    pub id: Uuid,
    /// The reported player.
    pub player_id: Uuid,
    /// Their name.
    pub player_name: String,
    /// The variant.
    pub variant: Variant,
    /// Its state.
    pub status: Status,
    /// 0–100.
    pub score: f64,
    /// The signals over their thresholds.
    pub reasons: Vec<ReasonRow>,
    /// The games the aggregate covered, newest first.
    pub game_ids: Vec<Uuid>,
    /// The player's rating at the latest of them.
    pub rating: f64,
    /// Unix ms.
    pub created_at_ms: i64,
    /// Unix ms.
    pub updated_at_ms: i64,
    /// The decision, once made: who, when, and the note.
    pub decided: Option<(Moderator, i64)>,
    /// The moderator's note.
    pub note: String,
}

impl ReportRow {
    /// A new open report from a verdict over `window` (newest first).
    pub fn open(side: &SideRecord, verdict: &Verdict, window: &[Uuid], now_ms: i64) -> ReportRow {
        ReportRow {
            id: Uuid::new_v4(),
            player_id: side.player_id,
            player_name: side.player_name.clone(),
            variant: side.variant,
            status: Status::Open,
            score: verdict.score,
            reasons: verdict.reasons.iter().map(ReasonRow::from).collect(),
            game_ids: window.to_vec(),
            rating: side.rating,
            created_at_ms: now_ms,
            updated_at_ms: now_ms,
            decided: None,
            note: String::new(),
        }
    }
}

/// One entry of the audit log.
#[derive(Debug, Clone, PartialEq)]
pub struct AuditRow {
    /// Its sequence (the log's cursor).
    pub seq: i64,
    /// `dismiss`, `mark` or `unmark`.
    pub action: &'static str,
    /// The report decided (none for `unmark`).
    pub report_id: Option<Uuid>,
    /// The player concerned.
    pub player_id: Uuid,
    /// Their name.
    pub player_name: String,
    /// Who.
    pub moderator: Moderator,
    /// Why, in their words.
    pub note: String,
    /// When, Unix ms.
    pub at_ms: i64,
}

/// What recording one analysed game did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Recorded {
    /// Sides stored now (0 for a game delivered again).
    pub stored: usize,
    /// Reports opened by this game.
    pub opened: Vec<Uuid>,
    /// Open reports brought up to date by it.
    pub updated: Vec<Uuid>,
}

/// What the aggregate decides for one player after a game: consulted by both stores so
/// they behave the same.
#[derive(Debug, Clone, PartialEq)]
pub enum ReportStep {
    /// Nothing to do.
    None,
    /// Bring the open report up to date.
    Update,
    /// Open a new report.
    Open,
}

/// The rule both stores apply: an open report follows the player's latest aggregate; a
/// verdict that reports opens one unless the player is marked already or a decision on
/// their last report came fewer than [`NEW_GAMES_AFTER_DECISION`] games ago.
pub fn report_step(
    verdict: &Verdict,
    has_open: bool,
    marked: bool,
    games_since_decision: Option<usize>,
) -> ReportStep {
    if has_open {
        return ReportStep::Update;
    }
    if !verdict.report || marked {
        return ReportStep::None;
    }
    match games_since_decision {
        Some(n) if n < NEW_GAMES_AFTER_DECISION => ReportStep::None,
        _ => ReportStep::Open,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn verdict(report: bool) -> Verdict {
        Verdict {
            score: if report { 90.0 } else { 10.0 },
            reasons: Vec::new(),
            report,
            games: 10,
        }
    }

    #[test]
    fn reports_open_only_when_due() {
        assert_eq!(
            report_step(&verdict(true), false, false, None),
            ReportStep::Open
        );
        assert_eq!(
            report_step(&verdict(false), false, false, None),
            ReportStep::None
        );
        assert_eq!(
            report_step(&verdict(false), true, false, None),
            ReportStep::Update
        );
        assert_eq!(
            report_step(&verdict(true), false, true, None),
            ReportStep::None
        );
        assert_eq!(
            report_step(&verdict(true), false, false, Some(2)),
            ReportStep::None
        );
        assert_eq!(
            report_step(&verdict(true), false, false, Some(NEW_GAMES_AFTER_DECISION)),
            ReportStep::Open
        );
    }
}
