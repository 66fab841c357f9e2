//! Server-kept chess clocks, as pure arithmetic over times the caller passes in (Unix
//! milliseconds of the server), so tests drive them without sleeping.
//!
//! - Only the side to act has a running clock. The increment is added after each completed
//!   move (a move waiting for a promotion choice is not complete: the mover's clock runs on).
//! - Each side's first move has its own limit (default 30 s) counted from the start of its
//!   turn; its main clock does not run for it. Missing it aborts the game.
//! - Lag compensation as lichess's `LagTracker`: see [`LagTracker`].

use frontier_rules::{ByColor, Color};

/// A time control: base time and increment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimeControl {
    /// Base time, milliseconds.
    pub initial_ms: u64,
    /// Increment per move, milliseconds.
    pub increment_ms: u64,
}

impl TimeControl {
    /// lichess's estimate of a game's length, in seconds: base + 40 × increment.
    pub fn estimated_seconds(&self) -> u64 {
        self.initial_ms / 1000 + 40 * (self.increment_ms / 1000)
    }
}

/// Lag compensation for one side (scalachess `LagTracker`).
///
/// The client reports how long it took to decide; the server measured the time between
/// sending the opponent's move and receiving this one. The difference is lag, compensated
/// up to a quota: with est = base + 40 × increment seconds, the quota gained per move is
/// `min(100, est × 2/5 + 15)` centiseconds; it starts at 3 × gain and never exceeds
/// 7 × gain; a move's compensation is `min(lag, quota)`, after which the quota becomes
/// `min(quota + gain − compensation, 7 × gain)`. A client lying about its move time gains
/// at most the quota; no more than the measured lag is ever given back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LagTracker {
    /// Current quota, milliseconds.
    pub quota_ms: u64,
    /// Quota gained per move, milliseconds.
    pub gain_ms: u64,
}

impl LagTracker {
    /// A fresh tracker for this time control.
    pub fn new(tc: &TimeControl) -> LagTracker {
        let est = tc.estimated_seconds();
        let gain_cs = (est * 2 / 5 + 15).min(100);
        let gain_ms = gain_cs * 10;
        LagTracker {
            quota_ms: 3 * gain_ms,
            gain_ms,
        }
    }

    /// The most the quota can hold.
    pub fn max_ms(&self) -> u64 {
        7 * self.gain_ms
    }

    /// The compensation for one move whose measured time was `elapsed_ms` and whose
    /// client-reported time was `reported_ms` (none: no compensation); updates the quota.
    pub fn compensate(&mut self, elapsed_ms: u64, reported_ms: Option<u64>) -> u64 {
        let lag = match reported_ms {
            Some(reported) => elapsed_ms.saturating_sub(reported),
            None => 0,
        };
        let compensation = lag.min(self.quota_ms);
        self.quota_ms = (self.quota_ms + self.gain_ms - compensation).min(self.max_ms());
        compensation
    }
}

/// Why time ran out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Expiry {
    /// The side's clock reached zero.
    #[error("{} ran out of time", .0.name())]
    Flag(Color),
    /// The side did not make its first move in time: the game is aborted.
    #[error("{} did not make its first move in time", .0.name())]
    FirstMove(Color),
}

/// What a deadline means when it passes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Deadline {
    /// Unix milliseconds.
    pub at_ms: i64,
    /// What happens then.
    pub expiry: Expiry,
}

/// Both clocks as read at one moment, for clients to draw without drift.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClockReading {
    /// White's remaining milliseconds.
    pub white_ms: u64,
    /// Black's remaining milliseconds.
    pub black_ms: u64,
    /// The side whose clock runs (none before the first move or after the end).
    pub running: Option<Color>,
    /// The server time of the reading, Unix milliseconds.
    pub at_ms: i64,
}

/// A game's clocks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChessClock {
    /// The time control.
    pub tc: TimeControl,
    /// Remaining milliseconds at the start of the current turn.
    pub remaining_ms: ByColor<u64>,
    /// The side to act, whose turn started at `turn_started_ms`.
    pub to_act: Color,
    /// When the current turn started.
    pub turn_started_ms: i64,
    /// Whether each side has made its first move.
    pub moved: ByColor<bool>,
    /// First-move limit, milliseconds.
    pub first_move_limit_ms: u64,
    /// Lag trackers.
    pub lag: ByColor<LagTracker>,
    /// Stopped (game over).
    pub stopped: bool,
}

/// What a completed move did to the mover's clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MoveTiming {
    /// Time charged, milliseconds (after compensation; 0 for a first move).
    pub spent_ms: u64,
    /// Lag compensation given.
    pub compensation_ms: u64,
}

