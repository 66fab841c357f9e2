//! What the pairing step is told: the rating window's schedule, the bot fallback's wait per
//! pool, and the rating each bot level stands for.

use frontier_engine::Level;

use crate::Pool;

/// How far apart two ratings may be for a ticket that has waited so long. The window starts
/// at ±`initial`, widens by `widen_per_second` points for each second of waiting, and after
/// `full_after_ms` it is the whole pool.
///
/// Defaults: ±100, widening by 50 points a second (±600 after 10 s, ±1,100 after 20 s), the
/// whole pool after 30 s.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WindowSchedule {
    /// Half-width of the window of a ticket that has just arrived, in rating points.
    pub initial: u32,
    /// Rating points the half-width grows by per second of waiting.
    pub widen_per_second: u32,
    /// From this wait on (milliseconds), the window is the whole pool.
    pub full_after_ms: u64,
}

impl Default for WindowSchedule {
    fn default() -> WindowSchedule {
        WindowSchedule {
            initial: 100,
            widen_per_second: 50,
            full_after_ms: 30_000,
        }
    }
}

impl WindowSchedule {
    /// The half-width of the window after waiting `wait_ms`: `None` is the whole pool.
    pub fn half_width(&self, wait_ms: u64) -> Option<u64> {
        if wait_ms >= self.full_after_ms {
            return None;
        }
        Some(u64::from(self.initial) + u64::from(self.widen_per_second) * wait_ms / 1000)
    }

    /// Whether a ticket that has waited `wait_ms` accepts an opponent `difference` rating
    /// points away.
    pub fn accepts(&self, wait_ms: u64, difference: u64) -> bool {
        self.half_width(wait_ms).is_none_or(|w| difference <= w)
    }
}

/// After how long without a person a ticket gets a bot, per pool. A wait of 0 disables the
/// fallback in that pool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BotWaits {
    /// The wait in every pool not named in `per_pool` (default 20 s).
    pub default_ms: u64,
    /// Pools with their own wait.
    pub per_pool: Vec<(Pool, u64)>,
}

impl Default for BotWaits {
    fn default() -> BotWaits {
        BotWaits {
            default_ms: 20_000,
            per_pool: Vec::new(),
        }
    }
}

impl BotWaits {
    /// The wait before a bot in `pool`; `None` when the fallback is off there.
    pub fn for_pool(&self, pool: Pool) -> Option<u64> {
        let wait = self
            .per_pool
            .iter()
            .rev()
            .find(|(p, _)| *p == pool)
            .map_or(self.default_ms, |(_, w)| *w);
        (wait > 0).then_some(wait)
    }
}

/// Everything the pairing step is configured with.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PairingConfig {
    /// The rating window.
    pub window: WindowSchedule,
    /// The bot fallback.
    pub bots: BotWaits,
}

/// The rating a bot level stands for, on the platform's Glicko-2 scale. **An estimate**, not a
/// measurement: no level has played enough rated games to have a rating of its own (bot
/// games are casual). Easy stands for a beginner (1000), Medium for a club player (1500,
/// where every new player starts), Hard for a strong club player (2000).
pub fn level_rating(level: Level) -> i32 {
    match level {
        Level::Easy => 1000,
        Level::Medium => 1500,
        Level::Hard => 2000,
    }
}

/// The level whose [`level_rating`] is nearest `rating` (the weaker one on a tie).
pub fn level_for_rating(rating: i32) -> Level {
    Level::ALL
        .into_iter()
        .min_by_key(|level| (i64::from(level_rating(*level)) - i64::from(rating)).abs())
        .expect("Level::ALL is not empty")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_window_widens_with_the_wait_and_then_covers_the_pool() {
        let schedule = WindowSchedule::default();
        assert_eq!(schedule.half_width(0), Some(100));
        assert_eq!(schedule.half_width(999), Some(149));
        assert_eq!(schedule.half_width(10_000), Some(600));
        assert_eq!(schedule.half_width(29_999), Some(1_599));
        assert_eq!(schedule.half_width(30_000), None);
        assert!(schedule.accepts(0, 100));
        assert!(!schedule.accepts(0, 101));
        assert!(schedule.accepts(30_000, u64::MAX));
        let mut last = 0;
        for wait in (0..30_000).step_by(250) {
            let width = schedule.half_width(wait).expect("before the full wait");
            assert!(width >= last, "the window never narrows");
            last = width;
        }
    }

    #[test]
    fn bot_waits_per_pool_and_zero_disables() {
        let standard: Pool = "standard:3+0:casual".parse().expect("a pool key");
        let hidden: Pool = "hidden:3+0:casual".parse().expect("a pool key");
        let waits = BotWaits {
            default_ms: 20_000,
            per_pool: vec![(standard, 0), (hidden, 5_000)],
        };
        assert_eq!(waits.for_pool(standard), None);
        assert_eq!(waits.for_pool(hidden), Some(5_000));
        let atomic: Pool = "atomic:3+0:casual".parse().expect("a pool key");
        assert_eq!(waits.for_pool(atomic), Some(20_000));
    }

    #[test]
    fn the_level_nearest_the_rating() {
        assert_eq!(level_for_rating(600), Level::Easy);
        assert_eq!(level_for_rating(1249), Level::Easy);
        assert_eq!(level_for_rating(1250), Level::Easy);
        assert_eq!(level_for_rating(1251), Level::Medium);
        assert_eq!(level_for_rating(1500), Level::Medium);
        assert_eq!(level_for_rating(1800), Level::Hard);
        assert_eq!(level_for_rating(2900), Level::Hard);
    }
}