impl ChessClock {
    /// Clocks for a game that starts (White to move) at `now_ms`.
    pub fn start(tc: TimeControl, first_move_limit_ms: u64, now_ms: i64) -> ChessClock {
        let lag = LagTracker::new(&tc);
        ChessClock {
            tc,
            remaining_ms: ByColor {
                white: tc.initial_ms,
                black: tc.initial_ms,
            },
            to_act: Color::White,
            turn_started_ms: now_ms,
            moved: ByColor::default(),
            first_move_limit_ms,
            lag: ByColor {
                white: lag,
                black: lag,
            },
            stopped: false,
        }
    }

    fn elapsed(&self, now_ms: i64) -> u64 {
        u64::try_from(now_ms - self.turn_started_ms).unwrap_or(0)
    }

    /// The next deadline: the side to act's first-move limit or flag fall.
    pub fn deadline(&self) -> Option<Deadline> {
        if self.stopped {
            return None;
        }
        let side = self.to_act;
        Some(if self.moved[side] {
            Deadline {
                at_ms: self.turn_started_ms + self.remaining_ms[side] as i64,
                expiry: Expiry::Flag(side),
            }
        } else {
            Deadline {
                at_ms: self.turn_started_ms + self.first_move_limit_ms as i64,
                expiry: Expiry::FirstMove(side),
            }
        })
    }

    /// What has expired by `now_ms`, if anything. A deadline is reached at its millisecond.
    pub fn expired(&self, now_ms: i64) -> Option<Expiry> {
        self.deadline()
            .filter(|d| now_ms >= d.at_ms)
            .map(|d| d.expiry)
    }

    /// The clocks as of `now_ms`.
    pub fn reading(&self, now_ms: i64) -> ClockReading {
        let mut remaining = self.remaining_ms;
        let running = (!self.stopped && self.moved[self.to_act]).then_some(self.to_act);
        if let Some(side) = running {
            remaining[side] = remaining[side].saturating_sub(self.elapsed(now_ms));
        }
        ClockReading {
            white_ms: remaining.white,
            black_ms: remaining.black,
            running,
            at_ms: now_ms,
        }
    }

    /// A completed move by the side to act at `now_ms`, with its client-reported thinking
    /// time. Refused with the expiry if time had already run out; otherwise charges the
    /// time (less lag compensation), adds the increment and passes the turn.
    pub fn complete_move(
        &mut self,
        now_ms: i64,
        reported_ms: Option<u64>,
    ) -> Result<MoveTiming, Expiry> {
        if let Some(expiry) = self.expired(now_ms) {
            return Err(expiry);
        }
        let side = self.to_act;
        let timing = if self.moved[side] {
            let elapsed = self.elapsed(now_ms);
            let compensation = self.lag[side].compensate(elapsed, reported_ms);
            let spent = elapsed.saturating_sub(compensation);
            if spent >= self.remaining_ms[side] {
                // Compensation never saves a move that came after the deadline (checked
                // above), so this cannot happen; keep the clock at zero if it ever does.
                self.remaining_ms[side] = 0;
                return Err(Expiry::Flag(side));
            }
            self.remaining_ms[side] = self.remaining_ms[side] - spent + self.tc.increment_ms;
            MoveTiming {
                spent_ms: spent,
                compensation_ms: compensation,
            }
        } else {
            self.moved[side] = true;
            MoveTiming {
                spent_ms: 0,
                compensation_ms: 0,
            }
        };
        self.to_act = !side;
        self.turn_started_ms = now_ms;
        Ok(timing)
    }

    /// Stops the clocks at `now_ms` (the game ended), charging the side to act its time.
    pub fn stop(&mut self, now_ms: i64) {
        if self.stopped {
            return;
        }
        let side = self.to_act;
        if self.moved[side] {
            self.remaining_ms[side] = self.remaining_ms[side].saturating_sub(self.elapsed(now_ms));
        }
        self.stopped = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tc(minutes: u64, increment_s: u64) -> TimeControl {
        TimeControl {
            initial_ms: minutes * 60_000,
            increment_ms: increment_s * 1000,
        }
    }

    #[test]
    fn the_quota_gain_follows_lichess() {
        assert_eq!(LagTracker::new(&tc(1, 0)).gain_ms, 390);
        assert_eq!(LagTracker::new(&tc(3, 0)).gain_ms, 870);
        assert_eq!(LagTracker::new(&tc(10, 0)).gain_ms, 1000);
        assert_eq!(LagTracker::new(&tc(60, 60)).gain_ms, 1000);
        let t = LagTracker::new(&tc(3, 0));
        assert_eq!((t.quota_ms, t.max_ms()), (3 * 870, 7 * 870));
    }

    #[test]
    fn compensation_is_bounded_by_lag_and_quota() {
        let mut t = LagTracker::new(&tc(1, 0)); // gain 390, quota 1170, max 2730
        // 300 ms of lag: all of it back.
        assert_eq!(t.compensate(1300, Some(1000)), 300);
        assert_eq!(t.quota_ms, 1170 + 390 - 300);
        // A liar claims 0 ms of thought after 10 s: gains only the quota.
        let quota = t.quota_ms;
        assert_eq!(t.compensate(10_000, Some(0)), quota);
        assert_eq!(t.quota_ms, 390);
        // No report, no compensation; the quota still grows, up to its cap.
        for _ in 0..20 {
            assert_eq!(t.compensate(5000, None), 0);
        }
        assert_eq!(t.quota_ms, t.max_ms());
        // A client reporting more than the measured time gets nothing.
        assert_eq!(t.compensate(500, Some(900)), 0);
    }

    #[test]
    fn only_the_side_to_act_runs_and_increments_follow_moves() {
        let mut c = ChessClock::start(tc(3, 2), 30_000, 0);
        // First moves: limited by the first-move limit, not charged.
        assert_eq!(
            c.deadline().map(|d| d.expiry),
            Some(Expiry::FirstMove(Color::White))
        );
        assert_eq!(c.complete_move(5_000, None).map(|t| t.spent_ms), Ok(0));
        assert_eq!(
            c.deadline(),
            Some(Deadline {
                at_ms: 35_000,
                expiry: Expiry::FirstMove(Color::Black)
            })
        );
        assert_eq!(c.complete_move(7_000, None).map(|t| t.spent_ms), Ok(0));
        // From now on White's clock runs: 10 s spent, 2 s back.
        assert_eq!(c.reading(12_000).white_ms, 180_000 - 5_000);
        assert_eq!(
            c.reading(12_000).black_ms,
            180_000,
            "Black's clock is stopped"
        );
        assert_eq!(c.reading(12_000).running, Some(Color::White));
        assert_eq!(
            c.complete_move(17_000, None).map(|t| t.spent_ms),
            Ok(10_000)
        );
        assert_eq!(c.remaining_ms.white, 180_000 - 10_000 + 2_000);
        assert_eq!(
            c.deadline(),
            Some(Deadline {
                at_ms: 17_000 + 180_000,
                expiry: Expiry::Flag(Color::Black)
            })
        );
    }

    #[test]
    fn a_move_after_the_deadline_is_refused_and_flags() {
        let mut c = ChessClock::start(tc(1, 0), 30_000, 0);
        c.complete_move(1_000, None).expect("first");
        c.complete_move(2_000, None).expect("first");
        // White has 60 s from t=2 s: flag at 62 s, whatever lag it reports.
        assert_eq!(c.expired(61_999), None);
        assert_eq!(c.expired(62_000), Some(Expiry::Flag(Color::White)));
        assert_eq!(
            c.complete_move(62_500, Some(0)),
            Err(Expiry::Flag(Color::White))
        );
        // Before the deadline, compensation can only give back measured lag.
        let mut c2 = ChessClock::start(tc(1, 0), 30_000, 0);
        c2.complete_move(0, None).expect("first");
        c2.complete_move(0, None).expect("first");
        let t = c2.complete_move(50_000, Some(49_800)).expect("in time");
        assert_eq!((t.compensation_ms, t.spent_ms), (200, 49_800));
    }

    #[test]
    fn missing_the_first_move_aborts() {
        let mut c = ChessClock::start(tc(5, 0), 30_000, 1_000);
        assert_eq!(c.expired(30_999), None);
        assert_eq!(c.expired(31_000), Some(Expiry::FirstMove(Color::White)));
        assert_eq!(
            c.complete_move(31_000, None),
            Err(Expiry::FirstMove(Color::White))
        );
    }

    #[test]
    fn a_pending_promotion_keeps_the_clock_running() {
        // The move completes only when the choice arrives: the time until then is charged.
        let mut c = ChessClock::start(tc(1, 0), 30_000, 0);
        c.complete_move(0, None).expect("first");
        c.complete_move(0, None).expect("first");
        // White's move reaches the last rank at 10 s; the choice comes at 25 s.
        assert_eq!(c.reading(10_000).running, Some(Color::White));
        let t = c.complete_move(25_000, None).expect("in time");
        assert_eq!(t.spent_ms, 25_000);
        assert_eq!(c.remaining_ms.white, 35_000);
    }

    #[test]
    fn stopping_charges_the_running_side() {
        let mut c = ChessClock::start(tc(1, 0), 30_000, 0);
        c.complete_move(0, None).expect("first");
        c.complete_move(0, None).expect("first");
        c.stop(20_000);
        assert_eq!(c.remaining_ms.white, 40_000);
        assert_eq!(c.deadline(), None);
        assert_eq!(c.reading(50_000).white_ms, 40_000);
    }
}
